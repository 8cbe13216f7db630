"""Synthetic micro DEMs and a tiny town for the overland/drainage/pipeline tests.

No tests here: builders shared by ``test_hydrology_overland.py``, ``test_drainage.py`` and
``test_pipeline.py``.  Grids are 2 m cells in UTM 18N.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from affine import Affine
from pyproj import CRS

from ms4map.io.workspace import Dem, Workspace

CRS18 = CRS.from_epsg(26918)
X0, Y0, CELL = 500000.0, 4700000.0, 2.0
TR = Affine(CELL, 0, X0, 0, -CELL, Y0)


def xy(r: float, c: float) -> tuple[float, float]:
    """Centre of cell (row, col)."""
    return X0 + CELL * (c + 0.5), Y0 - CELL * (r + 0.5)


def cell_box(r0: int, c0: int, r1: int, c1: int) -> shapely.Polygon:
    """Polygon covering rows r0..r1-1 and cols c0..c1-1 exactly."""
    return shapely.box(X0 + CELL * c0, Y0 - CELL * r1, X0 + CELL * c1, Y0 - CELL * r0)


def plane(h: int = 40, w: int = 50) -> np.ndarray:
    """Plane tilted to the south (rows grow southwards)."""
    r, _ = np.mgrid[0:h, 0:w]
    return 100.0 - 0.05 * r.astype(float)


def town_dem(h: int = 120, w: int = 120) -> np.ndarray:
    """A valley along column 60 sloping south to an east-flowing creek on row 100,
    rising again south of it, with a closed bowl around cell (20, 20)."""
    r, c = np.mgrid[0:h, 0:w].astype(float)
    z = np.where(r <= 100, 100 + 0.03 * (100 - r) + 0.02 * np.abs(c - 60), 100 + 0.04 * (r - 100))
    z = z - 0.002 * c
    d = np.hypot(r - 20, c - 20)
    z = z - np.clip(1.0 - d / 10.0, 0, None) * 2.5
    return z


def dem(array: np.ndarray) -> Dem:
    return Dem(array=np.asarray(array, dtype=float), transform=TR, crs=CRS18)


def town_layers(h: int = 120, w: int = 120) -> dict[str, gpd.GeoDataFrame]:
    """Layers of the tiny town: inlets I1-I3 on the valley road piped to OF1 at the
    creek; I4 piped to OF2; the creek; a grid of 20 x 20-cell parcels."""
    pts = {
        "I1": (30, 60),
        "I2": (60, 60),
        "I3": (90, 60),
        "OF1": (99, 60),
        "I4": (80, 100),
        "OF2": (99, 100),
    }
    kinds = {
        "I1": "catch_basin",
        "I2": "catch_basin",
        "I3": "inlet",
        "OF1": "outfall",
        "I4": "catch_basin",
        "OF2": "outfall",
    }
    structures = gpd.GeoDataFrame(
        {
            "struct_id": list(pts),
            "kind": [kinds[k] for k in pts],
            "rim_elev": np.nan,
            "invert_elev": np.nan,
            "src_layer": "structures",
            "src_fid": range(1, len(pts) + 1),
        },
        geometry=[shapely.Point(xy(*v)) for v in pts.values()],
        crs=CRS18,
    )
    links = [("C1", "I1", "I2"), ("C2", "I2", "I3"), ("C3", "I3", "OF1"), ("C4", "I4", "OF2")]
    conveyances = gpd.GeoDataFrame(
        {
            "conv_id": [a for a, _, _ in links],
            "kind": "pipe",
            "from_id": [b for _, b, _ in links],
            "to_id": [c for _, _, c in links],
            "us_invert": np.nan,
            "ds_invert": np.nan,
            "diameter_in": 15.0,
            "rise_in": np.nan,
            "material": "RCP",
            "flow_dir": None,
            "src_layer": "conveyances",
            "src_fid": range(1, len(links) + 1),
        },
        geometry=[shapely.LineString([xy(*pts[b]), xy(*pts[c])]) for _, b, c in links],
        crs=CRS18,
    )
    outfalls = gpd.GeoDataFrame(
        {
            "outfall_id": ["OF1", "OF2"],
            "receiving_water": ["Test Creek", "Test Creek"],
            "pwl_id": ["1302-0001", "1302-0001"],
            "status": "unknown",
            "permit_id": None,
            "src_layer": "outfalls",
            "src_fid": [1, 2],
        },
        geometry=[shapely.Point(xy(*pts["OF1"])), shapely.Point(xy(*pts["OF2"]))],
        crs=CRS18,
    )
    waterbodies = gpd.GeoDataFrame(
        {
            "wb_id": ["1302-0001"],
            "name": ["Test Creek"],
            "kind": ["creek"],
            "src_layer": "waterbodies",
            "src_fid": [1],
        },
        geometry=[shapely.LineString([xy(100, 0), xy(100, w - 1)])],
        crs=CRS18,
    )
    recs, geoms = [], []
    for r0 in range(0, h, 20):
        for c0 in range(0, w, 20):
            recs.append(f"P{r0:03d}_{c0:03d}")
            geoms.append(cell_box(r0, c0, r0 + 20, c0 + 20))
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": recs,
            "address": None,
            "owner": None,
            "owner_address": None,
            "prop_class": "210",
            "acres": 0.04,
            "sewer": "public",
            "septic_failure": None,
            "src_layer": "parcels",
            "src_fid": range(1, len(recs) + 1),
        },
        geometry=geoms,
        crs=CRS18,
    )
    for df in (structures, conveyances, outfalls, waterbodies, parcels):
        for col in df.columns:
            if df[col].dtype == object and col != "geometry":
                df[col] = pd.array(df[col].astype(object).where(df[col].notna(), None), dtype="str")
    return {
        "structures": structures,
        "conveyances": conveyances,
        "outfalls": outfalls,
        "waterbodies": waterbodies,
        "parcels": parcels,
    }


def town_workspace(*, with_dem: bool = True, array: np.ndarray | None = None) -> Workspace:
    layers = town_layers()
    d = dem(town_dem() if array is None else array) if with_dem else None
    return Workspace(path=None, crs=CRS18, layers=layers, dem=d)


def i1_fraction_by_hand(r0: int, c0: int, r1: int, c1: int) -> float:
    """Share of cells of rows r0..r1-1, cols c0..c1-1 (west of the valley, north of
    I1's row) that reach inlet I1, worked out by hand.

    On this DEM a cell west of the valley moves diagonally south-east (the steepest
    drop: (0.06 + 0.044) / (2 * sqrt 2) = 0.037 per metre, against 0.03 south and
    0.022 east), so it meets the valley (column 60) on row r + (60 - c) and then flows
    south along it, reaching I1 (row 30) first when r + (60 - c) <= 30.  I1's cell is
    a sink 1 m below its neighbours, so the diagonals that pass next to it, through
    (30, 59) and (31, 59), drop into it too: the rule is r + (60 - c) <= 32.
    """
    r, c = np.mgrid[r0:r1, c0:c1]
    return float(((r + (60 - c)) <= 32).mean())
