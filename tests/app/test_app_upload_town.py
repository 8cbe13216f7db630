"""Uploaded towns (issue 10, part 4): the Data page takes what a town has.

Files are checked as they arrive (a text file renamed .gpkg, a GeoJSON whose features
have no geometry) with the whole message shown; a DEM GeoTIFF can be uploaded (so an
uploaded town is not stuck on the nearest-inlet fallback); a layer without a CRS (a
Shapefile without .prj) can be given one; uploads are listed with where they are and
can be removed; the first analysis shows its progress.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import geopandas as gpd
import pytest
from test_app_town import CRS, town_layers, write_town

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ms4map.app.upload import (  # noqa: E402
    check_layer_file,
    list_uploads,
    remove_upload,
    store_upload,
)
from ms4map.core.errors import InputOpenError  # noqa: E402

TIMEOUT = 180
NULL_GEOMETRY = (
    b'{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"parcel_id":"A"},'
    b'"geometry":null},{"type":"Feature","properties":{"parcel_id":"B"},"geometry":null}]}'
)


def _shown(text: str) -> str:
    """What markdown shows of an escaped message (``town\\_dem.tif`` -> ``town_dem.tif``)."""
    return text.replace("\\", "")


def data_page() -> AppTest:
    return AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('data')", default_timeout=TIMEOUT
    )


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _shapefile_zip(tmp: Path, frame: gpd.GeoDataFrame, name: str, *, prj: bool) -> bytes:
    folder = tmp / f"shp_{name}"
    folder.mkdir()
    frame.to_file(folder / f"{name}.shp")
    if not prj:
        (folder / f"{name}.prj").unlink()
    return _zip({p.name: p.read_bytes() for p in folder.iterdir()})


# -- checks when files arrive ----------------------------------------------------------
def test_a_text_file_renamed_gpkg_is_refused_when_it_arrives(tmp_path: Path) -> None:
    with pytest.raises(InputOpenError, match="is not a GeoPackage: it holds text") as err:
        store_upload("parcels.gpkg", b"PARCEL,OWNER\n1,Smith\n", data_dir=tmp_path / "d")
    assert "Fix:" in str(err.value)
    assert not list((tmp_path / "d" / "uploads").iterdir())  # nothing kept


def test_a_geojson_without_geometries_is_refused_when_it_arrives(tmp_path: Path) -> None:
    with pytest.raises(InputOpenError, match="has no geometry") as err:
        store_upload("parcels.geojson", NULL_GEOMETRY, data_dir=tmp_path / "d")
    assert "every one of the 2 feature(s)" in str(err.value)


def test_some_null_geometries_and_no_crs_are_notes_not_refusals(tmp_path: Path) -> None:
    frame = town_layers()["parcels"].iloc[:3].copy()
    frame.loc[frame.index[0], "geometry"] = None
    f = tmp_path / "lots.gpkg"
    frame.to_file(f, layer="lots")
    problem, note = check_layer_file(f)
    assert problem is None and "1 of the 3 feature(s)" in note
    up = store_upload("nocrs.zip", _shapefile_zip(tmp_path, frame, "lots", prj=False),
                      data_dir=tmp_path / "d")  # fmt: skip
    assert "has no CRS" in up.notes["lots.shp"] and "choose its CRS" in up.notes["lots.shp"]


def test_the_data_page_shows_the_whole_message_of_a_bad_file(app_env: Path) -> None:
    at = data_page().run()
    at.file_uploader(key="data_upload").upload("roads.gpkg", b"just text\n", "application/x").run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "roads.gpkg" in errors and "is not a GeoPackage" in errors
    assert errors.rstrip().endswith("GeoJSON.")  # the whole message, to its last word
    with pytest.raises(KeyError):
        at.selectbox(key="data_role_0")  # nothing offered as a layer


def test_gdal_words_with_angle_brackets_are_shown_not_swallowed() -> None:
    from ms4map.app.state import plain

    text = "prefixing the file path with '<DRIVER>:', e.g. 'CSV:path'; add `tmdl_watersheds`"
    shown = plain(text)
    assert "\\<DRIVER\\>" in shown  # markdown shows <DRIVER>, not an empty HTML tag
    assert "`tmdl_watersheds`" in shown  # code spans untouched


# -- DEM and CRS -------------------------------------------------------------------------
def test_an_uploaded_dem_is_used_instead_of_the_nearest_inlet(app_env: Path, tmp_path: Path):
    gpkg = write_town(tmp_path / "town")
    at = data_page().run()
    at.file_uploader(key="data_upload").upload(
        "town.gpkg", gpkg.read_bytes(), "application/geopackage+sqlite3"
    ).upload("town_dem.tif", (gpkg.parent / "town_dem.tif").read_bytes(), "image/tiff").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert any("DEM 'town_dem.tif'" in _shown(i.value) and "EPSG:26918" in i.value for i in at.info)
    dem = at.selectbox(key="data_dem")
    assert dem.value.endswith("town_dem.tif")  # chosen by default once uploaded
    at.button(key="data_validate").click().run()
    assert not at.error, [e.value for e in at.error]
    assert any("DEM 300 x 180 cells" in s.value for s in at.success), [s.value for s in at.success]
    at.button(key="data_use").click().run()
    chosen = at.session_state["ms4map_workspace"]
    assert chosen["dem"].endswith("town_dem.tif") and str(app_env) in chosen["dem"]
    m = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('map')", default_timeout=TIMEOUT
    )
    m.session_state["ms4map_workspace"] = chosen
    m.run()
    assert not m.exception, [e.value for e in m.exception]
    from ms4map.app import state

    ws = state._open_workspace(state._key(chosen))
    result = state._RESULTS[ws.fingerprint()]
    assert result.overland is not None  # routed over the uploaded DEM
    assert set(result.drainage["method"]) - {"nearest_inlet"}


def test_a_shapefile_without_prj_gets_the_crs_chosen_on_the_page(app_env: Path, tmp_path: Path):
    frame = town_layers()["parcels"].to_crs(CRS)
    payload = _shapefile_zip(tmp_path, frame, "parcels", prj=False)
    user_copy = payload  # what the user has: it must stay as it is
    at = data_page().run()
    at.file_uploader(key="data_upload").upload("parcels.zip", payload, "application/zip").run()
    assert any("has no CRS" in i.value for i in at.info)
    at.selectbox(key="data_role_0").set_value("parcels").run()
    at.button(key="data_validate").click().run()
    assert at.error and "crs" in " ".join(e.value for e in at.error).lower()  # not yet
    at.selectbox(key="data_crs_0").set_value("EPSG:26918").run()
    at.button(key="data_validate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert any("parcels (72)" in s.value for s in at.success)
    at.button(key="data_use").click().run()
    (spec,) = at.session_state["ms4map_workspace"]["layers"]["parcels"]
    import pyogrio

    assert pyogrio.read_info(spec)["crs"] == "EPSG:26918"
    assert str(app_env / "uploads") in spec  # a copy in the upload's own folder
    shp = next((app_env / "uploads").rglob("parcels.shp"))
    assert not shp.with_suffix(".prj").exists()  # the uploaded file itself is as it came
    assert user_copy == payload


def test_a_typed_epsg_code_is_checked(app_env: Path) -> None:
    at = data_page().run()
    at.file_uploader(key="data_upload").upload(
        "parcels.geojson", town_layers()["parcels"].to_crs(4326).to_json().encode(), "x"
    ).run()
    at.selectbox(key="data_working_crs").set_value("other: type an EPSG code").run()
    at.text_input(key="data_working_crs_code").set_value("4326").run()
    assert any("not projected" in w.value for w in at.warning)
    at.text_input(key="data_working_crs_code").set_value("26918").run()
    assert any("EPSG:26918: NAD83 / UTM zone 18N" in c.value for c in at.caption)


# -- stored uploads -----------------------------------------------------------------------
def test_uploads_are_listed_reused_and_removable(app_env: Path, tmp_path: Path) -> None:
    geo = town_layers()["parcels"].to_crs(4326).to_json().encode()
    a = store_upload("lots.geojson", geo)
    again = store_upload("lots.geojson", geo)
    assert again.folder == a.folder and again.reused  # the same file: one copy
    store_upload("creek.geojson", town_layers()["waterbodies"].to_crs(4326).to_json().encode())
    assert len(list_uploads()) == 2
    at = data_page().run()
    text = _shown(" ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption))
    assert "Stored uploads (2)" in [h.value for h in at.header]
    assert str(app_env / "uploads") in text and "lots.geojson" in text
    at.button(key=f"data_remove_{a.folder.name}").click().run()
    assert not at.exception
    assert not a.folder.exists()
    assert [u.name for u in list_uploads()] == ["creek.geojson"]
    assert any("Removed lots.geojson" in _shown(s.value) for s in at.success)
    with pytest.raises(InputOpenError, match="not an upload"):
        remove_upload(tmp_path)  # only folders of <data>/uploads


def test_an_upload_in_use_cannot_be_removed(app_env: Path) -> None:
    up = store_upload("lots.geojson", town_layers()["parcels"].to_crs(4326).to_json().encode())
    at = data_page()
    at.session_state["ms4map_workspace"] = {
        "path": None,
        "layers": {"parcels": [str(up.layers[0])]},
        "field_map": None,
        "dem": None,
        "crs": None,
        "label": "uploaded layers",
    }
    at.run()
    assert at.button(key=f"data_remove_{up.folder.name}").disabled
    assert up.folder.exists()


# -- progress -----------------------------------------------------------------------------
def test_the_first_analysis_shows_its_steps_and_times(app_env: Path, tmp_path: Path) -> None:
    from ms4map.app import state

    state._RESULTS.clear()
    gpkg = write_town(tmp_path / "town2", nx=10)
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('map')", default_timeout=TIMEOUT
    )
    at.session_state["ms4map_workspace"] = {
        "path": str(gpkg),
        "layers": None,
        "field_map": None,
        "dem": None,
        "crs": None,
        "label": "town2",
    }
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (box,) = [s for s in at.status if "Drainage traced in" in s.label]
    steps = " ".join(m.value for m in box.markdown)
    assert "network: building the storm network" in steps
    assert "overland:" in steps and " s " in steps  # each step with its seconds
    assert "overland" in box.label  # the step times (what was slow)
    at.run()  # the next run reuses the result: no second analysis
    assert not [s for s in at.status if "Drainage traced" in s.label]


def test_reports_give_the_app_s_fix_not_the_command_line_s(app_env: Path, tmp_path: Path):
    frame = town_layers()["parcels"].to_crs(CRS)
    at = data_page().run()
    at.file_uploader(key="data_upload").upload(
        "parcels.zip", _shapefile_zip(tmp_path, frame, "parcels", prj=False), "application/zip"
    ).run()
    at.selectbox(key="data_role_0").set_value("parcels").run()
    at.button(key="data_validate").click().run()
    text = " ".join(e.value for e in at.error) + " ".join(m.value for m in at.markdown)
    assert "Choose its CRS on the Data page" in text and "then re-run" not in text
    at.selectbox(key="data_crs_0").set_value("EPSG:26918").run()
    at.button(key="data_validate").click().run()
    report = " ".join(m.value for m in at.markdown)
    assert "Upload the town's DEM GeoTIFF on the Data page" in report
    assert "Pass --dem FILE" not in report


def _library_strings() -> list[str]:
    """Every string literal of the library outside the app (adjacent literals joined as
    Python joins them; an f-string's fixed parts with a NUL where a value goes)."""
    import ast

    import ms4map

    root = Path(ms4map.__file__).parent
    texts: list[str] = []
    for f in root.rglob("*.py"):
        if "app" in f.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
            elif isinstance(node, ast.JoinedStr):
                texts.append(
                    "".join(v.value if isinstance(v, ast.Constant) else "\0" for v in node.values)
                )
    return texts


def test_every_app_fix_rewrites_a_message_the_library_still_gives():
    """The app rewrites the command line's fixes by their exact words: a library message
    reworded would silently keep its command-line fix in the app."""
    from ms4map.app.state import _APP_FIXES, app_fixes

    texts = _library_strings()
    for cli, app in _APP_FIXES:
        assert any(cli in t for t in texts), f"no library message says {cli!r} any more"
        assert app_fixes(f"Layer 'x': {cli}") == f"Layer 'x': {app}"
