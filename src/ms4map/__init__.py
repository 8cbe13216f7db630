"""ms4map: which properties drain where, for New York MS4 towns and villages."""

from __future__ import annotations

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
from .io import files as _io_files  # noqa: E402
from .io import open_workspace  # noqa: E402
from .io.workspace import Dem, Workspace  # noqa: E402


def _build_demo(out):  # noqa: ANN001, ANN202
    from .demo import build_demo

    return build_demo(out)


# io.demo_path rebuilds a missing demo with it (the generator sits above io)
_io_files.demo_builder = _build_demo

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
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"ms4map.{name}")
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
