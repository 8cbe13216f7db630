"""Network answers on small networks worked by hand (a network audit; EPSG:26918,
metres, default tolerances: snap 1.524 m, water 10 m).

1. Coincident structures: manhole M listed before outfall O at the same point (100, 0),
   pipe P1 A(0,0) -> (100,0), inverts 10 -> 9.  A drains to outfall O whatever the row
   order (M's row first lost the outfall: A went to M, `terminal_at_structure`).
2. A lateral ending at a manhole on an unsplit trunk: trunk T M1(0,0) -> O(200,0),
   inverts 10 -> 8, drawn straight through manhole M2 (100,0); lateral L A(100,80) ->
   M2, inverts 11 -> 10.  A -> M2 -> T's second half -> O: 2 conveyances, 180 m (it
   dead-ended at M2).
3. An end beside a line near its start: lateral A(1,80) -> (1.0, 1.4), 1.4 m from T
   (within the snap tolerance) but 1.72 m from T's first vertex; far water.  A -> T ->
   O (it was left loose, "touches no structure or other conveyance").
4. A flow split where the lower branch is cut by a side pipe: in A(0,0) -> S(100,0)
   (10 -> 9), B1 S -> O1(200,50) (9 -> 8), B2 S -> O2(300,0) (9 -> 5), and a side
   pipe C(200,-80) -> (200,0) on B2's middle.  B2's first part ends at invert
   9 + (5 - 9) x 100/200 = 7 < 8: the main branch is still B2, to O2 (it flipped to
   O1: the part had no invert).
5. Upstream of a conveyance: T-junction, T M1(0,0) -> O(200,0), L A(100,80) ->
   (100,0.5).  Upstream of T: M1 and A, conveyances T and L (A was missing).
"""

from __future__ import annotations

import pytest
from network_builders import far_water, network_workspace

from ms4map.network import assign_outfalls, build_network, trace_upstream


def _table(st_rows, cv_rows, **kw):
    net = build_network(network_workspace(st_rows, cv_rows, **kw))
    return net, assign_outfalls(net).set_index("struct_id")


@pytest.mark.parametrize("order", ["manhole first", "outfall first"])
@pytest.mark.parametrize("water", [False, True])
def test_an_outfall_at_the_same_point_as_a_manhole_stays_the_outfall(order, water):
    m, o = ("M", "manhole", 100, 0), ("O", "outfall", 100, 0)
    rows = [("A", "catch_basin", 0, 0), *((m, o) if order == "manhole first" else (o, m))]
    kw = {"waterbodies": far_water()} if water else {}
    net, t = _table(
        rows,
        [{"conv_id": "P1", "coords": [(0, 0), (100, 0)], "us_invert": 10, "ds_invert": 9}],
        **kw,
    )
    assert t.loc["A", "outfall_id"] == "O"
    assert t.loc["A", "method"] == "outfall_structure"
    assert "O" in net.outfalls.index


def test_a_lateral_ending_at_a_manhole_on_an_unsplit_trunk_flows_on():
    net, t = _table(
        [("M1", "manhole", 0, 0), ("M2", "manhole", 100, 0), ("O", "outfall", 200, 0),
         ("A", "catch_basin", 100, 80)],
        [{"conv_id": "T", "coords": [(0, 0), (200, 0)], "us_invert": 10, "ds_invert": 8},
         {"conv_id": "L", "coords": [(100, 80), (100, 0)], "us_invert": 11, "ds_invert": 10}],
    )  # fmt: skip
    assert t.loc["A", "outfall_id"] == "O" and t.loc["A", "method"] == "outfall_structure"
    assert "2 conveyance(s), 180 m" in t.loc["A", "reason"]
    assert t.loc["M2", "outfall_id"] == "O"
    parts = net.edges[net.edges["conv_id"] == "T"]
    assert sorted(zip(parts["from_node"], parts["to_node"], strict=True)) == [
        ("M1", "M2"),
        ("M2", "O"),
    ]


def test_a_pipe_drawn_twice_is_not_split_at_its_own_manhole():
    """The same pipe M1 -> M2 drawn twice, once ending at M2 and once running on to O:
    M2 is not a junction of the long line (one pipe), so nothing is split."""
    net, _t = _table(
        [("M1", "manhole", 0, 0), ("M2", "manhole", 100, 0), ("O", "outfall", 200, 0)],
        [{"conv_id": "SHORT", "coords": [(0, 0), (100, 0)], "us_invert": 10, "ds_invert": 9},
         {"conv_id": "LONG", "coords": [(0, 0), (200, 0)], "us_invert": 10, "ds_invert": 8}],
    )  # fmt: skip
    assert (net.edges["conv_id"] == "LONG").sum() == 1


def test_an_end_beside_a_line_near_its_start_joins_it():
    _net, t = _table(
        [("M1", "manhole", 0, 0), ("O", "outfall", 200, 0), ("A", "catch_basin", 1, 80)],
        [{"conv_id": "T", "coords": [(0, 0), (200, 0)], "us_invert": 10, "ds_invert": 8},
         {"conv_id": "L", "coords": [(1, 80), (1.0, 1.4)], "us_invert": 11, "ds_invert": 10.5}],
        waterbodies=far_water(),
    )  # fmt: skip
    assert t.loc["A", "outfall_id"] == "O" and t.loc["A", "method"] == "outfall_structure"


def test_a_split_branch_cut_by_a_side_pipe_keeps_its_interpolated_invert():
    net, t = _table(
        [("A", "catch_basin", 0, 0), ("S", "manhole", 100, 0), ("O1", "outfall", 200, 50),
         ("O2", "outfall", 300, 0), ("C", "catch_basin", 200, -80)],
        [{"conv_id": "in", "coords": [(0, 0), (100, 0)], "us_invert": 10, "ds_invert": 9},
         {"conv_id": "B1", "coords": [(100, 0), (200, 50)], "us_invert": 9, "ds_invert": 8},
         {"conv_id": "B2", "coords": [(100, 0), (300, 0)], "us_invert": 9, "ds_invert": 5},
         {"conv_id": "L", "coords": [(200, -80), (200, 0)], "us_invert": 12, "ds_invert": 11}],
    )  # fmt: skip
    assert t.loc["A", "method"] == "split"
    assert t.loc["A", "outfall_id"] == "O2" and t.loc["A", "other_outfalls"] == "O1"
    first = net.edges[(net.edges["conv_id"] == "B2") & (net.edges["part"] == 0)].iloc[0]
    assert first["ds_invert"] == pytest.approx(7.0)


def test_upstream_of_a_conveyance_includes_what_joins_it_partway():
    net, _t = _table(
        [("M1", "manhole", 0, 0), ("O", "outfall", 200, 0), ("A", "catch_basin", 100, 80)],
        [{"conv_id": "T", "coords": [(0, 0), (200, 0)], "us_invert": 10, "ds_invert": 8},
         {"conv_id": "L", "coords": [(100, 80), (100, 0.5)], "us_invert": 11, "ds_invert": 10}],
    )  # fmt: skip
    up = trace_upstream(net, "T")
    assert {"M1", "A"} <= set(up.nodes.index)
    assert set(up.edges["conv_id"]) == {"T", "L"}


def test_conveyances_and_metres_through_a_run_of_two_way_links():
    """A(0,0) - B(100,0) - C(200,0) two-way (flow_dir bi), then C -> O(300,0) by its
    inverts: A is 3 conveyances and 300 m from O, B 2 and 200 m, C 1 and 100 m; the
    trace from C shows CO only (it showed AB and BC too, upstream)."""
    from ms4map.network import trace_downstream

    net, t = _table(
        [("A", "catch_basin", 0, 0), ("B", "manhole", 100, 0), ("C", "manhole", 200, 0),
         ("O", "outfall", 300, 0)],
        [{"conv_id": "AB", "coords": [(0, 0), (100, 0)], "flow_dir": "bi"},
         {"conv_id": "BC", "coords": [(100, 0), (200, 0)], "flow_dir": "bi"},
         {"conv_id": "CO", "coords": [(200, 0), (300, 0)], "us_invert": 5, "ds_invert": 4}],
    )  # fmt: skip
    for sid, n, metres in (("A", 3, 300), ("B", 2, 200), ("C", 1, 100)):
        assert f"{n} conveyance(s), {metres} m" in t.loc[sid, "reason"], sid
        tr = trace_downstream(net, sid)
        assert f"{n} conveyance(s), {metres} m" in tr.reason, sid
        assert len(tr.edges) == n
    assert list(trace_downstream(net, "C").edges["conv_id"]) == ["CO"]


def test_conveyances_and_metres_round_a_loop():
    """A ring A(0,0) -> B(100,0) -> C(50,80) -> A by inverts (10, 9, 8, 7), its way out
    C -> O(50,200), and I(-50,0) -> A.  I: IA 50 + AB 100 + BC 94.3 + CO 120 = 364 m,
    4 conveyances (it said 2 and 170 m); its trace leaves out CA (round the loop)."""
    from ms4map.network import trace_downstream

    net, t = _table(
        [("A", "manhole", 0, 0), ("B", "manhole", 100, 0), ("C", "manhole", 50, 80),
         ("O", "outfall", 50, 200), ("I", "catch_basin", -50, 0)],
        [{"conv_id": "AB", "coords": [(0, 0), (100, 0)], "us_invert": 10, "ds_invert": 9},
         {"conv_id": "BC", "coords": [(100, 0), (50, 80)], "us_invert": 9, "ds_invert": 8},
         {"conv_id": "CA", "coords": [(50, 80), (0, 0)], "us_invert": 8, "ds_invert": 7},
         {"conv_id": "CO", "coords": [(50, 80), (50, 200)], "us_invert": 8, "ds_invert": 6},
         {"conv_id": "IA", "coords": [(-50, 0), (0, 0)], "us_invert": 11, "ds_invert": 10}],
    )  # fmt: skip
    assert "4 conveyance(s), 364 m" in t.loc["I", "reason"]
    assert "3 conveyance(s), 314 m" in t.loc["A", "reason"]
    tr = trace_downstream(net, "I")
    assert list(tr.edges["conv_id"]) == ["IA", "AB", "BC", "CO"]
    assert "4 conveyance(s), 364 m" in tr.reason
