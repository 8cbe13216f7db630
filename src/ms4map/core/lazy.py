"""Submodules that load on first attribute access (``ms4map.rules.conditions`` after
``import ms4map``), so a package's ``__init__`` imports nothing heavy."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from types import ModuleType

__all__ = ["lazy_submodules"]


def lazy_submodules(package: str, names: Iterable[str]) -> Callable[[str], ModuleType]:
    """A module ``__getattr__`` for ``package`` that imports its submodule ``names``."""
    subs = frozenset(names)

    def __getattr__(name: str) -> ModuleType:
        if name in subs:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
