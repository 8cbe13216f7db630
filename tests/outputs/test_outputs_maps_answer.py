"""The map shows the whole answer (issue 10, part 3), library side, on the demo town:
path text that says each thing once, the overland step from a parcel to its inlet, the
extent a map fits, outfall coordinates and counts that count each parcel once, colours
that do not collide and a legend for the highlights."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
from pyproj import Transformer
from shapely.geometry import Point
from test_app_town import CRS, town_layers

from ms4map import pipeline
from ms4map.io.styles import IMPAIRED_COLOURS, MS4_AREA_COLOUR
from ms4map.io.workspace import Workspace
from ms4map.outputs import maps
from ms4map.outputs.maps.render import HIGHLIGHT_STYLES, PATH_COLOUR

PLAZA = "107.12-2-11"  # drains 56 % to CB-0503 and 44 % to CB-0504, both to OF-013


def test_path_text_says_each_thing_once(demo_result) -> None:
    ws, result = demo_result
    p = maps.feature_path(ws, result, "structures", "CB-0170")
    (step,) = p.steps
    assert step.count("487 m") == 1, step
    assert step.count("conveyance(s)") == 1, step
    assert step.count("OF-009") == 1, step
    assert step.endswith("which discharges to Alder Kill"), step
    for step in maps.feature_path(ws, result, "parcels", PLAZA).steps:
        assert step.count(" m downstream") == 1 and step.count("OF-013") == 1, step


def test_a_parcel_path_draws_its_overland_step_down_the_dem(demo_result) -> None:
    ws, result = demo_result
    p = maps.feature_path(ws, result, "parcels", PLAZA)
    ov = p.overland
    assert sorted(ov["target_id"]) == ["CB-0503", "CB-0504"]
    assert set(ov["method"]) == {"d8"}
    parcel = ws.layers["parcels"].set_index("parcel_id").geometry[PLAZA]
    inlets = result.inlets.set_index("node_id").geometry
    o = result.overland
    t = o.transform
    for tid, line in zip(ov["target_id"], ov.geometry, strict=True):
        start, end = Point(line.coords[0]), Point(line.coords[-1])
        assert parcel.contains(start)  # starts on the parcel ...
        assert end.distance(inlets[tid]) <= abs(t.a)  # ... ends on its inlet's cell
        # each step goes to a D8 neighbour: the cell the D8 pointer sends it to (the
        # pipeline does not keep the conditioned DEM; the pointer was made on it)
        xy = np.asarray(line.coords)
        cols = ((xy[:, 0] - t.c) / t.a).astype(int)
        rows = ((xy[:, 1] - t.f) / t.e).astype(int)
        assert np.abs(np.diff(cols)).max() <= 1 and np.abs(np.diff(rows)).max() <= 1
        idx = rows * o.shape[1] + cols
        assert np.array_equal(o.idxs_ds[idx[:-1]], idx[1:])
    hl = p.highlights()
    assert set(hl) == {"path", "overland step", "outfalls reached"}
    assert list(p.outfall_ids) == ["OF-013"]


def test_without_a_dem_the_step_is_a_line_to_the_nearest_inlet() -> None:
    ws = Workspace(path=None, crs=gpd.GeoSeries([], crs=CRS).crs, layers=town_layers())
    result = pipeline.run(ws)
    assert result.overland is None
    d = result.drainage
    pid = d.loc[d["target_kind"] == "inlet", "parcel_id"].iloc[0]
    ov = maps.overland_steps(ws, result, pid)
    assert len(ov) >= 1 and set(ov["method"]) == {"nearest_inlet"}
    tid = ov["target_id"].iloc[0]
    end = Point(ov.geometry.iloc[0].coords[-1])
    cb = ws.layers["structures"].set_index("struct_id").geometry[tid]
    assert end.distance(cb) < 1e-6
    assert "straight line" in maps.OVERLAND_METHODS["nearest_inlet"]


def test_the_path_extent_holds_the_site_the_pipes_and_the_outfall(demo_result) -> None:
    ws, result = demo_result
    p = maps.feature_path(ws, result, "structures", "CB-0170")
    ext = p.extent()
    of9 = maps.feature_geometry(ws, "outfalls", "OF-009")
    cb = maps.feature_geometry(ws, "structures", "CB-0170")
    assert ext.buffer(1).contains(of9) and ext.buffer(1).contains(cb)
    # the view a map fits to it (plus the 60 m margin the app adds) shows both ends
    view = maps.MapView.from_bounds(tuple(ext.buffer(60).bounds), ws.crs)
    assert 15 <= view.zoom <= 17  # not street level (18-19): the path is 487 m long
    bbox = view.bbox(ws.crs, margin=0)
    for g in (of9, cb):
        assert bbox[0] <= g.x <= bbox[2] and bbox[1] <= g.y <= bbox[3]


def test_map_view_around_a_centre_is_what_the_screen_shows() -> None:
    v = maps.MapView.around(43.0, -73.7, 16, width_px=1000, height_px=600)
    mpp = maps.metres_per_pixel(43.0, 16)
    assert v.zoom == 16
    assert (v.north - v.south) * 110574 == pytest.approx(600 * mpp, rel=1e-6)
    assert (v.east - v.west) * 111320 * np.cos(np.radians(43.0)) == pytest.approx(
        1000 * mpp, rel=1e-6
    )


def test_the_inventory_gives_outfall_latitude_and_longitude(demo_result) -> None:
    ws, result = demo_result
    inv = maps.outfall_inventory(ws, result)
    assert {"latitude", "longitude"} <= set(inv.columns)
    row = inv.set_index("outfall_id").loc["OF-009"]
    lon, lat = Transformer.from_crs(ws.crs, 4326, always_xy=True).transform(row["x"], row["y"])
    assert row["latitude"] == pytest.approx(lat, abs=1e-6)
    assert row["longitude"] == pytest.approx(lon, abs=1e-6)
    assert inv["latitude"].between(40.4, 45.1).all()  # New York
    assert inv["longitude"].between(-79.8, -71.8).all()


def test_town_totals_count_each_parcel_once(demo_result) -> None:
    from ms4map.rules import septic as septic_mod

    ws, result = demo_result
    sep = septic_mod.flag_septic(result, profile="stillwater", workspace=ws)
    inv = maps.outfall_inventory(ws, result, septic=sep)
    tot = maps.inventory_totals(ws, result, septic=sep)
    # the septic page's number: flagged parcels (all of them drain to an outfall here)
    assert tot["septic_parcels"] == int(sep["flagged"].sum())
    assert tot["septic_basis"] == "flagged"
    # the table's column counts a parcel under each of its outfalls
    assert int(inv["septic_parcels_upstream"].sum()) == tot["septic_in_rows"]
    assert int(inv["parcels_upstream"].sum()) == tot["parcels_in_rows"]
    assert tot["septic_in_rows"] > tot["septic_parcels"]
    d = result.drainage[result.drainage["outfall_id"].notna()]
    assert tot["parcels"] == d["parcel_id"].nunique()
    per = d.groupby("parcel_id")["outfall_id"].nunique()
    assert tot["multi_outfall_parcels"] == int((per > 1).sum()) > 0


def test_ms4_area_outline_is_not_pink_and_highlights_are_in_the_legend(demo_result) -> None:
    ws, result = demo_result
    pinks = {IMPAIRED_COLOURS["toxics (PCBs, metals, ...)"], PATH_COLOUR}
    layers = maps.build_layers(ws, result=result)
    ms4 = layers["ms4_area"]
    assert not {ms4.colour(c) for c in ms4.frame["category"]} & pinks
    assert ms4.dash  # dashed: an outline, not a fill like the waters
    p = maps.feature_path(ws, result, "parcels", PLAZA)
    hl = {"selection": gpd.GeoSeries([maps.feature_geometry(ws, "parcels", PLAZA)], crs=ws.crs)}
    hl |= p.highlights()
    html = maps.legend_html(layers, visible=["parcels", "ms4_area"], highlights=hl)
    assert "Highlighted" in html
    for label in hl:
        assert HIGHLIGHT_STYLES[label][2] in html
    assert "dashed #ff00ff" in html  # the overland step's swatch is dashed
    assert f"dashed {MS4_AREA_COLOUR}" in html
    # the map draws the overland step dashed, in the path's colour
    view = maps.MapView.from_bounds(tuple(p.extent().buffer(60).bounds), ws.crs)
    fg = maps.highlight_group(hl, view=view)
    styles = [
        child.style_function(None)
        for child in fg._children.values()
        if hasattr(child, "style_function")
    ]
    assert {"color": PATH_COLOUR, "dashArray": "6 6"}.items() <= next(
        s for s in styles if s.get("dashArray") == "6 6"
    ).items()
