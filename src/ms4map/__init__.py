"""ms4map: which properties drain where, for New York MS4 towns and villages."""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import (  # noqa: E402
    DataError,
    InputOpenError,
    Ms4mapError,
    UsageError,
    ValidationError,
)
from .io import open_workspace  # noqa: E402
from .qa import Finding, QAReport  # noqa: E402
from .workspace import Dem, Workspace  # noqa: E402

_SUBMODULES = {
    "io",
    "schema",
    "fieldmap",
    "validate",
    "network",
    "overland",
    "drainage",
    "pipeline",
    "waters",
    "conditions",
    "septic",
    "idde",
    "records",
    "profiles",
    "report",
    "maps",
    "demo",
    "qa",
    "workspace",
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
