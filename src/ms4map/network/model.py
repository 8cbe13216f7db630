"""The storm network's types: the built graph (StormNetwork) and the traces on it (Trace, Upstream).

:class:`StormNetwork` is what :func:`ms4map.network.build_network` returns and what
every other function of :mod:`ms4map.network` reads; :data:`ORIENT_METHODS` closes the
values of its ``edges.orient_method`` column.  :class:`Trace` and :class:`Upstream`
are the answers of :func:`ms4map.network.trace_downstream` and
:func:`ms4map.network.trace_upstream`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import pandas as pd

from ..core.qa import QAReport

__all__ = ["ORIENT_METHODS", "StormNetwork", "Trace", "Upstream"]


#: Values of ``edges.orient_method``: the evidence that decided, in the trust order of
#: docs/network.md "Orientation" (``outlet_path``: the whole-network decision, which
#: also names a line whose evidence it overruled; ``edges.orient_overruled`` says which).
ORIENT_METHODS = (
    "ids",
    "flow_dir",
    "flow_dir_bi",
    "inverts",
    "structure_inverts",
    "structure_rims",
    "dem_ground",
    "pipe_sizes",
    "outlet_path",
    "flow_dir_uni",
    "digitized",
    "assumed_lateral",
)


@dataclass
class StormNetwork:
    """The directed storm network.

    Attributes
    ----------
    nodes : GeoDataFrame
        Index ``node_id`` (the ``struct_id`` for structures, ``J<n>`` for junctions
        made where conveyance ends meet without a structure).  Columns ``struct_id``
        (NA for junctions), ``kind``, ``is_inlet``, ``invert_elev``, ``rim_elev``.
    edges : GeoDataFrame
        One row per conveyance part: ``conv_id``, ``part`` (0 unless the conveyance
        was split where another one ends on it), ``from_node``, ``to_node``, ``kind``,
        ``is_open``, ``bidirectional``, ``orient_method``, ``length_m``,
        ``diameter_in``, ``us_invert``, ``ds_invert``; geometry digitised in flow
        order.
    outfalls : GeoDataFrame
        Index ``outfall_id``; columns ``node_id``, ``receiving_water``, ``pwl_id``,
        ``status``, ``method`` (:data:`ms4map.network.settings.OUTFALL_METHODS`).
    qa : QAReport
        Findings of step ``network``.
    crs : pyproj.CRS
        The working CRS.
    settings : dict
        Tolerances used (metres and CRS units).
    """

    nodes: gpd.GeoDataFrame
    edges: gpd.GeoDataFrame
    outfalls: gpd.GeoDataFrame
    qa: QAReport
    crs: Any
    settings: dict[str, Any] = field(default_factory=dict)
    #: struct_id of every input structure (input order) -> node_id (coincident
    #: structures share a node) or NA when the structure has no usable geometry.
    structure_nodes: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Terminal nodes that are not outfalls (water layer present, not at water; or no
    #: water layer while the outfalls layer or outfall structures map the outfalls).
    terminals_not_at_water: list[str] = field(default_factory=list)
    #: True when there is no waterbody layer and mapped outfalls exist, so terminals
    #: were not checked against water and are not outfalls.
    terminals_unchecked: bool = False
    #: conv_id -> the evidence the inverts overruled (``"ids"`` or ``"flow_dir"``), for
    #: every ``orientation_conflict`` finding; reasons name it where flow dead-ends.
    orientation_conflicts: dict[str, str] = field(default_factory=dict)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Integer edge endpoints (rows of ``nodes``), kept to skip id look-ups.
    _graph: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (
            f"StormNetwork({len(self.nodes)} nodes, {len(self.edges)} edges, "
            f"{len(self.outfalls)} outfalls, {len(self.qa.findings)} QA findings)"
        )

    @property
    def orient_counts(self) -> dict[str, int]:
        """How many edges each orientation rule decided."""
        return {k: int(v) for k, v in self.edges["orient_method"].value_counts().items()}


@dataclass
class Trace:
    """A downstream trace.

    Attributes
    ----------
    start : str
        What the trace started from (struct_id, conv_id or ``POINT (x y)``).
    nodes, edges : GeoDataFrame
        The nodes and conveyance parts on the way (every branch where flow splits).
    geometry : LineString or MultiLineString or None
        The path (None when the start is itself an outfall or leads nowhere).
    length_m : float
        Total length of the conveyances on the way, in metres.
    outfall_ids : list of str
        Outfalls reached, main one first; when ``ambiguous``, the candidates.
    receiving_waters : list of str
        Receiving waters of those outfalls (where known).
    method, reason : str
        As in :func:`ms4map.network.assign_outfalls`.
    """

    start: str
    nodes: gpd.GeoDataFrame
    edges: gpd.GeoDataFrame
    geometry: Any
    length_m: float
    outfall_ids: list[str]
    receiving_waters: list[str]
    method: str
    reason: str
    #: the evidence cannot tell which outfall: ``outfall_ids`` lists the candidates
    #: (docs/network.md "The ambiguous answer")
    ambiguous: bool = False


@dataclass
class Upstream:
    """An upstream trace: everything that drains to ``start``.

    Attributes
    ----------
    start : str
    nodes : GeoDataFrame
        Contributing nodes (structures and junctions), the start included.
    edges : GeoDataFrame
        Contributing conveyance parts.
    """

    start: str
    nodes: gpd.GeoDataFrame
    edges: gpd.GeoDataFrame

    @property
    def struct_ids(self) -> list[str]:
        return [s for s in self.nodes["struct_id"].tolist() if isinstance(s, str)]

    @property
    def conv_ids(self) -> list[str]:
        return list(dict.fromkeys(self.edges["conv_id"].astype(str)))
