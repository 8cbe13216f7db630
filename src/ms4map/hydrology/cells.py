"""Cells of the DEM grid: coordinates to cells, label grids to polygons, walks down the flow graph.

Grid helpers shared by the routing (:mod:`.routing`, :mod:`.targets`), its result
(:mod:`.result`) and the questions asked of it (:mod:`.queries`).
"""

from __future__ import annotations

from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

__all__ = ["mean_slopes", "polygonize", "to_colrow", "walk_down"]


def to_colrow(transform: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """Fractional ``(col, row)`` of map coordinates ``x``, ``y`` on a north-up grid with
    affine ``transform`` (cell ``(c, r)`` spans ``[c, c + 1) x [r, r + 1)``)."""
    return (np.asarray(x) - transform.c) / transform.a, (np.asarray(y) - transform.f) / transform.e


def polygonize(
    labels: np.ndarray, table: pd.DataFrame, transform: Any, crs: Any, *, columns: list[str]
) -> gpd.GeoDataFrame:
    """Polygonize the cells of ``labels`` whose value is in ``table.index`` (one row each).

    ``labels`` is an integer grid on ``transform``; each kept label that has cells becomes
    one polygon (a MultiPolygon when its cells are apart) carrying ``table``'s ``columns``
    for that label, in ``crs``.  Used for the catchment and depression polygons, and by
    :mod:`ms4map.drainage` for the area of a query.
    """
    from rasterio import features

    if len(table) == 0:
        return gpd.GeoDataFrame(
            table[columns].reset_index(drop=True), geometry=gpd.GeoSeries([], crs=crs), crs=crs
        )
    keep = np.zeros(int(max(labels.max(), table.index.max())) + 1, dtype=bool)
    keep[table.index.to_numpy()] = True
    mask = keep[labels]
    # crop to the bounding box of kept cells (much faster on big grids with few targets)
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    sub = np.ascontiguousarray(labels[r0:r1, c0:c1].astype(np.int32, copy=False))
    sub_t = type(transform)(
        transform.a,
        0.0,
        transform.c + transform.a * c0,
        0.0,
        transform.e,
        transform.f + transform.e * r0,
    )
    vals, polys = [], []
    for geom, val in features.shapes(sub, mask=mask[r0:r1, c0:c1], transform=sub_t):
        vals.append(int(val))
        rings = [np.asarray(r, dtype=float) for r in geom["coordinates"]]
        polys.append(shapely.Polygon(rings[0], rings[1:]))
    parts = pd.DataFrame({"label": vals, "geometry": polys})
    merged = parts.groupby("label")["geometry"].agg(
        lambda g: g.iloc[0] if len(g) == 1 else shapely.MultiPolygon(list(g))
    )
    out = table.loc[merged.index, columns].copy()
    return gpd.GeoDataFrame(out.reset_index(drop=True), geometry=list(merged.values), crs=crs)


def walk_down(
    idxs_ds: np.ndarray, idx: int, stop: np.ndarray, *, max_cells: int | None = None
) -> np.ndarray:
    """Cells from ``idx`` along the flow graph to the first ``stop`` cell or pit (inclusive).

    ``idxs_ds`` is :attr:`OverlandResult.idxs_ds`; ``max_cells`` caps the path's length.
    """
    out = [idx]
    seen = {idx}
    while not stop[idx] and (max_cells is None or len(out) < max_cells):
        nxt = int(idxs_ds[idx])
        if nxt == idx or nxt < 0 or nxt in seen:
            break
        out.append(nxt)
        seen.add(nxt)
        idx = nxt
    return np.asarray(out, dtype=np.int64)


def _label_downstream(
    idxs_ds: np.ndarray, seed: np.ndarray, *, in_place: bool = False
) -> np.ndarray:
    """Label every cell with the ``seed`` label of the first seeded cell downstream.

    ``idxs_ds`` is pyflwdir's downstream index of each cell (-1 on nodata, itself on
    a pit); ``seed`` is > 0 on the outlet cells.  The result equals pyflwdir's
    ``FlwdirRaster.basins(idxs=seeded cells, ids=their labels)`` (the tests check it)
    but walks each path once, with path compression, instead of ordering all cells
    from down- to upstream first (2.4 s of the 3.3 s that ``basins`` takes on 36M
    cells).  A cell whose path ends in an unseeded pit, nodata or a loop gets 0.
    """
    from ._kernels import label_downstream  # numba: compiled once, cached on disk

    seed = np.ascontiguousarray(seed, np.int32)  # ``in_place``: only when already so
    return label_downstream(np.ascontiguousarray(idxs_ds), seed, in_place)


def mean_slopes(
    z: np.ndarray, labels: np.ndarray, n: int, *, spacing: tuple[float, float, float]
) -> tuple[np.ndarray, int]:
    """Per label, the mean steepest-gradient slope (percent) of its cells, and how many
    cells had one.

    The slope of a cell is ``hypot(gx, gy) * 100`` of ``numpy.gradient`` of the
    elevations in metres; ``spacing = (cy, cx, z_to_m)`` (row and column spacing in
    metres, the elevations' factor to metres).  Cells with label 0 or no slope (NaN
    nearby) are left out.  A compiled kernel (no full-grid float temporaries; 40 bytes
    per cell with numpy).

    Returns
    -------
    (numpy.ndarray, int)
        ``n`` mean slopes (NaN for a label without cells) and the count of cells used.
    """
    from ._kernels import catchment_slopes  # numba: compiled once, cached on disk

    if min(z.shape) >= 2:
        sums, counts = catchment_slopes(np.asarray(z), np.asarray(labels), n, spacing)
    else:  # numpy.gradient needs two cells per axis
        sums, counts = np.zeros(n), np.zeros(n, np.int64)
    mean = np.divide(sums, counts, out=np.full(n, np.nan), where=counts > 0)
    return mean, int(counts.sum())


def _count_labels(labels: np.ndarray, n: int) -> np.ndarray:
    """``numpy.bincount(labels.ravel(), minlength=n)`` in blocks of rows (bincount widens
    its input to 64-bit integers: 8 bytes per cell for the whole grid at once)."""
    flat = labels.reshape(-1)
    step = 1 << 22
    counts = np.zeros(n, dtype=np.int64)
    for a in range(0, flat.size, step):
        part = np.bincount(flat[a : a + step], minlength=n)
        if part.size > counts.size:
            part[: counts.size] += counts
            counts = part
        else:
            counts[: part.size] += part
    return counts


def _label_downstream_d8(d8: np.ndarray, seed: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """:func:`_label_downstream` walking the D8 grid ``d8`` itself (no downstream index
    grid); the same labels."""
    from ._kernels import label_downstream_d8  # numba: compiled once, cached on disk

    seed = np.ascontiguousarray(seed, np.int32)  # ``in_place``: only when already so
    return label_downstream_d8(np.ascontiguousarray(d8), seed, in_place)


def _pit_cells_d8(d8: np.ndarray) -> np.ndarray:
    """Linear indices of the cells of the D8 grid ``d8`` that are their own downstream
    cell (pits, the grid's leaving pointers, pointers into nodata)."""
    from ._fill import in_two_threads
    from ._kernels import pit_cells_rows  # numba: compiled once, cached on disk

    d8 = np.ascontiguousarray(d8)
    halves = in_two_threads(lambda rows: pit_cells_rows(d8, rows), d8.shape[0], d8.size)
    return np.concatenate(halves)  # in row order, as one scan finds them
