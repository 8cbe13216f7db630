"""The storm network: build a directed MS4 graph, check it, trace it.

This is the public face of the network step (see ``docs/network.md``):

- :func:`build_network` snaps conveyance ends to structures (or to each other, or
  onto another conveyance, which is split), orients every edge by the rule chain
  of docs/rules.md section 1, finds the outfalls and writes a QA report.
- :func:`assign_outfalls` gives the outfall of every structure at once;
  :func:`edge_outfalls` the same per conveyance.
- :func:`trace_downstream` and :func:`trace_upstream` follow the flow from or to
  any structure, conveyance, outfall or map point.
- :func:`network_sewersheds` draws a sewershed polygon per outfall.

Tracing never reads columns that hold someone else's answer about where things
drain (:data:`ms4map.core.schema.ANSWER_COLUMNS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# the names load on first use, so that ``ms4map.network.settings`` (read by the CLI's
# parsers) does not import scipy and geopandas
_EXPORTS = {
    "DEFAULT_ID_MATCH_M": "build",
    "DEFAULT_LATERAL_M": "build",
    "DEFAULT_SNAP_M": "build",
    "DEFAULT_WATER_M": "build",
    "ORIENT_METHODS": "build",
    "OUTFALL_METHODS": "build",
    "StormNetwork": "build",
    "build_network": "build",
    "crs_unit_factor": "build",
    "ASSIGN_METHODS": "trace",
    "Trace": "trace",
    "Upstream": "trace",
    "assign_outfalls": "trace",
    "describe_nodes": "trace",
    "edge_outfalls": "trace",
    "field_check_points": "trace",
    "network_sewersheds": "trace",
    "trace_downstream": "trace",
    "trace_upstream": "trace",
    "unassigned_cause": "trace",
}

if TYPE_CHECKING:
    from .build import (
        DEFAULT_ID_MATCH_M,
        DEFAULT_LATERAL_M,
        DEFAULT_SNAP_M,
        DEFAULT_WATER_M,
        ORIENT_METHODS,
        OUTFALL_METHODS,
        StormNetwork,
        build_network,
        crs_unit_factor,
    )
    from .trace import (
        ASSIGN_METHODS,
        Trace,
        Upstream,
        assign_outfalls,
        describe_nodes,
        edge_outfalls,
        field_check_points,
        network_sewersheds,
        trace_downstream,
        trace_upstream,
        unassigned_cause,
    )


def __getattr__(name: str):
    sub = _EXPORTS.get(name)
    if sub is None:
        raise AttributeError(f"module 'ms4map.network' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{sub}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "ASSIGN_METHODS",
    "DEFAULT_ID_MATCH_M",
    "DEFAULT_LATERAL_M",
    "DEFAULT_SNAP_M",
    "DEFAULT_WATER_M",
    "ORIENT_METHODS",
    "OUTFALL_METHODS",
    "StormNetwork",
    "field_check_points",
    "unassigned_cause",
    "Trace",
    "Upstream",
    "assign_outfalls",
    "build_network",
    "crs_unit_factor",
    "describe_nodes",
    "edge_outfalls",
    "network_sewersheds",
    "trace_downstream",
    "trace_upstream",
]
