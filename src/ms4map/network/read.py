"""Read the network's input layers into step tables: structures, conveyances, and the waterbodies as a search tree.

Bad geometries, duplicate ids, coincident structures, multi-part and zero-length lines
become QA findings here (docs/network.md, "Building the graph").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..core.errors import DataError
from ..core.qa import QAReport
from .tables import (
    BuildConfig,
    ConveyanceTable,
    StructureTable,
    add_finding,
    column_values,
    filled_ids,
)

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = ["read_conveyances", "read_structures", "water_tree"]


def read_structures(ws: Workspace, cfg: BuildConfig, qa: QAReport) -> StructureTable:
    """Structures as nodes: unique ids, points, coincident structures merged (QA)."""
    df = ws.layers.get("structures")
    if df is None or len(df) == 0:
        df = gpd.GeoDataFrame({"struct_id": []}, geometry=[], crs=cfg.crs)
    ids = filled_ids(column_values(df, "struct_id"), df, "structures")
    kinds = column_values(df, "kind")
    geoms = df.geometry.values
    ok = (shapely.get_type_id(geoms) == 0) & ~shapely.is_empty(geoms)
    for i in np.where(~ok)[0]:
        g = geoms[i]
        add_finding(
            qa,
            "bad_geometry",
            "structures",
            f"Structure has {'no' if g is None or g.is_empty else g.geom_type} "
            "geometry (a point is needed); it is left out of the network.",
            fid=ids[i],
            fix="Give the structure a point location.",
        )
    xy = np.full((len(df), 2), np.nan)
    if ok.any():
        xy[ok] = shapely.get_coordinates(geoms[ok])[:, :2]
    # duplicate ids
    seen: dict[str, int] = {}
    uniq = ids.copy()
    for i, v in enumerate(ids):
        if v in seen:
            k = 2
            while f"{v}~{k}" in seen:
                k += 1
            uniq[i] = f"{v}~{k}"
            add_finding(
                qa,
                "duplicate_feature",
                "structures",
                f"Structure id '{v}' is used by more than one structure; this one "
                f"is called '{uniq[i]}' in the network.",
                fid=v,
                xy=xy[i] if ok[i] else None,
                fix="Give every structure a unique id.",
                column="struct_id",
            )
        seen[uniq[i]] = i
    # coincident structures share one node: an outfall among them (so the network keeps
    # its outfall whatever the order of the rows), else the first
    n = len(df)
    primary = np.arange(n)
    okidx = np.where(ok)[0]
    if len(okidx) > 1:
        tree = cKDTree(xy[okidx])
        pairs = tree.query_pairs(cfg.coincident_tol, output_type="ndarray")
        if len(pairs):
            m = coo_matrix(
                (np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                shape=(len(okidx), len(okidx)),
            )
            _, lab = connected_components(m, directed=False)
            not_outfall = np.asarray(kinds, dtype=object)[okidx] != "outfall"
            key = pd.Series(not_outfall.astype(np.int64) * len(okidx) + np.arange(len(okidx)))
            first = key.groupby(lab).transform("min").to_numpy() % len(okidx)
            primary[okidx] = okidx[first]
            for i in okidx[first != np.arange(len(okidx))]:
                p = primary[i]
                add_finding(
                    qa,
                    "duplicate_feature",
                    "structures",
                    f"Structure '{uniq[i]}' lies at the same coordinates as "
                    f"'{uniq[p]}'; both are treated as one network node "
                    f"'{uniq[p]}'.",
                    fid=uniq[i],
                    xy=xy[i],
                    fix="Delete the duplicate structure or move it to its true place.",
                )
    is_primary = ok & (primary == np.arange(n))
    tree_idx = np.where(is_primary)[0]
    id_index: dict[str, int] = {}
    for i in np.where(ok)[0][::-1]:
        id_index[ids[i]] = int(primary[i])
    return StructureTable(
        input_ids=ids,
        ids=uniq,
        kind=kinds,
        invert_elev=column_values(df, "invert_elev", kind="float"),
        rim_elev=column_values(df, "rim_elev", kind="float"),
        has_point=ok,
        xy=xy,
        primary=primary,
        is_primary=is_primary,
        tree_rows=tree_idx,
        tree=cKDTree(xy[tree_idx]) if len(tree_idx) else None,
        id_index=id_index,
    )


def read_conveyances(ws: Workspace, cfg: BuildConfig, qa: QAReport) -> ConveyanceTable:
    """Usable line parts: multi-part lines merged or split, bad and zero-length lines out (QA)."""
    df = ws.layers["conveyances"]
    ids = filled_ids(column_values(df, "conv_id"), df, "conveyances")
    cols = {
        "kind": column_values(df, "kind"),
        "from_id": column_values(df, "from_id"),
        "to_id": column_values(df, "to_id"),
        "flow_dir": column_values(df, "flow_dir"),
        "us_invert": column_values(df, "us_invert", kind="float"),
        "ds_invert": column_values(df, "ds_invert", kind="float"),
        "diameter_in": column_values(df, "diameter_in", kind="float"),
    }
    rows: list[int] = []
    geoms: list[Any] = []
    cids: list[str] = []
    seen: set[str] = set()
    gv = df.geometry.values
    gv = np.asarray(shapely.force_2d(np.asarray(gv, dtype=object)), dtype=object)
    simple = (
        (shapely.get_type_id(gv) == 1)
        & ~shapely.is_empty(gv)
        & (shapely.length(gv) > cfg.coincident_tol)
    )
    dup = pd.Series(ids).duplicated(keep="first").to_numpy()
    fast = simple & ~dup
    seen.update(ids[fast])
    slow_idx = np.where(~fast)[0]
    for i in slow_idx:
        g = gv[i]
        cid = ids[i]
        if cid in seen:
            k = 2
            while f"{cid}~{k}" in seen:
                k += 1
            add_finding(
                qa,
                "duplicate_feature",
                "conveyances",
                f"Conveyance id '{cid}' is used more than once; this one is called '{cid}~{k}'.",
                fid=cid,
                fix="Give every conveyance a unique id.",
                column="conv_id",
            )
            cid = f"{cid}~{k}"
        seen.add(cid)
        parts = _line_parts(g)
        if not parts:
            what = "no geometry" if g is None or g.is_empty else f"a {g.geom_type}"
            add_finding(
                qa,
                "bad_geometry",
                "conveyances",
                f"Conveyance has {what} (a line is needed); it is left out.",
                fid=cid,
                fix="Redraw it as a line.",
            )
            continue
        if len(parts) > 1:
            c0 = shapely.get_coordinates(parts[0])[0]
            add_finding(
                qa,
                "multipart_line",
                "conveyances",
                f"Conveyance is a multi-part line whose {len(parts)} parts do not "
                f"join; each part becomes its own edge ('{cid}.1' ...).",
                fid=cid,
                xy=c0,
                fix="Merge or split the parts in the source layer.",
            )
        for k, part in enumerate(parts):
            coords = shapely.get_coordinates(part)
            length = float(part.length)
            if len(coords) < 2 or length <= cfg.coincident_tol:
                add_finding(
                    qa,
                    "zero_length_conveyance",
                    "conveyances",
                    "Conveyance has zero length (one vertex, or all vertices at "
                    "one point); it is left out of the network.",
                    fid=cid,
                    xy=coords[0] if len(coords) else None,
                    fix="Redraw it between the structures it joins, or delete it.",
                )
                continue
            rows.append(i)
            geoms.append(shapely.LineString(coords[:, :2]))
            cids.append(cid if len(parts) == 1 else f"{cid}.{k + 1}")
    rows_all = np.r_[np.where(fast)[0], np.array(rows, dtype=int)]
    geoms_all = np.r_[gv[fast], np.array(geoms, dtype=object)] if rows else gv[fast]
    cids_all = np.r_[ids[fast], np.array(cids, dtype=object)] if rows else ids[fast]
    order = np.argsort(rows_all, kind="stable")
    rows = list(rows_all[order])
    geoms = list(geoms_all[order])
    cids = list(cids_all[order])
    if not rows:
        raise DataError(
            "The conveyances layer has no usable line (every feature is empty, a point "
            "or of zero length). Fix: check that the right layer is mapped to "
            "'conveyances'."
        )
    r = np.array(rows)
    geom = np.array(geoms, dtype=object)
    return ConveyanceTable(
        source_row=r,
        ids=np.array(cids, dtype=object),
        geometry=geom,
        kind=cols["kind"][r],
        from_id=cols["from_id"][r],
        to_id=cols["to_id"][r],
        flow_dir=cols["flow_dir"][r],
        us_invert=cols["us_invert"][r].astype(float),
        ds_invert=cols["ds_invert"][r].astype(float),
        diameter_in=cols["diameter_in"][r].astype(float),
        start_xy=shapely.get_coordinates(shapely.get_point(geom, 0))[:, :2],
        end_xy=shapely.get_coordinates(shapely.get_point(geom, -1))[:, :2],
        length=shapely.length(geom),
    )


def water_tree(ws: Workspace) -> Any:
    """STRtree of the waterbody geometries, or None without a (non-empty) water layer."""
    wb = ws.layers.get("waterbodies")
    if wb is None or not len(wb):
        return None
    wg = np.array([g for g in wb.geometry.values if g is not None and not g.is_empty], dtype=object)
    return shapely.STRtree(wg) if len(wg) else None


def _line_parts(geom: Any) -> list[Any]:
    """LineString parts of a (Multi)LineString; multi-part lines merged when they chain."""
    if geom is None or geom.is_empty:
        return []
    gt = geom.geom_type
    if gt == "LineString":
        return [geom]
    if gt == "MultiLineString":
        merged = shapely.line_merge(geom)
        if merged.geom_type == "LineString":
            return [merged]
        return [g for g in merged.geoms if not g.is_empty]
    if gt == "GeometryCollection":
        out: list[Any] = []
        for g in geom.geoms:
            out.extend(_line_parts(g))
        return out
    return []
