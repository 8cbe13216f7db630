"""A town with a storm network but no parcels (as the UKY campus network comes): the
pages that need parcels say so and how to add them, the rest still work, no traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyogrio
import pytest
from test_app_town import town_layers, write_town

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ms4map import open_workspace, run  # noqa: E402
from ms4map.core.errors import DataError  # noqa: E402
from ms4map.rules.septic import septic_flags  # noqa: E402


@pytest.fixture(scope="module")
def no_parcels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test town's network, outfall, creek, 303(d) list and DEM; no parcels layer."""
    folder = tmp_path_factory.mktemp("noparcels")
    write_town(folder)
    out = folder / "network.gpkg"
    for name, frame in town_layers().items():
        if name != "parcels":
            pyogrio.write_dataframe(frame, out, layer=name)
    shutil.copy(folder / "town_dem.tif", folder / "network_dem.tif")
    return out


def _page(name: str, gpkg: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("MS4MAP_WORKSPACE", str(gpkg))
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(data))
    script = f"from ms4map.app import run_page\nrun_page({name!r})"
    return AppTest.from_string(script, default_timeout=180).run()


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("septic", "Septic flags need the town's parcels"),
        ("investigation", "Candidate sources and notices of violation need the town's parcels"),
    ],
)
def test_pages_that_need_parcels_say_so_and_how_to_add_them(
    no_parcels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, what: str
) -> None:
    at = _page(name, no_parcels, tmp_path / "data", monkeypatch)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    notes = [i.value for i in at.info if what in i.value]
    assert notes, [i.value for i in at.info]
    assert "**Data** page" in notes[0] and "conveyances" in notes[0]
    if name == "investigation":  # the outfall's own records stay: OF-1 is still chosen
        assert at.selectbox(key="inv_outfall").value == "OF-1"
        assert not at.dataframe  # no candidate table for a town without parcels


def test_inventory_without_parcels_lists_the_outfall_without_septic_counts(
    no_parcels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _page("inventory", no_parcels, tmp_path / "data", monkeypatch)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert table["outfall_id"].tolist() == ["OF-1"]


def test_septic_flags_without_parcels_name_the_layer_and_the_fix(no_parcels: Path) -> None:
    ws = open_workspace(no_parcels)
    result = run(ws)
    with pytest.raises(DataError, match="needs the parcels layer.*Fix: add the town's parcels"):
        septic_flags(result)


@pytest.mark.parametrize(
    "cli",
    [
        "Layer 'parcels' has no column 'parcel_id'. Fix: map it with "
        "--field parcels.parcel_id=COLUMN.",
        "no 303(d) list: add the `impairments` layer or pass `--impairments CSV`.",
        "Give every feature an id in 'struct_id' (or map the id column with --field).",
    ],
)
def test_app_messages_name_the_data_page_not_command_line_options(cli: str) -> None:
    from ms4map.app.state import app_fixes

    said = app_fixes(cli)
    assert "--" not in said and "Data page" in said, said


def test_map_without_a_303d_list_says_how_to_load_it_in_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpkg = tmp_path / "no303d.gpkg"
    write_town(tmp_path)
    for name, frame in town_layers().items():
        if name != "impairments":
            pyogrio.write_dataframe(frame, gpkg, layer=name)
    shutil.copy(tmp_path / "town_dem.tif", tmp_path / "no303d_dem.tif")
    monkeypatch.setenv("MS4MAP_WORKSPACE", str(gpkg))
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('map')", default_timeout=180
    ).run()
    at.sidebar.radio(key="map_parcel_colour").set_value("condition_a").run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(w.value for w in at.sidebar.warning)
    assert "303(d) list CSV on the Data page" in said, said
    assert "--impairments" not in said
