"""The map's view (:class:`MapView`, EPSG:4326 bounds and a zoom) and what is sent for it: features in view, clipped, as compact GeoJSON, with flow arrows."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import geopandas as gpd
import numpy as np
import shapely
from pyproj import Transformer
from shapely.geometry import LineString, box

from ...analysis.frames import WGS84

__all__ = [
    "MapView",
    "clip_to_view",
    "display_geojson",
    "fit_zoom",
    "flow_arrows",
    "in_view",
    "metres_per_pixel",
]


@dataclass
class MapView:
    """What the browser shows: EPSG:4326 bounds plus a zoom level."""

    south: float
    west: float
    north: float
    east: float
    zoom: int = 14

    @classmethod
    def from_bounds(
        cls, bounds: tuple[float, float, float, float], crs: Any, *, zoom: int | None = None
    ) -> MapView:
        """A view of ``bounds`` (minx, miny, maxx, maxy in ``crs``); zoom to fit when None."""
        tr = Transformer.from_crs(crs, WGS84, always_xy=True)
        west, south, east, north = tr.transform_bounds(*bounds)
        if zoom is None:
            zoom = fit_zoom(south, west, north, east)
        return cls(south, west, north, east, int(zoom))

    @classmethod
    def around(
        cls, lat: float, lng: float, zoom: int, *, width_px: int = 1000, height_px: int = 600
    ) -> MapView:
        """The view a ``width_px`` x ``height_px`` map centred at ``(lat, lng)`` shows at
        ``zoom`` (what to draw before the browser reports its own bounds)."""
        mpp = metres_per_pixel(lat, zoom)
        dlat = height_px * mpp / 110574 / 2
        dlng = width_px * mpp / (111320 * max(math.cos(math.radians(lat)), 1e-6)) / 2
        return cls(lat - dlat, lng - dlng, lat + dlat, lng + dlng, int(zoom))

    @property
    def center(self) -> tuple[float, float]:
        return ((self.south + self.north) / 2, (self.west + self.east) / 2)

    def bbox(self, crs: Any, *, margin: float = 0.1) -> tuple[float, float, float, float]:
        """The view in ``crs`` (minx, miny, maxx, maxy), grown by ``margin`` of its size."""
        tr = Transformer.from_crs(WGS84, crs, always_xy=True)
        minx, miny, maxx, maxy = tr.transform_bounds(self.west, self.south, self.east, self.north)
        dx, dy = (maxx - minx) * margin, (maxy - miny) * margin
        return (minx - dx, miny - dy, maxx + dx, maxy + dy)

    def metres_per_pixel(self) -> float:
        return metres_per_pixel(self.center[0], self.zoom)


def metres_per_pixel(lat: float, zoom: int) -> float:
    """Ground size of one Web-Mercator screen pixel at ``lat`` and ``zoom``."""
    return 156543.03392 * math.cos(math.radians(lat)) / (2**zoom)


def fit_zoom(
    south: float,
    west: float,
    north: float,
    east: float,
    *,
    width_px: int = 900,
    height_px: int = 600,
) -> int:
    """Largest zoom at which the bounds fit a ``width_px`` x ``height_px`` map."""
    lat = (south + north) / 2
    for z in range(19, 0, -1):
        mpp = metres_per_pixel(lat, z)
        w = (east - west) * 111320 * math.cos(math.radians(lat)) / mpp
        h = (north - south) * 110574 / mpp
        if w <= width_px and h <= height_px:
            return z
    return 1


def in_view(frame: gpd.GeoDataFrame, bbox: tuple[float, float, float, float]) -> gpd.GeoDataFrame:
    """The rows of ``frame`` whose geometry intersects ``bbox`` (spatial index query)."""
    if not len(frame):
        return frame
    idx = frame.sindex.query(box(*bbox), predicate="intersects")
    return frame.iloc[np.sort(idx)]


def clip_to_view(
    frame: gpd.GeoDataFrame, bbox: tuple[float, float, float, float]
) -> gpd.GeoDataFrame:
    """Cut lines and polygons that reach beyond ``bbox`` to it (a sewershed or a river
    crossing the view is sent as the part in view, not whole); empty results dropped."""
    geoms = frame.geometry.to_numpy()
    b = shapely.bounds(geoms)
    out = (b[:, 0] < bbox[0]) | (b[:, 1] < bbox[1]) | (b[:, 2] > bbox[2]) | (b[:, 3] > bbox[3])
    if not out.any():
        return frame
    geoms = geoms.copy()
    geoms[out] = shapely.clip_by_rect(geoms[out], *bbox)
    keep = ~shapely.is_empty(geoms)
    clipped = frame.copy()
    clipped[clipped.geometry.name] = geoms
    return clipped[keep]


def display_geojson(
    frame: gpd.GeoDataFrame,
    *,
    tolerance: float = 0.0,
    decimals: int = 6,
    properties: Iterable[str] = (),
) -> str:
    """Compact GeoJSON of ``frame`` in EPSG:4326, simplified and rounded for display.

    Parameters
    ----------
    frame : GeoDataFrame
        Features in a projected CRS.
    tolerance : float
        Simplification tolerance in the frame's CRS units (0 = none).
    decimals : int
        Decimal places kept in the output coordinates (6 ~ 0.1 m).
    properties : iterable of str
        Columns written as feature properties.
    """
    geoms = frame.geometry.to_numpy()
    if tolerance > 0:
        geoms = shapely.simplify(geoms, tolerance, preserve_topology=True)
    if frame.crs is not None and not frame.crs.equals(WGS84):
        geoms = gpd.GeoSeries(geoms, crs=frame.crs).to_crs(WGS84).to_numpy()
    geoms = shapely.transform(geoms, lambda c: np.round(c, decimals))
    texts = shapely.to_geojson(geoms)
    props = list(properties)
    if props:
        records = frame[props].astype(object).where(frame[props].notna(), None).to_dict("records")
        feats = [
            f'{{"type":"Feature","properties":{json.dumps(r, default=str, separators=(",", ":"))},"geometry":{g}}}'
            for r, g in zip(records, texts, strict=False)
        ]
    else:
        feats = [f'{{"type":"Feature","properties":{{}},"geometry":{g}}}' for g in texts]
    return '{"type":"FeatureCollection","features":[' + ",".join(feats) + "]}"


def flow_arrows(lines: gpd.GeoDataFrame, *, size: float) -> gpd.GeoDataFrame:
    """Arrowheads (a "V" of two segments) at the middle of each line, pointing downstream.

    Parameters
    ----------
    lines : GeoDataFrame
        Lines digitised in flow order, projected CRS.
    size : float
        Arrow arm length in CRS units.
    """
    geoms = lines.geometry.to_numpy()
    lengths = shapely.length(geoms)
    ok = lengths > 2 * size
    geoms, lengths = geoms[ok], lengths[ok]
    if not len(geoms):
        return gpd.GeoDataFrame({"category": []}, geometry=[], crs=lines.crs)
    tip = shapely.line_interpolate_point(geoms, lengths / 2 + size / 2)
    back = shapely.line_interpolate_point(geoms, lengths / 2 - size / 2)
    tx, ty = shapely.get_x(tip), shapely.get_y(tip)
    bx, by = shapely.get_x(back), shapely.get_y(back)
    ang = np.arctan2(ty - by, tx - bx)
    arms = []
    for a, x, y in zip(ang, tx, ty, strict=False):
        left = (x - size * math.cos(a - 0.5), y - size * math.sin(a - 0.5))
        right = (x - size * math.cos(a + 0.5), y - size * math.sin(a + 0.5))
        arms.append(LineString([left, (x, y), right]))
    cats = lines["category"].to_numpy()[ok] if "category" in lines.columns else "arrow"
    return gpd.GeoDataFrame({"category": cats}, geometry=arms, crs=lines.crs)
