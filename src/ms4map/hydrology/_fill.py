"""The depression fill with outlets, compiled (numba): whitebox's algorithm in a few bytes per cell.

whitebox-workflows' ``fill_depressions(fix_flats=True)`` holds its own float64 copy of
the grid, its float64 output and two byte flags (29 bytes per cell measured, before
anything of ms4map is in memory; issue 34 asks for 25 for the whole process).  This is
the same algorithm (Lindsay's, in the open-source WhiteboxTools ``fill_depressions``):
each pit is flooded on its own from its lowest cell with a priority queue until a
cell with a lower neighbour (the outlet) is reached, the cells below the outlet's
level are raised to it, and the flats so made get a small gradient that grows away
from their outlets in the order of the cells' original elevations.  It works on the
caller's float64 copy in place, with one byte of flags per cell; the queues only ever
hold one depression.  Most cells of a DEM are in no depression and are only read.

The outlets of the fill are ms4map's: every ``outlets`` cell and the grid's border
(flow that reaches it leaves the grid).  They act as cells lower than any terrain
(the padded ring of very low cells of the whitebox call, without the copy) and are
never changed.  ``tests/hydrology`` checks the result against whitebox-workflows.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

__all__ = ["fill_pits", "flat_increment", "in_two_threads"]

_VISITED = np.uint8(1)  # in the current pit's flood
_FLAT = np.uint8(2)  # raised to (or at) an outlet's level
_OUTLET = np.uint8(8)  # an outlet of the fill: never a pit, never changed
_NOFLOW = np.uint8(16)  # no lower neighbour, one of the same elevation: a flat cell
_EDGE = np.uint8(32)  # a lower neighbour and one of the same elevation: a low edge
_SEEN = np.uint8(64)  # already in a flat's component

_DR = np.array([-1, 0, 1, 1, 1, 0, -1, -1], dtype=np.int64)  # whitebox's neighbour order
_DC = np.array([1, 1, 1, 0, -1, -1, -1, 0], dtype=np.int64)


def flat_increment(zmax: float, cell_x: float, cell_y: float) -> float:
    """The gradient step on flats: ``ceil(diagonal) * 10 ** (digits of zmax - 15)``.

    The step whitebox-workflows 2.0.6 applies (measured: its increments on designed
    flats), a few dozen float64 steps at the terrain's elevations.
    """
    digits = len(str(int(zmax))) if math.isfinite(zmax) else 1
    return math.ceil(math.hypot(cell_x, cell_y)) * 10.0 ** (digits - 15)


@numba.njit(cache=True, nogil=True)
def _heap_push(keys, idx, n, key, cell):  # pragma: no cover - compiled
    """Push ``(key, cell)`` on the min-heap held in ``keys``/``idx`` (``n`` items); grown
    when full.  Returns the arrays (new ones when grown)."""
    if n == keys.size:
        k2 = np.empty(keys.size * 2, keys.dtype)
        i2 = np.empty(idx.size * 2, idx.dtype)
        k2[:n] = keys[:n]
        i2[:n] = idx[:n]
        keys, idx = k2, i2
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if keys[p] <= key:
            break
        keys[i] = keys[p]
        idx[i] = idx[p]
        i = p
    keys[i] = key
    idx[i] = cell
    return keys, idx


@numba.njit(cache=True, nogil=True)
def _heap_pop(keys, idx, n):  # pragma: no cover - compiled
    """Remove the smallest item of the heap of ``n`` items; returns ``(key, cell)``."""
    key, cell = keys[0], idx[0]
    n -= 1
    lk, li = keys[n], idx[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and keys[c + 1] < keys[c]:
            c += 1
        if keys[c] >= lk:
            break
        keys[i] = keys[c]
        idx[i] = idx[c]
        i = c
    if n > 0:
        keys[i] = lk
        idx[i] = li
    return key, cell


@numba.njit(cache=True, nogil=True)
def _append(arr, n, value):  # pragma: no cover - compiled
    """``arr[n] = value``, growing ``arr`` when full; returns the array."""
    if n == arr.size:
        a2 = np.empty(arr.size * 2, arr.dtype)
        a2[:n] = arr[:n]
        arr = a2
    arr[n] = value
    return arr


@numba.njit(cache=True, nogil=True)
def _pits(z, flags, rows):  # pragma: no cover - compiled
    """Linear indices of the pits among the ``rows = (first, stop)``: cells that are no
    outlet, inside the border, with no outlet and no lower cell among their 8
    neighbours."""
    h, w = z.shape
    out = np.empty(1024, np.int64)
    n = 0
    for r in range(max(rows[0], 1), min(rows[1], h - 1)):
        for c in range(1, w - 1):
            if flags[r, c] & _OUTLET:
                continue
            zc = z[r, c]
            pit = True
            for k in range(8):
                rn, cn = r + _DR[k], c + _DC[k]
                if flags[rn, cn] & _OUTLET or z[rn, cn] < zc:
                    pit = False
                    break
            if pit:
                out = _append(out, n, r * w + c)
                n += 1
    return out[:n]


@numba.njit(cache=True, nogil=True)
def _lower(z, flags, rn, cn, zc):  # pragma: no cover - compiled
    """Whether neighbour ``(rn, cn)`` is lower than ``zc`` (outside the grid or an
    outlet: lower than any terrain)."""
    h, w = z.shape
    if rn < 0 or rn >= h or cn < 0 or cn >= w:
        return True
    return (flags[rn, cn] & _OUTLET) != 0 or z[rn, cn] < zc


@numba.njit(cache=True, nogil=True)
def _flood_pit(grid, pit, work):  # pragma: no cover - compiled
    """Flood one pit up to its outlet and raise it (whitebox's per-pit loop).

    Cells are taken lowest first from the pit until one has a lower neighbour (the
    outlet, at ``z_out``); every cell reached below ``z_out`` is raised to it, and
    the cells reached at or below it are marked :data:`_FLAT` (a pit among them
    needs no flood of its own).  A pit without an outlet is left.  (whitebox goes on
    along the outlet's level for its flat gradient; the levels are the same, and
    the flats get their gradient from :func:`_resolve_flats`.)  Returns the (possibly
    grown) work arrays ``(heap keys, heap cells, queue)``.
    """
    z, flags = grid
    heap_k, heap_i, queue = work
    h, w = z.shape
    n_heap = 0
    heap_k, heap_i = _heap_push(heap_k, heap_i, n_heap, z.flat[pit], pit)
    n_heap += 1
    flags.flat[pit] |= _VISITED
    queue[0] = pit  # every cell reached, to raise and unmark at the end
    n_q = 1
    found = False
    z_out = np.inf
    while n_heap > 0 and not found:
        zc, cell = _heap_pop(heap_k, heap_i, n_heap)
        n_heap -= 1
        r, c = cell // w, cell % w
        for k in range(8):
            rn, cn = r + _DR[k], c + _DC[k]
            if 0 <= rn < h and 0 <= cn < w and flags[rn, cn] & _VISITED:
                continue
            if _lower(z, flags, rn, cn, zc):
                found = True
                z_out = zc
                break
            heap_k, heap_i = _heap_push(heap_k, heap_i, n_heap, z[rn, cn], rn * w + cn)
            n_heap += 1
            flags[rn, cn] |= _VISITED
            queue = _append(queue, n_q, rn * w + cn)
            n_q += 1
    for i in range(n_q):
        cell = queue[i]
        flags.flat[cell] &= ~_VISITED
        if found and z.flat[cell] <= z_out:
            z.flat[cell] = z_out
            flags.flat[cell] |= _FLAT
    return heap_k, heap_i, queue


@numba.njit(cache=True, nogil=True)
def _floods(z, flags, pits):  # pragma: no cover - compiled
    """Fill every pit of ``z`` (in place), the highest first (as whitebox)."""
    keys = np.empty(pits.size, np.float64)
    for i in range(pits.size):
        keys[i] = z.flat[pits[i]]
    order = np.argsort(keys, kind="mergesort")
    work = (np.empty(1024, np.float64), np.empty(1024, np.int64), np.empty(1024, np.int64))
    for j in range(pits.size - 1, -1, -1):  # the highest pit first, as whitebox
        pit = pits[order[j]]
        if flags.flat[pit] & _FLAT:
            continue
        work = _flood_pit((z, flags), pit, work)


@numba.njit(cache=True, nogil=True)
def _mark_flats(z, flags, rows):  # pragma: no cover - compiled
    """Set :data:`_NOFLOW` on cells of the ``rows = (first, stop)`` with no lower
    neighbour and a neighbour of their elevation, :data:`_EDGE` on cells with both a
    lower neighbour and one of their elevation (outlets and the grid's border are
    lower than any terrain).  Rows apart may be marked in two threads: a cell's own
    flags are written, only the neighbours' outlet flag (never written) is read."""
    h, w = z.shape
    for r in range(rows[0], rows[1]):
        border = r == 0 or r == h - 1
        for c in range(w):
            if flags[r, c] & _OUTLET:
                continue
            zc = z[r, c]
            low = border or c == 0 or c == w - 1  # the grid's border is lower
            same = False
            for dr in range(-1, 2):
                rn = r + dr
                if rn < 0 or rn >= h:
                    continue
                for dc in range(-1, 2):
                    cn = c + dc
                    if (dr == 0 and dc == 0) or cn < 0 or cn >= w:
                        continue
                    if flags[rn, cn] & _OUTLET:
                        low = True
                    else:
                        zn = z[rn, cn]
                        if zn < zc:
                            low = True
                        elif zn == zc:
                            same = True
            if same:
                flags[r, c] |= _EDGE if low else _NOFLOW


@numba.njit(cache=True, nogil=True)
def _resolve_flats(z, flags, small):  # pragma: no cover - compiled
    """Give every drained flat a gradient (Barnes et al. 2014, in place on ``z``).

    A flat is a connected set of cells of one elevation without a lower neighbour
    (outlets and the grid's border are lower than any terrain); its low edges are the
    cells of that elevation beside it that have one.  Each component of cells of one
    elevation holding a flat and a low edge gets, on its flat cells, ``small`` times
    ``H * L + (H - A)``: ``L`` the cell's distance (in cells, 8-connected, through the
    flat) from the low edges, ``A`` its distance from the flat cells next to higher
    ground, ``H`` the largest ``A`` of the component (the weights whitebox-workflows
    2.0.6 gives, measured).  Water on a flat so runs to its low edges and away from
    higher ground.  One component at a time, on arrays over its bounding box.
    """
    h, w = z.shape
    comp = np.empty(1024, np.int64)
    work = (np.zeros(1024, np.int32), np.empty(1024, np.int64))
    for start in range(h * w):
        if flags.flat[start] & _EDGE and not flags.flat[start] & _SEEN:
            comp, n, box, has_flat = _component((z, flags), start, comp)
            if has_flat:
                work = _gradient((z, flags), (comp, n, box), small, work)


@numba.njit(cache=True, nogil=True)
def _component(grid, start, comp):  # pragma: no cover - compiled
    """The cells at ``start``'s elevation 8-connected to it through flat cells and low
    edges (marked :data:`_SEEN`): ``(comp, n, (r0, r1, c0, c1), has_flat)``."""
    z, flags = grid
    h, w = z.shape
    level = z.flat[start]
    flags.flat[start] |= _SEEN
    comp[0] = start
    n = 1
    head = 0
    r0, r1, c0, c1 = h, -1, w, -1
    has_flat = False
    while head < n:
        cell = comp[head]
        head += 1
        r, c = cell // w, cell % w
        r0, r1, c0, c1 = min(r0, r), max(r1, r), min(c0, c), max(c1, c)
        has_flat |= (flags[r, c] & _NOFLOW) != 0
        for k in range(8):
            rn, cn = r + _DR[k], c + _DC[k]
            if 0 <= rn < h and 0 <= cn < w and not flags[rn, cn] & (_SEEN | _OUTLET):
                if z[rn, cn] == level and flags[rn, cn] & (_NOFLOW | _EDGE):
                    flags[rn, cn] |= _SEEN
                    comp = _append(comp, n, rn * w + cn)
                    n += 1
    return comp, n, (r0, r1, c0, c1), has_flat


@numba.njit(cache=True, nogil=True)
def _gradient(grid, part, small, work):  # pragma: no cover - compiled
    """Raise the flat cells of one component ``part = (comp, n, box)`` by their gradient
    (see :func:`_resolve_flats`); ``work`` = ``(scratch, queue)``, returned grown.

    The per-cell layers are held over the component's bounding box, or, when that box
    is over 8 times the component (a long diagonal flat), over the component's cells
    found by binary search: never more than a few bytes per cell of the component.
    """
    z, flags = grid
    comp, n, (r0, r1, c0, c1) = part
    scratch, queue = work
    h, w = z.shape
    level = z.flat[comp[0]]
    bh, bw = r1 - r0 + 1, c1 - c0 + 1
    keys = np.empty(0, np.int64)
    size = bh * bw
    if size > 8 * n and size > 1 << 16:
        keys = np.sort(comp[:n])
        size = n
    if scratch.size < 2 * size:
        scratch = np.zeros(2 * size, np.int32)
    away = scratch[:size]
    low = scratch[size : 2 * size]
    box = (r0, c0, bw, keys)
    # away from higher ground: layers from the flat cells beside it
    nq = 0
    for i in range(n):
        r, c = comp[i] // w, comp[i] % w
        if flags[r, c] & _NOFLOW:
            for k in range(8):
                rn, cn = r + _DR[k], c + _DC[k]
                if 0 <= rn < h and 0 <= cn < w and not flags[rn, cn] & _OUTLET:
                    if z[rn, cn] > level:
                        queue = _append(queue, nq, comp[i])
                        nq += 1
                        break
    queue, top = _layers(grid, level, (queue, nq), away, box)
    # towards the low edges
    nq = 0
    for i in range(n):
        if flags.flat[comp[i]] & _EDGE:
            queue = _append(queue, nq, comp[i])
            nq += 1
    queue, _ = _layers(grid, level, (queue, nq), low, box)
    for i in range(n):
        j = _slot(comp[i], w, box)
        if flags.flat[comp[i]] & _NOFLOW and low[j] > 1:
            steps = low[j] - 1
            mask = top * steps + (top - away[j]) if top > 0 else steps
            z.flat[comp[i]] = level + small * mask
        away[j] = 0
        low[j] = 0
    return scratch, queue


@numba.njit(cache=True, nogil=True)
def _slot(cell, w, box):  # pragma: no cover - compiled
    """Where ``cell`` is held: its place in the bounding box ``(r0, c0, width, keys)``,
    or in the sorted ``keys`` when they are given."""
    r0, c0, bw, keys = box
    if keys.size:
        return np.searchsorted(keys, cell)
    return (cell // w - r0) * bw + (cell % w - c0)


@numba.njit(cache=True, nogil=True)
def _layers(grid, level, frontier, out, box):  # pragma: no cover - compiled
    """Breadth-first layers from the ``frontier = (queue, n)`` cells through the flat
    cells at ``level``: ``out`` (held as :func:`_slot` says) gets each cell's layer, 1
    for the sources (cells reached are marked :data:`_VISITED` until the end).
    Returns the queue and the last layer."""
    z, flags = grid
    queue, nq = frontier
    h, w = z.shape
    for i in range(nq):
        flags.flat[queue[i]] |= _VISITED
    head = 0
    layer = 0
    end = 0
    while head < nq:
        if head == end:  # the next layer starts
            layer += 1
            end = nq
        cell = queue[head]
        head += 1
        out[_slot(cell, w, box)] = layer
        r, c = cell // w, cell % w
        for k in range(8):
            rn, cn = r + _DR[k], c + _DC[k]
            if not (0 <= rn < h and 0 <= cn < w):
                continue
            f = flags[rn, cn]
            if f & _NOFLOW and not f & _VISITED and z[rn, cn] == level:
                flags[rn, cn] = f | _VISITED
                queue = _append(queue, nq, rn * w + cn)
                nq += 1
    for i in range(nq):
        flags.flat[queue[i]] &= ~_VISITED
    return queue, layer


def fill_pits(
    z: np.ndarray,
    outlets: np.ndarray,
    *,
    cell_x: float,
    cell_y: float,
    fix_flats: bool = True,
    overwrite_outlets: bool = False,
) -> np.ndarray:
    """Fill the depressions of ``z`` that drain to no outlet; a new float64 grid.

    Parameters
    ----------
    z : numpy.ndarray
        Elevations (float; any value, NaN included, on ``outlets`` cells).
    outlets : numpy.ndarray
        bool raster of the cells where water leaves the surface; with the grid's
        border they are the outlets of the fill and keep their elevation.
    cell_x, cell_y : float
        Cell width and height (the flats' gradient step grows with the diagonal).
    fix_flats : bool, default True
        Give the filled flats (and flats at an outlet's level) a gradient away from
        their outlets (:func:`flat_increment` per cell), as whitebox's ``fix_flats``.
    overwrite_outlets : bool, default False
        Use ``outlets``' memory (a C-contiguous bool array) for the fill's byte of
        flags per cell, as scipy's ``overwrite_a``: no copy of it, and ``outlets`` is
        changed (the caller's own scratch array).

    Returns
    -------
    numpy.ndarray
        The filled elevations, float64 (``z``'s values on ``outlets`` cells).
    """
    out = np.array(z, dtype="float64", order="C", copy=True)
    if overwrite_outlets and outlets.dtype == bool and outlets.flags.c_contiguous:
        flags = outlets.view(np.uint8)
        flags *= _OUTLET  # in place: the caller's scratch array
    else:
        flags = np.ascontiguousarray(outlets, dtype=bool).view(np.uint8) * _OUTLET
    if out.size == 0:
        return out
    zmax = _terrain_max(out, flags)
    pits = np.concatenate(_in_two(_pits, out, flags))
    _floods(out, flags, pits)
    del pits
    if fix_flats:
        _in_two(_mark_flats, out, flags)
        _resolve_flats(out, flags, flat_increment(zmax, abs(cell_x), abs(cell_y)))
    return out


#: Grids at least this large scan in two threads (a county; not a town's grid).
TWO_THREADS_CELLS = 16_000_000


def _in_two(kernel: Any, z: np.ndarray, flags: np.ndarray) -> list[Any]:
    """``kernel(z, flags, rows)`` on the upper and the lower half of the rows
    (:func:`in_two_threads`); the results in row order."""
    return in_two_threads(lambda rows: kernel(z, flags, rows), z.shape[0], z.size)


def in_two_threads(work: Any, h: int, size: int) -> list[Any]:
    """``work(rows)`` on the upper and the lower half of ``h`` rows, in two threads on
    grids of :data:`TWO_THREADS_CELLS` or more (the kernels release the GIL; a grid
    scan takes about half the time on two cores), else in this thread (a town's grid
    in a batch worker: one worker per core); the results in row order."""
    halves = [(0, h // 2), (h // 2, h)]
    if size < TWO_THREADS_CELLS:
        return [work(rows) for rows in halves]
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="ms4map-scan") as pool:
        return list(pool.map(work, halves))


@numba.njit(cache=True, nogil=True)
def _terrain_max(z, flags):  # pragma: no cover - compiled
    """The highest elevation of the cells that are no outlet (0 when there is none)."""
    best = -np.inf
    for i in range(z.size):
        if not flags.flat[i] & _OUTLET and z.flat[i] > best:
            best = z.flat[i]
    return best if best > -np.inf else 0.0
