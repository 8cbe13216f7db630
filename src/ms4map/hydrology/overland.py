"""Overland flow on the DEM: conditioning, D8 directions and routing to the first MS4 target.

Every DEM cell is routed downslope until it first reaches

- an MS4 inlet (catch basin or inlet structure of the storm network),
- an open MS4 conveyance (ditch, swale, channel),
- a waterbody (stream line or lake/pond polygon),
- a real closed depression (at least ``min_depth_m`` deep and ``min_area_m2`` large),
- the edge of the DEM (or a nodata hole in it).

The libraries (see ``docs/hydrology.md`` for the measurements behind the choice):

- **whitebox-workflows** (``WbEnvironment().hydrology``) fills depressions with a
  gradient on flats (priority flood, Garbrecht-Martz) and computes the
  steepest-descent D8 pointer on the conditioned DEM.  It is called once per step
  (never per inlet: each call costs about 0.2 s), in one session: grids go in and
  out as raw SAGA grids in a temporary folder (its ``from_numpy``/``to_numpy`` are
  ten times slower), and the filled grid stays in whitebox for the D8 call.
- **pyflwdir** holds that D8 pointer as an in-memory flow graph and answers
  "which target does each cell reach first" (``FlwdirRaster.basins`` with the
  target cells as outlets), accumulation, downstream paths and upstream areas.

Water that reaches an inlet, an open MS4 conveyance or a water leaves the surface
there, so those cells are outlets of the terrain, like the DEM edge.  :func:`route`
is the chain of these steps (all on copies; the user's DEM is never changed):

1. :func:`rasterize_targets`: waters, open conveyances and inlets on the DEM grid;
2. :func:`fill_with_outlets`: the fill starts from the DEM edge, every target cell and
   every nodata cell, so a sag that holds a target drains to it and is never raised;
   only depressions without one are filled (flats get a small gradient);
3. :func:`find_depressions`: a filled depression at least ``min_depth_m`` deep and
   ``min_area_m2`` large is a *real* closed depression (kind ``depression``); smaller
   ones are noise and are routed through;
4. :func:`sink_targets`: target cells sit at their burned elevation (waters and open
   conveyances ``burn_depth_m`` down, inlets ``inlet_depth_m``), below every
   non-target neighbour, so they are sinks;
5. :func:`flow_directions`: steepest-descent D8 on this conditioned DEM, with the
   boundary condition that flow reaching the edge of the DEM's data (the grid's
   border, nodata beyond the data, an interior hole) leaves it there (an edge cell
   whose library pointer runs along that edge is an outlet);
6. :func:`first_target`: each cell is labelled by the first target cell on its
   downstream path.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ms4map.core.nulls import is_blank, none_if_na

from ..core.errors import DataError
from ..core.qa import QAReport
from ..core.units import metres_per_unit
from ..io.workspace import Dem

if TYPE_CHECKING:
    from typing import Protocol

    from ..io.workspace import Workspace

    class _NetworkTables(Protocol):
        """What :func:`network_targets` reads of a storm network: in practice a
        :class:`ms4map.network.build.StormNetwork`, which hydrology may not import (network
        is its sibling layer in ``ms4map._layout``), hence this protocol."""

        nodes: gpd.GeoDataFrame
        edges: gpd.GeoDataFrame


__all__ = [
    "DEFAULTS",
    "TARGET_KINDS",
    "OverlandResult",
    "TargetGrid",
    "catchment_polygons",
    "condition_dem",
    "d8_pointer",
    "fill_with_outlets",
    "find_depressions",
    "first_target",
    "flow_directions",
    "polygonize",
    "rasterize_targets",
    "route",
    "sink_targets",
    "surface_path",
    "to_colrow",
    "upstream_mask",
    "walk_down",
]

#: Default settings (metres and square metres; converted to DEM units internally).
DEFAULTS: dict[str, float] = {
    "min_depth_m": 0.3,
    "min_area_m2": 500.0,
    "burn_depth_m": 2.0,
    "inlet_depth_m": 1.0,
}

#: Kinds of routing targets (the parcel table adds ``unknown`` for nodata and no-DEM parts).
TARGET_KINDS = ("inlet", "conveyance", "water_direct", "depression", "off_dem", "unknown")

#: How far (metres) a target cell lies at least below its lowest non-target neighbour on
#: the conditioned DEM (:func:`sink_targets`).
_SINK_STEP_M = 1e-3

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

_NODATA_OUT = -32768.0  # nodata written to the GeoTIFFs exchanged with whitebox
_PYFLWDIR_NODATA = np.uint8(247)

ProgressFn = Callable[[str], None]


# ======================================================================================
# Result
# ======================================================================================
@dataclass
class OverlandResult:
    """Routing of every DEM cell to its first target.

    Attributes
    ----------
    labels : numpy.ndarray
        int32 raster: the target label (row of :attr:`targets`) each cell reaches
        first; 0 on nodata cells.
    targets : pandas.DataFrame
        Index ``label`` (1..n); columns ``target_kind``, ``target_id``, ``name``,
        ``cells`` (catchment size in cells), ``area_m2``, ``method``, ``reason``.
    target_mask : numpy.ndarray
        bool raster of the cells that are targets themselves (inlet, conveyance,
        water, depression cells).
    d8 : numpy.ndarray or None
        Steepest-descent D8 pointer on the conditioned DEM (uint8, ESRI/pyflwdir
        codes, with the DEM-edge rule); ``None`` for a DEM under 3 x 3 cells (each
        cell is its own outlet).  :attr:`flwdir` is its pyflwdir flow graph.
    conditioned : numpy.ndarray
        The conditioned DEM (burned, filled, targets as sinks), float64 with NaN nodata.
    transform, crs
        Grid georeferencing (the DEM's).
    cell_area_m2 : float
    depression_table : pandas.DataFrame
        Real closed depressions: ``label``, ``target_id``, ``cells``, ``area_m2``,
        ``max_depth_m`` (polygons: :attr:`depressions`).
    qa : QAReport
        Findings of the ``overland`` step.
    settings : dict
    timings : dict
        Seconds per step.
    """

    labels: np.ndarray
    targets: pd.DataFrame
    target_mask: np.ndarray
    d8: np.ndarray | None
    conditioned: np.ndarray
    transform: Any
    crs: Any
    cell_area_m2: float
    depression_table: pd.DataFrame
    qa: QAReport = field(default_factory=QAReport)
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _polygons: dict[str, gpd.GeoDataFrame] = field(default_factory=dict, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)  # flow graph, idxs_ds

    @property
    def shape(self) -> tuple[int, int]:
        return self.labels.shape  # type: ignore[return-value]

    @property
    def flwdir(self) -> Any:
        """The D8 pointer as a pyflwdir ``FlwdirRaster`` (built on first use; ``None`` without D8).

        Routing itself does not need it (``ms4map.hydrology._kernels``); paths, upstream areas
        and accumulation do, so it is built when one of them is first asked for.
        """
        if self.d8 is None:
            return None
        if "flwdir" not in self._cache:
            import pyflwdir

            self._cache["flwdir"] = pyflwdir.from_array(
                self.d8, ftype="d8", check_ftype=False, transform=self.transform
            )
        return self._cache["flwdir"]

    @property
    def idxs_ds(self) -> np.ndarray | None:
        """Downstream linear index of every cell (itself on a pit, -1 on nodata; cached)."""
        if self.d8 is None:
            return None
        if "idxs_ds" not in self._cache:
            from ._kernels import downstream_index

            self._cache["idxs_ds"] = downstream_index(self.d8)
        return self._cache["idxs_ds"]

    def __getstate__(self) -> dict[str, Any]:
        # pyflwdir's FlwdirRaster holds a module reference: it is rebuilt from ``d8``
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    @property
    def valid(self) -> np.ndarray:
        return np.isfinite(self.conditioned)

    @property
    def depressions(self) -> gpd.GeoDataFrame:
        """Polygons of the real closed depressions (the filled region of each; cached)."""
        if "_depressions" not in self._polygons:
            t = self.depression_table.set_index("label")
            lab = np.where(self.target_mask, self.labels, 0)
            self._polygons["_depressions"] = polygonize(
                lab, t, self.transform, self.crs, columns=["target_id", "area_m2", "max_depth_m"]
            )
        return self._polygons["_depressions"]

    def label_of(self, kind: str, target_id: str) -> int | None:
        """The label of a target, or ``None`` when it is not on the DEM."""
        t = self.targets
        hit = t.index[(t["target_kind"] == kind) & (t["target_id"] == str(target_id))]
        return int(hit[0]) if len(hit) else None

    def cell_index(self, x: float, y: float) -> int | None:
        """Linear index of the cell holding ``(x, y)``, or ``None`` off the DEM."""
        col, row = to_colrow(self.transform, x, y)
        r, c = int(np.floor(row)), int(np.floor(col))
        h, w = self.shape
        if not (0 <= r < h and 0 <= c < w):
            return None
        return r * w + c

    def catchments(self, kinds: tuple[str, ...] | None = ("inlet",)) -> gpd.GeoDataFrame:
        """Catchment polygons of the targets of ``kinds`` (cached); see :func:`catchment_polygons`."""
        key = ",".join(kinds) if kinds else "*"
        if key not in self._polygons:
            self._polygons[key] = catchment_polygons(self, kinds=kinds)
        return self._polygons[key]


# ======================================================================================
# Library calls (whitebox-workflows, rasters exchanged as raw SAGA grids)
# ======================================================================================
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

    The fill (whitebox-workflows, :func:`fill_with_outlets`) starts from the DEM edge,
    the nodata cells and the ``outlets`` cells: a depression that holds one of them
    drains to it and is not raised.

    Parameters
    ----------
    array : numpy.ndarray
        Elevations, float, NaN for nodata.
    transform, crs
        Georeferencing of the grid.
    outlets : numpy.ndarray, optional
        bool raster of further outlet cells (e.g. inlets and waters); they keep their
        elevation.
    workdir : path, optional
        Folder for the exchanged grids (a temporary one by default).

    Returns
    -------
    numpy.ndarray
        Filled elevations (float64, NaN nodata).
    """
    z = np.asarray(array, dtype="float64")
    out = ~np.isfinite(z)
    if outlets is not None:
        out |= np.asarray(outlets, dtype=bool)
    if min(z.shape) < 3:
        return z.copy()
    with _Whitebox(workdir) as wb:
        filled = fill_with_outlets(wb, z, out, transform, crs)
    return filled


def d8_pointer(
    array: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    edge_outlets: bool = True,
) -> np.ndarray:
    """Steepest-descent D8 pointer of a (conditioned) DEM (:func:`d8_steepest`).

    Parameters
    ----------
    array : numpy.ndarray
        Elevations (float, NaN nodata), normally the conditioned DEM.
    transform, crs
        Georeferencing of the grid.
    edge_outlets : bool, default True
        Apply ms4map's boundary condition (:func:`_edge_outlets`): a cell at the edge
        of the data (the grid's border or next to nodata) whose pointer runs along that
        edge is an outlet (flow that reaches the DEM edge leaves it); ``False`` gives
        the plain steepest-descent pointer (whitebox-workflows' ``d8_pointer``).

    Returns
    -------
    numpy.ndarray
        uint8 pointer in ESRI/pyflwdir encoding (1=E, 2=SE, 4=S, ... 128=NE), 0 for
        cells without a lower neighbour (and outlets on the edge), 247 for nodata.
    """
    d8 = d8_steepest(array, transform)
    if edge_outlets:
        _edge_outlets(d8)
    return d8


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


# ======================================================================================
# Routing, one step per function
# ======================================================================================
@dataclass
class TargetGrid:
    """The routing targets on the DEM grid (step 1 of :func:`route`).

    Attributes
    ----------
    seed : numpy.ndarray
        int32 raster: the label of the target each cell *is* (0: not a target).
    rows : list of dict
        One row per label (label = position + 1): ``target_kind``, ``target_id``,
        ``name``, ``method``, ``reason``.
    burn, sink : numpy.ndarray
        bool rasters of the water / open conveyance cells (lowered by
        ``burn_depth_m``) and of the inlet cells (lowered by ``inlet_depth_m``).
    off_inlets, shared : list of str
        Inlets outside the DEM (or on nodata cells), and inlets sharing a cell with an
        earlier inlet (that one takes the cell).
    """

    seed: np.ndarray
    rows: list[dict[str, Any]] = field(default_factory=list)
    burn: np.ndarray | None = None
    sink: np.ndarray | None = None
    off_inlets: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)

    def add(
        self,
        kind: str,
        tid: str | None,
        name: Any = None,
        method: str = "d8_catchment",
        reason: str = "",
    ) -> int:
        """Append a target row; returns its label."""
        self.rows.append(
            {
                "target_kind": kind,
                "target_id": tid,
                "name": name,
                "method": method,
                "reason": reason,
            }
        )
        return len(self.rows)

    @property
    def mask(self) -> np.ndarray:
        """bool raster of the target cells."""
        return self.seed > 0


def rasterize_targets(
    shape: tuple[int, int],
    transform: Any,
    valid: np.ndarray,
    *,
    inlets: gpd.GeoDataFrame | None = None,
    conveyances: gpd.GeoDataFrame | None = None,
    waterbodies: gpd.GeoDataFrame | None = None,
) -> TargetGrid:
    """Put the waters, open conveyances and inlets on the DEM grid (step 1).

    Waters take the cells their lines touch and the cells of their polygons (centre
    inside or outline touching); open conveyances every cell they touch; an inlet the
    cell under its point.  A later kind overwrites an earlier one in a shared cell
    (waters, then conveyances, then inlets).

    Parameters
    ----------
    shape : (int, int)
        DEM rows and columns.
    transform : affine.Affine
        The DEM's transform.
    valid : numpy.ndarray
        bool raster of the DEM cells with data (an inlet on a nodata cell is off the DEM).
    inlets, conveyances, waterbodies : GeoDataFrame, optional
        As for :func:`route`.

    Returns
    -------
    TargetGrid
    """
    h, w = shape
    grid = TargetGrid(
        seed=np.zeros((h, w), dtype=np.int32),
        burn=np.zeros((h, w), dtype=bool),
        sink=np.zeros((h, w), dtype=bool),
    )
    seed = grid.seed
    if waterbodies is not None and len(waterbodies):
        wb = _clean_geoms(waterbodies)
        labs = [
            grid.add(
                "water_direct",
                None if is_blank(r.wb_id) else str(r.wb_id).strip(),
                none_if_na(getattr(r, "name", None)),
                reason="reaches the waterbody overland, outside the MS4"
                + ("" if not is_blank(r.wb_id) else " (the waterbody has no wb_id)"),
            )
            for r in wb.itertuples()
        ]
        _rasterize(wb.geometry.values, labs, seed, transform)
    if conveyances is not None and len(conveyances):
        cv = _clean_geoms(conveyances)
        labs = [
            grid.add("conveyance", str(r.conv_id), reason="reaches an open MS4 conveyance overland")
            for r in cv.itertuples()
        ]
        _rasterize(cv.geometry.values, labs, seed, transform, all_touched=True)
    np.greater(seed, 0, out=grid.burn)  # waters and open conveyances are burned
    if inlets is not None and len(inlets):
        pts = inlets[~inlets.geometry.is_empty & inlets.geometry.notna()]
        cols, rows = to_colrow(transform, pts.geometry.x.to_numpy(), pts.geometry.y.to_numpy())
        rows, cols = np.floor(rows).astype(np.int64), np.floor(cols).astype(np.int64)
        inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        inside[inside] &= valid[rows[inside], cols[inside]]
        for nid, r, c, ok in zip(pts["node_id"].astype(str), rows, cols, inside, strict=True):
            if not ok:
                grid.off_inlets.append(nid)
                continue
            prev = seed[r, c]
            if prev and grid.rows[prev - 1]["target_kind"] == "inlet":
                grid.shared.append(nid)
                grid.add(
                    "inlet",
                    nid,
                    method="shared_cell",
                    reason=f"shares its DEM cell with inlet {grid.rows[prev - 1]['target_id']}, "
                    "which takes the cell's runoff",
                )
                continue
            seed[r, c] = grid.add("inlet", nid, reason="reaches the inlet overland")
            grid.sink[r, c] = True
    return grid


def fill_with_outlets(
    wb: _Whitebox,
    z: np.ndarray,
    outlets: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    timings: dict[str, float] | None = None,
) -> np.ndarray:
    """Fill the depressions of ``z`` that drain to no outlet (step 2, whitebox-workflows).

    The fill (priority flood with a gradient on flats, ``fill_depressions``) starts
    from the DEM edge and from every ``outlets`` cell: a depression that holds an
    outlet cell drains to it and is never raised to its spill; only depressions
    without one are filled (up to their spill, with a small gradient across the
    filled flat towards it).

    Parameters
    ----------
    wb : _Whitebox
        The whitebox session (the rasters of this step are dropped from it at the end).
    z : numpy.ndarray
        Elevations (float64; NaN only where ``outlets`` is set).
    outlets : numpy.ndarray
        bool raster of the cells where water leaves the surface (targets, nodata).
    transform, crs
        Georeferencing of the grid.

    Returns
    -------
    numpy.ndarray
        The filled elevations (``z`` itself on ``outlets`` cells): a view of the
        fetched grid, which is one cell larger on each side than ``z`` (its ring and
        outlet cells hold the placeholder elevations of :func:`_outlet_values`).
    """
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    raster, max_depth = wb.send_with_outlets(z, outlets, transform, crs, "framed")
    t1 = time.perf_counter()
    filled_r = wb.fill(raster, max_depth=max_depth)
    wb.forget(raster)
    t2 = time.perf_counter()
    arr, _ = wb.fetch(filled_r, "filled")
    wb.forget(filled_r)
    if arr.dtype != np.float64 or not arr.flags.writeable:
        arr = arr.astype("float64")
    filled = arr[1:-1, 1:-1]  # a view: no copy of the grid (it is not C-contiguous)
    np.copyto(filled, z, where=outlets)
    timings.update({"condition.send": t1 - t0, "condition.fill": t2 - t1})
    timings["condition.fetch"] = time.perf_counter() - t2
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
    from scipy import ndimage

    empty = pd.DataFrame(
        {
            "label": pd.Series([], dtype=np.int64),
            "target_id": pd.Series([], dtype=str),
            "cells": pd.Series([], dtype=np.int64),
            "area_m2": pd.Series([], dtype=float),
            "max_depth_m": pd.Series([], dtype=float),
        }
    )
    h, w = z.shape
    raised = np.empty((h, w), dtype=bool)
    ponded = _PONDED_M / z_to_m  # not the flat gradient of the fill
    step = max(1, (1 << 22) // max(w, 1))  # blocks of rows: no full-grid float temporary
    for r0 in range(0, h, step):
        # NaN (nodata) compares False
        np.greater(filled[r0 : r0 + step] - z[r0 : r0 + step], ponded, out=raised[r0 : r0 + step])
    regions, n = ndimage.label(raised, structure=np.ones((3, 3), bool))
    del raised
    if n == 0:
        return empty
    flat_regions = regions.ravel()
    in_region = np.flatnonzero(flat_regions)
    reg_of = flat_regions[in_region]
    cells = np.bincount(reg_of, minlength=n + 1)
    rr, cc = np.divmod(in_region, w)
    depth = filled[rr, cc] - z[rr, cc]  # only where the fill raised a cell
    del rr, cc
    # max depth per region: sort once, reduce per run (ndimage.maximum is slow with many labels)
    order = np.argsort(reg_of, kind="stable")
    starts = np.concatenate(([0], np.cumsum(cells[1:])[:-1]))
    maxdepth = np.zeros(n + 1)
    maxdepth[1:] = np.maximum.reduceat(depth[order], starts)
    real = np.flatnonzero((maxdepth >= min_depth) & (cells >= min_cells))
    real = real[real > 0]
    if real.size:  # a pool that spills straight into a target drains to it
        into = _spill_into_target(
            regions,
            real,
            in_region=in_region,
            reg_of=reg_of,
            filled=filled,
            target=targets.mask,
            tol=ponded,
        )
        real = real[~into[real]]
    if real.size == 0:
        return empty
    lab_of = np.zeros(n + 1, dtype=np.int64)
    ids = []
    for k, r in enumerate(real, start=1):
        tid = f"DEP{k}"
        ids.append(tid)
        lab_of[r] = targets.add(
            "depression", tid, reason=f"internally drained: ends in closed depression {tid}"
        )
    take = lab_of[reg_of] > 0
    targets.seed.ravel()[in_region[take]] = lab_of[reg_of[take]]
    return pd.DataFrame(
        {
            "label": lab_of[real],
            "target_id": ids,
            "cells": cells[real],
            "area_m2": cells[real] * cell_area_m2,
            "max_depth_m": maxdepth[real] * z_to_m,
        }
    )


def _spill_into_target(
    regions: np.ndarray,
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
    and their region labels.
    """
    h, w = regions.shape
    into = np.zeros(int(reg_of.max()) + 1, dtype=bool)  # one per region label
    pick = np.zeros_like(into)
    pick[cand] = True
    sel = pick[reg_of]
    r, c = np.divmod(in_region[sel], w)
    reg = reg_of[sel]
    level = filled[r, c] + tol
    spill_cells, spill_reg = [], []
    for _dr, _dc, rr, cc, ok in _neighbours(r, c, h, w):
        ok[ok] &= regions[rr[ok], cc[ok]] == 0
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
    zb = z[rows, cols]
    if targets.burn is not None:
        zb = zb - burn_depth * targets.burn[rows, cols]
    if targets.sink is not None:
        zb = zb - inlet_depth * targets.sink[rows, cols]
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


def flow_directions(
    cond: np.ndarray,
    valid: np.ndarray,
    transform: Any,
    *,
    timings: dict[str, float] | None = None,
) -> np.ndarray:
    """Steepest-descent D8 pointer on the conditioned DEM, with the DEM-edge rule (step 5).

    The pointer is :func:`d8_steepest` (the rule of whitebox-workflows' ``d8_pointer``,
    checked equal to it in the tests; about 1 s on 36M cells against 3.2 s for
    whitebox, which needed the changed cells set through a pinned view and its pointer
    file read back), then the boundary condition at the edge of the DEM's data, the
    grid's border and every nodata cell (:func:`_edge_outlets`).

    Returns
    -------
    numpy.ndarray
        uint8 ESRI/pyflwdir codes (0 pit, 247 nodata).
    """
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    d8 = d8_steepest(cond, transform)
    if not valid.all():
        d8[~valid] = _PYFLWDIR_NODATA
    _edge_outlets(d8)
    timings["d8.pointer"] = time.perf_counter() - t0
    return d8


def d8_steepest(z: np.ndarray, transform: Any) -> np.ndarray:
    """Steepest-descent D8 pointer of ``z`` (uint8, ESRI/pyflwdir codes; 0 pit, 247 nodata).

    The neighbour with the largest drop per distance (the cell width or height, or
    the diagonal), strictly downhill; among equal slopes the first of NE, E, SE, S,
    SW, W, NW, N: the rule and order of whitebox-workflows' ``d8_pointer``.  NaN
    cells are nodata; cells beyond the grid are no neighbours (no edge rule here).
    A compiled kernel (``ms4map.hydrology._kernels``, numba).
    """
    from ._kernels import d8_steepest as kernel

    return kernel(np.asarray(z, dtype="float64"), abs(float(transform.a)), abs(float(transform.e)))


def first_target(idxs_ds: np.ndarray | None, targets: TargetGrid, valid: np.ndarray) -> np.ndarray:
    """Label every cell with the first target on its downstream path (step 6).

    Pits that are no target get one of three (:func:`_pit_labels`):
    ``off_dem``/``dem_edge`` at the DEM's edge: on the grid's outermost row or column,
    or next to nodata connected to the grid's border (one target per side, its reason
    naming the side: north, south, west, east; the grid's rows are taken as north-up);
    ``off_dem``/``dem_nodata`` next to an interior nodata hole; else
    ``unknown``/``dem_pit``.  ``idxs_ds`` is the downstream index of each cell
    (:attr:`OverlandResult.idxs_ds`); ``None`` (a DEM under 3 x 3 cells): every cell is
    its own outlet.

    Returns
    -------
    numpy.ndarray
        int32 labels (rows of ``targets``), 0 on nodata cells.
    """
    h, w = valid.shape
    seed = targets.seed
    if idxs_ds is None:
        pits = np.flatnonzero(valid)
    else:
        pits = np.flatnonzero(idxs_ds == np.arange(idxs_ds.size, dtype=idxs_ds.dtype))
    free = pits[seed.ravel()[pits] == 0]
    if free.size:
        seed.ravel()[free] = _pit_labels(free, targets, valid)
    if idxs_ds is None:
        labels = seed.astype(np.int32, copy=True)
    else:
        labels = _label_downstream(idxs_ds, seed.ravel()).reshape(h, w)
    labels[~valid] = 0
    return labels


def _pit_labels(free: np.ndarray, targets: TargetGrid, valid: np.ndarray) -> np.ndarray:
    """Labels of the pits ``free`` (linear indices) that are no target (added to ``targets``).

    A pit on the grid's outermost row or column leaves the DEM by that side; one next
    to nodata connected to the grid's border leaves it by the side that nodata lies on
    (:func:`_side_beyond`): both ``off_dem``/``dem_edge``.  A pit next to an interior
    nodata hole is ``off_dem``/``dem_nodata``; any other ``unknown``/``dem_pit``.
    """
    h, w = valid.shape
    rr, cc = np.divmod(free, w)
    on_edge = (rr == 0) | (rr == h - 1) | (cc == 0) | (cc == w - 1)
    # a corner cell counts for its row's side
    side = np.where(rr == 0, 0, np.where(rr == h - 1, 1, np.where(cc == 0, 2, 3)))
    at_hole = np.zeros(free.size, dtype=bool)
    if not valid.all():
        near = _next_to(~valid, free) & ~on_edge
        if near.any():
            beyond, near_side = _side_beyond(_outside_nodata(valid), free[near])
            ix = np.flatnonzero(near)
            on_edge[ix[beyond]] = True
            side[ix[beyond]] = near_side[beyond]
            at_hole[ix[~beyond]] = True
    lab_side = np.zeros(4, dtype=np.int32)
    for k, name in enumerate(("north", "south", "west", "east")):
        if (on_edge & (side == k)).any():
            lab_side[k] = targets.add(
                "off_dem",
                "dem_edge",
                method="d8_catchment",
                reason=f"flows off the {name} edge of the DEM",
            )
    lab_hole = targets.add(
        "off_dem",
        "dem_nodata",
        method="d8_catchment",
        reason="flows into a nodata hole of the DEM",
    )
    lab_pit = targets.add(
        "unknown",
        "dem_pit",
        method="no_target",
        reason="flow stops in a DEM pit left after conditioning",
    )
    return np.where(on_edge, lab_side[side], np.where(at_hole, lab_hole, lab_pit))


def _side_beyond(outside: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For cells ``idx`` (linear), whether nodata beyond the DEM's edge (``outside``) is
    among their 8 neighbours, and the side of the DEM it lies on (0 north, 1 south,
    2 west, 3 east).

    The side is that of the mean step to those neighbours (rows win a tie, as a
    corner cell of the grid counts for its row's side); where the steps cancel out (a
    strip of data between two nodata regions), the nearest side of the grid.
    """
    h, w = outside.shape
    r, c = np.divmod(idx, w)
    sdr = np.zeros(idx.size, dtype=np.int64)
    sdc = np.zeros(idx.size, dtype=np.int64)
    any_ = np.zeros(idx.size, dtype=bool)
    for dr, dc, rr, cc, ok in _neighbours(r, c, h, w):
        hit = np.zeros(idx.size, dtype=bool)
        hit[ok] = outside[rr[ok], cc[ok]]
        any_ |= hit
        sdr += dr * hit
        sdc += dc * hit
    nearest = np.argmin(np.stack([r, h - 1 - r, c, w - 1 - c]), axis=0)
    side = np.where(
        (sdr == 0) & (sdc == 0),
        nearest,
        np.where(
            np.abs(sdr) >= np.abs(sdc),
            np.where(sdr < 0, 0, 1),
            np.where(sdc < 0, 2, 3),
        ),
    )
    return any_, side


def _label_downstream(idxs_ds: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Label every cell with the ``seed`` label of the first seeded cell downstream.

    ``idxs_ds`` is pyflwdir's downstream index of each cell (-1 on nodata, itself on
    a pit); ``seed`` is > 0 on the outlet cells.  The result equals pyflwdir's
    ``FlwdirRaster.basins(idxs=seeded cells, ids=their labels)`` (the tests check it)
    but walks each path once, with path compression, instead of ordering all cells
    from down- to upstream first (2.4 s of the 3.3 s that ``basins`` takes on 36M
    cells).  A cell whose path ends in an unseeded pit, nodata or a loop gets 0.
    """
    from ._kernels import label_downstream  # numba: compiled once, cached on disk

    return label_downstream(np.ascontiguousarray(idxs_ds), np.ascontiguousarray(seed, np.int32))


def route(
    dem: Dem,
    *,
    inlets: gpd.GeoDataFrame | None = None,
    conveyances: gpd.GeoDataFrame | None = None,
    waterbodies: gpd.GeoDataFrame | None = None,
    min_depth_m: float = DEFAULTS["min_depth_m"],
    min_area_m2: float = DEFAULTS["min_area_m2"],
    burn_depth_m: float = DEFAULTS["burn_depth_m"],
    inlet_depth_m: float = DEFAULTS["inlet_depth_m"],
    progress: ProgressFn | None = None,
    workdir: str | Path | None = None,
) -> OverlandResult:
    """Route every DEM cell to the first inlet, open conveyance, water, depression or edge.

    The chain of steps (``docs/hydrology.md``): :func:`rasterize_targets`,
    :func:`fill_with_outlets` (targets, nodata and the DEM edge are outlets of the
    fill), :func:`find_depressions`, :func:`sink_targets`, :func:`flow_directions`,
    :func:`first_target`.

    Parameters
    ----------
    dem : Dem
        DEM in a projected CRS (array float64 with NaN nodata).
    inlets : GeoDataFrame, optional
        Points with a ``node_id`` column (the storm network's inlet nodes).
    conveyances : GeoDataFrame, optional
        Open MS4 conveyances (lines) with a ``conv_id`` column.
    waterbodies : GeoDataFrame, optional
        Lines or polygons with ``wb_id`` (and optionally ``name``).
    min_depth_m, min_area_m2 : float
        A depression that drains to no target, at least this deep and this large, is
        a real closed depression (internally drained); smaller ones are noise (filled).
    burn_depth_m, inlet_depth_m : float
        How far waterbodies/open conveyances and inlet cells lie below the DEM on the
        conditioned DEM, so that the cells next to them drain into them.
    progress : callable, optional
        Called with a short message at the start of each long step.
    workdir : path, optional
        Folder for the grids exchanged with whitebox-workflows.

    Returns
    -------
    OverlandResult

    Raises
    ------
    DataError
        The DEM is in a geographic CRS, rotated, or has no valid cell; a layer is in
        another CRS than the DEM.
    """
    say = progress or (lambda _msg: None)
    qa = QAReport()
    timings: dict[str, float] = {}
    _check_dem(dem)
    for layer, frame in zip(_TARGET_LAYERS, (inlets, conveyances, waterbodies), strict=True):
        check_layer_crs(frame, dem.crs, layer)
    z = np.asarray(dem.array, dtype="float64")
    h, w = z.shape
    transform, crs = dem.transform, dem.crs
    cell_area_m2 = abs(transform.a * transform.e) * _crs_unit_m(crs) ** 2
    z_to_m = float(dem.z_to_m or 1.0)
    valid = np.isfinite(z)
    settings = {
        "min_depth_m": float(min_depth_m),
        "min_area_m2": float(min_area_m2),
        "burn_depth_m": float(burn_depth_m),
        "inlet_depth_m": float(inlet_depth_m),
    }
    _warn_if_flat(z, qa)

    t0 = time.perf_counter()
    say("overland: rasterizing targets")
    targets = rasterize_targets(
        (h, w), transform, valid, inlets=inlets, conveyances=conveyances, waterbodies=waterbodies
    )
    _target_findings(targets, qa)
    timings["rasterize_targets"] = time.perf_counter() - t0

    tiny = _warn_if_tiny((h, w), qa)
    t0 = time.perf_counter()
    say("overland: conditioning the DEM (targets and the DEM edge are outlets of the fill)")
    if tiny:
        filled = z.copy()
    else:
        with _Whitebox(workdir) as wb:
            filled = fill_with_outlets(
                wb, z, targets.mask | ~valid, transform, crs, timings=timings
            )
    timings["condition"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say("overland: finding closed depressions")
    dep_table = find_depressions(
        z,
        filled,
        targets,
        min_depth=min_depth_m / z_to_m,
        min_cells=min_area_m2 / cell_area_m2,
        z_to_m=z_to_m,
        cell_area_m2=cell_area_m2,
    )
    timings["depressions"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say("overland: D8 flow directions")
    cond = filled
    del filled
    sink_targets(
        z,
        cond,
        targets,
        valid,
        burn_depth=burn_depth_m / z_to_m,
        inlet_depth=inlet_depth_m / z_to_m,
        step=_SINK_STEP_M / z_to_m,
    )
    d8 = None if tiny else flow_directions(cond, valid, transform, timings=timings)
    timings["d8"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say("overland: routing every cell to its first target")
    target_mask = targets.mask
    idxs_ds = None if d8 is None else _downstream_index(d8)
    labels = first_target(idxs_ds, targets, valid)
    timings["route"] = time.perf_counter() - t0
    tdf = _target_table(targets, labels, cell_area_m2)
    qa.note(
        f"overland: {h} x {w} cells ({cell_area_m2:g} m2 each), {int((~valid).sum())} nodata; "
        f"{(tdf['target_kind'] == 'inlet').sum()} inlet targets, {len(dep_table)} closed depression(s)."
    )
    result = OverlandResult(
        labels=labels,
        targets=tdf,
        target_mask=target_mask,
        d8=d8,
        conditioned=cond,
        transform=transform,
        crs=crs,
        cell_area_m2=cell_area_m2,
        depression_table=dep_table,
        qa=qa,
        settings=settings,
        timings=timings,
    )
    if idxs_ds is not None:
        result._cache["idxs_ds"] = idxs_ds
    return result


def _warn_if_flat(z: np.ndarray, qa: QAReport) -> None:
    """Warn when the DEM has (almost) no relief."""
    if np.nanmax(z) - np.nanmin(z) < 1e-6:
        qa.warning(
            "dem_flat",
            "dem",
            "The DEM is flat: flow directions follow only the gradient imposed on flats "
            "(towards the DEM edge and the MS4 features).",
            fix="Check that the DEM is an elevation raster (not a mask or a constant).",
            step="overland",
        )


def _warn_if_tiny(shape: tuple[int, int], qa: QAReport) -> bool:
    """Whether the DEM is too small to route flow (fewer than 3 cells a side), with a warning."""
    h, w = shape
    tiny = min(h, w) < 3
    if tiny:
        qa.warning(
            "dem_too_small",
            "dem",
            f"The DEM has {h} x {w} cells: too small to route flow; every cell drains to "
            "itself (a target in it, else off the DEM).",
            fix="Use a DEM that covers the area with a margin.",
            step="overland",
        )
    return tiny


def _downstream_index(d8: np.ndarray) -> np.ndarray:
    """Each cell's downstream cell (flat index) from the D8 directions."""
    from ._kernels import downstream_index

    return downstream_index(d8)


def _target_findings(targets: TargetGrid, qa: QAReport) -> None:
    """QA on the inlets put on the grid: those off the DEM, those sharing a cell."""
    findings = (
        (
            targets.off_inlets,
            qa.warning,
            "inlet_off_dem",
            "lie outside the DEM or on nodata cells; they get no surface catchment.",
            {"fix": "Use a DEM that covers the whole storm network."},
        ),
        (
            targets.shared,
            qa.info,
            "inlets_share_cell",
            "share a DEM cell with another inlet; the first one takes that cell's runoff.",
            {},
        ),
    )
    for ids, add, code, what, fix in findings:
        if ids:
            add(
                code,
                "structures",
                f"{len(ids)} inlet(s) {what}",
                feature_id=", ".join(ids[:50]),
                count=len(ids),
                step="overland",
                **fix,
            )


def _target_table(targets: TargetGrid, labels: np.ndarray, cell_area_m2: float) -> pd.DataFrame:
    """The targets table of :class:`OverlandResult` (index ``label``), with cell counts."""
    cols = ["target_kind", "target_id", "name", "method", "reason"]
    tdf = pd.DataFrame(targets.rows, columns=cols)
    tdf.index = pd.RangeIndex(1, len(tdf) + 1, name="label")
    counts = np.bincount(labels.ravel(), minlength=len(tdf) + 1)
    tdf["cells"] = counts[1 : len(tdf) + 1].astype(np.int64)
    tdf["area_m2"] = tdf["cells"] * cell_area_m2
    for col in ("target_kind", "target_id", "method", "reason"):
        tdf[col] = tdf[col].astype(str)
    special = tdf["target_kind"].isin(["off_dem", "unknown"])
    tdf = tdf[~special | (tdf["cells"] > 0)]
    if targets.off_inlets:
        n = len(targets.rows)
        extra = pd.DataFrame(
            {
                "target_kind": "inlet",
                "target_id": targets.off_inlets,
                "name": None,
                "method": "off_dem",
                "reason": "the inlet lies outside the DEM",
                "cells": 0,
                "area_m2": 0.0,
            }
        )
        extra.index = pd.RangeIndex(n + 1, n + 1 + len(extra), name="label")
        tdf = pd.concat([tdf, extra])
    return tdf


# ======================================================================================
# Polygons and point queries
# ======================================================================================
def catchment_polygons(
    result: OverlandResult, *, kinds: tuple[str, ...] | None = ("inlet",)
) -> gpd.GeoDataFrame:
    """Polygons of the cells that reach each target first.

    Parameters
    ----------
    result : OverlandResult
    kinds : tuple of str, optional
        Target kinds to polygonize (``None``: all).

    Returns
    -------
    GeoDataFrame
        ``target_kind``, ``target_id``, ``cells``, ``area_m2``, geometry (Polygon or
        MultiPolygon); targets with no cell on the DEM are left out.
    """
    t = result.targets
    sel = t if kinds is None else t[t["target_kind"].isin(kinds)]
    sel = sel[sel["cells"] > 0]
    return polygonize(
        result.labels,
        sel,
        result.transform,
        result.crs,
        columns=["target_kind", "target_id", "cells", "area_m2"],
    )


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


# ======================================================================================
# Workspace adapter
# ======================================================================================
def network_targets(
    ws: Workspace, net: _NetworkTables | None = None
) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """Inlet points (``node_id``) and open conveyances (``conv_id``) for routing.

    This is the one place that reads the storm network's attributes (``nodes`` with
    ``is_inlet``, ``edges`` with ``is_open``), per ``docs/CONTRACTS.md``.
    """
    from ..core.schema import INLET_KINDS, OPEN_CONVEYANCE_KINDS

    crs = ws.crs
    if net is not None:
        nodes = net.nodes
        inl = nodes[nodes["is_inlet"].fillna(False).astype(bool)]
        inlets = gpd.GeoDataFrame(
            {"node_id": inl.index.astype(str)}, geometry=inl.geometry.values, crs=nodes.crs
        )
        edges = net.edges
        op = edges[edges["is_open"].fillna(False).astype(bool)]
        conv = gpd.GeoDataFrame(
            {"conv_id": op["conv_id"].astype(str).values},
            geometry=op.geometry.values,
            crs=edges.crs,
        )
        return inlets, conv
    inlets = _kind_layer(ws.get("structures"), INLET_KINDS, "struct_id", "node_id", crs)
    conv = _kind_layer(ws.get("conveyances"), OPEN_CONVEYANCE_KINDS, "conv_id", "conv_id", crs)
    return inlets, conv


# ======================================================================================
# Helpers
# ======================================================================================
def _kind_layer(
    df: gpd.GeoDataFrame | None, kinds: Any, id_col: str, out_col: str, crs: Any
) -> gpd.GeoDataFrame:
    """The features of ``df`` whose ``kind`` is in ``kinds``: column ``out_col`` (ids) + geometry."""
    if df is not None and len(df):
        sel = df[df["kind"].isin(kinds)]
        return gpd.GeoDataFrame(
            {out_col: sel[id_col].astype(str).values}, geometry=sel.geometry.values, crs=crs
        )
    return gpd.GeoDataFrame(
        {out_col: pd.Series([], dtype=str)}, geometry=gpd.GeoSeries([], crs=crs), crs=crs
    )


_TARGET_LAYERS = ("inlets", "conveyances", "waterbodies")


def check_layer_crs(frame: Any, crs: Any, layer: str) -> None:
    """Raise :class:`DataError` when ``frame`` (a layer) is in another CRS than the DEM.

    :func:`route` and :func:`ms4map.drainage.parcel_drainage` compare coordinates with
    the DEM's grid: a layer in another CRS would fall off the grid (its inlets on no
    cell, its parcels 100 % ``off_dem``) without any other sign.  A frame or DEM
    without a CRS is not checked (it is taken to be in the DEM's).
    """
    if frame is None or getattr(frame, "crs", None) is None or crs is None:
        return
    from pyproj import CRS

    theirs, ours = CRS.from_user_input(frame.crs), CRS.from_user_input(crs)
    if not theirs.equals(ours, ignore_axis_order=True):
        raise DataError(
            f"Layer '{layer}' is in {theirs.to_string()} but the DEM is in "
            f"{ours.to_string()}: its features would fall off the DEM's grid. Fix: "
            f"reproject it first ({layer}.to_crs(dem.crs)), or run the workspace through "
            "ms4map.pipeline.run, which reprojects every layer to the working CRS."
        )


def _check_dem(dem: Dem) -> None:
    if not isinstance(dem, Dem):
        raise TypeError(f"'dem' must be an ms4map.workspace.Dem, got {type(dem).__name__}")
    arr = np.asarray(dem.array)
    if arr.ndim != 2 or arr.size == 0:
        raise DataError("The DEM has no cells. Fix: provide a DEM GeoTIFF with data.")
    if not np.isfinite(arr).any():
        raise DataError("The DEM has only nodata cells. Fix: provide a DEM with elevations.")
    crs = dem.crs
    if crs is None:
        raise DataError("The DEM has no CRS. Fix: assign one (gdal_edit.py -a_srs EPSG:...).")
    from pyproj import CRS

    c = CRS.from_user_input(crs)
    if c.is_geographic:
        raise DataError(
            f"The DEM is in a geographic CRS ({c.name}); flow routing needs square cells in "
            "metres or feet. Fix: open the workspace with a projected --crs (e.g. EPSG:26918) "
            "so the DEM is warped, or reproject the DEM (gdalwarp -t_srs EPSG:26918)."
        )
    t = dem.transform
    if t.b != 0 or t.d != 0:
        raise DataError("The DEM grid is rotated. Fix: warp it to a north-up grid (gdalwarp).")


def to_colrow(transform: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """Fractional ``(col, row)`` of map coordinates ``x``, ``y`` on a north-up grid with
    affine ``transform`` (cell ``(c, r)`` spans ``[c, c + 1) x [r, r + 1)``)."""
    return (np.asarray(x) - transform.c) / transform.a, (np.asarray(y) - transform.f) / transform.e


def _crs_unit_m(crs: Any) -> float:
    return metres_per_unit(crs)


def _clean_geoms(gdf: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    return gdf[gdf.geometry.notna() & ~gdf.geometry.is_empty]


def geojson_shapes(geoms: Any, values: Any) -> Any:
    """``(GeoJSON dict, value)`` pairs for :func:`rasterio.features.rasterize`.

    Going through ``shapely.to_geojson`` is about twice as fast as letting rasterio
    read each shapely geometry's ``__geo_interface__``.
    """
    import json

    texts = shapely.to_geojson(np.asarray(geoms, dtype=object))
    return ((json.loads(t), v) for t, v in zip(texts, values, strict=True))


def _rasterize(
    geoms: Any,
    values: list[int],
    out: np.ndarray,
    transform: Any,
    *,
    all_touched: bool = False,
) -> None:
    """Burn ``values`` for ``geoms`` into ``out`` (later geometries win); lines touch their cells.

    Polygons take the cells whose centre they hold, plus the cells their outline
    touches (so narrow water polygons stay connected); where a polygon's cells and a
    line's touched cells meet, the polygon (and the lines drawn without ``all_touched``)
    win.  Cells no geometry covers keep their value in ``out``.
    """
    from rasterio import features

    shapes = []
    for g, v in zip(geoms, values, strict=True):
        if g.geom_type in ("Polygon", "MultiPolygon"):
            shapes.append((g, v))
            shapes.append((g.boundary, v))
        else:
            shapes.append((g, v))
    lines = [(g, v) for g, v in shapes if g.geom_type not in ("Polygon", "MultiPolygon")]
    if lines and not all_touched:  # the touched cells first: the shapes below win over them
        features.rasterize(lines, out=out, transform=transform, all_touched=True)
    features.rasterize(shapes, out=out, transform=transform, all_touched=all_touched)
