"""A 303(d) list CSV on the Data page (issue 28 item 12): the SMO uploads it (semicolon
separated, columns named otherwise), says which column holds what, and the validated
workspace reads it as its ``impairments``; a viewer cannot upload it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_app_town import write_town

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ms4map.app.upload import import_303d_csv, store_table_upload  # noqa: E402
from ms4map.core.errors import InputOpenError  # noqa: E402

TIMEOUT = 180
CSV = (
    b"Water ID;Water;What is wrong;Part;List Year\n"
    b"1999-0001;Mill Creek;Phosphorus;1;2018\n"
    b'1999-0002;Hudson River;"PCBs; Mercury";2b;2018\n'
)


def data_page(user: str | None = None) -> AppTest:
    lines = ["import streamlit as st", "from ms4map.app import run_page"]
    if user:
        lines.append(f"st.session_state['ms4map_auth'] = {{'user': {user!r}}}")
    lines.append("run_page('data')")
    return AppTest.from_string("\n".join(lines), default_timeout=TIMEOUT)


def _texts(at: AppTest) -> str:
    parts = [e.value for e in at.error] + [e.value for e in at.info]
    parts += [e.value for e in at.success] + [e.value for e in at.warning]
    return "\n".join(str(p) for p in parts).replace("\\", "")


def test_the_smo_uploads_a_303d_csv_and_names_its_columns(app_env: Path, tmp_path: Path):
    gpkg = write_town(tmp_path / "town")
    at = data_page().run()
    up = at.file_uploader(key="data_upload")
    up.upload("town.gpkg", gpkg.read_bytes(), "application/geopackage+sqlite3")
    up.upload("list.csv", CSV, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    # the columns are not the usual ones: said, with where to name them
    assert "Columns of the 303(d) list list.csv" in _texts(at)
    at.selectbox(key="data_303d_list.csv_wb_id").set_value("Water ID")
    at.selectbox(key="data_303d_list.csv_pollutant").set_value("What is wrong")
    at.selectbox(key="data_303d_list.csv_category").set_value("Part").run()
    assert not at.error, [e.value for e in at.error]
    assert "3 listing(s) of the 303(d) list read" in _texts(at)
    role = next(s for s in at.selectbox if s.label == "list.csv: impairments (303(d) list)")
    assert role.value == "impairments"  # guessed
    at.button(key="data_validate").click().run()
    assert not at.error, [e.value for e in at.error]
    at.button(key="data_use").click().run()
    chosen = at.session_state["ms4map_workspace"]
    from ms4map.app import state

    ws = state._open_workspace(state._key(chosen))
    assert any("-303d-" in spec for spec in chosen["layers"]["impairments"])
    imp = ws.layers["impairments"]
    ours = imp[imp["wb_id"].isin(["1999-0001", "1999-0002"])]
    assert sorted(ours["pollutant"]) == ["Mercury", "PCBs", "Phosphorus"]


def test_a_viewer_cannot_upload_a_303d_csv(app_env: Path, monkeypatch):
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    from ms4map.app import auth
    from ms4map.records import users

    auth.reset_rate_limit()
    users.add_user("jsmith", "smo", "smo password 1")
    users.add_user("guest", "viewer", "viewer password 1")
    at = data_page("guest").run()
    assert at.file_uploader(key="data_upload").disabled


def test_store_and_import_a_303d_csv(tmp_path: Path):
    p = store_table_upload("list.csv", CSV, data_dir=tmp_path)
    assert p.read_bytes() == CSV and tmp_path in p.parents
    spec, read = import_303d_csv(
        p, {"wb_id": "Water ID", "pollutant": "What is wrong", "category": "Part"}
    )
    assert spec.endswith("::impairments") and len(read.table) == 3
    with pytest.raises(InputOpenError, match="not a CSV"):
        store_table_upload("list.xlsx", b"PK\x03\x04", data_dir=tmp_path)
