"""ms4map: which properties drain where, for New York MS4 towns and villages.

The front door: the names a user types, each from the door of the package that does
the job (``docs/ARCHITECTURE.md``)::

    import ms4map
    ws = ms4map.open_workspace(ms4map.datasets.get_path("alder_falls"))
    res = ms4map.run(ws)                                  # network -> overland -> drainage
    path = ms4map.where_does_it_drain(res, point)         # parcel -> inlet -> outfall -> water
    area = ms4map.outfall_area(res, "OF-009")             # what drains to an outfall
    det = ms4map.evaluate_site(res, "107.12-2-11", disturbed_acres=2, project_type="commercial")
    ms4map.write_report(det, "site.pdf")                  # the printable determination

Every name loads on first use (one table, :data:`_FRONT_DOOR`), so ``import ms4map``
loads no GIS library.  The packages themselves (``ms4map.network``, ``ms4map.rules``,
...) are reachable as attributes too; the old module paths (``ms4map.conditions``,
``ms4map.io.files``, ...) still import, with a :class:`DeprecationWarning`
(``ms4map._compat``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _compat
from .core.errors import (
    DataError,
    InputOpenError,
    Ms4mapError,
    OutputError,
    UsageError,
    ValidationError,
)
from .core.qa import Finding, QAReport
from .core.version import __version__

_compat.install()  # the old module paths: _compat.ALIASES and _compat.SPLIT

if TYPE_CHECKING:
    from . import datasets
    from .analysis import (
        feature_path,
        outfall_area,
        outfall_inventory,
        polygon_drainage,
        what_drains_here,
        where_does_it_drain,
    )
    from .idde import candidate_sources, flow_type, notice_of_violation, sampling_plan
    from .io import Dem, Workspace, open_workspace, write_outputs
    from .network import StormNetwork, build_network, trace_downstream, trace_upstream
    from .outputs import export, write_report
    from .pipeline import Result, Settings, clear_cache, run
    from .records import open_records
    from .rules import (
        Determination,
        Profile,
        determine,
        evaluate_site,
        flag_septic,
        load_profile,
        mailing_list,
        screen_parcels,
    )

#: The front door: name -> the package whose door it comes from (``None``: the name is
#: a package itself).  Loaded on first use.
_FRONT_DOOR: dict[str, str | None] = {
    # the workspace and the town's data
    "open_workspace": "ms4map.io",
    "Workspace": "ms4map.io",
    "Dem": "ms4map.io",
    "datasets": None,
    "load_profile": "ms4map.rules",
    "Profile": "ms4map.rules",
    # the chain: network -> overland -> drainage
    "run": "ms4map.pipeline",
    "Settings": "ms4map.pipeline",
    "Result": "ms4map.pipeline",
    "clear_cache": "ms4map.pipeline",
    "build_network": "ms4map.network",
    "trace_downstream": "ms4map.network",
    "trace_upstream": "ms4map.network",
    "StormNetwork": "ms4map.network",
    # questions asked of a result
    "where_does_it_drain": "ms4map.analysis",
    "what_drains_here": "ms4map.analysis",
    "polygon_drainage": "ms4map.analysis",
    "feature_path": "ms4map.analysis",
    "outfall_area": "ms4map.analysis",
    "outfall_inventory": "ms4map.analysis",
    # the rules
    "evaluate_site": "ms4map.rules",
    "determine": "ms4map.rules",
    "screen_parcels": "ms4map.rules",
    "flag_septic": "ms4map.rules",
    "mailing_list": "ms4map.rules",
    "Determination": "ms4map.rules",
    # illicit discharges and their records
    "flow_type": "ms4map.idde",
    "candidate_sources": "ms4map.idde",
    "sampling_plan": "ms4map.idde",
    "notice_of_violation": "ms4map.idde",
    "open_records": "ms4map.records",
    # outputs
    "write_outputs": "ms4map.io",
    "write_report": "ms4map.outputs",
    "export": "ms4map.outputs",
}

#: The packages, reachable as ``ms4map.<package>`` without an import (not in ``__all__``).
_PACKAGES = frozenset(
    {
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
        "batch",
        "datasets",
        "cli",
        "app",
    }
)

__all__ = [
    "open_workspace",
    "Workspace",
    "Dem",
    "datasets",
    "load_profile",
    "Profile",
    "run",
    "Settings",
    "Result",
    "clear_cache",
    "build_network",
    "trace_downstream",
    "trace_upstream",
    "StormNetwork",
    "where_does_it_drain",
    "what_drains_here",
    "polygon_drainage",
    "feature_path",
    "outfall_area",
    "outfall_inventory",
    "evaluate_site",
    "determine",
    "screen_parcels",
    "flag_septic",
    "mailing_list",
    "Determination",
    "flow_type",
    "candidate_sources",
    "sampling_plan",
    "notice_of_violation",
    "open_records",
    "write_outputs",
    "write_report",
    "export",
    "DataError",
    "Finding",
    "InputOpenError",
    "Ms4mapError",
    "OutputError",
    "QAReport",
    "UsageError",
    "ValidationError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _FRONT_DOOR:
        door = _FRONT_DOOR[name]
        module = importlib.import_module(f"ms4map.{name}" if door is None else door)
        value = module if door is None else getattr(module, name)
        globals()[name] = value
        return value
    if name in _PACKAGES:
        return importlib.import_module(f"ms4map.{name}")
    old = f"ms4map.{name}"
    if old in _compat.ALIASES or old in _compat.SPLIT:  # ms4map.conditions, ...: warns
        return importlib.import_module(old)
    raise AttributeError(f"module 'ms4map' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
