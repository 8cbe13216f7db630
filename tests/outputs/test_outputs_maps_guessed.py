"""The map draws the outfalls the network guessed from line ends, marked as guesses
(issue 28 item 16: a town without an outfalls layer saw no outfall on the map)."""

from __future__ import annotations

from types import SimpleNamespace

import geopandas as gpd
from network_builders import conveyances, structures, ws_of
from shapely.geometry import Point

from ms4map.drainage import network_join
from ms4map.io.styles import GUESSED_OUTFALL_CATEGORY, OUTFALL_COLOURS
from ms4map.network import build_network
from ms4map.outputs import maps

# two pieces, no outfalls layer, no water: each drains to the end of its trunk
ST = [
    ("CB1", "catch_basin", 0, 100),
    ("M1", "manhole", 0, 0),
    ("CB2", "catch_basin", 500, 100),
    ("M2", "manhole", 500, 0),
]
CV = [
    {"conv_id": "L1", "coords": [(0, 100), (0, 0)]},
    {"conv_id": "T1", "coords": [(0, 0), (-80, 0)]},
    {"conv_id": "L2", "coords": [(500, 100), (500, 0)]},
    {"conv_id": "T2", "coords": [(500, 0), (580, 0)]},
]


def _layers(ws):
    net = build_network(ws)
    result = SimpleNamespace(network=net, join=network_join(net), drainage=None, sewersheds=None)
    return net, maps.build_layers(ws, result=result)


def test_guessed_outfalls_are_drawn_hollow_and_dashed_without_an_outfalls_layer():
    ws = ws_of(structures(ST), conveyances(CV))
    net, layers = _layers(ws)
    assert net.outfalls["guessed"].all() and len(net.outfalls) == 2
    of = layers["outfalls"].frame
    assert sorted(of["fid"]) == sorted(net.outfalls.index.astype(str))
    assert set(of["category"]) == {GUESSED_OUTFALL_CATEGORY}
    got = sorted(zip(of.geometry.x.round(1), of.geometry.y.round(1), strict=True))
    assert got == [(-80.0, 0.0), (580.0, 0.0)]
    view = maps.MapView.from_bounds(tuple(ws.layers["conveyances"].total_bounds), ws.crs)
    m = maps.base_map(view)
    for fg in maps.render_layers(layers, view):
        fg.add_to(m)
    assert '"dashArray": "3 3"' in m.get_root().render()
    assert "guessed from a line end" in maps.legend_html(layers)


def test_an_outfalls_layer_point_is_drawn_once_by_its_status_not_as_a_guess():
    # with an outfalls layer the terminals are checked: the other piece's end is no
    # outfall at all (terminal_not_at_water), and OF-1 is the layer's, not a guess
    of_layer = gpd.GeoDataFrame(
        {"outfall_id": ["OF-1"], "status": ["flowing"]},
        geometry=[Point(-80, 0)],
        crs=structures(ST).crs,
    )
    ws = ws_of(structures(ST), conveyances(CV), outfalls=of_layer)
    net, layers = _layers(ws)
    of = layers["outfalls"].frame.set_index("fid")
    assert of.loc["OF-1", "category"] == "flowing"
    assert len(of) == 1 and GUESSED_OUTFALL_CATEGORY not in set(of["category"])
    assert layers["outfalls"].colour("flowing") == OUTFALL_COLOURS["flowing"]
