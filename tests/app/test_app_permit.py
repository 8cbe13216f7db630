"""AppTest: the Permit year page (issue 30): the compliance pack with its drill-down, the
screening schedule, field verification, on the demo town with seeded records."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import ms4map

pytestmark = pytest.mark.slow  # the quick lane (-m "not slow and not browser") skips it

TIMEOUT = 240


@pytest.fixture()
def seeded(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.delenv("MS4MAP_RECORDS", raising=False)
    from ms4map.records import open_records

    r = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="jsmith",
        records=app_env / "records" / "demo.records.gpkg",
    )
    r.add_inspection("OF-009", "2025-06-02", flow_present=True, characterization="suspect")
    r.add_inspection("OF-010", "2026-01-02", flow_present=False)  # permit year 2025
    r.open_case("OF-009", "2025-06-03", origin="complaint")
    return app_env


def test_permit_page_shows_the_pack_schedule_and_verification(seeded: Path) -> None:
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('permit')", default_timeout=TIMEOUT
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.number_input(key="permit_year").set_value(2025).run()
    assert not at.exception, [e.value for e in at.exception]
    texts = "\n".join(m.value for m in at.markdown).replace("\\", "")
    assert "permit year 2025 (3 January 2025 to 2 January 2026" in texts
    counts = [d.value for d in at.dataframe if "Count" in d.value.columns][0]
    row = counts.set_index("What")
    assert row.loc["Outfalls screened in the period", "Count"] == 2  # OF-009 and OF-010
    assert row.loc["Complaints received (cases opened on a complaint)", "Count"] == 1
    assert "Outfalls screened in the period** (2): OF-009, OF-010" in texts
    plan = [
        d.value for d in at.dataframe if "Why" in d.value.columns and "Visit" in d.value.columns
    ]
    assert plan and set(plan[0]["Outfall"]) >= {"OF-009", "OF-010"}
    labels = [str(b.proto.label) for b in at.get("download_button")]
    assert "Download the schedule (CSV)" in labels
    assert "Download the counts with their ids (CSV)" in labels
    ver = [m for m in at.metric if m.label == "Outfalls verified in the field"]
    assert ver and ver[0].value == "0 of 24"


def test_inventory_shows_verified_versus_mapped_only(seeded: Path) -> None:
    from ms4map.records import open_records

    r = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="jsmith",
        records=seeded / "records" / "demo.records.gpkg",
    )
    of = r.outfalls.to_crs(4326).set_index("outfall_id").geometry["OF-010"]
    r.add_inspection("OF-010", "2025-07-01", found_lat=of.y + 0.0001, found_lon=of.x)
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('inventory')", default_timeout=TIMEOUT
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    table = [d.value for d in at.dataframe if "verification" in d.value.columns][0]
    got = table.set_index("outfall_id")["verification"]
    assert got["OF-010"] == "verified in the field" and got["OF-009"] == "mapped only"
    assert any(m.label.startswith("Screened in the permit year") for m in at.metric)
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('permit')", default_timeout=TIMEOUT
    ).run()
    ver = [m for m in at.metric if m.label == "Outfalls verified in the field"]
    assert ver[0].value == "1 of 24"
    v = [d.value for d in at.dataframe if "Moved (m)" in d.value.columns][0].set_index("Outfall")
    assert 5 < v.loc["OF-010", "Moved (m)"] < 20  # 0.0001 degree of latitude: about 11 m
    assert v.loc["OF-010", "Move"] == "found elsewhere, move not accepted"
    assert v.loc["OF-010", "Position the traces use"] == "mapped"


def test_permit_page_is_behind_the_login(seeded: Path) -> None:
    pytest.importorskip("argon2")
    from ms4map.records import users

    users.add_user("jsmith", "smo", "smo password 1")
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('permit')", default_timeout=TIMEOUT
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [b for b in at.button if b.label == "Log in"]
    assert not [h for h in at.header if h.value == "Compliance pack"]
    assert not at.dataframe


def _as_smo(seeded: Path) -> AppTest:
    pytest.importorskip("argon2")
    from ms4map.records import users

    users.add_user("jsmith", "smo", "smo password 1")
    return AppTest.from_string(
        "import streamlit as st\nfrom ms4map.app import run_page\n"
        "st.session_state['ms4map_auth'] = {'user': 'jsmith'}\nrun_page('permit')",
        default_timeout=TIMEOUT,
    )


def test_smo_overrides_a_count_with_a_reason_audited(seeded: Path) -> None:
    from ms4map.records import open_records

    at = _as_smo(seeded).run()
    at.number_input(key="permit_year").set_value(2025).run()
    assert not at.exception, [e.value for e in at.exception]
    label = "Complaints received (cases opened on a complaint)"
    at.selectbox(key="permit_override_key").set_value(label)
    at.number_input(key="permit_override_n").set_value(4)
    at.text_input(key="permit_override_reason").set_value("   ")
    [b for b in at.button if b.label == "Record the override"][0].click().run()
    assert any("a reason is required" in e.value for e in at.error)
    r = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="x",
        role="viewer",
        records=seeded / "records" / "demo.records.gpkg",
    )
    assert not (r.audit()["table_name"] == "pack_overrides").any()  # nothing written
    at.text_input(key="permit_override_reason").set_value("two calls not entered")
    [b for b in at.button if b.label == "Record the override"][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    a = r.audit()
    row = a[a["table_name"] == "pack_overrides"].iloc[-1]
    assert row["created_by"] == "jsmith" and "two calls not entered" in row["new_values"]
    counts = [d.value for d in at.dataframe if "Reported" in d.value.columns][0].set_index("What")
    assert counts.loc[label, "Count"] == 1 and counts.loc[label, "Reported"] == 4
    assert counts.loc[label, "Override"] == "two calls not entered"


def test_smo_accepts_a_move_and_it_is_audited(seeded: Path) -> None:
    from ms4map.records import open_records

    r = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="jsmith",
        records=seeded / "records" / "demo.records.gpkg",
    )
    of = r.outfalls.to_crs(4326).set_index("outfall_id").geometry["OF-010"]
    r.add_inspection("OF-010", "2025-07-01", found_lat=of.y + 0.0001, found_lon=of.x)
    at = _as_smo(seeded).run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="permit_move_oid").set_value("OF-010")
    at.text_input(key="permit_move_reason").set_value("headwall found 11 m north")
    label = "Accept the move (the traces use the field position)"
    [b for b in at.button if b.label == label][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    v = [d.value for d in at.dataframe if "Moved (m)" in d.value.columns][0].set_index("Outfall")
    assert v.loc["OF-010", "Move"] == "move accepted"
    assert v.loc["OF-010", "Position the traces use"] == "field"
    a = r.audit()
    row = a[a["table_name"] == "outfall_moves"].iloc[-1]
    assert row["created_by"] == "jsmith" and "headwall found 11 m north" in row["new_values"]


def test_a_viewer_forced_override_is_refused_on_the_server(seeded: Path) -> None:
    pytest.importorskip("argon2")
    from ms4map.records import users

    users.add_user("guest", "viewer", "viewer password 1")
    script = (
        "import streamlit as st\nfrom ms4map.app import records_ui\n"
        "st.session_state['ms4map_auth'] = {'user': 'guest'}\n"
        "try:\n"
        "    records_ui.save_override('cases_opened', 9, reason='x', year=2025, "
        "period='permit_year')\n"
        "except PermissionError as exc:\n"
        "    st.session_state['refused'] = str(exc)\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT).run()
    assert "viewer" in at.session_state["refused"]


_WHERE_TRACED = """
from ms4map.app import _setup, state
_setup(None)
ctx = state.context(need_result=True)
of = ctx.result.workspace.layers["outfalls"].set_index("outfall_id").geometry["OF-010"]
net = ctx.result.network.outfalls
st_of = ctx.ws.layers["outfalls"].set_index("outfall_id").geometry["OF-010"]
import streamlit as st
st.write(f"traced {of.x:.2f} {of.y:.2f} mapped {st_of.x:.2f} {st_of.y:.2f}")
"""


def test_the_app_traces_use_an_accepted_move_and_not_a_pending_one(seeded: Path) -> None:
    """Issue 30 item 3: the app's traces keep the mapped position until the SMO accepts
    the move, then use the field position; the workspace as opened is not changed."""
    from ms4map.records import open_records

    r = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="jsmith",
        records=seeded / "records" / "demo.records.gpkg",
    )
    of = r.outfalls.to_crs(4326).set_index("outfall_id").geometry["OF-010"]
    iid = r.add_inspection("OF-010", "2025-07-01", found_lat=of.y + 0.0001, found_lon=of.x)

    def where() -> tuple[float, float, float, float]:
        at = AppTest.from_string(_WHERE_TRACED, default_timeout=TIMEOUT).run()
        assert not at.exception, [e.value for e in at.exception]
        text = [m.value for m in at.markdown if m.value.startswith("traced")][0]
        tx, ty, mx, my = (float(v) for v in text.split()[1:3] + text.split()[4:6])
        return tx, ty, mx, my

    tx, ty, mx, my = where()
    assert (tx, ty) == (mx, my)  # found elsewhere, not accepted: the mapped point
    r.accept_move("OF-010", inspection_id=iid, reason="headwall found 11 m north")
    tx, ty, mx, my = where()
    assert 5 < ty - my < 20 and abs(tx - mx) < 1  # about 11 m north, the field point
