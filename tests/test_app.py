"""AppTest for every page: opens without an exception, key widgets, a screening answer.

The pages run on the synthetic test town (``test_app_town``) through
``MS4MAP_WORKSPACE``; the workspace and pipeline are cached by the app
(``st.cache_resource``) so only the first page pays for the analysis.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from test_app_town import write_town

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

TIMEOUT = 120


@pytest.fixture(scope="module")
def town(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_town(tmp_path_factory.mktemp("apptown"))


@pytest.fixture()
def app_env(town: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    monkeypatch.setenv("MS4MAP_WORKSPACE", str(town))
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(data))
    return data


def page(name: str) -> AppTest:
    return AppTest.from_string(
        f"from ms4map.app import run_page\nrun_page({name!r})", default_timeout=TIMEOUT
    )


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [e.value for e in at.warning]
    return "\n".join(str(p) for p in parts)


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
    repo = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(repo / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.value == "Map" for t in at.title)


def test_map_search_selects_a_parcel_and_shows_its_path(app_env: Path) -> None:
    at = page("map").run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="map_search_query").set_value("P10-00").run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert "parcel p10-00" in " ".join(s.value for s in at.subheader).lower()
    assert "Downstream path" in text
    assert "Test Creek" in text


def test_screening_of_a_parcel_is_condition_a(app_env: Path) -> None:
    at = page("screening").run()
    at.text_input(key="screen_parcel_ids").set_value("P05-02").run()
    at.number_input(key="screen_acres").set_value(0.3)
    at.number_input(key="screen_plan").set_value(2.0)  # part of a 2-acre common plan
    at.selectbox(key="screen_type").set_value("commercial")
    at.button[-1].click()  # the form's submit button
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Condition A"] == "YES"
    assert metrics["Condition C"] == "YES"  # 2-acre plan, commercial
    assert metrics["Condition B"] == "no"
    assert "Test Creek" in _texts(at)
    assert at.get("download_button"), "no download buttons after a screening"


def test_screening_of_a_typed_polygon(app_env: Path) -> None:
    at = page("screening").run()
    at.radio(key="screen_mode").set_value("polygon").run()
    # corners of a lot square around parcel P08-01 (lat, lon)
    import geopandas as gpd
    from shapely.geometry import box

    g = gpd.GeoSeries([box(600325, 4760045, 600355, 4760075)], crs="EPSG:26918").to_crs(4326)
    xs, ys = g.iloc[0].exterior.coords.xy
    text = "\n".join(f"{y:.7f}, {x:.7f}" for x, y in list(zip(xs, ys, strict=True))[:-1])
    at.text_area(key="screen_vertices").set_value(text).run()
    at.number_input(key="screen_acres").set_value(0.2)
    at.button[-1].click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Condition A"] in ("YES", "no")  # a determination was made
    assert metrics["Condition B"] == "no"


def test_investigation_lists_candidate_sources(app_env: Path) -> None:
    at = page("investigation").run()
    assert at.selectbox(key="inv_outfall").value == "OF-1"
    df = at.dataframe[0].value
    assert len(df) > 0
    assert set(df["reason"].str.contains("septic|commercial").tolist()) == {True}


def test_inventory_counts_and_pdf(app_env: Path) -> None:
    at = page("inventory").run()
    df = at.dataframe[0].value
    assert df["outfall_id"].tolist() == ["OF-1"]
    assert int(df["structures_upstream"].iloc[0]) >= 6
    assert int(df["parcels_upstream"].iloc[0]) > 0
    at.button(key="inventory_make_pdf").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["inventory_pdf"][:4] == b"%PDF"


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
    if filename == "notes.json":  # stored fine; fails at validation with a message
        at.selectbox(key="data_role_0").set_value("parcels").run()
        at.button(key="data_validate").click().run()
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
