"""Septic systems tributary to the MS4 on hand-made parcels and drainage rows."""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import LineString
from test_rules_conditions_fixtures import (
    CRS,
    OUTFALL_POINTS,
    parcel_drainage,
    parcels_frame,
    sewer_districts,
    town_waters,
)

from ms4map.rules.septic import (
    SEPTIC_COLUMNS,
    SepticFlags,
    assess_septic,
    flag_septic_table,
    mailing_list,
    parse_failure_codes,
    undetermined_causes,
    write_mailing_list,
)


@pytest.fixture(scope="module")
def septic():
    convs = gpd.GeoDataFrame(
        {"conv_id": ["D1", "P1"], "kind": ["ditch", "pipe"]},
        geometry=[LineString([(1350, 200), (1350, 400)]), LineString([(100, 210), (180, 210)])],
        crs=CRS,
    )
    return flag_septic_table(
        parcels_frame(),
        parcel_drainage(),
        waters=town_waters(),
        sewer_districts=sewer_districts(),
        conveyances=convs,
        outfall_points=OUTFALL_POINTS,
    ).set_index("parcel_id")


def test_which_parcels_are_septic(septic):
    # P2 public, P5 inside the sewer district, P7 vacant: not septic parcels
    assert set(septic.index) == {"P1", "P3", "P4", "P6", "P8"}
    assert septic.loc["P4", "septic_source"] == "inferred_outside_sewer_district"
    assert septic.loc["P1", "septic_source"] == "sewer_attribute"


def test_septic_upstream_of_listed_creek(septic):
    r = septic.loc["P1"]
    assert r["flagged"] and r["special_condition"] and r["septic_pollutant"]
    assert r["outfall_id"] == "OF-M" and r["pwl_id"] == "1302-0001"
    assert r["priority"] >= 3 and r["priority_label"] == "high"


def test_direct_to_river_not_flagged_and_says_why(septic):
    r = septic.loc["P3"]
    assert not r["flagged"] and not r["tributary"]
    assert r["method"] == "direct_to_water"
    assert "without entering the MS4" in r["reason"] and "Hudson River" in r["reason"]


def test_unlisted_water_no_special_condition(septic):
    r = septic.loc["P4"]
    assert r["flagged"] and not r["special_condition"] and r["priority_label"] == "low"


def test_failure_makes_violation(septic):
    r = septic.loc["P6"]
    assert r["violation"] and r["failure_codes"] == "B" and r["priority_label"] == "violation"
    assert "ground surface" in r["failure_conditions"]


def test_setback_raises_priority(septic):
    r = septic.loc["P8"]  # within 100 ft (30.5 m) of ditch D1; 60% of runoff enters the MS4
    assert r["flagged"] and r["within_setback"] and r["setback_feature"] == "ditch D1"
    assert r["priority"] == 2 and r["ms4_fraction"] == pytest.approx(0.6)
    assert not septic.loc["P4", "within_setback"]


def test_pipes_do_not_count_for_setback():
    # P1 touches pipe P1 (closed): no setback; Mill Creek is > 100 ft from P1
    s = flag_septic_table(
        parcels_frame(),
        parcel_drainage(),
        waters=town_waters(),
        conveyances=gpd.GeoDataFrame(
            {"conv_id": ["P1"], "kind": ["pipe"]},
            geometry=[LineString([(100, 150), (180, 150)])],
            crs=CRS,
        ),
    ).set_index("parcel_id")
    assert not s.loc["P1", "within_setback"]


def test_no_sewer_districts_means_no_inference():
    s = flag_septic_table(parcels_frame(), parcel_drainage(), waters=town_waters())
    assert "P4" not in set(s["parcel_id"])
    (finding,) = s.attrs["qa"].by_code("septic_not_inferred")
    assert "sewer_districts" in finding.message and finding.fix


def test_parse_failure_codes():
    assert parse_failure_codes("B; C") == ["B", "C"]
    assert parse_failure_codes("174-6D") == ["D"]
    assert parse_failure_codes("sewage backup") == ["A"]
    assert parse_failure_codes(None) == [] and parse_failure_codes("none") == []
    assert parse_failure_codes("gremlins") == ["?"]
    assert parse_failure_codes("surface_discharge") == ["B"]
    assert parse_failure_codes("storm_connection") == ["C"]
    assert parse_failure_codes("off-site groundwater contamination") == ["F"]


def test_mailing_list(septic, tmp_path):
    sep = septic.reset_index()
    ml = mailing_list(sep, profile="kingsbury")
    assert list(ml["parcel_id"])[0] == "P6"  # the violation first
    assert set(ml["parcel_id"]) == {"P1", "P4", "P6", "P8"}
    assert ml["officer_title"].iloc[0] == "Stormwater Management Officer"
    path = write_mailing_list(sep, tmp_path / "letters.csv")
    back = pd.read_csv(path)
    assert {"owner", "owner_address", "parcel_id"} <= set(back.columns) and len(back) == 4


def test_septic_flags_is_the_frame_typed():
    """:func:`assess_septic` answers a :class:`SepticFlags` whose table is the frame of
    :func:`flag_septic_table`, without ``attrs``; the QA and missing layers are fields."""
    kw = {"waters": town_waters(), "outfall_points": OUTFALL_POINTS}
    flags = assess_septic(parcels_frame(), parcel_drainage(), **kw)
    frame = flag_septic_table(parcels_frame(), parcel_drainage(), **kw)
    assert isinstance(flags, SepticFlags)
    assert flags.table.attrs == {}
    assert list(flags.table.columns) == [*SEPTIC_COLUMNS, "geometry"]
    pd.testing.assert_frame_equal(pd.DataFrame(flags.table), pd.DataFrame(frame))
    assert [f.code for f in flags.qa.findings] == [f.code for f in frame.attrs["qa"].findings]
    assert list(flags.missing_layers) == frame.attrs["missing_layers"]
    assert undetermined_causes(
        flags.table, missing_layers=flags.missing_layers
    ) == undetermined_causes(frame)
    assert repr(flags).startswith("SepticFlags(")
