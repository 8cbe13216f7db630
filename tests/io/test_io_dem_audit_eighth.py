"""Audit (eighth wave): DEM reading and the drainage summary, each answer worked by hand.

- voids stored as -9999 (or another value no elevation on Earth has) in a DEM without a
  nodata tag are read as nodata with a warning naming the file, the value, the cell
  count and the fix; a DEM with no plausible value left is refused;
- a DEM tagged with a geographic CRS while its extent holds projected metres, or one
  GDAL cannot warp, is a DataError (exit 2) naming the file and the fix;
- an all-nodata DEM's error names the fix;
- "share of parcel area" in ``ms4map drainage`` and the pipeline note is weighted by
  parcel area, not a mean of per-parcel fractions.
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import rasterio
import shapely
from rasterio.transform import from_origin

import ms4map
from ms4map import io, pipeline
from ms4map.cli import main
from ms4map.core.errors import DataError
from ms4map.core.qa import QAReport

UTM18 = "EPSG:26918"
X0, Y0 = 500000.0, 4700000.0


def _write_dem(
    path: Path,
    z: np.ndarray,
    *,
    nodata: float | None = None,
    crs: str = UTM18,
    x0: float = X0,
    y0: float = Y0,
    cell: float = 1.0,
    unit: str | None = None,
) -> Path:
    h, w = z.shape
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        width=w,
        height=h,
        count=1,
        dtype="float32",
        crs=crs,
        transform=from_origin(x0, y0, cell, cell),
        nodata=nodata,
    ) as dst:
        dst.write(z.astype("float32"), 1)
        if unit:
            dst.update_tags(1)
            dst.units = (unit,)
    return path


def _box(r0: float, c0: float, r1: float, c1: float, cell: float = 1.0) -> shapely.Polygon:
    """Rows r0..r1, cols c0..c1 of a grid at (X0, Y0) with ``cell`` metre cells."""
    return shapely.box(X0 + c0 * cell, Y0 - r1 * cell, X0 + c1 * cell, Y0 - r0 * cell)


def _town(folder: Path, z: np.ndarray, parcels: dict, *, creek_col: int, **dem) -> Path:
    """A GeoPackage with parcels and a creek along column ``creek_col``, and its DEM."""
    h = z.shape[0]
    gpkg = folder / "town.gpkg"
    gpd.GeoDataFrame(
        {"parcel_id": list(parcels), "prop_class": "210", "sewer": "public"},
        geometry=[_box(*b) for b in parcels.values()],
        crs=UTM18,
    ).to_file(gpkg, layer="parcels")
    x = X0 + creek_col + 0.5
    gpd.GeoDataFrame(
        {"wb_id": ["1302-0001"], "name": ["Test Creek"], "kind": ["creek"]},
        geometry=[shapely.LineString([(x, Y0 - 0.5), (x, Y0 - h + 0.5)])],
        crs=UTM18,
    ).to_file(gpkg, layer="waterbodies")
    _write_dem(folder / "town_dem.tif", z, **dem)
    return gpkg


# ---- 1. voids without a nodata tag -----------------------------------------------------------
def _tilt(h: int = 10, w: int = 10) -> np.ndarray:
    r, c = np.mgrid[0:h, 0:w].astype(float)
    return 100 - 0.02 * c - 0.005 * r


def test_untagged_minus_9999_voids_are_read_as_nodata_with_a_warning(tmp_path: Path) -> None:
    # 10 x 10 tilt, a 3 x 3 block (rows 3..5, cols 4..6) written as -9999, no nodata tag:
    # by hand 9 void cells, every other cell its own elevation
    z = _tilt()
    z[3:6, 4:7] = -9999.0
    path = _write_dem(tmp_path / "voids.tif", z, unit="metre")
    with rasterio.open(path) as src:
        assert src.nodata is None
    report = QAReport()
    dem = io.read_dem(path, report=report)
    voids = np.zeros((10, 10), bool)
    voids[3:6, 4:7] = True
    assert np.array_equal(np.isnan(dem.array), voids)
    assert np.allclose(dem.array[~voids], z.astype("float32")[~voids])
    (f,) = [f for f in report.findings if f.code == "dem_implausible_values"]
    assert f.level == "warning" and f.count == 9
    assert "'voids.tif'" in f.message and "-9999" in f.message and "9 cell(s)" in f.message
    assert f"gdal_edit.py -a_nodata -9999 {path}" in f.fix


@pytest.mark.parametrize(
    ("unit", "peak_kept"),
    [
        ("metre", False),  # 12,000 m: above Everest, a void
        ("foot", True),  # 12,000 ft = 3,658 m: a mountain
        (None, True),  # unit not said: up to 10,000 m in feet (32,808) is kept
    ],
)
def test_the_plausible_range_is_in_the_dems_vertical_unit(
    tmp_path: Path, unit: str | None, peak_kept: bool
) -> None:
    # voids of -32768 in rows 0..1 (20 cells, below -500 m and -1,640 ft) are voids in
    # every unit; one cell at 12,000 is a void only for a DEM in metres
    z = _tilt() + 200
    z[0:2, :] = -32768.0
    z[7, 7] = 12000.0
    dem = io.read_dem(_write_dem(tmp_path / "u.tif", z, unit=unit), report=(r := QAReport()))
    assert np.isnan(dem.array[0:2]).all()
    assert np.isnan(dem.array[7, 7]) != peak_kept
    (f,) = [f for f in r.findings if f.code == "dem_implausible_values"]
    assert f.count == 20 + (not peak_kept)
    assert "-32768" in f.message


def test_untagged_voids_are_no_closed_depression_in_the_pipeline(tmp_path: Path) -> None:
    # 40 x 40 tilt to the east (0.02 m per column), creek along column 35; a 15 x 15 block
    # of voids (rows 10..24, cols 10..24) stored as -9999 without a nodata tag.  Parcel V
    # holds the voids and 8 columns west of them (rows 10..24, cols 2..24).  As
    # elevations the voids are a 10 km pit, filled into a 225-cell closed depression
    # (100 % of V internally drained); as nodata: no depression, V's void cells are
    # unknown (225 of 345 cells) and the cells west of them run into the hole (off_dem).
    z = _tilt(40, 40)
    z[10:25, 10:25] = -9999.0
    gpkg = _town(tmp_path, z, {"V": (10, 2, 25, 25)}, creek_col=35, unit="metre")
    ws = ms4map.open_workspace(gpkg)
    assert "dem_implausible_values" in {f.code for f in ws.qa.findings}
    res = pipeline.run(ws, use_cache=False, min_area_m2=100.0)
    v = res.drainage[res.drainage["parcel_id"] == "V"]
    assert "depression" not in set(v["target_kind"])
    assert len(res.overland.depression_table) == 0
    unknown = v.loc[v["target_kind"] == "unknown", "fraction"].sum()
    assert unknown == pytest.approx(225 / 345)
    assert v["fraction"].sum() == pytest.approx(1.0)


def test_a_dem_of_voids_only_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = _write_dem(tmp_path / "empty.tif", np.full((6, 6), -9999.0))
    with pytest.raises(DataError, match=r"'empty.tif' holds no plausible elevation") as exc:
        io.read_dem(path)
    assert "36 of its valid cells" in str(exc.value) and "Fix:" in str(exc.value)


# ---- 2. a wrong geographic CRS tag, warp errors --------------------------------------------
def _layers_gpkg(folder: Path) -> Path:
    gpkg = folder / "town.gpkg"
    gpd.GeoDataFrame(
        {"parcel_id": ["A", "B"], "prop_class": "210", "sewer": "public"},
        geometry=[_box(5, 5, 10, 10), _box(5, 15, 10, 20)],
        crs=UTM18,
    ).to_file(gpkg, layer="parcels")
    return gpkg


def test_geographic_tag_on_projected_metres_is_a_data_error_with_the_fix(
    tmp_path: Path, capsys
) -> None:
    # the transform holds UTM metres (x 500,000, y 4,700,000) but the tag says WGS 84:
    # no longitude exceeds 180, no latitude 90
    gpkg = _layers_gpkg(tmp_path)
    dem = _write_dem(tmp_path / "town_dem.tif", _tilt(40, 40), crs="EPSG:4326")
    with pytest.raises(DataError, match=r"'town_dem.tif' is tagged with the geographic CRS"):
        ms4map.open_workspace(gpkg)
    rc = main(["drainage", str(gpkg), "--quiet", "--out", str(tmp_path / "out.gpkg")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "internal error" not in err
    assert f"gdal_edit.py -a_srs EPSG:26918 {dem}" in err
    # a DEM really in degrees (upstate NY) is still warped, not refused
    deg = _write_dem(tmp_path / "deg.tif", _tilt(), crs="EPSG:4326", x0=-75.0, y0=43.0, cell=1e-5)
    assert io.read_dem(deg, crs=UTM18).crs.to_epsg() == 26918


def test_a_warp_gdal_cannot_do_is_a_data_error_naming_the_file(tmp_path: Path) -> None:
    # UTM coordinates of 50,000 km are outside the projection: GDAL cannot compute the
    # warped grid's bounds (CPLE_AppDefinedError "Too many points ... failed to transform")
    path = _write_dem(tmp_path / "far.tif", _tilt(), x0=5e7, y0=5e7)
    with pytest.raises(DataError, match=r"DEM 'far.tif' cannot be warped from .* Fix:") as exc:
        io.read_dem(path, crs="EPSG:3857")
    assert "gdal_edit.py -a_srs EPSG:3857" in str(exc.value)


# ---- 3. an all-nodata DEM -------------------------------------------------------------------
def test_all_nodata_dem_error_names_the_fix(tmp_path: Path) -> None:
    path = _write_dem(tmp_path / "nodata.tif", np.full((6, 6), -9999.0), nodata=-9999.0)
    with pytest.raises(DataError, match=r"'nodata.tif' has only nodata cells\. Fix: ") as exc:
        io.read_dem(path)
    assert f"gdal_edit.py -a_nodata VALUE {path}" in str(exc.value)


# ---- 4. share of parcel area ----------------------------------------------------------------
def test_share_of_parcel_area_is_weighted_by_parcel_area(tmp_path: Path, capsys) -> None:
    # 40 x 40 at 1 m, z = 100 - 0.02 c, creek along column 35.  BIG: rows 0..29,
    # cols 0..29 = 900 m2, its row 0 runs along the north edge (30 cells off_dem), the
    # other 870 cells reach the creek.  TINY: rows 35..37, cols 37..39 = 9 m2, east of the
    # creek, runs off the east edge.  By area: water_direct 870 / 909 = 95.7 %, off_dem
    # 39 / 909 = 4.3 %  (the mean of the per-parcel fractions would give 48.3 % / 51.7 %).
    r, c = np.mgrid[0:40, 0:40].astype(float)
    z = 100 - 0.02 * c
    parcels = {"BIG": (0, 0, 30, 30), "TINY": (35, 37, 38, 40)}
    gpkg = _town(tmp_path, z, parcels, creek_col=35, nodata=-9999.0, unit="metre")
    rc = main(["drainage", str(gpkg), "--quiet", "--out", str(tmp_path / "out.gpkg")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "  share of parcel area: water_direct 95.7%, off_dem 4.3%" in out
    res = pipeline.run(ms4map.open_workspace(gpkg), use_cache=False)
    assert (
        "drainage: 2 parcels; share of parcel area by target kind: water_direct 95.7%, "
        "off_dem 4.3%." in res.qa.notes
    )


def test_drainage_shares_by_hand_and_the_labelled_fallback() -> None:
    # P1 (100 m2): 0.5 inlet + 0.5 water; P2 (300 m2): 1.0 inlet.
    # By area: inlet (50 + 300) / 400 = 87.5 %, water 50 / 400 = 12.5 %.
    table = pd.DataFrame(
        {
            "parcel_id": ["P1", "P1", "P2"],
            "target_kind": ["inlet", "water_direct", "inlet"],
            "fraction": [0.5, 0.5, 1.0],
        }
    )
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P1", "P2"]},
        geometry=[shapely.box(0, 0, 10, 10), shapely.box(0, 0, 10, 30)],
        crs=UTM18,
    )
    share, label = pipeline.drainage_shares(table, parcels)
    assert label == "share of parcel area"
    assert share.to_dict() == pytest.approx({"inlet": 0.875, "water_direct": 0.125})
    # no areas at hand: the mean of the per-parcel fractions, and labelled so
    share, label = pipeline.drainage_shares(table, None)
    assert label == "mean share per parcel"
    assert share.to_dict() == pytest.approx({"inlet": 0.75, "water_direct": 0.25})


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("float32", np.float32),
        ("int16", np.float32),
        ("uint16", np.float32),
        ("float64", np.float64),
        ("int32", np.float64),
    ],
)
def test_the_dem_is_read_in_float32_when_the_file_holds_nothing_wider(tmp_path, dtype, expected):
    # a float32 LiDAR DEM (or 16-bit integers) is held as float32: the file's values in
    # 4 bytes per cell, not 8; wider bands stay float64.  The values and the nodata
    # cells are the file's, either way
    z = (np.arange(48, dtype=np.float64).reshape(6, 8) * 3.25 + 101.5).astype(dtype)
    nodata = 65535 if dtype == "uint16" else -9999
    z[2, 3] = nodata
    path = tmp_path / f"dem_{dtype}.tif"
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        width=8,
        height=6,
        count=1,
        dtype=dtype,
        crs=UTM18,
        transform=from_origin(X0, Y0, 1.0, 1.0),
        nodata=nodata,
    ) as dst:
        dst.write(z, 1)
    arr = io.read_dem(path).array
    assert arr.dtype == expected
    assert np.isnan(arr[2, 3]) and np.isfinite(arr).sum() == 47
    ok = np.isfinite(arr)
    assert np.array_equal(arr[ok].astype(np.float64), z.astype(np.float64)[ok])


def test_a_warped_float32_dem_is_float64(tmp_path):
    # a warp interpolates: its values are new ones, kept in float64 as before
    path = _write_dem(tmp_path / "dem.tif", np.linspace(100, 110, 400).reshape(20, 20))
    dem = io.read_dem(path, crs="EPSG:32618")
    assert dem.array.dtype == np.float64 and np.isfinite(dem.array).any()
