"""Orient every conveyance by one decision over all the evidence: ids, flow direction, inverts, elevations, the ground, the terminals.

:func:`line_evidence` collects every piece of evidence per line (an integer array per
kind: +1 where flow runs from the first vertex to the last, -1 the other way, 0 where it
says nothing; :func:`downhill_evidence`, :func:`dem_ground_at`), :func:`preferred_direction`
takes the strongest in :data:`TRUST_ORDER`, and :func:`orient_lines` decides for the
whole network with one least-cost search from the targets (:func:`real_outlet_nodes`,
:func:`evidenced_sinks`; :mod:`ms4map.network.costs`), overruling soft evidence only
where a structure would otherwise reach no target (docs/network.md "Orientation").

To add evidence: compute it in :func:`line_evidence`, give it its place in
:data:`TRUST_ORDER` (and an :data:`OVERRULE_COST` if it may be overruled), add its
method name to :data:`ms4map.network.model.ORIENT_METHODS` and to docs/network.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import shapely
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..core.qa import QAReport
from ..core.schema import INLET_KINDS
from .costs import PENALTY_UNIT, follow, outlet_costs, second_outlet_costs, split_cost
from .tables import (
    BuildConfig,
    ConveyanceTable,
    EndTable,
    Orientation,
    SplitTable,
    StructureTable,
    add_finding,
    node_xy,
)

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = [
    "AMBIGUITY_RATIO",
    "OVERRULE_COST",
    "SINK_COST",
    "TRUST_ORDER",
    "dem_ground_at",
    "downhill_evidence",
    "evidenced_sinks",
    "line_evidence",
    "open_end_headwalls",
    "orient_by_outlet_path",
    "orient_lines",
    "preferred_direction",
    "real_outlet_nodes",
    "segment_table",
]


def segment_table(
    end_node: np.ndarray,
    cv_len: np.ndarray,
    splits: dict[int, list[tuple[float, int]]],
    lateral_edges: list[tuple[int, int, float, int]] = (),  # type: ignore[assignment]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The undirected pieces of the network: ``(u, v, length, line)`` arrays.

    One row per conveyance between its two end nodes, or per part where the line is
    split (``splits``: line -> [(distance along it, node)]), plus the assumed
    laterals (``line`` -1).  Lengths are in CRS units.
    """
    L = len(cv_len)
    na, nb = end_node[:L], end_node[L:]
    whole = np.ones(L, dtype=bool)
    if splits:
        whole[list(splits)] = False
    us, vs, ws_, ls = [na[whole]], [nb[whole]], [cv_len[whole]], [np.where(whole)[0]]
    for j, cuts in splits.items():
        cuts = sorted(cuts)
        seq_n = [int(na[j])] + [nd for _, nd in cuts] + [int(nb[j])]
        seq_t = [0.0] + [t for t, _ in cuts] + [float(cv_len[j])]
        us.append(np.array(seq_n[:-1]))
        vs.append(np.array(seq_n[1:]))
        ws_.append(np.diff(np.array(seq_t)))
        ls.append(np.full(len(seq_n) - 1, j))
    if lateral_edges:
        lat = np.array([(a, b, d) for a, b, d, _ in lateral_edges], dtype=float)
        us.append(lat[:, 0].astype(int))
        vs.append(lat[:, 1].astype(int))
        ws_.append(lat[:, 2])
        ls.append(np.full(len(lat), -1))
    return (
        np.concatenate(us).astype(int),
        np.concatenate(vs).astype(int),
        np.concatenate(ws_).astype(float),
        np.concatenate(ls).astype(int),
    )


def orient_by_outlet_path(
    dist_a: np.ndarray, dist_b: np.ndarray, *, tie: float = 0.0
) -> np.ndarray:
    """+1 (first vertex to last) where the first end lies farther from the nearest real
    outlet than the last, -1 the other way, 0 where neither end reaches an outlet or
    both lie equally far (within ``tie``)."""
    fa, fb = np.isfinite(dist_a), np.isfinite(dist_b)
    ev = np.zeros(len(dist_a), dtype=int)
    both = fa & fb
    ev[both & (dist_a > dist_b + tie)] = 1
    ev[both & (dist_b > dist_a + tie)] = -1
    return ev


def dem_ground_at(dem: Any, xy: np.ndarray) -> np.ndarray:
    """Ground elevation of the DEM cell under each point (NaN off the DEM or on nodata)."""
    out = np.full(len(xy), np.nan)
    if dem is None or len(xy) == 0:
        return out
    inv = ~dem.transform
    col = inv.a * xy[:, 0] + inv.b * xy[:, 1] + inv.c
    row = inv.d * xy[:, 0] + inv.e * xy[:, 1] + inv.f
    r = np.floor(np.asarray(row)).astype(np.int64)
    c = np.floor(np.asarray(col)).astype(np.int64)
    h, w = dem.array.shape
    ok = (r >= 0) & (r < h) & (c >= 0) & (c < w)
    out[ok] = dem.array[r[ok], c[ok]]
    return out


def downhill_evidence(za: np.ndarray, zb: np.ndarray, thr: float) -> np.ndarray:
    """+1 where the first end lies higher than the last by more than ``thr``, -1 the
    other way, 0 when unknown or level."""
    both = np.isfinite(za) & np.isfinite(zb)
    return np.where(both & (za > zb + thr), 1, np.where(both & (zb > za + thr), -1, 0))


def open_end_headwalls(kind: np.ndarray, degree: np.ndarray) -> np.ndarray:
    """Structures of kind ``headwall`` that one conveyance end touches (an open end)."""
    k = np.asarray(kind, dtype=object)
    return np.where((k == "headwall") & (degree[: len(k)] == 1))[0]


def real_outlet_nodes(
    ws: Workspace,
    st: StructureTable,
    ends: EndTable,
    sp: SplitTable,
    *,
    cfg: BuildConfig,
    wtree: Any,
    with_check: bool = False,
) -> Any:
    """Nodes that are real outlets before orientation: outfall structures, points of the
    outfalls layer (nearest node within the snap tolerance), headwalls at an open end,
    and open ends within the water tolerance of a waterbody.  ``with_check``: also
    return whether nothing checks the terminals (no waterbody layer, no outfalls-layer
    point on the network), as :func:`ms4map.network.termini.find_outfalls` decides."""
    n_st = ends.n_structures
    n_nodes = n_st + len(sp.junction_xy)
    deg = np.bincount(ends.node, minlength=n_nodes)
    for parts in sp.splits.values():
        for _, nd in parts:
            deg[nd] += 2
    out = [np.where(st.is_primary & (st.kind == "outfall"))[0]]
    layer_hit = False
    out.append(open_end_headwalls(np.where(st.is_primary, st.kind, None), deg))
    of = ws.layers.get("outfalls")
    if of is not None and len(of):
        g = of.geometry.values
        ok = (shapely.get_type_id(g) == 0) & ~shapely.is_empty(g)
        if ok.any():
            idx = np.r_[np.where(st.is_primary)[0], n_st + np.arange(len(sp.junction_xy))]
            tree = cKDTree(node_xy(st.xy, sp.junction_xy, idx))
            d, k = tree.query(
                shapely.get_coordinates(g[ok])[:, :2], distance_upper_bound=cfg.snap_tol
            )
            out.append(idx[k[np.isfinite(d)]])
            layer_hit = bool(np.isfinite(d).any())
    open_ends = np.where(deg == 1)[0]
    if wtree is not None and len(open_ends):
        pts = shapely.points(node_xy(st.xy, sp.junction_xy, open_ends))
        pi, _ = wtree.query(pts, predicate="dwithin", distance=cfg.water_tol)
        out.append(open_ends[np.unique(pi)])
    nodes = np.unique(np.concatenate(out).astype(int))
    if not with_check:
        return nodes
    wb = ws.layers.get("waterbodies")
    has_water = wtree is not None or (wb is not None and len(wb) > 0)
    return nodes, not has_water and not layer_hit


#: The trust order (docs/network.md "Orientation"): evidence of a conveyance's direction,
#: strongest first.  ``ids`` and ``flow_dir`` (a one-way flow-direction value that says
#: something the drawing does not) are never overruled; the others are overruled only
#: where a structure could otherwise reach no outlet, the weaker first.
TRUST_ORDER = (
    "ids",
    "flow_dir",
    "inverts",
    "structure_inverts",
    "structure_rims",
    "dem_ground",
    "pipe_sizes",
)

#: What overruling one conveyance's evidence costs in the whole-network decision, in
#: metres of path (a way's cost is its length in metres plus these): one overruled pipe
#: invert outweighs ten overruled structure inverts, and any path within a town.
OVERRULE_COST = {
    "inverts": 1e8,
    "structure_inverts": 1e7,
    "structure_rims": 1e6,
    "dem_ground": 1e5,
    "pipe_sizes": PENALTY_UNIT,
}
#: What ending at a trunk's open end costs (:func:`trunk_leaves`): less than one
#: overruled pipe size, and counted as path length (50 km), so a real outlet reached
#: with the same evidence wins and the two never tie into ``ambiguous``.
TRUNK_COST = PENALTY_UNIT / 2

#: A pipe is larger than another when its diameter exceeds it by more than this share
#: (:func:`size_evidence`; a trunk end, :func:`trunk_leaves`, by :data:`TRUNK_RATIO`).
SIZE_STEP = 0.05
#: An open end of the largest pipe of its piece of network is the piece's way out (the
#: mapped trunk leaves the data there) when that pipe is at least this many times the
#: largest pipe at any real outlet of the piece (docs/network.md "Pipe sizes").
TRUNK_RATIO = 2.0

#: What ending at a sink inside the network costs where nothing checks the terminals
#: (a node two or more lines flow into and none out of): more than one overruled pipe
#: invert, less than two, so a single swapped pair is repaired and a flat system whose
#: inverts run every way is left as drawn (docs/network.md "The whole-network rule").
SINK_COST = 1.5 * OVERRULE_COST["inverts"]

#: What ending at an open end no evidence orients costs, where nothing checks the
#: terminals (:func:`open_leaf_targets`): more than an evidenced sink inside the network.
LEAF_COST = 2 * SINK_COST
#: ... and at such an end that is a catch basin or inlet (water enters there).
INLET_LEAF_COST = 4 * SINK_COST

#: Where the nearest outlet of a node whose way out no evidence decides is reached
#: within this factor of the path to the next-nearest *other* outlet, the node is
#: ``ambiguous`` (docs/network.md "The ambiguous answer").
AMBIGUITY_RATIO = 1.05


def line_evidence(
    ws: Workspace,
    st: StructureTable,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    *,
    cfg: BuildConfig,
) -> dict[str, np.ndarray]:
    """Every piece of direction evidence per line: name -> +1 (first vertex to last), -1,
    0 (says nothing).  Names: :data:`TRUST_ORDER`, plus ``flow_dir_uni`` (the data says the
    line is drawn in the direction of flow) and ``bi`` (a two-way value, bool)."""
    L, thr = cv.count, cfg.elev_threshold
    na, nb = ends.node[:L], ends.node[L:]
    # inverts belong to the ends the ids name, else us at the first vertex
    ui, di = cv.us_invert, cv.ds_invert
    inv_a = np.where(ends.ids_reversed, di, ui)
    inv_b = np.where(ends.ids_reversed, ui, di)
    fd = np.asarray(cv.flow_dir, dtype=object)

    def node_val(arr: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        out = np.full(len(nodes), np.nan)
        m = nodes < ends.n_structures
        out[m] = arr[nodes[m]]
        return out

    ev = {
        "ids": np.where(ends.ids_known, np.where(ends.ids_reversed, -1, 1), 0),
        "flow_dir": np.where(fd == "reverse", -1, 0),
        "inverts": downhill_evidence(inv_a, inv_b, thr),
        "structure_inverts": downhill_evidence(
            node_val(st.invert_elev, na), node_val(st.invert_elev, nb), thr
        ),
        "structure_rims": downhill_evidence(
            node_val(st.rim_elev, na), node_val(st.rim_elev, nb), thr
        ),
        "dem_ground": np.zeros(L, dtype=int),
        "pipe_sizes": size_evidence(
            na, nb, cv.diameter_in, n_nodes=int(ends.node.max(initial=-1)) + 1
        ),
        "flow_dir_uni": np.where(fd == "uni", 1, 0),
        "bi": fd == "bi",
    }
    dem = getattr(ws, "dem", None)
    if dem is not None:
        za = dem_ground_at(dem, node_xy(st.xy, sp.junction_xy, na))
        zb = dem_ground_at(dem, node_xy(st.xy, sp.junction_xy, nb))
        ev["dem_ground"] = downhill_evidence(za, zb, thr)
    return ev


def size_evidence(
    na: np.ndarray, nb: np.ndarray, diameter: np.ndarray, *, n_nodes: int
) -> np.ndarray:
    """Per line, +1/-1 towards the end where a larger pipe (by more than
    :data:`SIZE_STEP`) joins and none at the other end, 0 where neither or both or the
    size is unknown: pipes grow downstream, so a branch flows into the larger trunk."""
    d = np.asarray(diameter, dtype=float)
    out = np.zeros(len(d), dtype=int)
    known = np.isfinite(d) & (d > 0)
    if not known.any():
        return out
    big = np.zeros(max(n_nodes, 1))
    np.maximum.at(big, na[known], d[known])
    np.maximum.at(big, nb[known], d[known])
    dd = np.where(known, d, np.inf) * (1.0 + SIZE_STEP)
    at_a = big[na] > dd
    at_b = big[nb] > dd
    out[at_b & ~at_a] = 1
    out[at_a & ~at_b] = -1
    return out


def trunk_leaves(
    u: np.ndarray,
    v: np.ndarray,
    diameter: np.ndarray,
    leaves: np.ndarray,
    outlets: np.ndarray,
    *,
    n_nodes: int,
) -> np.ndarray:
    """Of ``leaves`` (open ends), those at the largest pipe of their piece of network
    where that pipe is :data:`TRUNK_RATIO` times the largest pipe at any real outlet of
    the piece: the trunk leaves the mapped data there, and a small outlet of the same
    piece (an overflow, a ditch end) is not the way out of all of it."""
    d = np.where(np.isfinite(diameter), diameter, 0.0)
    if not len(leaves) or not (d > 0).any():
        return leaves[:0]
    g = coo_matrix((np.ones(len(u)), (u, v)), shape=(n_nodes, n_nodes))
    _, comp = connected_components(g, directed=False)
    at_node = np.zeros(n_nodes)
    np.maximum.at(at_node, u, d)
    np.maximum.at(at_node, v, d)
    piece_max = np.zeros(comp.max() + 1)
    np.maximum.at(piece_max, comp, at_node)
    outlet_max = np.zeros(comp.max() + 1)
    np.maximum.at(outlet_max, comp[outlets], at_node[outlets])
    c = comp[leaves]
    ok = (at_node[leaves] > 0) & (at_node[leaves] >= piece_max[c])
    ok &= at_node[leaves] >= TRUNK_RATIO * outlet_max[c]
    ok &= outlet_max[c] > 0  # a piece with no sized real outlet keeps the open-end rule
    return leaves[ok]


def preferred_direction(ev: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per line, the direction its strongest evidence gives (0: none) and that
    evidence's position in :data:`TRUST_ORDER` (-1: none)."""
    L = len(ev["ids"])
    pref = np.zeros(L, dtype=int)
    tier = np.full(L, -1, dtype=int)
    for k, name in enumerate(TRUST_ORDER):
        m = (tier < 0) & (ev[name] != 0)
        pref[m] = ev[name][m]
        tier[m] = k
    return pref, tier


def orient_lines(
    ws: Workspace,
    st: StructureTable,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    wtree: Any = None,
) -> Orientation:
    """Orient every line by one decision over all the evidence (docs/network.md
    "Orientation"); QA on what was overruled.

    1. Each line's preferred direction is its strongest evidence (:data:`TRUST_ORDER`).
    2. One least-cost search from the targets (real outlets; where no waterbody or
       outfalls layer checks the terminals, also the open ends the evidence flows into)
       over every line, where following a line against its evidence costs
       :data:`OVERRULE_COST` (``ids``/``flow_dir``: not allowed) and length only breaks
       ties.  A line is reversed against its evidence only where that is the least-cost
       way of a structure that otherwise reaches no target; lines no evidence orients
       run towards the cheaper end (``outlet_path``).
    3. A node whose way out no evidence decides and that reaches another outlet nearly
       as cheaply (:data:`AMBIGUITY_RATIO`) is ``ambiguous`` (``Orientation.node_alt``).
    """
    L = cv.count
    na, nb = ends.node[:L], ends.node[L:]
    ev = line_evidence(ws, st, cv, ends, sp, cfg=cfg)
    outlets, open_targets_ok = real_outlet_nodes(
        ws, st, ends, sp, cfg=cfg, wtree=wtree, with_check=True
    )
    pref, tier = preferred_direction(ev)
    is_bi = ev["bi"] & (ev["ids"] == 0) & (ev["flow_dir"] == 0)
    hard = (tier >= 0) & (tier <= 1)
    names = np.array(TRUST_ORDER, dtype=object)
    seg_u, seg_v, seg_len, seg_line = segment_table(
        ends.node, cv.length, sp.splits, sp.lateral_edges
    )
    n_nodes = ends.n_structures + len(sp.junction_xy)
    lnorm = seg_len * cfg.m_per_unit + 1e-9
    is_lat = seg_line < 0
    line = np.where(is_lat, 0, seg_line)
    sp_ = np.where(is_lat, 1, pref[line])
    s_tier = np.where(is_lat, 0, tier[line])
    s_bi = ~is_lat & is_bi[line]
    s_hard = is_lat | (~s_bi & hard[line])
    over = np.zeros(len(seg_u))
    for name, c in OVERRULE_COST.items():
        over[s_tier == TRUST_ORDER.index(name)] = c
    w_uv = lnorm + np.where(s_bi, 0.0, np.where(sp_ == -1, np.where(s_hard, np.inf, over), 0.0))
    w_vu = lnorm + np.where(s_bi, 0.0, np.where(sp_ == 1, np.where(s_hard, np.inf, over), 0.0))
    targets, start = _search_targets(
        outlets,
        open_targets_ok,
        seg=(seg_u, seg_v, np.where(is_lat, np.nan, cv.diameter_in[line])),
        is_lat=is_lat,
        pref=sp_,
        bi=s_bi,
        uni=np.where(is_lat, 0, ev["flow_dir_uni"][line]),
        kind=st.kind,
        n_structures=ends.n_structures,
        n_nodes=n_nodes,
    )
    cost, nxt = outlet_costs(
        seg_u, seg_v, w_uv, w_vu, n_nodes=n_nodes, targets=targets, start=start
    )
    # 1. evidence; 2. overruled where a least-cost way needs it; 3. outlet_path
    direction = np.where(pref != 0, pref, 0)
    method = np.where(tier >= 0, names[np.maximum(tier, 0)], None).astype(object)
    method[is_bi] = "flow_dir_bi"
    overruled = np.full(L, "", dtype=object)
    real = ~is_lat
    # a segment used against its evidence on the least-cost way of its upper end
    back = (
        real
        & ~s_bi
        & ~s_hard
        & (((sp_ == 1) & (nxt[seg_v] == seg_u)) | ((sp_ == -1) & (nxt[seg_u] == seg_v)))
    )
    # ... unless a cheaper parallel arc explains it (the way's cost says which)
    back &= np.where(
        sp_ == 1,
        np.isclose(cost[seg_v], cost[seg_u] + w_vu, rtol=1e-12, atol=0),
        np.isclose(cost[seg_u], cost[seg_v] + w_uv, rtol=1e-12, atol=0),
    )
    # ... for a structure or a node flow passes through, not for a bare line end (the
    # mapped line may just stop there)
    deg = np.bincount(np.r_[seg_u, seg_v], minlength=n_nodes)
    low = np.where(sp_ == 1, seg_v, seg_u)
    back &= (low < ends.n_structures) | (deg[low] >= 2)
    flip_lines = np.unique(seg_line[back])
    for j in flip_lines:
        overruled[j] = str(method[j])
        direction[j] = -pref[j]
        method[j] = "outlet_path"
    free = (tier < 0) & ~is_bi
    ev_out = orient_by_outlet_path(cost[na], cost[nb])
    m = free & (ev_out != 0)
    direction[m] = ev_out[m]
    method[m] = "outlet_path"
    uni = ev["flow_dir_uni"]
    uni_disagrees = int(np.sum(m & (uni != 0) & (uni != ev_out)))
    rest = free & (ev_out == 0)
    method[rest & (uni != 0)] = "flow_dir_uni"
    method[rest & (uni == 0)] = "digitized"
    direction[rest] = 1
    direction[is_bi] = np.where(pref[is_bi] != 0, pref[is_bi], 1)
    # a line at a real outlet that only its size turned away runs into the outlet (an
    # outlet pipe may be the smaller branch of a split: the split's main branch is
    # chosen later by pipe size); the search above kept it from drawing the system in
    at_a, at_b = np.isin(na, outlets), np.isin(nb, outlets)
    away = (method == "pipe_sizes") & (at_a != at_b)
    away &= np.where(at_a, direction == 1, direction == -1)
    direction[away] = -direction[away]
    method[away] = "outlet_path"
    overruled[away] = "pipe_sizes"
    # weaker evidence the chosen direction overrules (kept lines)
    for name in TRUST_ORDER[1:]:
        e = ev[name]
        lost = (e != 0) & (e != direction) & ~is_bi & (overruled == "")
        lost &= method != name
        overruled[lost] = name
    # a flow-direction value "uni" that agrees with the direction chosen is weak evidence
    # but evidence: where the ways out nearly tie it decides (no ambiguity there)
    uni_ok = (uni != 0) & (uni == direction) & free
    node_alt = _ambiguous_nodes(
        seg_u,
        seg_v,
        w_uv,
        w_vu,
        cost=cost,
        nxt=nxt,
        free_seg=real & free[line],
        uni_seg=np.where(real & uni_ok[line], uni[line], 0),
    )
    conflicts = _orientation_findings(
        qa, cv, direction=direction, method=method, bi=is_bi, evidence=ev, overruled=overruled
    )
    return Orientation(
        direction=direction.astype(int),
        bidirectional=is_bi,
        method=method,
        outlet_distance=cost,
        conflicts=conflicts,
        uni_disagrees=uni_disagrees,
        overruled=overruled,
        node_alt=node_alt,
        uni_ok=uni_ok,
    )


def _search_targets(
    outlets: np.ndarray,
    open_targets_ok: bool,
    *,
    seg: tuple[np.ndarray, np.ndarray, np.ndarray],
    is_lat: np.ndarray,
    pref: np.ndarray,
    bi: np.ndarray,
    uni: np.ndarray,
    kind: np.ndarray,
    n_structures: int,
    n_nodes: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The targets of the least-cost search and what ending at each costs: the real
    outlets; where nothing checks the terminals, also the evidenced sinks
    (:func:`evidenced_sinks`) and the open ends no evidence orients
    (:func:`open_leaf_targets`), at no cost where one ends a trunk
    (:func:`trunk_leaves`); ``seg``: per segment its two nodes and its diameter."""
    if not open_targets_ok:
        return outlets, np.zeros(len(outlets))
    seg_u, seg_v, diameter = seg
    # (an assumed lateral is no evidence of where the mapped system stops)
    sinks = evidenced_sinks(seg_u, seg_v, np.where(is_lat, 0, pref), bi, n_nodes)
    # a sink inside the network (two or more lines flow in) is less likely than one
    # wrong invert and more likely than two: ending there costs SINK_COST
    deg = np.bincount(np.r_[seg_u, seg_v], minlength=n_nodes)
    leaves, leaf_start = open_leaf_targets(
        seg_u, seg_v, pref, bi, deg, uni=uni, kind=kind, n_structures=n_structures
    )
    trunk = trunk_leaves(seg_u, seg_v, diameter, leaves, outlets, n_nodes=n_nodes)
    leaf_start = np.where(np.isin(leaves, trunk), TRUNK_COST, leaf_start)
    targets = np.r_[outlets, sinks, leaves]
    start = np.r_[np.zeros(len(outlets)), np.where(deg[sinks] >= 2, SINK_COST, 0.0), leaf_start]
    return targets, start


def evidenced_sinks(
    u: np.ndarray, v: np.ndarray, pref: np.ndarray, bi: np.ndarray, n_nodes: int
) -> np.ndarray:
    """Nodes the evidence flows into and every other segment of which flows in too (none
    flows out or is left unoriented): where nothing checks the terminals, the mapped
    system may stop there (``terminal_at_structure``)."""
    has = (pref != 0) & ~bi
    into = np.r_[v[has & (pref == 1)], u[has & (pref == -1)]]
    free = ~has
    out_of = np.r_[u[has & (pref == 1)], v[has & (pref == -1)], u[free], v[free]]
    sink = np.zeros(n_nodes, dtype=bool)
    sink[into] = True
    sink[out_of] = False
    return np.where(sink)[0].astype(int)


def open_leaf_targets(
    u: np.ndarray,
    v: np.ndarray,
    pref: np.ndarray,
    bi: np.ndarray,
    deg: np.ndarray,
    *,
    uni: np.ndarray,
    kind: np.ndarray,
    n_structures: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Open ends no evidence orients, as last-resort targets, and what ending there costs.

    Where nothing checks the terminals, a piece of network with no real outlet and no
    evidence still drains somewhere: to one of its open ends (a node one line touches,
    that line no evidence orients, nor a "uni" flow-direction value away from it).  Ending at one costs :data:`LEAF_COST`, more than at
    an evidenced sink, so a piece with a real outlet or evidence never ends there; an end
    at a structure of an inlet kind (catch basin, inlet: where water *enters* the system)
    costs :data:`INLET_LEAF_COST`, so it is the way out only of a piece whose every open end
    is an inlet.  Which open end is the outlet is a guess the outfall table marks
    (``guessed``); where two are nearly as close the answer is ``ambiguous``.
    """
    free = (pref == 0) & ~bi
    n = len(deg)
    leaf = np.zeros(n, dtype=bool)
    leaf[u[free & (uni != 1)]] = True  # (a "uni" value says flow leaves the first end)
    leaf[v[free & (uni != -1)]] = True
    drawn_from = np.zeros(n, dtype=bool)  # the line is drawn starting at the end
    drawn_from[u[free]] = True
    nodes = np.where(leaf & (deg == 1))[0].astype(int)
    k = np.full(len(nodes), None, dtype=object)
    at_st = nodes < n_structures
    k[at_st] = np.asarray(kind, dtype=object)[nodes[at_st]]
    keep = ~np.isin(k.astype(str), INLET_KINDS)
    nodes = nodes[keep]
    start = np.full(len(nodes), LEAF_COST)
    return nodes, start + np.where(drawn_from[nodes], PENALTY_UNIT, 0.0)


def _ambiguous_nodes(
    u: np.ndarray,
    v: np.ndarray,
    w_uv: np.ndarray,
    w_vu: np.ndarray,
    *,
    cost: np.ndarray,
    nxt: np.ndarray,
    free_seg: np.ndarray,
    uni_seg: np.ndarray | None = None,
) -> np.ndarray:
    """Per node, the other target it reaches nearly as cheaply (-1: none) where its own
    least-cost way leaves it on a line no evidence orients (:data:`AMBIGUITY_RATIO`);
    ``uni_seg``: per segment, +1/-1 where a "uni" value confirms flow first -> last /
    last -> first (such a step is not left to the tie)."""
    n = len(cost)
    alt_out = np.full(n, -1, dtype=np.int64)
    if not free_seg.any():
        return alt_out
    source = follow(nxt)
    source = np.where(np.isfinite(cost), source, -1)
    fr = np.r_[u, v]
    to = np.r_[v, u]
    w = np.r_[w_uv, w_vu]
    cost2, alt, step2 = second_outlet_costs(fr, to, w, cost, source)
    # the node's first step is a line no evidence orients
    step_free = np.zeros(n, dtype=bool)
    uni_seg = np.zeros(len(u), dtype=int) if uni_seg is None else uni_seg
    fwd = free_seg & (uni_seg != 1)  # a step u -> v that no "uni" value confirms
    bwd = free_seg & (uni_seg != -1)
    step_free[u[fwd][nxt[u[fwd]] == v[fwd]]] = True
    step_free[v[bwd][nxt[v[bwd]] == u[bwd]]] = True
    # ... and the other way parts from its own here (not further down, where the node
    # that parts decides)
    pen1, len1 = split_cost(cost)
    pen2, len2 = split_cost(cost2)
    near = (pen2 == pen1) & (len2 <= AMBIGUITY_RATIO * len1)
    amb = step_free & (alt >= 0) & near & np.isfinite(cost)
    amb &= step2 != nxt
    alt_out[amb] = alt[amb]
    return alt_out


def _orientation_findings(
    qa: QAReport,
    cv: ConveyanceTable,
    *,
    direction: np.ndarray,
    method: np.ndarray,
    bi: np.ndarray,
    evidence: dict[str, np.ndarray],
    overruled: np.ndarray,
) -> dict[str, str]:
    """QA of the chosen orientation: pipes that run against their own inverts
    (``adverse_slope``, with the slope), conflicting ids and flow-direction values,
    reversed digitisation, pipes that run up between structure inverts.  Returns
    conv_id -> the evidence that kept a pipe running against its inverts."""
    layer = "conveyances"
    ev_inv, ev_ids, ev_fd = evidence["inverts"], evidence["ids"], evidence["flow_dir"]
    adverse = (ev_inv != 0) & (ev_inv != direction) & ~bi
    words = {
        "ids": "its from/to structure ids",
        "flow_dir": "its flow-direction value",
        "outlet_path": "the whole network (otherwise structures upstream reach no outlet)",
    }
    ui, di = cv.us_invert, cv.ds_invert
    conflicts: dict[str, str] = {}
    for j in np.where(adverse)[0]:
        drop = abs(float(ui[j]) - float(di[j]))
        slope = 100.0 * drop / float(cv.length[j]) if cv.length[j] > 0 else float("nan")
        why = words.get(str(method[j]), f"the '{method[j]}' rule")
        add_finding(
            qa,
            "adverse_slope",
            layer,
            f"The conveyance runs uphill by its own inverts (adverse slope {slope:.2f}%, "
            f"{drop:.2f} over its length); its direction comes from {why}, which the "
            "inverts do not overrule (docs/network.md, trust order).",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check the invert elevations (a swapped or mistyped pair is common).",
        )
        conflicts[str(cv.ids[j])] = str(method[j])
    for j in np.where((ev_ids != 0) & (ev_fd != 0) & (ev_ids != ev_fd))[0]:
        add_finding(
            qa,
            "orientation_conflict",
            layer,
            "The flow-direction value disagrees with the from/to ids; the ids win "
            "(docs/network.md, trust order).",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check flow_dir and the from/to ids.",
        )
    shown = {"ids": "from/to ids", "flow_dir": "flow-direction value", "inverts": "inverts"}
    for j in np.where(np.isin(method, list(shown)) & (direction == -1))[0]:
        add_finding(
            qa,
            "reversed_digitization",
            layer,
            f"The line is digitised against the flow its {shown[str(method[j])]} show; "
            "the network uses it reversed.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            level="info",
            fix="Flip the line so it is drawn in the direction of flow.",
        )
    ev_sinv = evidence["structure_inverts"]
    up_struct = (ev_sinv != 0) & (ev_sinv != direction) & ~bi & ~adverse
    for j in np.where(up_struct)[0]:
        add_finding(
            qa,
            "uphill_pipe",
            layer,
            f"The conveyance's direction (chosen by the '{method[j]}' rule, docs/network.md) "
            "runs from a structure with a lower invert to one with a higher invert.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check the structure inverts and the conveyance direction.",
        )
    return conflicts
