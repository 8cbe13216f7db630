"""AppTest for every page: opens without an exception, key widgets, a screening answer.

The pages run on the bundled demo town (Alder Falls, ``data/layers/demo.gpkg``), the
workspace the app opens when none is given; the workspace and the pipeline are cached
by the app (``st.cache_resource``) so only the first page pays for the analysis.
Scenario parcels are those of ``ms4map.demo.SCENARIO_PARCELS``.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

TIMEOUT = 120


def _shown(text: str) -> str:
    """What a reader sees of a Markdown text: the app escapes values from the data."""
    return re.sub(r"\\(.)", r"\1", str(text))


PLAZA = "107.12-2-11"  # scenario (b): 2-acre commercial plaza draining to Kenyon River outfalls
TMDL_LOT = "102.15-2-9"  # scenario (f): in the Tamarack Lake phosphorus TMDL watershed
FAILED_SEPTIC = "106.12-2-14"  # scenario (g): septic failure upstream of an Alder Kill outfall


def page(name: str) -> AppTest:
    return AppTest.from_string(
        f"from ms4map.app import run_page\nrun_page({name!r})", default_timeout=TIMEOUT
    )


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [e.value for e in at.warning]
    return _shown("\n".join(str(p) for p in parts))


@pytest.mark.parametrize(
    ("name", "widget_keys"),
    [
        (
            "map",
            ["map_parcel_colour", "map_basemap", "map_hillshade", "map_layers", "map_search_query"],
        ),
        ("screening", ["screen_mode", "screen_parcel_ids", "screen_acres", "screen_type"]),
        ("investigation", ["inv_outfall"]),
        ("inventory", ["inventory_make_pdf"]),
        ("septic", ["septic_special", "septic_setback", "septic_waters"]),
        ("data", ["data_path", "data_open", "data_upload"]),
    ],
)
def test_page_opens_with_its_widgets(app_env: Path, name: str, widget_keys: list[str]) -> None:
    at = page(name).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    for key in widget_keys:
        assert _has_widget(at, key), f"page {name}: widget {key!r} missing"


def _has_widget(at: AppTest, key: str) -> bool:
    for kind in (
        "text_input",
        "selectbox",
        "multiselect",
        "radio",
        "checkbox",
        "number_input",
        "button",
        "text_area",
        "file_uploader",
    ):
        try:
            getattr(at, kind)(key=key)
            return True
        except KeyError:
            continue
    return False


def test_whole_app_opens_on_the_map_page(app_env: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    at = AppTest.from_file(str(repo / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.value == "Map" for t in at.title)


def test_map_search_selects_a_parcel_and_shows_its_path(app_env: Path) -> None:
    at = page("map").run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="map_search_query").set_value(PLAZA).run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert f"parcel {PLAZA}" in _shown(" ".join(s.value for s in at.subheader)).lower()
    assert "Downstream path" in text
    assert "Kenyon River" in text


def test_screening_of_the_plaza_is_condition_a_and_c(app_env: Path) -> None:
    at = page("screening").run()
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    at.number_input(key="screen_acres").set_value(2.0)
    at.button[-1].click()  # the form's submit button; project type guessed (452: commercial)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Condition A"] == "YES"  # Kenyon River, 303(d) for PCBs
    assert metrics["Condition B"] == "no"
    assert metrics["Condition C"] == "YES"  # 2 acres, commercial
    assert metrics["SWPPP required"] == "YES"
    assert "Kenyon River" in _texts(at)
    labels = {b.label for b in at.get("download_button")}
    assert {"Download JSON", "Download report (HTML)", "Download report (PDF)"} <= labels


def test_screening_in_the_tmdl_watershed_is_condition_a(app_env: Path) -> None:
    at = page("screening").run()
    at.text_input(key="screen_parcel_ids").set_value(TMDL_LOT).run()
    at.number_input(key="screen_acres").set_value(0.5)
    at.number_input(key="screen_plan").set_value(3.0)
    at.selectbox(key="screen_type").set_value("residential")
    at.button[-1].click()
    at.run()
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Condition A"] == "YES"
    assert "TMDL" in _texts(at) or "Tamarack" in _texts(at)


def test_screening_of_a_typed_polygon(app_env: Path, demo_result) -> None:
    ws, _ = demo_result
    parcels = ws.layers["parcels"]
    plaza = parcels[parcels["parcel_id"] == PLAZA].geometry.iloc[0]
    c = plaza.representative_point()
    import geopandas as gpd
    from shapely.geometry import box

    square = box(c.x - 20, c.y - 20, c.x + 20, c.y + 20)  # 0.4 acres inside the plaza
    g = gpd.GeoSeries([square], crs=ws.crs).to_crs(4326).iloc[0]
    xs, ys = g.exterior.coords.xy
    text = "\n".join(f"{y:.7f}, {x:.7f}" for x, y in list(zip(xs, ys, strict=True))[:-1])
    at = page("screening").run()
    at.radio(key="screen_mode").set_value("polygon").run()
    at.text_area(key="screen_vertices").set_value(text).run()
    at.number_input(key="screen_acres").set_value(0.3)
    at.number_input(key="screen_plan").set_value(1.5)
    at.selectbox(key="screen_type").set_value("commercial")
    at.button[-1].click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Condition A"] == "YES"
    assert metrics["Condition C"] == "YES"


def test_investigation_lists_candidate_sources(app_env: Path, demo_result) -> None:
    ws, result = demo_result
    d = result.drainage
    outfall = d[d["parcel_id"] == FAILED_SEPTIC].sort_values("fraction")["outfall_id"].iloc[-1]
    at = page("investigation").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="inv_outfall").set_value(outfall).run()
    assert not at.exception, [e.value for e in at.exception]
    df = at.dataframe[0].value
    row = df[df["parcel_id"] == FAILED_SEPTIC]
    assert len(row) == 1
    assert int(row["priority"].iloc[0]) == 1  # a recorded septic failure comes first
    assert "septic failure" in row["reason"].iloc[0]
    assert df["priority"].is_monotonic_increasing
    assert at.get("download_button")


def test_inventory_counts_and_pdf(app_env: Path) -> None:
    at = page("inventory").run()
    df = at.dataframe[0].value
    assert len(df) == 24 and df["outfall_id"].is_unique
    assert set(df["receiving_water"]) >= {"Alder Kill", "Kenyon River"}
    assert df["pwl_id"].notna().all()
    assert int(df["structures_upstream"].sum()) > 500
    assert int(df["parcels_upstream"].sum()) > 100
    at.button(key="inventory_make_pdf").click().run()
    assert not at.exception, [e.value for e in at.exception]
    token, pdf = at.session_state["inventory_pdf"]  # made for the statuses shown (token)
    assert pdf[:4] == b"%PDF" and token


def test_septic_page_filters(app_env: Path) -> None:
    at = page("septic").run()
    assert not at.exception
    n_all = len(at.dataframe[0].value)
    at.checkbox(key="septic_special").check().run()
    assert not at.exception
    assert len(at.dataframe[0].value) <= n_all


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("filename", "payload", "message"),
    [
        ("notes.json", b'{"hello": "world"}', "cannot"),
        ("evil.zip", None, "unsafe"),
        ("table.zip", None, "no spatial layer"),
    ],
)
def test_bad_uploads_give_a_clear_message(
    app_env: Path, tmp_path: Path, filename: str, payload: bytes | None, message: str
) -> None:
    if filename == "evil.zip":
        payload = _zip({"../../escape.geojson": b"{}"})
    elif filename == "table.zip":
        payload = _zip({"a.csv": b"x,y\n1,2\n"})
    at = page("data").run()
    at.file_uploader(key="data_upload").upload(filename, payload, "application/octet-stream").run()
    # every one is refused as it arrives (notes.json: GDAL cannot read it as a layer)
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error).lower()
    assert message in errors, errors
    assert not (tmp_path.parent / "escape.geojson").exists()
    assert not list(tmp_path.rglob("escape.geojson"))


def test_layer_without_crs_is_refused_with_a_message(app_env: Path, tmp_path: Path) -> None:
    geojson = (
        b'{"type":"FeatureCollection","crs":null,"features":[{"type":"Feature","properties":'
        b'{"parcel_id":"A"},"geometry":{"type":"Polygon","coordinates":[[[600000,4760000],'
        b"[600050,4760000],[600050,4760050],[600000,4760000]]]}}]}"
    )
    at = page("data").run()
    at.file_uploader(key="data_upload").upload("parcels.geojson", geojson, "application/json").run()
    at.selectbox(key="data_role_0").set_value("parcels").run()
    at.button(key="data_validate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    text = (" ".join(e.value for e in at.error) + _texts(at)).lower()
    assert "crs" in text


def test_upload_validate_and_use_a_layer(app_env: Path) -> None:
    import geopandas as gpd
    from shapely.geometry import box

    frame = gpd.GeoDataFrame(
        {"PRINT_KEY": ["1.-1-1", "1.-1-2"], "SEWER": ["septic", "public"]},
        geometry=[box(600000, 4760000, 600040, 4760040), box(600040, 4760000, 600080, 4760040)],
        crs="EPSG:26918",
    ).to_crs(4326)
    payload = _zip({"town/lots.geojson": frame.to_json().encode()})
    at = page("data").run()
    at.file_uploader(key="data_upload").upload("lots.zip", payload, "application/zip").run()
    at.selectbox(key="data_role_0").set_value("parcels").run()
    at.selectbox(key="data_field_0_parcel_id").set_value("PRINT_KEY").run()
    at.button(key="data_validate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert any("Opened" in s.value for s in at.success)
    at.button(key="data_use").click().run()
    chosen = at.session_state["ms4map_workspace"]
    assert chosen["layers"] == {"parcels": [chosen["layers"]["parcels"][0]]}
    assert chosen["field_map"] == {"parcels": {"parcel_id": "PRINT_KEY"}}
    assert str(app_env) in chosen["layers"]["parcels"][0]  # stored in the app's data folder


# -- issue 29 item 9: typed polygons that cannot be a site ------------------------------------
def _typed(app_env: Path, text: str):
    at = page("screening").run()
    at.radio(key="screen_mode").set_value("polygon").run()
    at.text_area(key="screen_vertices").set_value(text).run()
    at.number_input(key="screen_acres").set_value(1.0)
    at.button[-1].click()
    return at.run()


def test_a_nan_corner_is_named_not_a_traceback(app_env: Path, demo_result) -> None:
    """'nan, nan' showed a viewer a full server traceback with install paths."""
    at = _typed(app_env, "43.31, -73.64\nnan, nan\n43.32, -73.65")
    assert not at.exception, [e.value for e in at.exception]
    said = [w.value for w in at.warning]
    assert any("line 2 ('nan, nan'): not a latitude" in w for w in said), said
    assert not at.metric  # no determination for a site nobody typed


def test_a_zig_zag_outline_is_refused_not_repaired_into_slivers(app_env: Path, demo_result) -> None:
    """A 60-corner zig-zag was 'repaired' by buffer(0) into 29 slivers and screened
    (300 corners took 118 s); now the outline crossing itself is said, with the fix."""
    lines = [f"{43.31 + (0.002 if i % 2 else 0)}, {-73.65 + 0.0002 * i}" for i in range(60)]
    at = _typed(app_env, "\n".join(lines))
    assert not at.exception, [e.value for e in at.exception]
    assert any("outline crosses itself" in w.value for w in at.warning)
    assert not at.metric


def test_too_many_corners_are_refused_with_the_limit(app_env: Path, demo_result) -> None:
    from ms4map.app.pages.screening import MAX_CORNERS

    lines = [f"{43.31 + 1e-5 * i}, {-73.65}" for i in range(MAX_CORNERS + 1)]
    at = _typed(app_env, "\n".join(lines))
    assert any(f"more than {MAX_CORNERS}" in w.value for w in at.warning)
    assert not at.metric


def test_an_unforeseen_error_is_worded_and_its_traceback_logged(
    app_env: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Tracebacks (with the server's paths) go to the server's log, never the page."""
    from streamlit.testing.v1 import AppTest

    script = (
        "from ms4map.app import _page_module, run_page\n"
        "import ms4map.app.pages.septic_page as m\n"
        "real = m.render\n"
        "m.render = lambda: 1 / 0\n"
        "try:\n"
        "    run_page('septic')\n"
        "finally:\n"
        "    m.render = real\n"
    )
    at = AppTest.from_string(script, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(e.value for e in at.error)
    assert "ZeroDivisionError: division by zero" in said and "log of the server" in said
    assert "site-packages" not in said and "Traceback" not in said
    assert any("Traceback" in r.exc_text for r in caplog.records if r.exc_text)


def test_the_browser_gets_no_error_details() -> None:
    import tomllib

    from ms4map.cli.app import app_command

    cmd = app_command(port=8765, headless=True)
    assert cmd[cmd.index("--client.showErrorDetails") + 1] == "none"
    config = tomllib.loads((Path(__file__).parents[2] / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"


def test_a_screening_that_runs_too_long_is_said_and_left(
    app_env: Path, demo_result, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29 item 9: screening is time-boxed (a 1,000-corner zig-zag ran 400 s)."""
    import time

    from ms4map.app.pages import screening

    monkeypatch.setattr(screening, "SCREEN_SECONDS", 0.5)
    real = screening.conditions.evaluate_site

    def slow(*a, **kw):
        time.sleep(2)
        return real(*a, **kw)

    monkeypatch.setattr(screening.conditions, "evaluate_site", slow)
    at = page("screening").run()
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    at.number_input(key="screen_acres").set_value(1.0)
    at.button[-1].click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(e.value for e in at.error)
    assert "took more than 0 s" in said or "took more than 1 s" in said, said
    assert not at.metric
