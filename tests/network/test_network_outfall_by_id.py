"""An outfalls-layer point off its structure (found in the field a few metres away) is
that structure's outfall, matched by its id; never a second outfall of the same id."""

from __future__ import annotations

import geopandas as gpd
from network_builders import conveyances, structures, ws_of
from shapely.geometry import Point

from ms4map.network import assign_outfalls, build_network

ST = [("CB1", "catch_basin", 0, 100), ("OF1", "outfall", 0, 0)]
CV = [{"conv_id": "P1", "coords": [(0, 100), (0, 0)]}]


def _net(dy: float):
    st = structures(ST)
    of = gpd.GeoDataFrame(
        {"outfall_id": ["OF1"], "receiving_water": ["Kenyon River"]},
        geometry=[Point(0, -dy)],
        crs=st.crs,
    )
    return build_network(ws_of(st, conveyances(CV), outfalls=of))


def test_a_point_off_its_structure_is_matched_by_its_id():
    net = _net(11.0)  # 11 m: beyond the 1.5 m snap tolerance, within the 15 m id match
    assert net.outfalls.index.tolist() == ["OF1"]
    row = net.outfalls.loc["OF1"]
    assert row["node_id"] == "OF1" and row["method"] == "outfalls_layer"
    assert row["receiving_water"] == "Kenyon River"  # the layer's attributes kept
    assert net.qa.codes()["outfall_matched_by_id"] == 1
    assert "unsnapped_outfall" not in net.qa.codes()
    t = assign_outfalls(net).set_index("struct_id")
    assert t.loc["CB1", "outfall_id"] == "OF1"


def test_a_point_too_far_is_unsnapped_and_never_a_second_outfall_of_that_id():
    net = _net(40.0)
    assert net.outfalls.index.tolist() == ["OF1"]  # once: the structure's
    assert net.outfalls.loc["OF1", "node_id"] == "OF1"
    assert net.qa.codes()["unsnapped_outfall"] == 1
    t = assign_outfalls(net).set_index("struct_id")
    assert t.loc["CB1", "outfall_id"] == "OF1"
