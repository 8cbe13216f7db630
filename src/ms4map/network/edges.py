"""Assemble the directed edges: each conveyance, or each part of a split one, in flow order, and the assumed laterals."""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely
import shapely.ops

from ..core.qa import QAReport
from .tables import (
    BuildConfig,
    ConveyanceTable,
    EdgeTable,
    EndTable,
    Orientation,
    SplitTable,
    StructureTable,
    add_finding,
    node_xy,
)

__all__ = ["assemble_edges"]


def assemble_edges(
    st: StructureTable,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    *,
    cfg: BuildConfig,
    qa: QAReport,
) -> EdgeTable:
    """Directed edges in flow order (split lines in parts, assumed laterals) and the node table."""
    n_lines = cv.count
    nodes_used, node_ids = _node_table(st, ends, sp)
    rows: dict[str, list[Any]] = {k: [] for k in _EDGE_COLUMNS}
    fast, fast_cols = _straight_edges(cv, ends, sp, ori)
    for j in np.where(~fast)[0]:
        _split_line_edges(j, cv, ends, sp, ori, cfg=cfg, qa=qa, rows=rows)
    _lateral_edges(st, cv, sp, cfg=cfg, qa=qa, rows=rows)
    rows = _edges_in_flow_order(fast_cols, rows, n_lines)
    return EdgeTable(
        rows=rows,
        from_node=np.array(rows["u"], dtype=int),
        to_node=np.array(rows["v"], dtype=int),
        bidirectional=np.array(rows["bi"], dtype=bool),
        source_line=np.array(rows["src"], dtype=int),
        node_ids=node_ids,
        nodes_used=nodes_used,
    )


#: The columns of the edge rows (``u``, ``v``: node rows; ``src``: conveyance row, -1 for
#: an assumed lateral).
_EDGE_COLUMNS = (
    "conv_id",
    "part",
    "u",
    "v",
    "kind",
    "orient_method",
    "orient_overruled",
    "bi",
    "geometry",
    "diameter_in",
    "us_invert",
    "ds_invert",
    "src",
)


def _node_table(
    st: StructureTable, ends: EndTable, sp: SplitTable
) -> tuple[np.ndarray, np.ndarray]:
    """Which nodes the network uses (ends, primary structures, split points) and the node
    ids (structure ids, then ``J1``, ``J2``, ... for the junctions of the splits)."""
    nodes_used = np.zeros(ends.n_structures + len(sp.junction_xy), dtype=bool)
    nodes_used[ends.node] = True
    nodes_used[: ends.n_structures] |= st.is_primary
    for parts in sp.splits.values():
        for _, nd in parts:
            nodes_used[nd] = True
    j_ids = np.array([f"J{i + 1}" for i in range(len(sp.junction_xy))], dtype=object)
    return nodes_used, np.r_[st.ids, j_ids]


def _straight_edges(
    cv: ConveyanceTable, ends: EndTable, sp: SplitTable, ori: Orientation
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Vectorised: the conveyances that are not split and join two different nodes, one
    edge each (the mask of those conveyances and the edges' columns)."""
    n_lines = cv.count
    na_all, nb_all = ends.node[:n_lines], ends.node[n_lines:]
    has_split = np.zeros(n_lines, dtype=bool)
    has_split[list(sp.splits)] = True
    fast = ~has_split & (na_all != nb_all)
    fj = np.where(fast)[0]
    rev = ori.direction[fj] == -1
    ui0 = np.where(ends.ids_reversed[fj], cv.ds_invert[fj], cv.us_invert[fj])
    di0 = np.where(ends.ids_reversed[fj], cv.us_invert[fj], cv.ds_invert[fj])
    fgeom = cv.geometry[fj].copy()
    fgeom[rev] = shapely.reverse(fgeom[rev])
    return fast, {
        "conv_id": cv.ids[fj],
        "part": np.zeros(len(fj), dtype=int),
        "u": np.where(rev, nb_all[fj], na_all[fj]),
        "v": np.where(rev, na_all[fj], nb_all[fj]),
        "kind": cv.kind[fj],
        "orient_method": ori.method[fj],
        "orient_overruled": _overruled(ori)[fj],
        "bi": ori.bidirectional[fj],
        "geometry": fgeom,
        "diameter_in": cv.diameter_in[fj],
        "us_invert": np.where(rev, di0, ui0),
        "ds_invert": np.where(rev, ui0, di0),
        "src": fj,
    }


def _split_line_edges(
    j: int,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    rows: dict[str, list[Any]],
) -> None:
    """Append the edges of conveyance ``j`` (split at its cuts, or a self loop left out)."""
    n_lines = cv.count
    g = cv.geometry[j]
    na, nb = int(ends.node[j]), int(ends.node[j + n_lines])
    cuts = sorted(sp.splits.get(j, []))
    seq_nodes = [na] + [nd for _, nd in cuts] + [nb]
    seq_t = [0.0] + [t for t, _ in cuts] + [float(cv.length[j])]
    ui, di = cv.us_invert[j], cv.ds_invert[j]
    if ends.ids_reversed[j]:
        ui, di = di, ui  # invert at first vertex, at last vertex
    k = 0
    for p in range(len(seq_nodes) - 1):
        u, v = seq_nodes[p], seq_nodes[p + 1]
        t0, t1 = seq_t[p], seq_t[p + 1]
        if t1 - t0 <= cfg.coincident_tol and len(seq_nodes) > 2:
            continue
        if u == v:
            if len(seq_nodes) == 2:
                add_finding(
                    qa,
                    "self_loop",
                    "conveyances",
                    "Both ends of the conveyance snap to the same node; it is "
                    "left out of the network.",
                    fid=cv.ids[j],
                    xy=cv.start_xy[j],
                    fix="Check the line: it may be a stub or drawn twice.",
                )
            continue
        part = g if len(seq_nodes) == 2 else shapely.ops.substring(g, t0, t1)
        # a part's inverts: the line's own at its ends, interpolated along its length
        # at the cuts (a pipe's invert falls linearly), unknown where either is unknown
        length = float(cv.length[j])
        ia = ui if p == 0 else ui + (di - ui) * t0 / length if length > 0 else np.nan
        ib = (
            di
            if p == len(seq_nodes) - 2
            else ui + (di - ui) * t1 / length
            if length > 0
            else np.nan
        )
        flip = ori.direction[j] == -1
        if ori.method[j] == "outlet_path" and len(seq_nodes) > 2:
            # each part of a split line runs towards its own nearer end
            du, dv = ori.outlet_distance[u], ori.outlet_distance[v]
            if np.isfinite(du) and np.isfinite(dv) and du != dv:
                flip = dv > du
        if flip:
            u, v = v, u
            part = part.reverse()
            ia, ib = ib, ia
        values = (cv.ids[j], k, u, v, cv.kind[j], ori.method[j], _overruled(ori)[j])
        values += (bool(ori.bidirectional[j]), part)
        values += (cv.diameter_in[j], ia, ib, j)
        for col, value in zip(_EDGE_COLUMNS, values, strict=True):
            rows[col].append(value)
        k += 1


def _overruled(ori: Orientation) -> np.ndarray:
    """Per line, the evidence its direction overrules ("" where none)."""
    if ori.overruled is None:
        return np.full(len(ori.direction), "", dtype=object)
    return ori.overruled


def _lateral_edges(
    st: StructureTable,
    cv: ConveyanceTable,
    sp: SplitTable,
    *,
    cfg: BuildConfig,
    qa: QAReport,
    rows: dict[str, list[Any]],
) -> None:
    """Append an edge for each assumed lateral (structure -> the conveyance's node), with
    an info finding."""
    for node, target, d, line in sp.lateral_edges:
        geom = shapely.LineString(node_xy(st.xy, sp.junction_xy, np.array([node, target])))
        values = (f"lateral:{st.ids[node]}", 0, node, target, "connector", "assumed_lateral", "")
        values += (False, geom, np.nan, np.nan, np.nan, -1)
        for col, value in zip(_EDGE_COLUMNS, values, strict=True):
            rows[col].append(value)
        add_finding(
            qa,
            "assumed_lateral",
            "structures",
            f"No conveyance reaches the structure; it is assumed to drain through an "
            f"unmapped lateral to conveyance '{cv.ids[line]}', "
            f"{d * cfg.m_per_unit:.1f} m away.",
            fid=st.ids[node],
            xy=st.xy[node],
            level="info",
            fix="Map the lateral that serves this structure.",
        )


def _edges_in_flow_order(
    fast_cols: dict[str, np.ndarray], rows: dict[str, list[Any]], n_lines: int
) -> dict[str, np.ndarray]:
    """The straight edges and the appended ones as arrays, in conveyance order then part
    order (assumed laterals last, in their order)."""
    cols = {}
    for k, fv in fast_cols.items():
        dt = (
            object
            if k in ("conv_id", "kind", "orient_method", "orient_overruled", "geometry")
            else None
        )
        slow = np.array(rows[k], dtype=dt if dt else fv.dtype)
        if k == "geometry" and len(slow) == 0:
            slow = np.zeros(0, dtype=object)
        cols[k] = np.concatenate([np.asarray(fv, dtype=object) if dt else fv, slow])
    key = np.where(cols["src"] >= 0, cols["src"], n_lines + np.arange(len(cols["src"])))
    order = np.lexsort((cols["part"], key))
    return {k: v[order] for k, v in cols.items()}
