"""Pieces of network with no real outlet and no evidence: they drain to an open end that
is not a catch basin or inlet; pipe-end codes that say which way water goes (issue 27)."""

from __future__ import annotations

import geopandas as gpd
from network_builders import network_workspace
from shapely.geometry import LineString, Point

import ms4map
from ms4map.network import assign_outfalls, build_network


def _edges(net):
    return net.edges.set_index("conv_id")


# A geometry-only tree with no headwall, no outfall structure and no water layer, every
# line drawn *against* the flow (hand-worked answer: everything drains to the one open
# end that is not a catch basin, the bare end E of the trunk at x = -100):
#
#   CB1 (0,100)          CB2 (200,100)
#        \                  /
#         M1 (0,0) ---- M2 (200,0)        trunk drawn M1 <- E, laterals drawn M -> CB
#         |
#         E (-100,0): a bare pipe end, no structure
TREE_ST = [
    ("CB1", "catch_basin", 0, 100),
    ("M1", "manhole", 0, 0),
    ("M2", "manhole", 200, 0),
    ("CB2", "catch_basin", 200, 100),
]
TREE_CV = [
    {"conv_id": "T0", "coords": [(-100, 0), (0, 0)]},  # drawn from the open end
    {"conv_id": "T1", "coords": [(0, 0), (200, 0)]},  # drawn downstream -> upstream
    {"conv_id": "L1", "coords": [(0, 0), (0, 100)]},
    {"conv_id": "L2", "coords": [(200, 0), (200, 100)]},
]


def test_a_tree_without_an_outlet_drains_to_its_open_end_not_to_a_catch_basin():
    net = build_network(network_workspace(TREE_ST, TREE_CV))
    e = _edges(net)
    flow = {c: (e.loc[c, "from_node"], e.loc[c, "to_node"]) for c in e.index}
    assert flow["L1"] == ("CB1", "M1") and flow["L2"] == ("CB2", "M2")
    assert flow["T1"] == ("M2", "M1")
    assert flow["T0"][0] == "M1"  # out through the bare end
    assert set(e["orient_method"]) == {"outlet_path"}
    assert len(net.outfalls) == 1
    (oid,) = net.outfalls.index
    assert net.outfalls.loc[oid, "method"] == "terminal_loose_end"
    assert bool(net.outfalls.loc[oid, "guessed"])
    t = assign_outfalls(net).set_index("struct_id")
    assert (t["outfall_id"] == oid).all()
    # on the code before: the lines ran as drawn, into CB1 and CB2, which became outfalls
    assert not set(t["outfall_id"]) & {"CB1", "CB2"}


def test_two_open_ends_as_near_are_told_apart_only_by_the_drawing_or_not_at_all():
    # a straight run E1 - M - E2 with both ends bare and M in the middle
    def run(coords_a, coords_b):
        cv = [
            {"conv_id": "A", "coords": coords_a},
            {"conv_id": "B", "coords": coords_b},
        ]
        net = build_network(network_workspace([("M", "manhole", 0, 0)], cv))
        return net, assign_outfalls(net).set_index("struct_id")

    # both drawn towards their open ends: nothing tells the ends apart
    net, t = run([(0, 0), (-100, 0)], [(0, 0), (100, 0)])
    assert t.loc["M", "method"] == "ambiguous"
    assert len([c for c in t.loc["M", "other_outfalls"].split(";") if c]) == 2
    # A drawn from its open end: the drawing (the weakest evidence) decides for B's end
    net, t = run([(-100, 0), (0, 0)], [(0, 0), (100, 0)])
    e = _edges(net)
    assert t.loc["M", "method"] == "terminal_loose_end"
    assert e.loc["A", "from_node"] != "M" and e.loc["B", "from_node"] == "M"


def _coded_network(tmp_path, codes: dict[str, str], lines: list[tuple[str, list]]):
    """A GeoPackage with Norfolk-style type codes (``Structure1``), opened as a user would."""
    pts = {"A": (0.0, 0.0), "B": (100.0, 0.0), "C": (200.0, 0.0)}
    st = gpd.GeoDataFrame(
        {"Structure1": list(codes.values())},
        geometry=[Point(pts[k]) for k in codes],
        crs="EPSG:26918",
    )
    cv = gpd.GeoDataFrame(
        {"LineType": ["PIPE"] * len(lines)},
        geometry=[LineString([pts[a] for a in ends]) for _, ends in lines],
        crs="EPSG:26918",
    )
    path = tmp_path / "coded.gpkg"
    st.to_file(path, layer="storm_structures", driver="GPKG")
    cv.to_file(path, layer="storm_pipes", driver="GPKG")
    ws = ms4map.open_workspace(
        path, layers={"structures": ["storm_structures"], "conveyances": ["storm_pipes"]}
    )
    return build_network(ws)


def test_norfolk_pipe_end_codes_say_which_end_is_the_outlet(tmp_path):
    # a pipe end section (PEHW: a ditch enters the pipes) at A, a manhole at B, a pipe
    # outlet (POEW: the pipes discharge) at C; both pipes drawn from the outlet back up
    net = _coded_network(
        tmp_path,
        {"A": "PEHW", "B": "MH", "C": "POEW"},
        [("1", ["C", "B"]), ("2", ["B", "A"])],
    )
    kinds = net.nodes.set_index("struct_id")["kind"]
    assert kinds.tolist() == ["inlet", "manhole", "headwall"]
    assert net.outfalls["method"].tolist() == ["headwall_at_end"]
    (oid,) = net.outfalls.index
    t = assign_outfalls(net)
    assert (t["outfall_id"] == oid).all()
    assert set(t["method"]) == {"headwall_at_end"}
    # on the code before, PEHW read as a headwall too: two outlets, and the structures
    # between them were sent to the nearer one or left ambiguous
    assert "ambiguous" not in set(t["method"])
