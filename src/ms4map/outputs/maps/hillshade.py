"""A shaded-relief image of a DEM for the map (:func:`hillshade`) and its PNG bytes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pyproj import Transformer
from rasterio.warp import calculate_default_transform

from ...analysis.frames import WGS84
from ...io.dem import warp_bilinear

__all__ = ["hillshade", "png_bytes"]


def hillshade(
    array: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    azimuth: float = 315.0,
    altitude: float = 45.0,
    z_factor: float = 1.0,
    max_px: int = 1200,
) -> tuple[np.ndarray, list[list[float]]]:
    """A shaded-relief RGBA image of a DEM, warped to Web Mercator for display.

    Parameters
    ----------
    array : ndarray
        Elevations (NaN = nodata) on the grid of ``transform`` in ``crs``.
    transform : affine.Affine
    crs : CRS
        The DEM's projected CRS.
    azimuth, altitude : float
        Sun direction and height in degrees.
    z_factor : float
        Vertical units to horizontal units.
    max_px : int
        Longest side of the output image.

    Returns
    -------
    rgba : ndarray (h, w, 4) uint8
        Grey shading, transparent where there is no data.
    bounds : list
        ``[[south, west], [north, east]]`` for :class:`folium.raster_layers.ImageOverlay`.
    """
    a = np.asarray(array, dtype="float64")
    h, w = a.shape
    step = max(1, int(math.ceil(max(h, w) / max_px)))
    if step > 1:
        a = a[::step, ::step]
        t = transform  # transform x scale(step, step), written out (no Affine product)
        transform = type(t)(t.a * step, t.b * step, t.c, t.d * step, t.e * step, t.f)
    cx, cy = abs(transform.a), abs(transform.e)
    filled = np.where(np.isnan(a), np.nanmean(a) if np.isfinite(a).any() else 0.0, a) * z_factor
    dzdy, dzdx = np.gradient(filled, cy, cx)
    slope = np.arctan(np.hypot(dzdx, dzdy))
    aspect = np.arctan2(-dzdx, dzdy)
    az, alt = math.radians(360.0 - azimuth + 90.0), math.radians(altitude)
    shade = np.sin(alt) * np.cos(slope) + np.cos(alt) * np.sin(slope) * np.cos(az - aspect)
    shade = np.clip(shade, 0, 1)
    shade[np.isnan(a)] = np.nan
    hh, ww = shade.shape
    left, top = transform.c, transform.f
    right, bottom = left + transform.a * ww, top + transform.e * hh
    dst_crs = "EPSG:3857"
    dst_tr, dw, dh = calculate_default_transform(crs, dst_crs, ww, hh, left, bottom, right, top)
    scale = max(dw, dh) / max_px if max(dw, dh) > max_px else 1.0
    if scale > 1.0:
        dw, dh = int(dw / scale), int(dh / scale)
        dst_tr = dst_tr * dst_tr.scale(scale, scale)
    dst = warp_bilinear(
        shade, transform, crs, dst_transform=dst_tr, dst_crs=dst_crs, shape=(dh, dw)
    )
    grey = np.nan_to_num(dst * 255, nan=0).astype("uint8")
    rgba = np.dstack([grey, grey, grey, np.where(np.isnan(dst), 0, 255).astype("uint8")])
    x0, y0 = dst_tr.c, dst_tr.f
    x1, y1 = x0 + dst_tr.a * dw, y0 + dst_tr.e * dh
    tr = Transformer.from_crs(dst_crs, WGS84, always_xy=True)
    west, north = tr.transform(x0, y0)
    east, south = tr.transform(x1, y1)
    return rgba, [[south, west], [north, east]]


def png_bytes(rgba: np.ndarray) -> bytes:
    """Encode an RGBA uint8 image as PNG (folium's pure-Python writer)."""
    from folium.utilities import write_png

    return write_png(rgba)
