"""DEMs: :func:`read_dem`, the warp to the working CRS, vertical units, bad cells, coverage."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS

from ..core.errors import DataError, InputOpenError
from ..core.qa import QAReport
from .crs import metres_to_crs_units
from .dem_tiles import (
    DemSource,
    _dem_open_error,
    dem_label,
    dem_source,
    open_dem_dataset,
    tile_files,
)
from .sources import _short
from .workspace import Dem

__all__ = ["PLAUSIBLE_ELEVATION_M", "read_dem", "warp_bilinear"]


def _find_dem(base: Path | None, dem: Any, no_dem: bool) -> DemSource | None:
    """The DEM source: ``dem`` as given (a file, a ``.vrt``, a folder of tiles, a list),
    else ``<stem>_dem.tif`` beside the workspace file, else None."""
    if no_dem:
        return None
    if dem is not None:
        return dem_source(dem)
    if base is not None and base.is_file():
        cand = base.with_name(f"{base.stem}_dem.tif")
        if cand.exists():
            return cand
    return None


def _dem_crs(path: DemSource, report: QAReport) -> CRS | None:
    """The CRS of the DEM (of its first tile), or None (an error in ``report``)."""
    import rasterio

    first = tile_files(path)[0]
    try:
        with rasterio.open(first) as src:
            if src.crs is None:
                report.error(
                    "missing_crs",
                    "dem",
                    f"DEM '{first.name}' has no CRS.",
                    fix="Assign its CRS (gdal_edit.py -a_srs EPSG:26918 dem.tif) and re-run.",
                )
                return None
            return CRS.from_user_input(src.crs.to_wkt())
    except rasterio.errors.RasterioIOError as exc:
        raise _dem_open_error(first, exc) from None


def warp_bilinear(
    array: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    dst_transform: Any,
    dst_crs: Any,
    shape: tuple[int, int],
) -> np.ndarray:
    """``array`` (NaN = no data) on the grid ``transform`` of ``crs``, resampled bilinearly
    onto the grid ``dst_transform`` of ``dst_crs`` with ``shape`` rows and columns (NaN
    where nothing lands): the DEM's warp to the working CRS and the hillshade's to web
    mercator."""
    from rasterio.warp import Resampling, reproject

    out = np.full(shape, np.nan, dtype="float64")
    reproject(
        array,
        out,
        src_transform=transform,
        src_crs=crs,
        dst_transform=dst_transform,
        dst_crs=dst_crs,
        src_nodata=np.nan,
        dst_nodata=np.nan,
        resampling=Resampling.bilinear,
    )
    return out


def read_dem(
    path: str | Path | Sequence[str | Path],
    *,
    crs: Any = None,
    report: QAReport | None = None,
) -> Dem:
    """Read a DEM into a :class:`~ms4map.io.workspace.Dem`, warping it into ``crs`` if needed.

    Nodata becomes NaN, and so do values no elevation on Earth can have (voids written
    as -9999 without a nodata tag, see :func:`_mask_implausible`).  Findings
    (implausible values, reprojection, nodata holes, unknown vertical units) go to
    ``report``.

    Parameters
    ----------
    path : str or Path or list of them
        The DEM raster (band 1 is read): one file GDAL reads (a ``.vrt`` is GDAL's
        mosaic), a folder of GeoTIFF tiles, or a list of tiles; tiles are read as one
        mosaic on the first one's grid (:mod:`ms4map.io.dem_tiles`).
    crs : optional
        The CRS to warp it into (the working CRS); ``None`` keeps the DEM's.
    report : QAReport, optional
        Receives the findings (a new report when ``None``).

    Returns
    -------
    Dem

    Raises
    ------
    InputOpenError
        GDAL cannot open or read the file.
    DataError
        No CRS, a geographic CRS whose coordinates are no degrees, a warp GDAL cannot
        do, no cells or no valid cell; each message names the file and the fix.
    """
    report = report if report is not None else QAReport()
    source = dem_source(path)
    # a folder or list: named by its first tile in messages; NUM_THREADS=ALL_CPUS (GDAL
    # decompresses the blocks of a compressed GeoTIFF on every core) in open_dem_dataset
    p = source if isinstance(source, Path) else Path(dem_label(source))
    with open_dem_dataset(source, report=report) as src:
        if src.crs is None:
            raise DataError(
                f"DEM '{p.name}' has no CRS. Fix: assign one (gdal_edit.py -a_srs EPSG:... {p})."
            )
        src_crs = CRS.from_user_input(src.crs.to_wkt())
        target = CRS.from_user_input(crs) if crs is not None else src_crs
        _check_degrees(p, src_crs, src, target)
        arr = _read_band(src, p)
        transform = src.transform
        unit = (src.units[0] if src.units and src.units[0] else None) or _vertical_unit(src_crs)
        unit_name = None if unit is None else str(unit)
        z_to_m = _z_to_m(unit_name)
        _mask_implausible(arr, p, nodata=src.nodata, unit=unit_name, z_to_m=z_to_m, report=report)
        if not src_crs.equals(target):
            arr, transform = _warp_dem(arr, src, p, target, report)
    if arr.size == 0:
        raise DataError(f"DEM '{p.name}' has no cells. Fix: give the DEM of this area with --dem.")
    finite_any = bool(np.isfinite(arr).any())
    if finite_any and np.isnan(arr).any():
        interior = _interior_nodata(arr)
        if interior:
            report.warning(
                "dem_nodata",
                "dem",
                f"DEM has {interior} nodata cell(s) inside its extent; flow there is unknown.",
                feature_id="dem",
                count=interior,
                fix="Fill the holes (e.g. gdal_fillnodata) or accept 'unknown' drainage there.",
            )
    if not finite_any:
        raise DataError(
            f"DEM '{p.name}' has only nodata cells. Fix: check it with `gdalinfo -stats {p}`: "
            "if its elevations equal the nodata value, correct the tag (gdal_edit.py "
            f"-a_nodata VALUE {p}, or -unsetnodata); otherwise export the DEM of this area "
            "again, or give another one with --dem."
        )
    if unit is None:
        report.warning(
            "vertical_units_unknown",
            "dem",
            "The DEM does not say its vertical unit; metres are assumed.",
            fix="Set the band unit (gdal_edit.py -units metre dem.tif) or use a compound CRS.",
        )
    return Dem(
        array=arr,
        transform=transform,
        crs=CRS.from_user_input(crs) if crs else src_crs,
        path=source if isinstance(source, Path) else source[0],
        vertical_unit=unit_name,
        z_to_m=z_to_m,
    )


def _z_to_m(unit: str | None) -> float:
    """Metres per vertical unit of the DEM (1 for metres, an unknown or other unit)."""
    if unit is None:
        return 1.0
    low = unit.lower()
    if "us survey" in low or low in ("ftus", "us_ft", "us-ft"):
        return 1200 / 3937
    if "f" in low and ("oot" in low or "eet" in low or low in ("ft", "feet")):
        return 0.3048
    return 1.0


def _is_metre(unit: str | None) -> bool:
    """Whether a band unit names metres."""
    low = (unit or "").strip().lower()
    return low in ("m", "metre", "meter", "metres", "meters") or low.startswith("metre")


def _projected_epsg(crs: CRS) -> str:
    """``EPSG:xxxx`` of a projected CRS for a fix, else a placeholder."""
    if crs.is_projected:
        code = crs.to_epsg()
        return f"EPSG:{code}" if code else crs.to_string()
    return "EPSG:<the projected CRS of its coordinates>"


def _check_degrees(p: Path, src_crs: CRS, src: Any, target: CRS) -> None:
    """A DEM tagged with a geographic CRS whose extent is no longitudes/latitudes (a
    wrong CRS assigned to projected metres) is a :class:`DataError` naming the fix.

    One cell beyond +-180 / +-90 is allowed (global grids whose cell centres lie on the
    poles or the antimeridian reach half a cell past them).
    """
    if not src_crs.is_geographic:
        return
    b = src.bounds
    rx, ry = abs(src.res[0]), abs(src.res[1])
    if max(abs(b.left), abs(b.right)) <= 180 + rx and max(abs(b.bottom), abs(b.top)) <= 90 + ry:
        return
    layers = f"the layers' {target.name}" if target.is_projected else "your layers' CRS"
    raise DataError(
        f"DEM '{p.name}' is tagged with the geographic CRS {src_crs.name} "
        f"({src_crs.to_string()}), but its extent {_fmt_bounds(b)} is not in degrees (a "
        "longitude lies within +-180, a latitude within +-90): the CRS assigned to it is "
        "wrong, its coordinates are projected (metres or feet). Fix: assign the CRS its "
        f"coordinates are in, e.g. {layers}: gdal_edit.py -a_srs {_projected_epsg(target)} "
        f"{p}, then re-run."
    )


def _warp_dem(arr: np.ndarray, src: Any, p: Path, target: CRS, report: QAReport) -> tuple:
    """``arr`` (the band of ``src``) warped to ``target``, with its transform; a warp
    GDAL cannot do is a :class:`DataError` naming the file and the fix."""
    import rasterio
    from rasterio._err import CPLE_BaseError
    from rasterio.warp import calculate_default_transform

    src_crs = CRS.from_user_input(src.crs.to_wkt())
    try:
        dst_t, w, h = calculate_default_transform(
            src_crs, target, src.width, src.height, *src.bounds
        )
        out = warp_bilinear(
            arr, src.transform, src_crs, dst_transform=dst_t, dst_crs=target, shape=(h, w)
        )
    except (rasterio.errors.RasterioError, rasterio.errors.CRSError, CPLE_BaseError) as exc:
        raise DataError(
            f"DEM '{p.name}' cannot be warped from {src_crs.name} to the working CRS "
            f"{target.name} ({_short(exc).rstrip('.')}); its CRS tag may not match its "
            f"coordinates (extent {_fmt_bounds(src.bounds)}). Fix: check `gdalinfo {p}`; "
            "assign the CRS its coordinates are in (gdal_edit.py -a_srs "
            f"{_projected_epsg(target)} {p}), or give the DEM in the working CRS "
            f"(gdalwarp -t_srs {_projected_epsg(target)} {p} dem_fixed.tif)."
        ) from None
    report.warning(
        "dem_reprojected",
        "dem",
        f"DEM '{p.name}' is in {src_crs.name}; it was warped to the working CRS {target.name} "
        "(bilinear).",
        fix="Provide the DEM in the working CRS to avoid resampling.",
    )
    if src_crs.is_geographic:
        report.warning(
            "dem_geographic",
            "dem",
            "DEM is in a geographic CRS; cell sizes in degrees were converted by warping.",
            fix="Provide a projected DEM.",
        )
    return out, dst_t


#: Elevations (metres) outside this range exist nowhere on Earth (the Dead Sea shore is
#: at -430 m, Everest at 8,849 m): such values in a DEM are voids (-9999, -32768,
#: -3.4e38 written without a nodata tag) and are read as nodata.
PLAUSIBLE_ELEVATION_M = (-500.0, 10_000.0)


def _plausible_range(unit: str | None, z_to_m: float) -> tuple[float, float]:
    """The plausible elevations in the DEM's vertical unit.  For a DEM that does not say
    its unit (or names one ms4map does not convert), the upper bound is 10,000 m in
    feet, so the high ground of a DEM in feet that does not say so is kept."""
    lo, hi = PLAUSIBLE_ELEVATION_M
    if z_to_m != 1.0:
        return lo / z_to_m, hi / z_to_m
    if not _is_metre(unit):
        return lo, hi / 0.3048
    return lo, hi


def _plausible_text(lo: float, hi: float, unit: str | None, z_to_m: float) -> str:
    """The plausible range of :func:`_plausible_range` in words, for the messages."""
    if z_to_m != 1.0:
        return f"{lo:,.0f} .. {hi:,.0f} {unit} (-500 .. 10,000 m)"
    if _is_metre(unit):
        return f"{lo:,.0f} .. {hi:,.0f} m"
    said = "does not say its unit" if unit is None else f"has the unit '{unit}', not converted"
    return f"{lo:,.0f} .. {hi:,.0f}: the DEM {said}, so up to 10,000 m in feet is kept"


def _fmt_value(v: float) -> str:
    """A raster value as typed in a GDAL command (``-9999``, ``-3.4028234663852886e+38``)."""
    if np.isfinite(v) and abs(v) < 1e15 and float(v).is_integer():
        return str(int(v))
    return repr(float(v))


def _mask_implausible(
    arr: np.ndarray,
    p: Path,
    *,
    nodata: float | None,
    unit: str | None,
    z_to_m: float,
    report: QAReport,
) -> None:
    """Set the cells of ``arr`` (in place) whose value no elevation can have to NaN.

    The range is :data:`PLAUSIBLE_ELEVATION_M` in the DEM's vertical unit
    (:func:`_plausible_range`).  Such cells are voids whose value was written without
    a nodata tag (or with another tag); taken as elevations they would be pits
    kilometres deep, filled into "closed depressions".  A warning (``dem_implausible_values``)
    names the file, the values, the cell count and the fix; a DEM with no plausible
    cell left is a :class:`DataError`.
    """
    lo, hi = _plausible_range(unit, z_to_m)
    if arr.size and lo <= np.fmin.reduce(arr, axis=None) and np.fmax.reduce(arr, axis=None) <= hi:
        return  # every value plausible (NaN ignored): no mask of the grid to build
    bad = np.less(arr, lo)
    bad |= np.greater(arr, hi)  # NaN compares False: already nodata
    n = int(np.count_nonzero(bad))
    if n == 0:
        return
    vmin = float(np.min(arr, where=bad, initial=np.inf))
    vmax = float(np.max(arr, where=bad, initial=-np.inf))
    arr[bad] = np.nan
    del bad
    values = (
        f"the value {_fmt_value(vmin)}"
        if vmin == vmax
        else f"values from {_fmt_value(vmin)} to {_fmt_value(vmax)}"
    )
    where = _plausible_text(lo, hi, unit, z_to_m)
    feet = (
        f"; if they are real elevations in feet, set the DEM's unit (gdal_edit.py -units foot {p})"
        if _is_metre(unit) and vmax > hi
        else ""
    )
    if nodata is None and vmin == vmax and np.isfinite(vmin):
        fix = f"tag the voids as nodata: gdal_edit.py -a_nodata {_fmt_value(vmin)} {p}"
    else:
        tag = "-9999" if nodata is None else _fmt_value(nodata)
        fix = (
            f"set the voids to one nodata value and tag it: gdal_calc.py -A {p} "
            f'--outfile=dem_fixed.tif --calc="where((A<{lo:g})|(A>{hi:g}),{tag},A)" '
            f"--NoDataValue={tag}"
        )
    tagged = "has no nodata tag" if nodata is None else f"has the nodata tag {_fmt_value(nodata)}"
    if not np.isfinite(arr).any():
        raise DataError(
            f"DEM '{p.name}' holds no plausible elevation: all {n:,} of its valid cells hold "
            f"{values}, outside {where} (it {tagged}), so it has no elevation to route on. "
            f"Fix: give a DEM with the elevations of this area (--dem){feet}."
        )
    report.warning(
        "dem_implausible_values",
        "dem",
        f"DEM '{p.name}' {tagged}, but {n:,} cell(s) hold {values}, an implausible "
        f"elevation (outside {where}); they were read as nodata (voids), so drainage "
        "there is unknown, and flow reaching them leaves the DEM (off_dem).",
        feature_id="dem",
        count=n,
        fix=f"If these are voids, {fix}{feet}.",
    )


#: Band types whose every value a float32 holds exactly: such a DEM is read as float32
#: (4 bytes per cell, not 8; the same elevations), any other as float64.
FLOAT32_EXACT = frozenset(np.dtype(t) for t in ("float32", "int8", "uint8", "int16", "uint16"))


def _read_band(src: Any, p: Path) -> np.ndarray:
    """Band 1 as float32 or float64 with NaN where GDAL's mask says invalid (nodata, mask band).

    float32 when the band's type holds nothing a float32 does not hold exactly
    (:data:`FLOAT32_EXACT`: a float32 LiDAR DEM, 16-bit integers), else float64: the
    file's elevations, unchanged, in 4 bytes per cell where they fit.  The same values
    as ``src.read(1, masked=True).astype(DTYPE).filled(np.nan)``, without the masked
    array and the filled copy: GDAL reads into one array and the mask (``read_masks``)
    is only read when the band has one.  A file whose blocks cannot be read
    (truncated, corrupt) is an :class:`~ms4map.core.errors.InputOpenError` naming it,
    not a traceback.
    """
    import rasterio
    from rasterio.enums import MaskFlags

    try:
        exact = np.dtype(src.dtypes[0]) in FLOAT32_EXACT
        arr = src.read(1, out_dtype="float32" if exact else "float64")
        flags = src.mask_flag_enums[0]
        if list(flags) == [MaskFlags.nodata]:
            # GDAL's mask is "equals the nodata value": test it on the values read
            # (read_masks would decompress every block a second time)
            nodata = src.nodata
            if np.isnan(nodata):
                pass  # NaN is already NaN
            else:
                if np.dtype(src.dtypes[0]) == np.float32:
                    nodata = float(np.float32(nodata))  # as the band stores it
                arr[arr == nodata] = np.nan
        elif MaskFlags.all_valid not in flags:
            arr[src.read_masks(1) == 0] = np.nan
    except rasterio.errors.RasterioIOError as exc:
        # rasterio's own message says "see previous exception": GDAL's is the cause
        detail = _short(exc.__cause__ or exc).rstrip(".")
        raise InputOpenError(
            f"DEM '{p}' cannot be read ({detail}). Fix: the file is truncated or corrupt; "
            "copy or export it again (gdalinfo -checksum shows whether GDAL can read every "
            "block)."
        ) from None
    return arr


def _vertical_unit(crs: CRS) -> str | None:
    if crs.is_compound:
        for sub in crs.sub_crs_list:
            if sub.is_vertical:
                return sub.axis_info[0].unit_name
    return None


def _interior_nodata(arr: np.ndarray) -> int:
    """NaN cells not connected to the DEM's outer border (holes, not ragged edges)."""
    from scipy import ndimage

    nan = np.isnan(arr)
    lab, n = ndimage.label(nan)
    if n == 0:
        return 0
    border = set(np.unique(np.concatenate([lab[0], lab[-1], lab[:, 0], lab[:, -1]]))) - {0}
    inner = ~np.isin(lab, list(border)) & nan
    return int(inner.sum())


def _dem_overlap(dem: Dem, layers: dict[str, Any], report: QAReport) -> None:
    """A DEM that lies somewhere else entirely is an error, not 100% off-DEM results."""
    frames = [df for df in layers.values() if isinstance(df, gpd.GeoDataFrame) and len(df)]
    if not frames:
        return
    b = np.array([f.total_bounds for f in frames])
    data = shapely.box(b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max())
    grid = shapely.box(*dem.bounds)
    if not data.intersects(grid):
        name = dem.path.name if dem.path else "DEM"
        report.error(
            "dem_no_overlap",
            "dem",
            f"DEM '{name}' does not overlap the layers at all (DEM extent "
            f"{_fmt_bounds(dem.bounds)}, layers {_fmt_bounds(data.bounds)} in {dem.crs.name}).",
            feature_id="dem",
            fix="Give the DEM of this area with --dem, or check the layers' CRS.",
        )


def _fmt_bounds(b: Any) -> str:
    return "(" + ", ".join(f"{v:,.0f}" for v in b) + ")"


#: Parcels closer than this to the DEM's outer edge are counted by the coverage warning.
_EDGE_MARGIN_M = 100.0


def _dem_coverage(dem: Dem, parcels: gpd.GeoDataFrame, report: QAReport) -> None:
    from rasterio import features

    x0, y0, x1, y1 = dem.bounds
    finite = np.isfinite(dem.array)
    if finite.all():
        # no nodata cell: the covered area is the grid's rectangle (what polygonizing
        # the all-valid mask gives, without the 36M-cell pass of features.shapes)
        covered = shapely.box(x0, y0, x1, y1)
    else:
        valid = finite.astype("uint8")
        shapes = [
            g for g, v in features.shapes(valid, mask=finite, transform=dem.transform) if v == 1
        ]
        if not shapes:
            return
        covered = shapely.union_all([shapely.geometry.shape(s) for s in shapes])
    del finite
    covered = shapely.buffer(covered, dem.cellsize * 0.01)
    geoms = parcels.geometry.values
    inside = shapely.covered_by(geoms, covered)
    out_ids = [str(pid) for pid, ok in zip(parcels["parcel_id"], inside, strict=True) if not ok]
    # parcels near the DEM's outer edge: runoff that reaches the edge leaves the DEM, so
    # their answer may lack a part although the DEM covers them (drainage counts them)
    margin = metres_to_crs_units(parcels.crs, _EDGE_MARGIN_M)
    near = inside & (shapely.distance(geoms, shapely.box(x0, y0, x1, y1).boundary) < margin)
    if out_ids or near.any():
        n_near = int(near.sum())
        report.warning(
            "dem_not_covering",
            "parcels",
            f"{len(out_ids)} parcel(s) are not fully covered by the DEM; drainage of the "
            f"uncovered part is reported as off_dem. {n_near} more lie within "
            f"{_EDGE_MARGIN_M:g} m of the DEM's edge, where runoff may flow off it; "
            "`ms4map drainage` counts the parcels whose runoff does, and names the edge "
            "(QA drainage_partly_unknown).",
            feature_id=", ".join(out_ids[:50]),
            count=len(out_ids) + n_near,
            fix="Use a DEM that covers every parcel with a margin of a few hundred metres "
            "beyond the town.",
        )
