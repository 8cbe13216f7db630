"""Grids to and from whitebox-workflows: raw SAGA grid exchange files and one whitebox session.

whitebox-workflows is imported only when a session starts (:func:`_wbe`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .result import _PYFLWDIR_NODATA

_NODATA_OUT = -32768.0  # nodata written to the GeoTIFFs exchanged with whitebox


# Measured with whitebox-workflows 2.0.6 on a 6000 x 6000 float64 grid (docs/hydrology.md):
# ``Raster.from_numpy`` 16 s, ``to_numpy`` 4.4 s, ``get_row_data`` 50 ms per row; whitebox
# reads an uncompressed GeoTIFF in 1.1 s and a raw SAGA grid (.sgrd/.sdat) in 0.9 s, and
# writes them in 0.5 s / 0.25 s; numpy writes and reads the raw .sdat in 0.1-0.4 s.  A
# pinned view (``Raster.pin()``) costs 0.2 s to open and about 1 microsecond per cell set.
# So grids cross the boundary as raw SAGA grids, the fill result stays in whitebox for
# the D8 call, and only the cells changed after the fill that can change a pointer are
# set again through a pinned view.

_SAGA_TYPES = {
    "DOUBLE": "f8",
    "FLOAT": "f4",
    "SHORT": "i2",
    "SHORTINT": "i2",
    "WORD": "u2",
    "INTEGER": "i4",
    "INT": "i4",
    "DWORD": "u4",
    "BYTE": "u1",
    "BYTE_UNSIGNED": "u1",
    "BYTE_SIGNED": "i1",
}

#: Above this share of cells to change, the conditioned DEM is sent again as a file
#: (about 0.04 microseconds per cell) instead of through a pinned view (break-even ~3 %).


def _wbe() -> Any:
    import whitebox_workflows as wbw

    return wbw.WbEnvironment()


def _nodata_filled(array: np.ndarray, *, all_valid: bool = False) -> np.ndarray:
    """float64 C-contiguous copy-if-needed of ``array`` with NaN replaced by the exchange nodata.

    ``all_valid=True`` (the caller knows there is no NaN) skips the check.
    """
    arr = np.asarray(array, dtype="float64")
    if not all_valid:
        bad = ~np.isfinite(arr)
        if bad.any():
            arr = np.where(bad, _NODATA_OUT, arr)
    return np.ascontiguousarray(arr)


def _write_tif(path: Path, array: np.ndarray, transform: Any, crs: Any) -> None:
    """Uncompressed float64 GeoTIFF (the exchange format for grids with non-square cells)."""
    import rasterio

    arr = _nodata_filled(array)
    h, w = arr.shape
    crs_wkt = crs.to_wkt() if hasattr(crs, "to_wkt") else None
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        width=w,
        height=h,
        count=1,
        dtype="float64",
        crs=crs_wkt,
        transform=transform,
        nodata=_NODATA_OUT,
    ) as ds:
        ds.write(arr, 1)


def _write_sgrd_header(path: Path, shape: tuple[int, int], transform: Any, crs: Any) -> None:
    """The ``.sgrd`` header (and ``.prj``) of a raw float64 SAGA grid ``path`` (the ``.sdat``).

    Rows are stored top to bottom (``TOPTOBOTTOM = TRUE``).
    """
    h, w = shape
    cell = abs(transform.a)
    xmin = transform.c + cell / 2.0  # SAGA positions are cell centres
    ymin = transform.f + transform.e * h + cell / 2.0
    header = (
        f"NAME\t= {path.stem}\nDESCRIPTION\t=\nUNIT\t=\nDATAFILE_OFFSET\t= 0\n"
        f"DATAFORMAT\t= DOUBLE\nBYTEORDER_BIG\t= {'TRUE' if _big_endian() else 'FALSE'}\n"
        f"POSITION_XMIN\t= {xmin!r}\nPOSITION_YMIN\t= {ymin!r}\n"
        f"CELLCOUNT_X\t= {w}\nCELLCOUNT_Y\t= {h}\nCELLSIZE\t= {cell!r}\n"
        f"Z_FACTOR\t= 1.000000\nNODATA_VALUE\t= {_NODATA_OUT!r}\nTOPTOBOTTOM\t= TRUE\n"
    )
    path.with_suffix(".sgrd").write_text(header)
    if crs is not None and hasattr(crs, "to_wkt"):
        path.with_suffix(".prj").write_text(crs.to_wkt("WKT1_ESRI"))


def _write_sgrd(
    path: Path, array: np.ndarray, transform: Any, crs: Any, *, all_valid: bool = False
) -> None:
    """Raw float64 SAGA grid (``path`` is the ``.sdat``; header ``.sgrd``, CRS ``.prj``).

    Rows are written top to bottom (``TOPTOBOTTOM = TRUE``), straight from the array.
    """
    arr = _nodata_filled(array, all_valid=all_valid)
    _write_sgrd_header(path, arr.shape, transform, crs)
    arr.tofile(path)


def _big_endian() -> bool:
    import sys

    return sys.byteorder == "big"


def _read_sgrd(path: Path) -> tuple[np.ndarray, float | None]:
    """Read a SAGA grid written by whitebox (raw binary + ``.sgrd`` header).

    Falls back to rasterio (GDAL's SAGA driver) for anything but a plain raw grid.  A
    grid stored bottom row first (as whitebox writes) comes back as a flipped view.
    """
    head: dict[str, str] = {}
    for line in path.with_suffix(".sgrd").read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            head[k.strip().upper()] = v.strip()
    code = _SAGA_TYPES.get(head.get("DATAFORMAT", "").upper())
    try:
        h, w = int(head["CELLCOUNT_Y"]), int(head["CELLCOUNT_X"])
        offset = int(head.get("DATAFILE_OFFSET", "0") or 0)
        nodata = float(head["NODATA_VALUE"]) if "NODATA_VALUE" in head else None
    except (KeyError, ValueError):
        code = None
    if code is None or path.stat().st_size != offset + h * w * np.dtype(code).itemsize:
        return _read_tif(path)  # rasterio reads SAGA grids too
    order = ">" if head.get("BYTEORDER_BIG", "FALSE").upper() == "TRUE" else "<"
    if head.get("TOPTOBOTTOM", "FALSE").upper() == "TRUE":
        arr = np.fromfile(path, dtype=order + code, count=h * w, offset=offset).reshape(h, w)
    else:  # rows stored bottom to top: one sequential read, seen through a flipped view
        # (not C-contiguous; 0.1 s on 36M cells against 0.8 s for reading row by row)
        arr = np.fromfile(path, dtype=order + code, count=h * w, offset=offset)
        arr = arr.reshape(h, w)[::-1]
    return arr, nodata


def _read_tif(path: Path) -> tuple[np.ndarray, float | None]:
    import rasterio

    with rasterio.open(path) as ds:
        return ds.read(1), ds.nodata


class _Whitebox:
    """One whitebox-workflows environment and a folder for the exchanged grids.

    Use as a context manager; rasters created through it stay in whitebox's memory
    until the session ends, so one step's output feeds the next call directly.
    """

    def __init__(self, workdir: str | Path | None = None) -> None:
        self._workdir = _workdir(workdir)
        self.dir = self._workdir.__enter__()
        self.wbe = _wbe()
        self._n = 0
        # exchange files are memory-mapped only in a private temporary folder (nobody
        # else rewrites its files) and where a mapped file can be deleted (POSIX)
        self._mapped = workdir is None and os.name == "posix"

    def __enter__(self) -> _Whitebox:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.wbe.clear_raster_memory()
        finally:
            self._workdir.__exit__(*exc)

    def _path(self, name: str, suffix: str) -> Path:
        self._n += 1
        return self.dir / f"ov_{self._n}_{name}{suffix}"

    def send(
        self, array: np.ndarray, transform: Any, crs: Any, name: str, *, all_valid: bool = False
    ) -> Any:
        """Hand a float grid to whitebox (read lazily by the next tool call)."""
        square = abs(abs(transform.a) - abs(transform.e)) <= 1e-9 * abs(transform.a)
        if square:
            path = self._path(name, ".sdat")
            _write_sgrd(path, array, transform, crs, all_valid=all_valid)
        else:  # SAGA grids have one cell size
            path = self._path(name, ".tif")
            _write_tif(path, array, transform, crs)
        return self.wbe.read_raster(str(path))

    def send_with_outlets(
        self,
        array: np.ndarray,
        outlets: np.ndarray,
        transform: Any,
        crs: Any,
        name: str,
    ) -> tuple[Any, float]:
        """Hand whitebox ``array`` framed by a ring of outlet cells, ``outlets`` made outlets.

        whitebox-workflows' ``fill_depressions`` fills a pit up to the lowest cell that
        has a *lower* valid neighbour; nodata cells and the grid edge are no outlets to
        it (a bowl closed by the DEM edge stays unfilled).  So every outlet cell (and a
        ring of cells around the grid, so that flow reaching the DEM edge leaves it) is
        given an elevation far below the terrain, each a different one (no flat of
        outlet cells for the tool to solve cell by cell), and the fill is called with a
        ``max_depth`` just over the terrain's relief: a pit at an outlet cell is never
        filled (its first non-outlet neighbour is deeper above it than ``max_depth``)
        while every other pit of the terrain is, up to its spill into an outlet.

        Returns the whitebox raster ((h + 2) x (w + 2) cells, one more on each side)
        and the ``max_depth`` to fill it with.  ``array`` may hold NaN only in
        ``outlets``.  Where the exchange file can be memory-mapped (square cells, a
        private temporary folder on POSIX) the grid is written straight into the file's
        shared mapping (no padded copy of the DEM in fresh memory).
        """
        arr = np.asarray(array, dtype="float64")
        h, w = arr.shape
        pad_t = type(transform)(
            transform.a,
            transform.b,
            transform.c - transform.a,
            transform.d,
            transform.e,
            transform.f - transform.e,
        )
        if np.isfinite(arr).any():  # the relief (outlet cells included: a wider bound)
            zmin, zmax = float(np.nanmin(arr)), float(np.nanmax(arr))
        else:
            zmin = zmax = 0.0
        max_depth = (zmax - zmin) + 1.0  # deeper than any fill of the terrain
        idx, values = _outlet_values(outlets, zmin, max_depth)
        square = abs(abs(transform.a) - abs(transform.e)) <= 1e-9 * abs(transform.a)
        if self._mapped and square and arr.size:
            path = self._path(name, ".sdat")
            _write_sgrd_header(path, (h + 2, w + 2), pad_t, crs)
            grid = np.memmap(path, dtype="<f8", mode="w+", shape=(h + 2, w + 2))
            grid[1:-1, 1:-1] = arr
            grid.reshape(-1)[idx] = values
            del grid  # the pages are the page cache's: whitebox reads what was written
            return self.wbe.read_raster(str(path)), max_depth
        grid = np.empty((h + 2, w + 2), dtype="float64")
        grid[1:-1, 1:-1] = arr
        grid.reshape(-1)[idx] = values
        return self.send(grid, pad_t, crs, name, all_valid=True), max_depth

    def fetch(self, raster: Any, name: str) -> tuple[np.ndarray, float | None]:
        """A whitebox raster as a numpy array (no conversion) and its nodata value."""
        if not raster.is_memory_backed():
            # a raster read lazily from a file is that file (whitebox's write_raster
            # would only copy the data file, without its header)
            src = Path(raster.file_path)
            return _read_sgrd(src) if src.suffix == ".sdat" else _read_tif(src)
        path = self._path(name, ".sdat")
        self.wbe.write_raster(raster, str(path))
        return _read_sgrd(path)

    def fill(self, dem: Any, *, max_depth: float | None = None) -> Any:
        """``fill_depressions`` with a gradient on flats (optionally limited to ``max_depth``)."""
        if max_depth is None:
            return self.wbe.hydrology.fill_depressions(dem=dem, fix_flats=True)
        return self.wbe.hydrology.fill_depressions(dem=dem, fix_flats=True, max_depth=max_depth)

    def d8(self, dem: Any) -> np.ndarray:
        """ESRI D8 pointer of ``dem`` as written by the tool itself (int16, -32768 nodata).

        Letting the tool write its output saves about 0.2 s on 36M cells against
        ``write_raster`` after the call.
        """
        path = self._path("d8", ".sdat")
        self.wbe.hydrology.d8_pointer(dem=dem, esri_pntr=True, output=str(path))
        # whitebox's pointer is int16: fine for pointer values (never accumulate with
        # whitebox: its accumulation of such a grid caps at 32,767 cells).
        return _read_sgrd(path)[0]

    def forget(self, raster: Any) -> None:
        """Drop a raster from whitebox's memory."""
        self.wbe.remove_raster_from_memory(raster)


class _workdir:
    def __init__(self, path: str | Path | None) -> None:
        self.path = path
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Path:
        if self.path is not None:
            p = Path(self.path)
            p.mkdir(parents=True, exist_ok=True)
            return p
        self._tmp = tempfile.TemporaryDirectory(prefix="ms4map-overland-")
        return Path(self._tmp.name)

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def _ring_indices(h: int, w: int) -> np.ndarray:
    """Linear indices of the outermost cells of an ``h`` x ``w`` grid."""
    if h <= 2 or w <= 2:
        return np.arange(h * w, dtype=np.int64)
    top = np.arange(w, dtype=np.int64)
    bottom = (h - 1) * w + top
    sides = np.arange(1, h - 1, dtype=np.int64) * w
    return np.concatenate([top, bottom, sides, sides + (w - 1)])


def _outlet_values(
    outlets: np.ndarray, zmin: float, max_depth: float
) -> tuple[np.ndarray, np.ndarray]:
    """Cells of the padded grid that are outlets of the fill, and their elevations.

    The padded grid has one more cell on each side of ``outlets``; its ring and the
    ``outlets`` cells get distinct elevations between ``zmin - 11 * max_depth`` and
    ``zmin - 10 * max_depth``: far below the terrain, so that a fill limited to
    ``max_depth`` never raises an outlet cell up to the terrain (see
    :meth:`_Whitebox.send_with_outlets`).
    """
    h, w = outlets.shape
    width = w + 2
    r, c = np.divmod(np.flatnonzero(outlets), w)
    idx = np.concatenate([_ring_indices(h + 2, width), (r + 1) * width + (c + 1)])
    step = max_depth / ((h + 2) * width + 1)
    return idx, (zmin - 10.0 * max_depth) - step * idx.astype("float64")


def _as_float(arr: np.ndarray, nodata: float | None) -> np.ndarray:
    """float64 array with whitebox's nodata cells as NaN (in place when possible)."""
    out = arr.astype("float64", copy=False)
    if not out.flags.writeable:
        out = out.copy()
    if nodata is not None:
        out[out == nodata] = np.nan
    return out


def _as_pointer(raw: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """whitebox's ESRI pointer (int16, nodata -32768) -> pyflwdir uint8 D8 (247 nodata).

    ``valid=None``: the grid has no nodata cell.
    """
    # pointer values are 0 (no lower neighbour) and 1, 2, 4, ... 128; the cast keeps
    # them and wraps nodata (-32768 = 0x8000) to 0; anything else > 128 becomes 0 too
    d8 = raw.astype(np.uint8)
    np.putmask(d8, d8 > 128, 0)
    if valid is not None:
        d8[~valid] = _PYFLWDIR_NODATA
    return d8
