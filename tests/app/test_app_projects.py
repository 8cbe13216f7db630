"""AppTest: the Projects page (issue 31): the SMO records steps and construction, a viewer reads.

The app runs on the demo town; its records go to ``MS4MAP_DATA_DIR/records/``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")
from streamlit.testing.v1 import AppTest  # noqa: E402
from test_app_records import SMO, SMO_PW, VIEWER, VIEWER_PW, _button, _login, _texts  # noqa: E402
from test_records_projects import determination  # noqa: E402

import ms4map  # noqa: E402
from ms4map.records import construction as C  # noqa: E402
from ms4map.records import open_records, users  # noqa: E402
from ms4map.records import projects as P  # noqa: E402

TIMEOUT = 180


@pytest.fixture()
def with_users(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.delenv("MS4MAP_RECORDS", raising=False)
    from ms4map.app import auth

    auth.reset_rate_limit()
    users.add_user(SMO, "smo", SMO_PW)
    users.add_user(VIEWER, "viewer", VIEWER_PW)
    return app_env


def _records(data: Path, user: str = "reader", role: str = "viewer"):
    return open_records(
        ms4map.datasets.get_path("alder_falls"),
        user=user,
        role=role,
        records=data / "records" / "demo.records.gpkg",
    )


def _project(data: Path) -> int:
    """A project saved on the demo town by the SMO, its SWPPP submitted."""
    (data / "records").mkdir(parents=True, exist_ok=True)
    smo = _records(data, SMO, "smo")
    ws = Path(ms4map.datasets.get_path("alder_falls"))
    pid = P.save_project(smo, determination(ws), date="2026-03-02")
    P.advance_project(smo, pid, "swppp_submitted", "2026-03-04")
    return pid


def page() -> AppTest:
    return AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('projects')", default_timeout=TIMEOUT
    )


def test_smo_advances_and_records_construction(with_users: Path) -> None:
    pid = _project(with_users)
    at = _login(page().run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert "SWPPP submitted since 2026-03-04" in text and "Next step:** SWPPP approved" in text
    # the approval needs who approved it: refused, named, nothing written
    at = _button(at, "Record the step").click().run()
    assert "'approved_by'" in _texts(at)
    assert P.project(_records(with_users), pid)["status"] == "swppp_submitted"
    at.text_input(key="projects_step_by").set_value("Planning Board")
    at = _button(at, "Record the step").click().run()
    assert not at.exception, [e.value for e in at.exception]
    p = P.project(_records(with_users), pid)
    assert (p["status"], p["approved_by"], p["created_by"]) == ("approved", "Planning Board", SMO)
    # the guarantee, the easement and the certificate-of-occupancy hold
    at.selectbox(key="projects_upd_kind").set_value("cash_escrow")
    at.number_input(key="projects_upd_amount").set_value(50000.0)
    at.checkbox(key="projects_upd_eas").check()
    at.text_input(key="projects_upd_where").set_value("County Clerk, liber 14 page 3")
    at.selectbox(key="projects_upd_hold").set_value("withhold")
    at = _button(at, "Record the changes").click().run()
    assert not at.exception, [e.value for e in at.exception]
    p = P.project(_records(with_users), pid)
    assert (p["guarantee_kind"], p["guarantee_amount"], p["co_hold"]) == ("cash_escrow", 50000.0, 1)
    assert p["easement_where"] == "County Clerk, liber 14 page 3"
    text = _texts(at)
    assert "Guarantee: cash escrow of $50,000 (held)" in text
    assert "Certificate of occupancy: withheld" in text
    # a stage notice 47 hours ahead: late
    today = dt.date.today()
    at.date_input(key="projects_note_sd").set_value(today)
    at.time_input(key="projects_note_st").set_value(dt.time(8, 0))
    at.date_input(key="projects_note_nd").set_value(today - dt.timedelta(days=2))
    at.time_input(key="projects_note_nt").set_value(dt.time(9, 0))
    at = _button(at, "Record the notice").click().run()
    assert not at.exception, [e.value for e in at.exception]
    rows = C.construction(_records(with_users), pid)
    assert rows["hours_ahead"].tolist() == [47.0] and rows["late"].tolist() == [True]
    assert "Late stage notices: 1" in _texts(at)
    # a stop-work order: only stabilization
    at.text_input(key="projects_stop_reason").set_value("silt fence down")
    at = _button(at, "Issue the stop-work order").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Only site stabilization work may proceed" in e.value for e in at.error)
    assert C.project_state(_records(with_users), pid)["work_allowed"] == "site stabilization only"
    at = _button(at, "Lift the order").click().run()
    assert C.project_state(_records(with_users), pid)["work_allowed"] == "all"
    audit = _records(with_users).audit()
    assert len(audit[audit["table_name"] == "construction"]) == 3  # notice, order, lifted


def test_viewer_reads_without_forms(with_users: Path) -> None:
    pid = _project(with_users)
    at = _login(page().run(), VIEWER, VIEWER_PW)
    assert not at.exception, [e.value for e in at.exception]
    assert f"Project {pid}: Acme lot" in [s.value for s in at.subheader]
    assert "read-only for you" in _texts(at)
    for label in ("Record the step", "Record the notice", "Save the project", "Lift the order"):
        assert _button(at, label) is None
    forced = AppTest.from_string(
        "import streamlit as st\nfrom ms4map.app import records_ui\n"
        f"st.session_state['ms4map_auth'] = {{'user': {VIEWER!r}}}\n"
        "try:\n    records_ui._writer('Advancing a project')\n"
        "except PermissionError as exc:\n    st.session_state['refused'] = str(exc)\n",
        default_timeout=TIMEOUT,
    ).run()
    assert "viewer role" in forced.session_state["refused"]
    assert P.project(_records(with_users), pid)["status"] == "swppp_submitted"


def test_no_project_yet(with_users: Path) -> None:
    at = _login(page().run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    assert "No project yet" in _texts(at)
    assert _button(at, "Save the project") is not None
