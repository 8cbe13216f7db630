"""One site of a pipeline result: resolve it, find what it reaches, and evaluate_site.

A site is parcel id(s) or a polygon with its CRS (:func:`_resolve_site`); its TMDL
watersheds (:func:`tmdl_hits_for`) and listed waters within ``tributary_reach_km``
(:func:`_reach_hits`) feed :func:`ms4map.rules.conditions.determination.determine`;
:class:`SiteEvidence` records what the determination was made from (the report draws its
map from it, :mod:`ms4map.outputs.report.site_map`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ... import pipeline
from ...analysis import polygon_drainage
from ...core.errors import DataError, UsageError
from ...core.nulls import is_blank
from ...core.units import metres_per_unit
from ..profiles import Profile, load_profile
from ..waters import Waters
from .condition_a import four_a_links
from .determination import Determination, determine
from .document import SiteEvidence
from .inputs import SiteInfo, application_info, validate_inputs
from .summary import (
    MS4_KINDS,
    REACH_KINDS,
    _as_rows,
    ambiguous_mask,
    candidate_ids,
    candidate_rows,
    combine_parcel_rows,
    resolve_waterbody,
    water_ids,
)

if TYPE_CHECKING:
    from ...io import Workspace
    from ...pipeline import PipelineResult


ACRE_M2 = 4046.8564224


def _crs_unit_m(crs: Any) -> float:
    return metres_per_unit(crs, default=1.0)


def _run_pipeline(workspace: Workspace) -> PipelineResult:
    return pipeline.run(workspace)


def _outfall_points(result: PipelineResult, workspace: Workspace | None) -> dict[str, Any]:
    """Outfall id -> point (:func:`ms4map.pipeline.outfall_points`)."""
    return pipeline.outfall_points(result, workspace)


def tmdl_hits_for(
    waters: Waters, *, site_geom: Any, rows: pd.DataFrame, outfall_points: dict[str, Any]
) -> pd.DataFrame:
    """TMDL watersheds the site reaches: it lies in one, or an outfall or a direct-to-water
    waterbody it drains to does. Adds a ``how`` column (words for the reasons)."""
    tm = waters.tmdl_watersheds
    if tm is None or not len(tm):
        return pd.DataFrame()
    geoms, hows = [], []
    if site_geom is not None:
        geoms.append(site_geom)
        hows.append("lies in")
    for of in sorted(
        {
            str(o)
            for o in rows.loc[rows["target_kind"].isin(MS4_KINDS), "outfall_id"]
            if not is_blank(o)
        }
    ):
        if of in outfall_points:
            geoms.append(outfall_points[of])
            hows.append(f"drains through outfall {of} into")
    for r in rows[rows["target_kind"] == "water_direct"].to_dict("records"):
        wb = resolve_waterbody(r, waters)
        g = waters.waterbody_geometry(wb)
        if g is not None:
            geoms.append(g)
            hows.append(f"drains directly to {waters.name_of(wb) or wb}, in")
    hits = waters.tmdls_hit(geoms)
    hits = pd.DataFrame(hits.drop(columns="geometry", errors="ignore"))
    hits["how"] = [hows[int(i)] for i in hits["hit"]] if len(hits) else []
    hits["candidate"] = False
    cand = _candidate_tmdl_hits(waters, rows, outfall_points, hits.index)
    if len(cand):
        hits = pd.concat([hits, cand]) if len(hits) else cand
    links = four_a_links(waters)
    reached = rows[rows["target_kind"].isin(REACH_KINDS)]
    extra = []
    for wb in dict.fromkeys(w for w in water_ids(reached, waters) if w is not None):
        for label in links.get(wb, []):
            if label in hits.index or any(label in e.index for e in extra):
                continue
            e = pd.DataFrame(tm.loc[[label]].drop(columns="geometry"))
            e["hit"] = -1
            name = waters.name_of(wb)
            e["how"] = f"drains to {f'{name} ({wb})' if name else wb}, category 4a under"
            extra.append(e)
    if extra:
        hits = pd.concat([hits, *extra]) if len(hits) else pd.concat(extra)
    return hits if len(hits) else pd.DataFrame()


def _candidate_tmdl_hits(
    waters: Waters, rows: pd.DataFrame, outfall_points: dict[str, Any], seen: Any
) -> pd.DataFrame:
    """The TMDL watersheds (not in ``seen``) that only a candidate outfall of an ambiguous
    network path lies in, ``candidate`` True: the network cannot tell whether the flow
    goes there, so they can never decide a "yes" (nor allow a "no")."""
    ms4 = rows[rows["target_kind"].isin(MS4_KINDS).to_numpy() & ambiguous_mask(rows)]
    geoms, hows = [], []
    if not len(ms4):
        return pd.DataFrame()
    for cands in dict.fromkeys(ms4["outfall_candidates"].astype(str)):
        ids = candidate_ids(cands)
        for of in ids:
            if of in outfall_points:
                geoms.append(outfall_points[of])
                hows.append(
                    f"may drain through outfall {of} (one of the candidates {', '.join(ids)}) into"
                )
    if not geoms:
        return pd.DataFrame()
    hits = waters.tmdls_hit(geoms)
    hits = pd.DataFrame(hits.drop(columns="geometry", errors="ignore"))
    hits = hits[~hits.index.isin(list(seen))]
    if not len(hits):
        return pd.DataFrame()
    hits["how"] = [hows[int(i)] for i in hits["hit"]]
    hits["candidate"] = True
    return hits


def _classes(sel: pd.DataFrame) -> list[str | None]:
    if "prop_class" not in sel.columns:
        return [None] * len(sel)
    return [None if is_blank(v) else str(v) for v in sel["prop_class"]]


def _latlon_box(bounds: Any, crs: Any) -> tuple[float, float, float, float]:
    """``(south, west, north, east)`` in degrees of a bounding box in ``crs``."""
    from pyproj import Transformer

    t = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    x0, y0, x1, y1 = (float(v) for v in bounds)
    lon0, lat0, lon1, lat1 = t.transform_bounds(x0, y0, x1, y1)
    return lat0, lon0, lat1, lon1


def _fmt_lat(v: float) -> str:
    return f"{abs(v):.4f}° {'N' if v >= 0 else 'S'}"


def _fmt_lon(v: float) -> str:
    return f"{abs(v):.4f}° {'E' if v >= 0 else 'W'}"


def _outside_town_message(geom: Any, parcels: Any, crs: Any, src_geom: Any, src_crs: Any) -> str:
    """A polygon that touches no parcel: where it is and where the town is, in lat/long,
    with a hint when swapping its coordinates (latitude/longitude) puts it in town."""
    import geopandas as gpd
    import shapely

    s, w, n, e = _latlon_box(geom.bounds, crs)
    ps, pw, pn, pe = _latlon_box(parcels.total_bounds, crs)
    msg = (
        f"The site polygon lies outside the town: it touches no parcel. The polygon lies at "
        f"{_fmt_lat((s + n) / 2)}, {_fmt_lon((w + e) / 2)}; the town's parcels lie between "
        f"{_fmt_lat(ps)} and {_fmt_lat(pn)}, {_fmt_lon(pw)} and {_fmt_lon(pe)}."
    )
    try:
        swapped = shapely.transform(src_geom, lambda xy: xy[:, ::-1])
        sw = gpd.GeoSeries([swapped], crs=src_crs).to_crs(crs).iloc[0]
        hit = sw.is_valid and len(parcels.sindex.query(sw, predicate="intersects")) > 0
    except Exception:  # noqa: BLE001 - a hint only: a swap outside the CRS's range
        hit = False
    if hit:
        return msg + (
            " With its two coordinates swapped it lies in the town: the corners look like "
            "longitude, latitude. Fix: give each corner as 'latitude, longitude' (the "
            f"latitude first, e.g. {(ps + pn) / 2:.5f}, {(pw + pe) / 2:.5f} in this town)."
        )
    return msg + " Fix: check the polygon's corners and their coordinate system."


def _resolve_site(
    site: Any, workspace: Workspace, result: PipelineResult, *, site_crs: Any = None
) -> tuple[SiteInfo, pd.DataFrame, Any]:
    import geopandas as gpd
    from shapely.geometry.base import BaseGeometry

    parcels = workspace.layers.get("parcels")
    if parcels is None or not len(parcels):
        raise DataError(
            "The workspace has no parcels layer; a site needs parcels to be "
            "located. Fix: add a 'parcels' layer to the workspace."
        )
    unit = _crs_unit_m(workspace.crs)
    drainage = getattr(result, "drainage", None)
    if isinstance(site, (str, list, tuple)) and not isinstance(site, BaseGeometry):
        ids = (
            [s.strip() for s in site.split(",")]
            if isinstance(site, str)
            else [str(s).strip() for s in site]
        )
        ids = [i for i in ids if i]
        if not ids:
            raise UsageError("No parcel id given for the site.")
        known = set(parcels["parcel_id"].astype(str))
        unknown = [i for i in ids if i not in known]
        if unknown:
            import difflib

            hints = {u: difflib.get_close_matches(u, list(known), n=3) for u in unknown}
            hint = "; ".join(
                f"{u!r} (did you mean {', '.join(h)}?)" if h else repr(u) for u, h in hints.items()
            )
            raise DataError(
                f"Unknown parcel id(s) in layer 'parcels': {hint}. Fix: use the "
                "parcel_id (SBL / print key) as in the parcels layer."
            )
        sel = parcels[parcels["parcel_id"].astype(str).isin(ids)]
        areas = dict(
            zip(sel["parcel_id"].astype(str), sel.geometry.area * unit * unit, strict=True)
        )
        geom = sel.geometry.union_all()
        if drainage is None:
            raise DataError("The pipeline result has no drainage table.")
        rows = combine_parcel_rows(drainage, ids, areas)
        dom = sel.iloc[int(np.argmax(sel.geometry.area.to_numpy()))]
        info = _site_info(
            ", ".join(ids),
            "parcels",
            ids,
            float(sum(areas.values()) / ACRE_M2),
            dom=dom,
            sel=sel,
            geometry=geom,
            workspace=workspace,
        )
        return info, rows, sel
    # polygon
    label = "drawn polygon"
    src = getattr(site, "attrs", {}).get("source_name") if hasattr(site, "attrs") else None
    if src:
        label = f"polygon from {src}"
    if isinstance(site, (gpd.GeoDataFrame, gpd.GeoSeries)):
        if site.crs is None:
            raise DataError(
                "The site polygon has no CRS. Fix: set it (e.g. "
                "gdf.set_crs('EPSG:26918')) or pass site_crs=."
            )
        src_geom, src_crs = (
            (site.geometry.union_all() if isinstance(site, gpd.GeoDataFrame) else site.union_all()),
            site.crs,
        )
        geom = gpd.GeoSeries([src_geom], crs=src_crs).to_crs(workspace.crs).iloc[0]
    elif isinstance(site, BaseGeometry):
        if site_crs is None:
            raise DataError(
                "The site polygon has no CRS. Fix: pass site_crs= (e.g. "
                "'EPSG:26918'), or give a GeoSeries with its CRS."
            )
        src_geom, src_crs = site, site_crs
        geom = gpd.GeoSeries([site], crs=site_crs).to_crs(workspace.crs).iloc[0]
    else:
        raise UsageError(
            f"site must be a parcel id, a list of parcel ids or a polygon with "
            f"its CRS; got {type(site).__name__}."
        )
    if geom is None or geom.is_empty or geom.geom_type not in ("Polygon", "MultiPolygon"):
        raise DataError(f"The site must be a polygon; got {getattr(geom, 'geom_type', geom)}.")
    if not geom.is_valid:
        import shapely

        geom = shapely.make_valid(geom)
    idx = parcels.sindex.query(geom, predicate="intersects")
    if not len(idx):
        raise DataError(_outside_town_message(geom, parcels, workspace.crs, src_geom, src_crs))
    sel, inter = _overlapping_parcels(parcels.iloc[idx], geom, unit)
    rows = _as_rows(polygon_drainage(result, geom))
    dom = sel.iloc[int(np.argmax(inter))]
    info = _site_info(
        label,
        "polygon",
        [str(p) for p in sel["parcel_id"]],
        float(geom.area * unit * unit / ACRE_M2),
        dom=dom,
        sel=sel,
        geometry=geom,
        workspace=workspace,
    )
    return info, rows, sel


#: A drawn polygon's parcels: overlap of more than this many square metres ...
SITE_OVERLAP_MIN_M2 = 1.0


#: ... and at least this share of the parcel's area or of the polygon's.
SITE_OVERLAP_MIN_SHARE = 0.01


def _overlapping_parcels(cand: Any, geom: Any, unit: float) -> tuple[Any, np.ndarray]:
    """The parcels of ``cand`` (those the polygon ``geom`` intersects) that the polygon
    overlaps by area, and the overlap areas (CRS units).

    A parcel is the site's when the overlap is more than :data:`SITE_OVERLAP_MIN_M2`
    (1 m2) and at least :data:`SITE_OVERLAP_MIN_SHARE` (1 %) of the parcel's area or of
    the polygon's: a neighbour touching it along an edge or at a corner, or under a
    sliver of a boundary drawn a little wide, is not; a small site inside a large farm
    parcel is.  When no parcel passes, those with any overlap are kept, and when none
    has any (a polygon between parcels, touching them), those it touches
    (docs/screening.md).
    """
    area = cand.geometry.area.to_numpy()
    inter = cand.geometry.intersection(geom).area.to_numpy()
    m2 = inter * unit * unit
    share = np.maximum(
        np.divide(inter, area, out=np.zeros_like(inter), where=area > 0),
        inter / geom.area if geom.area > 0 else 0.0,
    )
    keep = (m2 > SITE_OVERLAP_MIN_M2) & (share >= SITE_OVERLAP_MIN_SHARE)
    if not keep.any():
        keep = inter > 0
    if not keep.any():
        keep = np.ones(len(cand), dtype=bool)
    return cand[keep], inter[keep]


def _site_info(
    label: str,
    kind: str,
    parcel_ids: list[str],
    area_acres: float,
    *,
    dom: Any,
    sel: Any,
    geometry: Any,
    workspace: Workspace,
) -> SiteInfo:
    """The :class:`SiteInfo` of a resolved site; ``dom`` is its dominant parcel (class and
    address), ``sel`` all its parcels."""
    return SiteInfo(
        label=label,
        kind=kind,
        parcel_ids=parcel_ids,
        area_acres=area_acres,
        prop_class=None if is_blank(dom.get("prop_class")) else str(dom["prop_class"]),
        geometry=geometry,
        crs=workspace.crs.to_string(),
        address=None if is_blank(dom.get("address")) else str(dom["address"]),
        prop_classes=_classes(sel),
    )


def _reach_hits(
    rows: pd.DataFrame, waters: Waters, profile: Profile, crs: Any
) -> dict[str, set[str]]:
    """``receiving wb_id -> listed wb_ids within tributary_reach_km`` for the waters the
    rows reach, and the candidate waters of their ambiguous network paths (empty when the profile's ``tributary_reach_km`` is 0)."""
    if profile.tributary_reach_km <= 0:
        return {}
    dist = profile.tributary_reach_km * 1000.0 / _crs_unit_m(crs)
    reach = rows["target_kind"].isin(REACH_KINDS)
    wbs = rows["wb"] if "wb" in rows.columns else water_ids(rows, waters)
    out: dict[str, set[str]] = {}
    cands = candidate_rows(rows[reach], waters)["wb"].dropna().tolist()  # ambiguous paths
    for wb in dict.fromkeys([*wbs[reach].dropna().tolist(), *cands]):
        g = waters.waterbody_geometry(wb)
        if wb and g is not None:
            # waters whose 303(d) CSV rows could not be read count as "may be listed"
            near_skipped = waters.waters_within(g, dist, set(waters.skipped) - {""})
            out[wb] = waters.listed_within(g, dist) | near_skipped
    return out


#: An argument not given (``evaluate_site``'s positional ones).
class _NotGiven:
    """The default of ``evaluate_site``'s positional arguments: the old keyword form
    gives them by name (a fixed repr, so the printed signature is the same every run)."""

    def __repr__(self) -> str:
        return "<not given>"


_NOT_GIVEN: Any = _NotGiven()


def evaluate_site(  # noqa: PLR0913 - a public entry point's inputs
    result: PipelineResult = _NOT_GIVEN,
    site: Any = _NOT_GIVEN,
    /,
    *,
    disturbed_acres: float,
    project_type: str | None = None,
    common_plan_acres: float | None = None,
    exemption: str | None = None,
    profile: str | Profile | None = "stillwater",
    site_crs: Any = None,
    waters: Waters | None = None,
    labels: dict[str, str] | None = None,
    application: dict[str, Any] | None = None,
    workspace: Workspace | None = None,
    **old: Any,
) -> Determination:
    """Condition A/B/C determination for one site of a pipeline result.

    ``evaluate_site(result, site, disturbed_acres=...)``; the workspace (parcels, waters,
    outfalls) is the result's (``result.workspace``).  The old form
    ``evaluate_site(site, workspace=ws, result=None, ...)`` (one positional argument, or
    ``site=`` / ``result=`` keywords) gives the same answer with a
    :class:`DeprecationWarning`; without ``result`` it runs the pipeline (cached).

    Parameters
    ----------
    result : PipelineResult
        The pipeline run of the workspace (:func:`ms4map.pipeline.run`).
    site : str, list of str, shapely Polygon, GeoSeries or GeoDataFrame
        A parcel id (``"a,b"`` for several), a list of parcel ids, or a polygon with
        its CRS (a GeoSeries/GeoDataFrame carries it; a bare shapely polygon needs
        ``site_crs``).
    disturbed_acres : float
    project_type : str, optional
        One of :data:`PROJECT_TYPES`; guessed from the parcel's property class if omitted.
    common_plan_acres : float, optional
        Acreage of the larger common plan of development or sale.
    exemption : str, optional
        One of :data:`ms4map.profiles.EXEMPTION_CODES`.
    profile : str, Path or Profile
        Municipality profile (default ``stillwater``).
    site_crs : CRS-like, optional
        CRS of a bare shapely polygon.
    waters : Waters, optional
        Replace the workspace's impaired-waters model (e.g. after a CSV import).
    labels : dict, optional
        How messages name the inputs (:data:`CLI_LABELS` for the command line, the
        app's field names in the app); default plain words (:data:`INPUT_LABELS`).
    application : dict, optional
        Applicant, project name, application number and date for the printed
        determination (:data:`APPLICATION_FIELDS`; see :func:`application_info`).
    workspace : Workspace, optional
        For a result without its workspace (else ``result.workspace``).

    Returns
    -------
    Determination

    Raises
    ------
    UsageError
        Bad acreage, project type or exemption code.
    DataError
        Unknown parcel id, polygon outside the town or without a CRS.
    """
    options = {
        "disturbed_acres": disturbed_acres,
        "project_type": project_type,
        "common_plan_acres": common_plan_acres,
        "exemption": exemption,
        "profile": profile,
        "site_crs": site_crs,
        "waters": waters,
        "labels": labels,
        "application": application,
    }
    if site is _NOT_GIVEN:  # the old form: evaluate_site(site, *, workspace, result=None)
        if result is not _NOT_GIVEN and "site" in old:
            raise TypeError("evaluate_site() got multiple values for argument 'site'")
        the_site = old.pop("site", _NOT_GIVEN) if result is _NOT_GIVEN else result
        if the_site is _NOT_GIVEN:
            raise TypeError("evaluate_site() missing 1 required argument: 'site'")
        old_result = old.pop("result", None)
        _no_other_keywords(old)
        if workspace is None:
            raise TypeError("evaluate_site() missing 1 required keyword-only argument: 'workspace'")
        warnings.warn(
            "evaluate_site(site, workspace=..., result=...) is deprecated and is removed in "
            "ms4map 0.3; use evaluate_site(result, site, ...) (the workspace is "
            "result.workspace).",
            DeprecationWarning,
            stacklevel=2,
        )
        return _evaluate(the_site, workspace, old_result, **options)
    _no_other_keywords(old)
    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    if ws is None:
        raise UsageError("evaluate_site needs the workspace: pass workspace=.")
    return _evaluate(site, ws, result, **options)


def _no_other_keywords(old: dict[str, Any]) -> None:
    if old:
        name = next(iter(old))
        raise TypeError(f"evaluate_site() got an unexpected keyword argument {name!r}")


def _evaluate(  # noqa: PLR0913 - evaluate_site's inputs
    site: Any,
    workspace: Workspace,
    result: PipelineResult | None,
    *,
    disturbed_acres: float,
    project_type: str | None,
    common_plan_acres: float | None,
    exemption: str | None,
    profile: str | Profile | None,
    site_crs: Any,
    waters: Waters | None,
    labels: dict[str, str] | None,
    application: dict[str, Any] | None,
) -> Determination:
    """:func:`evaluate_site` on a resolved workspace (the pipeline run when ``result`` is
    ``None``)."""
    prof = load_profile(profile)
    validate_inputs(
        disturbed_acres=disturbed_acres,
        project_type=project_type,
        common_plan_acres=common_plan_acres,
        exemption=exemption,
        labels=labels,
    )
    app_info = application_info(application)
    if result is None:
        result = _run_pipeline(workspace)
    info, rows, _sel = _resolve_site(site, workspace, result, site_crs=site_crs)
    waters = waters or Waters.from_workspace(workspace)
    of_pts = _outfall_points(result, workspace)
    hits = tmdl_hits_for(waters, site_geom=info.geometry, rows=rows, outfall_points=of_pts)
    det = determine(
        rows,
        waters=waters,
        profile=prof,
        disturbed_acres=disturbed_acres,
        project_type=project_type,
        common_plan_acres=common_plan_acres,
        exemption=exemption,
        site=info,
        tmdl_hits=hits,
        reach_hits=_reach_hits(rows, waters, prof, workspace.crs),
        provenance=workspace.provenance(profile=prof.name),
        labels=labels,
    )
    det.evidence = SiteEvidence(
        site=info,
        rows=rows,
        result=result,
        workspace=workspace,
        waters=waters,
        outfall_points=of_pts,
    )
    wpath = getattr(workspace, "path", None)
    det.doc["workspace"] = {
        "name": Path(wpath).name if wpath else "in-memory workspace",
        "path": str(wpath) if wpath else None,
    }
    det.doc["application"] = app_info
    return det
