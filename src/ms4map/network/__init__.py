"""The storm network: build a directed MS4 graph, check it, trace it.

This is the public face of the network step (see ``docs/network.md``):

- :func:`build_network` snaps conveyance ends to structures (or to each other, or
  onto another conveyance, which is split), orients every edge by the rule chain
  of docs/rules.md section 1, finds the outfalls and writes a QA report; it returns
  a :class:`StormNetwork`.
- :func:`assign_outfalls` gives the outfall of every structure at once;
  :func:`edge_outfalls` the same per conveyance.
- :func:`trace_downstream` and :func:`trace_upstream` follow the flow from or to
  any structure, conveyance, outfall or map point (:class:`Trace`, :class:`Upstream`).
- :func:`network_sewersheds` draws a sewershed polygon per outfall.

Tracing never reads columns that hold someone else's answer about where things
drain (:data:`ms4map.core.schema.ANSWER_COLUMNS`).  The build's steps are modules of
their own (``read``, ``snap``, ``orient``, ``edges``, ``termini``, ``qa``, run in order
by :func:`ms4map.network.build.run_build`); the flow is solved once in ``solve``.
Overland flow on the DEM lives in :mod:`ms4map.hydrology`, the join of both in
:mod:`ms4map.drainage`.
"""

from __future__ import annotations

from .assign import ASSIGN_METHODS, assign_outfalls, describe_nodes, edge_outfalls
from .build import build_network
from .model import ORIENT_METHODS, StormNetwork, Trace, Upstream
from .settings import (
    DEFAULT_ID_MATCH_M,
    DEFAULT_LATERAL_M,
    DEFAULT_SNAP_M,
    DEFAULT_WATER_M,
    OUTFALL_METHODS,
)
from .tables import crs_unit_factor
from .trace import (
    field_check_points,
    network_sewersheds,
    trace_downstream,
    trace_upstream,
    unassigned_cause,
)

__all__ = [
    "ASSIGN_METHODS",
    "DEFAULT_ID_MATCH_M",
    "DEFAULT_LATERAL_M",
    "DEFAULT_SNAP_M",
    "DEFAULT_WATER_M",
    "ORIENT_METHODS",
    "OUTFALL_METHODS",
    "StormNetwork",
    "Trace",
    "Upstream",
    "assign_outfalls",
    "build_network",
    "crs_unit_factor",
    "describe_nodes",
    "edge_outfalls",
    "field_check_points",
    "network_sewersheds",
    "trace_downstream",
    "trace_upstream",
    "unassigned_cause",
]
