"""Traces in flow order, reasons that name what a user can look up, split rules."""

from __future__ import annotations

import pytest
from network_builders import JUNCTION_ID
from network_builders import far_water as _far_water
from network_builders import network_workspace as _ws

from ms4map.network import (
    assign_outfalls,
    build_network,
    describe_nodes,
    trace_downstream,
)


def test_trace_from_a_pipe_is_in_flow_order_and_counts_agree():
    # ids and rows deliberately out of flow order: the outfall first, the inlet last
    ws = _ws(
        [("A-OUT", "outfall", 200, 0), ("M", "manhole", 100, 0), ("Z", "catch_basin", 0, 0)],
        [
            {"conv_id": "P-2", "coords": [(100, 0), (200, 0)]},
            {"conv_id": "P-9", "coords": [(0, 0), (100, 0)]},
        ],
    )
    net = build_network(ws)
    t = trace_downstream(net, "P-9")
    assert list(t.edges["conv_id"]) == ["P-9", "P-2"]
    assert list(t.nodes.index) == ["Z", "M", "A-OUT"]
    assert t.reason.startswith("2 conveyance(s), 200 m downstream to outfall A-OUT")
    assert t.length_m == pytest.approx(200)
    # from a structure: the same path and the same words as the all-structure table
    t2 = trace_downstream(net, "Z")
    assert list(t2.nodes.index) == ["Z", "M", "A-OUT"]
    table = assign_outfalls(net).set_index("struct_id")
    assert t2.reason == table.loc["Z", "reason"] == t.reason


def test_split_conveyance_counts_once_and_its_parts_come_in_flow_order():
    # MAIN is drawn outfall -> upstream and flows the other way (flow_dir reverse); a
    # lateral ends on its middle, so MAIN is split in two parts
    ws = _ws(
        [("O", "outfall", 200, 0), ("U", "manhole", 0, 0), ("CB", "catch_basin", 50, 80)],
        [
            {"conv_id": "MAIN", "coords": [(200, 0), (0, 0)], "flow_dir": "reverse"},
            {"conv_id": "LAT", "coords": [(50, 80), (50, 0.5)]},
        ],
    )
    net = build_network(ws)
    t = trace_downstream(net, "MAIN")
    assert list(t.edges["conv_id"]) == ["MAIN", "MAIN"]
    assert list(t.edges["from_node"])[0] == "U" and list(t.edges["to_node"])[-1] == "O"
    assert list(t.nodes.index)[0] == "U" and list(t.nodes.index)[-1] == "O"
    assert t.reason.startswith("1 conveyance(s), 200 m")
    table = assign_outfalls(net).set_index("struct_id")
    assert table.loc["CB", "reason"].startswith("2 conveyance(s), 230 m")  # LAT + rest of MAIN
    assert table.loc["U", "reason"].startswith("1 conveyance(s), 200 m")


def test_cli_from_a_pipe_prints_the_path_in_flow_order(tmp_path, capsys):
    from ms4map.cli import main

    ws = _ws(
        [("A-OUT", "outfall", 200, 0), ("M", "manhole", 100, 0), ("Z", "catch_basin", 0, 0)],
        [
            {"conv_id": "P-2", "coords": [(100, 0), (200, 0)]},
            {"conv_id": "P-9", "coords": [(0, 0), (100, 0)]},
        ],
    )
    gpkg = tmp_path / "t.gpkg"
    for name, layer in ws.layers.items():
        layer.to_file(gpkg, layer=name, driver="GPKG")
    assert main(["trace", str(gpkg), "--from", "P-9"]) == 0
    out = capsys.readouterr().out
    assert out.index("via P-9") < out.index("via P-2")
    assert "2 conveyance(s), 200 m downstream" in out
    assert "2 conveyance(s), 200 m, in flow order" in out


def test_ids_keep_a_pipe_whose_inverts_rise():
    # T drains to MH by its ids, but the pipe's inverts say MH -> T: the ids win
    # (issue 27), so nothing dead-ends at T; PX is reported adverse_slope
    ws = _ws(
        [
            ("CB1", "catch_basin", 0, 0),
            ("T", "catch_basin", 100, 0),
            ("MH", "manhole", 200, 0),
            ("OF", "outfall", 300, 0),
        ],
        [
            {"conv_id": "P1", "coords": [(0, 0), (100, 0)], "from_id": "CB1", "to_id": "T"},
            {
                "conv_id": "PX",
                "coords": [(100, 0), (200, 0)],
                "from_id": "T",
                "to_id": "MH",
                "us_invert": 5.0,
                "ds_invert": 6.0,
            },
            {"conv_id": "P3", "coords": [(200, 0), (300, 0)], "from_id": "MH", "to_id": "OF"},
        ],
        waterbodies=_far_water(),
    )
    net = build_network(ws)
    t = assign_outfalls(net).set_index("struct_id")
    assert (t.loc[["CB1", "T", "MH"], "outfall_id"] == "OF").all()
    assert [f.feature_id for f in net.qa.by_code("adverse_slope")] == ["PX"]


def test_junctions_are_described_by_place_and_conveyance_never_by_internal_id(capsys):
    # Q's downstream end touches nothing: flow from I ends at a junction node
    ws = _ws(
        [("I", "inlet", 0, 0), ("OF", "outfall", 0, 500)],
        [
            {"conv_id": "Q", "coords": [(0, 0), (120, 40)]},
            {"conv_id": "R", "coords": [(0, 400), (0, 500)]},
        ],
        waterbodies=_far_water(),
    )
    net = build_network(ws)
    t = assign_outfalls(net).set_index("struct_id")
    reason = t.loc["I", "reason"]
    assert "the downstream end of Q at (120.0, 40.0)" in reason
    assert "unsnapped_end" in reason
    assert not JUNCTION_ID.search(reason)
    jn = [n for n in net.nodes.index if n.startswith("J")]
    assert describe_nodes(net, jn)[jn[0]] in {
        "the downstream end of Q at (120.0, 40.0)",
        "the upstream end of R at (0.0, 400.0)",
    }
    # without a water layer the end is an outfall; the QA finding does not name 'J1'
    net2 = build_network(
        _ws([("I", "inlet", 0, 0)], [{"conv_id": "Q", "coords": [(0, 0), (120, 40)]}])
    )
    msgs = [f.message for f in net2.qa.findings]
    assert msgs and not any(JUNCTION_ID.search(m) for m in msgs)
    t2 = trace_downstream(net2, "I")
    assert t2.outfall_ids == ["end:Q"]
    assert "outfall end:Q" in t2.reason
    assert "the downstream end of Q at (120.0, 40.0)" in t2.reason


def test_cli_trace_prints_no_internal_junction_ids(tmp_path, capsys):
    from ms4map.cli import main

    ws = _ws([("I", "inlet", 0, 0)], [{"conv_id": "Q", "coords": [(0, 0), (120, 40)]}])
    gpkg = tmp_path / "t.gpkg"
    for name, layer in ws.layers.items():
        layer.to_file(gpkg, layer=name, driver="GPKG")
    assert main(["trace", str(gpkg), "--from", "I"]) == 0
    out = capsys.readouterr().out
    assert "I -> the downstream end of Q at (120.0, 40.0)" in out
    assert not JUNCTION_ID.search(out)


@pytest.mark.parametrize(
    ("small", "big", "rule", "main"),
    [
        ({"diameter_in": 12}, {"diameter_in": 30}, "the largest pipe", "O2"),
        (
            {"ds_invert": 1.0, "us_invert": 9.0},
            {"ds_invert": 2.0, "us_invert": 9.0},
            "the lowest downstream invert",
            "O1",
        ),
        ({}, {"diameter_in": 18}, "the only branch with a pipe size", "O2"),
    ],
)
def test_split_reason_names_the_rule_that_chose_the_main_outfall(small, big, rule, main):
    # (two branches told apart by nothing but the input order: ambiguous, see
    # test_network_orient_evidence.py)
    ws = _ws(
        [
            ("A", "inlet", 0, 0),
            ("S", "manhole", 100, 0),
            ("O1", "outfall", 200, 50),
            ("O2", "outfall", 200, -50),
        ],
        [
            {"conv_id": "in", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "b1", "coords": [(100, 0), (200, 50)], **small},
            {"conv_id": "b2", "coords": [(100, 0), (200, -50)], **big},
        ],
    )
    t = assign_outfalls(build_network(ws)).set_index("struct_id")
    assert t.loc["A", "method"] == "split" and t.loc["A", "outfall_id"] == main
    assert rule in t.loc["A", "reason"]
    if rule != "the largest pipe":
        assert "largest pipe" not in t.loc["A", "reason"]
