"""DEMs as they come: one file, a ``.vrt``, a folder of GeoTIFF tiles or a list of files, read as one mosaic.

A DEM source is a :class:`~pathlib.Path` (a raster GDAL reads, a ``.vrt``, or a folder of
``.tif``/``.tiff`` tiles) or a tuple of paths (the tiles).  :func:`open_dem_dataset`
opens it as one rasterio dataset: a file as it is (a ``.vrt`` is GDAL's own mosaic),
several tiles merged by :func:`rasterio.merge.merge` onto the grid of the first one
(tiles in another CRS are warped through :class:`rasterio.vrt.WarpedVRT`, tiles of
another resolution resampled, both bilinearly and reported), in memory: nothing is
written next to the user's tiles.  Cells no tile covers are nodata, reported with their
area (``dem_tile_gap``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import DataError, InputOpenError
from ..core.qa import QAReport
from .sources import _short

__all__ = ["TILE_SUFFIXES", "dem_label", "dem_source", "open_dem_dataset", "tile_files"]

#: The suffixes of the tiles taken from a folder (any case).
TILE_SUFFIXES = (".tif", ".tiff")

DemSource = Path | tuple[Path, ...]


def dem_source(dem: str | Path | Sequence[str | Path]) -> DemSource:
    """The DEM a user named: one path, or a tuple of two or more (the tiles).

    Raises
    ------
    InputOpenError
        A path that does not exist, a folder without tiles, or an empty list.
    """
    items = [dem] if isinstance(dem, (str, Path)) else list(dem)
    if not items:
        raise InputOpenError(
            "No DEM file given. Fix: give --dem FILE, a folder of tiles or a .vrt."
        )
    paths = tuple(Path(p).expanduser() for p in items)
    for p in paths:
        if not p.exists():
            raise InputOpenError(f"DEM '{p}' does not exist. Fix: check the --dem path.")
        if p.is_dir() and len(paths) > 1:
            raise InputOpenError(
                f"DEM '{p}' is a folder in a list of DEM files. Fix: give either one folder "
                "of tiles or a list of tile files."
            )
    if len(paths) == 1:
        tile_files(paths[0])  # a folder without tiles is said now
        return paths[0]
    return paths


def tile_files(source: DemSource) -> list[Path]:
    """The files of a DEM source: the file itself, a folder's tiles (sorted by name), or
    the list.

    Raises
    ------
    InputOpenError
        A folder with no ``.tif``/``.tiff`` file.
    """
    if isinstance(source, tuple):
        return list(source)
    if source.is_dir():
        tiles = sorted(
            (f for f in source.iterdir() if f.is_file() and f.suffix.lower() in TILE_SUFFIXES),
            key=lambda f: f.name,
        )
        if not tiles:
            raise InputOpenError(
                f"DEM folder '{source}' holds no GeoTIFF tile (.tif, .tiff). Fix: give the "
                "folder the tiles are in, a .vrt of them, or the files themselves."
            )
        return tiles
    return [source]


def dem_label(source: DemSource) -> str:
    """How messages name a DEM source."""
    if isinstance(source, tuple):
        more = f" and {len(source) - 1} more tile(s)" if len(source) > 1 else ""
        return f"{source[0].name}{more}"
    return source.name


@contextlib.contextmanager
def open_dem_dataset(source: DemSource, *, report: QAReport | None = None) -> Iterator[Any]:
    """The DEM source as one open rasterio dataset (closed on exit).

    Parameters
    ----------
    source : Path or tuple of Path
        From :func:`dem_source`.
    report : QAReport, optional
        Receives the mosaic's findings (``dem_mosaic``, ``dem_tiles_warped``,
        ``dem_tile_gap``); none are made for a single file.

    Raises
    ------
    InputOpenError
        A file GDAL cannot open (named).
    DataError
        A tile without a CRS, or tiles that cannot be warped onto the first one's grid.
    """
    files = tile_files(source)
    if len(files) == 1:
        with _open(files[0]) as ds:
            yield ds
        return
    with contextlib.ExitStack() as stack:
        tiles = [stack.enter_context(_open(f)) for f in files]
        mem, ds = _mosaic(files, tiles, report if report is not None else QAReport())
        stack.enter_context(mem)
        with ds:
            yield ds


def _dem_open_error(path: Path, exc: Exception) -> InputOpenError:
    """The error for a DEM GDAL cannot open (not a raster, or its header is cut off)."""
    return InputOpenError(
        f"DEM '{path}' cannot be opened: {_short(exc).rstrip('.')}. Fix: give a GeoTIFF (or another "
        "raster GDAL reads; `gdalinfo FILE` shows whether it can); a file cut off while "
        "copying or downloading must be copied or exported again."
    )


def _open(path: Path) -> Any:
    import rasterio

    try:
        return rasterio.open(path, num_threads="ALL_CPUS")
    except rasterio.errors.RasterioIOError as exc:
        raise _dem_open_error(path, exc) from None


def _mosaic(files: list[Path], tiles: list[Any], report: QAReport) -> tuple[Any, Any]:
    """Merge ``tiles`` onto the first one's grid; returns (MemoryFile, open dataset)."""
    from rasterio.enums import Resampling
    from rasterio.io import MemoryFile
    from rasterio.merge import merge
    from rasterio.vrt import WarpedVRT

    first = tiles[0]
    for f, t in zip(files, tiles, strict=True):
        if t.crs is None:
            raise DataError(
                f"DEM tile '{f.name}' has no CRS. Fix: assign one "
                f"(gdal_edit.py -a_srs EPSG:... {f})."
            )
    crs, res = first.crs, first.res
    # float32 at least (nodata is NaN), wider when a tile is (no precision lost)
    dtype = np.result_type(np.float32, *(np.dtype(t.dtypes[0]) for t in tiles)).name
    sources, warped, resampled = [], [], []
    for f, t in zip(files, tiles, strict=True):
        if t.crs != crs:
            sources.append(WarpedVRT(t, crs=crs, resampling=Resampling.bilinear))
            warped.append(f"{f.name} ({t.crs.to_string()})")
        else:
            sources.append(t)
            if not all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(t.res, res, strict=True)):
                resampled.append(f"{f.name} ({t.res[0]:g} x {t.res[1]:g})")
    try:
        arr, transform = merge(
            sources,
            res=res,
            nodata=np.nan,
            dtype=dtype,
            resampling=Resampling.bilinear,
            indexes=[1],
        )
    except Exception as exc:  # noqa: BLE001 - GDAL's reason is named below
        raise DataError(
            f"The DEM tiles {', '.join(f.name for f in files[:3])}... cannot be merged onto "
            f"the grid of '{files[0].name}' ({str(exc)[:200]}). Fix: check each tile with "
            "gdalinfo, or build a mosaic with gdalbuildvrt and give the .vrt."
        ) from None
    finally:
        for s in sources:
            if isinstance(s, WarpedVRT):
                s.close()
    band = arr[0]
    _report_mosaic(
        files,
        tiles,
        band,
        transform=transform,
        crs=crs,
        report=report,
        warped=warped,
        resampled=resampled,
    )
    mem = MemoryFile()
    h, w = band.shape
    with mem.open(
        driver="GTiff",
        width=w,
        height=h,
        count=1,
        dtype=dtype,
        crs=crs,
        transform=transform,
        nodata=np.nan,
    ) as out:
        out.write(band, 1)
        unit = first.units[0] if first.units else None
        if unit:
            out.units = (unit,)
    del arr, band
    return mem, mem.open()


def _report_mosaic(
    files: list[Path],
    tiles: list[Any],
    band: np.ndarray,
    *,
    transform: Any,
    crs: Any,
    report: QAReport,
    warped: list[str],
    resampled: list[str],
) -> None:
    """Say what the mosaic is: its tiles and grid, what was warped or resampled, its gaps."""
    from rasterio.features import geometry_mask
    from rasterio.warp import transform_bounds
    from shapely.geometry import box

    res = tiles[0].res
    report.info(
        "dem_mosaic",
        "dem",
        f"DEM: {len(files)} tiles read as one mosaic on the grid of '{files[0].name}' "
        f"({crs.to_string()}, cells of {res[0]:g} x {res[1]:g}, {band.shape[1]} x {band.shape[0]} "
        "cells).",
        feature_id="dem",
    )
    if warped or resampled:
        said = []
        if warped:
            said.append(f"warped from another CRS: {', '.join(warped)}")
        if resampled:
            said.append(f"resampled from another cell size: {', '.join(resampled)}")
        report.warning(
            "dem_tiles_warped",
            "dem",
            f"DEM tiles not on the grid of '{files[0].name}' were resampled bilinearly onto it "
            f"({'; '.join(said)}).",
            feature_id="dem",
            fix="Give tiles of one CRS and cell size (gdalwarp) to avoid resampling.",
        )
    foot = [box(*transform_bounds(t.crs, crs, *t.bounds)) for t in tiles]
    outside = geometry_mask(foot, out_shape=band.shape, transform=transform, all_touched=False)
    gaps = int(outside.sum())
    if gaps:
        unit_m = _metres_per_unit(crs)
        area_m2 = gaps * abs(res[0] * res[1]) * unit_m * unit_m
        report.warning(
            "dem_tile_gap",
            "dem",
            f"DEM tiles leave {gaps} cell(s) ({area_m2 / 10_000:.2f} ha) of the mosaic "
            "uncovered (between or beside the tiles); they are nodata, and flow there is "
            "unknown.",
            feature_id="dem",
            count=gaps,
            fix="Add the missing tile(s) to the folder or list.",
        )


def _metres_per_unit(crs: Any) -> float:
    try:
        return float(crs.linear_units_factor[1])
    except Exception:  # noqa: BLE001 - a geographic CRS: its area is not said in metres
        return float("nan")
