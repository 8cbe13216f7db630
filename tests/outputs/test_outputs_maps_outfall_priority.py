"""Important outfalls are drawn on top and win a click on overlapping markers (issue 10,
part 3): on the demo, suspect OF-009 lies 12 m from 'unknown' OF-010."""

from __future__ import annotations

import pytest
from pyproj import Transformer

from ms4map.outputs import maps
from ms4map.outputs.maps.layers import OUTFALL_PRIORITY


@pytest.fixture(scope="module")
def demo(demo_result):
    """The demo town's workspace and map layers (from conftest's ``demo_result``)."""
    ws, result = demo_result
    return ws, maps.build_layers(ws, result=result)


def _drawn_order(demo, zoom: int) -> list[str]:
    """Outfall categories in the order Leaflet draws them (later = on top)."""
    ws, layers = demo
    of = layers["outfalls"].frame
    view = maps.MapView.from_bounds(tuple(of.buffer(200).total_bounds), ws.crs)
    view.zoom = zoom
    groups = maps.render_layers(layers, view, visible=["outfalls"], crs=ws.crs)
    ll = of.to_crs(4326).geometry
    cat = {
        (round(g.x, 5), round(g.y, 5)): c for g, c in zip(ll, of["category"], strict=True)
    }  # the features carry no properties: match them by position
    order = []
    for child in groups[0]._children.values():
        for f in getattr(child, "data", {}).get("features", []):
            x, y = f["geometry"]["coordinates"]
            order.append(cat[(round(x, 5), round(y, 5))])
    assert len(order) == len(of)
    return order


def test_suspect_and_flowing_outfalls_are_drawn_over_unknown_ones(demo) -> None:
    cats = _drawn_order(demo, 14)
    assert {"suspect", "flowing", "unknown"} <= set(cats)
    rank = [OUTFALL_PRIORITY[c] for c in cats]
    assert rank == sorted(rank)  # unknown first, suspect last (on top)


def _latlng(ws, pt):
    lng, lat = Transformer.from_crs(ws.crs, 4326, always_xy=True).transform(pt.x, pt.y)
    return lat, lng


def test_click_on_overlapping_markers_picks_the_one_on_top(demo) -> None:
    ws, layers = demo
    of = layers["outfalls"].frame.set_index("fid").geometry
    a, b = of["OF-009"], of["OF-010"]
    assert a.distance(b) < 15
    near_b = type(a)(a.x + 0.7 * (b.x - a.x), a.y + 0.7 * (b.y - a.y))
    lat, lng = _latlng(ws, near_b)  # nearer OF-010, but on OF-009's marker at zoom 16
    assert maps.identify(layers, lat, lng, zoom=16, visible=["outfalls"]) == ("outfalls", "OF-009")
    lat, lng = _latlng(ws, b)  # zoomed in, the markers apart: the one clicked
    assert maps.identify(layers, lat, lng, zoom=19, visible=["outfalls"]) == ("outfalls", "OF-010")
