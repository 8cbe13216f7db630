"""Geometry-only networks: orientation from known outlets, ranked termini, splits.

Every network here is designed by hand; the expected answers are worked out in the
comments (distances along the network to the nearest real outlet, in metres).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from affine import Affine
from network_builders import UTM, far_water, network_workspace

from ms4map.io.workspace import Dem, Workspace
from ms4map.network import assign_outfalls, build_network
from ms4map.network.costs import outlet_costs
from ms4map.network.orient import (
    dem_ground_at,
    downhill_evidence,
    open_end_headwalls,
    orient_by_outlet_path,
    segment_table,
)


def _edges(net):
    return net.edges.set_index("conv_id")


# ------------------------------------------------------------------------------------
# the step functions on plain arrays
# ------------------------------------------------------------------------------------
def test_outlet_costs_multi_source_along_lengths():
    # path 0 -10- 1 -20- 2 -5- 3, outlets 0 and 3; node 4 is cut off
    u, v, w = np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([10.0, 20.0, 5.0])
    d, nxt = outlet_costs(u, v, w, w, n_nodes=5, targets=np.array([0, 3]))
    assert np.allclose(d[:4], [0, 10, 5, 0])
    assert np.isinf(d[4])
    assert nxt.tolist() == [-1, 0, 3, -1, -1]
    # no outlet at all: every cost is infinite
    assert np.isinf(outlet_costs(u, v, w, w, n_nodes=4, targets=np.zeros(0, int))[0]).all()


def test_outlet_costs_one_way_arcs_and_a_target_that_costs():
    # 0 -> 1 -> 2 one way (the way back is not allowed); target 2 free, target 0 costs 100
    u, v, w = np.array([0, 1]), np.array([1, 2]), np.array([10.0, 10.0])
    back = np.full(2, np.inf)
    d, nxt = outlet_costs(
        u, v, w, back, n_nodes=3, targets=np.array([2, 0]), start=np.array([0.0, 100.0])
    )
    # node 0 leaves by 1 to 2 (20) rather than ending where it is (100)
    assert np.allclose(d, [20, 10, 0]) and nxt.tolist() == [1, 2, -1]


def test_orient_by_outlet_path_farther_end_first_ties_undecided():
    ev = orient_by_outlet_path(np.array([10.0, 0.0, 5.0, np.inf]), np.array([0.0, 10.0, 5.0, 3]))
    assert ev.tolist() == [1, -1, 0, 0]


def test_segment_table_splits_and_laterals():
    # line 0: nodes 0 -> 1, 100 long, split at 40 by node 5; line 1: 2 -> 3, 30 long
    end_node = np.array([0, 2, 1, 3])
    u, v, w, line = segment_table(
        end_node, np.array([100.0, 30.0]), {0: [(40.0, 5)]}, [(7, 5, 12.0, 0)]
    )
    rows = sorted(zip(u.tolist(), v.tolist(), w.tolist(), line.tolist(), strict=True))
    assert rows == [(0, 5, 40.0, 0), (2, 3, 30.0, 1), (5, 1, 60.0, 0), (7, 5, 12.0, -1)]


def test_dem_ground_and_downhill_evidence():
    # 3 x 3 cells of 10 m, origin (0, 30): rows from the top
    arr = np.array([[9.0, 8.0, 7.0], [6.0, 5.0, 4.0], [3.0, 2.0, np.nan]])
    dem = Dem(arr, Affine(10, 0, 0, 0, -10, 30), UTM)
    z = dem_ground_at(dem, np.array([[5, 25], [25, 5], [15, 15], [50, 5]]))
    assert z[0] == 9.0 and np.isnan(z[1]) and z[2] == 5.0 and np.isnan(z[3])
    ev = downhill_evidence(np.array([9.0, 5.0, 5.0, np.nan]), np.array([5.0, 9.0, 5.001, 1]), 0.003)
    assert ev.tolist() == [1, -1, 0, 0]


def test_open_end_headwalls_only_at_one_end():
    kinds = np.array(["headwall", "headwall", "manhole"], dtype=object)
    assert open_end_headwalls(kinds, np.array([1, 2, 1])).tolist() == [0]


# ------------------------------------------------------------------------------------
# designed networks
# ------------------------------------------------------------------------------------
TREE_ST = [
    ("HW", "headwall", 0, 0),
    ("M1", "manhole", 100, 0),
    ("M2", "manhole", 200, 0),
    ("CB1", "catch_basin", 100, 50),
    ("CB2", "catch_basin", 200, 50),
    ("CB3", "catch_basin", 300, 0),
]
# drawn half against the flow: T1, T2 and L2 point away from the headwall
TREE_CV = [
    {"conv_id": "T1", "coords": [(0, 0), (100, 0)]},
    {"conv_id": "T2", "coords": [(100, 0), (200, 0)]},
    {"conv_id": "T3", "coords": [(300, 0), (200, 0)]},
    {"conv_id": "L1", "coords": [(100, 50), (100, 0)]},
    {"conv_id": "L2", "coords": [(200, 0), (200, 50)]},
]


def test_geometry_only_tree_half_against_the_flow_drains_to_its_headwall():
    # distances to HW: M1 100, M2 200, CB1 150, CB2 250, CB3 300: every line runs
    # from its farther end to its nearer one, so every basin reaches HW
    net = build_network(network_workspace(TREE_ST, TREE_CV))
    e = _edges(net)
    assert set(e["orient_method"]) == {"outlet_path"}
    flow = dict(zip(e.index, zip(e["from_node"], e["to_node"], strict=True), strict=True))
    assert flow == {
        "T1": ("M1", "HW"),
        "T2": ("M2", "M1"),
        "T3": ("CB3", "M2"),
        "L1": ("CB1", "M1"),
        "L2": ("CB2", "M2"),
    }
    assert net.outfalls.index.tolist() == ["HW"]
    assert net.outfalls.loc["HW", "method"] == "headwall_at_end"
    t = assign_outfalls(net).set_index("struct_id")
    for sid, n_conv, metres in (("CB1", 2, 150), ("CB2", 3, 250), ("CB3", 3, 300)):
        assert t.loc[sid, "outfall_id"] == "HW"
        assert t.loc[sid, "method"] == "headwall_at_end"
        assert t.loc[sid, "reason"] == (
            f"{n_conv} conveyance(s), {metres} m downstream to outfall HW "
            "(a headwall at an open end)"
        )
    assert "outlet_path 5" in " ".join(net.qa.notes)


def test_two_headwalls_and_a_stub():
    # two systems each ending at a headwall, and a third with no real outlet whose pipe
    # simply stops: the stub's end is the weakest terminal, a loose end
    st = [
        ("HW1", "headwall", 0, 0),
        ("CB1", "catch_basin", 100, 0),
        ("HW2", "headwall", 0, 500),
        ("CB2", "catch_basin", 80, 500),
        ("CB3", "catch_basin", 500, 0),
    ]
    cv = [
        {"conv_id": "A", "coords": [(0, 0), (100, 0)]},  # against the flow
        {"conv_id": "B", "coords": [(80, 500), (0, 500)]},  # with the flow
        # no real outlet: it runs to its open end (a catch basin is where water enters)
        {"conv_id": "STUB", "coords": [(560, 0), (500, 0)]},
    ]
    net = build_network(network_workspace(st, cv))
    e = _edges(net)
    assert e.loc["A", "orient_method"] == "outlet_path" and e.loc["A", "to_node"] == "HW1"
    assert e.loc["B", "orient_method"] == "outlet_path" and e.loc["B", "to_node"] == "HW2"
    assert e.loc["STUB", "orient_method"] == "outlet_path"
    assert e.loc["STUB", "from_node"] == "CB3"  # turned against its drawing
    methods = net.outfalls["method"].to_dict()
    assert methods == {
        "HW1": "headwall_at_end",
        "HW2": "headwall_at_end",
        "end:STUB": "terminal_loose_end",
    }
    t = assign_outfalls(net).set_index("struct_id")
    assert t.loc["CB1", "outfall_id"] == "HW1" and t.loc["CB2", "outfall_id"] == "HW2"
    assert t.loc["CB3", "outfall_id"] == "end:STUB"
    assert t.loc["CB3", "method"] == "terminal_loose_end"
    assert "a line end that touches nothing" in t.loc["CB3", "reason"]
    assert "unsnapped_end" in net.qa.codes()


def test_split_whose_first_listed_branch_ends_at_a_stub():
    # at S the flow splits (inverts fix every direction): STUB is listed first and
    # ends loose; TOHW reaches a headwall. No pipe size or invert tells them apart,
    # so before the ranking the main branch was STUB (input order); now the branch
    # reaching the real outlet wins and the stub is the other outfall
    st = [
        ("A", "inlet", 0, 0),
        ("S", "manhole", 100, 0),
        ("HW", "headwall", 200, -50),
    ]
    cv = [
        {"conv_id": "in", "coords": [(0, 0), (100, 0)], "us_invert": 10.0, "ds_invert": 9.0},
        {"conv_id": "STUB", "coords": [(100, 0), (200, 50)], "us_invert": 9.0, "ds_invert": 8.0},
        {"conv_id": "TOHW", "coords": [(100, 0), (200, -50)], "us_invert": 9.0, "ds_invert": 8.0},
    ]
    net = build_network(network_workspace(st, cv))
    assert set(_edges(net)["orient_method"]) == {"inverts"}
    t = assign_outfalls(net).set_index("struct_id")
    row = t.loc["A"]
    assert row["method"] == "split"
    assert row["outfall_id"] == "HW"
    assert row["other_outfalls"] == "end:STUB"
    assert "the branch that reaches the best-ranked terminal" in row["reason"]
    # two loose ends: only the input order is left, and the reason says so
    cv2 = [cv[0], cv[1], {**cv[2], "conv_id": "STUB2"}]
    t2 = assign_outfalls(build_network(network_workspace(st[:2], cv2))).set_index("struct_id")
    assert t2.loc["A", "outfall_id"] == "end:STUB"
    assert t2.loc["A", "other_outfalls"] == "end:STUB2"
    assert "the conveyance listed first in the input" in t2.loc["A", "reason"]


def test_uni_ranks_below_the_outlet_rule_bi_and_reverse_above():
    st = [("HW", "headwall", 0, 0), ("M", "manhole", 100, 0), ("CB", "catch_basin", 100, 80)]
    st += [("X", "manhole", 500, 0), ("Y", "manhole", 600, 0)]
    cv = [
        # UNI but drawn away from the headwall: the outlet rule wins, QA counts it
        {"conv_id": "U", "coords": [(0, 0), (100, 0)], "flow_dir": "uni"},
        # BI: two-way
        {"conv_id": "B", "coords": [(100, 80), (100, 0)], "flow_dir": "bi"},
        # reverse: stronger than the outlet rule
        {"conv_id": "R", "coords": [(500, 0), (600, 0)], "flow_dir": "reverse"},
        # UNI with no real outlet in its part of the network, but R's one-way value
        # drains into the open end at X (a terminal where nothing checks the
        # terminals): U2 runs towards it, against its UNI drawing (issue 27)
        {"conv_id": "U2", "coords": [(600, 0), (700, 0)], "flow_dir": "uni"},
    ]
    net = build_network(network_workspace(st, cv))
    e = _edges(net)
    assert e.loc["U", "orient_method"] == "outlet_path"
    assert (e.loc["U", "from_node"], e.loc["U", "to_node"]) == ("M", "HW")
    assert e.loc["B", "orient_method"] == "flow_dir_bi" and e.loc["B", "bidirectional"]
    assert e.loc["R", "orient_method"] == "flow_dir" and e.loc["R", "from_node"] == "Y"
    assert e.loc["U2", "orient_method"] == "outlet_path"
    assert e.loc["U2", "to_node"] == "Y"
    assert net.settings["uni_disagrees_outlet_path"] == 2
    assert any("disagrees with the outlet_path rule on 2" in n for n in net.qa.notes)
    t = assign_outfalls(net).set_index("struct_id")
    assert t.loc["CB", "outfall_id"] == "HW"


def test_dem_ground_comes_before_the_outlet_rule():
    # the ground falls from x=0 (10 m) to x=300 (7 m); the headwall sits uphill at x=0.
    # G1 (drawn 0 -> 100) is oriented downhill by the DEM, away from the headwall
    st = [("HW", "headwall", 5, 5), ("M", "manhole", 105, 5), ("CB", "catch_basin", 205, 5)]
    cv = [
        {"conv_id": "G1", "coords": [(5, 5), (105, 5)]},
        {"conv_id": "G2", "coords": [(205, 5), (105, 5)]},
    ]
    base = network_workspace(st, cv)
    dem = Dem(np.array([[10.0, 9.0, 8.0, 7.0]]), Affine(100, 0, -45, 0, -10, 10), UTM)
    ws = Workspace(path=None, crs=UTM, layers=base.layers, dem=dem, source_crs=UTM)
    e = _edges(build_network(ws))
    assert e.loc["G1", "orient_method"] == "dem_ground"
    assert (e.loc["G1", "from_node"], e.loc["G1", "to_node"]) == ("HW", "M")
    assert e.loc["G2", "orient_method"] == "dem_ground"
    assert (e.loc["G2", "from_node"], e.loc["G2", "to_node"]) == ("M", "CB")
    # without the DEM the outlet rule turns both towards the headwall
    e0 = _edges(build_network(base))
    assert set(e0["orient_method"]) == {"outlet_path"}
    assert e0.loc["G1", "to_node"] == "HW" and e0.loc["G2", "to_node"] == "M"


# ------------------------------------------------------------------------------------
# bad input: clear QA, never a crash
# ------------------------------------------------------------------------------------
def test_lines_with_no_ends_near_anything():
    st = [("CB", "catch_basin", 0, 0)]
    cv = [{"conv_id": "LONE", "coords": [(1000, 1000), (1100, 1000)]}]
    net = build_network(network_workspace(st, cv, waterbodies=far_water()))
    codes = net.qa.codes()
    assert codes["dangling_conveyance"] == 1 and codes["orphan_structure"] == 1
    t = assign_outfalls(net).set_index("struct_id")
    assert t.loc["CB", "method"] == "unconnected"
    assert _edges(net).loc["LONE", "orient_method"] == "digitized"


def test_one_big_cycle_has_no_outlet_and_says_so():
    ring = [(0, 0), (100, 0), (100, 100), (0, 100)]
    st = [(f"M{i}", "manhole", x, y) for i, (x, y) in enumerate(ring)]
    st.append(("CB", "catch_basin", 50, 150))
    cv = [{"conv_id": f"R{i}", "coords": [ring[i], ring[(i + 1) % 4]]} for i in range(4)]
    cv.append({"conv_id": "IN", "coords": [(50, 150), (0, 100)]})
    net = build_network(network_workspace(st, cv))
    assert set(_edges(net)["orient_method"]) == {"digitized"}  # no outlet to orient by
    assert net.qa.codes()["cycle"] == 1
    assert len(net.outfalls) == 0
    t = assign_outfalls(net).set_index("struct_id")
    assert set(t["method"]) == {"cycle"}
    assert t["outfall_id"].isna().all()


def test_component_without_a_real_outlet_beside_one_with():
    # the water layer is far away: the second system's terminal is not an outfall
    st = TREE_ST + [("Z1", "manhole", 1000, 0), ("Z2", "catch_basin", 1100, 0)]
    cv = TREE_CV + [{"conv_id": "Z", "coords": [(1100, 0), (1000, 0)]}]
    net = build_network(network_workspace(st, cv, waterbodies=far_water()))
    e = _edges(net)
    assert e.loc["Z", "orient_method"] == "digitized"
    assert net.qa.codes()["no_outfall_subnetwork"] == 1
    t = assign_outfalls(net).set_index("struct_id")
    assert t.loc["Z2", "method"] == "terminal_not_at_water"
    assert pd.isna(t.loc["Z2", "outfall_id"])
    assert t.loc["CB3", "outfall_id"] == "HW"


def test_field_check_points_name_the_guesses_and_every_unassigned_structure(tmp_path):
    from ms4map.network import field_check_points

    # the two-headwall network with its stub, plus a basin no line comes near, and a
    # second workspace with a trapped loop
    st = [
        ("HW1", "headwall", 0, 0),
        ("CB1", "catch_basin", 100, 0),
        ("CB3", "catch_basin", 500, 0),
        ("FAR", "catch_basin", 5000, 5000),
    ]
    cv = [
        {"conv_id": "A", "coords": [(0, 0), (100, 0)]},
        {"conv_id": "STUB", "coords": [(500, 0), (560, 0)]},
    ]
    net = build_network(network_workspace(st, cv))
    pts = field_check_points(net).set_index("id")
    assert pts.loc["end:STUB", "what"] == "loose_end"
    assert pts.loc["end:STUB", "structures"] == 1  # CB3
    assert pts.loc["FAR", "what"] == "unassigned"
    assert pts.loc["FAR", "cause"] == "no conveyance within the lateral tolerance"
    assert "HW1" not in pts.index and "CB1" not in pts.index
    assert pts.geometry.notna().all()
    # a loop: the cause is 'cycle'
    ring = [(0, 0), (100, 0), (100, 100)]
    st2 = [(f"M{i}", "manhole", x, y) for i, (x, y) in enumerate(ring)]
    cv2 = [{"conv_id": f"R{i}", "coords": [ring[i], ring[(i + 1) % 3]]} for i in range(3)]
    p2 = field_check_points(build_network(network_workspace(st2, cv2)))
    assert set(p2["cause"]) == {"cycle"} and len(p2) == 3


def test_cli_writes_the_field_check_layer(tmp_path):
    import geopandas as gpd

    from ms4map.cli import main

    gpkg = tmp_path / "town.gpkg"
    ws = network_workspace(TREE_ST + [("FAR", "catch_basin", 5000, 5000)], TREE_CV)
    ws.layers["structures"].to_file(gpkg, layer="structures", driver="GPKG")
    ws.layers["conveyances"].to_file(gpkg, layer="conveyances", driver="GPKG")
    out, fc = tmp_path / "t.csv", tmp_path / "check.gpkg"
    args = ["trace", str(gpkg), "--all", "--out", str(out), "--field-check", str(fc)]
    assert main(args) == 0
    layer = gpd.read_file(fc, layer="field_check")
    assert layer["id"].tolist() == ["FAR"]
    assert main(["trace", str(gpkg), "--all", "--out", str(out), "--field-check", str(gpkg)]) == 4
