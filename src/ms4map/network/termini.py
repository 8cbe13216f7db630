"""Find the network's outfalls: the outfalls layer, outfall structures, ranked terminals and sink pools.

:func:`find_outfalls` (a build step) takes the outfalls layer, then structures of kind
``outfall``, then the terminals ranked by :func:`rank_terminals`;
:func:`sink_pool_outfalls` (on the solved graph) makes one terminal of each pool of
two-way links with no way out.  :func:`junction_outfall_ids` names outfalls at
junctions so a user can look them up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from scipy.spatial import cKDTree

from ..core.qa import QAReport
from .model import StormNetwork
from .solve import SolvedNetwork, edge_node_positions, solve_network
from .tables import (
    BuildConfig,
    EdgeTable,
    EndTable,
    OutfallTable,
    SplitTable,
    StructureTable,
    add_finding,
    column_values,
    filled_ids,
    node_xy,
)

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = [
    "MAPPED_OUTFALL_METHODS",
    "find_outfalls",
    "junction_outfall_ids",
    "outfall_guessed",
    "rank_terminals",
    "sink_pool_outfalls",
]

#: The outfall methods that do not guess: the outfalls layer and outfall structures.
#: Every other method infers the outfall from where the lines end (a guess, to be
#: checked in the field).
MAPPED_OUTFALL_METHODS = frozenset({"outfalls_layer", "outfall_structure"})


def outfall_guessed(method: Any) -> bool:
    """Whether an outfall of this ``method`` was inferred from where the lines end."""
    return ("" if method is None else str(method)) not in MAPPED_OUTFALL_METHODS


def rank_terminals(
    kind: np.ndarray,
    is_structure: np.ndarray,
    at_water: np.ndarray,
    *,
    terminals_are_outfalls: bool,
) -> np.ndarray:
    """Outfall method of each terminal node (no way out), or None where it is no outfall.

    Real outlets first: ``terminal_at_water``, then a ``headwall`` structure
    (``headwall_at_end``); then, only when ``terminals_are_outfalls`` (no waterbody
    layer and no outfalls layer), ``terminal_at_structure`` and last
    ``terminal_loose_end`` (a junction: a bare line end).
    """
    kind = np.asarray(kind, dtype=object)
    is_structure = np.asarray(is_structure, dtype=bool)
    at_water = np.asarray(at_water, dtype=bool)
    out = np.full(len(kind), None, dtype=object)
    out[at_water] = "terminal_at_water"
    hw = ~at_water & is_structure & (kind == "headwall")
    out[hw] = "headwall_at_end"
    if terminals_are_outfalls:
        rest = ~at_water & ~hw
        out[rest & is_structure] = "terminal_at_structure"
        out[rest & ~is_structure] = "terminal_loose_end"
    return out


def find_outfalls(
    ws: Workspace,
    st: StructureTable,
    ends: EndTable,
    sp: SplitTable,
    ed: EdgeTable,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    wtree: Any = None,
) -> OutfallTable:
    """Outfalls in order: the outfalls layer, outfall structures, ranked terminals."""
    n_nodes = len(ed.node_ids)
    used = ed.nodes_used
    out_method = np.full(n_nodes, None, dtype=object)
    out_id = np.full(n_nodes, None, dtype=object)
    attrs: dict[int, dict[str, Any]] = {}
    # 1. outfalls layer
    layer = ws.layers.get("outfalls")
    node_idx = np.where(used)[0]
    nxy = node_xy(st.xy, sp.junction_xy, node_idx)
    ntree = cKDTree(nxy) if len(node_idx) else None
    unsnapped: list[dict[str, Any]] = []
    if layer is not None and len(layer) and ntree is not None:
        oids = filled_ids(column_values(layer, "outfall_id"), layer, "outfalls")
        rw, pwl, stt, permit = (
            column_values(layer, c) for c in ("receiving_water", "pwl_id", "status", "permit_id")
        )
        for i, g in enumerate(layer.geometry.values):
            if g is None or g.is_empty or g.geom_type != "Point":
                add_finding(
                    qa,
                    "bad_geometry",
                    "outfalls",
                    "Outfall has no point geometry; it is left out.",
                    fid=oids[i],
                    fix="Give the outfall a location.",
                )
                continue
            xy = shapely.get_coordinates(g)[0, :2]
            d, k = ntree.query(xy, distance_upper_bound=cfg.snap_tol)
            by_id = _node_by_id(st, used, oids[i], xy, cfg) if not np.isfinite(d) else None
            rec = {
                "outfall_id": oids[i],
                "receiving_water": rw[i],
                "pwl_id": pwl[i],
                "status": stt[i] if stt[i] is not None else "unknown",
                "permit_id": permit[i],
            }
            if by_id is not None:
                nd_id, dist = by_id
                add_finding(
                    qa,
                    "outfall_matched_by_id",
                    "outfalls",
                    f"Outfall lies {dist * cfg.m_per_unit:.1f} m from the structure with its id, "
                    "beyond the snap tolerance; it is taken to be that structure (its pipes end "
                    "there).",
                    fid=oids[i],
                    xy=xy,
                    level="info",
                    fix="Nothing to do if the outfall was found in the field there; otherwise "
                    "move the outfall or the structure.",
                )
                d, k = 0.0, int(np.searchsorted(node_idx, nd_id))
            if not np.isfinite(d):
                add_finding(
                    qa,
                    "unsnapped_outfall",
                    "outfalls",
                    "Outfall is not within the snap tolerance of any network node; "
                    "nothing drains to it.",
                    fid=oids[i],
                    xy=xy,
                    fix="Move the outfall onto the end of its pipe.",
                )
                rec.update(node=-1, xy=xy)
                unsnapped.append(rec)
                continue
            nd = int(node_idx[k])
            if out_id[nd] is not None:
                add_finding(
                    qa,
                    "duplicate_feature",
                    "outfalls",
                    f"Outfall shares its network node with outfall '{out_id[nd]}'.",
                    fid=oids[i],
                    xy=xy,
                    fix="Delete the duplicate outfall.",
                )
                continue
            out_id[nd] = oids[i]
            out_method[nd] = "outfalls_layer"
            attrs[nd] = rec
    # 2. structures of kind outfall
    for i in np.where(st.is_primary)[0]:
        if st.kind[i] == "outfall" and out_id[i] is None:
            out_id[i] = st.ids[i]
            out_method[i] = "outfall_structure"
    # 3. terminals
    outdeg = np.bincount(ed.from_node, minlength=n_nodes) + np.bincount(
        ed.to_node[ed.bidirectional], minlength=n_nodes
    )
    indeg = np.bincount(ed.to_node, minlength=n_nodes)
    terminal = (outdeg == 0) & (indeg > 0) & (out_id == None)  # noqa: E711
    # nodes whose only way out is a two-way link back are terminals too, decided after
    # the build (sink_pool_outfalls); here single-node sinks only.
    has_water = wtree is not None or (
        ws.layers.get("waterbodies") is not None and len(ws.layers["waterbodies"]) > 0
    )
    # Without a waterbody layer a terminal can be checked against nothing: it is an
    # outfall candidate, ranked below the real outlets (terminal_at_structure, then
    # terminal_loose_end), unless the town's outfall inventory (the outfalls layer)
    # maps the outfalls: an inventory never gains outfalls at loose pipe ends.
    # Outfall structures and headwalls are real outlets but no inventory: a few of
    # them (Norfolk: 20 outfall structures for 1,901 scored structures) must not
    # leave the rest of the network without an answer.
    terminals_are_outfalls = not has_water and not bool(np.any(out_method == "outfalls_layer"))
    term = np.where(terminal)[0]
    kinds = np.r_[st.kind, np.full(len(sp.junction_xy), "junction", dtype=object)]
    at = np.zeros(len(term), dtype=bool)
    if wtree is not None and len(term):
        pts = shapely.points(node_xy(st.xy, sp.junction_xy, term))
        pi, _ = wtree.query(pts, predicate="dwithin", distance=cfg.water_tol)
        at[np.unique(pi)] = True
    meth = rank_terminals(
        kinds[term], term < ends.n_structures, at, terminals_are_outfalls=terminals_are_outfalls
    )
    is_out = meth != None  # noqa: E711
    out_id[term[is_out]] = ed.node_ids[term[is_out]]
    out_method[term[is_out]] = meth[is_out]
    return OutfallTable(
        outfall_id=out_id,
        method=out_method,
        layer_attributes=attrs,
        unsnapped=unsnapped,
        not_at_water=term[~is_out].tolist(),
        has_water=has_water,
        water_tree=wtree,
        terminals_are_outfalls=terminals_are_outfalls,
    )


def _node_by_id(
    st: Any, used: np.ndarray, oid: Any, xy: np.ndarray, cfg: Any
) -> tuple[int, float] | None:
    """The network node of the structure whose id is the outfall's, and its distance,
    when that structure lies within the id-match distance (an outfall point moved off
    its structure: found in the field elsewhere, or mapped a little apart); else None."""
    j = st.id_index.get(str(oid)) if oid is not None else None
    if j is None or not st.has_point[j]:
        return None
    nd = int(st.primary[j])
    if not used[nd]:
        return None
    dist = float(np.hypot(*(st.xy[j] - xy)))
    return (nd, dist) if dist <= cfg.id_tol else None


def junction_outfall_ids(
    nodes: list[int], e_u: np.ndarray, e_v: np.ndarray, conv: np.ndarray, *, taken: set[str]
) -> dict[int, str]:
    """Outfall ids a user can look up for terminal junctions (not ``J<n>``).

    ``end:<conv_id>`` where one conveyance ends there, ``junction:<a>+<b>`` where
    several meet; ``~2``, ``~3`` ... keep them unique.
    """
    out: dict[int, str] = {}
    if not nodes:
        return out
    want = np.asarray(nodes)
    inc: dict[int, list[str]] = {}
    for side in (e_v, e_u):
        for k in np.where(np.isin(side, want))[0]:
            inc.setdefault(int(side[k]), []).append(str(conv[k]))
    used = set(taken)
    for nd in nodes:
        names = sorted(dict.fromkeys(inc.get(nd, [])))
        base = (
            f"end:{names[0]}"
            if len(names) == 1
            else "junction:" + "+".join(names[:3]) + ("+..." if len(names) > 3 else "")
        )
        name, k = base, 2
        while name in used:
            name, k = f"{base}~{k}", k + 1
        used.add(name)
        out[nd] = name
    return out


def sink_pool_outfalls(
    net: StormNetwork,
    *,
    has_water: bool = False,
    at_water: Callable[[np.ndarray], bool] | None = None,
    terminals_are_outfalls: bool = True,
) -> None:
    """On the solved graph: a pool of two-way links with no way out becomes one terminal
    (ranked like any other), added to ``net.outfalls`` (the solved graph is then
    dropped from the network's cache)."""
    s = solve_network(net)
    new_rows = _pool_terminals(
        net,
        s,
        has_water=has_water,
        at_water=at_water,
        terminals_are_outfalls=terminals_are_outfalls,
    )
    if new_rows:
        _add_outfalls(net, new_rows)


def _pool_terminals(
    net: StormNetwork,
    s: SolvedNetwork,
    *,
    has_water: bool,
    at_water: Callable[[np.ndarray], bool] | None,
    terminals_are_outfalls: bool,
) -> list[dict[str, Any]]:
    """The outfall rows of the pools of two-way links with no way out (one per pool, at
    its lowest node or its headwall); a pool whose end is not an outfall is listed in
    ``net.terminals_not_at_water`` instead."""
    nodes = net.nodes
    comp_sizes = np.bincount(s.comp, minlength=s.ncomp)
    new_rows: list[dict[str, Any]] = []
    for c in np.unique(s.sink):
        if s.comp_outfall[c] is not None or comp_sizes[c] < 2 or s.comp_cycle[c]:
            continue
        # a pool of two-way links with no way out: its lowest node is the terminal
        members = np.where(s.comp == c)[0]
        rep = int(members[_lowest_first(nodes, members)[0]])
        nid = str(s.node_index[rep])
        kinds = nodes["kind"].to_numpy(dtype=object)[members]
        hw = np.where(kinds == "headwall")[0]
        xy = shapely.get_coordinates(nodes.geometry.iloc[rep])[0]
        if has_water and at_water is not None and at_water(xy):
            method = "terminal_at_water"
        elif len(hw):
            rep = int(members[hw[0]])
            nid = str(s.node_index[rep])
            method = "headwall_at_end"
        elif has_water or not terminals_are_outfalls:
            net.terminals_not_at_water.append(nid)
            continue
        elif pd.isna(nodes["struct_id"].iat[rep]):
            method = "terminal_loose_end"
        else:
            method = "terminal_at_structure"
        new_rows.append(
            {
                "outfall_id": _pool_outfall_id(net, s, rep, nid, new_rows),
                "node_id": nid,
                "receiving_water": None,
                "pwl_id": None,
                "status": "unknown",
                "permit_id": None,
                "method": method,
                "geometry": nodes.geometry.iloc[rep],
            }
        )
    return new_rows


def _lowest_first(nodes: gpd.GeoDataFrame, members: np.ndarray) -> np.ndarray:
    """The order of ``members`` lowest first: by invert, then rim (missing ones last),
    then position."""
    inv = nodes["invert_elev"].to_numpy(dtype=float)[members]
    rim = nodes["rim_elev"].to_numpy(dtype=float)[members]
    return np.lexsort(
        (
            np.arange(len(members)),
            np.nan_to_num(rim, nan=np.inf),
            np.nan_to_num(inv, nan=np.inf),
        )
    )


def _pool_outfall_id(
    net: StormNetwork, s: SolvedNetwork, rep: int, nid: str, new_rows: list[dict[str, Any]]
) -> str:
    """The outfall id of a pool's terminal node: its node id at a structure, a junction
    outfall id a user can look up (not taken yet) at a junction."""
    if not pd.isna(net.nodes["struct_id"].iat[rep]):
        return nid
    edges = net.edges
    eu, ev = edge_node_positions(s, edges)
    taken = set(net.outfalls.index.astype(str)) | {r["outfall_id"] for r in new_rows}
    return junction_outfall_ids(
        [rep], eu, ev, edges["conv_id"].astype(str).to_numpy(), taken=taken
    )[rep]


def _add_outfalls(net: StormNetwork, new_rows: list[dict[str, Any]]) -> None:
    """Append the pools' terminals to ``net.outfalls`` (text columns as strings) and drop
    what was solved without them."""
    add = gpd.GeoDataFrame(pd.DataFrame(new_rows), geometry="geometry", crs=net.crs).set_index(
        "outfall_id"
    )
    for col in add.columns:
        if col != "geometry":
            add[col] = pd.array(add[col].astype(object).where(add[col].notna(), None), dtype="str")
    if "guessed" in net.outfalls.columns:
        add["guessed"] = True  # a pool's terminal is inferred from where the lines end
    net.outfalls = pd.concat([net.outfalls, add])
    net._cache.clear()
