"""Orientation from all the evidence (issue 27): designed networks with hand-worked answers.

Each network is drawn so the answer can be worked by hand; the comment above each test
gives it.  docs/network.md "Orientation" and "The ambiguous answer" describe the rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from affine import Affine
from network_builders import by_id, network_workspace

from ms4map.io.workspace import Dem
from ms4map.network import (
    ORIENT_METHODS,
    assign_outfalls,
    build_network,
    edge_outfalls,
    trace_downstream,
)
from ms4map.network.orient import TRUST_ORDER


def _line_of_ten(*, swap: int | None = None):
    """MH0 .. MH9 every 50 m east, outfall OF at x=500; pipe Pk from MHk to MHk+1 (P9 to
    OF), inverts falling 0.5 per pipe, no ids; ``swap``: that pipe's inverts swapped."""
    st = [(f"MH{k}", "manhole", 50.0 * k, 0.0) for k in range(10)]
    st.append(("OF", "outfall", 500.0, 0.0))
    names = [f"MH{k}" for k in range(10)] + ["OF"]
    cv = []
    for k in range(10):
        us, ds = 10.0 - 0.5 * k, 9.5 - 0.5 * k
        if k == swap:
            us, ds = ds, us
        cv.append(
            {
                "conv_id": f"P{k}",
                "coords": [(50.0 * k, 0.0), (50.0 * (k + 1), 0.0)],
                "us_invert": us,
                "ds_invert": ds,
                "diameter_in": 12.0,
            }
        )
    return network_workspace(st, cv), names


def test_one_swapped_invert_in_ten_pipes_does_not_break_the_line():
    # By hand: P4's inverts say MH5 -> MH4, so MH0..MH4 would end at MH4 (a sink that is
    # no outfall).  The only way MH0..MH4 reach OF is P4 downhill-as-drawn: overrule P4's
    # inverts (one pipe), nothing else.  Every structure reaches OF; P4 is adverse_slope.
    ws, names = _line_of_ten(swap=4)
    net = build_network(ws)
    t = by_id(assign_outfalls(net))
    assert (t.loc[names[:-1], "outfall_id"] == "OF").all()
    e = net.edges.set_index("conv_id")
    assert e.loc["P4", "from_node"] == "MH4" and e.loc["P4", "to_node"] == "MH5"
    assert e.loc["P4", "orient_method"] == "outlet_path"
    assert e.loc["P4", "orient_overruled"] == "inverts"
    assert (e.drop(index="P4")["orient_method"] == "inverts").all()
    assert (e.drop(index="P4")["orient_overruled"] == "").all()
    (f,) = net.qa.by_code("adverse_slope")
    assert f.feature_id == "P4"
    assert "1.00%" in f.message  # 0.5 over 50 m


def test_without_the_swap_nothing_is_overruled():
    ws, names = _line_of_ten()
    net = build_network(ws)
    assert (by_id(assign_outfalls(net)).loc[names[:-1], "outfall_id"] == "OF").all()
    assert not net.qa.by_code("adverse_slope")
    assert (net.edges["orient_method"] == "inverts").all()


def _flat_loop():
    """A flat loop between two outfalls, from/to ids on every pipe.

    OF_W (0,0) <- A (100,0) -> B (200,0) ... the ring A-B-C-D:
        A (100,0)  B (200,0)
        D (100,100) C (200,100)
    OF_E at (300,0).  Ids: A->OF_W, D->A, B->OF_E, C->B, D->C (so D drains both ways:
    to A and to C).  Inverts all 1.0 except two adverse pipes whose inverts rise along
    the ids: D->A (1.0 -> 1.3) and C->B (1.0 -> 1.2).
    """
    st = [
        ("OF_W", "outfall", 0.0, 0.0),
        ("A", "manhole", 100.0, 0.0),
        ("B", "manhole", 200.0, 0.0),
        ("C", "manhole", 200.0, 100.0),
        ("D", "manhole", 100.0, 100.0),
        ("OF_E", "outfall", 300.0, 0.0),
    ]
    xy = {s[0]: (s[2], s[3]) for s in st}

    def pipe(a, b, us=1.0, ds=1.0):
        # drawn against the ids half the time (the ids must decide, not the drawing);
        # us_invert is the invert at the from_id structure
        coords = [xy[a], xy[b]] if a < b else [xy[b], xy[a]]
        return {
            "conv_id": f"{a}-{b}",
            "coords": coords,
            "from_id": a,
            "to_id": b,
            "us_invert": us,
            "ds_invert": ds,
            "diameter_in": 15.0,
        }

    cv = [
        pipe("A", "OF_W", 1.0, 0.9),
        pipe("D", "A", 1.0, 1.3),
        pipe("B", "OF_E", 1.0, 0.9),
        pipe("C", "B", 1.0, 1.2),
        pipe("D", "C", 1.05, 1.0),
    ]
    return network_workspace(st, cv)


def test_flat_loop_keeps_the_ids_of_its_adverse_pipes():
    # By hand: the ids lead A -> OF_W, B -> OF_E, C -> B -> OF_E, D -> A (main, the ids'
    # first pipe) and D -> C.  Inverts say D-A and C-B run uphill: the ids win, both
    # are reported adverse_slope, neither is reversed.
    net = build_network(_flat_loop())
    t = by_id(assign_outfalls(net))
    assert t.loc["A", "outfall_id"] == "OF_W"
    assert t.loc["B", "outfall_id"] == "OF_E"
    assert t.loc["C", "outfall_id"] == "OF_E"
    # D's flow splits to both outfalls along its ids (a real split, not an ambiguity)
    assert t.loc["D", "method"] == "split"
    assert {t.loc["D", "outfall_id"], t.loc["D", "other_outfalls"]} == {"OF_W", "OF_E"}
    e = net.edges.set_index("conv_id")
    for cid, fr, to in (("D-A", "D", "A"), ("C-B", "C", "B")):
        assert (e.loc[cid, "from_node"], e.loc[cid, "to_node"]) == (fr, to)
        assert e.loc[cid, "orient_method"] == "ids"
        assert e.loc[cid, "orient_overruled"] == "inverts"
    assert sorted(f.feature_id for f in net.qa.by_code("adverse_slope")) == ["C-B", "D-A"]
    assert not net.qa.by_code("orientation_conflict")


def _tree_to_headwall(reverse_every_other: bool):
    """A tree with no attributes ending at one headwall HW (0,0).

    HW <- S1 (100,0) <- S2 (200,0) <- S3 (300,0); branches S2 <- B1 (200,100) and
    S3 <- C1 (300,-100) <- C2 (400,-100).  Catch basins at the heads.  Every other
    line is digitised against the flow."""
    st = [
        ("HW", "headwall", 0.0, 0.0),
        ("S1", "manhole", 100.0, 0.0),
        ("S2", "manhole", 200.0, 0.0),
        ("S3", "catch_basin", 300.0, 0.0),
        ("B1", "catch_basin", 200.0, 100.0),
        ("C1", "manhole", 300.0, -100.0),
        ("C2", "catch_basin", 400.0, -100.0),
    ]
    xy = {s[0]: (s[2], s[3]) for s in st}
    flow = [("S1", "HW"), ("S2", "S1"), ("S3", "S2"), ("B1", "S2"), ("C1", "S3"), ("C2", "C1")]
    cv = []
    for k, (a, b) in enumerate(flow):
        coords = [xy[a], xy[b]]
        if reverse_every_other and k % 2:
            coords = coords[::-1]
        cv.append({"coords": coords})
    return network_workspace(st, cv), [s[0] for s in st[1:]]


@pytest.mark.parametrize("reverse", [False, True])
def test_geometry_only_tree_drains_to_its_one_headwall(reverse):
    # By hand: one real outlet (the headwall at the open end), so every line runs towards
    # it whatever its drawing: every structure reaches HW, no ambiguity.
    ws, names = _tree_to_headwall(reverse)
    net = build_network(ws)
    t = by_id(assign_outfalls(net))
    assert (t.loc[names, "outfall_id"] == "HW").all()
    assert (t.loc[names, "method"] == "headwall_at_end").all()
    assert set(net.edges["orient_method"]) == {"outlet_path"}


def _y_split(*, dem=None):
    """A Y with no attributes: CB (0,200) -> J (0,100); J -> OF1 (-100,0), J -> OF2 (100,0);
    both branches 141 m.  Outfalls are outfall structures."""
    st = [
        ("CB", "catch_basin", 0.0, 200.0),
        ("J", "manhole", 0.0, 100.0),
        ("OF1", "outfall", -100.0, 0.0),
        ("OF2", "outfall", 100.0, 0.0),
    ]
    cv = [
        {"conv_id": "T", "coords": [(0.0, 200.0), (0.0, 100.0)]},
        {"conv_id": "L", "coords": [(-100.0, 0.0), (0.0, 100.0)]},  # drawn from OF1
        {"conv_id": "R", "coords": [(0.0, 100.0), (100.0, 0.0)]},
    ]
    ws = network_workspace(st, cv)
    if dem is not None:
        ws.dem = dem
    return ws


def test_y_split_told_apart_by_nothing_is_ambiguous():
    # By hand: J is 141 m from OF1 and from OF2 and nothing orients L or R: the evidence
    # cannot tell; CB and J are ambiguous between OF1 and OF2, no outfall is named.
    net = build_network(_y_split())
    t = by_id(assign_outfalls(net))
    for sid in ("CB", "J"):
        assert t.loc[sid, "method"] == "ambiguous"
        assert not isinstance(t.loc[sid, "outfall_id"], str)
        assert t.loc[sid, "other_outfalls"] == "OF1;OF2"
        assert "OF1 or OF2" in t.loc[sid, "reason"]
    e = edge_outfalls(net).set_index("conv_id")
    assert e.loc["T", "method"] == "ambiguous"
    tr = trace_downstream(net, "CB")
    assert tr.ambiguous and sorted(tr.outfall_ids) == ["OF1", "OF2"]


def _tilted_dem(*, falls_to_x: float) -> Dem:
    """A 1 m DEM over the Y, the ground falling 0.05 per m towards ``falls_to_x``."""
    x0, y0, n = -150.0, 250.0, 300
    xs = x0 + 0.5 + np.arange(n)
    z = np.tile(30.0 + 0.05 * np.abs(xs - falls_to_x), (n, 1)).astype("float32")
    z += np.linspace(5.0, 0.0, n, dtype="float32")[:, None]  # and falling to the south
    return Dem(array=z.astype("float64"), transform=Affine(1.0, 0.0, x0, 0.0, -1.0, y0), crs=None)


def test_dem_ground_alone_orients_the_branch():
    # By hand: the ground rises 0.05 per m east of x = -150 and falls 5 m over the
    # DEM's 300 m to the south.  Ground (about): CB (0,200) 30+7.5+4.2 = 41.7,
    # J (0,100) 30+7.5+2.5 = 40.0, OF1 (-100,0) 30+2.5+0.8 = 33.3, OF2 (100,0)
    # 30+12.5+0.8 = 43.3.  So T runs CB -> J, L runs J -> OF1 and R runs OF2 -> J:
    # CB and J drain to OF1, by the ground alone.
    net = build_network(_y_split(dem=_tilted_dem(falls_to_x=-150.0)))
    t = by_id(assign_outfalls(net))
    assert t.loc["CB", "outfall_id"] == "OF1"
    assert t.loc["J", "outfall_id"] == "OF1"
    e = net.edges.set_index("conv_id")
    assert (e.loc["L", "from_node"], e.loc["L", "to_node"]) == ("J", "OF1")
    assert e.loc["L", "orient_method"] == "dem_ground"
    assert e.loc["T", "orient_method"] == "dem_ground"


def test_every_edge_names_a_known_method_and_what_it_overruled():
    for ws in (_line_of_ten(swap=4)[0], _flat_loop(), _tree_to_headwall(True)[0], _y_split()):
        e = build_network(ws).edges
        assert set(e["orient_method"]) <= set(ORIENT_METHODS)
        assert set(e["orient_overruled"]) <= {"", *TRUST_ORDER}
