"""Checks of the canonical layers into QA: geometry, ids, required and legal layers, loose ends."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ..core import schema
from ..core.nulls import is_blank_or_null_marker
from ..core.qa import QAReport
from ..core.schema import LEGAL_LAYERS
from .crs import metres_to_crs_units

__all__ = ["TOUCH_TOLERANCE_M"]

_GEOM_FAMILY = {
    "Point": ("Point", "MultiPoint"),
    "LineString": ("LineString", "MultiLineString"),
    "Polygon": ("Polygon", "MultiPolygon"),
    "Line/Polygon": ("LineString", "MultiLineString", "Polygon", "MultiPolygon"),
}


def _check_layers(
    out_layers: dict[str, Any],
    work_crs: CRS | None,
    report: QAReport,
    wanted: Collection[str] | None = None,
) -> None:
    """Checks across the canonical layers: ids, required and legal layers, loose ends
    (``wanted``: the roles asked for; the absence of others is not reported)."""
    _ids(out_layers, report)
    _check_required_roles(out_layers, report, wanted)
    _check_legal_layers(out_layers, report, wanted)
    if work_crs is not None and not report.has_errors:
        _ends_without_structure(out_layers, work_crs, report)


def _check_geometries(
    role: str, label: str, gdf: gpd.GeoDataFrame, report: QAReport, repair: bool
) -> gpd.GeoDataFrame:
    spec = schema.LAYERS[role]
    allowed = _GEOM_FAMILY[spec.geometry]  # type: ignore[index]
    id_col = spec.id_column
    geom = gdf.geometry
    missing = geom.isna() | geom.is_empty
    if missing.any():
        _warn_features(
            report,
            "empty_geometry",
            label,
            _ids_for(gdf, missing, id_col),
            n=int(missing.sum()),
            what="feature(s) have no geometry and were left out.",
            fix="Digitise or delete these features.",
        )
        gdf = gdf[~missing].copy()
        geom = gdf.geometry
    bad = _nonfinite(gdf)
    if bad.any():
        report.error(
            "nonfinite_coordinates",
            label,
            f"{int(bad.sum())} feature(s) of layer '{label}' have a coordinate that is not a "
            "number (NaN or infinite).",
            feature_id=", ".join(_ids_for(gdf, bad, id_col)[:20]),
            count=int(bad.sum()),
            fix="Correct or delete these features in your GIS (--repair-geometry cannot "
            "guess a coordinate that is not a number).",
        )
        return gdf[~bad].copy()
    types = geom.geom_type
    wrong = ~types.isin(allowed)
    if wrong.any():
        kinds = sorted(set(types[wrong]))
        report.error(
            "wrong_geometry_type",
            label,
            f"Layer '{label}' is used as {role}, which needs {spec.geometry} geometries, but "
            f"{int(wrong.sum())} feature(s) are {kinds}.",
            feature_id=", ".join(_ids_for(gdf, wrong, id_col)[:10]),
            count=int(wrong.sum()),
            fix=f"Name a {spec.geometry} layer for {role} with --layer {role}=LAYER.",
        )
        return gdf
    if spec.geometry in ("Polygon", "Line/Polygon") or role == "parcels":
        invalid = ~gdf.geometry.is_valid
        if invalid.any():
            ids = _ids_for(gdf, invalid, id_col)
            if repair:
                gdf = gdf.copy()
                fixed = shapely.make_valid(gdf.geometry.values[invalid.values])
                if spec.geometry == "Polygon":
                    fixed = np.array([_polygonal(g) for g in fixed], dtype=object)
                gdf.loc[invalid, "geometry"] = fixed
                _warn_features(
                    report,
                    "repaired_geometry",
                    label,
                    ids,
                    n=int(invalid.sum()),
                    what="invalid geometries were repaired (make_valid).",
                    fix="Check the repaired shapes; fix them in your GIS to silence this.",
                )
            else:
                reasons = shapely.is_valid_reason(gdf.geometry.values[invalid.values])
                for fid, reason in list(zip(ids, reasons, strict=False))[:50]:
                    report.error(
                        "invalid_geometry",
                        label,
                        f"Invalid geometry: {reason}.",
                        feature_id=fid,
                        fix="Repair it in your GIS, or re-run with --repair-geometry.",
                    )
                if len(ids) > 50:
                    report.error(
                        "invalid_geometry",
                        label,
                        f"... and {len(ids) - 50} more invalid geometries.",
                        count=len(ids) - 50,
                        fix="Re-run with --repair-geometry.",
                    )
    if role in ("conveyances",):
        gdf = _explode_lines(label, gdf, report)
    if spec.geometry == "Point":
        multi = gdf.geometry.geom_type == "MultiPoint"
        if multi.any():
            gdf = gdf.copy()
            gdf.loc[multi, "geometry"] = gdf.geometry[multi].centroid
    return gdf


def _nonfinite(gdf: gpd.GeoDataFrame) -> pd.Series:
    """Which features have a NaN or infinite coordinate (x, y, or z)."""
    coords, index = shapely.get_coordinates(gdf.geometry.values, include_z=True, return_index=True)
    flags = np.zeros(len(gdf), dtype=bool)
    rows = ~np.isfinite(coords[:, :2]).all(axis=1)
    if coords.shape[1] > 2:  # a 2D geometry's z is NaN: only a given z that is infinite
        rows |= np.isinf(coords[:, 2])
    flags[index[rows]] = True
    return pd.Series(flags, index=gdf.index)


def _warn_features(
    report: QAReport, code: str, label: str, ids: list[str], *, n: int, what: str, fix: str
) -> None:
    """A warning about ``n`` features of layer ``label`` (``"{n} {what}"``; the first 20
    ids named)."""
    report.warning(code, label, f"{n} {what}", feature_id=", ".join(ids[:20]), count=n, fix=fix)


def _polygonal(g: Any) -> Any:
    if g.geom_type in ("Polygon", "MultiPolygon"):
        return g
    polys = [p for p in getattr(g, "geoms", []) if p.geom_type in ("Polygon", "MultiPolygon")]
    return shapely.union_all(polys) if polys else g


def _explode_lines(label: str, gdf: gpd.GeoDataFrame, report: QAReport) -> gpd.GeoDataFrame:
    multi = gdf.geometry.geom_type == "MultiLineString"
    if not multi.any():
        return gdf
    gdf = gdf.copy()
    merged = shapely.line_merge(gdf.geometry.values[multi.values])
    gdf.loc[multi, "geometry"] = merged
    still = gdf.geometry.geom_type == "MultiLineString"
    n_merged = int(multi.sum() - still.sum())
    if n_merged:
        report.info(
            "multipart_merged",
            label,
            f"{n_merged} multi-part line(s) had touching parts and were merged into one line.",
            count=n_merged,
        )
    if still.any():
        ids = _ids_for(gdf, still, "conv_id")
        parts = gdf[still].explode(index_parts=True)
        k = parts.index.get_level_values(1)
        parts = parts.reset_index(level=1, drop=True)
        parts["conv_id"] = [
            pd.NA if is_blank_or_null_marker(cid) else f"{cid}.{j + 1}"
            for cid, j in zip(parts["conv_id"], k, strict=True)
        ]
        gdf = pd.concat([gdf[~still], parts]).sort_index(kind="stable")
        gdf = gpd.GeoDataFrame(gdf, geometry="geometry", crs=parts.crs)
        report.warning(
            "multipart_split",
            label,
            f"{int(still.sum())} multi-part line(s) with separate parts were split into single lines "
            "(ids get .1, .2, ...).",
            feature_id=", ".join(ids[:20]),
            count=int(still.sum()),
            fix="Check whether each part is really a separate conveyance.",
        )
    return gdf


def _ids_for(df: pd.DataFrame, mask: pd.Series, id_col: str | None) -> list[str]:
    sub = df[mask]
    out = []
    for i, (_, row) in enumerate(sub.iterrows()):
        if i >= 200:
            break
        v = row.get(id_col) if id_col else None
        out.append(
            str(v)
            if v is not None and not is_blank_or_null_marker(v)
            else f"{row['src_layer']}:{row['src_fid']}"
        )
    return out


def _ids(layers: dict[str, Any], report: QAReport) -> None:
    """Unique ids: generated for structures/conveyances/outfalls; parcels must be unique."""
    for role, df in layers.items():
        spec = schema.LAYERS[role]
        col = spec.id_column
        if col is None or col not in df.columns:
            continue
        ids = df[col]
        blank = ids.isna()
        if role == "parcels":
            if blank.any():
                report.error(
                    "missing_id",
                    "parcels",
                    f"{int(blank.sum())} parcel(s) have no parcel_id.",
                    feature_id=", ".join(_ids_for(df, blank, None)[:20]),
                    column="parcel_id",
                    count=int(blank.sum()),
                    fix="Give every parcel its SBL / print key.",
                )
            dup = ids.duplicated(keep=False) & ~blank
            if dup.any():
                for pid in sorted(set(ids[dup]))[:50]:
                    n = int((ids == pid).sum())
                    report.error(
                        "duplicate_id",
                        "parcels",
                        f"parcel_id '{pid}' is used by {n} parcels.",
                        feature_id=str(pid),
                        column="parcel_id",
                        fix="Make parcel ids unique (merge the pieces into one multipolygon, "
                        "or correct the id).",
                    )
            continue
        if not spec.generate_ids:
            continue
        gen = df["src_layer"].astype(str) + ":" + df["src_fid"].astype(str)
        if blank.any():
            for layer, n in df[blank].groupby("src_layer").size().items():
                sub = blank & (df["src_layer"] == layer)
                report.warning(
                    "missing_id",
                    str(layer),
                    f"{int(n)} {role} have no {col}; stable ids '<layer>:<row>' were generated.",
                    feature_id=", ".join(gen[sub].head(20)),
                    column=col,
                    count=int(n),
                    fix=f"Give every feature an id in '{col}' (or map the id column with --field).",
                )
        dup = ids.duplicated(keep="first") & ~blank
        if dup.any():
            for cid in sorted(set(ids[dup]))[:50]:
                rows = df.index[(ids == cid).values]
                report.warning(
                    "duplicate_id",
                    str(df.loc[rows[0], "src_layer"]),
                    f"{col} '{cid}' is used by {len(rows)} {role}; all but the first got generated ids.",
                    feature_id=str(cid),
                    column=col,
                    count=len(rows) - 1,
                    fix="Make the ids unique in your data.",
                )
        new = ids.where(~blank & ~dup, gen)
        # generated ids must not collide with real ones
        clash = new.duplicated(keep=False)
        if clash.any():
            new = new.where(~(clash & (blank | dup)), gen + "#gen")
        df[col] = new.astype(object)


#: Distance within which a conveyance end counts as touching a structure (validation only;
#: the network step has its own snap tolerance).
TOUCH_TOLERANCE_M = 1.5


def _ends_without_structure(layers: dict[str, Any], crs: CRS, report: QAReport) -> None:
    conv, struct = layers.get("conveyances"), layers.get("structures")
    if conv is None or struct is None or not len(conv) or not len(struct):
        return
    from scipy.spatial import cKDTree

    geoms = conv.geometry.values
    starts = shapely.get_coordinates(shapely.get_point(geoms, 0))
    ends = shapely.get_coordinates(shapely.get_point(geoms, -1))
    pts = shapely.get_coordinates(struct.geometry.values)
    if not len(pts) or len(starts) != len(geoms) or len(ends) != len(geoms):
        return
    tol = metres_to_crs_units(crs, TOUCH_TOLERANCE_M)
    tree = cKDTree(pts)
    d0, _ = tree.query(starts, distance_upper_bound=tol)
    d1, _ = tree.query(ends, distance_upper_bound=tol)
    loose = np.isinf(d0).astype(int) + np.isinf(d1).astype(int)
    n = int(loose.sum())
    if n:
        ids = [str(c) for c in conv["conv_id"].values[loose > 0][:20]]
        report.info(
            "end_without_structure",
            "conveyances",
            f"{n} of {2 * len(conv)} conveyance ends touch no structure within "
            f"{TOUCH_TOLERANCE_M} m ({n / (2 * len(conv)):.1%}); the network step snaps them to "
            "structures or other conveyances, or reports them.",
            feature_id=", ".join(ids),
            count=n,
            fix="Check the QA layer of `ms4map trace`/`drainage` for ends it could not connect.",
        )


def _check_required_roles(
    layers: dict[str, Any], report: QAReport, wanted: Collection[str] | None = None
) -> None:
    # A workspace may hold any subset of layers (an outfall inventory alone is fine); the
    # steps that need a layer say so themselves.  Here we only say what is missing.
    missing = [
        r
        for r in ("parcels", "structures", "conveyances")
        if r not in layers and (wanted is None or r in wanted)
    ]
    if missing and layers:
        report.note(
            "Layers not in this workspace: "
            + ", ".join(missing)
            + " (steps that need them will say so)."
        )


def _check_legal_layers(
    layers: dict[str, Any], report: QAReport, wanted: Collection[str] | None = None
) -> None:
    """Warn for each legal layer Condition A depends on that is missing or incomplete.

    Without them the screening answers are undetermined, never "no"; the warning names
    what the layer is needed for and the fix.  Only for workspaces with parcels (the
    ones that screen sites); a layer not ``wanted`` (when given) is not missing.
    """
    if "parcels" not in layers:
        return
    for role, (what, needed, fix) in LEGAL_LAYERS.items():
        if role not in layers and (wanted is None or role in wanted):
            report.warning(
                "missing_legal_layer",
                role,
                f"{what[0].upper()}{what[1:]} (layer `{role}`). It is needed for {needed}; "
                "without it Condition A is undetermined wherever it would be 'no'.",
                fix=fix[0].upper() + fix[1:] + ".",
            )
    wbs = layers.get("waterbodies")
    if wbs is not None and len(wbs):
        ids = wbs["wb_id"] if "wb_id" in wbs.columns else pd.Series(pd.NA, index=wbs.index)
        blank = ids.map(schema.id_text).isna().to_numpy()
        if blank.any():
            names = wbs["name"] if "name" in wbs.columns else pd.Series(None, index=wbs.index)
            shown = [
                str(v) if not is_blank_or_null_marker(v) else f"row {i + 1}"
                for i, v in zip(np.flatnonzero(blank), names.to_numpy()[blank], strict=True)
            ]
            report.warning(
                "waterbody_no_wb_id",
                "waterbodies",
                f"{int(blank.sum())} waterbod(ies) have no `wb_id` (PWL ID): "
                f"{', '.join(shown[:10])}. Condition A for runoff reaching them directly is "
                "undetermined (no 303(d) listing can be looked up).",
                feature_id=", ".join(shown[:50]),
                count=int(blank.sum()),
                column="wb_id",
                fix="Fill `wb_id` with the NYSDEC PWL ID (NNNN-NNNN) of each waterbody.",
            )
    of = layers.get("outfalls")
    if of is None:
        if wanted is not None and "outfalls" not in wanted:
            return
        report.warning(
            "missing_legal_layer",
            "outfalls",
            "No outfalls layer: outfalls are inferred from outfall structures and pipe ends "
            "at a waterbody, and they carry no receiving water or PWL ID, so Condition A "
            "for what drains through them is undetermined.",
            fix="Add the `outfalls` layer with `receiving_water` and `pwl_id` for each outfall.",
        )
        return
    wb = layers.get("waterbodies")
    unique_names: set[str] = set()
    if wb is not None and "name" in wb.columns and "wb_id" in wb.columns:
        named = wb.dropna(subset=["name", "wb_id"])
        low = named["name"].astype(str).str.strip().str.lower()
        n_ids = named.groupby(low)["wb_id"].nunique()
        unique_names = set(n_ids[n_ids == 1].index)
    pwl = of["pwl_id"] if "pwl_id" in of.columns else pd.Series(pd.NA, index=of.index)
    rw = (
        of["receiving_water"]
        if "receiving_water" in of.columns
        else pd.Series(pd.NA, index=of.index)
    )
    imp = layers.get("impairments")
    listed_ids: set[str] = set()
    if imp is not None and "wb_id" in imp.columns:
        listed_ids = {t for t in map(schema.id_text, imp["wb_id"]) if t is not None}
    given = pwl.map(schema.id_text)
    bad_id = given.notna() & given.map(
        lambda t: t is not None and schema.normalize_pwl_id(t) is None and t not in listed_ids
    ).astype(bool)
    for i in np.flatnonzero(bad_id.to_numpy()):
        fid = of["outfall_id"].iloc[i] if "outfall_id" in of.columns else None
        fid = None if is_blank_or_null_marker(fid) else str(fid)
        report.warning(
            "outfall_bad_pwl_id",
            "outfalls",
            f"Outfall {fid or f'at row {i + 1}'}: `pwl_id` {given.iloc[i]!r} is not a NYSDEC "
            "PWL ID (NNNN-NNNN) and is not in the 303(d) list (`impairments`): Condition A "
            "for what drains through it is undetermined.",
            feature_id=fid,
            column="pwl_id",
            fix="Write the outfall's `pwl_id` as NNNN-NNNN (e.g. 1101-0012, without the "
            "'NY' of ATTAINS, which is read as well), or clear it and name the water in "
            "`receiving_water`.",
        )
    has_pwl = given.notna()  # a bad id has its own warning above
    by_name = rw.map(
        lambda v: not is_blank_or_null_marker(v) and str(v).strip().lower() in unique_names
    )
    bad = ~(has_pwl | by_name)
    if bad.any():
        ids = [str(v) for v in of.loc[bad, "outfall_id"]] if "outfall_id" in of.columns else []
        report.warning(
            "outfall_no_receiving_water",
            "outfalls",
            f"{int(bad.sum())} outfall(s) have no `pwl_id` and no `receiving_water` naming "
            "exactly one waterbody: Condition A for what drains through them is undetermined.",
            feature_id=", ".join(ids[:50]) or None,
            count=int(bad.sum()),
            column="pwl_id",
            fix="Fill `pwl_id` (NYSDEC PWL ID NNNN-NNNN) or `receiving_water` of these outfalls.",
        )
