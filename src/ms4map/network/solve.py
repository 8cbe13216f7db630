"""Solve the network's flow once: strong components, main exits, every component's sink, what each split reaches.

The all-structures assignment is linear in network size: strongly connected
components (scipy) collapse cycles and two-way links, each component keeps one
*main* exit (largest pipe, then lowest invert), and pointer jumping on a numpy
array finds every component's sink in ``O(n log depth)``.  Only components
upstream of a flow split get a full set of reachable outfalls.  The answer,
:class:`SolvedNetwork`, is cached on the network (:func:`solve_network`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components, dijkstra

from .costs import PENALTY_UNIT, split_cost
from .model import StormNetwork
from .settings import OUTFALL_RANK

__all__ = [
    "DEAD_END_LIMIT",
    "SPLIT_RULES",
    "SolvedNetwork",
    "edge_node_positions",
    "first_node_of_comp",
    "solve_network",
]


@dataclass
class SolvedNetwork:
    """The solved flow of a network: its directed arcs, strong components, every
    component's main exit, sink, outfall, and what the components above a flow split
    reach (:func:`solve_network`)."""

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
    #: (:data:`SPLIT_RULES` bits); 0 when the main path does not split.
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
    #: comp -> the next component along its main exit (itself at a sink)
    next_comp: np.ndarray | None = None
    #: comp -> the SPLIT_RULES bit of the rule that chose its own main exit (0: no split)
    split_rule: np.ndarray | None = None


def solve_network(net: StormNetwork) -> SolvedNetwork:
    """The solved flow of ``net``, computed once and cached on it (``net._cache["solved"]``;
    a step that changes the outfalls clears the cache)."""
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
    cbin = np.zeros(len(u), dtype=np.int64)
    if len(split_comps):
        cbin = _outlet_cost_bins(gr.get("cost"), v, elen)
        keys.append(cbin[ex_idx])
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
    next_comp = nxt.copy()
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
            split_comps, ex_sorted, cu=cu, cv=cv, diam=diam, dsi=dsi, best=best, cbin=cbin
        )
    own_bits = bits.copy()
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
    solved = SolvedNetwork(
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
    solved.next_comp = next_comp
    solved.split_rule = own_bits
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
            first_node=first_node_of_comp(solved),
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
    net: StormNetwork,
    pairs: np.ndarray,
    is_out: np.ndarray,
    of_node: np.ndarray,
    *,
    comp: np.ndarray,
    ncomp: int,
) -> np.ndarray:
    """comp -> the best rank (:data:`OUTFALL_RANK`: 0 a real outfall, then a terminal at
    a structure, a bare line end) of the terminals it reaches; 3 where it reaches none."""
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
SPLIT_RULES = (
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
        64,
        "the branch with the nearer way out (no pipe size, invert or terminal rank tells "
        "the branches apart; the other way is more than 5 % longer)",
    ),
    (
        4,
        "the conveyance listed first in the input (no pipe size or invert tells the "
        "branches apart)",
    ),
)


#: Way-out costs within this factor of each other fall in one bin: the split rule
#: "the branch with the nearer way out" does not tell them apart (compare
#: ms4map.network.orient.AMBIGUITY_RATIO).
COST_BIN_RATIO = 1.05


def _outlet_cost_bins(cost: np.ndarray | None, v: np.ndarray, elen: np.ndarray) -> np.ndarray:
    """Per arc, the log-bin of its way out (the arc's length plus its lower node's least
    cost to a target, from the orientation); one bin where unknown."""
    if cost is None or len(cost) == 0:
        return np.zeros(len(v), dtype=np.int64)
    c = np.asarray(cost, dtype=float)[v] + np.nan_to_num(elen, nan=0.0)
    pen, metres = split_cost(c)
    ok = np.isfinite(pen)
    big = np.iinfo(np.int64).max // 4
    out = np.full(len(v), big, dtype=np.int64)
    # overruled evidence first (whole units), then the metres in 5 % bins (< 1000 bins)
    units = np.round(pen[ok] / PENALTY_UNIT).astype(np.int64)
    bins = np.floor(np.log(np.maximum(metres[ok], 1e-3)) / np.log(COST_BIN_RATIO))
    out[ok] = units * 4000 + np.clip(bins, -1999, 1999).astype(np.int64)
    return out


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
    cbin: np.ndarray,
) -> np.ndarray:
    """Which rule chose the main exit of each split component (a :data:`SPLIT_RULES` bit).

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
    out[cbin[main] < cbin[r]] = 64
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


def first_node_of_comp(s: SolvedNetwork) -> np.ndarray:
    """comp -> its first node (lowest row), for every component at once."""
    first = np.zeros(s.ncomp, dtype=np.int64)
    idx = np.arange(len(s.comp))
    first[s.comp[::-1]] = idx[::-1]
    return first


def edge_node_positions(s: SolvedNetwork, edges: gpd.GeoDataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The solved-graph positions of each edge's from and to node."""
    eu = s.node_index.get_indexer(edges["from_node"].astype(str))
    ev = s.node_index.get_indexer(edges["to_node"].astype(str))
    return eu, ev
