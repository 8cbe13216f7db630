"""AppTest: the SMP page (issue 31 items 3-4): the schedule, what is overdue, the SMO's forms,
a viewer's refusal, and the SMPs on the map coloured by their inspection status."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")
from streamlit.testing.v1 import AppTest  # noqa: E402

import ms4map
from ms4map.records import smp, users  # noqa: E402

TIMEOUT = 180
SMO, SMO_PW = "jsmith", "smo password 1"
VIEWER, VIEWER_PW = "guest", "viewer password 1"


@pytest.fixture()
def app_env(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.delenv("MS4MAP_RECORDS", raising=False)
    from ms4map.app import auth

    auth.reset_rate_limit()
    return app_env


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
    return re.sub(r"\\(.)", r"\1", "\n".join(str(p) for p in parts))


def _button(at: AppTest, label: str):
    hits = [b for b in at.button if b.label == label]
    return hits[0] if hits else None


def _login(at: AppTest, name: str, password: str) -> AppTest:
    at.text_input(key="auth_user").set_value(name)
    at.text_input(key="auth_password").set_value(password)
    return _button(at, "Log in").click().run()


def _records(data: Path, user: str = SMO, role: str = "smo"):
    from ms4map.records import open_records

    (data / "records").mkdir(parents=True, exist_ok=True)
    return open_records(
        ms4map.datasets.get_path("alder_falls"),
        user=user,
        role=role,
        records=data / "records" / "demo.records.gpkg",
    )


def _pond(rec) -> int:
    """An SMP inspected 8 months ago on a 6-month schedule (the issue's check)."""
    x, y = rec.outfalls.geometry.iloc[0].coords[0]
    sid = smp.add_smp(
        rec,
        "Pond 1",
        "P-2",
        _pt(x + 30, y + 30),
        inspection_months=6,
        maintenance_months=12,
        owner="Maple Ridge HOA",
    )
    smp.inspect_smp(rec, sid, dt.date.today() - dt.timedelta(days=243), condition="fair")
    return sid


def _pt(x: float, y: float):
    from shapely.geometry import Point

    return Point(x, y)


def test_smp_page_shows_the_practice_overdue_and_a_viewer_has_no_forms(with_users: Path) -> None:
    rec = _records(with_users)
    _pond(rec)
    at = _login(page("smp").run(), VIEWER, VIEWER_PW)
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    table = getattr(table, "data", table)  # a Styler
    assert list(table["Name"]) == ["Pond 1"]
    assert list(table["Inspection status"]) == ["inspection overdue"]
    assert list(table["Maintenance status"]) == ["never maintained"]  # words, not codes
    assert "1 overdue duties at 1 practices." in _texts(at)
    assert _button(at, "Save inspection") is None and _button(at, "Add practice") is None
    assert "records are read-only for you" in _texts(at)


def test_smo_records_an_inspection_and_the_practice_is_no_longer_overdue(
    with_users: Path,
) -> None:
    rec = _records(with_users)
    sid = _pond(rec)
    at = _login(page("smp").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="smp_ins_condition").set_value("good")
    at = _button(at, "Save inspection").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"Inspection 2 of SMP {sid} saved." in _texts(at)
    st_ = smp.smp_status(rec).set_index("smp_id")
    assert st_.loc[sid, "inspection_status"] == "ok"
    audit = rec.audit()
    last = audit.iloc[-1]
    assert (last["table_name"], last["created_by"], last["role"]) == ("smp_inspections", SMO, "smo")


def test_a_viewer_cannot_write_an_smp_through_the_library(with_users: Path) -> None:
    rec = _records(with_users)
    sid = _pond(rec)
    viewer = _records(with_users, VIEWER, "viewer")
    with pytest.raises(PermissionError, match="viewer role"):
        smp.inspect_smp(viewer, sid, "2025-01-10")
    with pytest.raises(PermissionError, match="viewer role"):
        smp.add_smp(viewer, "Pond 2", "P-1", rec.outfalls.geometry.iloc[0])
    assert len(smp.smp_inspections(rec)) == 1 and len(smp.smps(rec)) == 1


def test_the_smp_layer_is_coloured_by_inspection_status(with_users: Path) -> None:
    from ms4map.app.smp_map import SMP_COLOURS, smp_overlay

    rec = _records(with_users)
    _pond(rec)
    x, y = rec.outfalls.geometry.iloc[1].coords[0]
    smp.add_smp(rec, "Rain garden 2", "rain_garden", _pt(x + 20, y + 20), inspection_months=12)
    ws = ms4map.open_workspace(ms4map.datasets.get_path("alder_falls"))
    group, legend = smp_overlay(ws, rec)
    import folium

    m = folium.Map()
    group.add_to(m)
    html = m.get_root().render()
    assert SMP_COLOURS["overdue"] in html and SMP_COLOURS["never_inspected"] in html
    assert SMP_COLOURS["ok"] not in html
    assert "inspection overdue (1)" in legend and "never inspected (1)" in legend


@pytest.mark.slow
def test_map_page_draws_the_smps_with_their_legend(app_env: Path) -> None:
    rec = _records(app_env)
    _pond(rec)
    at = page("map").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "SMPs (stormwater management practices)" in _texts(at)
    assert "inspection overdue (1)" in _texts(at)


def test_smo_adds_a_practice_with_the_form(with_users: Path) -> None:
    rec = _records(with_users)
    x, y = rec.outfalls.geometry.iloc[0].coords[0]
    at = _login(page("smp").run(), SMO, SMO_PW)
    assert "No SMP recorded yet." in _texts(at)
    at.text_input(key="smp_add_name").set_value("Rain garden 1")
    at.selectbox(key="smp_add_kind").set_value("rain_garden")
    at.text_input(key="smp_add_where").set_value(f"{x + 10},{y + 10}")
    at.text_input(key="smp_add_owner").set_value("Library")
    at = _button(at, "Add practice").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "SMP 1 (Rain garden 1) added." in _texts(at)
    inv = smp.smps(rec)
    assert inv[["name", "kind", "owner"]].values.tolist() == [
        ["Rain garden 1", "rain_garden", "Library"]
    ]
    assert int(inv["inspection_months"].iloc[0]) == 12  # the form's default
    # a location outside the town is refused, the form keeps what was typed
    at.text_input(key="smp_add_name").set_value("Far away")
    at.text_input(key="smp_add_where").set_value("0,0")
    at = _button(at, "Add practice").click().run()
    assert any("lies outside the town" in e.value for e in at.error)
    assert at.text_input(key="smp_add_name").value == "Far away"
    assert len(smp.smps(rec)) == 1


def test_a_viewer_session_cannot_write_an_smp_through_the_app(with_users: Path) -> None:
    script = (
        "import streamlit as st\n"
        "from ms4map.app import records_ui\n"
        f"st.session_state['ms4map_auth'] = {{'user': {VIEWER!r}}}\n"
        "try:\n"
        "    records_ui._writer('Adding an SMP')\n"
        "except PermissionError as exc:\n"
        "    st.session_state['refused'] = str(exc)\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT).run()
    assert "refused" in at.session_state
    assert "viewer role" in at.session_state["refused"]


def test_smo_imports_practices_from_an_uploaded_file(with_users: Path, tmp_path: Path) -> None:
    import geopandas as gpd
    from shapely.geometry import box

    rec = _records(with_users)
    x, y = rec.outfalls.geometry.iloc[0].coords[0]
    g = gpd.GeoDataFrame(
        {"name": ["Pond 1", "Swale 2"], "kind": ["P-2", "O-1"], "inspection_months": [6, 12]},
        geometry=[box(x + 20, y + 20, x + 60, y + 50), _pt(x - 30, y - 30)],
        crs=rec.outfalls.crs,
    )
    src = tmp_path / "smps.geojson"
    g.to_file(src)
    at = _login(page("smp").run(), SMO, SMO_PW)
    at.file_uploader(key="smp_import_file").upload(
        "smps.geojson", src.read_bytes(), "application/json"
    )
    at = at.run()
    at = _button(at, "Import").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "2 added, 0 updated, 0 unchanged." in _texts(at)
    assert smp.smps(rec)["name"].tolist() == ["Pond 1", "Swale 2"]
