"""Build the directed storm network: build_network, the recipe run_build with its steps in order, and the frames.

:func:`build_network` checks the tolerances and the CRS, then runs :func:`run_build`:
a chain of plain functions over plain tables (:mod:`ms4map.network.tables`), one module
per job: :func:`~ms4map.network.read.read_structures` and
:func:`~ms4map.network.read.read_conveyances`; :func:`~ms4map.network.snap.snap_ends`,
:func:`~ms4map.network.snap.split_lines` and
:func:`~ms4map.network.snap.assumed_laterals`; :func:`~ms4map.network.orient.orient_lines`;
:func:`~ms4map.network.edges.assemble_edges`;
:func:`~ms4map.network.termini.find_outfalls`; :func:`~ms4map.network.qa.graph_qa`;
:func:`network_frames` -> :class:`~ms4map.network.model.StormNetwork`; and last
:func:`~ms4map.network.qa.sink_pools_and_graph_qa` on the solved graph.  Everything
runs on numpy arrays (cKDTree / STRtree for snapping), so a county-sized network
builds in seconds.  See ``docs/network.md`` for the rules.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ..core.errors import DataError
from ..core.qa import QAReport
from ..core.schema import INLET_KINDS, OPEN_CONVEYANCE_KINDS
from .edges import assemble_edges
from .model import StormNetwork
from .orient import orient_lines
from .qa import graph_qa, sink_pools_and_graph_qa
from .read import read_conveyances, read_structures, water_tree
from .settings import (
    DEFAULT_ID_MATCH_M,
    DEFAULT_LATERAL_M,
    DEFAULT_SNAP_M,
    DEFAULT_WATER_M,
)
from .snap import assumed_laterals, snap_ends, split_lines
from .tables import (
    BuildConfig,
    EdgeTable,
    EndTable,
    Orientation,
    OutfallTable,
    SplitTable,
    StructureTable,
    node_xy,
)
from .termini import find_outfalls, junction_outfall_ids, outfall_guessed

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = ["build_network", "network_frames", "run_build"]

#: Outfall attributes carried from the outfalls layer into ``net.outfalls``.
_OUTFALL_ATTRS = ("receiving_water", "pwl_id", "status", "permit_id")


def run_build(ws: Workspace, cfg: BuildConfig) -> StormNetwork:
    """The build steps in order, each a function of the tables before it."""
    qa = QAReport()
    st = read_structures(ws, cfg, qa)
    cv = read_conveyances(ws, cfg, qa)
    ends = snap_ends(st, cv, cfg, qa)
    sp = split_lines(st, cv, ends, cfg)
    sp = assumed_laterals(st, cv, ends, sp, cfg)
    wtree = water_tree(ws)
    ori = orient_lines(ws, st, cv, ends, sp, cfg=cfg, qa=qa, wtree=wtree)
    ed = assemble_edges(st, cv, ends, sp, ori, cfg=cfg, qa=qa)
    of = find_outfalls(ws, st, ends, sp, ed, cfg=cfg, qa=qa, wtree=wtree)
    graph_qa(st, cv, ends, sp, ori, ed=ed, of=of, cfg=cfg, qa=qa)
    net = network_frames(st, ends, sp, ori, ed, of=of, cfg=cfg, qa=qa)

    def at_water(xy: np.ndarray) -> bool:
        if wtree is None:
            return False
        hit = wtree.query(shapely.points(xy), predicate="dwithin", distance=cfg.water_tol)
        return len(hit) > 0

    sink_pools_and_graph_qa(
        net,
        has_water=of.has_water,
        at_water=at_water,
        terminals_are_outfalls=of.terminals_are_outfalls,
    )
    counts = net.orient_counts
    net.qa.note(
        "Edge orientation (orient_method): "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    if ori.uni_disagrees:
        net.qa.note(
            f"Flow direction 'uni' (the digitised direction) disagrees with the "
            f"outlet_path rule on {ori.uni_disagrees} conveyance(s); outlet_path wins."
        )
    net.settings["uni_disagrees_outlet_path"] = ori.uni_disagrees
    net.qa.note(
        f"Snap tolerance {cfg.settings['snap_tolerance_m']} m "
        f"({cfg.snap_tol:.3f} CRS units); {len(sp.splits)} conveyance(s) split."
    )
    return net


def build_network(
    ws: Workspace,
    *,
    snap_tolerance_m: float = DEFAULT_SNAP_M,
    water_tolerance_m: float = DEFAULT_WATER_M,
    id_match_m: float = DEFAULT_ID_MATCH_M,
    lateral_tolerance_m: float = DEFAULT_LATERAL_M,
) -> StormNetwork:
    """Build the directed storm network of a workspace.

    Parameters
    ----------
    ws : ms4map.io.workspace.Workspace
        Canonical layers in the projected working CRS: ``conveyances`` (required),
        ``structures``, ``outfalls`` and ``waterbodies`` (optional).
    snap_tolerance_m : float
        Conveyance ends within this distance (metres) of a structure, of another
        end, or of another conveyance's interior (which is then split) connect.
    water_tolerance_m : float
        A terminal node within this distance (metres) of a waterbody is an outfall
        (``terminal_at_water``).
    id_match_m : float
        From/to structure ids are trusted when the named structure lies within this
        distance (metres) of the conveyance end; otherwise the geometry decides and
        an ``id_geometry_mismatch`` finding is raised.
    lateral_tolerance_m : float
        A structure that no conveyance reaches (QA ``orphan_structure``) is assumed
        to drain through an unmapped lateral to the nearest conveyance within this
        distance (metres): the network gets an edge with ``orient_method``
        ``assumed_lateral`` and the structure's assignment method says so.  0 turns
        this off.

    Returns
    -------
    StormNetwork

    Raises
    ------
    ms4map.core.errors.DataError
        No conveyances layer, no usable conveyance, no CRS or a geographic CRS, or
        a negative tolerance.
    """
    for name, val in (
        ("snap_tolerance_m", snap_tolerance_m),
        ("water_tolerance_m", water_tolerance_m),
        ("id_match_m", id_match_m),
        ("lateral_tolerance_m", lateral_tolerance_m),
    ):
        if not isinstance(val, (int, float)) or not math.isfinite(val) or val < 0:
            raise DataError(f"{name} must be a non-negative number of metres, got {val!r}.")
    crs = _check_crs(ws)
    conv = ws.layers.get("conveyances") if hasattr(ws, "layers") else None
    if conv is None or len(conv) == 0:
        raise DataError(
            "The workspace has no conveyances (pipes, culverts, ditches, swales, connector "
            "links), so there is no storm network to build. Fix: map your pipe layer with "
            "--layer conveyances=LAYER."
        )
    cfg = BuildConfig.of(crs, snap_tolerance_m, water_tolerance_m, id_match_m, lateral_tolerance_m)
    return run_build(ws, cfg)


def _check_crs(ws: Workspace) -> CRS:
    if ws.crs is None:
        raise DataError(
            "The workspace has no CRS, so distances cannot be measured. "
            "Fix: open the workspace with --crs EPSG:xxxx (a projected CRS in metres or feet)."
        )
    crs = CRS.from_user_input(ws.crs)
    if not crs.is_projected:
        raise DataError(
            f"The storm network needs a projected working CRS, got {crs.to_string()} "
            f"({crs.name}), whose unit is '{crs.axis_info[0].unit_name}'. Snap tolerances are "
            "metres. Fix: open the workspace with --crs set to a projected CRS, e.g. "
            "EPSG:26918 (UTM 18N) or EPSG:2260-2263 (NY State Plane)."
        )
    return crs


def _alt_nodes(ori: Orientation, remap: np.ndarray, used: np.ndarray) -> np.ndarray:
    """Per used node, the used node of its near-tie other target (-1: none)."""
    out = np.full(len(used), -1, dtype=np.int64)
    if ori.node_alt is None:
        return out
    alt = ori.node_alt[used]
    ok = alt >= 0
    out[ok] = remap[alt[ok]]
    return out


def network_frames(
    st: StructureTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    ed: EdgeTable,
    *,
    of: OutfallTable,
    cfg: BuildConfig,
    qa: QAReport,
) -> StormNetwork:
    """The StormNetwork frames (nodes, edges, outfalls) from the tables."""
    used = np.where(ed.nodes_used)[0]
    n_st = ends.n_structures
    kinds = np.r_[st.kind, np.full(len(sp.junction_xy), "junction", dtype=object)]
    struct_id = np.r_[st.ids, np.full(len(sp.junction_xy), None, dtype=object)]
    inv = np.r_[st.invert_elev, np.full(len(sp.junction_xy), np.nan)]
    rim = np.r_[st.rim_elev, np.full(len(sp.junction_xy), np.nan)]
    xy = node_xy(st.xy, sp.junction_xy, used)
    nodes = gpd.GeoDataFrame(
        {
            "struct_id": pd.array(struct_id[used], dtype="str"),
            "kind": pd.array(kinds[used], dtype="str"),
            "is_inlet": np.array([k in INLET_KINDS for k in kinds[used]], dtype=bool),
            "invert_elev": inv[used],
            "rim_elev": rim[used],
        },
        geometry=shapely.points(xy),
        index=pd.Index(ed.node_ids[used].astype(str), name="node_id"),
        crs=cfg.crs,
    )
    r = ed.rows
    geoms = np.array(r["geometry"], dtype=object)
    kinds_e = [k if k is not None else "pipe" for k in r["kind"]]
    edges = gpd.GeoDataFrame(
        {
            "conv_id": pd.array(r["conv_id"], dtype="str"),
            "part": np.array(r["part"], dtype=int),
            "from_node": pd.array(ed.node_ids[ed.from_node].astype(str), dtype="str"),
            "to_node": pd.array(ed.node_ids[ed.to_node].astype(str), dtype="str"),
            "kind": pd.array(kinds_e, dtype="str"),
            "is_open": np.array([k in OPEN_CONVEYANCE_KINDS for k in kinds_e], dtype=bool),
            "bidirectional": ed.bidirectional,
            "orient_method": pd.array(r["orient_method"], dtype="str"),
            "orient_overruled": pd.array(r["orient_overruled"], dtype="str"),
            "length_m": shapely.length(geoms) * cfg.m_per_unit if len(geoms) else np.zeros(0),
            "diameter_in": np.array(r["diameter_in"], dtype=float),
            "us_invert": np.array(r["us_invert"], dtype=float),
            "ds_invert": np.array(r["ds_invert"], dtype=float),
        },
        geometry=geoms if len(geoms) else gpd.GeoSeries([], crs=cfg.crs),
        crs=cfg.crs,
    )
    # the outfall table, built column by column (no per-outfall Python rows)
    out_nodes = np.where(of.outfall_id != None)[0]  # noqa: E711
    jnames = junction_outfall_ids(
        [int(nd) for nd in out_nodes[out_nodes >= n_st] if of.outfall_id[nd] == ed.node_ids[nd]],
        ed.from_node,
        ed.to_node,
        np.asarray(r["conv_id"], dtype=object),
        taken=set(of.outfall_id[out_nodes].astype(str).tolist()),
    )
    k = len(out_nodes)
    oid = of.outfall_id[out_nodes].astype(str).astype(object)
    for nd, name in jnames.items():
        oid[np.searchsorted(out_nodes, nd)] = name
    attr_cols = {c: np.full(k, None, dtype=object) for c in _OUTFALL_ATTRS}
    attr_cols["status"][:] = "unknown"
    for nd, a in of.layer_attributes.items():
        pos = int(np.searchsorted(out_nodes, nd))
        if pos < k and out_nodes[pos] == nd:
            for c in _OUTFALL_ATTRS:
                attr_cols[c][pos] = a.get(c, "unknown" if c == "status" else None)
    # an unsnapped outfalls-layer point named like an outfall of the network (its
    # structure, too far to be matched by id): the network's outfall stands, once
    taken_ids = set(oid.tolist())
    un = [x for x in of.unsnapped if str(x["outfall_id"]) not in taken_ids]
    cols = ["outfall_id", "node_id", *_OUTFALL_ATTRS, "method"]
    data = {
        "outfall_id": np.r_[oid, np.array([str(x["outfall_id"]) for x in un], dtype=object)],
        "node_id": np.r_[
            ed.node_ids[out_nodes].astype(str).astype(object),
            np.full(len(un), None, dtype=object),
        ],
        **{
            c: np.r_[attr_cols[c], np.array([x[c] for x in un], dtype=object)]
            for c in _OUTFALL_ATTRS
        },
        "method": np.r_[
            of.method[out_nodes].astype(object),
            np.full(len(un), "outfalls_layer", dtype=object),
        ],
    }
    xy = np.vstack(
        [node_xy(st.xy, sp.junction_xy, out_nodes), np.array([x["xy"] for x in un]).reshape(-1, 2)]
    )
    odf = pd.DataFrame({c: data[c] for c in cols})
    for c in cols:
        odf[c] = pd.array(odf[c].astype(object).where(odf[c].notna(), None), dtype="str")
    # an outfall inferred from where the lines end is a guess (issue 28 item 16)
    odf["guessed"] = np.array([outfall_guessed(m) for m in odf["method"]], dtype=bool)
    odf["geometry"] = shapely.points(xy) if len(xy) else np.zeros(0, dtype=object)
    outfalls = gpd.GeoDataFrame(odf, geometry="geometry", crs=cfg.crs).set_index("outfall_id")
    sn = pd.DataFrame(
        {
            "struct_id": pd.array(st.input_ids.astype(str), dtype="str"),
            "node_id": pd.array(
                np.where(st.has_point, ed.node_ids[st.primary].astype(str), None).astype(object),
                dtype="str",
            ),
        }
    )
    remap = np.full(len(ed.node_ids), -1)
    remap[used] = np.arange(len(used))
    graph = {
        "u": remap[ed.from_node],
        "v": remap[ed.to_node],
        "n_nodes": len(used),
        "n_edges": len(ed.from_node),
        "src": ed.source_line,
        # node -> the other target it reaches nearly as cheaply (docs/network.md
        # "The ambiguous answer"), -1 where none
        "alt": _alt_nodes(ori, remap, used),
        # line -> its "uni" value confirms the direction no stronger evidence gave
        "uni_ok": ori.uni_ok if ori.uni_ok is not None else np.zeros(0, dtype=bool),
        # node -> least cost of its way out (metres plus overruled evidence; inf: none)
        "cost": (
            ori.outlet_distance[used]
            if ori.outlet_distance is not None
            else np.full(len(used), np.inf)
        ),
    }
    net = StormNetwork(
        nodes=nodes,
        edges=edges,
        outfalls=outfalls,
        qa=qa,
        crs=cfg.crs,
        _graph=graph,
        settings=dict(cfg.settings),
        structure_nodes=sn,
        terminals_not_at_water=[str(ed.node_ids[i]) for i in of.not_at_water],
        terminals_unchecked=not of.has_water and not of.terminals_are_outfalls,
        orientation_conflicts=dict(ori.conflicts),
    )
    return net
