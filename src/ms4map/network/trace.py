"""Outfall assignment, downstream/upstream traces and sewersheds on a StormNetwork.

The all-structures assignment is linear in network size: strongly connected
components (scipy) collapse cycles and two-way links, each component keeps one
*main* exit (largest pipe, then lowest invert), and pointer jumping on a numpy
array finds every component's sink in ``O(n log depth)``.  Only components
upstream of a flow split get a full set of reachable outfalls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components, dijkstra

from ..core.errors import DataError
from .settings import OUTFALL_METHODS

__all__ = [
    "ASSIGN_METHODS",
    "Trace",
    "Upstream",
    "assign_outfalls",
    "describe_nodes",
    "edge_outfalls",
    "field_check_points",
    "network_sewersheds",
    "trace_downstream",
    "trace_upstream",
    "unassigned_cause",
]

#: Closed list of ``method`` values of :func:`assign_outfalls` (see docs/network.md).
ASSIGN_METHODS = (
    "outfalls_layer",  # drains to an outfall of the outfalls layer
    "outfall_structure",  # ... to a structure of kind outfall
    "terminal_at_water",  # ... to a terminal node within the water tolerance of a waterbody
    "headwall_at_end",  # ... to a headwall at an open end (a real outlet)
    "terminal_at_structure",  # ... to a terminal at another structure (no water layer)
    "terminal_loose_end",  # ... to a bare line end (no water layer): the weakest guess
    "split",  # flow splits and reaches several outfalls (main one given)
    "terminal_not_at_water",  # ends at a terminal node away from every waterbody: no outfall
    "cycle",  # ends in a loop of conveyances with no way out: no outfall
    "assumed_lateral",  # no conveyance reaches it; nearest conveyance (lateral_tolerance_m)
    "unconnected",  # no conveyance reaches the structure
    "no_geometry",  # the structure has no usable location
)


class NetworkLike(Protocol):
    """What the traces read of a :class:`ms4map.network.build.StormNetwork`.

    :mod:`ms4map.network.build` imports this module (its last step solves the graph),
    so importing the class here, even under ``TYPE_CHECKING``, would make an import
    cycle (``tests/test_layout_imports.py``); the traces name the attributes instead.
    The optional ones (``_graph``, ``orientation_conflicts``, ``terminals_unchecked``)
    are read with ``getattr``.
    """

    nodes: gpd.GeoDataFrame
    edges: gpd.GeoDataFrame
    outfalls: gpd.GeoDataFrame
    crs: Any
    settings: dict[str, Any]
    structure_nodes: pd.DataFrame
    terminals_not_at_water: list[str]
    _cache: dict[str, Any]


# ------------------------------------------------------------------------------------
# core solve (cached on the network)
# ------------------------------------------------------------------------------------
@dataclass
class _Solved:
    node_index: pd.Index
    arc_from: np.ndarray  # directed arcs (bi edges appear twice), absorbing outfalls removed
    arc_to: np.ndarray
    arc_edge: np.ndarray  # arc -> row of net.edges
    is_outfall: np.ndarray
    outfall_of_node: np.ndarray  # object: outfall id at the node or None
    comp: np.ndarray
    ncomp: int
    sink: np.ndarray  # comp -> final sink comp along main exits
    hops: np.ndarray  # comp -> conveyances along the main path
    dist_m: np.ndarray  # comp -> metres along the main path
    comp_outfall: np.ndarray  # comp -> outfall id (object) or None
    comp_cycle: np.ndarray  # comp has a directed (not two-way) cycle
    touched: np.ndarray  # node has an edge
    #: comp -> OR of the rules that chose the main exit at every split on its main path
    #: (:data:`_SPLIT_RULES` bits); 0 when the main path does not split.
    split_bits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    all_outfalls: dict[int, list[str]] = field(default_factory=dict)  # comp -> outfalls (splits)
    #: node -> conveyances and metres from the node to its component's main exit (0
    #: outside loops and two-way links; :func:`_within_components`)
    node_hops: np.ndarray | None = None
    node_dist_m: np.ndarray | None = None
    #: arc -> on the main path inside its component (True for the arcs between them)
    arc_onward: np.ndarray | None = None
    #: the graph of the onward arcs (what a downstream trace follows)
    csr_onward: Any = None
    #: comp upstream of a split -> (the first sink components without an outfall that
    #: a branch below it ends in: terminals not at water, trapping loops; more of them?)
    dead_ends: dict[int, tuple[list[int], bool]] = field(default_factory=dict)
    csr: Any = None


def _solve(net: NetworkLike) -> _Solved:
    cached = net._cache.get("solved")
    if cached is not None:
        return cached
    nodes, edges = net.nodes, net.edges
    nidx = nodes.index
    n = len(nidx)
    gr = getattr(net, "_graph", None) or {}
    eu, ev = _edge_ends(nidx, edges, gr)
    bi = edges["bidirectional"].to_numpy(dtype=bool) if len(edges) else np.zeros(0, bool)
    eidx = np.arange(len(edges))
    u = np.r_[eu, ev[bi]]
    v = np.r_[ev, eu[bi]]
    arc_edge = np.r_[eidx, eidx[bi]]
    of_node = np.full(n, None, dtype=object)
    ok = net.outfalls["node_id"].notna().to_numpy()
    onodes = nidx.get_indexer(net.outfalls["node_id"][ok].astype(str))
    of_node[onodes] = net.outfalls.index[ok].astype(str).to_numpy()
    is_out = np.array([x is not None for x in of_node], dtype=bool)
    keep = ~is_out[u]  # flow stops at an outfall
    u, v, arc_edge = u[keep], v[keep], arc_edge[keep]
    touched = np.zeros(n, dtype=bool)
    touched[eu] = True
    touched[ev] = True
    csr = csr_matrix((np.ones(len(u)), (u, v)), shape=(n, n))
    ncomp, comp = connected_components(csr, directed=True, connection="strong")
    in_cycle = _in_directed_cycle(u, v, bi, keep, comp=comp, ncomp=ncomp)
    comp_cycle = np.zeros(ncomp, dtype=bool)
    comp_cycle[comp[in_cycle]] = True
    # component exits; main exit per component = among the exits that reach an outfall
    # (when any does): largest pipe, then lowest downstream invert, then input order
    cu, cv = comp[u], comp[v]
    ex = cu != cv
    # a conveyance split into parts counts once: on its last part in flow order
    weight = _last_part(edges, gr.get("src")).astype(np.int64)[arc_edge]
    diam = edges["diameter_in"].to_numpy(dtype=float)[arc_edge] if len(edges) else np.zeros(0)
    dsi = edges["ds_invert"].to_numpy(dtype=float)[arc_edge] if len(edges) else np.zeros(0)
    elen = edges["length_m"].to_numpy(dtype=float)[arc_edge] if len(edges) else np.zeros(0)
    ex_idx = np.where(ex)[0]
    # flow splits: components with two or more distinct successor components
    pairs = np.unique(np.c_[cu[ex], cv[ex]], axis=0) if ex.any() else np.zeros((0, 2), int)
    nsucc = np.bincount(pairs[:, 0], minlength=ncomp) if len(pairs) else np.zeros(ncomp, int)
    split_comps = np.where(nsucc >= 2)[0]
    comp_outfall = np.full(ncomp, None, dtype=object)
    for nd in np.where(is_out)[0][::-1]:
        comp_outfall[comp[nd]] = of_node[nd]
    # where flow splits, the main exit is chosen among the branches that reach an
    # outfall (one upstream BFS on the component graph), so a preferred branch
    # that dead-ends never hides an outfall another branch reaches
    # ... and among those, the branches that reach the best-ranked terminal (a real
    # outfall, then a terminal at a structure, then a bare line end)
    best = np.zeros(ncomp, dtype=np.int64)
    if len(split_comps):
        best = _best_terminal_rank(net, pairs, is_out, of_node, comp=comp, ncomp=ncomp)
    # physical evidence first (pipe size, invert), then the terminal's rank, then the
    # input order (the last resort)
    keys = [ex_idx]
    if len(split_comps):
        keys.append(best[cv[ex_idx]])
    keys += [
        np.nan_to_num(dsi[ex_idx], nan=np.inf),
        -np.nan_to_num(diam[ex_idx], nan=-1.0),
    ]
    if len(split_comps):
        keys.append(best[cv[ex_idx]] == 3)
    order = np.lexsort((*keys, cu[ex_idx]))
    ex_sorted = ex_idx[order]
    first = (
        np.r_[True, cu[ex_sorted][1:] != cu[ex_sorted][:-1]]
        if len(ex_sorted)
        else np.zeros(0, bool)
    )
    main_arc = ex_sorted[first]
    nxt = np.arange(ncomp)
    nxt[cu[main_arc]] = cv[main_arc]
    hops = np.zeros(ncomp, dtype=np.int64)
    hops[cu[main_arc]] = weight[main_arc]
    dist = np.zeros(ncomp)
    dist[cu[main_arc]] = elen[main_arc]
    # inside loops and two-way runs: from where the main path enters a component to its
    # main exit (and, per node, from the node to it)
    node_hops, node_dist, onward = _within_components(
        n, u, v, comp, elen=elen, weight=weight, main_arc=main_arc
    )
    hops[cu[main_arc]] += node_hops[v[main_arc]]
    dist[cu[main_arc]] += node_dist[v[main_arc]]
    bits = np.zeros(ncomp, dtype=np.int64)
    if len(split_comps):
        bits[split_comps] = _split_rule_bits(
            split_comps, ex_sorted, cu=cu, cv=cv, diam=diam, dsi=dsi, best=best
        )
    for _ in range(64):  # pointer jumping: depth doubles each round
        nn = nxt[nxt]
        moving = nxt != np.arange(ncomp)
        hops = hops + np.where(moving, hops[nxt], 0)
        dist = dist + np.where(moving, dist[nxt], 0.0)
        if len(split_comps):
            bits = bits | np.where(moving, bits[nxt], 0)
        if np.array_equal(nn, nxt):
            break
        nxt = nn
    sink = nxt
    solved = _Solved(
        nidx,
        u,
        v,
        arc_edge,
        is_out,
        of_node,
        comp,
        ncomp,
        sink,
        hops,
        dist,
        comp_outfall,
        comp_cycle,
        touched,
        split_bits=bits,
        csr=csr,
    )
    solved.node_hops, solved.node_dist_m, solved.arc_onward = node_hops, node_dist, onward
    solved.csr_onward = (
        csr
        if onward.all()
        else csr_matrix((np.ones(int(onward.sum())), (u[onward], v[onward])), shape=(n, n))
    )
    if len(split_comps):
        solved.all_outfalls, solved.dead_ends = _split_outfalls(
            pairs,
            split_comps,
            ncomp,
            sink=sink,
            comp_outfall=comp_outfall,
            first_node=_first_node_of_comp(solved),
        )
    net._cache["solved"] = solved
    return solved


def _within_components(
    n: int,
    u: np.ndarray,
    v: np.ndarray,
    comp: np.ndarray,
    *,
    elen: np.ndarray,
    weight: np.ndarray,
    main_arc: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inside loops and runs of two-way links (strongly connected components): each
    node's conveyances and metres to its component's main exit along the shortest way
    there, and which arcs lie on such a way (onward; in a component with one way out
    only: where flow splits inside a loop every arc of it stays onward).

    A component's main path starts at the tail of its main exit arc; a node elsewhere
    in the component first has to get there (a two-way chain A - B - C whose exit
    leaves C: A is two conveyances and their metres further).  Outside such
    components both are 0 and every arc counts as onward.
    """
    cu, cv = comp[u], comp[v]
    intra = (cu == cv) & (u != v)
    hops = np.zeros(n, dtype=np.int64)
    dist = np.zeros(n)
    onward = np.ones(len(u), dtype=bool)
    if not intra.any():
        return hops, dist, onward
    ncomp = int(comp.max()) + 1 if len(comp) else 0
    exit_node = np.full(ncomp, -1, dtype=np.int64)
    exit_node[cu[main_arc]] = u[main_arc]
    srcs = np.unique(exit_node[exit_node >= 0])
    iu, iv, il = u[intra], v[intra], np.asarray(elen[intra], dtype=float)
    il = np.where(np.isfinite(il), il, 0.0) + 1e-9  # explicit, positive weights
    # one arc per node pair: the shortest (a sparse matrix would add parallel arcs up)
    order = np.lexsort((il, iv, iu))
    first = np.r_[True, (iu[order][1:] != iu[order][:-1]) | (iv[order][1:] != iv[order][:-1])]
    pick = order[first]
    rev = csr_matrix((il[pick], (iv[pick], iu[pick])), shape=(n, n))  # towards the exit
    if not len(srcs):
        return hops, dist, onward
    d, pred, _src = dijkstra(
        rev, directed=True, indices=srcs, min_only=True, return_predecessors=True
    )
    reach = np.isfinite(d)
    dist[reach] = d[reach]
    # an arc inside a component with one way out is onward when it lies on a shortest
    # way to that exit (not back up a two-way link, not round the loop again)
    leaving = np.bincount(cu[cu != cv], minlength=ncomp)
    du, dv = d[iu], d[iv]
    on = np.isfinite(du) & np.isfinite(dv) & np.isclose(du, dv + il, rtol=1e-9, atol=1e-6)
    onward[np.flatnonzero(intra)] = on | (leaving[cu[intra]] != 1)
    # conveyances along the way: each node's arc to its predecessor (its next node)
    w_of = {}
    iw = np.asarray(weight[intra], dtype=np.int64)
    for a, b, w in zip(iu[pick].tolist(), iv[pick].tolist(), iw[pick].tolist(), strict=True):
        w_of[(a, b)] = w
    step = np.zeros(n, dtype=np.int64)
    nxt = np.arange(n)
    has = pred >= 0
    for a in np.flatnonzero(has):
        b = int(pred[a])
        step[a] = w_of.get((int(a), b), 1)
        nxt[a] = b
    for _ in range(64):  # pointer jumping along the ways to the exits
        moving = nxt != np.arange(n)
        if not moving.any():
            break
        step = step + np.where(moving, step[nxt], 0)
        nn = nxt[nxt]
        if np.array_equal(nn, nxt):
            break
        nxt = nn
    hops[:] = step
    return hops, dist, onward


def _edge_ends(
    nidx: pd.Index, edges: gpd.GeoDataFrame, gr: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """Each edge's from and to node as positions in ``nidx``: the build's integer
    endpoints while they still match the tables, else looked up by node id."""
    if gr.get("n_nodes") == len(nidx) and gr.get("n_edges") == len(edges):
        return gr["u"], gr["v"]
    eu = nidx.get_indexer(edges["from_node"].astype(str)) if len(edges) else np.zeros(0, int)
    ev = nidx.get_indexer(edges["to_node"].astype(str)) if len(edges) else np.zeros(0, int)
    return eu, ev


def _in_directed_cycle(
    u: np.ndarray,
    v: np.ndarray,
    bi: np.ndarray,
    keep: np.ndarray,
    *,
    comp: np.ndarray,
    ncomp: int,
) -> np.ndarray:
    """Per node, whether it is on a directed cycle: in a strong component (of more than
    one node) of the graph without its two-way links.  ``u``/``v`` are the arcs kept
    (``keep`` of the edges then the reversed two-way ones), ``comp`` the strong
    components of the whole graph."""
    n = len(comp)
    one_way = ~np.r_[bi, np.ones(int(bi.sum()), bool)][keep] if len(bi) else np.zeros(0, bool)
    if len(u) and not bi.any():
        return np.bincount(comp, minlength=ncomp)[comp] > 1
    if len(u):
        csr1 = csr_matrix((np.ones(int(one_way.sum())), (u[one_way], v[one_way])), shape=(n, n))
        _, comp1 = connected_components(csr1, directed=True, connection="strong")
        size1 = np.bincount(comp1)
        return size1[comp1] > 1
    return np.zeros(n, dtype=bool)


def _best_terminal_rank(
    net: NetworkLike,
    pairs: np.ndarray,
    is_out: np.ndarray,
    of_node: np.ndarray,
    *,
    comp: np.ndarray,
    ncomp: int,
) -> np.ndarray:
    """comp -> the best rank (:data:`OUTFALL_RANK`: 0 a real outfall, then a terminal at
    a structure, a bare line end) of the terminals it reaches; 3 where it reaches none."""
    from .settings import OUTFALL_RANK

    rank_of = {
        str(o): OUTFALL_RANK.get(str(m), 0)
        for o, m in zip(net.outfalls.index, net.outfalls["method"], strict=True)
    }
    node_rank = np.full(len(comp), 3, dtype=np.int64)
    node_rank[is_out] = [rank_of.get(str(o), 0) for o in of_node[is_out]]
    best = np.full(ncomp, 3, dtype=np.int64)
    for r in (2, 1, 0):
        sel = comp[is_out & (node_rank <= r)]
        if len(sel):
            best[_reaches_outfall(pairs, sel, ncomp)] = r
    return best


#: Rules that choose the main exit where flow splits (bit, words for the reason).
_SPLIT_RULES = (
    (16, "the only branch that reaches an outfall (the others dead-end)"),
    (1, "the largest pipe"),
    (8, "the only branch with a pipe size (the others have none)"),
    (2, "the lowest downstream invert (the pipe sizes do not decide)"),
    (
        32,
        "the branch that reaches the best-ranked terminal (no pipe size or invert tells "
        "the branches apart; a real outfall ranks before a terminal at a structure, "
        "which ranks before a loose line end)",
    ),
    (
        4,
        "the conveyance listed first in the input (no pipe size or invert tells the "
        "branches apart)",
    ),
)


def _last_part(edges: pd.DataFrame, src: np.ndarray | None = None) -> np.ndarray:
    """True for each edge that is the last part (in flow order) of its conveyance.

    ``src`` (source conveyance row per edge, -1 for laterals, kept by the builder)
    finds the split conveyances without comparing strings.
    """
    last = np.ones(len(edges), dtype=bool)
    if len(edges) == 0:
        return last
    if src is not None and len(src) == len(edges):
        ok = src >= 0
        counts = np.bincount(src[ok]) if ok.any() else np.zeros(1, int)
        multi = np.zeros(len(edges), dtype=bool)
        multi[ok] = counts[src[ok]] > 1
        dup = np.where(multi)[0]
        conv = edges["conv_id"].to_numpy(dtype=object)
    else:
        conv = edges["conv_id"].astype(str).to_numpy()
        dup = np.where(pd.Series(conv).duplicated(keep=False).to_numpy())[0]
    if len(dup):
        fn = edges["from_node"].astype(str).to_numpy()
        tn = edges["to_node"].astype(str).to_numpy()
        starts = set(zip(conv[dup], fn[dup], strict=True))
        last[dup] = [(conv[i], tn[i]) not in starts for i in dup]
    return last


def _reaches_outfall(pairs: np.ndarray, out_comps: np.ndarray, ncomp: int) -> np.ndarray:
    """comp -> True when some path from it reaches an outfall component.

    One breadth-first search upstream from a virtual source linked to every outfall
    component, on the component graph ``pairs`` (linear in its size).
    """
    src = ncomp
    rows = np.r_[pairs[:, 1], np.full(len(out_comps), src)]
    cols = np.r_[pairs[:, 0], out_comps]
    rev = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(ncomp + 1, ncomp + 1))
    order = breadth_first_order(rev, src, directed=True, return_predecessors=False)
    reach = np.zeros(ncomp + 1, dtype=bool)
    reach[order] = True
    return reach[:ncomp]


def _split_rule_bits(
    split_comps: np.ndarray,
    ex_sorted: np.ndarray,
    *,
    cu: np.ndarray,
    cv: np.ndarray,
    diam: np.ndarray,
    dsi: np.ndarray,
    best: np.ndarray,
) -> np.ndarray:
    """Which rule chose the main exit of each split component (a :data:`_SPLIT_RULES` bit).

    The main exit is the first of ``ex_sorted`` (branches that reach an outfall, then
    largest pipe, lowest downstream invert, best-ranked terminal, input order); it is compared with the best
    exit to another component, so the reason names the rule that actually told them
    apart.  ``best``: comp -> best rank of the terminals it reaches (3: none).
    """
    keys = cu[ex_sorted].astype(np.int64)
    sc = np.asarray(split_comps, dtype=np.int64)
    lo = np.searchsorted(keys, sc, "left")
    main = ex_sorted[lo]
    # the rival: the first exit of the group (in ex_sorted order) to another component
    in_split = np.zeros(int(keys.max()) + 1 if len(keys) else 1, dtype=bool)
    in_split[sc] = True
    pos = np.where(in_split[keys])[0]
    grp = np.searchsorted(sc, keys[pos])
    other = cv[ex_sorted[pos]] != cv[main[grp]]
    first_other = np.full(len(sc), -1, dtype=np.int64)
    g_o, at = np.unique(grp[other], return_index=True)  # first occurrence per group
    first_other[g_o] = pos[other][at]
    r = np.where(first_other >= 0, ex_sorted[np.maximum(first_other, 0)], main)
    d = np.nan_to_num(diam, nan=-1.0)
    inv = np.nan_to_num(dsi, nan=np.inf)
    out = np.full(len(sc), 4, dtype=np.int64)
    bm, br = best[cv[main]], best[cv[r]]
    out[bm < br] = 32
    out[inv[main] < inv[r]] = 2
    bigger = d[main] > d[r]
    out[bigger] = np.where(d[r][bigger] >= 0, 1, 8)
    out[(bm < 3) & (br == 3)] = 16
    return out


#: How many dead ends below a split a reason names (the rest are "elsewhere").
DEAD_END_LIMIT = 3


def _split_outfalls(
    pairs: np.ndarray,
    split_comps: np.ndarray,
    ncomp: int,
    *,
    sink: np.ndarray,
    comp_outfall: np.ndarray,
    first_node: np.ndarray,
) -> tuple[dict[int, list[str]], dict[int, tuple[list[int], bool]]]:
    """Reachable outfalls and dead ends of every component upstream of a flow split.

    Returns ``(outfalls, dead_ends)``: comp -> sorted outfall ids (only where there
    are several), and comp -> (sink components without an outfall that a branch
    below it ends in, whether there are more). Dead ends are kept to the
    :data:`DEAD_END_LIMIT` first in input order, so the work stays linear.
    """
    affected, aff = _upstream_of_splits(pairs, split_comps, ncomp)
    succ: dict[int, list[int]] = {}
    for a, b in pairs[aff[pairs[:, 0]]]:
        succ.setdefault(int(a), []).append(int(b))
    # per component: (outfall ids, first dead-end sinks by first node, more dead ends)
    memo: dict[int, _Reach] = {}
    # iterative post-order over the affected sub-DAG
    for start in affected:
        start = int(start)
        if start in memo:
            continue
        stack = [(start, False)]
        while stack:
            c, expanded = stack.pop()
            if c in memo:
                continue
            if not aff[c]:
                memo[c] = _sink_reach(c, sink, comp_outfall)
                continue
            if expanded:
                memo[c] = _merged_reach(c, succ, memo, comp_outfall, first_node)
                continue
            stack.append((c, True))
            for s in succ.get(c, ()):
                if s not in memo:
                    stack.append((s, False))
    outs: dict[int, list[str]] = {}
    dead_ends: dict[int, tuple[list[int], bool]] = {}
    for c in map(int, affected):
        o, d, m = memo[c]
        if len(o) > 1:
            outs[c] = sorted(o)
        if d:
            dead_ends[c] = (sorted(d, key=first_node.__getitem__), m)
    return outs, dead_ends


#: What a component reaches: outfall ids, the first dead-end sinks (by first node),
#: whether there are more dead ends.
_Reach = tuple[frozenset[str], tuple[int, ...], bool]


def _upstream_of_splits(
    pairs: np.ndarray, split_comps: np.ndarray, ncomp: int
) -> tuple[np.ndarray, np.ndarray]:
    """The components that reach a split (the splits included), in BFS order upstream
    from a virtual source, and the same as a mask over the components."""
    src = ncomp
    rows = np.r_[pairs[:, 1], np.full(len(split_comps), src)]
    cols = np.r_[pairs[:, 0], split_comps]
    rev = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(ncomp + 1, ncomp + 1))
    affected = breadth_first_order(rev, src, directed=True, return_predecessors=False)[1:]
    aff = np.zeros(ncomp, dtype=bool)
    aff[affected] = True
    return affected, aff


def _sink_reach(c: int, sink: np.ndarray, comp_outfall: np.ndarray) -> _Reach:
    """What a component below every split reaches: its sink's outfall, or its sink as a
    dead end."""
    o = comp_outfall[sink[c]]
    if o is None:
        return frozenset(), (int(sink[c]),), False
    return frozenset([o]), (), False


def _merged_reach(
    c: int,
    succ: dict[int, list[int]],
    memo: dict[int, _Reach],
    comp_outfall: np.ndarray,
    first_node: np.ndarray,
) -> _Reach:
    """What component ``c`` reaches, from its successors' (all in ``memo``) and its own
    outfall; dead ends kept to the :data:`DEAD_END_LIMIT` first by first node."""
    acc: set[str] = set()
    dead: set[int] = set()
    more = False
    for s in succ.get(c, ()):
        o, d, m = memo[s]
        acc |= o
        dead.update(d)
        more = more or m
    if comp_outfall[c] is not None:
        acc.add(comp_outfall[c])
    if len(dead) > DEAD_END_LIMIT:
        more = True
        dead_t = tuple(sorted(dead, key=first_node.__getitem__)[:DEAD_END_LIMIT])
    else:
        dead_t = tuple(dead)
    return frozenset(acc), dead_t, more


# ------------------------------------------------------------------------------------
# all-structure assignment
# ------------------------------------------------------------------------------------
def _dead_end_reasons(
    net: NetworkLike,
    s: _Solved,
    dead_end: set[int],
    label: dict[str, str],
    *,
    conflicts: dict[str, str],
) -> dict[int, str]:
    """Dead-end node -> why flow stops there: away from water (or unchecked), naming the
    conveyances into its component whose direction the inverts overruled."""
    node_names = s.node_index.to_numpy()
    not_at_water = set(net.terminals_not_at_water)
    comp_size = np.bincount(s.comp, minlength=s.ncomp)
    in_order = np.argsort(s.arc_to, kind="stable")
    v_sorted = s.arc_to[in_order]
    conv_of_edge = net.edges["conv_id"].astype(str).to_numpy()
    water_m = net.settings.get("water_tolerance_m", 0.0)
    dead_why: dict[int, str] = {}
    for t in dead_end:
        members = np.where(s.comp == s.comp[t])[0] if comp_size[s.comp[t]] > 1 else [t]
        hit: list[str] = []
        for nd in members:
            lo, hi = np.searchsorted(v_sorted, nd), np.searchsorted(v_sorted, nd, "right")
            for a in in_order[lo:hi]:
                cid = conv_of_edge[s.arc_edge[a]]
                if cid in conflicts and cid not in hit:
                    hit.append(cid)
        dead_why[t] = _dead_end_reason(
            label.get(str(node_names[t]), str(node_names[t])),
            at_water_checked=str(node_names[t]) in not_at_water,
            water_m=water_m,
            unchecked=bool(getattr(net, "terminals_unchecked", False)),
            conflicts=[(c, conflicts[c]) for c in hit],
        )
    return dead_why


def _node_results(net: NetworkLike) -> pd.DataFrame:
    """Outfall, method and reason for every network node (cached)."""
    cached = net._cache.get("node_results")
    if cached is not None:
        return cached
    s = _solve(net)
    n = len(s.node_index)
    sink = s.sink[s.comp]
    main = s.comp_outfall[sink].copy()
    outf = net.outfalls
    ometh = dict(zip(outf.index.astype(str), outf["method"].astype(str), strict=False))
    others = np.full(n, "", dtype=object)
    method = np.full(n, None, dtype=object)
    reason = np.full(n, "", dtype=object)
    hops = s.hops[s.comp] + (s.node_hops if s.node_hops is not None else 0)
    dist = s.dist_m[s.comp] + (s.node_dist_m if s.node_dist_m is not None else 0.0)
    lat = net.edges[net.edges["orient_method"] == "assumed_lateral"]
    lateral_of = dict(zip(lat["from_node"].astype(str), lat["length_m"], strict=True))
    node_names = s.node_index.to_numpy()
    snap_m = net.settings.get("snap_tolerance_m", 0.0)
    lat_tol = net.settings.get("lateral_tolerance_m", 0.0)
    conflicts = getattr(net, "orientation_conflicts", {}) or {}
    first_node = _first_node_of_comp(s)
    # words for the nodes users see in reasons: junctions by place and conveyances
    no_out = (main == None) & s.touched & ~s.comp_cycle[sink]  # noqa: E711
    dead_end = {int(first_node[c]) for c in np.unique(sink[no_out])}
    # sinks without an outfall that a branch ends in, below a flow split
    branch_sinks = sorted({d for ds, _ in s.dead_ends.values() for d in ds})
    named = (
        {str(node_names[i]) for i in dead_end}
        | {str(v) for v in outf["node_id"].dropna()}
        | {str(node_names[first_node[d]]) for d in branch_sinks}
    )
    label = describe_nodes(net, sorted(named))
    out_node = dict(zip(outf.index.astype(str), outf["node_id"], strict=False))
    dead_why = _dead_end_reasons(net, s, dead_end, label, conflicts=conflicts)
    note = np.full(n, "", dtype=object)
    note_of: dict[tuple[int, int], str] = {}
    for i in range(n):
        c = s.comp[i]
        dead = s.dead_ends.get(int(c))
        if dead:
            key = (int(c), int(sink[i]) if main[i] is None else -1)
            if key not in note_of:
                where = [
                    (
                        label.get(str(node_names[first_node[d]]), str(node_names[first_node[d]])),
                        bool(s.comp_cycle[d]),
                    )
                    for d in dead[0]
                    if d != key[1]  # a dead main path is described on its own
                ]
                note_of[key] = _dead_branch_note(where, more=dead[1])
            note[i] = note_of[key]
        allo = s.all_outfalls.get(int(c))
        m = main[i]
        if allo and len(allo) > 1:
            if m is None:
                m = allo[0]
            main[i] = m
            others[i] = ";".join(o for o in allo if o != m)
            method[i] = "split"
            reason[i] = _split_reason(len(allo), m, int(s.split_bits[c])) + note[i]
            continue
        if s.is_outfall[i]:
            method[i] = ometh.get(m)
            reason[i] = f"the structure is outfall {m} ({ometh.get(m)})"
            continue
        if not s.touched[i]:
            method[i] = "unconnected"
            reason[i] = (
                f"no conveyance lies within the snap tolerance ({snap_m:g} m) or the "
                f"lateral tolerance ({lat_tol:g} m) of the structure"
            )
            continue
        if m is not None:
            method[i] = ometh.get(m)
            reason[i] = reached_reason(
                int(hops[i]), float(dist[i]), m, ometh.get(m), label.get(str(out_node.get(m)))
            )
            lat_m = lateral_of.get(node_names[i])
            if lat_m is not None:
                method[i] = "assumed_lateral"
                reason[i] = (
                    f"no conveyance reaches the structure; assumed to drain through an "
                    f"unmapped lateral to the nearest conveyance ({lat_m:.0f} m), then " + reason[i]
                )
            reason[i] += note[i]
            continue
        t = int(first_node[sink[i]])
        if s.comp_cycle[sink[i]]:
            method[i] = "cycle"
            reason[i] = "flow ends in a loop of conveyances with no way out (see QA 'cycle')"
        else:
            method[i] = "terminal_not_at_water"
            reason[i] = dead_why[t]
        reason[i] += note[i]
    res = pd.DataFrame(
        {
            "node_id": s.node_index,
            "outfall_id": main,
            "method": method,
            "reason": reason,
            "other_outfalls": others,
            "hops": hops,
            "dist_m": dist,
            "dead_branches": note,
        }
    )
    res = res.set_index("node_id")
    net._cache["node_results"] = res
    return res


def _first_node_of_comp(s: _Solved) -> np.ndarray:
    """comp -> its first node (lowest row), for every component at once."""
    first = np.zeros(s.ncomp, dtype=np.int64)
    idx = np.arange(len(s.comp))
    first[s.comp[::-1]] = idx[::-1]
    return first


def _split_reason(n_out: int, main: str, bits: int) -> str:
    rules = [text for bit, text in _SPLIT_RULES if bits & bit]
    how = " or ".join(rules) if rules else "the largest pipe (then the lowest invert)"
    return (
        f"flow splits and reaches {n_out} outfalls; main outfall {main}: at each split "
        f"on the way the main branch is {how}"
    )


def _dead_branch_note(where: list[tuple[str, bool]], *, more: bool = False) -> str:
    """Reason suffix naming the branches below a flow split that reach no outfall.

    ``where`` holds (words for the dead end, whether it is a loop with no way out);
    ``more``: further dead ends exist beyond those named.
    """
    if not where:
        return ""
    places = [
        f"{w} (a loop of conveyances with no way out, QA 'cycle')" if cyc else w for w, cyc in where
    ]
    if len(places) == 1 and not more:
        return f"; where flow splits, a branch dead-ends at {places[0]}"
    shown = [f"at {p}" for p in places]
    if more:
        shown.append("elsewhere")
        return f"; where flow splits, branches dead-end {', '.join(shown[:-1])} and elsewhere"
    return (
        f"; where flow splits, {len(places)} branches dead-end: "
        f"{', '.join(shown[:-1])} and {shown[-1]}"
    )


def reached_reason(
    n_conv: int, metres: float, outfall: str, method: str | None, where: str | None = None
) -> str:
    """Reason text for flow that reaches ``outfall`` (shared by the table and traces)."""
    why = _OUT_WHY.get(method or "", method)
    if where and where != outfall:
        why = f"{why}: {where}"
    return f"{n_conv} conveyance(s), {metres:.0f} m downstream to outfall {outfall} ({why})"


_CONFLICT_WORDS = {"ids": "from/to ids", "flow_dir": "flow-direction attribute"}


def _dead_end_reason(
    where: str,
    *,
    at_water_checked: bool,
    water_m: float,
    conflicts: list[tuple[str, str]],
    unchecked: bool = False,
) -> str:
    """Why flow stops at a terminal that is not an outfall (naming the cause if known)."""
    tail = "is not an outfall"
    if at_water_checked and unchecked:
        tail += (
            " (the outfalls are mapped and do not include it, and without a `waterbodies` "
            "layer nothing shows it discharges to water; add the `waterbodies` layer)"
        )
    elif at_water_checked:
        tail += f" and lies more than {water_m:g} m (the water tolerance) from every waterbody"
    if where.startswith("the downstream end of "):
        tail += (
            "; the end touches no structure or other conveyance within the snap "
            "tolerance (QA unsnapped_end)"
        )
    if conflicts:
        causes = "; ".join(
            f"{c}'s inverts contradict its {_CONFLICT_WORDS.get(k, k)} (orientation_conflict)"
            for c, k in conflicts
        )
        names = ", ".join(c for c, _ in conflicts)
        return (
            f"the network ends at {where} because {causes}: the inverts win, so {names} "
            f"flows into {where}, which has no other way out and {tail}"
        )
    return f"flow ends at {where}, which {tail}"


def _fmt_xy(x: float, y: float) -> str:
    return f"({x:.1f}, {y:.1f})"


def _conv_words(cid: str) -> str:
    return f"the assumed lateral of {cid[8:]}" if cid.startswith("lateral:") else cid


def describe_nodes(net: NetworkLike, node_ids: list[str]) -> dict[str, str]:
    """Words a user can look up for network nodes.

    A structure is its ``struct_id``; a junction (``J<n>``, made where conveyance
    ends meet without a structure) is described by the conveyances that meet
    there and its coordinates in the working CRS, e.g. ``the downstream end of
    D-004 at (605049.5, 4765652.5)``.
    """
    nodes = net.nodes
    out: dict[str, str] = {}
    junc: list[str] = []
    for nid in node_ids:
        nid = str(nid)
        if nid in nodes.index and pd.isna(nodes.at[nid, "struct_id"]):
            junc.append(nid)
        else:
            out[nid] = nid
    if not junc:
        return out
    e = net.edges
    fn = e["from_node"].astype(str).to_numpy()
    tn = e["to_node"].astype(str).to_numpy()
    conv = e["conv_id"].astype(str).to_numpy()
    flows_in: dict[str, list[str]] = {}
    flows_out: dict[str, list[str]] = {}
    for rows, side, book in ((np.isin(tn, junc), tn, flows_in), (np.isin(fn, junc), fn, flows_out)):
        for r in np.where(rows)[0]:
            book.setdefault(side[r], []).append(conv[r])
    xy = shapely.get_coordinates(nodes.geometry.loc[junc].values)
    for k, nid in enumerate(junc):
        at = _fmt_xy(*xy[k])
        ins = list(dict.fromkeys(flows_in.get(nid, [])))
        outs = list(dict.fromkeys(flows_out.get(nid, [])))
        through = [c for c in ins if c in outs]
        others = [c for c in dict.fromkeys(ins + outs) if c not in through]
        if through:
            text = f"a point on {_conv_words(through[0])} at {at}"
            if others:
                text += f" where {', '.join(map(_conv_words, others))} meet(s) it"
        elif len(others) == 1:
            end = "downstream end" if ins else "upstream end"
            text = f"the {end} of {_conv_words(others[0])} at {at}"
        elif others:
            names = list(map(_conv_words, others))
            text = f"the junction of {', '.join(names[:-1])} and {names[-1]} at {at}"
        else:
            text = f"a junction at {at}"
        out[nid] = text
    return out


_OUT_WHY = {
    "outfalls_layer": "in the outfalls layer",
    "outfall_structure": "a structure of kind outfall",
    "terminal_at_water": "terminal node at a waterbody",
    "headwall_at_end": "a headwall at an open end",
    "terminal_at_structure": "the mapped system stops at this structure; no waterbody layer "
    "to check against",
    "terminal_loose_end": "a line end that touches nothing; no waterbody layer to check "
    "against (QA unsnapped_end)",
}


def assign_outfalls(net: NetworkLike) -> pd.DataFrame:
    """The outfall of every structure at once (linear in network size).

    Parameters
    ----------
    net : StormNetwork

    Returns
    -------
    DataFrame
        One row per input structure, in input order: ``struct_id``, ``node_id``,
        ``outfall_id`` (NA when there is none), ``method`` (:data:`ASSIGN_METHODS`),
        ``reason``, ``other_outfalls`` (``;``-joined ids of further outfalls reached
        where the flow splits, else ``""``).
    """
    res = _node_results(net)
    sn = net.structure_nodes
    out = pd.DataFrame({"struct_id": sn["struct_id"].astype(str), "node_id": sn["node_id"]})
    have = out["node_id"].notna()
    j = res.reindex(out.loc[have, "node_id"].astype(str))
    for col in ("outfall_id", "method", "reason", "other_outfalls"):
        vals = np.full(len(out), None if col != "other_outfalls" else "", dtype=object)
        vals[have.to_numpy()] = j[col].to_numpy()
        out[col] = vals
    out.loc[~have, "method"] = "no_geometry"
    out.loc[~have, "reason"] = "the structure has no usable point geometry"
    for col in ("struct_id", "node_id", "outfall_id", "method", "reason", "other_outfalls"):
        out[col] = pd.array(out[col].astype(object).where(out[col].notna(), None), dtype="str")
    return out[["struct_id", "outfall_id", "method", "reason", "other_outfalls", "node_id"]]


def edge_outfalls(net: NetworkLike) -> pd.DataFrame:
    """The outfall(s) of every conveyance: ``conv_id, outfall_id, method, reason, other_outfalls``.

    A conveyance drains where its downstream node drains (both ends for a two-way
    link); the parts of a split conveyance are combined.
    """
    res = _node_results(net)
    e = net.edges
    if len(e) == 0:
        return pd.DataFrame(columns=["conv_id", "outfall_id", "method", "reason", "other_outfalls"])
    down = res.reindex(e["to_node"].astype(str))
    df = pd.DataFrame(
        {
            "conv_id": e["conv_id"].astype(str).to_numpy(),
            "outfall_id": down["outfall_id"].to_numpy(),
            "method": down["method"].to_numpy(),
            "reason": down["reason"].to_numpy(),
            "other_outfalls": down["other_outfalls"].to_numpy(),
            "bi": e["bidirectional"].to_numpy(),
            "up_out": res.reindex(e["from_node"].astype(str))["outfall_id"].to_numpy(),
        }
    )
    # one pass over plain tuples (a groupby + iterrows took 2-3 s on 5,000 conveyances)
    groups: dict[str, list[Any]] = {}  # conv_id -> [outfalls in order, last row]
    cols = ("conv_id", "outfall_id", "method", "reason", "other_outfalls", "bi", "up_out")
    columns = [df[c].tolist() for c in cols]
    for cid, outfall, meth, reason, other, bi, up in zip(*columns, strict=True):
        g = groups.setdefault(cid, [[], None])
        outs = g[0]
        for o in [outfall, *str(other or "").split(";"), up if bi else None]:
            if isinstance(o, str) and o and o not in outs:
                outs.append(o)
        g[1] = (outfall, meth, reason)
    rows = []
    for cid, (outs, (outfall, meth, reason)) in groups.items():
        main = outfall if isinstance(outfall, str) else (outs[0] if outs else None)
        rows.append(
            {
                "conv_id": cid,
                "outfall_id": main,
                "method": meth if len(outs) <= 1 else "split",
                "reason": reason,
                "other_outfalls": ";".join(o for o in outs if o != main),
            }
        )
    out = pd.DataFrame(rows)
    for col in out.columns:
        out[col] = pd.array(out[col].astype(object).where(out[col].notna(), None), dtype="str")
    return out


# ------------------------------------------------------------------------------------
# traces
# ------------------------------------------------------------------------------------
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
        Outfalls reached, main one first.
    receiving_waters : list of str
        Receiving waters of those outfalls (where known).
    method, reason : str
        As in :func:`assign_outfalls`.
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


def _resolve_start(net: NetworkLike, start: Any, by: str) -> tuple[int, list[int], str]:
    """-> (start node index, extra edge rows to include, label)."""
    s = _solve(net)
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


def trace_downstream(net: NetworkLike, start: Any, *, by: str = "auto") -> Trace:
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
    s = _solve(net)
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
    res = _node_results(net).iloc[node]
    outs = [o for o in s.outfall_of_node[order] if o is not None]
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
    return Trace(label, nodes, edges, geom, length, outs, rw, method, reason)


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


def trace_upstream(net: NetworkLike, start: Any, *, by: str = "auto") -> Upstream:
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
    s = _solve(net)
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
    net: NetworkLike, *, spacing_m: float = 10.0, buffer_m: float = 50.0
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
    res = _node_results(net)
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


def field_check_points(net: NetworkLike, table: pd.DataFrame | None = None) -> gpd.GeoDataFrame:
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
            "reason": [_OUT_WHY[str(m)] for m in guess["method"]],
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
