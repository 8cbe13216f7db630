"""Trace the network from or to any structure, conveyance, outfall or point; sewersheds; points to check in the field.

:func:`trace_downstream` and :func:`trace_upstream` answer with a
:class:`~ms4map.network.model.Trace` and an :class:`~ms4map.network.model.Upstream`;
:func:`network_sewersheds` draws a polygon per outfall from the network alone;
:func:`field_check_points` lists where the data needs a look on the ground.
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
import shapely.ops
from scipy.sparse.csgraph import breadth_first_order

from ..core.errors import DataError
from .assign import OUTFALL_WHY, assign_outfalls, describe_nodes, node_results, reached_reason
from .model import StormNetwork, Trace, Upstream
from .settings import OUTFALL_METHODS
from .solve import solve_network

__all__ = [
    "UNASSIGNED_CAUSES",
    "field_check_points",
    "network_sewersheds",
    "trace_downstream",
    "trace_upstream",
    "unassigned_cause",
]


def _resolve_start(net: StormNetwork, start: Any, by: str) -> tuple[int, list[int], str]:
    """-> (start node index, extra edge rows to include, label)."""
    s = solve_network(net)
    if by not in ("auto", "struct", "node", "conv", "point"):
        raise DataError(
            f"Unknown by={by!r}, select from ['auto', 'struct', 'node', 'conv', 'point']."
        )
    if isinstance(start, shapely.Point) or by == "point":
        if not isinstance(start, shapely.Point):
            raise DataError(f"by='point' needs a shapely Point, got {type(start).__name__}.")
        e = net.edges
        if len(e) == 0:
            raise DataError("The network has no conveyances to start from.")
        tree = shapely.STRtree(e.geometry.values)
        k = int(tree.nearest(start))
        return int(s.node_index.get_loc(str(e["to_node"].iat[k]))), [k], start.wkt
    key = str(start)
    if by in ("auto", "struct", "node"):
        sn = net.structure_nodes
        hit = sn.loc[sn["struct_id"] == key, "node_id"]
        if len(hit) and isinstance(hit.iat[0], str):
            return int(s.node_index.get_loc(hit.iat[0])), [], key
        if len(hit):
            raise DataError(f"Structure '{key}' has no location, so it is not in the network.")
        if key in s.node_index and by != "struct":
            return int(s.node_index.get_loc(key)), [], key
    if by in ("auto", "conv"):
        e = net.edges
        rows = np.where(e["conv_id"].astype(str).to_numpy() == key)[0]
        if len(rows):
            # the most downstream part: its to_node is no part's from_node
            frm = set(e["from_node"].iloc[rows].astype(str))
            last = [r for r in rows if str(e["to_node"].iat[r]) not in frm] or [rows[-1]]
            k = int(last[0])
            return int(s.node_index.get_loc(str(e["to_node"].iat[k]))), list(map(int, rows)), key
    raise DataError(
        f"'{key}' is neither a struct_id nor a conv_id of the network. Fix: check the id "
        "(ids are case-sensitive), or give a map point."
    )


def trace_downstream(net: StormNetwork, start: Any, *, by: str = "auto") -> Trace:
    """Trace from a structure, conveyance or map point down to its outfall(s).

    Parameters
    ----------
    net : StormNetwork
    start : str or shapely.Point
        A ``struct_id``, a ``conv_id`` or a point in the working CRS (the trace
        starts on the nearest conveyance).
    by : {"auto", "struct", "node", "conv", "point"}
        How to read ``start``.

    Returns
    -------
    Trace
    """
    s = solve_network(net)
    node, extra, label = _resolve_start(net, start, by)
    e = net.edges
    onward = s.arc_onward if s.arc_onward is not None else np.ones(len(s.arc_from), bool)
    # downstream along the onward arcs: not back up a two-way link, not round a loop
    fwd = s.csr_onward if s.csr_onward is not None else s.csr
    order = breadth_first_order(fwd, node, directed=True, return_predecessors=False)
    is_point = isinstance(start, shapely.Point) and bool(extra)
    # the start conveyance's own parts come first, in flow order; then the flow below
    chain = _flow_chain(e, extra)
    head: list[int] = []
    if chain and not is_point:
        fn = s.node_index.get_indexer(e["from_node"].iloc[chain].astype(str))
        head = [int(x) for x in fn if x >= 0]
    node_order = list(dict.fromkeys([*head, *map(int, order)]))
    rank = np.full(len(s.node_index), len(order))
    rank[order] = np.arange(len(order))
    reached = np.zeros(len(s.node_index), dtype=bool)
    reached[order] = True
    arcs = np.where(reached[s.arc_from] & onward)[0]
    # below the start: each edge by the BFS rank of its upstream node (stable: input order)
    arcs = arcs[np.argsort(rank[s.arc_from[arcs]], kind="stable")]
    erows = list(dict.fromkeys([*chain, *map(int, s.arc_edge[arcs])]))
    edges = e.iloc[erows]
    if is_point:
        # only the part of the start conveyance below the point
        k = extra[0]
        g = e.geometry.iat[k]
        t = g.project(start)
        edges = edges.copy()
        part = shapely.ops.substring(g, t, g.length)
        edges.iloc[0, edges.columns.get_loc("geometry")] = part
        edges.iloc[0, edges.columns.get_loc("length_m")] = part.length * net.settings.get(
            "crs_unit_m", 1.0
        )
    nodes = net.nodes.iloc[node_order]
    res = node_results(net).iloc[node]
    outs = [o for o in s.outfall_of_node[order] if o is not None]
    ambiguous = str(res["method"]) == "ambiguous"
    if ambiguous:
        outs = [o for o in str(res["other_outfalls"]).split(";") if o]
    main = res["outfall_id"]
    if isinstance(main, str) and main in outs:
        outs = [main] + [o for o in outs if o != main]
    rw = []
    for o in outs:
        w = net.outfalls.loc[o, "receiving_water"] if o in net.outfalls.index else None
        if isinstance(w, str) and w not in rw:
            rw.append(w)
    geom = None
    if len(edges):
        geom = shapely.line_merge(shapely.union_all(edges.geometry.values))
    length = (
        float(shapely.length(edges.geometry.values).sum() * net.settings.get("crs_unit_m", 1.0))
        if len(edges)
        else 0.0
    )
    method, reason = str(res["method"]), str(res["reason"])
    note = str(res["dead_branches"] or "")
    if method in OUTFALL_REACHED and isinstance(main, str) and len(edges):
        # the reason counts what this trace shows (a conveyance start adds itself)
        n_conv, metres = int(edges["conv_id"].nunique()), length
        if note:
            # the trace also shows branches that dead-end: count the main path only
            f = net.settings.get("crs_unit_m", 1.0)
            n_conv = int(res["hops"]) + (1 if chain else 0)
            metres = float(res["dist_m"]) + (
                float(shapely.length(edges.geometry.values[: len(chain)]).sum() * f)
                if chain
                else 0.0
            )
        where = describe_nodes(net, [str(net.outfalls.at[main, "node_id"])])
        text = reached_reason(
            n_conv, metres, main, str(net.outfalls.at[main, "method"]), next(iter(where.values()))
        )
        if method == "assumed_lateral":
            head_txt, _, _ = reason.partition(", then ")
            text = f"{head_txt}, then {text}"
        reason = text + note
    return Trace(label, nodes, edges, geom, length, outs, rw, method, reason, ambiguous=ambiguous)


#: Assignment methods under which flow reaches one outfall along one path.
OUTFALL_REACHED = (*OUTFALL_METHODS, "assumed_lateral")


def _flow_chain(e: pd.DataFrame, rows: list[int]) -> list[int]:
    """The parts ``rows`` of one conveyance in flow order (upstream part first)."""
    if len(rows) <= 1:
        return [int(r) for r in rows]
    fn = e["from_node"].iloc[rows].astype(str).tolist()
    tn = e["to_node"].iloc[rows].astype(str).tolist()
    by_from = dict(zip(fn, rows, strict=True))
    heads = [r for r, f in zip(rows, fn, strict=True) if f not in set(tn)] or [rows[0]]
    chain: list[int] = []
    r: Any = heads[0]
    while r is not None and r not in chain:
        chain.append(int(r))
        r = by_from.get(tn[rows.index(r)])
    chain += [int(x) for x in rows if x not in chain]
    return chain


def trace_upstream(net: StormNetwork, start: Any, *, by: str = "auto") -> Upstream:
    """Everything upstream of an outfall, structure or conveyance.

    Parameters
    ----------
    net : StormNetwork
    start : str or shapely.Point
        An ``outfall_id``, ``struct_id``, ``conv_id`` or point (nearest conveyance).
    by : str
        As in :func:`trace_downstream`.

    Returns
    -------
    Upstream
    """
    s = solve_network(net)
    if isinstance(start, str) and start in net.outfalls.index and by == "auto":
        nid = net.outfalls.loc[start, "node_id"]
        if not isinstance(nid, str):
            raise DataError(f"Outfall '{start}' is not connected to the network.")
        node, extra = int(s.node_index.get_loc(nid)), []
        label = start
    else:
        node, extra, label = _resolve_start(net, start, by)
    starts = [node]
    if extra:
        # a conveyance: what drains through any of its parts, so from the upstream end of
        # each (a lateral that enters it partway joins a later part)
        e = net.edges
        starts = sorted({int(s.node_index.get_loc(str(e["from_node"].iat[r]))) for r in extra})
    rev = s.csr.T.tocsr()
    reached = np.zeros(len(s.node_index), dtype=bool)
    for n0 in starts:
        reached[breadth_first_order(rev, n0, directed=True, return_predecessors=False)] = True
    order = np.flatnonzero(reached)
    arcs = reached[s.arc_to] & reached[s.arc_from]
    erows = np.unique(np.r_[s.arc_edge[arcs], np.array(extra, dtype=int)]).astype(int)
    return Upstream(label, net.nodes.iloc[np.sort(order)], net.edges.iloc[erows])


# ------------------------------------------------------------------------------------
# sewersheds
# ------------------------------------------------------------------------------------
def network_sewersheds(
    net: StormNetwork, *, spacing_m: float = 10.0, buffer_m: float = 50.0
) -> gpd.GeoDataFrame:
    """Sewershed polygons per outfall from the network alone.

    Points along every conveyance (each ``spacing_m`` metres) and every node carry
    the main outfall they drain to; their Voronoi cells, dissolved per outfall and
    clipped to ``buffer_m`` around the network, partition the served area.  Later
    steps refine this with surface catchments.

    Returns
    -------
    GeoDataFrame
        ``outfall_id``, ``n_structures``, ``method`` (``network_voronoi``), geometry.
    """
    f = float(net.settings.get("crs_unit_m", 1.0))
    res = node_results(net)
    e = net.edges
    pts: list[np.ndarray] = []
    labs: list[np.ndarray] = []
    nd_out = res["outfall_id"].reindex(net.nodes.index.astype(str)).to_numpy()
    pts.append(shapely.get_coordinates(net.nodes.geometry.values))
    labs.append(nd_out)
    if len(e):
        step = spacing_m / f
        total = float(shapely.length(e.geometry.values).sum())
        step = max(step, total / 200_000)
        down = res["outfall_id"].reindex(e["to_node"].astype(str)).to_numpy()
        for g, lab in zip(e.geometry.values, down, strict=False):
            n = int(g.length // step)
            if n > 0:
                d = np.arange(1, n + 1) * step
                pts.append(shapely.get_coordinates(shapely.line_interpolate_point(g, d)))
                labs.append(np.full(n, lab, dtype=object))
    xy = np.vstack(pts)
    lab = np.concatenate(labs)
    ok = np.array([isinstance(v, str) for v in lab])
    xy, lab = xy[ok], lab[ok]
    cols = ["outfall_id", "n_structures", "method"]
    if len(xy) == 0:
        return gpd.GeoDataFrame(columns=[*cols, "geometry"], geometry="geometry", crs=net.crs)
    _, first = np.unique(np.round(xy, 6), axis=0, return_index=True)
    xy, lab = xy[first], lab[first]
    region = shapely.buffer(shapely.multipoints(xy), buffer_m / f).envelope
    hull = shapely.buffer(shapely.convex_hull(shapely.multipoints(xy)), buffer_m / f)
    if len(xy) >= 3:
        cells = shapely.voronoi_polygons(shapely.multipoints(xy), extend_to=region, ordered=True)
        cells = np.array(cells.geoms, dtype=object)
    else:
        cells = np.array(
            [shapely.buffer(shapely.points(p), buffer_m / f) for p in xy], dtype=object
        )
    recs = []
    for oid in sorted(set(lab)):
        part = cells[lab == oid]
        try:  # Voronoi cells form a coverage: coverage union is exact and robust
            poly = shapely.coverage_union_all(part)
        except shapely.errors.GEOSException:
            poly = shapely.union_all(shapely.buffer(part, 0), grid_size=1e-6 * buffer_m / f)
        recs.append({"outfall_id": oid, "geometry": shapely.intersection(poly, hull)})
    diss = gpd.GeoDataFrame(pd.DataFrame(recs), geometry="geometry", crs=net.crs)
    sid = net.nodes["struct_id"].reindex(res.index)
    counts = (
        res[sid.notna().to_numpy() & res["outfall_id"].notna().to_numpy()]
        .groupby("outfall_id")
        .size()
    )
    diss["n_structures"] = diss["outfall_id"].map(counts).fillna(0).astype(int)
    diss["method"] = "network_voronoi"
    diss["outfall_id"] = diss["outfall_id"].astype("str")
    return diss[[*cols, "geometry"]]


# ------------------------------------------------------------------------------------
# field check: where the data needs a look on the ground
# ------------------------------------------------------------------------------------
#: Why a structure has no outfall (``field_check_points`` column ``cause``).
UNASSIGNED_CAUSES = (
    "no conveyance within the lateral tolerance",
    "dead end",
    "loose end",
    "cycle",
    "no geometry",
)


def unassigned_cause(method: str, reason: str) -> str:
    """The cause of a structure without an outfall, from its method and reason."""
    if method == "unconnected":
        return "no conveyance within the lateral tolerance"
    if method == "cycle":
        return "cycle"
    if method == "no_geometry":
        return "no geometry"
    return "loose end" if "unsnapped_end" in str(reason) else "dead end"


def field_check_points(net: StormNetwork, table: pd.DataFrame | None = None) -> gpd.GeoDataFrame:
    """Points to check in the field: the outfall candidates that are only guesses
    (``terminal_loose_end``, ``terminal_at_structure``) with how many structures drain
    to each, and every structure without an outfall with its cause and reason.

    Columns ``what`` (``loose_end``, ``terminal_at_structure``, ``unassigned``),
    ``id`` (outfall or structure id), ``cause``, ``structures`` (count draining there;
    1 for an unassigned structure), ``reason``; geometry in the working CRS.
    """
    t = assign_outfalls(net) if table is None else table
    of = net.outfalls
    guess = of[of["method"].isin(["terminal_loose_end", "terminal_at_structure"])]
    n_to = t["outfall_id"].value_counts()
    rows_a = pd.DataFrame(
        {
            "what": np.where(
                guess["method"].astype(str) == "terminal_loose_end",
                "loose_end",
                "terminal_at_structure",
            ),
            "id": guess.index.astype(str),
            "cause": "",
            "structures": n_to.reindex(guess.index.astype(str)).fillna(0).astype(int).to_numpy(),
            "reason": [OUTFALL_WHY[str(m)] for m in guess["method"]],
        }
    )
    un = t[t["outfall_id"].isna()]
    node_geom = net.nodes.geometry
    geom_un = node_geom.reindex(un["node_id"].astype(object).where(un["node_id"].notna()))
    rows_b = pd.DataFrame(
        {
            "what": "unassigned",
            "id": un["struct_id"].astype(str).to_numpy(),
            "cause": [
                unassigned_cause(m, r) for m, r in zip(un["method"], un["reason"], strict=True)
            ],
            "structures": 1,
            "reason": un["reason"].astype(str).to_numpy(),
        }
    )
    geoms = np.r_[guess.geometry.to_numpy(), geom_un.to_numpy()]
    df = pd.concat([rows_a, rows_b], ignore_index=True)
    return gpd.GeoDataFrame(df, geometry=list(geoms), crs=net.crs)
