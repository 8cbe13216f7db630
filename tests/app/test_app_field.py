"""AppTest: the "Field trips" part of the inventory page (issue 32 item 4), SMO only."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")
from test_app_records import (  # noqa: E402
    SMO,
    SMO_PW,
    VIEWER,
    VIEWER_PW,
    _button,
    _login,
    _texts,
    app_env,  # noqa: F401 - the fixture
    page,
    with_users,  # noqa: F401 - the fixture
)

pytestmark = pytest.mark.slow


def test_smo_makes_a_package_and_imports_it_with_a_report(with_users: Path) -> None:  # noqa: F811
    at = _login(page("inventory").run(), SMO, SMO_PW)
    assert not at.exception, at.exception
    at.multiselect(key="field_outfalls").select("OF-002").select("OF-009").run()
    _button(at, "Make the field package").click().run()
    assert not at.exception, at.exception
    made = at.session_state["field_made"]
    pkg = Path(made["path"])
    assert pkg.is_relative_to(with_users) and made["outfalls"] == 2
    assert "Field package made: 2 outfall(s)" in _texts(at)
    with sqlite3.connect(pkg) as con:
        for oid, odor in (("OF-002", 1), ("OF-009", 9)):  # the second one is refused
            con.execute(
                "INSERT INTO inspections (device_uuid, device_id, outfall_id, date, odor) "
                "VALUES (?, 'phone', ?, '2025-06-02', ?)",
                (str(uuid.uuid4()), oid, odor),
            )
    at.file_uploader(key="field_upload").upload(
        "trip.gpkg", pkg.read_bytes(), "application/geopackage+sqlite3"
    ).run()
    _button(at, "Import the field package").click().run()
    assert not at.exception, at.exception
    text = _texts(at)
    assert "Imported: 1 inspection(s)" in text and "1 refused" in text
    refused = at.dataframe[-1].value  # the refused rows, last on the page
    assert refused["Field"].tolist() == ["odor"] and refused["Outfall"].tolist() == ["OF-009"]
    _button(at, "Import the field package").click().run()  # again: nothing more
    assert "Imported: 0 inspection(s)" in _texts(at)
    assert "1 row(s) were imported before" in _texts(at)


def test_a_viewer_sees_no_field_trips(with_users: Path) -> None:  # noqa: F811
    at = _login(page("inventory").run(), VIEWER, VIEWER_PW)
    assert not at.exception, at.exception
    assert _button(at, "Make the field package") is None
    assert "Field trips" not in [h.value for h in at.subheader]
