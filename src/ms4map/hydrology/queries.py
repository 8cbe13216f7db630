"""Questions to an OverlandResult about a point: the surface path from it, the area draining to it.

Catchment polygons of whole targets are :func:`ms4map.hydrology.result.catchment_polygons`.
"""

from __future__ import annotations

import numpy as np
import shapely

from .cells import _label_downstream, walk_down
from .result import OverlandResult

__all__ = ["surface_path", "upstream_mask", "upstream_mask_of"]


def surface_path(
    result: OverlandResult, x: float, y: float
) -> tuple[shapely.LineString | None, int]:
    """Overland path from ``(x, y)`` down to the first target cell.

    Returns
    -------
    (LineString or None, int)
        The path through cell centres (``None`` off the DEM) and the label of the
        target reached (0 off the DEM).
    """
    idx = result.cell_index(x, y)
    if idx is None or not result.valid.ravel()[idx]:
        return None, 0
    if result.idxs_ds is None:
        cells = np.array([idx])
    else:
        cells = walk_down(result.idxs_ds, idx, result.target_mask.ravel())
    rows, cols = np.divmod(cells, result.shape[1])
    t = result.transform
    xs, ys = t.c + t.a * (cols + 0.5), t.f + t.e * (rows + 0.5)
    coords = [(x, y)] + list(zip(np.atleast_1d(xs), np.atleast_1d(ys), strict=True))
    if len(coords) < 2:
        coords.append(coords[0])
    return shapely.LineString(coords), int(result.labels.ravel()[idx])


def upstream_mask(result: OverlandResult, x: float, y: float) -> np.ndarray | None:
    """Cells whose surface flow reaches ``(x, y)``'s cell before any other target.

    Returns ``None`` off the DEM.  A point on a target cell gets that whole target's
    catchment.
    """
    idx = result.cell_index(x, y)
    if idx is None or not result.valid.ravel()[idx]:
        return None
    lab = int(result.labels.ravel()[idx])
    if result.target_mask.ravel()[idx]:
        return result.labels == lab
    if result.idxs_ds is None:
        m = np.zeros(result.shape, dtype=bool)
        m.ravel()[idx] = True
        return m
    # the point's own catchment, stopped by every target upstream of it
    seed = result.target_mask.ravel().astype(np.int32)
    seed[idx] = 2
    return _label_downstream(result.idxs_ds, seed).reshape(result.shape) == 2


def upstream_mask_of(result: OverlandResult, geom: shapely.Geometry) -> np.ndarray | None:
    """Cells whose surface flow reaches ``geom`` (a point or a polygon) before any
    other target: for a point :func:`upstream_mask`; for a polygon its own cells (cell
    centres inside it or on its outline) and every cell whose path enters one of them first.

    Returns ``None`` off the DEM.  A polygon smaller than a cell gets the catchment of
    the cell under its centroid.
    """
    if geom.geom_type == "Point":
        return upstream_mask(result, geom.x, geom.y)
    h, w = result.shape
    t = result.transform
    x0, y0, x1, y1 = geom.bounds
    inv = ~t
    c0, r0 = inv @ (x0, y1)
    c1, r1 = inv @ (x1, y0)
    rs = np.arange(max(int(np.floor(min(r0, r1))), 0), min(int(np.ceil(max(r0, r1))), h))
    cs = np.arange(max(int(np.floor(min(c0, c1))), 0), min(int(np.ceil(max(c0, c1))), w))
    idx = np.zeros(0, dtype=np.int64)
    if len(rs) and len(cs):
        rr, cc = np.meshgrid(rs, cs, indexing="ij")
        xs, ys = t.c + t.a * (cc + 0.5), t.f + t.e * (rr + 0.5)
        inside = shapely.intersects_xy(geom, xs.ravel(), ys.ravel())  # the outline counts
        idx = (rr.ravel() * w + cc.ravel())[inside]
        idx = idx[result.valid.ravel()[idx]]
    if not len(idx):
        c = geom.centroid
        return upstream_mask(result, c.x, c.y)
    if result.idxs_ds is None:
        m = np.zeros(result.shape, dtype=bool)
        m.ravel()[idx] = True
        return m
    seed = result.target_mask.ravel().astype(np.int32)
    seed[idx] = 2  # the polygon's cells stop the water before any target under them
    return _label_downstream(result.idxs_ds, seed).reshape(result.shape) == 2
