"""The app's results download (issue 16): the same files as ``ms4map export``."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pyogrio
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ms4map.io import styles  # noqa: E402

TIMEOUT = 180


def _downloads(at: AppTest) -> list:
    return [e for e in at.get("download_button") if "septic_export" in str(e.proto.id)]


def test_septic_page_downloads_the_layer_in_each_format(app_env: Path, tmp_path: Path) -> None:
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('septic')", default_timeout=TIMEOUT
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    n_rows = len(at.dataframe[0].value)
    assert at.selectbox(key="septic_export_format").value.endswith("(.gpkg)")
    assert not _downloads(at)  # nothing is built before it is asked for
    at.button(key="septic_export_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    suffix, _token, name, data, _notes = at.session_state["septic_export_file"]
    assert (suffix, name) == (".gpkg", "septic.gpkg")
    assert len(_downloads(at)) == 1
    gpkg = tmp_path / name
    gpkg.write_bytes(data)
    assert pyogrio.read_info(gpkg, layer="septic")["features"] == n_rows
    (row,) = styles.read_layer_styles(gpkg)  # styled as ms4map export styles it
    assert row["f_table_name"] == "septic" and row["useAsDefault"] == 1
    assert "septic violation" in row["styleQML"]

    # another format: the GeoPackage is not offered under it; prepared, the geodatabase
    at.selectbox(key="septic_export_format").select(
        "File Geodatabase for ArcGIS, unstyled (.gdb, zipped)"
    ).run()
    assert not _downloads(at)
    at.button(key="septic_export_prepare").click().run()
    suffix, _token, name, data, notes = at.session_state["septic_export_file"]
    assert (suffix, name) == (".gdb", "septic.gdb.zip")
    assert any("no QGIS style" in n for n in notes)
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path / "x")
    gdb = tmp_path / "x" / "septic.gdb"
    assert pyogrio.read_info(gdb, layer="septic")["features"] == n_rows
    assert "Polygon" in str(dict(pyogrio.list_layers(gdb))["septic"])

    # other rows on screen: the file prepared for the old rows is not offered
    at.checkbox(key="septic_all").check().run()  # adds the parcels not tributary
    assert not at.exception
    assert len(at.dataframe[0].value) > n_rows
    assert not _downloads(at)


def test_inventory_page_downloads_the_sewersheds(app_env: Path, tmp_path: Path) -> None:
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('inventory')", default_timeout=TIMEOUT
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="inventory_export_format").select("Shapefiles + fields.csv (.zip)").run()
    at.button(key="inventory_export_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    suffix, _token, name, data, _notes = at.session_state["inventory_export_file"]
    assert (suffix, name) == (".zip", "sewersheds.zip")
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path / "x")
    back = pyogrio.read_dataframe(tmp_path / "x" / "sewersheds.shp")
    assert len(back) > 0 and set(back.geometry.geom_type) <= {"Polygon", "MultiPolygon"}
    assert (tmp_path / "x" / "sewersheds.qml").exists()
    mapping = (tmp_path / "x" / "fields.csv").read_text()
    assert "receiving_,receiving_water" in mapping


def test_inventory_page_offers_the_swmm_model(app_env: Path, tmp_path: Path) -> None:
    """The outfall inventory page builds the EPA SWMM model (issue 33) with the storm set
    on the page; a model made for another storm is not offered."""
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('inventory')", default_timeout=TIMEOUT
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    model_downloads = lambda: [  # noqa: E731
        e for e in at.get("download_button") if "inventory_model" in str(e.proto.id)
    ]
    assert not model_downloads()  # nothing is built before it is asked for
    at.number_input(key="inventory_model_storm").set_value(50.8).run()
    at.button(key="inventory_model_prepare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    _token, data, _notes = at.session_state["inventory_model_file"]
    assert len(model_downloads()) == 1
    text = data.decode()
    assert text.startswith("[TITLE]") and "NRCS 24-hour Type II, 50.8 mm" in text
    for section in ("[JUNCTIONS]", "[OUTFALLS]", "[CONDUITS]", "[SUBCATCHMENTS]", "[POLYGONS]"):
        assert section in text
    at.number_input(key="inventory_model_storm").set_value(25.4).run()
    assert not model_downloads()  # the file was prepared for the 50.8 mm storm
