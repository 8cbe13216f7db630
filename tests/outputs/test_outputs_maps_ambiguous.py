"""The map draws a structure or pipe whose outfall the network cannot tell as uncertain."""

from __future__ import annotations

from types import SimpleNamespace

import geopandas as gpd
from ambiguous_builders import Y_CONVEYANCES, Y_STRUCTURES, patch_network, y_network
from network_builders import UTM, conveyances, structures, ws_of
from shapely.geometry import LineString, Point

from ms4map.drainage import network_join
from ms4map.io.styles import AMBIGUOUS_CATEGORY, AMBIGUOUS_COLOUR, STRUCTURE_COLOURS
from ms4map.outputs import maps


def _layers(monkeypatch, *, ambiguous: bool):
    if ambiguous:
        patch_network(monkeypatch)
    net = y_network()
    ws = ws_of(structures(Y_STRUCTURES), conveyances(Y_CONVEYANCES))
    result = SimpleNamespace(network=net, join=network_join(net), drainage=None, sewersheds=None)
    return ws, maps.build_layers(ws, result=result)


def test_ambiguous_structures_and_pipes_are_uncertain_with_their_candidates(monkeypatch):
    ws, layers = _layers(monkeypatch, ambiguous=True)
    st = layers["structures"].frame.set_index("fid")
    assert st.loc["A", "category"] == AMBIGUOUS_CATEGORY
    assert st.loc["S", "category"] == AMBIGUOUS_CATEGORY
    assert st.loc["A", "candidates"] == "O1, O2"
    assert st.loc["O1", "category"] == "outfall" and st.loc["O1", "candidates"] == ""
    assert layers["structures"].colour(AMBIGUOUS_CATEGORY) == AMBIGUOUS_COLOUR
    cv = layers["conveyances"].frame.set_index("fid")
    assert cv.loc["in", "category"] == AMBIGUOUS_CATEGORY
    assert cv.loc["in", "candidates"] == "O1, O2"
    assert cv.loc["N", "category"] == "pipe"  # N leads to O1 only
    # drawn dashed, and the legend says so
    view = maps.MapView.from_bounds(tuple(ws.layers["structures"].total_bounds), ws.crs)
    m = maps.base_map(view)
    for fg in maps.render_layers(layers, view):
        fg.add_to(m)
    html = m.get_root().render()
    assert '"dashArray": "6 4"' in html
    legend = maps.legend_html(layers)
    assert "outfall ambiguous (uncertain)" in legend and "dashed" in legend


def test_decided_network_draws_every_feature_by_its_kind(monkeypatch):
    _ws, layers = _layers(monkeypatch, ambiguous=False)
    st = layers["structures"].frame
    assert AMBIGUOUS_CATEGORY not in set(st["category"])
    assert set(st["category"]) <= set(STRUCTURE_COLOURS)
    assert (st["candidates"] == "").all()
    assert "outfall ambiguous" not in maps.legend_html(layers)


def test_ambiguous_path_highlight_is_dashed_grey_in_the_legend():
    hl = {
        "ambiguous path": gpd.GeoSeries([LineString([(0, 0), (100, 0)])], crs=UTM),
        "candidate outfalls": gpd.GeoSeries([Point(200, 50), Point(200, -50)], crs=UTM),
    }
    legend = maps.legend_html({}, highlights=hl)
    assert "ambiguous path: the network cannot tell which outfall takes the flow" in legend
    assert "candidate outfalls (uncertain)" in legend
    assert f"3px dashed {AMBIGUOUS_COLOUR}" in legend
