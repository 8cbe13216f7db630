"""The app shows the whole answer (issue 10, part 3), through Streamlit's AppTest on the
demo town: a search fits the site and its whole path, a click on an outfall gives its
upstream area, counts and a link to its investigation, the inventory counts each parcel
once (and agrees with the Septic page), the septic table is in priority order and has a
sharper companion to the special-condition filter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from pyproj import Transformer  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from ms4map.outputs import maps  # noqa: E402

TIMEOUT = 120


def _shown(text: str) -> str:
    """What a reader sees of a Markdown text: the app escapes values from the data."""
    return re.sub(r"\\(.)", r"\1", str(text))


def page(name: str) -> AppTest:
    return AppTest.from_string(
        f"from ms4map.app import run_page\nrun_page({name!r})", default_timeout=TIMEOUT
    )


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _latlng(ws, g):
    lng, lat = Transformer.from_crs(ws.crs, 4326, always_xy=True).transform(g.x, g.y)
    return lat, lng


def test_a_search_fits_the_structure_and_its_whole_path(app_env: Path, demo_result) -> None:
    ws, _ = demo_result
    at = page("map").run()
    at.text_input(key="map_search_query").set_value("CB-0170").run()
    _ok(at)
    (lat, lng), zoom = at.session_state["map_main_focus"]
    assert zoom <= 17  # not the street-level 18-19 that left the outfall off-screen
    view = maps.MapView.around(lat, lng, zoom, width_px=900, height_px=620)
    for layer, fid in (("structures", "CB-0170"), ("outfalls", "OF-009")):
        y, x = _latlng(ws, maps.feature_geometry(ws, layer, fid))
        assert view.south < y < view.north and view.west < x < view.east, (layer, fid)
    text = " ".join(m.value for m in at.markdown)
    assert "path to the outfall (pipes and ditches)" in text  # the highlight's legend entry
    assert text.count("487 m") == 1  # the path line says it once


def test_an_outfall_search_fits_its_whole_sewershed(app_env: Path, demo_result) -> None:
    from shapely.geometry import Point

    from ms4map import outfall_area

    ws, result = demo_result
    shed = outfall_area(result, "OF-009").sewershed.union_all()
    at = page("map").run()
    at.text_input(key="map_search_query").set_value("OF-009").run()
    _ok(at)
    (lat, lng), zoom = at.session_state["map_main_focus"]
    view = maps.MapView.around(lat, lng, zoom, width_px=900, height_px=620)
    x0, y0, x1, y1 = shed.bounds
    for corner in (Point(x0, y0), Point(x1, y1)):  # the sewershed's far corners are on screen
        y, x = _latlng(ws, corner)
        assert view.south < y < view.north and view.west < x < view.east, corner


def test_a_parcel_search_draws_and_explains_its_overland_step(app_env: Path) -> None:
    at = page("map").run()
    at.text_input(key="map_search_query").set_value("107.12-2-11").run()
    _ok(at)
    legend = " ".join(m.value for m in at.markdown if "ms4map-legend" in m.value)
    assert "overland step (parcel to inlet or water)" in legend
    assert any("overland step (dashed on the map)" in c.value for c in at.caption)


def test_a_click_on_an_outfall_gives_its_upstream_area_counts_and_investigation(
    app_env: Path, demo_result
) -> None:
    ws, result = demo_result
    lat, lng = _latlng(ws, maps.feature_geometry(ws, "outfalls", "OF-009"))
    at = page("map").run()
    at.session_state["map_main"] = {"last_clicked": {"lat": lat, "lng": lng}, "zoom": 16}
    at.run()
    _ok(at)
    assert at.session_state["map_selected"] == ("outfalls", "OF-009")
    metrics = {m.label: m.value for m in at.metric}
    inv = maps.outfall_inventory(ws, result).set_index("outfall_id").loc["OF-009"]
    assert metrics["Sewershed (acres)"] == f"{inv['sewershed_acres']:,.1f}"
    assert metrics["Structures upstream"] == f"{int(inv['structures_upstream']):,}"
    assert metrics["Parcels draining here"] == f"{int(inv['parcels_upstream']):,}"
    assert "Flagged septic parcels" in metrics
    links = [m.value for m in at.markdown if "investigation?outfall=OF-009" in m.value]
    assert links and "Investigate outfall OF-009" in _shown(links[0])
    legend = " ".join(m.value for m in at.markdown if "ms4map-legend" in m.value)
    assert "sewershed of the outfall" in legend and "network upstream of the outfall" in legend


def test_the_investigation_link_opens_that_outfall(app_env: Path) -> None:
    at = page("investigation")
    at.query_params["outfall"] = "OF-021"
    at.run()
    _ok(at)
    assert at.selectbox(key="inv_outfall").value == "OF-021"
    at.selectbox(key="inv_outfall").set_value("OF-004").run()  # the user may move on
    assert at.selectbox(key="inv_outfall").value == "OF-004"
    at = page("investigation")
    at.query_params["outfall"] = "OF-999"
    at.run()
    assert not at.exception
    assert any("OF-999" in _shown(w.value) for w in at.warning)


def test_inventory_counts_parcels_once_as_the_septic_page_does(app_env: Path) -> None:
    at = page("inventory").run()
    _ok(at)
    metrics = {m.label: m.value for m in at.metric}
    septic_total = int(metrics["Flagged septic parcels draining to an outfall"].replace(",", ""))
    df = at.dataframe[0].value
    assert {"latitude", "longitude"} <= set(df.columns)
    in_rows = int(df["septic_parcels_upstream"].sum())
    assert in_rows > septic_total  # the table counts a parcel under each of its outfalls ...
    caption = " ".join(c.value for c in at.caption)
    assert f"septic column to {in_rows:,}" in caption  # ... and the page says so
    sp = page("septic").run()
    _ok(sp)
    flagged = [s.value for s in sp.subheader if s.value.startswith("Flagged parcels")]
    assert flagged == [f"Flagged parcels ({septic_total})"]  # the same parcels


def test_septic_table_is_in_priority_order_violations_first(app_env: Path) -> None:
    at = page("septic").run()
    _ok(at)
    df = at.dataframe[0].value
    assert bool(df["violation"].iloc[0]) and df["violation"].sum() >= 1
    n_viol = int(df["violation"].sum())
    assert df["violation"].iloc[:n_viol].all()  # every violation before the rest
    assert df["priority"].iloc[n_viol:].is_monotonic_decreasing


def test_septic_pollutant_filter_sharpens_special_condition(app_env: Path) -> None:
    at = page("septic").run()
    at.checkbox(key="septic_special").check().run()
    special = at.dataframe[0].value
    at.checkbox(key="septic_pollutant").check().run()
    _ok(at)
    sharp = at.dataframe[0].value
    assert 0 < len(sharp) < len(special)
    assert sharp["septic_pollutant"].all()
    assert not sharp["listed_pollutants"].str.fullmatch("PCBs").any()  # PCBs alone: no
    at.checkbox(key="septic_pollutant").uncheck().run()
    at.multiselect(key="septic_listed_pollutants").set_value(["PCBs"]).run()
    _ok(at)
    pcbs = at.dataframe[0].value
    assert len(pcbs) and pcbs["listed_pollutants"].str.contains("PCBs").all()


def test_the_cleared_note_survives_the_rerun_of_the_map_moving(app_env: Path) -> None:
    """Changing the site moves the map to it, and st_folium's new bounds rerun the page:
    the note that the old answer was cleared stays until the site is screened again."""
    at = page("screening").run()
    at.text_input(key="screen_parcel_ids").set_value("107.12-2-11").run()
    at.number_input(key="screen_acres").set_value(2.0)
    at.button(key="screen_submit").click().run()
    assert {m.label for m in at.metric} >= {"Condition A"}
    at.text_input(key="screen_parcel_ids").set_value("102.15-2-9").run()
    note = "changed after the last screening"
    assert any(note in i.value for i in at.info)
    at.run()  # the rerun the map's move causes
    assert any(note in i.value for i in at.info)
    assert not at.metric
    at.number_input(key="screen_acres").set_value(1.0)  # the lot is 1.38 acres
    at.button(key="screen_submit").click().run()
    assert not any(note in i.value for i in at.info)
    assert {m.label for m in at.metric} >= {"Condition A"}


def test_a_feature_s_attributes_are_in_words_for_people(app_env: Path) -> None:
    at = page("map").run()
    at.text_input(key="map_search_query").set_value("CB-0168").run()
    _ok(at)
    table = at.dataframe[-1].value
    rows = dict(zip(table["attribute"], table["value"], strict=True))
    assert rows["Kind"] == "catch basin"
    assert rows["Rim elevation"] == "80.88"
    assert not {"kind", "src_layer", "rim_elev"} & set(rows), rows


def test_septic_and_candidate_tables_speak_words_and_keep_codes_in_downloads(
    app_env: Path,
) -> None:
    import json

    at = page("septic").run()
    _ok(at)
    table = at.dataframe[0]
    config = json.loads(table.proto.columns)
    labels = {k: v.get("label") for k, v in config.items()}
    assert labels["ms4_fraction"] == "Share draining to the MS4"
    assert labels["septic_source"] == "Septic known from"
    assert "percent" in json.dumps(config["ms4_fraction"])
    cells = table.value
    assert (cells["septic_source"] == "sewer attribute").any()
    assert not cells["method"].str.contains("_").any(), cells["method"].unique()
    csv = [b for b in at.get("download_button") if b.proto.label == "Download table (CSV)"]
    assert csv, "no CSV download"
