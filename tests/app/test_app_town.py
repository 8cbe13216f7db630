"""A tiny synthetic town for the app and map tests (and a check that it opens).

72 parcels (40 m lots) in two blocks either side of a road; six catch basins
along the road piped east to headwall HW-1 = outfall OF-1 on Test Creek
(PWL 1101-0001, listed for phosphorus, category 5); a DEM sloping east.  The
western four columns of lots are on septic; prop_class 484 (commercial) on
every fifth lot.  Every parcel reaches the listed creek (through the MS4 or
directly), so every site here is Condition A.
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
from shapely.geometry import LineString, Point, box

CRS = "EPSG:26918"
X0, Y0, LOT = 600000.0, 4760000.0, 40.0


def town_layers(nx: int = 12, ny: int = 6) -> dict[str, object]:
    """The town's layers as GeoDataFrames (working CRS EPSG:26918)."""
    parcels = []
    for i in range(nx):
        for j in range(ny):
            yy = Y0 + j * LOT + (20 if j >= ny // 2 else 0)  # 20 m road between the blocks
            parcels.append(
                {
                    "parcel_id": f"P{i:02d}-{j:02d}",
                    "address": f"{10 + i * 2 + j * 100} Main St",
                    "owner": f"Owner {i}-{j}",
                    "owner_address": "1 Somewhere Rd",
                    "prop_class": "484" if (i + j) % 5 == 0 else "210",
                    "sewer": "septic" if i < 4 else "public",
                    "geometry": box(X0 + i * LOT, yy, X0 + (i + 1) * LOT - 1, yy + LOT - 1),
                }
            )
    parcels = gpd.GeoDataFrame(parcels, crs=CRS)
    ry = Y0 + (ny // 2) * LOT + 10
    structures = [
        {"struct_id": f"CB-{i}", "kind": "catch_basin", "geometry": Point(X0 + 20 + i * 80, ry)}
        for i in range(nx // 2)
    ]
    ox = X0 + nx * LOT + 30
    structures.append({"struct_id": "HW-1", "kind": "headwall", "geometry": Point(ox, ry)})
    structures = gpd.GeoDataFrame(structures, crs=CRS)
    pts = list(structures.geometry)
    conveyances = gpd.GeoDataFrame(
        [
            {
                "conv_id": f"PIPE-{k}",
                "kind": "pipe",
                "from_id": structures.struct_id[k],
                "to_id": structures.struct_id[k + 1],
                "geometry": LineString([pts[k], pts[k + 1]]),
            }
            for k in range(len(pts) - 1)
        ],
        crs=CRS,
    )
    outfalls = gpd.GeoDataFrame(
        [
            {
                "outfall_id": "OF-1",
                "receiving_water": "Test Creek",
                "pwl_id": "1101-0001",
                "status": "flowing",
                "geometry": Point(ox, ry),
            }
        ],
        crs=CRS,
    )
    creek = gpd.GeoDataFrame(
        [
            {
                "wb_id": "1101-0001",
                "name": "Test Creek",
                "kind": "creek",
                "geometry": LineString([(ox + 2, Y0 - 50), (ox + 2, Y0 + ny * LOT + 80)]),
            }
        ],
        crs=CRS,
    )
    impairments = pd.DataFrame(
        [
            {
                "wb_id": "1101-0001",
                "pollutant": "phosphorus",
                "category": "5",
                "list_year": 2022,
                "source": "urban runoff",
            }
        ]
    )
    return {
        "parcels": parcels,
        "structures": structures,
        "conveyances": conveyances,
        "outfalls": outfalls,
        "waterbodies": creek,
        "impairments": impairments,
    }


def write_town(folder: Path, *, nx: int = 12, ny: int = 6) -> Path:
    """Write the town as ``town.gpkg`` + ``town_dem.tif`` in ``folder``; returns the gpkg."""
    import rasterio
    from rasterio.transform import from_origin

    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "town.gpkg"
    for name, frame in town_layers(nx, ny).items():
        pyogrio.write_dataframe(frame, out, layer=name)
    cell = 2.0
    w, h = int((nx * LOT + 120) / cell), int((ny * LOT + 120) / cell)
    xs, ys = np.arange(w) * cell, np.arange(h) * cell
    z = 120 - 0.02 * xs[None, :] + 0.5 * np.sin(ys[:, None] / 15)
    with rasterio.open(
        folder / "town_dem.tif",
        "w",
        driver="GTiff",
        height=h,
        width=w,
        count=1,
        dtype="float32",
        crs=CRS,
        transform=from_origin(X0 - 40, Y0 + ny * LOT + 80, cell, cell),
        nodata=-9999,
    ) as dst:
        dst.write(z.astype("float32"), 1)
    return out


@pytest.fixture(scope="session")
def town_gpkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_town(tmp_path_factory.mktemp("town"))


def test_town_opens_as_a_workspace(town_gpkg: Path) -> None:
    import ms4map

    ws = ms4map.open_workspace(town_gpkg)
    assert len(ws.layers["parcels"]) == 72
    assert ws.dem is not None
    assert not ws.qa.has_errors
