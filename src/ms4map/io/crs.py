"""The working CRS: its choice (``--crs``, the DEM's, the data's, UTM), distances in its units."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import geopandas as gpd
import numpy as np
from pyproj import CRS

from ..core.errors import UsageError
from ..core.qa import QAReport
from ..core.units import metres_per_unit, metres_to_units
from .sources import Source

__all__ = ["crs_units_to_metres", "metres_to_crs_units"]


def crs_units_to_metres(crs: Any) -> float:
    """Metres per unit of a projected CRS's first axis (1.0 for metres; :mod:`ms4map.core.units`)."""
    return metres_per_unit(crs)


def metres_to_crs_units(crs: Any, metres: float) -> float:
    """Convert a distance in metres to the units of ``crs`` (e.g. US survey feet)."""
    return metres_to_units(crs, metres)


def _choose_crs(crs: Any, dem_crs: CRS | None, raw: dict, report: QAReport) -> CRS | None:
    """The working CRS: ``--crs`` (projected), else the DEM's projected CRS, else the
    first projected CRS of the data, else the NAD83 UTM zone of geographic data
    (reported); ``None`` when no layer has a CRS."""
    if crs is not None:
        return _user_crs(crs)
    if dem_crs is not None and dem_crs.is_projected:
        return dem_crs
    crss: list[CRS] = []
    for role in ("structures", "conveyances", "parcels", "outfalls", "waterbodies"):
        crss.extend(df.crs for _src, df in _frames_with_crs({role: raw.get(role, [])}))
    crss.extend(df.crs for _src, df in _frames_with_crs(raw))
    projected = [c for c in crss if c.is_projected]
    if projected:
        return projected[0]
    if not crss:
        return None
    utm = _utm_zone_of(raw)
    for src, df in _frames_with_crs(raw):
        if df.crs.is_geographic:
            report.warning(
                "geographic_crs",
                src.label,
                f"Layer '{src.label}' is in a geographic CRS ({df.crs.to_string()}); it was "
                f"reprojected to {utm.name} ({utm.to_string()}) for distances and areas.",
                fix="Nothing to do; pass --crs to choose another projected CRS.",
            )
    return utm


def _frames_with_crs(raw: dict) -> Iterable[tuple[Source, gpd.GeoDataFrame]]:
    """The ``(source, frame)`` pairs of ``raw`` that are geo frames with a CRS, in order."""
    for items in raw.values():
        for src, df in items:
            if isinstance(df, gpd.GeoDataFrame) and df.crs is not None:
                yield src, df


def _user_crs(crs: Any) -> CRS:
    """The CRS ``--crs`` names; a usage error when pyproj does not know it or it is not
    projected."""
    try:
        c = CRS.from_user_input(crs)
    except Exception:
        raise UsageError(f"--crs '{crs}' is not a CRS pyproj knows (try EPSG:26918).") from None
    if not c.is_projected:
        raise UsageError(
            f"--crs {c.to_string()} is geographic; distances and areas need a projected CRS "
            "(e.g. EPSG:26918 UTM 18N, or NY State Plane EPSG:2260-2263)."
        )
    return c


def _utm_zone_of(raw: dict) -> CRS:
    """The NAD83 UTM zone (WGS 84 UTM outside zones 1-23) of the centre of the first
    non-empty layer with finite bounds; longitude -75 when there is none."""
    bounds = None
    for _src, df in _frames_with_crs(raw):
        if len(df):
            b = df.to_crs(4326).total_bounds
            # degrees beyond +-180/90 (a layer in metres declared as degrees) are
            # reported by io.coords and give no zone
            if np.all(np.isfinite(b)) and np.abs(b[[0, 2]]).max() <= 180:
                bounds = b
                break
    lon = 0.5 * (bounds[0] + bounds[2]) if bounds is not None else -75.0
    zone = int((lon + 180) // 6) + 1
    return CRS.from_epsg(26900 + zone) if 1 <= zone <= 23 else CRS.from_epsg(32600 + zone)


def _source_crs(raw: dict) -> CRS | None:
    for role in ("structures", "conveyances", "outfalls", "parcels"):
        for _src, df in raw.get(role, []):
            if isinstance(df, gpd.GeoDataFrame) and df.crs is not None:
                return df.crs
    return None
