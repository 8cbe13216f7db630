"""Flow splits where the preferred (largest) branch dead-ends: the outfall is still found."""

from __future__ import annotations

import pandas as pd
from network_builders import JUNCTION_ID, far_water, network_workspace

from ms4map.io.workspace import Workspace
from ms4map.network import assign_outfalls, build_network, edge_outfalls, trace_downstream


def _ws(st_rows, cv_rows) -> Workspace:
    # a waterbody far away: terminal nodes are not outfalls. Every pipe's inverts fall
    # as it is drawn, so the direction is known (without them the outlet_path rule
    # would turn the dead branches towards the outfalls; this file is about splits)
    rows = [{"us_invert": 10.0, "ds_invert": 9.0, **r} for r in cv_rows]
    return network_workspace(st_rows, rows, waterbodies=far_water())


def _dead_branch_at_t(**big) -> Workspace:
    """At S flow splits: BIG (30 in, preferred) runs to manhole T, away from water;
    SMALL (12 in) reaches outfall O.  ``big``: more attributes of BIG."""
    return _ws(
        [
            ("A", "inlet", 0, 0),
            ("S", "manhole", 100, 0),
            ("T", "manhole", 200, 50),
            ("O", "outfall", 200, -50),
        ],
        [
            {"conv_id": "in", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "BIG", "coords": [(100, 0), (200, 50)], "diameter_in": 30, **big},
            {"conv_id": "SMALL", "coords": [(100, 0), (200, -50)], "diameter_in": 12},
        ],
    )


def test_preferred_branch_dead_ends_at_a_structure():
    # the ids (never overruled) keep BIG running to T: a dead branch
    ws = _dead_branch_at_t(from_id="S", to_id="T")
    net = build_network(ws)
    t = assign_outfalls(net).set_index("struct_id")
    for sid, n_conv in (("A", 2), ("S", 1)):
        assert t.loc[sid, "outfall_id"] == "O"
        assert t.loc[sid, "method"] == "outfall_structure"
        assert t.loc[sid, "other_outfalls"] == ""
        reason = t.loc[sid, "reason"]
        assert reason.startswith(f"{n_conv} conveyance(s)")
        assert "downstream to outfall O" in reason
        assert "a branch dead-ends at T" in reason
    # T itself reaches nothing
    assert t.loc["T", "method"] == "terminal_not_at_water"
    assert pd.isna(t.loc["T", "outfall_id"])
    # the trace agrees with the table
    tr = trace_downstream(net, "A")
    assert tr.outfall_ids == ["O"]
    assert tr.method == "outfall_structure"
    assert "a branch dead-ends at T" in tr.reason
    assert tr.reason == t.loc["A", "reason"]
    # from the pipe: the same main path (the dead branch shown by the trace is not counted)
    assert trace_downstream(net, "in").reason == t.loc["A", "reason"]
    # per conveyance: 'in' drains to O too
    eo = edge_outfalls(net).set_index("conv_id")
    assert eo.loc["in", "outfall_id"] == "O"


def test_preferred_branch_dead_ends_at_a_loose_end_among_two_outfalls():
    # three branches at S: BIG (36 in) ends loose (no structure); MID (24 in) reaches
    # O2, SMALL (12 in) reaches O1. The main outfall is O2 (largest pipe that reaches
    # one), O1 is listed too, and the reason names the loose end by place.
    ws = _ws(
        [
            ("A", "inlet", 0, 0),
            ("S", "manhole", 100, 0),
            ("O1", "outfall", 200, -50),
            ("O2", "outfall", 200, 50),
        ],
        [
            {"conv_id": "in", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "SMALL", "coords": [(100, 0), (200, -50)], "diameter_in": 12},
            {"conv_id": "BIG", "coords": [(100, 0), (220, 0)], "diameter_in": 36},
            {"conv_id": "MID", "coords": [(100, 0), (200, 50)], "diameter_in": 24},
        ],
    )
    net = build_network(ws)
    t = assign_outfalls(net).set_index("struct_id")
    row = t.loc["A"]
    assert row["method"] == "split"
    assert row["outfall_id"] == "O2"
    assert row["other_outfalls"] == "O1"
    assert "the largest pipe" in row["reason"]
    assert "a branch dead-ends at the downstream end of BIG at (220.0, 0.0)" in row["reason"]
    assert not JUNCTION_ID.search(row["reason"])
    tr = trace_downstream(net, "A")
    assert tr.outfall_ids == ["O2", "O1"]
    assert tr.reason == row["reason"]


def test_only_branch_that_reaches_an_outfall_is_named_as_the_rule():
    # the dead branch is preferred by size; the other two branches reach outfalls
    # further down through a second split, so the first split's rule is "the only
    # branch that reaches an outfall"
    ws = _ws(
        [
            ("A", "inlet", 0, 0),
            ("S", "manhole", 100, 0),
            ("T", "manhole", 200, 80),
            ("M", "manhole", 200, 0),
            ("O1", "outfall", 300, 50),
            ("O2", "outfall", 300, -50),
        ],
        [
            {"conv_id": "in", "coords": [(0, 0), (100, 0)]},
            {"conv_id": "DEAD", "coords": [(100, 0), (200, 80)], "diameter_in": 48}
            | {"from_id": "S", "to_id": "T"},
            {"conv_id": "LIVE", "coords": [(100, 0), (200, 0)], "diameter_in": 12},
            {"conv_id": "b1", "coords": [(200, 0), (300, 50)], "diameter_in": 12},
            {"conv_id": "b2", "coords": [(200, 0), (300, -50)], "diameter_in": 24},
        ],
    )
    t = assign_outfalls(build_network(ws)).set_index("struct_id")
    row = t.loc["A"]
    assert row["method"] == "split" and row["outfall_id"] == "O2"
    assert row["other_outfalls"] == "O1"
    assert "the only branch that reaches an outfall" in row["reason"]
    assert "the largest pipe" in row["reason"]  # the rule at M
    assert "a branch dead-ends at T" in row["reason"]
    # M is below the dead branch's split: no dead end to report
    assert "dead-ends" not in t.loc["M", "reason"]


def test_no_branch_reaches_an_outfall_names_the_other_dead_end():
    ws = _ws(
        [
            ("A", "inlet", 0, 0),
            ("S", "manhole", 100, 0),
            ("T1", "manhole", 200, 50),
            ("T2", "manhole", 200, -50),
        ],
        [
            {"conv_id": "in", "coords": [(0, 0), (100, 0)]},
            # the ids (never overruled) keep BIG running to T
            {"conv_id": "BIG", "coords": [(100, 0), (200, 50)], "diameter_in": 30}
            | {"from_id": "S", "to_id": "T"},
            {"conv_id": "SMALL", "coords": [(100, 0), (200, -50)], "diameter_in": 12},
        ],
    )
    t = assign_outfalls(build_network(ws)).set_index("struct_id")
    assert t.loc["A", "method"] == "terminal_not_at_water"
    assert pd.isna(t.loc["A", "outfall_id"])
    reason = t.loc["A", "reason"]
    assert reason.startswith("flow ends at T1")
    assert "a branch dead-ends at T2" in reason


def test_a_dead_end_made_by_inverts_alone_is_overruled():
    # the same split with BIG's direction from its inverts only: T could reach no outfall,
    # so the whole-network rule runs BIG from T to S against its inverts (adverse_slope)
    ws = _dead_branch_at_t()
    net = build_network(ws)
    t = assign_outfalls(net).set_index("struct_id")
    assert (t.loc[["A", "S", "T"], "outfall_id"] == "O").all()
    e = net.edges.set_index("conv_id")
    assert (e.loc["BIG", "from_node"], e.loc["BIG", "to_node"]) == ("T", "S")
    assert e.loc["BIG", "orient_overruled"] == "inverts"
    assert [f.feature_id for f in net.qa.by_code("adverse_slope")] == ["BIG"]
