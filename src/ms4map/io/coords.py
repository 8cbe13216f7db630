"""Coordinates that do not fit their declared CRS: impossible degrees, a layer far from the rest.

A layer in UTM metres declared as EPSG:4326 (a ``.prj`` from another file, a wrong
choice on the Data page) would otherwise pass validation and give every parcel
``off_dem``.  :func:`check_coordinates` runs on the layers as read, before they are
reprojected, and reports an error naming the layer, a sample coordinate and the CRS
the numbers most likely are in (the DEM's, another layer's, or a New York UTM / State
Plane CRS where the coordinates land among the other layers or in New York).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS, Transformer

from ..core.qa import QAReport
from .sources import Source

__all__ = ["check_coordinates", "guess_crs"]

#: CRSs New York data is usually in, tried (after the DEM's and the other layers') to
#: say which CRS numbers that do not fit theirs are in.
NY_CANDIDATES = (26918, 26917, 2260, 2261, 2262, 2263, 32618, 32617, 6347, 6346, 4269, 4326)

#: New York State with a margin, in longitude/latitude (where a guess must land when
#: there is no other layer or DEM to compare with).
NY_LONLAT = (-80.5, 40.0, -71.0, 45.5)

#: A layer farther than this from every other layer and the DEM is "far from the rest".
FAR_METRES = 50_000.0


def check_coordinates(
    raw: dict[str, list[tuple[Source, Any]]],
    report: QAReport,
    *,
    dem_path: str | Path | None = None,
) -> set[str]:
    """Report layers whose coordinates cannot be in their declared CRS.

    Two errors, each naming the layer, a sample coordinate and the likely CRS:

    - ``impossible_coordinates``: a layer in a geographic CRS (degrees) with a longitude
      beyond +-180 or a latitude beyond +-90;
    - ``far_from_other_layers``: a layer whose extent lies more than
      :data:`FAR_METRES` from every other layer and from the DEM (when there are others
      that lie together).

    Parameters
    ----------
    raw : dict
        Role -> ``(source, frame)`` pairs as read (frames in their own CRS).
    report : QAReport
        Where the errors go.
    dem_path : path, optional
        The DEM (only its header is read, for its extent and CRS).

    Returns
    -------
    set of str
        The labels of the layers reported (they are not reprojected).
    """
    layers = [
        (src, df, _bounds(df))
        for items in raw.values()
        for src, df in items
        if isinstance(df, gpd.GeoDataFrame) and df.crs is not None and len(df)
    ]
    layers = [(src, df, b) for src, df, b in layers if b is not None]
    dem = _dem_extent(dem_path)
    # CRSs a layer's numbers are most likely in: the DEM's, then the other layers'
    known = ([dem[0]] if dem is not None else []) + [df.crs for _s, df, _b in layers]
    bad: set[str] = set()
    for src, df, b in layers:
        if df.crs.is_geographic and (
            max(abs(b[0]), abs(b[2])) > 180 or max(abs(b[1]), abs(b[3])) > 90
        ):
            others = _extents([(s, d, bb) for s, d, bb in layers if s.label != src.label], dem)
            _report(report, "impossible_coordinates", src, df, others=others, dem=dem, first=known)
            bad.add(src.label)
    ok = [(s, d, b) for s, d, b in layers if s.label not in bad]
    for src, df, b in ok:
        mine = _lonlat_box(df.crs, b)
        rest = [(s, d, bb) for s, d, bb in ok if s.label != src.label]
        others = _extents(rest, dem)
        if mine is None or not others:
            continue
        if any(_distance_m(mine, o) <= FAR_METRES for o in others):
            continue
        # the others must lie together (or include the DEM): otherwise it is not known
        # which one is off
        together = dem is not None or any(
            _distance_m(a, c) <= FAR_METRES for i, a in enumerate(others) for c in others[i + 1 :]
        )
        if not together and len(others) > 1:
            continue
        _report(report, "far_from_other_layers", src, df, others=others, dem=dem, first=known)
        bad.add(src.label)
    return bad


def guess_crs(
    xy: tuple[float, float],
    targets: list[tuple[float, float, float, float]],
    *,
    first: Iterable[CRS] = (),
    declared: CRS | None = None,
) -> CRS | None:
    """The CRS in which the coordinate ``xy`` lands in one of ``targets`` (lon/lat boxes,
    within :data:`FAR_METRES`), or in New York when there is no target: the CRSs of
    ``first`` (the DEM's, the other layers'), then :data:`NY_CANDIDATES`.  ``None`` when
    none fits."""
    boxes = targets or [NY_LONLAT]
    seen: set[str] = set()
    # numbers that could be degrees are read as degrees first
    degrees = abs(xy[0]) <= 180 and abs(xy[1]) <= 90
    codes = sorted(NY_CANDIDATES, key=lambda c: CRS.from_epsg(c).is_geographic != degrees)
    tries = [*first, *(CRS.from_epsg(c) for c in codes)]
    for crs in tries:
        key = crs.to_string()
        if key in seen or (declared is not None and crs.equals(declared)):
            continue
        seen.add(key)
        try:
            lon, lat = _to_lonlat(crs).transform(*xy)
        except Exception:  # noqa: BLE001 - out of the CRS's domain
            continue
        if not (np.isfinite(lon) and np.isfinite(lat)) or abs(lon) > 180 or abs(lat) > 90:
            continue
        pt = (lon, lat, lon, lat)
        if any(_distance_m(pt, b) <= FAR_METRES for b in boxes):
            return crs
    return None


def _report(
    report: QAReport,
    code: str,
    src: Source,
    df: gpd.GeoDataFrame,
    *,
    others: list[tuple[float, float, float, float]],
    dem: tuple[CRS, Any] | None,
    first: list[CRS],
) -> None:
    xy = _sample(df)
    crs = df.crs
    guess = guess_crs(xy, others, first=first, declared=crs) if xy is not None else None
    sample = f"({_num(xy[0])}, {_num(xy[1])})" if xy is not None else "(none)"
    if code == "impossible_coordinates":
        what = (
            f"Layer '{src.label}' is declared as {crs.name} ({crs.to_string()}), a CRS in "
            f"degrees, but its coordinates are not degrees: e.g. {sample} (a longitude must "
            "be within +-180 and a latitude within +-90)."
        )
    else:
        where = "the other layers and the DEM" if dem is not None else "the other layers"
        what = (
            f"Layer '{src.label}' is declared as {crs.name} ({crs.to_string()}), but read "
            f"that way it lies more than {FAR_METRES / 1000:g} km from {where}: e.g. "
            f"{sample}."
        )
    if guess is not None:
        likely = f" These numbers fit {guess.name} ({guess.to_string()})."
        fix = (
            f"Give the layer its real CRS: in your GIS (Define Projection: "
            f"{guess.to_string()}) or choose it on the Data page; then re-run."
        )
    else:
        likely = ""
        fix = (
            "Give the layer the CRS its coordinates are really in (in your GIS: Define "
            "Projection, not Reproject; or choose it on the Data page); then re-run."
        )
    report.error(code, src.label, what + likely, fix=fix)


def _num(v: float) -> str:
    return f"{v:.1f}" if abs(v) >= 1000 else f"{v:.6f}".rstrip("0").rstrip(".")


def _bounds(df: gpd.GeoDataFrame) -> tuple[float, float, float, float] | None:
    try:
        b = np.asarray(df.geometry.total_bounds, dtype=float)
    except Exception:  # noqa: BLE001 - a geometry column that cannot be read
        return None
    return tuple(float(v) for v in b) if np.all(np.isfinite(b)) else None  # type: ignore[return-value]


def _sample(df: gpd.GeoDataFrame) -> tuple[float, float] | None:
    for g in df.geometry.values:
        if g is None or g.is_empty:
            continue
        c = shapely.get_coordinates(g)
        if len(c) and np.all(np.isfinite(c[0])):
            return float(c[0][0]), float(c[0][1])
    return None


def _to_lonlat(crs: CRS) -> Transformer:
    return Transformer.from_crs(crs, CRS.from_epsg(4326), always_xy=True)


def _lonlat_box(crs: CRS, b: tuple[float, float, float, float]):
    """The lon/lat box of a box in ``crs`` (``None`` when it does not transform)."""
    try:
        x0, y0, x1, y1 = _to_lonlat(crs).transform_bounds(*b)
    except Exception:  # noqa: BLE001
        return None
    out = (x0, y0, x1, y1)
    if not np.all(np.isfinite(out)) or abs(y0) > 90 or abs(y1) > 90:
        return None
    return out


def _extents(
    layers: list[tuple[Source, gpd.GeoDataFrame, Any]], dem: tuple[CRS, Any] | None
) -> list[tuple[float, float, float, float]]:
    """Lon/lat boxes of the layers (that transform) and of the DEM."""
    out = []
    if dem is not None:
        box = _lonlat_box(*dem)
        if box is not None:
            out.append(box)
    for _src, df, b in layers:
        if df.crs.is_geographic and (
            max(abs(b[0]), abs(b[2])) > 180 or max(abs(b[1]), abs(b[3])) > 90
        ):
            continue
        box = _lonlat_box(df.crs, b)
        if box is not None:
            out.append(box)
    return out


def _distance_m(a, b) -> float:
    """About how many metres apart two lon/lat boxes are (0 when they overlap)."""
    dx = max(0.0, a[0] - b[2], b[0] - a[2])
    dy = max(0.0, a[1] - b[3], b[1] - a[3])
    lat = np.radians(0.5 * (max(a[1], b[1]) + min(a[3], b[3])))
    return float(np.hypot(dx * 111_320.0 * max(np.cos(lat), 0.1), dy * 110_540.0))


def _dem_extent(dem_path: str | Path | None) -> tuple[CRS, Any] | None:
    """The DEM's CRS and extent (its header only); ``None`` without one."""
    if dem_path is None:
        return None
    try:
        import rasterio

        with rasterio.open(dem_path) as src:
            if src.crs is None:
                return None
            return CRS.from_user_input(src.crs.to_wkt()), tuple(src.bounds)
    except Exception:  # noqa: BLE001 - the DEM's own checks say what is wrong
        return None
