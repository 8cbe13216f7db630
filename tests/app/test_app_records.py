"""AppTest: login, roles enforced on the server, the inspection and case forms writing records.

The app runs on the demo town; its records go to ``MS4MAP_DATA_DIR/records/``.  Users
are made with :mod:`ms4map.users` (what ``ms4map users add`` does) in that data folder.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")
from streamlit.testing.v1 import AppTest  # noqa: E402

import ms4map
from ms4map.records import users  # noqa: E402

pytestmark = pytest.mark.slow  # the quick lane (-m "not slow and not browser") skips it

TIMEOUT = 180
OUTFALL = "OF-009"
SMO, SMO_PW = "jsmith", "smo password 1"
VIEWER, VIEWER_PW = "guest", "viewer password 1"


@pytest.fixture()
def app_env(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared ``app_env`` with no users file nor records store from the environment."""
    data = app_env
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.delenv("MS4MAP_RECORDS", raising=False)
    from ms4map.app import auth

    auth.reset_rate_limit()
    return data


@pytest.fixture()
def with_users(app_env: Path) -> Path:
    users.add_user(SMO, "smo", SMO_PW)
    users.add_user(VIEWER, "viewer", VIEWER_PW)
    return app_env


def page(name: str) -> AppTest:
    return AppTest.from_string(
        f"from ms4map.app import run_page\nrun_page({name!r})", default_timeout=TIMEOUT
    )


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [e.value for e in at.warning]
    parts += [e.value for e in at.info] + [e.value for e in at.success]
    # as a reader sees it: the app escapes values from the data (OF\-009)
    return re.sub(r"\\(.)", r"\1", "\n".join(str(p) for p in parts))


def _button(at: AppTest, label: str):
    hits = [b for b in at.button if b.label == label]
    return hits[0] if hits else None


def _login(at: AppTest, name: str, password: str) -> AppTest:
    at.text_input(key="auth_user").set_value(name)
    at.text_input(key="auth_password").set_value(password)
    return _button(at, "Log in").click().run()


def _records(data: Path, user: str = "reader", role: str = "viewer"):
    from ms4map.records import open_records

    return open_records(
        ms4map.datasets.get_path("alder_falls"),
        user=user,
        role=role,
        records=data / "records" / "demo.records.gpkg",
    )


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (120, 90, 40)).save(buf, format="PNG")
    return buf.getvalue()


def _forced_write(user: str | None) -> AppTest:
    """A run that calls the page's save function directly (no button involved)."""
    login = f"st.session_state['ms4map_auth'] = {{'user': {user!r}}}\n" if user else ""
    script = (
        "import streamlit as st\n"
        "from ms4map.app import records_ui\n"
        + login
        + "try:\n"
        + "    records_ui.save_inspection('OF-009', '2025-06-02', {'flow_present': True})\n"
        + "except PermissionError as exc:\n"
        + "    st.session_state['refused'] = str(exc)\n"
    )  # (caught in the script: the browser is told no exception's details)
    return AppTest.from_string(script, default_timeout=TIMEOUT).run()


def _refused(at: AppTest) -> str:
    """The PermissionError the forced write raised ('' when none)."""
    return at.session_state["refused"] if "refused" in at.session_state else ""


# -- no users file -----------------------------------------------------------------------
def test_no_users_file_read_only_with_the_hint(app_env: Path) -> None:
    at = page("investigation").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "ms4map users add NAME --role smo" in _texts(at)
    assert _button(at, "Save the inspection") is None
    assert _button(at, "Open the case") is None
    assert not [t for t in at.title if "log in" in t.value]  # no login without users
    cases = page("cases").run()
    assert not cases.exception, [e.value for e in cases.exception]
    assert "No records yet" in _texts(cases) and "ms4map users add NAME --role smo" in _texts(cases)
    forced = _forced_write(None)
    assert "no users" in _refused(forced)
    assert not (app_env / "records" / "demo.records.gpkg").exists()


# -- login -----------------------------------------------------------------------------------
def test_wrong_password_refused_then_rate_limited(with_users: Path) -> None:
    at = page("map").run()
    assert [t.value for t in at.title] == ["ms4map: log in"]  # nothing else before login
    at = _login(at, SMO, "not the password")
    assert "Wrong user name or password." in [e.value for e in at.error]
    assert [t.value for t in at.title] == ["ms4map: log in"]
    at = _login(at, "nobody", "whatever it is")  # unknown name: the same answer
    assert "Wrong user name or password." in [e.value for e in at.error]
    from ms4map.app import auth

    for _ in range(auth.MAX_FAILURES - 1):
        at = _login(at, SMO, "still wrong")
    at = _login(at, SMO, SMO_PW)  # the right password, but locked now
    assert any("Too many login attempts" in e.value for e in at.error)
    assert [t.value for t in at.title] == ["ms4map: log in"]
    auth.reset_rate_limit()
    at = _login(at, SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    assert "Map" in [t.value for t in at.title]
    assert f"Logged in as **{SMO}** (smo)." in _texts(at)


# -- the SMO records -------------------------------------------------------------------------
def test_smo_records_an_inspection_with_a_photo_and_it_shows_in_the_history(
    with_users: Path,
) -> None:
    at = _login(page("investigation").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="inv_outfall").set_value(OUTFALL).run()
    assert f"No records yet for {OUTFALL}." in _texts(at)
    at.selectbox(key="inv_f_flow_present").set_value("yes")
    at.selectbox(key="inv_f_odor").set_value(2)
    at.number_input(key="inv_f_detergents").set_value(0.4)
    at.selectbox(key="inv_f_characterization").set_value("suspect")
    at.file_uploader(key="inv_photos").upload("outfall.png", _png(), "image/png")
    at = _button(at, "Save the inspection").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"Inspection 1 of {OUTFALL} recorded by {SMO} with 1 photo(s)." in _texts(at)
    at.run()  # the next run shows the new history
    hist = [d.value for d in at.dataframe if "record" in d.value.columns]
    assert hist and list(hist[0]["record"]) == ["inspection 1"]
    assert hist[0]["detergents"].iloc[0] == pytest.approx(0.4)
    assert hist[0]["photos"].iloc[0] == 1
    assert [e.label for e in at.expander if e.label.startswith("Photos")] == ["Photos (1)"]
    rec = _records(with_users)
    ins = rec.inspections()
    assert ins["characterization"].tolist() == ["suspect"] and ins["odor"].tolist() == [2]
    audit = rec.audit()
    assert set(audit["created_by"]) == {SMO} and set(audit["role"]) == {"smo"}
    assert list(audit["action"]) == ["insert", "attach"]
    status = rec.outfall_status().set_index("outfall_id")
    assert status.loc[OUTFALL, "status"] == "suspect"


def test_a_photo_that_is_not_an_image_is_refused_and_nothing_is_written(
    with_users: Path,
) -> None:
    at = _login(page("investigation").run(), SMO, SMO_PW)
    at.selectbox(key="inv_outfall").set_value(OUTFALL).run()
    at.selectbox(key="inv_f_flow_present").set_value("no")
    at.file_uploader(key="inv_photos").upload("outfall.jpg", b"MZ not a photo", "image/jpeg")
    at = _button(at, "Save the inspection").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("is not a JPEG or PNG image" in e.value for e in at.error)
    assert not (with_users / "records" / "demo.records.gpkg").exists() or not len(
        _records(with_users).inspections()
    )


def test_smo_opens_a_case_from_the_inspection_and_advances_it(with_users: Path) -> None:
    smo = _records(with_users, SMO, "smo")
    iid = smo.add_inspection(OUTFALL, "2025-06-02", flow_present=True, characterization="suspect")
    at = _login(page("investigation").run(), SMO, SMO_PW)
    at.selectbox(key="inv_outfall").set_value(OUTFALL).run()
    at.selectbox(key="inv_case_origin").set_value("finding")
    at.selectbox(key="inv_case_inspection").set_value(iid)
    at.text_input(key="inv_case_desc").set_value("grey water, soap smell")
    at = _button(at, "Open the case").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"Case 1 opened at {OUTFALL}" in _texts(at)
    case = _records(with_users).cases().iloc[0]
    assert (case["origin"], int(case["inspection_id"]), case["created_by"]) == (
        "finding",
        iid,
        SMO,
    )
    # advance step by step on the cases page
    at = _login(page("cases").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="cases_step").options[:2] == ["investigation", "source_found"]
    assert "notice_sent" not in at.selectbox(key="cases_step").options  # needs the source
    at.selectbox(key="cases_step").set_value("source_found").run()
    at.text_input(key="cases_parcel").set_value("106.12-2-14")
    at = _button(at, "Record the step").click().run()
    assert not at.exception, [e.value for e in at.exception]
    case = _records(with_users).cases().iloc[0]
    assert (case["status"], case["source_parcel_id"]) == ("source_found", "106.12-2-14")
    assert "notice_sent" in at.selectbox(key="cases_step").options
    # the notice of violation of the case, to the source parcel's owner
    dl = [b for b in at.get("download_button") if "notice of violation" in str(b.proto.label)]
    assert dl, "no notice download"


def test_cases_page_highlights_overdue_and_proposes_the_next_sample(with_users: Path) -> None:
    smo = _records(with_users, SMO, "smo")
    cid = smo.open_case(OUTFALL, "2025-06-03", origin="complaint")
    smo.advance_case(cid, "source_found", "2025-06-05", parcel_id="106.12-2-14")
    smo.advance_case(cid, "notice_sent", "2025-06-06", deadline="2025-06-30")
    cid2 = smo.open_case(OUTFALL, "2025-07-01", origin="complaint")
    at = _login(page("cases").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    assert any("overdue" in e.value for e in at.error)  # the remedy of June 30 is overdue
    at.selectbox(key="cases_case").set_value(cid2).run()
    text = _texts(at)
    assert "Next structure to sample:" in text
    first = _records(with_users).next_sample(cid2)["struct_id"]
    assert f"Next structure to sample: {first}" in text
    assert at.text_input(key="cases_sample_struct").value == first
    at.selectbox(key="cases_sample_result").set_value("flow")
    at.number_input(key="cases_sample_f_ammonia").set_value(1.5)
    at.selectbox(key="cases_sample_f_odor").set_value(3)
    at = _button(at, "Save the sample").click().run()
    assert not at.exception, [e.value for e in at.exception]
    second = _records(with_users).next_sample(cid2)
    assert second["struct_id"] != first and second["followed"] == [f"{first}: flow"]
    assert f"Next structure to sample: {second['struct_id']}" in _texts(at)
    # the candidate area narrows: fewer structures are still suspect after the sample
    counts = [int(t.split("Still suspect: ")[1].split(" ")[0]) for t in (text, _texts(at))]
    assert counts[1] < counts[0], counts
    smp = _records(with_users).samples(cid2)
    assert list(smp["created_by"]) == [SMO] and list(smp["sampler"]) == [SMO]
    assert smp["ammonia"].tolist() == [1.5] and smp["odor"].tolist() == [3]


# -- the viewer -------------------------------------------------------------------------------
def test_viewer_sees_everything_but_no_edit_control_and_a_forced_write_raises(
    with_users: Path,
) -> None:
    smo = _records(with_users, SMO, "smo")
    smo.add_inspection(OUTFALL, "2025-06-02", flow_present=True, detergents=0.3)
    smo.open_case(OUTFALL, "2025-06-03")
    at = _login(page("investigation").run(), VIEWER, VIEWER_PW)
    at.selectbox(key="inv_outfall").set_value(OUTFALL).run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"History of {OUTFALL}" in _texts(at)  # reads everything
    assert "read-only for you" in _texts(at)
    for label in ("Save the inspection", "Open the case"):
        assert _button(at, label) is None
    assert not at.get("file_uploader")
    at = _login(page("cases").run(), VIEWER, VIEWER_PW)
    assert not at.exception, [e.value for e in at.exception]
    for label in ("Record the step", "Save the sample"):
        assert _button(at, label) is None
    at = _login(page("inventory").run(), VIEWER, VIEWER_PW)
    assert _button(at, "Save the inspection") is None
    before = len(_records(with_users).inspections())
    forced = _forced_write(VIEWER)
    assert "viewer role" in _refused(forced)
    nobody = _forced_write(None)
    assert "nobody is logged in" in _refused(nobody)
    assert len(_records(with_users).inspections()) == before  # nothing written


def test_a_demoted_smo_can_no_longer_write(with_users: Path) -> None:
    """The role is read from the users file at each write, not remembered from the login."""
    users.add_user(SMO, "viewer", SMO_PW, replace=True)
    forced = _forced_write(SMO)
    assert "viewer role" in _refused(forced)


# -- inventory and map -----------------------------------------------------------------------
def test_inventory_shows_last_inspection_and_screening_coverage(with_users: Path) -> None:
    import datetime as dt

    smo = _records(with_users, SMO, "smo")
    smo.add_inspection(OUTFALL, dt.date.today().isoformat(), flow_present=False)
    at = _login(page("inventory").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    n = len(smo.outfalls)
    share = [m for m in at.metric if m.label == "Screened in the permit's 5-year cycle"]
    assert share and share[0].value == f"{1 / n:.0%}"
    table = [d.value for d in at.dataframe if "last_inspection" in d.value.columns][0]
    row = table[table["outfall_id"] == OUTFALL].iloc[0]
    assert row["last_inspection"] == dt.date.today().isoformat()
    # the layer says suspect; an inspection finding no flow does not clear it (item 4/6)
    assert row["status"] == "suspect" and "does not clear it" in row["status_reason"]
    assert table["last_inspection"].isna().sum() == n - 1
    labels = [str(b.proto.label) for b in at.get("download_button")]
    assert "Download the annual report (CSV)" in labels
    assert _button(at, "Save the inspection") is not None  # the form is there for the SMO


def test_map_colours_outfalls_by_derived_status_and_rings_open_cases(
    with_users: Path,
) -> None:
    from ms4map import open_workspace
    from ms4map.app import records_map
    from ms4map.outputs import maps

    ws = open_workspace(ms4map.datasets.get_path("alder_falls"), no_dem=True)
    layers = maps.build_layers(ws)
    base = layers["outfalls"].frame.set_index("fid")["category"]
    same, groups, legend = records_map.map_overlay(ws, layers)
    assert same is layers and not groups  # no records: the layer's own status
    smo = _records(with_users, SMO, "smo")
    smo.add_inspection(OUTFALL, "2025-06-02", flow_present=True, characterization="obvious")
    cid = smo.open_case("OF-001", "2025-06-03")
    smo.advance_case(cid, "source_found", "2025-06-04", parcel_id="106.12-2-14")
    smo.advance_case(cid, "notice_sent", "2025-06-05", deadline="2025-06-20")
    out, groups, legend = records_map.map_overlay(ws, layers)
    cat = out["outfalls"].frame.set_index("fid")["category"]
    assert cat[OUTFALL] == "illicit" and cat["OF-001"] == "illicit"
    others = [f for f in cat.index if f not in (OUTFALL, "OF-001")]
    assert (cat[others] == base[others]).all()  # never inspected: the layer's status
    assert out["outfalls"].frame["fid"].iloc[-1] in (OUTFALL, "OF-001")  # drawn on top
    assert len(groups) == 1 and "1 open, 1 overdue" in legend
    import folium

    m = folium.Map()
    groups[0].add_to(m)
    html = m.get_root().render()
    assert "#b2182b" in html  # the overdue ring


def test_map_rings_the_outfalls_verified_in_the_field(with_users: Path) -> None:
    """Issue 30 item 3: the map shows verified versus mapped-only."""
    import folium

    from ms4map import open_workspace
    from ms4map.app import records_map
    from ms4map.outputs import maps

    ws = open_workspace(ms4map.datasets.get_path("alder_falls"), no_dem=True)
    layers = maps.build_layers(ws)
    smo = _records(with_users, SMO, "smo")
    smo.add_inspection("OF-003", "2025-06-02", flow_present=False)  # no position found
    of = smo.outfalls.to_crs(4326).set_index("outfall_id").geometry[OUTFALL]
    smo.add_inspection(
        OUTFALL, "2025-06-02", flow_present=False, found_lat=of.y + 0.0001, found_lon=of.x
    )
    _out, groups, legend = records_map.map_overlay(ws, layers)
    assert "verified in the field (1)" in legend and "no ring: mapped only" in legend
    (ring,) = [g for g in groups if g.layer_name == "Verified in the field"]
    m = folium.Map()
    ring.add_to(m)
    html = m.get_root().render()
    assert records_map.VERIFIED_COLOUR in html
    assert OUTFALL in html and "OF-003" not in html  # only the verified one is ringed
    assert "from the mapped point (move not accepted" in html


def test_a_selected_outfall_on_the_map_says_its_derived_status(with_users: Path) -> None:
    smo = _records(with_users, SMO, "smo")
    smo.add_inspection(OUTFALL, "2025-06-02", flow_present=True, characterization="obvious")
    smo.open_case(OUTFALL, "2025-06-03")
    at = _login(page("map").run(), VIEWER, VIEWER_PW)
    at.text_input(key="map_search_query").set_value(OUTFALL).run()
    assert not at.exception, [e.value for e in at.exception]
    line = [m.value for m in at.markdown if m.value.startswith("**Status**")]
    # obvious at the inspection: illicit; the open case does not lower it (issue 28 item 4)
    assert line and "**illicit**" in line[0] and "1 open case(s), 0 overdue" in line[0]
