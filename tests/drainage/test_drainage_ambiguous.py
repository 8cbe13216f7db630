"""The drainage join on an ambiguous network path: no outfall named, the candidates kept."""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
from ambiguous_builders import bare_y_network, inlet_rows, patch_network, y_network
from network_builders import UTM
from shapely.geometry import Point, box

from ms4map.drainage import COLUMNS, network_join, parcel_drainage
from ms4map.drainage.join import join_rows


def test_different_waters_leave_outfall_and_water_empty(monkeypatch):
    patch_network(monkeypatch)
    join = network_join(y_network())
    assert join.inlet_outfall.loc["A", "method"] == "ambiguous"
    assert join.conv_outfall.loc["in", "method"] == "ambiguous"
    got = join_rows(inlet_rows(("P1", "A", 1.0)), join).iloc[0]
    assert got["outfall_id"] is None
    assert pd.isna(got["receiving_water"]) and pd.isna(got["pwl_id"])
    assert got["outfall_candidates"] == "O1;O2"
    assert got["candidate_waters"] == "1302-0001;1302-0002"
    assert got["reason"] == (
        "surface flow reaches inlet A; the network cannot tell whether flow reaches O1 or O2 "
        "(receiving waters Test Creek (1302-0001), Mill Brook (1302-0002)): "
        "outfall undetermined"
    )


def test_same_water_fills_the_water_but_no_outfall(monkeypatch):
    patch_network(monkeypatch)
    same = {"O1": ("Test Creek", "1302-0001"), "O2": ("Test Creek", "1302-0001")}
    got = join_rows(inlet_rows(("P1", "A", 1.0)), network_join(y_network(same))).iloc[0]
    assert got["outfall_id"] is None
    assert (got["receiving_water"], got["pwl_id"]) == ("Test Creek", "1302-0001")
    assert got["outfall_candidates"] == "O1;O2"
    assert got["reason"].endswith(
        "the network cannot tell whether flow reaches O1 or O2; both discharge to "
        "Test Creek (1302-0001)"
    )


def test_a_split_still_names_its_main_outfall():
    # a split the pipe sizes decide: unchanged, the main outfall named, no candidates
    join = network_join(y_network(sized=True))
    assert join.inlet_outfall.loc["A", "method"] == "split"
    got = join_rows(inlet_rows(("P1", "A", 1.0)), join).iloc[0]
    assert got["outfall_id"] == "O1" and got["pwl_id"] == "1302-0001"
    assert got["outfall_candidates"] == "" and got["candidate_waters"] == ""
    assert got["reason"].endswith("then the pipes to outfall O1 (flow splits; also O2)")


def test_parcel_table_keeps_its_columns_and_adds_the_candidates_last(monkeypatch):
    patch_network(monkeypatch)
    net = y_network()
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P1", "P2"]},
        geometry=[box(-20, -20, -5, 20), box(500, 500, 520, 520)],
        crs=UTM,
    )
    inlets = gpd.GeoDataFrame({"node_id": ["A"]}, geometry=[Point(0, 0)], crs=UTM)
    dr = parcel_drainage(parcels, None, join=network_join(net), inlets=inlets)
    assert list(dr.columns) == COLUMNS
    assert COLUMNS[-2:] == ["outfall_candidates", "candidate_waters"]
    assert COLUMNS[:-2] == [
        "parcel_id",
        "target_kind",
        "target_id",
        "fraction",
        "outfall_id",
        "receiving_water",
        "pwl_id",
        "method",
        "reason",
    ]
    by = dr.set_index("parcel_id")
    assert by.loc["P1", "method"] == "nearest_inlet" and pd.isna(by.loc["P1", "outfall_id"])
    assert by.loc["P1", "outfall_candidates"] == "O1;O2"
    assert by.loc["P2", "target_kind"] == "unknown" and by.loc["P2", "outfall_candidates"] == ""


def test_the_networks_own_ambiguous_answer_end_to_end():
    # no patch: the network itself calls the bare Y ambiguous (skipped before issue 27)
    got = join_rows(inlet_rows(("P1", "A", 1.0)), network_join(bare_y_network())).iloc[0]
    assert got["outfall_id"] is None and pd.isna(got["pwl_id"])
    assert got["outfall_candidates"] == "O1;O2"
    assert got["candidate_waters"] == "1302-0001;1302-0002"
    assert "the network cannot tell whether flow reaches O1 or O2" in got["reason"]
