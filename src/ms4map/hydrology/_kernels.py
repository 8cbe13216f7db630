"""Compiled (numba) kernels of the overland routing, where a library call is too slow.

Kept in their own module so that numba is imported (and a kernel compiled or loaded
from numba's on-disk cache) only when routing runs.  Each kernel is checked against
the library call it replaces in the tests.
"""

from __future__ import annotations

import numba
import numpy as np

from ._fill import _append  # the growable buffer the fill's queues use

__all__ = [
    "catchment_slopes",
    "d8_rows",
    "downstream_index",
    "label_downstream",
    "label_downstream_d8",
    "pit_cells_rows",
    "raised_regions",
]


@numba.njit(cache=True, nogil=True)
def label_downstream(
    idxs_ds: np.ndarray, seed: np.ndarray, in_place: bool = False
) -> np.ndarray:  # pragma: no cover
    """For each cell, the ``seed`` label (> 0) of the first seeded cell on its D8 path.

    Parameters
    ----------
    idxs_ds : numpy.ndarray
        Downstream linear index of each cell (pyflwdir's ``idxs_ds``: the cell itself
        on a pit, negative on nodata).
    seed : numpy.ndarray
        int32 labels, > 0 on the outlet cells, 0 elsewhere.
    in_place : bool
        Write the labels into ``seed`` (no copy of the grid).

    Returns
    -------
    numpy.ndarray
        int32 labels; 0 where the path ends in an unseeded pit, nodata or a loop.
        Each path is walked once: every cell on it takes the label found at its end.
    """
    return _label_walk(idxs_ds, seed, in_place, (0, 0))


@numba.njit(cache=True, nogil=True)
def label_downstream_d8(
    d8: np.ndarray, seed: np.ndarray, in_place: bool = False
) -> np.ndarray:  # pragma: no cover
    """:func:`label_downstream` walking the D8 grid ``d8`` (2-D, ESRI codes) itself:
    each cell's downstream cell as :func:`downstream_index` gives it, without the
    index grid (4 bytes per cell)."""
    h, w = d8.shape
    return _label_walk(d8.reshape(h * w), seed, in_place, (h, w))


@numba.njit(cache=True, nogil=True)
def _label_walk(src, seed, in_place, shape):  # pragma: no cover - compiled
    """The walk of :func:`label_downstream`: ``src`` is the downstream index, or the
    flat D8 grid when ``shape = (h, w)`` is not ``(0, 0)``."""
    h, w = shape
    n = seed.size
    lab = seed if in_place else seed.copy()
    # no "done" grid: unvisited cells are 0, cells on the path being walked -2, cells
    # found to reach no seed -1 (0 again at the end)
    path = np.empty(1024, dtype=np.int64)  # grown as a path needs (not one per cell)
    for i in range(n):
        if lab[i] != 0:
            continue
        k = 0
        j = i
        value = 0
        while True:
            v = lab[j]
            if v != 0:  # a seed or a labelled cell; -1 reaches none, -2 a loop
                value = v if v > 0 else 0
                break
            lab[j] = -2
            path = _append(path, k, j)
            k += 1
            nxt = src[j] if h == 0 else _down(src, j, h, w)
            if nxt < 0 or nxt == j:  # nodata, an unseeded pit
                break
            j = nxt
        fill = value if value > 0 else -1
        for m in range(k):
            lab[path[m]] = fill
    for i in range(n):
        if lab[i] < 0:
            lab[i] = 0
    return lab


@numba.njit(cache=True, nogil=True)
def d8_rows(z, cell, out, rows):  # pragma: no cover - compiled
    """Steepest-descent D8 pointer (ESRI/pyflwdir codes, 0 pit, 247 nodata) of the
    rows ``rows = (first, stop)`` of ``z``, written into ``out``.

    The same rule as whitebox-workflows' ``d8_pointer``: the neighbour with the
    largest drop per distance (cell size, or the diagonal), strictly downhill; the
    neighbours are visited NE, E, SE, S, SW, W, NW, N and the first of equal slopes
    wins.  NaN cells are nodata and no neighbour; cells beyond the grid are none.
    Neighbours are read from the whole grid, so two threads can each make one half
    (:func:`ms4map.hydrology.routing.d8_steepest`).  ``z`` is 2-D float (any
    strides); ``cell = (dx, dy)``, the cell width and height.
    """
    h, w = z.shape
    dx, dy = cell
    diag = np.sqrt(dx * dx + dy * dy)
    # NE, E, SE, S, SW, W, NW, N
    drs = (-1, 0, 1, 1, 1, 0, -1, -1)
    dcs = (1, 1, 1, 0, -1, -1, -1, 0)
    codes = (128, 1, 2, 4, 8, 16, 32, 64)
    dists = (diag, dx, diag, dy, diag, dx, diag, dy)
    for r in range(rows[0], rows[1]):
        for c in range(w):
            z0 = z[r, c]
            if np.isnan(z0):
                out[r, c] = 247
                continue
            best = 0.0
            code = 0
            for k in range(8):
                rr = r + drs[k]
                cc = c + dcs[k]
                if rr < 0 or rr >= h or cc < 0 or cc >= w:
                    continue
                zn = z[rr, cc]
                if np.isnan(zn):
                    continue
                slope = (z0 - zn) / dists[k]
                if slope > best:
                    best = slope
                    code = codes[k]
            out[r, c] = code


@numba.njit(cache=True, nogil=True)
def downstream_index(d8: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Linear index of the downstream cell of each cell of a D8 pointer grid.

    ``d8`` holds ESRI/pyflwdir codes (1=E, 2=SE, 4=S, ... 128=NE, 0 pit, 247 nodata).
    The result is int32 like pyflwdir's ``idxs_ds``: the cell itself on a pit (and
    where a pointer would leave the grid or enter nodata), -1 on nodata.
    """
    h, w = d8.shape
    flat = d8.reshape(h * w)
    out = np.empty(h * w, dtype=np.int32)
    for i in range(h * w):
        out[i] = _down(flat, i, h, w)
    return out


@numba.njit(cache=True, nogil=True)
def pit_cells_rows(d8, rows):  # pragma: no cover - compiled
    """Linear indices of the cells among the rows ``rows = (first, stop)`` that are
    their own downstream cell (pits, as :func:`downstream_index` would give them), from
    the D8 grid; two threads each scan one half (``cells._pit_cells_d8``)."""
    h, w = d8.shape
    flat = d8.reshape(h * w)
    out = np.empty(1024, dtype=np.int64)
    n = 0
    for i in range(rows[0] * w, rows[1] * w):
        if _down(flat, i, h, w) == i:
            out = _append(out, n, i)
            n += 1
    return out[:n]


@numba.njit(cache=True, nogil=True)
def _down(flat, i, h, w):  # pragma: no cover - compiled
    """The downstream cell of cell ``i`` of the flat D8 grid ``flat`` (``h`` x ``w``):
    itself on a pit or where the pointer leaves the grid or enters nodata, -1 on
    nodata."""
    code = flat[i]
    if code == 247:
        return -1
    r = i // w
    c = i - r * w
    dr = 0
    dc = 0
    if code == 1:
        dc = 1
    elif code == 2:
        dr, dc = 1, 1
    elif code == 4:
        dr = 1
    elif code == 8:
        dr, dc = 1, -1
    elif code == 16:
        dc = -1
    elif code == 32:
        dr, dc = -1, -1
    elif code == 64:
        dr = -1
    elif code == 128:
        dr, dc = -1, 1
    rr = r + dr
    cc = c + dc
    if rr < 0 or rr >= h or cc < 0 or cc >= w or flat[rr * w + cc] == 247:
        return i
    return rr * w + cc


@numba.njit(cache=True, nogil=True)
def catchment_slopes(z, labels, n, spacing):  # pragma: no cover - compiled
    """Sum and count, per label, of the cells' steepest-gradient slope in percent.

    The slope is ``hypot(gx, gy) * 100`` of ``numpy.gradient(z * z_to_m, cy, cx)``
    (central differences inside, one-sided at the grid's edges), computed cell by
    cell in the same operations, so that the sums equal ``numpy.bincount`` of the
    full slope grid without holding it (40 bytes per cell).  Cells with label 0 or a
    NaN slope are left out.

    Parameters
    ----------
    z : numpy.ndarray
        2-D elevations (any float dtype), at least 2 x 2 cells.
    labels : numpy.ndarray
        2-D int labels, ``0 <= label < n``.
    n : int
        Number of labels.
    spacing : tuple
        ``(cy, cx, z_to_m)``: row and column spacing (metres) and the elevations'
        factor to metres.
    """
    cy, cx, zf = spacing
    h, w = z.shape
    sums = np.zeros(n)
    counts = np.zeros(n, np.int64)
    for r in range(h):
        for c in range(w):
            lab = labels[r, c]
            if lab <= 0:
                continue
            if r == 0:
                gy = (z[1, c] * zf - z[0, c] * zf) / cy
            elif r == h - 1:
                gy = (z[h - 1, c] * zf - z[h - 2, c] * zf) / cy
            else:
                gy = (z[r + 1, c] * zf - z[r - 1, c] * zf) / (2.0 * cy)
            if c == 0:
                gx = (z[r, 1] * zf - z[r, 0] * zf) / cx
            elif c == w - 1:
                gx = (z[r, w - 1] * zf - z[r, w - 2] * zf) / cx
            else:
                gx = (z[r, c + 1] * zf - z[r, c - 1] * zf) / (2.0 * cx)
            slope = np.hypot(gx, gy) * 100.0
            if np.isfinite(slope):
                sums[lab] += slope
                counts[lab] += 1
    return sums, counts


@numba.njit(cache=True, nogil=True)
def raised_regions(filled, z, seed, ponded, cells):  # pragma: no cover - compiled
    """The 8-connected regions of the cells the fill raised by more than ``ponded``.

    Region ``k`` (1, 2, ... in the order of its first cell in row-major order, as
    ``scipy.ndimage.label`` numbers them) is written as ``-k`` into ``seed`` (2-D int32,
    0 on the raised cells: a raised cell is no target), so no label grid of its own is
    held (4 bytes per cell).  A cell is raised when ``filled - z > ponded`` (NaN:
    not raised).

    Parameters
    ----------
    filled, z : numpy.ndarray
        2-D filled and original elevations (any float dtypes).
    seed : numpy.ndarray
        2-D int32 target labels (> 0 on targets), written in place.
    ponded : float
    cells : numpy.ndarray
        A first buffer for the raised cells' linear indices (int32 or int64; grown).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The raised cells' linear indices, region by region, and each region's start in
        them (``n + 1`` offsets).
    """
    h, w = seed.shape
    starts = np.zeros(64, np.int64)
    n_cells = 0
    n_reg = 0
    for r0 in range(h):
        for c0 in range(w):
            if seed[r0, c0] != 0 or not filled[r0, c0] - z[r0, c0] > ponded:
                continue
            n_reg += 1
            seed[r0, c0] = -n_reg
            head = n_cells
            cells = _append(cells, n_cells, r0 * w + c0)
            n_cells += 1
            while head < n_cells:  # breadth first: the queue is the region's cell list
                r, c = cells[head] // w, cells[head] % w
                head += 1
                for dr in range(-1, 2):
                    for dc in range(-1, 2):
                        rr, cc = r + dr, c + dc
                        if rr < 0 or rr >= h or cc < 0 or cc >= w or seed[rr, cc] != 0:
                            continue
                        if filled[rr, cc] - z[rr, cc] > ponded:
                            seed[rr, cc] = -n_reg
                            cells = _append(cells, n_cells, rr * w + cc)
                            n_cells += 1
            starts = _append(starts, n_reg, n_cells)
    return cells[:n_cells], starts[: n_reg + 1].copy()  # starts[0] is 0
