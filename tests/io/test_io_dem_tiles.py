"""A DEM as it comes (issue 34 item 3): a folder of GeoTIFF tiles, a list of tiles or a
``.vrt``, read as one mosaic; mixed grids warped and reported; gaps reported."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import rasterio
from affine import Affine
from test_batch import write_tiny_town
from test_hydrology_overland_fixtures import CELL, CRS18, TR, X0, Y0, town_dem

import ms4map
from ms4map import pipeline
from ms4map.cli import main
from ms4map.core.errors import InputOpenError
from ms4map.io import read_dem


def _write(path: Path, arr: np.ndarray, transform: Affine, crs=CRS18) -> Path:
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        height=arr.shape[0],
        width=arr.shape[1],
        count=1,
        dtype=arr.dtype.name,
        crs=crs,
        transform=transform,
    ) as dst:
        dst.write(arr, 1)
    return path


def _quadrants(arr: np.ndarray, folder: Path, *, skip: int | None = None) -> list[Path]:
    """``arr`` (on TR) cut into four tiles in ``folder`` (the ``skip``-th left out)."""
    folder.mkdir(parents=True, exist_ok=True)
    h, w = arr.shape
    out = []
    for k, (r0, c0) in enumerate(((0, 0), (0, w // 2), (h // 2, 0), (h // 2, w // 2))):
        if k == skip:
            continue
        part = arr[r0 : r0 + h // 2, c0 : c0 + w // 2]
        t = TR * Affine.translation(c0, r0)
        out.append(_write(folder / f"tile_{k}.tif", np.ascontiguousarray(part), t))
    return out


def test_four_tiles_give_the_same_dem_and_drainage_as_the_single_file(tmp_path):
    path = write_tiny_town(tmp_path / "town")  # town.gpkg + town_dem.tif (float64)
    arr = town_dem()
    tiles = _quadrants(arr, tmp_path / "tiles")
    one = ms4map.open_workspace(path)
    by_folder = ms4map.open_workspace(path, dem=tmp_path / "tiles")
    by_list = ms4map.open_workspace(path, dem=tiles[::-1])  # any order
    for ws in (by_folder, by_list):
        assert ws.dem.shape == one.dem.shape
        assert ws.dem.transform == one.dem.transform
        np.testing.assert_array_equal(ws.dem.array, one.dem.array)
        assert ws.qa.codes()["dem_mosaic"] == 1
        assert "dem_tile_gap" not in ws.qa.codes()
    # every tile is an input of the provenance (hashed), not the folder alone
    assert {str(t.resolve()) for t in tiles} <= set(by_list.inputs)
    a = pipeline.run(one, use_cache=False).drainage
    b = pipeline.run(by_folder, use_cache=False).drainage
    cols = ["parcel_id", "target_kind", "target_id", "fraction"]
    pd.testing.assert_frame_equal(
        a[cols].sort_values(cols[:3]).reset_index(drop=True),
        b[cols].sort_values(cols[:3]).reset_index(drop=True),
    )


def test_a_tile_of_another_cell_size_is_resampled_onto_the_first_and_reported(tmp_path):
    arr = town_dem().astype("float32")
    folder = tmp_path / "tiles"
    _quadrants(arr, folder)
    # replace the last quadrant by the same ground at 4 m cells (means of 2 x 2 cells)
    h, w = arr.shape
    q4 = arr[h // 2 :, w // 2 :]
    coarse = q4.reshape(q4.shape[0] // 2, 2, q4.shape[1] // 2, 2).mean(axis=(1, 3))
    coarse = np.ascontiguousarray(coarse.astype("float32"))
    t = Affine(2 * CELL, 0, X0 + CELL * (w // 2), 0, -2 * CELL, Y0 - CELL * (h // 2))
    _write(folder / "tile_3.tif", coarse, t)
    dem = read_dem(folder, report=(qa := ms4map.core.qa.QAReport()))
    assert dem.array.shape == arr.shape and dem.transform == TR  # the first tile's grid
    (warn,) = qa.by_code("dem_tiles_warped")
    assert "tile_3.tif (4 x 4)" in warn.message and "bilinear" in warn.message
    # the resampled quadrant is close to the ground it came from where that is a plane
    # (rows 62-94, east of the valley road; the creek's kink is on row 100)
    rows, cols = slice(62, 95), slice(64, 116)
    assert np.isfinite(dem.array[h // 2 :, w // 2 :]).all()
    assert np.nanmax(np.abs(dem.array[rows, cols] - arr[rows, cols])) < 0.05


def test_a_missing_tile_is_nodata_and_its_area_is_reported(tmp_path):
    arr = town_dem()
    _quadrants(arr, tmp_path / "tiles", skip=1)  # the north-east quadrant is missing
    qa = ms4map.core.qa.QAReport()
    dem = read_dem(tmp_path / "tiles", report=qa)
    h, w = arr.shape
    assert dem.array.shape == arr.shape  # the mosaic spans the tiles there are
    assert np.isnan(dem.array[: h // 2, w // 2 :]).all()
    assert np.isfinite(dem.array[h // 2 :, :]).all()
    (gap,) = qa.by_code("dem_tile_gap")
    cells = (h // 2) * (w // 2)
    assert gap.count == cells
    assert f"{cells * CELL * CELL / 10_000:.2f} ha" in gap.message


def test_a_tile_in_another_crs_is_warped_onto_the_first_ones_grid(tmp_path):
    from rasterio.warp import calculate_default_transform, reproject

    arr = town_dem()
    folder = tmp_path / "tiles"
    paths = _quadrants(arr, folder)
    # the last quadrant in UTM 17N (EPSG:26917) instead of 18N
    h, w = arr.shape
    part = np.ascontiguousarray(arr[h // 2 :, w // 2 :])
    src_t = TR * Affine.translation(w // 2, h // 2)
    left, top = src_t * (0, 0)
    right, bottom = src_t * (part.shape[1], part.shape[0])
    dst_t, dw, dh = calculate_default_transform(
        CRS18, "EPSG:26917", part.shape[1], part.shape[0], left, bottom, right, top
    )
    out = np.full((dh, dw), np.nan)
    reproject(
        part,
        out,
        src_transform=src_t,
        src_crs=CRS18,
        dst_transform=dst_t,
        dst_crs="EPSG:26917",
        dst_nodata=np.nan,
    )
    paths[3].unlink()
    _write(folder / "tile_3.tif", out, dst_t, crs="EPSG:26917")
    qa = ms4map.core.qa.QAReport()
    dem = read_dem(folder, report=qa)
    assert dem.transform == TR
    (warn,) = qa.by_code("dem_tiles_warped")
    assert "tile_3.tif (EPSG:26917)" in warn.message
    # (the warped tile's box reaches beyond the quadrant: the mosaic is a little larger)
    # (and the creek's kink on row 100 is smoothed by two bilinear warps: north of it)
    rows, cols = slice(h // 2 + 4, 95), slice(w // 2 + 4, w - 4)
    assert np.nanmax(np.abs(dem.array[rows, cols] - arr[rows, cols])) < 0.05


def _vrt(path: Path, tiles: list[tuple[str, int, int]], shape: tuple[int, int]) -> Path:
    """A GDAL VRT mosaic of ``(file, row offset, col offset)`` tiles of 60 x 60 cells."""
    h, w = shape
    srcs = "".join(
        f'<SimpleSource><SourceFilename relativeToVRT="1">{f}</SourceFilename>'
        "<SourceBand>1</SourceBand>"
        f'<SrcRect xOff="0" yOff="0" xSize="{w // 2}" ySize="{h // 2}"/>'
        f'<DstRect xOff="{c}" yOff="{r}" xSize="{w // 2}" ySize="{h // 2}"/></SimpleSource>'
        for f, r, c in tiles
    )
    gt = ", ".join(str(v) for v in TR.to_gdal())
    path.write_text(
        f'<VRTDataset rasterXSize="{w}" rasterYSize="{h}"><SRS>{CRS18.to_wkt()}</SRS>'
        f"<GeoTransform>{gt}</GeoTransform>"
        f'<VRTRasterBand dataType="Float64" band="1">{srcs}</VRTRasterBand></VRTDataset>',
        encoding="utf-8",
    )
    return path


def test_a_vrt_is_read_as_gdal_builds_it(tmp_path):
    arr = town_dem()
    folder = tmp_path / "tiles"
    _quadrants(arr, folder)
    h, w = arr.shape
    offs = [(0, 0), (0, w // 2), (h // 2, 0), (h // 2, w // 2)]
    vrt = _vrt(
        folder / "mosaic.vrt", [(f"tile_{k}.tif", r, c) for k, (r, c) in enumerate(offs)], arr.shape
    )
    dem = read_dem(vrt)
    np.testing.assert_array_equal(dem.array, arr)


def test_a_vrt_naming_a_missing_tile_is_a_clear_error(tmp_path, capsys):
    arr = town_dem()
    folder = tmp_path / "tiles"
    _quadrants(arr, folder, skip=2)
    h, w = arr.shape
    offs = [(0, 0), (0, w // 2), (h // 2, 0), (h // 2, w // 2)]
    vrt = _vrt(
        folder / "mosaic.vrt", [(f"tile_{k}.tif", r, c) for k, (r, c) in enumerate(offs)], arr.shape
    )
    with pytest.raises(InputOpenError) as exc:
        read_dem(vrt)
    msg = str(exc.value)
    assert "tile_2.tif" in msg and "Fix" in msg
    # and from the command line: exit 3 (bad input), the tile named, no traceback
    path = write_tiny_town(tmp_path / "town")
    code = main(["validate", str(path), "--dem", str(vrt)])
    err = capsys.readouterr().err
    assert code != 0 and "tile_2.tif" in err and "Traceback" not in err


def test_bad_dem_sources_are_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputOpenError, match="holds no GeoTIFF tile"):
        read_dem(tmp_path / "empty")
    with pytest.raises(InputOpenError, match="does not exist"):
        read_dem([tmp_path / "a.tif", tmp_path / "b.tif"])


def test_the_cli_takes_a_folder_and_several_files(tmp_path, capsys):
    path = write_tiny_town(tmp_path / "town")
    tiles = _quadrants(town_dem(), tmp_path / "tiles")
    # (exit 1: the tiny town has warnings, the same with its single-file DEM)
    assert main(["validate", str(path)]) == 1
    assert main(["validate", str(path), "--dem", str(tmp_path / "tiles")]) == 1
    assert main(["validate", str(path), "--dem", *map(str, tiles)]) == 1
    out = capsys.readouterr()
    assert "4 tiles read as one mosaic" in out.out + out.err
