"""The conditioned DEM: edge and nodata outlets, the fill with outlets, depressions, sunk targets.

Steps 2-4 of :func:`ms4map.hydrology.routing.route` (:func:`fill_with_outlets`,
:func:`find_depressions`, :func:`sink_targets`), the boundary condition at the edge of
the DEM's data (:func:`_edge_outlets`) and the neighbourhood helpers they share.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .result import _PYFLWDIR_NODATA
from .targets import TargetGrid

__all__ = ["condition_dem", "fill_with_outlets", "find_depressions", "sink_targets"]


#: How far (metres) the fill must raise a cell for :func:`find_depressions` to count it
#: as ponded.  The fill's flat resolution also raises every cell of a flat (a terrace,
#: a paved lot, a DEM rounded to 0.1 m) by a tiny gradient towards the flat's outlet:
#: about 1e-11 m per cell at 100 m of elevation, 1e-8 m across 1,500 cells at 1,600 m
#: (measured).  A flat at its spill level is not a depression, but counted as raised it
#: joined any real depression it touched (a 700-cell kettle in a flat terrace became a
#: 21,850-cell depression holding the whole terrace).  The rise grows with the flat's
#: width: about 1e-6 m across a 100 km flat at 1,600 m, a hundredth of 0.1 mm, which is
#: itself far below any ponding that matters.
_PONDED_M = 1e-4


def _next_to(mask: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """For linear cell indices ``idx``, whether any of their 8 neighbours is in ``mask``."""
    h, w = mask.shape
    padded = np.zeros((h + 2, w + 2), dtype=bool)
    padded[1:-1, 1:-1] = mask
    flat = padded.ravel()
    r, c = np.divmod(idx, w)
    p = (r + 1) * (w + 2) + (c + 1)
    out = np.zeros(idx.size, dtype=bool)
    for off in (-w - 3, -w - 2, -w - 1, -1, 1, w + 1, w + 2, w + 3):
        out |= flat[p + off]
    return out


#: ESRI/pyflwdir D8 codes -> (row, col) step (1=E, 2=SE, 4=S, ... 128=NE).
_D8_STEP = {
    1: (0, 1),
    2: (1, 1),
    4: (1, 0),
    8: (1, -1),
    16: (0, -1),
    32: (-1, -1),
    64: (-1, 0),
    128: (-1, 1),
}


def _edge_outlets(d8: np.ndarray) -> int:
    """Boundary condition: flow that reaches the edge of the DEM's data leaves it (in place).

    The library's D8 only looks at neighbours with data, so a cell at the edge of the
    data may point to another such cell and run along that edge (the terrain beyond
    it, where its steepest descent may lie, is unknown).  The edge of the data is the
    grid's outermost row and column *and* every cell with data next to a nodata cell
    (``d8`` holds :data:`_PYFLWDIR_NODATA` there): nodata connected to the grid's
    border (a DEM clipped to a town boundary, the nodata wedges of a warped DEM) and
    interior nodata holes alike.  An edge cell whose pointer leads to another edge
    cell has reached the edge: it becomes an outlet (pointer 0), like an edge cell
    without a lower neighbour; :func:`first_target` names it (``dem_edge`` at the
    grid's border and at nodata connected to it, ``dem_nodata`` at an interior hole).
    Edge cells whose pointer leads into the data keep it.  No direction is computed
    here; pointers are only cut.

    Returns
    -------
    int
        Number of edge cells turned into outlets.
    """
    h, w = d8.shape
    if h < 3 or w < 3:
        return 0
    edge = _data_edge(d8 == _PYFLWDIR_NODATA)
    idx = np.flatnonzero(edge)
    code = d8.reshape(-1)[idx]
    dr = np.zeros(256, np.int64)
    dc = np.zeros(256, np.int64)
    for k, (a, b) in _D8_STEP.items():
        dr[k], dc[k] = a, b
    moves = (dr[code] != 0) | (dc[code] != 0)
    r, c = np.divmod(idx, w)
    tr_, tc_ = r + dr[code], c + dc[code]
    inside = moves & (tr_ >= 0) & (tr_ < h) & (tc_ >= 0) & (tc_ < w)
    to_edge = np.zeros(idx.size, dtype=bool)
    to_edge[inside] = edge[tr_[inside], tc_[inside]]
    d8.reshape(-1)[idx[to_edge]] = 0
    return int(to_edge.sum())


def _data_edge(nodata: np.ndarray) -> np.ndarray:
    """bool raster of the cells at the edge of the data: cells with data on the grid's
    outermost row or column, or with a nodata cell among their 8 neighbours."""
    h, w = nodata.shape
    edge = np.zeros((h, w), dtype=bool)
    edge[0, :] = edge[-1, :] = True
    edge[:, 0] = edge[:, -1] = True
    if nodata.any():
        edge |= _dilated(nodata)
        edge &= ~nodata
    return edge


def _dilated(mask: np.ndarray) -> np.ndarray:
    """``mask`` grown by one cell in all 8 directions (eight shifted ORs; no float temporary)."""
    out = mask.copy()
    h, w = mask.shape
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr or dc:
                ro, ri = slice(max(dr, 0), h + min(dr, 0)), slice(max(-dr, 0), h - max(dr, 0))
                co, ci = slice(max(dc, 0), w + min(dc, 0)), slice(max(-dc, 0), w - max(dc, 0))
                out[ro, co] |= mask[ri, ci]
    return out


def _outside_nodata(valid: np.ndarray) -> np.ndarray:
    """bool raster of the nodata cells connected (8-connected) to the grid's border.

    They are beyond the DEM's edge (a DEM clipped to a town boundary, the nodata wedges
    of a warped DEM), not holes in it: flow reaching them leaves the DEM (``dem_edge``).
    """
    from scipy import ndimage

    nodata = ~valid
    regions, n = ndimage.label(nodata, structure=np.ones((3, 3), bool))
    if n == 0:
        return nodata
    ring = np.concatenate([regions[0], regions[-1], regions[:, 0], regions[:, -1]])
    border = np.zeros(n + 1, dtype=bool)
    border[ring] = True
    border[0] = False
    return border[regions]


def condition_dem(
    array: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    outlets: np.ndarray | None = None,
    workdir: str | Path | None = None,
) -> np.ndarray:
    """Fill the depressions of ``array`` that drain to no outlet, with a gradient on flats.

    The fill (:func:`fill_with_outlets`) starts from the DEM edge, the nodata cells and
    the ``outlets`` cells: a depression that holds one of them drains to it and is not
    raised.

    Parameters
    ----------
    array : numpy.ndarray
        Elevations, float, NaN for nodata.
    transform, crs
        Georeferencing of the grid (``crs`` is not used by the fill).
    outlets : numpy.ndarray, optional
        bool raster of further outlet cells (e.g. inlets and waters); they keep their
        elevation.
    workdir : path, optional
        Not used (the fill no longer exchanges files); kept for callers that pass it.

    Returns
    -------
    numpy.ndarray
        Filled elevations (float64, NaN nodata).
    """
    del crs, workdir
    z = np.asarray(array, dtype="float64")
    out = ~np.isfinite(z)
    if outlets is not None:
        out |= np.asarray(outlets, dtype=bool)
    if min(z.shape) < 3:
        return z.copy()
    return fill_with_outlets(z, out, transform)


def fill_with_outlets(
    z: np.ndarray,
    outlets: np.ndarray,
    transform: Any,
    *,
    timings: dict[str, float] | None = None,
    overwrite_outlets: bool = False,
) -> np.ndarray:
    """Fill the depressions of ``z`` that drain to no outlet (step 2).

    The fill (:func:`ms4map.hydrology._fill.fill_pits`: whitebox-workflows'
    ``fill_depressions(fix_flats=True)`` algorithm, compiled, in about 10 bytes per
    cell) starts from the grid's border and from every ``outlets`` cell: a depression
    that holds an outlet cell drains to it and is never raised to its spill; only
    depressions without one are filled (up to their spill), and every flat gets a
    small gradient towards its outlets and away from higher ground.

    Parameters
    ----------
    z : numpy.ndarray
        Elevations (float64; NaN only where ``outlets`` is set).
    outlets : numpy.ndarray
        bool raster of the cells where water leaves the surface (targets, nodata).
    transform
        Georeferencing of the grid (its cell size sets the flats' gradient step).
    overwrite_outlets : bool, default False
        The fill keeps its flags in ``outlets``' memory, which it changes (the
        caller's scratch array; 1 byte per cell less).

    Returns
    -------
    numpy.ndarray
        The filled elevations, float64 (``z`` itself on ``outlets`` cells).
    """
    from ._fill import fill_pits  # numba: imported (and loaded from its cache) when routing runs

    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    filled = fill_pits(
        z,
        outlets,
        cell_x=abs(transform.a),
        cell_y=abs(transform.e),
        overwrite_outlets=overwrite_outlets,
    )
    timings["condition.fill"] = time.perf_counter() - t0
    return filled


def find_depressions(
    z: np.ndarray,
    filled: np.ndarray,
    targets: TargetGrid,
    *,
    min_depth: float,
    min_cells: float,
    z_to_m: float = 1.0,
    cell_area_m2: float = 1.0,
) -> pd.DataFrame:
    """Real closed depressions become targets of kind ``depression`` (step 3).

    A depression is a region (8-connected) that the fill raised by more than 0.1 mm
    (``_PONDED_M``: less is the gradient the fill gives a flat, not ponding): it drains
    to no target and not to the DEM edge.  It is real when at least ``min_depth`` deep
    (DEM units) and ``min_cells`` large: all its cells get a new ``DEP<n>`` target in
    ``targets.seed`` (internally drained).  Smaller ones are noise: flow passes
    through them along the fill's gradient.  So is a region that spills straight into
    a target (:func:`_spill_into_target`: the part of a sag below an inlet that sits
    off the sag's low point, raised to the inlet's lowest neighbour): it drains to that
    target, whatever its depth and size.

    Returns
    -------
    pandas.DataFrame
        ``label``, ``target_id``, ``cells``, ``area_m2``, ``max_depth_m`` of the real ones.
    """
    from ._kernels import raised_regions  # numba: loaded from its cache when routing runs

    empty = pd.DataFrame(
        {
            "label": pd.Series([], dtype=np.int64),
            "target_id": pd.Series([], dtype=str),
            "cells": pd.Series([], dtype=np.int64),
            "area_m2": pd.Series([], dtype=float),
            "max_depth_m": pd.Series([], dtype=float),
        }
    )
    seed = targets.seed
    ponded = _PONDED_M / z_to_m  # not the flat gradient of the fill
    # the regions are labelled -1, -2, ... in the seed itself (a raised cell is no
    # target): no label grid (4 bytes per cell) and no raised mask; their cells come
    # back region by region, as int32 below 2**31 cells
    first = np.empty(1024, np.int32 if seed.size < 2**31 else np.int64)
    in_region, starts = raised_regions(filled, z, seed, float(ponded), first)
    n = starts.size - 1
    if n == 0:
        return empty
    cells = np.zeros(n + 1, np.int64)
    cells[1:] = np.diff(starts)
    reg_of = np.repeat(np.arange(1, n + 1, dtype=np.int32), cells[1:])
    # the deepest raised cell per region, in blocks of cells (no depth per raised cell
    # held, no sorted copies; the depths of raised cells are all positive)
    maxdepth = np.zeros(n + 1)
    for a in range(0, in_region.size, 1 << 20):
        part = in_region[a : a + (1 << 20)]
        np.maximum.at(maxdepth, reg_of[a : a + part.size], _at(filled, part) - _at(z, part))
    real = np.flatnonzero((maxdepth >= min_depth) & (cells >= min_cells))
    real = real[real > 0]
    if real.size:  # a pool that spills straight into a target drains to it
        into = _spill_into_target(
            seed,
            real,
            in_region=in_region,
            reg_of=reg_of,
            filled=filled,
            target=seed > 0,
            tol=ponded,
        )
        real = real[~into[real]]
    lab_of = np.zeros(n + 1, dtype=np.int32)
    ids = []
    for k, r in enumerate(real, start=1):
        tid = f"DEP{k}"
        ids.append(tid)
        lab_of[r] = targets.add(
            "depression", tid, reason=f"internally drained: ends in closed depression {tid}"
        )
    # every raised cell leaves the seed: its depression's label, or 0 (routed through)
    _put(seed, in_region, lab_of[reg_of])
    if real.size == 0:
        return empty
    return pd.DataFrame(
        {
            "label": lab_of[real].astype(np.int64),
            "target_id": ids,
            "cells": cells[real],
            "area_m2": cells[real] * cell_area_m2,
            "max_depth_m": maxdepth[real] * z_to_m,
        }
    )


def _put(grid: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
    """``grid``'s cells at linear indices ``idx`` set to ``values`` (its rows and columns
    when ``grid`` is not C-contiguous)."""
    if grid.flags.c_contiguous:
        grid.reshape(-1)[idx] = values
    else:
        r, c = np.divmod(idx, grid.shape[1])
        grid[r, c] = values


def _at(grid: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``grid``'s values at linear indices ``idx`` (a view's rows and columns when it
    is not C-contiguous)."""
    if grid.flags.c_contiguous:
        return grid.reshape(-1)[idx]
    r, c = np.divmod(idx, grid.shape[1])
    return grid[r, c]


def _spill_into_target(
    seed: np.ndarray,
    cand: np.ndarray,
    *,
    in_region: np.ndarray,
    reg_of: np.ndarray,
    filled: np.ndarray,
    target: np.ndarray,
    tol: float,
) -> np.ndarray:
    """Which raised regions spill straight into a target (bool per region label).

    The fill treats target cells as outlets, so it never raises a target's neighbour:
    a pool that drains to a target is raised up to the level of the target's lowest
    neighbour on its side, its spill cell, and stops one cell short of the target.  A
    region spills into a target when one of its spill cells (a cell beside it that the
    fill did not raise, no higher than the pool next to it, within ``tol``) is a target
    or a target's neighbour: water leaving the pool there falls into the target (which
    :func:`sink_targets` puts below every neighbour).  Only the regions ``cand`` are
    looked at; ``in_region`` / ``reg_of`` are the linear indices of the raised cells
    and their region labels; ``seed`` holds a raised cell's region as ``-label``
    (:func:`~ms4map.hydrology._kernels.raised_regions`), so a cell not raised is ``>= 0``.
    """
    h, w = seed.shape
    into = np.zeros(int(reg_of.max()) + 1, dtype=bool)  # one per region label
    pick = np.zeros_like(into)
    pick[cand] = True
    sel = pick[reg_of]
    r, c = np.divmod(in_region[sel], w)
    reg = reg_of[sel]
    level = filled[r, c] + tol
    spill_cells, spill_reg = [], []
    for _dr, _dc, rr, cc, ok in _neighbours(r, c, h, w):
        ok[ok] &= seed[rr[ok], cc[ok]] >= 0  # not raised
        ok[ok] &= filled[rr[ok], cc[ok]] <= level[ok]  # NaN (nodata): False
        spill_cells.append(rr[ok] * w + cc[ok])
        spill_reg.append(reg[ok])
    cells = np.concatenate(spill_cells)
    regs = np.concatenate(spill_reg)
    if cells.size:
        hit = target.reshape(-1)[cells] | _next_to(target, cells)
        into[regs[hit]] = True
    return into


def sink_targets(
    z: np.ndarray,
    filled: np.ndarray,
    targets: TargetGrid,
    valid: np.ndarray,
    *,
    burn_depth: float,
    inlet_depth: float,
    step: float,
) -> np.ndarray:
    """The conditioned DEM: the filled one with every target cell a sink (step 4, in place).

    Target cells take their burned elevation (waters and open conveyances
    ``burn_depth`` below the DEM, inlets ``inlet_depth``, depressions the DEM
    itself), and no higher than ``step`` below their lowest neighbour that is not a
    target: a cell from which the fill let water leave into a target still drains
    into it on the conditioned DEM (it has a lower neighbour), so D8 leaves no pit
    next to a target.

    Returns
    -------
    numpy.ndarray
        Linear indices of the target cells next to a non-target cell (the only target
        cells whose elevation a D8 pointer of a non-target cell can see).
    """
    t = targets.mask
    rows, cols = np.nonzero(t)  # 2-D indices: ``filled`` may be a view of a larger grid
    zb = z[rows, cols].astype(np.float64)  # float64 arithmetic on a float32 DEM too
    burned, sunk = targets.lowered(rows, cols)
    zb = zb - burn_depth * burned
    zb = zb - inlet_depth * sunk
    filled[rows, cols] = zb
    free = valid & ~t
    idx = rows * t.shape[1] + cols
    idx = idx[_next_to(free, idx)]
    if idx.size:
        r, c = np.divmod(idx, t.shape[1])
        lowest = _lowest_neighbour(filled, free, idx)
        filled[r, c] = np.minimum(filled[r, c], lowest - step)
    return idx


def _lowest_neighbour(z: np.ndarray, among: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """For linear cell indices ``idx``, the lowest ``z`` of their 8 neighbours in ``among``."""
    h, w = z.shape
    r, c = np.divmod(idx, w)
    out = np.full(idx.size, np.inf)
    for _dr, _dc, rr, cc, ok in _neighbours(r, c, h, w):
        rr, cc = rr[ok], cc[ok]
        val = np.where(among[rr, cc], z[rr, cc], np.inf)
        out[ok] = np.minimum(out[ok], val)
    return out


def _neighbours(r: np.ndarray, c: np.ndarray, h: int, w: int) -> Any:
    """For cells ``(r, c)`` of an ``h`` x ``w`` grid, each of their 8 neighbours as
    ``(dr, dc, rows, cols, inside)``: the step, its cells and whether they are in the grid."""
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr or dc:
                rr, cc = r + dr, c + dc
                yield dr, dc, rr, cc, (rr >= 0) & (rr < h) & (cc >= 0) & (cc < w)
