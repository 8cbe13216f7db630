"""Runoff that reaches a waterbody with no ``wb_id`` (PWL ID), worked out by hand.

A 40 x 40 grid of 2 m cells falls 0.1 m per row to the south; rows 36 - 39 are a
creek whose feature has a name but no ``wb_id`` (unnamed and unassessed streams
often have none).  A lot on rows 10 - 19 drains straight down its columns into the
creek: 100 % ``water_direct``.  Its receiving water has no PWL ID, so no 303(d)
listing can be looked up: Condition A is undetermined (docs/rules.md, section 2),
never a "no" for a made-up id such as ``"<NA>"``.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from affine import Affine
from pyproj import CRS

from ms4map import drainage
from ms4map.hydrology import overland
from ms4map.io.workspace import Dem
from ms4map.rules.conditions import determine
from ms4map.rules.waters import Waters

CRS18 = CRS.from_epsg(26918)
X0, Y0, CELL = 500_000.0, 4_700_000.0, 2.0


def _box(r0: int, c0: int, r1: int, c1: int) -> shapely.Polygon:
    return shapely.box(X0 + CELL * c0, Y0 - CELL * r1, X0 + CELL * c1, Y0 - CELL * r0)


@pytest.fixture(scope="module")
def case():
    r = np.mgrid[0:40, 0:40][0].astype(float)
    z = 110.0 - 0.1 * r
    creek = gpd.GeoDataFrame(
        {"wb_id": [None], "name": ["Tamarack Brook"]}, geometry=[_box(36, 0, 40, 40)], crs=CRS18
    )
    res = overland.route(
        Dem(array=z, transform=Affine(CELL, 0, X0, 0, -CELL, Y0), crs=CRS18), waterbodies=creek
    )
    lot = gpd.GeoDataFrame({"parcel_id": ["LOT"]}, geometry=[_box(10, 10, 20, 20)], crs=CRS18)
    return creek, drainage.parcel_drainage(lot, res)


def test_the_row_names_the_water_and_carries_no_made_up_id(case):
    _, tab = case
    assert tab["target_kind"].tolist() == ["water_direct"]
    assert tab["fraction"].sum() == pytest.approx(1.0)
    row = tab.iloc[0]
    assert row["receiving_water"] == "Tamarack Brook"
    assert pd.isna(row["target_id"]) and pd.isna(row["pwl_id"])
    assert "no wb_id" in row["reason"]


def test_condition_a_is_undetermined_not_no(case):
    creek, tab = case
    listed = pd.DataFrame({"wb_id": ["1302-0001"], "pollutant": ["Phosphorus"], "category": ["5"]})
    waters = Waters.from_frames(
        waterbodies=creek, impairments=listed, tmdl_watersheds=creek.iloc[0:0], crs=CRS18
    )
    det = determine(tab, waters=waters, disturbed_acres=2, project_type="commercial")
    a = det.conditions["A"]
    assert a["value"] is None
    assert "PWL" in " ".join(a["reasons"])


def test_validation_warns_about_a_waterbody_without_wb_id(case):
    from ms4map.core.qa import QAReport
    from ms4map.io.checks import _check_legal_layers

    creek, _ = case
    other = gpd.GeoDataFrame(
        {"wb_id": ["1302-0001"], "name": ["Mill Creek"]}, geometry=[_box(0, 0, 2, 40)], crs=CRS18
    )
    layers = {
        "parcels": gpd.GeoDataFrame(
            {"parcel_id": ["P"]}, geometry=[_box(10, 10, 20, 20)], crs=CRS18
        ),
        "waterbodies": pd.concat([other, creek], ignore_index=True),
    }
    report = QAReport()
    _check_legal_layers(layers, report)
    found = [f for f in report.findings if f.code == "waterbody_no_wb_id"]
    assert len(found) == 1
    assert "Tamarack Brook" in found[0].message and "Mill Creek" not in found[0].message
    assert "PWL ID" in found[0].fix
