"""Each build step of ms4map.network (run_build) on its own, on tiny designed inputs.

The steps are plain functions over plain tables (docs/network.md, "Building the
graph"); every test feeds one step the tables of the steps before it and checks
the table it returns against a hand-worked answer.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
from network_builders import UTM, network_workspace
from shapely.geometry import LineString, MultiLineString, Point

from ms4map.core.qa import QAReport
from ms4map.network.build import network_frames, run_build
from ms4map.network.edges import assemble_edges
from ms4map.network.orient import orient_lines
from ms4map.network.qa import graph_qa, sink_pools_and_graph_qa
from ms4map.network.read import read_conveyances, read_structures, water_tree
from ms4map.network.snap import assumed_laterals, snap_ends, split_lines
from ms4map.network.tables import BuildConfig
from ms4map.network.termini import find_outfalls, rank_terminals

CFG = BuildConfig.of(UTM, 1.524, 10.0, 15.0, 15.0)


def _steps(ws, upto: str):
    qa = QAReport()
    st = read_structures(ws, CFG, qa)
    cv = read_conveyances(ws, CFG, qa)
    ends = snap_ends(st, cv, CFG, qa)
    sp = split_lines(st, cv, ends, CFG)
    if upto == "split":
        return qa, st, cv, ends, sp
    sp = assumed_laterals(st, cv, ends, sp, CFG)
    ori = orient_lines(ws, st, cv, ends, sp, cfg=CFG, qa=qa, wtree=water_tree(ws))
    ed = assemble_edges(st, cv, ends, sp, ori, cfg=CFG, qa=qa)
    return qa, st, cv, ends, sp, ori, ed


def test_config_in_crs_units():
    feet = BuildConfig.of("EPSG:2284", 1.524, 10.0, 15.0, 15.0)
    assert abs(feet.snap_tol - 5.0) < 1e-3 and feet.elev_threshold == 0.01
    assert CFG.snap_tol == 1.524 and CFG.elev_threshold == 0.003 and CFG.id_tol == 15.0


def test_read_structures_duplicate_ids_and_coincident_points():
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("A", "inlet", 50, 0), ("B", "manhole", 0.001, 0)],
        [{"conv_id": "P", "coords": [(0, 0), (50, 0)]}],
    )
    qa = QAReport()
    st = read_structures(ws, CFG, qa)
    assert st.ids.tolist() == ["A", "A~2", "B"]
    assert st.primary.tolist() == [0, 1, 0]  # B lies within 1 cm of A: one node
    assert st.is_primary.tolist() == [True, True, False]
    assert st.id_index == {"A": 0, "B": 0}
    assert qa.codes() == {"duplicate_feature": 2}


def test_read_conveyances_parts_and_bad_lines():
    ws = network_workspace(
        [("A", "manhole", 0, 0)], [{"conv_id": "OK", "coords": [(0, 0), (9, 0)]}]
    )
    cv = ws.layers["conveyances"]
    extra = gpd.GeoDataFrame(
        {"conv_id": ["M", "Z"], "kind": ["pipe", "pipe"]},
        geometry=[
            MultiLineString([[(0, 0), (5, 0)], [(20, 0), (30, 0)]]),  # two parts that do not join
            LineString([(1, 1), (1, 1)]),  # zero length
        ],
        crs=UTM,
    )
    ws.layers["conveyances"] = gpd.GeoDataFrame(
        np.concatenate([cv.to_dict("records"), extra.to_dict("records")]).tolist(), crs=UTM
    )
    qa = QAReport()
    t = read_conveyances(ws, CFG, qa)
    assert t.ids.tolist() == ["OK", "M.1", "M.2"]
    assert t.source_row.tolist() == [0, 1, 1]
    assert np.allclose(t.length, [9, 5, 10])
    assert np.allclose(t.start_xy[2], [20, 0]) and np.allclose(t.end_xy[2], [30, 0])
    assert qa.codes() == {"multipart_line": 1, "zero_length_conveyance": 1}


def test_snap_ends_ids_structures_and_junctions():
    # P1: ids name B then A, drawn A -> B: the ids pair with the far ends (reversed);
    # P2 ends 1 m from B (snapped); P3 and P4 meet away from any structure (a junction)
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("B", "manhole", 100, 0)],
        [
            {"conv_id": "P1", "from_id": "B", "to_id": "A", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "P2", "coords": [(101, 0), (200, 0)]},
            {"conv_id": "P3", "coords": [(200, 50), (300, 50)]},
            {"conv_id": "P4", "coords": [(300.5, 50), (400, 50)]},
        ],
    )
    qa = QAReport()
    st = read_structures(ws, CFG, qa)
    cv = read_conveyances(ws, CFG, qa)
    ends = snap_ends(st, cv, CFG, qa)
    L = cv.count
    assert ends.ids_known[0] and ends.ids_reversed[0]
    assert ends.snapped_by[0] == "id" and ends.snapped_by[L] == "id"
    assert ends.node[1] == 1 and ends.snapped_by[1] == "structure"  # P2 start -> B
    assert ends.node[L + 2] == ends.node[3] >= ends.n_structures  # P3 end = P4 start: junction
    assert ends.snapped_by[3] == "junction"
    assert len(ends.junction_xy) == 4  # P2 end, P3 start, the P3/P4 junction, P4 end


def test_split_lines_where_a_dangling_end_lies_on_a_middle():
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("B", "manhole", 100, 0)],
        [
            {"conv_id": "MAIN", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "TEE", "coords": [(40, 60), (40, 0.5)]},
        ],
    )
    qa, st, cv, ends, sp = _steps(ws, "split")
    ((line, cuts),) = sp.splits.items()
    assert line == 0 and len(cuts) == 1
    t, node = cuts[0]
    assert abs(t - 40) < 1e-6 and sp.split_kind[node] == "dangling"
    assert node == ends.node[cv.count + 1]  # TEE's end node


def test_assumed_laterals_to_the_nearest_line():
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("B", "manhole", 100, 0), ("CB", "catch_basin", 30, 10)],
        [{"conv_id": "MAIN", "coords": [(0, 0), (100, 0)]}],
    )
    qa, st, cv, ends, sp = _steps(ws, "split")
    sp2 = assumed_laterals(st, cv, ends, sp, CFG)
    assert sp.lateral_edges == [] and sp.splits == {}  # the step returns a new table
    ((node, target, d, line),) = sp2.lateral_edges
    assert (node, line, round(d, 6)) == (2, 0, 10.0)
    assert sp2.split_kind[target] == "lateral"
    assert np.allclose(sp2.junction_xy[target - ends.n_structures], [30, 0])


def test_orient_lines_rule_chain_and_conflict():
    # P1: inverts fall against the ids -> the ids win, adverse_slope (issue 27);
    # P2: nothing but the geometry and the outfall O -> outlet_path
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("B", "manhole", 100, 0), ("O", "outfall", 200, 0)],
        [
            {
                "conv_id": "P1",
                "from_id": "A",
                "to_id": "B",
                "us_invert": 5.0,
                "ds_invert": 6.0,
                "coords": [(0, 0), (100, 0)],
            },
            {"conv_id": "P2", "coords": [(200, 0), (100, 0)]},
        ],
    )
    qa, st, cv, ends, sp, ori, ed = _steps(ws, "all")
    assert ori.method.tolist() == ["ids", "outlet_path"]
    assert ori.direction.tolist() == [1, -1]
    assert ori.overruled.tolist() == ["inverts", ""]
    assert ori.conflicts == {"P1": "ids"}
    assert np.allclose(ori.outlet_distance[:3], [200, 100, 0])  # B-O 100 m; A reaches O via B
    assert qa.codes()["adverse_slope"] == 1 and "orientation_conflict" not in qa.codes()


def test_assemble_edges_split_line_parts_each_towards_the_outfall():
    # MAIN is drawn from the outfall O to A and split 40 m from A where TEE ends on it:
    # part 0 (digitised first: O..split) and part 1 (split..A) both flow towards O
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("O", "outfall", 100, 0)],
        [
            {"conv_id": "MAIN", "coords": [(100, 0), (0, 0)]},
            {"conv_id": "TEE", "coords": [(40, 60), (40, 0.5)]},
        ],
    )
    qa, st, cv, ends, sp, ori, ed = _steps(ws, "all")
    rows = {k: v.tolist() for k, v in ed.rows.items() if k != "geometry"}
    assert rows["conv_id"] == ["MAIN", "MAIN", "TEE"]
    assert rows["part"] == [0, 1, 0]
    names = ed.node_ids
    flow = [(names[u], names[v]) for u, v in zip(ed.from_node, ed.to_node, strict=True)]
    split = flow[0][0]
    assert flow == [(split, "O"), ("A", split), (names[ends.node[1]], split)]
    assert set(rows["orient_method"]) == {"outlet_path"}
    assert np.allclose(ed.rows["geometry"][0].coords[-1], (100, 0))  # stored in flow order


def test_rank_terminals_table():
    kind = np.array(["manhole", "headwall", "junction", "manhole", "headwall"], dtype=object)
    is_st = np.array([True, True, False, True, True])
    at = np.array([False, False, False, True, True])
    assert rank_terminals(kind, is_st, at, terminals_are_outfalls=True).tolist() == [
        "terminal_at_structure",
        "headwall_at_end",
        "terminal_loose_end",
        "terminal_at_water",
        "terminal_at_water",
    ]
    assert rank_terminals(kind, is_st, at, terminals_are_outfalls=False).tolist() == [
        None,
        "headwall_at_end",
        None,
        "terminal_at_water",
        "terminal_at_water",
    ]


def test_find_outfalls_layer_structure_and_terminals():
    outfalls = gpd.GeoDataFrame(
        {"outfall_id": ["OF-1"], "receiving_water": ["Mill Creek"]},
        geometry=[Point(100.3, 0)],
        crs=UTM,
    )
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("B", "manhole", 100, 0), ("C", "manhole", 0, 50)],
        [
            {"conv_id": "P1", "us_invert": 2.0, "ds_invert": 1.0, "coords": [(0, 0), (100, 0)]},
            {"conv_id": "P2", "us_invert": 2.0, "ds_invert": 1.0, "coords": [(0, 50), (100, 50)]},
        ],
        outfalls=outfalls,
    )
    qa, st, cv, ends, sp, ori, ed = _steps(ws, "all")
    of = find_outfalls(ws, st, ends, sp, ed, cfg=CFG, qa=qa)
    found = np.where(of.outfall_id != None)[0]  # noqa: E711
    named = {ed.node_ids[i]: (of.outfall_id[i], of.method[i]) for i in found}
    assert named == {"B": ("OF-1", "outfalls_layer")}
    assert of.layer_attributes[1]["receiving_water"] == "Mill Creek"
    # the outfalls layer is an inventory: P2's loose end is no outfall
    assert not of.terminals_are_outfalls
    assert [ed.node_ids[i] for i in of.not_at_water] == [ed.node_ids[ends.node[cv.count + 1]]]


def test_graph_qa_and_frames_then_sink_pools():
    # a pool of two-way links (A <-> B <-> C) with no way out, no water layer: one
    # terminal, its lowest node (by invert) C, a terminal at a structure
    ws = network_workspace(
        [("A", "manhole", 0, 0), ("B", "manhole", 100, 0), ("C", "manhole", 200, 0)],
        [
            {"conv_id": "L1", "flow_dir": "bi", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "L2", "flow_dir": "bi", "coords": [(100, 0), (200, 0)]},
        ],
    )
    st_df = ws.layers["structures"]
    st_df["invert_elev"] = [3.0, 2.0, 1.0]
    qa, st, cv, ends, sp, ori, ed = _steps(ws, "all")
    of = find_outfalls(ws, st, ends, sp, ed, cfg=CFG, qa=qa)
    graph_qa(st, cv, ends, sp, ori, ed=ed, of=of, cfg=CFG, qa=qa)
    assert "orphan_structure" not in qa.codes()
    net = network_frames(st, ends, sp, ori, ed, of=of, cfg=CFG, qa=qa)
    assert len(net.outfalls) == 0 and net.edges["bidirectional"].all()
    sink_pools_and_graph_qa(net, terminals_are_outfalls=of.terminals_are_outfalls)
    assert net.outfalls["method"].to_dict() == {"C": "terminal_at_structure"}
    # the whole build gives the same
    net2 = run_build(ws, CFG)
    assert net2.outfalls["method"].to_dict() == {"C": "terminal_at_structure"}
