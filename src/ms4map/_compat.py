"""The old flat module paths (``ms4map.conditions``, ``ms4map.network_build``, ...).

Before issue 11 every module sat directly in ``ms4map/``; they now live in subpackages
along the data flow (``docs/ARCHITECTURE.md``).  :data:`ALIASES` is the one table of
old path -> new path.  :func:`install` (called by ``ms4map/__init__``) puts a finder on
``sys.meta_path`` that answers an old name with the new module object itself, so
``import ms4map.conditions`` and ``from ms4map.conditions import evaluate_site`` work
and ``ms4map.conditions is ms4map.rules.conditions``.  Nothing is imported until an old
name is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

__all__ = ["ALIASES", "install"]

#: Old module path -> new module path.
ALIASES: dict[str, str] = {
    "ms4map.errors": "ms4map.core.errors",
    "ms4map.qa": "ms4map.core.qa",
    "ms4map.schema": "ms4map.core.schema",
    "ms4map._units": "ms4map.core.units",
    "ms4map.workspace": "ms4map.io.workspace",
    "ms4map.fieldmap": "ms4map.io.fieldmap",
    "ms4map.validate": "ms4map.io.validate",
    "ms4map.styles": "ms4map.io.styles",
    "ms4map.network_build": "ms4map.network.build",
    "ms4map.network_trace": "ms4map.network.trace",
    "ms4map.network_settings": "ms4map.network.settings",
    "ms4map.overland": "ms4map.hydrology.overland",
    "ms4map.waters": "ms4map.rules.waters",
    "ms4map.profiles": "ms4map.rules.profiles",
    "ms4map.conditions": "ms4map.rules.conditions",
    "ms4map.septic": "ms4map.rules.septic",
    "ms4map.users": "ms4map.records.users",
    "ms4map.maps": "ms4map.outputs.maps",
    "ms4map.report": "ms4map.outputs.report",
    "ms4map.export": "ms4map.outputs.export",
}


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader of the old names: the module returned is the new module."""

    def find_spec(self, fullname: str, path=None, target=None):  # noqa: ANN001
        new = ALIASES.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=False)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(ALIASES[spec.name])
        # the import system sets ``module.__spec__ = spec`` after this returns; keep the
        # real spec so exec_module can put it back
        self._real_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        real = self._real_specs.pop(module.__spec__.name, None)
        if real is not None:
            module.__spec__ = real

    def __init__(self) -> None:
        self._real_specs: dict[str, importlib.machinery.ModuleSpec] = {}


_FINDER = _AliasFinder()


def install() -> None:
    """Put the finder of the old names first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _FINDER)
