"""Least-cost ways out of a network: from every node to a target, and to the next-best other target.

The search behind the whole-network orientation (:func:`ms4map.network.orient.orient_lines`):
a way's cost is its length in metres plus the evidence it overrules
(:data:`ms4map.network.orient.OVERRULE_COST`), split apart by :func:`split_cost`.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

__all__ = ["PENALTY_UNIT", "follow", "outlet_costs", "second_outlet_costs", "split_cost"]


#: The smallest overrule cost: a way's cost splits into overruled evidence (whole
#: multiples of this) and metres of path (below it: a town's pipes run less than 100 km).
PENALTY_UNIT = 1e5


def split_cost(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A way's cost as (overruled evidence, metres of path)."""
    c = np.asarray(cost, dtype=float)
    pen = np.where(np.isfinite(c), np.floor(c / PENALTY_UNIT) * PENALTY_UNIT, np.inf)
    return pen, np.where(np.isfinite(c), c - np.where(np.isfinite(pen), pen, 0.0), np.inf)


def outlet_costs(
    u: np.ndarray,
    v: np.ndarray,
    w_uv: np.ndarray,
    w_vu: np.ndarray,
    *,
    n_nodes: int,
    targets: np.ndarray,
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Least cost from every node to a target following the arcs ``u -> v`` (cost
    ``w_uv``) and ``v -> u`` (``w_vu``; ``inf``: not allowed): one multi-source Dijkstra
    on the reversed arcs; ``start``: what ending at each target costs (default 0).
    Returns ``(cost, next_node)`` (``next_node``: the node after
    it on its least-cost way, -1 at a target or where none exists)."""
    cost = np.full(n_nodes, np.inf)
    nxt = np.full(n_nodes, -1, dtype=np.int64)
    targets = np.asarray(targets, dtype=int)
    start = np.zeros(len(targets)) if start is None else np.asarray(start, dtype=float)
    order = np.lexsort((start, targets))
    targets, start = targets[order], start[order]
    keep_t = np.r_[True, targets[1:] != targets[:-1]] if len(targets) else targets.astype(bool)
    targets, start = targets[keep_t], start[keep_t]  # each target once, its lowest start
    if len(targets) == 0:
        return cost, nxt
    keep = u != v
    fr = np.r_[u[keep], v[keep]]
    to = np.r_[v[keep], u[keep]]
    w = np.r_[w_uv[keep], w_vu[keep]]
    ok = np.isfinite(w)
    fr, to, w = fr[ok], to[ok], np.maximum(w[ok], 1e-15)
    # parallel arcs: keep the cheapest (a sparse matrix would add them up)
    order = np.lexsort((w, to, fr))
    fr, to, w = fr[order], to[order], w[order]
    first = np.r_[True, (fr[1:] != fr[:-1]) | (to[1:] != to[:-1])] if len(fr) else fr.astype(bool)
    fr, to, w = fr[first], to[first], w[first]
    src = n_nodes
    # reversed arcs (flow to -> fr) plus a virtual source joined to every target
    g = coo_matrix(
        (
            np.r_[w, np.maximum(start, 1e-15)],
            (np.r_[to, np.full(len(targets), src)], np.r_[fr, targets]),
        ),
        shape=(n_nodes + 1, n_nodes + 1),
    ).tocsr()
    d, pred = dijkstra(g, directed=True, indices=src, return_predecessors=True)
    cost[:] = d[:n_nodes]
    free_t = targets[start <= 0]
    cost[free_t] = 0.0
    p = pred[:n_nodes].astype(np.int64)
    nxt[:] = np.where((p >= 0) & (p < n_nodes), p, -1)
    nxt[free_t] = -1
    return cost, nxt


def follow(nxt: np.ndarray) -> np.ndarray:
    """The last node of each node's chain ``i -> nxt[i] -> ...`` (pointer jumping)."""
    end = np.where(nxt >= 0, nxt, np.arange(len(nxt)))
    for _ in range(64):
        nn = end[end]
        if np.array_equal(nn, end):
            break
        end = nn
    return end


def second_outlet_costs(
    fr: np.ndarray,
    to: np.ndarray,
    w: np.ndarray,
    cost: np.ndarray,
    source: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Least cost from every node to a target *other* than its own (``source``), and
    which: along the arcs ``fr -> to`` (cost ``w``) to a first node whose least-cost
    target differs, then on that node's own least-cost way.  Returns ``(cost2, alt,
    step2)`` (``alt`` -1 where no other target is reachable; ``step2`` the next node on
    that way, -1 where it leaves at once across to the other target's side)."""
    n = len(cost)
    ok = np.isfinite(w) & np.isfinite(cost[to]) & np.isfinite(cost[fr])
    fr, to, w = fr[ok], to[ok], w[ok]
    cross = source[fr] != source[to]
    # a node beside another outlet's region: its cheapest step across
    g_cost = np.full(n, np.inf)
    g_alt = np.full(n, -1, dtype=np.int64)
    if cross.any():
        c = w[cross] + cost[to[cross]]
        order = np.lexsort((c, fr[cross]))
        f_s, c_s, t_s = fr[cross][order], c[order], to[cross][order]
        first = np.r_[True, f_s[1:] != f_s[:-1]]
        g_cost[f_s[first]] = c_s[first]
        g_alt[f_s[first]] = source[t_s[first]]
    has = np.where(np.isfinite(g_cost))[0]
    if len(has) == 0:
        none = np.full(n, -1, dtype=np.int64)
        return np.full(n, np.inf), none, none.copy()
    same = ~cross
    src = n
    g = coo_matrix(
        (
            np.r_[np.maximum(w[same], 1e-15), np.maximum(g_cost[has], 1e-15)],
            (np.r_[to[same], np.full(len(has), src)], np.r_[fr[same], has]),
        ),
        shape=(n + 1, n + 1),
    ).tocsr()
    d, pred = dijkstra(g, directed=True, indices=src, return_predecessors=True)
    cost2 = d[:n]
    p = pred[:n].astype(np.int64)
    nxt = np.where((p >= 0) & (p < n), p, -1)
    entry = follow(nxt)
    alt = np.where(np.isfinite(cost2), g_alt[entry], -1)
    return cost2, alt, nxt
