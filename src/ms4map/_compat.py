"""The old module paths (``ms4map.conditions``, ``ms4map.io.files``, ...), now warning.

Before issue 11 every module sat directly in ``ms4map/``; they now live in subpackages
along the data flow, and since issue 26 the large modules are split into modules of one
job (``docs/ARCHITECTURE.md``).  Two tables hold every old path:

- :data:`ALIASES`: a module moved whole, old path -> new path; the old name answers
  with the new module object itself (``ms4map.conditions is ms4map.rules.conditions``);
- :data:`SPLIT`: a module split into several, old path -> the new modules its names
  now live in; the old name answers with a small module that looks each name up in
  them, in order (``from ms4map.io.files import open_workspace`` still works).

:func:`install` (called by ``ms4map/__init__``) puts a finder on ``sys.meta_path``
that answers these names, each with a :class:`DeprecationWarning` naming the new path.
Nothing is imported until an old name is asked for.  The old paths are removed in 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["ALIASES", "SPLIT", "install"]

#: The release that removes the old paths.
REMOVED_IN = "0.3"

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
    "ms4map.network_settings": "ms4map.network.settings",
    "ms4map.overland": "ms4map.hydrology.overland",
    "ms4map.waters": "ms4map.rules.waters",
    "ms4map.profiles": "ms4map.rules.profiles",
    "ms4map.conditions": "ms4map.rules.conditions",
    "ms4map.septic": "ms4map.rules.septic",
    "ms4map.users": "ms4map.records.users",
    "ms4map.maps": "ms4map.outputs.maps",
    "ms4map.report": "ms4map.outputs.report",
}

#: Old module path -> the new modules its names live in, searched in order.
SPLIT: dict[str, tuple[str, ...]] = {
    # ---- io (begin)
    "ms4map.io.files": (
        "ms4map.io.open",
        "ms4map.io.sources",
        "ms4map.io.manifest",
        "ms4map.io.crs",
        "ms4map.io.canonical",
        "ms4map.io.checks",
        "ms4map.io.dem",
        "ms4map.io.write",
        "ms4map.io.data",
    ),
    # ---- io (end)
    # ---- network (begin)
    # ms4map.network.build and .trace are modules again (the recipe; the traces), so the
    # names that moved out of them are found through their old flat paths (these two
    # entries take precedence over ALIASES)
    "ms4map.network_build": (
        "ms4map.network.build",
        "ms4map.network.model",
        "ms4map.network.tables",
        "ms4map.network.read",
        "ms4map.network.snap",
        "ms4map.network.orient",
        "ms4map.network.edges",
        "ms4map.network.termini",
        "ms4map.network.qa",
        "ms4map.network.settings",
    ),
    "ms4map.network_trace": (
        "ms4map.network.trace",
        "ms4map.network.assign",
        "ms4map.network.solve",
        "ms4map.network.model",
        "ms4map.network.settings",
    ),
    # ---- network (end)
    # ---- hydrology (begin)
    "ms4map.hydrology.overland": (
        "ms4map.hydrology.routing",
        "ms4map.hydrology.result",
        "ms4map.hydrology.targets",
        "ms4map.hydrology.conditioning",
        "ms4map.hydrology.queries",
        "ms4map.hydrology.cells",
        "ms4map.hydrology._whitebox",
    ),
    # ---- hydrology (end)
    # ---- drainage, pipeline, analysis (begin)
    # ---- drainage, pipeline, analysis (end)
    # ---- rules: conditions (begin)
    # ---- rules: conditions (end)
    # ---- rules: septic, waters; idde (begin)
    # ---- rules: septic, waters; idde (end)
    # ---- records (begin)
    "ms4map.records.store": (
        "ms4map.records.records",
        "ms4map.records.open",
        "ms4map.records.reads",
        "ms4map.records.writes",
        "ms4map.records.layers",
    ),
    # ---- records (end)
    # ---- outputs (begin)
    # ---- outputs (end)
    # ---- batch, datasets (begin)
    "ms4map.demo": (
        "ms4map.datasets.alder_falls",
        "ms4map.datasets.alder_falls.build",
        "ms4map.datasets.alder_falls.scenarios",
        "ms4map.datasets.alder_falls.spec",
        "ms4map.datasets.alder_falls.storm",
        "ms4map.datasets.alder_falls.parcels",
        "ms4map.datasets.alder_falls.roads",
        "ms4map.datasets.alder_falls.terrain",
        "ms4map.datasets.alder_falls.grid",
    ),
    # ---- batch, datasets (end)
}


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} is deprecated and is removed in ms4map {REMOVED_IN}; use {new}.",
        DeprecationWarning,
        stacklevel=4,
    )


class _SplitModule(ModuleType):
    """An old module path whose names now live in several modules."""

    def __init__(self, name: str, new: tuple[str, ...]) -> None:
        super().__init__(name, f"Deprecated: split into {', '.join(new)}.")
        self.__ms4map_split__ = new

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        for mod in self.__ms4map_split__:
            module = importlib.import_module(mod)
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(
            f"module {self.__name__!r} (split into {', '.join(self.__ms4map_split__)}) "
            f"has no attribute {attr!r}"
        )

    def __dir__(self) -> list[str]:
        names: set[str] = set()
        for mod in self.__ms4map_split__:
            names |= set(dir(importlib.import_module(mod)))
        return sorted(names)


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finder and loader of the old names: the module returned is the new module."""

    def find_spec(self, fullname: str, path=None, target=None):  # noqa: ANN001
        if fullname not in ALIASES and fullname not in SPLIT:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=False)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if spec.name in SPLIT:
            new = SPLIT[spec.name]
            _warn(spec.name, " / ".join(new))
            return _SplitModule(spec.name, new)
        _warn(spec.name, ALIASES[spec.name])
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
