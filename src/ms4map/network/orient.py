"""Orient every conveyance: the orientation evidence, each a plain function over arrays, and the rule chain orient_lines.

The chain (docs/network.md, docs/rules.md section 1) takes, per line, the first rule
whose evidence decides: ``inverts``, ``ids``, ``flow_dir`` (``flow_dir_bi`` for a
two-way line), ``structure_inverts``, ``structure_rims``, ``dem_ground``,
``outlet_path``, ``flow_dir_uni``, else ``digitized``.  Evidence is an integer array
with one value per line: +1 where flow runs from the first vertex to the last, -1 the
other way, 0 where it does not decide (:func:`downhill_evidence`,
:func:`orient_by_outlet_path`; their inputs from :func:`dem_ground_at`,
:func:`outlet_distances` on :func:`segment_table`, :func:`real_outlet_nodes`).

To add evidence: write it here as such a function, give it its rank in the chain of
:func:`orient_lines`, and add its method name to
:data:`ms4map.network.model.ORIENT_METHODS` and to docs/network.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import shapely
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree

from ..core.qa import QAReport
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
    "dem_ground_at",
    "downhill_evidence",
    "open_end_headwalls",
    "orient_by_outlet_path",
    "orient_lines",
    "outlet_distances",
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


def outlet_distances(
    u: np.ndarray, v: np.ndarray, length: np.ndarray, n_nodes: int, outlets: np.ndarray
) -> np.ndarray:
    """Distance along the network (undirected, by length) from every node to its nearest
    real outlet; ``inf`` where no outlet is connected (one multi-source Dijkstra)."""
    dist = np.full(n_nodes, np.inf)
    outlets = np.unique(np.asarray(outlets, dtype=int))
    if len(outlets) == 0 or len(u) == 0:
        dist[outlets] = 0.0
        return dist
    keep = u != v
    # a virtual source joined to every outlet at zero cost (tiny weight: csgraph
    # drops explicit zeros)
    src = n_nodes
    rows = np.r_[u[keep], v[keep], np.full(len(outlets), src)]
    cols = np.r_[v[keep], u[keep], outlets]
    w = np.r_[
        np.maximum(length[keep], 1e-12),
        np.maximum(length[keep], 1e-12),
        np.full(len(outlets), 1e-12),
    ]
    g = coo_matrix((w, (rows, cols)), shape=(n_nodes + 1, n_nodes + 1)).tocsr()
    d = dijkstra(g, directed=True, indices=src)
    dist[:] = d[:n_nodes] - 1e-12
    dist[outlets] = 0.0
    return dist


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
) -> np.ndarray:
    """Nodes that are real outlets before orientation: outfall structures, points of the
    outfalls layer (nearest node within the snap tolerance), headwalls at an open end,
    and open ends within the water tolerance of a waterbody."""
    n_st = ends.n_structures
    n_nodes = n_st + len(sp.junction_xy)
    deg = np.bincount(ends.node, minlength=n_nodes)
    for parts in sp.splits.values():
        for _, nd in parts:
            deg[nd] += 2
    out = [np.where(st.is_primary & (st.kind == "outfall"))[0]]
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
    open_ends = np.where(deg == 1)[0]
    if wtree is not None and len(open_ends):
        pts = shapely.points(node_xy(st.xy, sp.junction_xy, open_ends))
        pi, _ = wtree.query(pts, predicate="dwithin", distance=cfg.water_tol)
        out.append(open_ends[np.unique(pi)])
    return np.unique(np.concatenate(out).astype(int))


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
    """Orient every line by the rule chain of docs/network.md (first rule that applies); QA on conflicts."""
    L, thr = cv.count, cfg.elev_threshold
    na, nb = ends.node[:L], ends.node[L:]
    # inverts belong to the ends the ids name, else us at the first vertex
    ui, di = cv.us_invert, cv.ds_invert
    inv_a = np.where(ends.ids_reversed, di, ui)
    inv_b = np.where(ends.ids_reversed, ui, di)
    both = np.isfinite(inv_a) & np.isfinite(inv_b)
    ev_inv = np.where(
        both & (inv_a > inv_b + thr), 1, np.where(both & (inv_b > inv_a + thr), -1, 0)
    )
    ev_ids = np.where(ends.ids_known, np.where(ends.ids_reversed, -1, 1), 0)
    fd = np.asarray(cv.flow_dir, dtype=object)
    ev_fd = np.where(fd == "reverse", -1, 0)
    ev_uni = np.where(fd == "uni", 1, 0)
    is_bi = fd == "bi"

    def node_val(arr: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        out = np.full(len(nodes), np.nan)
        m = nodes < ends.n_structures
        out[m] = arr[nodes[m]]
        return out

    sia, sib = node_val(st.invert_elev, na), node_val(st.invert_elev, nb)
    sb = np.isfinite(sia) & np.isfinite(sib)
    ev_sinv = np.where(sb & (sia > sib + thr), 1, np.where(sb & (sib > sia + thr), -1, 0))
    sra, srb = node_val(st.rim_elev, na), node_val(st.rim_elev, nb)
    rb = np.isfinite(sra) & np.isfinite(srb)
    ev_srim = np.where(rb & (sra > srb + thr), 1, np.where(rb & (srb > sra + thr), -1, 0))
    direction = np.ones(L, dtype=int)
    method = np.full(L, "digitized", dtype=object)
    bi = np.zeros(L, dtype=bool)
    decided = np.zeros(L, dtype=bool)
    for ev, name in ((ev_inv, "inverts"), (ev_ids, "ids"), (ev_fd, "flow_dir")):
        m = ~decided & (ev != 0)
        direction[m] = ev[m]
        method[m] = name
        decided |= m
        if name == "ids":
            m = ~decided & is_bi
            bi[m] = True
            method[m] = "flow_dir_bi"
            decided |= m
    ev_dem = np.zeros(L, dtype=int)
    dem = getattr(ws, "dem", None)
    if dem is not None and not decided.all():
        za = dem_ground_at(dem, node_xy(st.xy, sp.junction_xy, na))
        zb = dem_ground_at(dem, node_xy(st.xy, sp.junction_xy, nb))
        ev_dem = downhill_evidence(za, zb, thr)
    for ev, name in (
        (ev_sinv, "structure_inverts"),
        (ev_srim, "structure_rims"),
        (ev_dem, "dem_ground"),
    ):
        m = ~decided & (ev != 0)
        direction[m] = ev[m]
        method[m] = name
        decided |= m
    # outlet_path: from the end farther along the network from the nearest real
    # outlet to the nearer end (only where no stronger evidence decided)
    node_dist = None
    ev_out = np.zeros(L, dtype=int)
    if not decided.all():
        seg = segment_table(ends.node, cv.length, sp.splits, sp.lateral_edges)
        n_nodes = ends.n_structures + len(sp.junction_xy)
        outlets = real_outlet_nodes(ws, st, ends, sp, cfg=cfg, wtree=wtree)
        node_dist = outlet_distances(seg[0], seg[1], seg[2], n_nodes, outlets)
        ev_out = orient_by_outlet_path(node_dist[na], node_dist[nb])
    m = ~decided & (ev_out != 0)
    direction[m] = ev_out[m]
    method[m] = "outlet_path"
    decided |= m
    uni_disagrees = int(np.sum(m & (ev_uni != 0) & (ev_uni != ev_out)))
    m = ~decided & (ev_uni != 0)
    method[m] = "flow_dir_uni"
    decided |= m
    conflicts = _orientation_findings(
        qa,
        cv,
        direction=direction,
        method=method,
        bi=bi,
        evidence={
            "inverts": ev_inv,
            "ids": ev_ids,
            "flow_dir": ev_fd,
            "flow_dir_uni": ev_uni,
            "structure_inverts": ev_sinv,
        },
    )
    return Orientation(
        direction=direction,
        bidirectional=bi,
        method=method,
        outlet_distance=node_dist,
        conflicts=conflicts,
        uni_disagrees=uni_disagrees,
    )


def _orientation_findings(
    qa: QAReport,
    cv: ConveyanceTable,
    *,
    direction: np.ndarray,
    method: np.ndarray,
    bi: np.ndarray,
    evidence: dict[str, np.ndarray],
) -> dict[str, str]:
    """QA of the chosen orientation: conflicting evidence, reversed digitisation, uphill
    pipes.  ``evidence``: the evidence arrays by rule name (``inverts``, ``ids``,
    ``flow_dir``, ``flow_dir_uni``, ``structure_inverts``).  Returns conv_id -> the
    evidence the inverts overruled (``"ids"`` or ``"flow_dir"``)."""
    ev_inv, ev_ids, ev_fd = evidence["inverts"], evidence["ids"], evidence["flow_dir"]
    ev_uni, ev_sinv = evidence["flow_dir_uni"], evidence["structure_inverts"]
    # QA: conflicting evidence, reversed digitisation, uphill pipes
    layer = "conveyances"
    for j in np.where((ev_inv != 0) & (ev_ids != 0) & (ev_inv != ev_ids))[0]:
        add_finding(
            qa,
            "orientation_conflict",
            layer,
            "The inverts say the conveyance flows from its to_id structure to its "
            "from_id structure; the inverts win (docs/rules.md section 1).",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check the invert elevations and the from/to ids.",
        )
    ev_fd = np.where(ev_uni != 0, ev_uni, ev_fd)  # any flow-direction value
    for j in np.where((ev_inv != 0) & (ev_fd != 0) & (ev_inv != ev_fd))[0]:
        add_finding(
            qa,
            "orientation_conflict",
            layer,
            "The flow-direction attribute disagrees with the inverts; the inverts win.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Check flow_dir and the inverts.",
        )
    for j in np.where((method == "inverts") & (direction == -1))[0]:
        add_finding(
            qa,
            "reversed_digitization",
            layer,
            "The line is digitised against the flow its inverts show; the network "
            "uses it reversed.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            level="info",
            fix="Flip the line so it is drawn in the direction of flow.",
        )
    # uphill: the chosen direction runs from a lower to a higher structure invert,
    # or the pipe's own inverts (read along the ids) run uphill
    up_struct = (ev_sinv != 0) & (ev_sinv != direction) & ~bi
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
    conflicts: dict[str, str] = {}
    for j in np.where((ev_inv != 0) & (ev_fd != 0) & (ev_inv != ev_fd))[0]:
        conflicts[str(cv.ids[j])] = "flow_dir"
    for j in np.where((ev_inv != 0) & (ev_ids != 0) & (ev_inv != ev_ids))[0]:
        conflicts[str(cv.ids[j])] = "ids"
    return conflicts
