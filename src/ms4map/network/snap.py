"""Connect the conveyance ends: snap them to structures, ends and junctions, split lines, assume laterals.

:func:`snap_ends` attaches every line end to a node (from/to ids, nearest structure,
an attached end, or a new junction); :func:`split_lines` splits a line where a dangling
end or a structure lies on its middle; :func:`assumed_laterals` links structures no
conveyance reaches to the nearest line within the lateral tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..core.qa import QAReport
from .tables import (
    BuildConfig,
    ConveyanceTable,
    EndTable,
    SplitTable,
    StructureTable,
    add_finding,
    node_xy,
)

__all__ = ["assumed_laterals", "snap_ends", "split_lines"]


def snap_ends(st: StructureTable, cv: ConveyanceTable, cfg: BuildConfig, qa: QAReport) -> EndTable:
    """Attach every line end: from/to ids (checked), nearest structure, attached end, junctions."""
    L = cv.count
    ends = np.vstack([cv.start_xy, cv.end_xy])  # end e: e < L start, e >= L last vertex
    end_struct = np.full(2 * L, -1)  # structure row index (primary) or -1
    how = np.full(2 * L, "", dtype=object)
    # 1. from/to ids, checked against the geometry
    ids_known = np.zeros(L, dtype=bool)
    fi = np.array([st.id_index.get(v, -1) if v is not None else -1 for v in cv.from_id])
    ti = np.array([st.id_index.get(v, -1) if v is not None else -1 for v in cv.to_id])
    for name, col, idx in (("from_id", cv.from_id, fi), ("to_id", cv.to_id, ti)):
        unknown = np.where((idx < 0) & np.array([v is not None for v in col]))[0]
        for j in unknown:
            add_finding(
                qa,
                "unknown_structure_id",
                "conveyances",
                f"{name} '{col[j]}' names no structure; the geometry decides.",
                fid=cv.ids[j],
                xy=cv.start_xy[j],
                level="info",
                column=name,
                fix="Correct the id or add the structure.",
            )
    same = (fi >= 0) & (fi == ti)
    for j in np.where(same)[0]:
        add_finding(
            qa,
            "id_geometry_mismatch",
            "conveyances",
            f"from_id and to_id both name '{cv.from_id[j]}'; the ids are ignored.",
            fid=cv.ids[j],
            xy=cv.start_xy[j],
            fix="Correct from_id/to_id.",
        )
    fi[same] = -1
    ti[same] = -1
    sxy = st.xy

    def dist(idx: np.ndarray, pts: np.ndarray) -> np.ndarray:
        d = np.full(len(idx), np.inf)
        m = idx >= 0
        d[m] = np.hypot(*(sxy[idx[m]] - pts[m]).T)
        return d

    dfa, dfb, dta, dtb = (
        dist(fi, cv.start_xy),
        dist(fi, cv.end_xy),
        dist(ti, cv.start_xy),
        dist(ti, cv.end_xy),
    )
    both = (fi >= 0) & (ti >= 0)
    rev = np.where(
        both,
        dfb + dta < dfa + dtb,
        np.where(fi >= 0, dfb < dfa, np.where(ti >= 0, dta < dtb, False)),
    )
    d_from = np.where(rev, dfb, dfa)
    d_to = np.where(rev, dta, dtb)
    from_end = np.where(rev, np.arange(L) + L, np.arange(L))
    to_end = np.where(rev, np.arange(L), np.arange(L) + L)
    for idx, d, end, name, col in (
        (fi, d_from, from_end, "from_id", cv.from_id),
        (ti, d_to, to_end, "to_id", cv.to_id),
    ):
        good = (idx >= 0) & (d <= cfg.id_tol)
        end_struct[end[good]] = idx[good]
        how[end[good]] = "id"
        far = np.where((idx >= 0) & (d > cfg.snap_tol))[0]
        for j in far:
            trusted = d[j] <= cfg.id_tol
            add_finding(
                qa,
                "id_geometry_mismatch",
                "conveyances",
                f"{name} names structure '{col[j]}', which lies {d[j] * cfg.m_per_unit:.1f} m from "
                "the conveyance end; "
                + ("the id is used." if trusted else "too far: the geometry decides."),
                fid=cv.ids[j],
                xy=ends[end[j]],
                column=name,
                fix="Move the line end onto the structure, or correct the id.",
            )
        ids_known |= good
    ids_rev = rev & ids_known
    # 2. ends to structures within tolerance (nearest)
    free = np.where(end_struct < 0)[0]
    if len(free) and st.tree is not None:
        d, k = st.tree.query(ends[free], distance_upper_bound=cfg.snap_tol)
        m = np.isfinite(d)
        end_struct[free[m]] = st.tree_rows[k[m]]
        how[free[m]] = "structure"
    # node numbering: structures (primary) first, junctions after
    n_st = st.count
    end_node = np.where(end_struct >= 0, end_struct, -1)
    # 3. free ends to ends already at a node
    free = np.where(end_node < 0)[0]
    att = np.where(end_node >= 0)[0]
    if len(free) and len(att):
        t = cKDTree(ends[att])
        d, k = t.query(ends[free], distance_upper_bound=cfg.snap_tol)
        m = np.isfinite(d)
        end_node[free[m]] = end_node[att[k[m]]]
        how[free[m]] = "end"
    # 4. remaining free ends cluster into junctions
    free = np.where(end_node < 0)[0]
    jxy = np.zeros((0, 2))
    if len(free):
        t = cKDTree(ends[free])
        pairs = t.query_pairs(cfg.snap_tol, output_type="ndarray")
        m = coo_matrix(
            (
                np.ones(len(pairs)),
                (pairs[:, 0], pairs[:, 1]) if len(pairs) else (np.zeros(0, int), np.zeros(0, int)),
            ),
            shape=(len(free), len(free)),
        )
        nj, lab = connected_components(m, directed=False)
        end_node[free] = n_st + lab
        jxy = np.zeros((nj, 2))
        cnt = np.bincount(lab, minlength=nj).astype(float)
        jxy[:, 0] = np.bincount(lab, weights=ends[free, 0], minlength=nj) / cnt
        jxy[:, 1] = np.bincount(lab, weights=ends[free, 1], minlength=nj) / cnt
        how[free] = np.where(cnt[lab] > 1, "junction", "none")
    return EndTable(
        xy=ends,
        structure=end_struct,
        node=end_node,
        snapped_by=how,
        ids_reversed=ids_rev,
        ids_known=ids_known,
        n_structures=n_st,
        junction_xy=jxy,
    )


def split_lines(
    st: StructureTable, cv: ConveyanceTable, ends: EndTable, cfg: BuildConfig
) -> SplitTable:
    """Where a dangling end or a structure lies on another line's middle: split it there.

    A structure that no end reaches splits a line within the tolerance of it (away
    from the line's own ends).  A structure a single end reaches (a lateral ending at a
    manhole that a trunk is digitised straight through, not split) splits a line it
    lies on exactly (within 1 cm, as digitised with snapping), unless that pipe lies
    along the line (the same pipe drawn twice): the trunk carries the lateral's flow
    on.  A structure two or more ends reach already joins its lines (a line passing it
    too is most often the same pipe drawn twice, measured on Norfolk).
    """
    L = cv.count
    n_st = ends.n_structures
    n_nodes = n_st + len(ends.junction_xy)
    deg = np.bincount(ends.node, minlength=n_nodes)
    cand_nodes: list[int] = []
    # dangling ends: junctions with a single end
    dangling = np.where(deg[n_st:] == 1)[0] + n_st
    cand_nodes.extend(dangling.tolist())
    # structures (primary, with a location) that no end or a single end reaches
    on_line = np.where(st.is_primary & (deg[:n_st] <= 1))[0]
    cand_nodes.extend(on_line.tolist())
    splits: dict[int, list[tuple[float, int]]] = {}
    split_kind: dict[int, str] = {}
    none = SplitTable(splits, split_kind, [], ends.junction_xy)
    if not cand_nodes:
        return none
    cand = np.array(cand_nodes)
    xy = node_xy(st.xy, ends.junction_xy, cand)
    tree = shapely.STRtree(cv.geometry)
    pts = shapely.points(xy)
    pi, li = tree.query(pts, predicate="dwithin", distance=cfg.snap_tol)
    if len(pi) == 0:
        return none
    # incident conveyances of each candidate node (exclude them)
    end_conv = np.r_[np.arange(L), np.arange(L)]
    inc: dict[int, set[int]] = {}
    node_ends = {int(n): None for n in cand}
    for e in np.where(np.isin(ends.node, cand))[0]:
        inc.setdefault(int(ends.node[e]), set()).add(int(end_conv[e]))
    del node_ends
    d = shapely.distance(pts[pi], cv.geometry[li])
    t = shapely.line_locate_point(cv.geometry[li], pts[pi])
    order = np.lexsort((d, pi))
    done: set[int] = set()
    for k in order:
        p, line = int(pi[k]), int(li[k])
        if p in done:
            continue
        node = int(cand[p])
        if line in inc.get(node, ()):
            continue
        if node < n_st and inc.get(node):
            # a structure a pipe ends at joins a line it lies on exactly (as digitised
            # with snapping), unless that pipe lies along the line (one pipe drawn twice)
            if float(d[k]) > cfg.coincident_tol or _lies_along(
                cv.geometry[line], [cv.geometry[c] for c in inc[node]], cfg.snap_tol
            ):
                continue
        tt = float(t[k])
        # within the tolerance of that line's own end point: the end snapping step has
        # handled it (a point beside the line near its end, but farther than that from
        # the end point, splits it: its projection is then well inside the line)
        g = cv.geometry[line]
        near_end = min(
            float(np.hypot(*(xy[p] - shapely.get_coordinates(g)[0]))),
            float(np.hypot(*(xy[p] - shapely.get_coordinates(g)[-1]))),
        )
        if near_end <= cfg.snap_tol or tt <= 1e-6 or tt >= cv.length[line] - 1e-6:
            continue
        done.add(p)
        splits.setdefault(line, []).append((tt, node))
        split_kind[node] = "dangling" if node >= n_st else "structure"
    return none


def _lies_along(line: Any, pipes: list[Any], tol: float) -> bool:
    """Whether any of ``pipes`` lies along ``line`` (its middle and both ends within
    ``tol`` of it): the same pipe drawn twice, not a lateral that joins it."""
    for g in pipes:
        pts = shapely.line_interpolate_point(g, [0.0, 0.5, 1.0], normalized=True)
        if bool(np.all(shapely.distance(line, pts) <= tol)):
            return True
    return False


def assumed_laterals(
    st: StructureTable, cv: ConveyanceTable, ends: EndTable, sp: SplitTable, cfg: BuildConfig
) -> SplitTable:
    """Link orphan structures to the nearest line within the lateral tolerance (a new split table)."""
    lateral_edges: list[tuple[int, int, float, int]] = []
    splits = {k: list(v) for k, v in sp.splits.items()}
    split_kind = dict(sp.split_kind)
    if cfg.lateral_tol <= 0:
        return SplitTable(splits, split_kind, lateral_edges, sp.junction_xy)
    L, n_st = cv.count, ends.n_structures
    deg = np.bincount(ends.node, minlength=n_st + len(sp.junction_xy))[:n_st]
    on_line = {nd for nd, k in split_kind.items() if k == "structure"}
    orphan = np.array(
        [
            i
            for i in np.where(st.is_primary & (deg == 0))[0]
            if i not in on_line and st.kind[i] != "outfall"
        ],
        dtype=int,
    )
    if len(orphan) == 0:
        return SplitTable(splits, split_kind, lateral_edges, sp.junction_xy)
    tree = shapely.STRtree(cv.geometry)
    pts = shapely.points(st.xy[orphan])
    pi, li = tree.query_nearest(pts, max_distance=cfg.lateral_tol, all_matches=False)
    new_j: list[np.ndarray] = []
    for p, line in zip(pi, li, strict=True):
        node = int(orphan[p])
        g = cv.geometry[line]
        t = float(g.project(pts[p]))
        d = float(g.distance(pts[p]))
        if t <= cfg.snap_tol:
            target = int(ends.node[line])
        elif t >= cv.length[line] - cfg.snap_tol:
            target = int(ends.node[line + L])
        else:
            target = n_st + len(sp.junction_xy) + len(new_j)
            new_j.append(shapely.get_coordinates(g.interpolate(t))[0, :2])
            splits.setdefault(int(line), []).append((t, target))
            split_kind[target] = "lateral"
        lateral_edges.append((node, target, d, int(line)))
    jxy = np.vstack([sp.junction_xy, np.array(new_j)]) if new_j else sp.junction_xy
    return SplitTable(splits, split_kind, lateral_edges, jxy)
