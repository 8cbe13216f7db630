"""ms4map: which properties drain where, for New York MS4 towns and villages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _compat
from .core.version import __version__

_compat.install()  # the old flat module paths (ms4map.conditions, ...): _compat.ALIASES

from .core.errors import (  # noqa: E402
    DataError,
    InputOpenError,
    Ms4mapError,
    UsageError,
    ValidationError,
)
from .core.qa import Finding, QAReport  # noqa: E402

if TYPE_CHECKING:
    from .io import Dem, Workspace, open_workspace


def _build_demo(out):  # noqa: ANN001, ANN202
    """The demo generator, for :func:`ms4map.io.files.demo_path` (io sits below demo)."""
    from .datasets.alder_falls import build_demo

    return build_demo(out)


#: The workspace API, imported on first use (``ms4map.open_workspace``): importing the
#: package (the CLI, ``ms4map.batch``) does not load geopandas and GDAL until asked.
_LAZY = {
    "open_workspace": "ms4map.io",
    "Dem": "ms4map.io.workspace",
    "Workspace": "ms4map.io.workspace",
}

_SUBMODULES = {
    "core",
    "io",
    "network",
    "hydrology",
    "drainage",
    "pipeline",
    "analysis",
    "rules",
    "idde",
    "records",
    "outputs",
    "datasets",
    "demo",
    # old flat paths, answered by _compat.ALIASES
    "schema",
    "fieldmap",
    "validate",
    "overland",
    "waters",
    "conditions",
    "septic",
    "profiles",
    "report",
    "maps",
    "export",
    "styles",
    "users",
    "qa",
    "workspace",
    "errors",
}


def __getattr__(name: str):
    # heavy submodules load on first use: `ms4map.network.build_network(...)`
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"ms4map.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ms4map' has no attribute {name!r}")


__all__ = [
    "__version__",
    "DataError",
    "Dem",
    "Finding",
    "InputOpenError",
    "Ms4mapError",
    "QAReport",
    "UsageError",
    "ValidationError",
    "Workspace",
    "open_workspace",
]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
