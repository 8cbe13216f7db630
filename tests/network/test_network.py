"""Tests of the storm network: snapping, orientation, outfalls, QA, traces, CLI."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from network_builders import FEET, UTM, by_id, conveyances, structures, ws_of
from pyproj import CRS
from shapely.geometry import MultiLineString, Point, Polygon

from ms4map.core.errors import DataError
from ms4map.network import (
    ASSIGN_METHODS,
    assign_outfalls,
    build_network,
    edge_outfalls,
    network_sewersheds,
    trace_downstream,
    trace_upstream,
)


@pytest.fixture
def two_inlet_tree():
    """Two inlets -> manhole -> outfall headwall; one pipe digitised against its inverts."""
    st = structures(
        [
            ("CB1", "catch_basin", 0, 100, 10.0),
            ("CB2", "catch_basin", 0, -100, 10.0),
            ("MH1", "manhole", 100, 0, 8.0),
            ("OF1", "outfall", 200, 0, 5.0),
        ]
    )
    cv = conveyances(
        [
            {"conv_id": "P1", "coords": [(0, 100), (100, 0)], "us_invert": 10.0, "ds_invert": 8.5},
            # digitised downstream -> upstream, inverts still at the ends they name
            {"conv_id": "P2", "coords": [(100, 0), (0, -100)], "us_invert": 8.5, "ds_invert": 10.0},
            {
                "conv_id": "P3",
                "coords": [(100, 0), (200, 0)],
                "us_invert": 8.0,
                "ds_invert": 5.0,
                "diameter_in": 24.0,
            },
        ]
    )
    return ws_of(st, cv)


def test_tree_outfalls_and_orientation(two_inlet_tree):
    net = build_network(two_inlet_tree)
    t = by_id(assign_outfalls(net))
    assert set(t.index) == {"CB1", "CB2", "MH1", "OF1"}
    assert (t["outfall_id"] == "OF1").all()
    assert t.loc["CB1", "method"] == "outfall_structure"
    e = net.edges.set_index("conv_id")
    assert (e["orient_method"] == "inverts").all()
    assert e.loc["P2", "from_node"] == "CB2" and e.loc["P2", "to_node"] == "MH1"
    # the reversed line is stored in flow order
    assert shapely.get_coordinates(e.loc["P2", "geometry"])[0].tolist() == [0, -100]
    assert [f.feature_id for f in net.qa.by_code("reversed_digitization")] == ["P2"]
    assert list(net.outfalls.index) == ["OF1"]
    assert net.outfalls.loc["OF1", "method"] == "outfall_structure"


def test_edge_outfalls_and_traces(two_inlet_tree):
    net = build_network(two_inlet_tree)
    eo = edge_outfalls(net).set_index("conv_id")
    assert (eo["outfall_id"] == "OF1").all()
    tr = trace_downstream(net, "CB1")
    assert tr.outfall_ids == ["OF1"]
    assert list(tr.edges["conv_id"]) == ["P1", "P3"]
    assert tr.length_m == pytest.approx(np.hypot(100, 100) + 100)
    tr2 = trace_downstream(net, Point(150, 1))  # a map point on P3
    assert tr2.outfall_ids == ["OF1"] and tr2.length_m == pytest.approx(50, abs=1)
    tr3 = trace_downstream(net, "P1")
    assert "P3" in set(tr3.edges["conv_id"])
    up = trace_upstream(net, "OF1")
    assert set(up.struct_ids) == {"CB1", "CB2", "MH1", "OF1"}
    assert set(up.conv_ids) == {"P1", "P2", "P3"}
    up2 = trace_upstream(net, "MH1")
    assert set(up2.struct_ids) == {"CB1", "CB2", "MH1"}
    with pytest.raises(DataError, match="neither a struct_id nor a conv_id"):
        trace_downstream(net, "NOPE")


def test_feet_crs_uses_feet_tolerances():
    # 4 ft gap: within the default 5 ft (1.524 m) tolerance in a US-feet CRS
    st = structures([("A", "inlet", 0, 0), ("O", "outfall", 100, 0)], crs=FEET)
    cv = conveyances([{"conv_id": "P", "coords": [(4, 0), (100, 0)]}], crs=FEET)
    net = build_network(ws_of(st, cv, crs=FEET))
    assert by_id(assign_outfalls(net)).loc["A", "outfall_id"] == "O"
    assert net.edges["length_m"].iat[0] == pytest.approx(96 * 0.3048006, rel=1e-4)
    # 6 ft is too far: with laterals off the inlet is unconnected
    cv2 = conveyances([{"conv_id": "P", "coords": [(6, 0), (100, 0)]}], crs=FEET)
    net2 = build_network(ws_of(st, cv2, crs=FEET), lateral_tolerance_m=0)
    t = by_id(assign_outfalls(net2))
    assert t.loc["A", "method"] == "unconnected" and pd.isna(t.loc["A", "outfall_id"])
    assert "A" in {f.feature_id for f in net2.qa.by_code("orphan_structure")}


def test_rule_chain_ids_flowdir_structures_digitized():
    st = structures(
        [
            ("A", "manhole", 0, 0, 5.0),
            ("B", "manhole", 100, 0, 9.0),
            ("C", "manhole", 0, 100),
            ("D", "manhole", 100, 100),
            ("E", "manhole", 0, 200),
            ("F", "manhole", 100, 200),
            ("G", "manhole", 0, 300),
            ("H", "manhole", 100, 300),
        ]
    )
    cv = conveyances(
        [
            # no inverts; ids say B -> A although digitised A -> B
            {"conv_id": "ids", "coords": [(0, 0), (100, 0)], "from_id": "B", "to_id": "A"},
            {"conv_id": "fd", "coords": [(0, 100), (100, 100)], "flow_dir": "reverse"},
            {"conv_id": "bi", "coords": [(0, 200), (100, 200)], "flow_dir": "bi"},
            {"conv_id": "dig", "coords": [(0, 300), (100, 300)]},
        ]
    )
    net = build_network(ws_of(st, cv))
    e = net.edges.set_index("conv_id")
    assert e.loc["ids", "orient_method"] == "ids" and e.loc["ids", "from_node"] == "B"
    assert e.loc["fd", "orient_method"] == "flow_dir" and e.loc["fd", "from_node"] == "D"
    assert e.loc["bi", "orient_method"] == "flow_dir_bi" and bool(e.loc["bi", "bidirectional"])
    # nothing orients G-H and both ends are open: it runs to the end it is drawn to
    assert e.loc["dig", "orient_method"] == "outlet_path" and e.loc["dig", "from_node"] == "G"
    # structure inverts decide when nothing else does
    cv2 = conveyances([{"conv_id": "s", "coords": [(0, 0), (100, 0)]}])
    net2 = build_network(ws_of(st.iloc[:2], cv2))
    e2 = net2.edges.set_index("conv_id")
    assert e2.loc["s", "orient_method"] == "structure_inverts"
    assert e2.loc["s", "from_node"] == "B"
    assert set(net.edges["orient_method"]) <= {
        "inverts",
        "ids",
        "flow_dir",
        "flow_dir_bi",
        "structure_inverts",
        "structure_rims",
        "digitized",
        "outlet_path",
        "assumed_lateral",
    }


def test_uphill_pipe_names_the_rule_that_chose_its_direction():
    """The ids say A -> B, but A's invert (5.0) is below B's (8.0): the pipe is kept as the
    ids say (they outrank structure inverts) and flagged uphill, naming the rule."""
    st = structures([("A", "manhole", 0, 0, 5.0), ("B", "manhole", 100, 0, 8.0)])
    cv = conveyances([{"conv_id": "P", "coords": [(0, 0), (100, 0)], "from_id": "A", "to_id": "B"}])
    net = build_network(ws_of(st, cv))
    e = net.edges.set_index("conv_id")
    assert e.loc["P", "orient_method"] == "ids" and e.loc["P", "from_node"] == "A"
    (f,) = net.qa.by_code("uphill_pipe")
    assert f.feature_id == "P"
    assert "'ids' rule" in f.message and "docs/network.md" in f.message
    assert "lower invert to one with a higher invert" in f.message


def test_ids_beat_inverts_and_adverse_slope_is_reported():
    st = structures([("A", "manhole", 0, 0), ("B", "outfall", 100, 0)])
    # ids say A -> B, inverts (at the ends the ids name) say B -> A
    cv = conveyances(
        [
            {
                "conv_id": "P",
                "coords": [(0, 0), (100, 0)],
                "from_id": "A",
                "to_id": "B",
                "us_invert": 3.0,
                "ds_invert": 4.0,
            }
        ]
    )
    net = build_network(ws_of(st, cv))
    e = net.edges.iloc[0]
    # issue 27: the ids are kept; the uphill inverts are reported, never obeyed silently
    assert e["orient_method"] == "ids" and e["from_node"] == "A"
    assert e["orient_overruled"] == "inverts"
    (f,) = net.qa.by_code("adverse_slope")
    assert f.feature_id == "P" and "adverse slope 1.00%" in f.message
    assert not net.qa.by_code("orientation_conflict")


def test_id_checked_against_geometry():
    st = structures([("A", "manhole", 0, 0), ("B", "manhole", 100, 0), ("Z", "manhole", 500, 500)])
    cv = conveyances([{"conv_id": "P", "coords": [(0, 0), (100, 0)], "from_id": "Z", "to_id": "B"}])
    net = build_network(ws_of(st, cv))
    codes = net.qa.codes()
    assert codes["id_geometry_mismatch"] == 1
    e = net.edges.iloc[0]
    assert {e["from_node"], e["to_node"]} == {"A", "B"}  # geometry decided the far end


def test_end_on_middle_of_conveyance_splits_it():
    st = structures(
        [("CB", "catch_basin", 50, 80), ("O", "outfall", 200, 0), ("U", "manhole", 0, 0)]
    )
    cv = conveyances(
        [
            {"conv_id": "MAIN", "coords": [(0, 0), (200, 0)], "diameter_in": 36},
            {"conv_id": "LAT", "coords": [(50, 80), (50, 0.5)]},  # ends 0.5 m off MAIN
        ]
    )
    net = build_network(ws_of(st, cv))
    main_parts = net.edges[net.edges["conv_id"] == "MAIN"]
    assert len(main_parts) == 2
    t = by_id(assign_outfalls(net))
    assert t.loc["CB", "outfall_id"] == "O"
    assert not net.qa.by_code("unsnapped_end")
    assert set(edge_outfalls(net)["conv_id"]) == {"MAIN", "LAT"}


def test_flow_split_main_and_other_outfalls():
    st = structures(
        [
            ("A", "inlet", 0, 0, 10),
            ("S", "manhole", 100, 0, 9),
            ("O1", "outfall", 200, 50, 1),
            ("O2", "outfall", 200, -50, 1),
        ]
    )
    cv = conveyances(
        [
            {"conv_id": "in", "coords": [(0, 0), (100, 0)], "us_invert": 10, "ds_invert": 9},
            {
                "conv_id": "small",
                "coords": [(100, 0), (200, 50)],
                "us_invert": 9,
                "ds_invert": 1,
                "diameter_in": 12,
            },
            {
                "conv_id": "big",
                "coords": [(100, 0), (200, -50)],
                "us_invert": 9,
                "ds_invert": 1,
                "diameter_in": 30,
            },
        ]
    )
    net = build_network(ws_of(st, cv))
    t = by_id(assign_outfalls(net))
    assert t.loc["A", "method"] == "split"
    assert t.loc["A", "outfall_id"] == "O2" and t.loc["A", "other_outfalls"] == "O1"
    tr = trace_downstream(net, "A")
    assert tr.outfall_ids == ["O2", "O1"]


def test_outfall_precedence_and_water_layer():
    st = structures([("A", "inlet", 0, 0), ("B", "inlet", 0, 100), ("C", "inlet", 0, 200)])
    cv = conveyances(
        [
            {"conv_id": "P1", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "P2", "coords": [(0, 100), (100, 100)]},
            {"conv_id": "P3", "coords": [(0, 200), (100, 200)]},
        ]
    )
    outfalls = gpd.GeoDataFrame(
        {
            "outfall_id": ["OUT-7"],
            "receiving_water": ["Mill Creek"],
            "pwl_id": ["1302-0092"],
            "status": ["unknown"],
        },
        geometry=[Point(100.5, 0)],
        crs=UTM,
    )
    water = gpd.GeoDataFrame(
        {"wb_id": ["1302-0001"], "name": ["Pond"]},
        geometry=[Polygon([(105, 95), (150, 95), (150, 130), (105, 130)])],
        crs=UTM,
    )
    net = build_network(ws_of(st, cv, outfalls=outfalls, waterbodies=water))
    t = by_id(assign_outfalls(net))
    assert t.loc["A", "outfall_id"] == "OUT-7" and t.loc["A", "method"] == "outfalls_layer"
    assert t.loc["B", "method"] == "terminal_at_water"
    assert t.loc["C", "method"] == "terminal_not_at_water" and pd.isna(t.loc["C", "outfall_id"])
    tr = trace_downstream(net, "A")
    assert tr.receiving_waters == ["Mill Creek"]
    assert net.qa.codes()["no_outfall_subnetwork"] == 1
    # without a water layer every terminal is an outfall candidate, ranked: these
    # terminals are bare line ends (the structures sit at the upstream ends)
    net2 = build_network(ws_of(st, cv))
    assert set(by_id(assign_outfalls(net2))["method"]) == {"terminal_loose_end"}


def test_cycle_and_no_outfall_network():
    st = structures([("A", "manhole", 0, 0), ("B", "manhole", 100, 0), ("C", "manhole", 50, 80)])
    cv = conveyances(
        [
            {"conv_id": "AB", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "BC", "coords": [(100, 0), (50, 80)]},
            {"conv_id": "CA", "coords": [(50, 80), (0, 0)]},
        ]
    )
    net = build_network(ws_of(st, cv))
    t = assign_outfalls(net)
    assert set(t["method"]) == {"cycle"}
    assert t["outfall_id"].isna().all()
    assert net.qa.codes()["cycle"] == 1
    assert net.qa.codes()["no_outfall_subnetwork"] == 1
    assert len(net.outfalls) == 0
    sheds = network_sewersheds(net)
    assert len(sheds) == 0


def test_bad_geometries_are_findings_not_crashes():
    st = structures(
        [
            ("A", "inlet", 0, 0),
            ("A2", "inlet", 0, 0),
            ("O", "outfall", 100, 0),
            ("X", "inlet", 500, 500),
        ]
    )
    cv = conveyances(
        [
            {"conv_id": "P", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "ZERO", "coords": [(50, 50), (50, 50)]},
            {
                "conv_id": "MULTI",
                "coords": MultiLineString([[(0, 0), (0, -50)], [(300, 300), (300, 350)]]),
            },
            {"conv_id": "LONE", "coords": [(1000, 1000), (1100, 1000)]},
            {"conv_id": "NONE", "coords": None},
        ]
    )
    cv.loc[cv["conv_id"] == "NONE", "geometry"] = None
    net = build_network(ws_of(st, cv), lateral_tolerance_m=0)
    codes = net.qa.codes()
    assert codes["zero_length_conveyance"] == 1
    assert codes["multipart_line"] == 1
    assert codes["bad_geometry"] == 1
    assert codes["duplicate_feature"] >= 1  # A and A2 at identical coordinates
    assert codes["dangling_conveyance"] >= 1  # LONE and the far part of MULTI
    assert codes["orphan_structure"] == 1  # X
    t = by_id(assign_outfalls(net))
    assert t.loc["A2", "outfall_id"] == "O"  # shares A's node
    assert t.loc["X", "method"] == "unconnected"
    assert set(t["method"]) <= set(ASSIGN_METHODS)
    assert {"MULTI.1", "MULTI.2"} <= set(net.edges["conv_id"])


def test_unsnapped_end_reported():
    st = structures([("A", "inlet", 0, 0), ("B", "manhole", 100, 0)])
    cv = conveyances(
        [
            {"conv_id": "P", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "Q", "coords": [(100, 0), (200, 10)]},
        ]
    )
    net = build_network(ws_of(st, cv))
    assert [f.feature_id for f in net.qa.by_code("unsnapped_end")] == ["Q"]
    assert net.qa.to_geodataframe(net.crs).shape[0] == len(net.qa.findings)


def test_geographic_crs_and_missing_layers_raise_clear_errors():
    st = structures([("A", "inlet", -73.9, 40.7)], crs=CRS.from_epsg(4326))
    cv = conveyances(
        [{"conv_id": "P", "coords": [(-73.9, 40.7), (-73.8, 40.7)]}], crs=CRS.from_epsg(4326)
    )
    with pytest.raises(DataError, match="projected working CRS"):
        build_network(ws_of(st, cv, crs=CRS.from_epsg(4326)))
    with pytest.raises(DataError, match="no conveyances"):
        build_network(ws_of(structures([("A", "inlet", 0, 0)]), None))
    with pytest.raises(DataError, match="snap_tolerance_m"):
        build_network(
            ws_of(None, conveyances([{"conv_id": "P", "coords": [(0, 0), (1, 0)]}])),
            snap_tolerance_m=-1,
        )


def test_assumed_lateral_links_orphan_structure():
    st = structures(
        [
            ("CB", "catch_basin", 50, 8),
            ("O", "outfall", 100, 0),
            ("U", "manhole", 0, 0),
            ("FAR", "inlet", 50, 200),
        ]
    )
    cv = conveyances([{"conv_id": "MAIN", "coords": [(0, 0), (100, 0)]}])
    net = build_network(ws_of(st, cv))
    t = by_id(assign_outfalls(net))
    assert t.loc["CB", "method"] == "assumed_lateral" and t.loc["CB", "outfall_id"] == "O"
    assert t.loc["FAR", "method"] == "unconnected"
    assert {f.feature_id for f in net.qa.by_code("orphan_structure")} == {"CB", "FAR"}
    assert "lateral:CB" in set(net.edges["conv_id"])
    assert "CB" in trace_upstream(net, "O").struct_ids


def test_generated_ids_and_sewersheds(two_inlet_tree):
    st = two_inlet_tree.layers["structures"].copy()
    st.loc[0, "struct_id"] = None
    ws = ws_of(st, two_inlet_tree.layers["conveyances"])
    net = build_network(ws)
    t = assign_outfalls(net)
    assert t["struct_id"].iat[0] == "structures:1"
    assert t["outfall_id"].iat[0] == "OF1"
    sheds = network_sewersheds(net)
    assert list(sheds["outfall_id"]) == ["OF1"]
    assert sheds.geometry.iat[0].area > 0
    assert sheds.geometry.iat[0].contains(Point(100, 0))


def test_cli_trace_all(tmp_path, two_inlet_tree, capsys):
    from ms4map.cli import main

    gpkg = tmp_path / "town.gpkg"
    two_inlet_tree.layers["structures"].to_file(gpkg, layer="structures", driver="GPKG")
    two_inlet_tree.layers["conveyances"].to_file(gpkg, layer="conveyances", driver="GPKG")
    out = tmp_path / "trace.csv"
    rc = main(["trace", str(gpkg), "--all", "--out", str(out), "--qa", str(tmp_path / "qa.md")])
    assert rc == 0
    df = pd.read_csv(out)
    assert list(df.columns) == [
        "struct_id",
        "outfall_id",
        "outfall_x",
        "outfall_y",
        "method",
        "reason",
        "other_outfalls",
    ]
    assert (df["outfall_id"] == "OF1").all()
    assert df["outfall_x"].iat[0] == pytest.approx(200)
    assert "network QA" in (tmp_path / "qa.md").read_text()
    rc = main(["trace", str(gpkg), "--from", "CB1"])
    text = capsys.readouterr().out
    assert rc == 0 and "OF1" in text and "P3" in text
    rc = main(["trace", str(gpkg), "--upstream-of", "OF1"])
    assert rc == 0 and "CB2" in capsys.readouterr().out
    assert main(["trace", str(gpkg)]) == 4
    assert main(["trace", str(gpkg), "--from", "NOPE"]) == 2
