"""ms4map.maps: view limiting, display geometry, clicks, search, hillshade, inventory."""

from __future__ import annotations

import json
import math

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from affine import Affine
from shapely.geometry import LineString, box
from test_app_town import CRS, LOT, X0, Y0, town_layers, write_town

from ms4map import idde
from ms4map.app.static import offline_css, offline_js
from ms4map.io.workspace import Workspace
from ms4map.outputs import maps
from ms4map.outputs.outfall_sheet import outfall_map_pdf


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace(path=None, crs=gpd.GeoSeries([], crs=CRS).crs, layers=town_layers())


@pytest.fixture(scope="module")
def layers(ws: Workspace) -> dict[str, maps.MapLayer]:
    return maps.build_layers(ws)


def whole_view(ws: Workspace) -> maps.MapView:
    return maps.MapView.from_bounds(tuple(ws.layers["parcels"].total_bounds), ws.crs)


def test_build_layers_has_every_layer_with_categories(layers: dict) -> None:
    assert list(layers) == [
        "parcels",
        "waterbodies",
        "impaired_waters",
        "conveyances",
        "structures",
        "outfalls",
    ]
    assert set(layers["structures"].frame["category"]) == {"catch_basin", "headwall"}
    assert set(layers["outfalls"].frame["category"]) == {"flowing"}
    assert set(layers["impaired_waters"].frame["category"]) == {"nutrients"}  # phosphorus
    assert set(layers["parcels"].frame["category"]) == {"not computed"}  # no result yet


def test_display_geojson_rounds_simplifies_and_reprojects() -> None:
    wiggly = LineString([(X0 + i, Y0 + (0.05 if i % 2 else 0.0)) for i in range(200)])
    frame = gpd.GeoDataFrame(geometry=[wiggly], crs=CRS)
    raw = json.loads(maps.display_geojson(frame))
    simple = json.loads(maps.display_geojson(frame, tolerance=0.5))
    coords = raw["features"][0]["geometry"]["coordinates"]
    assert len(simple["features"][0]["geometry"]["coordinates"]) == 2 < len(coords)
    lon, lat = coords[0]
    assert -76 < lon < -73 and 42 < lat < 44  # EPSG:4326
    assert all(round(c, 6) == c for xy in coords for c in xy)


def test_render_limits_to_the_view(ws: Workspace, layers: dict) -> None:
    # a small view around the western lots: eastern parcels are not sent
    v = maps.MapView.from_bounds((X0, Y0, X0 + 2 * LOT, Y0 + 2 * LOT), ws.crs, zoom=18)
    stats = maps.RenderStats()
    maps.render_layers(layers, v, visible=["parcels"], stats=stats)
    total = len(layers["parcels"].frame)
    assert 0 < stats.features["parcels"] < total / 4


def test_parcels_wait_for_zoom_when_many_are_in_view(ws: Workspace) -> None:
    lyr = maps.build_layers(ws)
    lyr["parcels"].max_features = 40  # 72 parcels > 40 // 2
    v = whole_view(ws)
    v.zoom = 12
    stats = maps.RenderStats()
    groups = maps.render_layers(lyr, v, visible=["parcels", "outfalls"], stats=stats)
    assert stats.features["parcels"] == 0
    assert any("zoom in" in n for n in stats.notes)
    assert len(groups) == 1  # outfalls only
    v.zoom = 16
    stats = maps.RenderStats()
    maps.render_layers(lyr, v, visible=["parcels"], stats=stats)
    assert stats.features["parcels"] == 40  # capped, and said so
    assert any("first 40" in n for n in stats.notes)


def test_rendered_map_html_carries_features_and_no_cdn_when_offline(ws, layers) -> None:
    v = whole_view(ws)
    m = maps.base_map(
        v, asset_js=offline_js("/app/static/vendor"), asset_css=offline_css("/app/static/vendor")
    )
    for fg in maps.render_layers(layers, v):
        fg.add_to(m)
    html = m.get_root().render()
    assert "/app/static/vendor/leaflet/leaflet.js" in html
    assert "cdn.jsdelivr" not in html and "code.jquery" not in html and "bootstrap" not in html
    assert html.count("L.geoJson") >= 6


def test_identify_prefers_points_then_parcels(ws: Workspace, layers: dict) -> None:
    from pyproj import Transformer

    tr = Transformer.from_crs(CRS, "EPSG:4326", always_xy=True)
    of = ws.layers["outfalls"].geometry.iloc[0]
    lng, lat = tr.transform(of.x + 1, of.y + 1)
    assert maps.identify(layers, lat, lng, zoom=18) == ("outfalls", "OF-1")
    lng, lat = tr.transform(X0 + 20, Y0 + 20)  # middle of the first lot
    assert maps.identify(layers, lat, lng, zoom=18) == ("parcels", "P00-00")
    lng, lat = tr.transform(X0 - 500, Y0 - 500)
    assert maps.identify(layers, lat, lng, zoom=18) is None
    # a hidden layer is not hit
    lng, lat = tr.transform(of.x, of.y)
    assert maps.identify(layers, lat, lng, zoom=18, visible=["parcels"]) is None


def test_a_geographic_crs_is_refused_for_map_distances(ws: Workspace) -> None:
    """Click tolerances and simplification are distances: degrees are never turned into
    metres with a constant (ms4map.core.units); a projected workspace is unaffected."""
    from ms4map.core.errors import DataError

    geo = Workspace(path=None, crs=gpd.GeoSeries([], crs=4326).crs, layers={
        k: v.to_crs(4326) for k, v in town_layers().items() if k in ("parcels", "outfalls")
    })  # fmt: skip
    geo_layers = maps.build_layers(geo)
    with pytest.raises(DataError, match="projected CRS"):
        maps.identify(geo_layers, 43.0, -73.6, zoom=18)
    with pytest.raises(DataError, match="projected CRS"):
        maps.render_layers(geo_layers, whole_view(ws), crs=geo.crs)


def test_search_finds_ids_and_addresses(ws: Workspace) -> None:
    hits = maps.search_features(ws, "p03-01")
    assert hits.iloc[0][["layer", "fid"]].tolist() == ["parcels", "P03-01"]
    assert maps.search_features(ws, "OF-1").iloc[0]["fid"] == "OF-1"
    assert maps.search_features(ws, "cb-2").iloc[0][["layer", "fid"]].tolist() == [
        "structures",
        "CB-2",
    ]
    addr = maps.search_features(ws, "  116   main st ")
    assert addr.iloc[0]["fid"] == "P03-01"  # 10 + 3*2 + 100
    assert maps.search_features(ws, "no such thing").empty
    # street words as people type them: "main street" and "116 Main St." find "116 Main St"
    for typed in ("116 main street", "116 Main St.", "116 MAIN ST,"):
        assert maps.search_features(ws, typed).iloc[0]["fid"] == "P03-01", typed


def test_parcel_categories_follow_the_largest_fraction() -> None:
    parcels = pd.DataFrame({"parcel_id": ["a", "b", "c", "d"]})
    drainage = pd.DataFrame(
        {
            "parcel_id": ["a", "a", "b", "c"],
            "target_kind": ["inlet", "water_direct", "depression", "off_dem"],
            "fraction": [0.7, 0.3, 1.0, 1.0],
        }
    )
    cats = maps.parcel_categories(parcels, drainage=drainage)
    assert cats.tolist() == ["MS4", "internally drained", "unknown", "not computed"]
    screening = pd.DataFrame({"parcel_id": ["a", "b", "c"], "condition_a": [True, False, None]})
    cats = maps.parcel_categories(parcels, by="condition_a", screening=screening)
    assert cats.tolist() == ["Condition A", "not Condition A", "undetermined", "not computed"]
    with pytest.raises(ValueError, match="select from"):
        maps.parcel_categories(parcels, by="colour")


def test_flow_arrows_point_downstream() -> None:
    line = gpd.GeoDataFrame(
        {"category": ["pipe"]}, geometry=[LineString([(0, 0), (100, 0)])], crs=CRS
    )
    arrow = maps.flow_arrows(line, size=5).geometry.iloc[0]
    (lx, _ly), (tx, ty), (rx, _ry) = arrow.coords
    assert tx > lx and tx > rx and ty == pytest.approx(0.0)


def test_hillshade_is_transparent_on_nodata_and_bounded() -> None:
    z = np.add.outer(np.arange(50.0), np.arange(60.0))
    z[:5, :5] = np.nan
    tr = Affine(2.0, 0, X0, 0, -2.0, Y0 + 100)
    rgba, bounds = maps.hillshade(z, tr, CRS, max_px=40)
    assert rgba.dtype == np.uint8 and rgba.shape[2] == 4 and max(rgba.shape[:2]) <= 40
    assert rgba[..., 3].min() == 0 and rgba[..., 3].max() == 255
    (south, west), (north, east) = bounds
    assert south < north and west < east
    assert maps.png_bytes(rgba)[:8] == b"\x89PNG\r\n\x1a\n"


def _reported(south_west: tuple, north_east: tuple, zoom: int) -> dict:
    """What st_folium reports of a map: its bounds (lat, lng corners) and zoom."""
    corner = dict(zip(("lat", "lng"), south_west, strict=True))
    return {
        "bounds": {
            "_southWest": corner,
            "_northEast": dict(zip(("lat", "lng"), north_east, strict=True)),
        },
        "zoom": zoom,
    }


def test_view_roundtrip_from_st_folium() -> None:
    pytest.importorskip("streamlit")
    from ms4map.app.mapview import view_from_st_folium

    default = maps.MapView(0, 0, 1, 1, 5)
    v = view_from_st_folium(_reported((43.0, -74.0), (43.1, -73.9), 15), default)
    assert (v.south, v.east, v.zoom) == (43.0, -73.9, 15)
    assert view_from_st_folium({"bounds": {}}, default) is default


def test_a_view_reported_before_the_map_was_laid_out_is_its_laid_out_view() -> None:
    """A frame not yet sized reports a box of no width; the view drawn is then what the map
    shows around that centre at that zoom (else the site highlight, clipped to the box,
    was left out of the map until it was moved)."""
    pytest.importorskip("streamlit")
    from ms4map.app.mapview import view_from_st_folium

    default = maps.MapView(0, 0, 1, 1, 5)
    flat = _reported((43.0, -74.0), (43.004, -74.0), 17)
    v = view_from_st_folium(flat, default, height_px=460)
    # at zoom 17 and 43 N a pixel is 0.87 m: 460 px is 402 m tall, the default 1000 px
    # width 874 m wide, centred on the reported box
    mpp = maps.metres_per_pixel(43.002, 17)
    assert (v.north - v.south) * 110574 == pytest.approx(460 * mpp, rel=1e-6)
    assert (v.east - v.west) * 111320 * math.cos(math.radians(43.002)) == pytest.approx(
        1000 * mpp, rel=1e-6
    )
    assert v.center == pytest.approx((43.002, -74.0)) and v.zoom == 17
    # a point 100 m east of the centre is in view (it was not in the reported box)
    assert v.west < -74.0 + 100 / (111320 * math.cos(math.radians(43.002))) < v.east


def test_metres_per_pixel() -> None:
    assert maps.metres_per_pixel(0, 0) == pytest.approx(156543.03392)
    assert maps.metres_per_pixel(60, 1) == pytest.approx(
        156543.03392 * math.cos(math.radians(60)) / 2
    )


@pytest.fixture(scope="module")
def town_result(tmp_path_factory: pytest.TempPathFactory):
    import ms4map
    from ms4map import pipeline

    wsp = ms4map.open_workspace(write_town(tmp_path_factory.mktemp("mapstown")))
    return wsp, pipeline.run(wsp)


def test_outfall_inventory_and_candidates(town_result) -> None:
    wsp, result = town_result
    inv = maps.outfall_inventory(wsp, result)
    assert inv["outfall_id"].tolist() == ["OF-1"]
    row = inv.iloc[0]
    assert row["receiving_water"] == "Test Creek" and row["pwl_id"] == "1101-0001"
    assert int(row["structures_upstream"]) == 7  # six catch basins + the headwall
    drained = result.drainage[result.drainage["outfall_id"] == "OF-1"]["parcel_id"].nunique()
    assert int(row["parcels_upstream"]) == drained
    area = maps.outfall_area(wsp, result, "OF-1")
    assert len(area.edges) == 6
    cand = idde.candidates_for_area(area)
    septic_or_commercial = area.parcels[
        (area.parcels["sewer"] == "septic") | area.parcels["prop_class"].str.startswith("4")
    ]
    assert set(cand["parcel_id"]) == set(septic_or_commercial["parcel_id"])
    assert cand["priority"].is_monotonic_increasing
    pdf = outfall_map_pdf(wsp, result, inv)
    assert pdf[:4] == b"%PDF"


def test_feature_path_of_a_structure_reaches_the_creek(town_result) -> None:
    wsp, result = town_result
    path = maps.feature_path(wsp, result, "structures", "CB-0")
    assert path.outfall_ids == ["OF-1"]
    assert path.receiving_waters == ["Test Creek"]
    assert path.geometry.length.sum() == pytest.approx(12 * LOT + 30 - 20, abs=1)
    none = maps.feature_path(wsp, None, "parcels", "P00-00")
    assert "not been run" in none.reason


def test_static_map_has_a_legend(ws: Workspace, layers: dict) -> None:
    m = maps.static_map(
        layers, highlights={"selection": gpd.GeoSeries([box(X0, Y0, X0 + 5, Y0 + 5)], crs=CRS)}
    )
    html = m.get_root().render()
    assert "ms4map-legend" in html and "catch basin" in html
