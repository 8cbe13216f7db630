"""Issue 31 items 1-2: land development projects and their construction oversight.

Hand-worked expectations: a notice 47 hours before its stage is late, 48 hours is not;
a step out of order is refused naming the allowed one and writes nothing; a violation
blocks the next step until corrected; a stop-work order lets only stabilization be
notified; the guarantee is released only after an acceptable one-year inspection, a year
after the as-built; every data row has exactly one audit row.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.core.errors import DataError
from ms4map.records import construction as C
from ms4map.records import projects as P
from ms4map.records.periods import Period

ROOT = Path(__file__).resolve().parents[2]


def determination(ws: Path, *, facility: bool = True, created: str = "2026-03-01") -> dict:
    """A determination document as ``ms4map screen --json`` writes it (the parts read)."""
    return {
        "schema": "ms4map.determination",
        "schema_version": "1.2",
        "workspace": {"name": ws.name, "path": str(ws)},
        "application": {"applicant": "Acme LLC", "project_name": "Acme lot"},
        "site": {"label": "parcel P-1", "kind": "parcels", "parcel_ids": ["P-1"]},
        "conditions": {"A": {"value": True, "reasons": []}},
        "swppp_required": {"value": True, "reasons": []},
        "swppp_items": {"post_construction_required": facility},
        "provenance": {"tool": "ms4map", "created": f"{created}T10:00:00-05:00"},
    }


@pytest.fixture()
def town(tmp_path):
    return make_town(tmp_path)


def _counts(r) -> tuple[int, int, int]:
    """(project rows, construction rows, audit rows), every version."""
    with sqlite3.connect(r.path) as con:
        return tuple(
            con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("projects", "construction", "audit")
        )


def _audit_equals_rows(r) -> None:
    """One audit row per row (and version) of the two tables, and the chain intact."""
    a = r.audit()
    with sqlite3.connect(r.path) as con:
        for table, key in (("projects", "project_id"), ("construction", "event_id")):
            rows = set(con.execute(f"SELECT {key}, version FROM {table}").fetchall())
            mine = a[a["table_name"] == table]
            assert set(zip(mine["row_id"], mine["version"], strict=True)) == rows
            assert len(mine) == len(rows)
    assert r.verify()["ok"]


def test_lifecycle_kiryas_joel(town):
    r = rec.open_records(town, user="smo1", profile="kiryas_joel")
    pid = P.save_project(r, determination(town), date="2026-03-02")
    p = P.project(r, pid)
    assert (p["status"], p["applicant"], p["project_name"]) == ("screened", "Acme LLC", "Acme lot")
    assert json.loads(p["determination"])["provenance"]["created"].startswith("2026-03-01")
    assert P.determination_of(r, pid)["site"]["parcel_ids"] == ["P-1"]
    P.advance_project(r, pid, "swppp_submitted", "2026-03-05")

    # a step out of order: refused, naming the allowed step; nothing written
    before = _counts(r)
    with pytest.raises(DataError, match="allowed next step is 'approved'"):
        P.advance_project(r, pid, "under_construction", "2026-03-06")
    # Kiryas Joel: a facility needs a recorded maintenance easement before approval
    with pytest.raises(DataError, match="maintenance easement"):
        P.advance_project(r, pid, "approved", "2026-03-06", approved_by="Planning Board")
    with pytest.raises(DataError, match="approved_by"):
        P.advance_project(r, pid, "approved", "2026-03-06")
    # the law of Kiryas Joel names no performance bond
    with pytest.raises(DataError, match="guarantee_kind"):
        P.update_project(r, pid, guarantee_kind="performance_bond")
    assert _counts(r) == before

    P.update_project(
        r,
        pid,
        easement_recorded=True,
        easement_recorded_on="2026-03-06",
        easement_where="Orange County Clerk, liber 14 page 3",
        guarantee_kind="cash_escrow",
        guarantee_amount=50000,
        guarantee_posted_on="2026-03-06",
    )
    P.advance_project(r, pid, "approved", "2026-03-07", approved_by="Planning Board")

    # 47 hours ahead is late, 48 hours is not
    n47 = C.notify_stage(
        r, pid, "start_of_construction", "2026-03-10T08:00", notified_at="2026-03-08T09:00"
    )
    n48 = C.notify_stage(
        r, pid, "erosion_controls_installed", "2026-03-10T08:00", notified_at="2026-03-08T08:00"
    )
    rows = C.construction(r, pid).set_index("event_id")
    assert rows.loc[n47, "hours_ahead"] == 47.0 and bool(rows.loc[n47, "late"]) is True
    assert rows.loc[n48, "hours_ahead"] == 48.0 and bool(rows.loc[n48, "late"]) is False
    with pytest.raises(DataError, match="not a stage of the profile"):
        C.notify_stage(r, pid, "pouring_concrete", "2026-03-10T08:00", notified_at="2026-03-08")
    with pytest.raises(DataError, match="before project 1 was saved"):
        C.inspect_site(r, pid, "2026-03-01")
    P.advance_project(r, pid, "under_construction", "2026-03-10")

    # a violation blocks the next step until corrected
    ins = C.inspect_site(r, pid, "2026-03-12", findings="silt fence down", result="violations")
    v = C.issue_violation(
        r,
        pid,
        "2026-03-12",
        nature="silt fence down",
        corrective_actions="reinstall it",
        inspection_id=ins,
    )
    before = _counts(r)
    with pytest.raises(DataError, match=f"open violation notice\\(s\\) {v}"):
        P.advance_project(r, pid, "as_built_received", "2026-03-13", engineer="J. Roe, PE 012345")
    # a stop-work order: every stage refused but stabilization
    s = C.stop_work(r, pid, "2026-03-13", reason="silt fence not reinstalled")
    with pytest.raises(DataError, match="site stabilization"):
        C.notify_stage(
            r, pid, "rough_grading_complete", "2026-03-20T08:00", notified_at="2026-03-14T08:00"
        )
    C.notify_stage(r, pid, "site_stabilization", "2026-03-20T08:00", notified_at="2026-03-14T08:00")
    state = C.project_state(r, pid)
    assert state["work_allowed"] == "site stabilization only"
    assert state["open_violations"] == [v] and state["stop_work_orders"] == [s]
    assert state["late_notices"] == 1
    with pytest.raises(DataError, match="stays in force"):
        C.lift_stop_work(r, pid, "2026-03-15")
    assert _counts(r) == (before[0], before[1] + 2, before[2] + 2)
    C.correct_violation(r, pid, v, "2026-03-15")
    C.lift_stop_work(r, pid, "2026-03-15")
    assert C.project_state(r, pid)["work_allowed"] == "all"

    with pytest.raises(DataError, match="as_built_engineer"):
        P.advance_project(r, pid, "as_built_received", "2026-04-01")
    P.advance_project(r, pid, "as_built_received", "2026-04-01", engineer="J. Roe, PE 012345")
    # the guarantee: refused before the one-year inspection
    with pytest.raises(DataError, match="allowed next step is 'one_year_inspected'"):
        P.advance_project(r, pid, "guarantee_released", "2026-04-02")
    with pytest.raises(DataError, match="one_year_acceptable"):
        P.advance_project(r, pid, "one_year_inspected", "2026-11-01", acceptable=False)
    with pytest.raises(DataError, match="on or after 2027-04-01"):
        P.advance_project(r, pid, "one_year_inspected", "2026-11-01", acceptable=True)
    # (a year after the as-built lies ahead of today in this test: a project of 2025)
    _audit_equals_rows(r)
    hist = P.project_history(r, pid)
    assert hist["version"].tolist() == [1, 2, 3, 4, 5, 6]
    assert hist["status"].iloc[-1] == "as_built_received"
    audit = r.audit()
    steps = audit[audit["table_name"] == "projects"]["action"].tolist()
    assert steps == [
        "save",
        "swppp_submitted",
        "update",
        "approved",
        "under_construction",
        "as_built_received",
    ]
    assert set(audit["created_by"]) == {"smo1"}


def test_guarantee_released_after_one_year(town):
    r = rec.open_records(town, user="smo1", profile="stillwater")
    pid = P.save_project(r, determination(town, created="2024-01-10"), date="2024-01-15")
    for step, day, kw in (
        ("swppp_submitted", "2024-02-01", {}),
        ("approved", "2024-03-01", {"approved_by": "Planning Board"}),  # no easement rule
        ("under_construction", "2024-04-01", {}),
        ("as_built_received", "2024-10-01", {"engineer": "J. Roe, PE"}),
    ):
        P.advance_project(r, pid, step, day, **kw)
    with pytest.raises(DataError, match="on or after 2025-10-01"):
        P.advance_project(r, pid, "one_year_inspected", "2025-09-30", acceptable=True)
    P.advance_project(r, pid, "one_year_inspected", "2025-10-01", acceptable=True)
    P.advance_project(r, pid, "guarantee_released", "2025-10-15")
    P.advance_project(r, pid, "maintained", "2025-11-01")
    with pytest.raises(DataError, match="last step"):
        P.advance_project(r, pid, "maintained", "2025-11-02")
    assert P.project(r, pid)["status"] == "maintained"
    assert C.project_state(r, pid)["next_step"] is None
    _audit_equals_rows(r)


def test_bad_input_writes_nothing(town, tmp_path):
    r = rec.open_records(town, user="smo1")
    with pytest.raises(DataError, match="not an ms4map determination"):
        P.save_project(r, {"schema": "other"})
    with pytest.raises(DataError, match="before the determination was made"):
        P.save_project(r, determination(town), date="2026-02-01")
    (tmp_path / "o").mkdir()
    other = make_town(tmp_path / "o")
    with pytest.raises(DataError, match="made in workspace"):
        P.save_project(r, determination(other), date="2026-03-02")
    with pytest.raises(DataError, match="does not exist"):
        P.save_project(r, tmp_path / "missing.json")
    assert P.projects(r).empty
    pid = P.save_project(r, determination(town), date="2026-03-02")
    with pytest.raises(DataError, match="not a step"):
        P.advance_project(r, pid, "finished", "2026-03-03")
    with pytest.raises(DataError, match="no such project"):
        P.advance_project(r, 99, "swppp_submitted", "2026-03-03")
    with pytest.raises(DataError, match="before the project's last step"):
        P.advance_project(r, pid, "swppp_submitted", "2026-03-01")
    with pytest.raises(DataError, match="SWPPP is approved"):
        C.notify_stage(r, pid, "start_of_construction", "2026-03-10", notified_at="2026-03-05")
    with pytest.raises(DataError, match="step's date is set by advancing"):
        P.update_project(r, pid, approved_on="2026-03-03")
    with pytest.raises(DataError, match="corrective_actions"):
        C.issue_violation(r, pid, "2026-03-03", nature="mud on road", corrective_actions="")
    assert _counts(r) == (1, 0, 1)
    # a notice citing an inspection must cite one of this project: another project's
    # inspection and no such event are refused and write nothing
    other_pid = P.save_project(r, determination(town), date="2026-03-02")
    theirs = C.inspect_site(r, other_pid, "2026-03-03")
    before = _counts(r)
    for bad in (theirs, 999):
        with pytest.raises(DataError, match=f"'inspection_id' = {bad} is not an inspection"):
            C.issue_violation(
                r, pid, "2026-03-04", nature="mud", corrective_actions="sweep", inspection_id=bad
            )
    assert _counts(r) == before
    ours = C.inspect_site(r, pid, "2026-03-04")
    v = C.issue_violation(
        r, pid, "2026-03-04", nature="mud", corrective_actions="sweep", inspection_id=ours
    )
    assert v and _counts(r)[1] == before[1] + 2


def test_viewer_reads_and_cannot_write(town):
    smo = rec.open_records(town, user="smo1")
    pid = P.save_project(smo, determination(town), date="2026-03-02")
    viewer = rec.open_records(town, user="guest", role="viewer")
    assert P.projects(viewer)["project_id"].tolist() == [pid]
    for call in (
        lambda: P.save_project(viewer, determination(town), date="2026-03-02"),
        lambda: P.advance_project(viewer, pid, "swppp_submitted", "2026-03-03"),
        lambda: P.update_project(viewer, pid, co_hold=True),
        lambda: C.stop_work(viewer, pid, "2026-03-03", reason="x"),
    ):
        with pytest.raises(PermissionError, match="viewer role"):
            call()
    assert _counts(smo) == (1, 0, 1)


def test_pack_rows(town):
    r = rec.open_records(town, user="smo1")
    pid = P.save_project(r, determination(town, created="2025-01-05"), date="2025-01-06")
    P.advance_project(r, pid, "swppp_submitted", "2025-01-07")
    P.advance_project(r, pid, "approved", "2025-01-10", approved_by="Board")
    C.notify_stage(
        r, pid, "start_of_construction", "2025-02-01T08:00", notified_at="2025-01-31T08:00"
    )
    P.advance_project(r, pid, "under_construction", "2025-02-01")
    ins = C.inspect_site(r, pid, "2025-02-10", findings="no silt fence", result="violations")
    v = C.issue_violation(
        r, pid, "2025-02-10", nature="no silt fence", corrective_actions="install"
    )
    s = C.stop_work(r, pid, "2025-02-11", reason="no silt fence")
    C.correct_violation(r, pid, v, "2025-02-20")
    C.lift_stop_work(r, pid, "2025-02-21")
    other = P.save_project(r, determination(town, created="2025-01-05"), date="2025-01-06")
    period = Period("permit_year", 2025, dt.date(2025, 1, 3), dt.date(2026, 1, 2))
    out = C.pack_rows(r, period)
    assert set(out) == {
        "active_projects",
        "stage_notices",
        "construction_inspections",
        "violation_notices",
        "stop_work_orders",
    }
    assert all(isinstance(df, pd.DataFrame) for df in out.values())
    assert out["active_projects"]["project_id"].tolist() == [pid]  # the screened one is not
    assert other not in out["active_projects"]["project_id"].tolist()
    notices = out["stage_notices"]
    assert notices["hours_ahead"].tolist() == [24.0] and notices["late"].tolist() == [True]
    assert out["construction_inspections"]["event_id"].tolist() == [ins]
    assert out["violation_notices"][["event_id", "corrected_on"]].values.tolist() == [
        [v, "2025-02-20"]
    ]
    assert out["stop_work_orders"][["event_id", "lifted_on"]].values.tolist() == [[s, "2025-02-21"]]
    earlier = C.pack_rows(r, Period("permit_year", 2024, dt.date(2024, 1, 3), dt.date(2025, 1, 2)))
    assert all(df.empty for df in earlier.values())


#: A commit of main before the projects tables (the code that made older records files).
PRE_PROJECTS = "0f2a1ee"


def test_old_records_file_gains_the_tables(town, tmp_path):
    """A records file made by the code of main (before projects) opens with the new
    tables added and nothing lost; a viewer of the old file reads no projects."""
    old = tmp_path / "old"
    src = subprocess.run(
        ["git", "-C", str(ROOT), "archive", PRE_PROJECTS, "src"], capture_output=True, check=False
    )
    if src.returncode:
        pytest.skip(f"no commit {PRE_PROJECTS} (a shallow clone) to take the old code from")
    old.mkdir()
    subprocess.run(["tar", "-x", "-C", str(old)], input=src.stdout, check=True)
    code = (
        "import ms4map.records as rec, sys\n"
        "r = rec.open_records(sys.argv[1], user='smo1')\n"
        "r.add_inspection('OF-1', '2025-06-02', flow_present=False)\n"
        "r.open_case('OF-2', '2025-06-03', description='suds')\n"
    )
    env = {"PYTHONPATH": str(old / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code, str(town)], check=True, env=env)
    path = rec.records_path(town)
    with sqlite3.connect(path) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "inspections" in names and "projects" not in names
    viewer = rec.open_records(town, user="guest", role="viewer")
    assert P.projects(viewer).empty and C.construction(viewer).empty
    assert viewer.verify()["ok"]
    r = rec.open_records(town, user="smo1")
    assert len(r.inspections()) == 1 and len(r.cases()) == 1
    pid = P.save_project(r, determination(town), date="2026-03-02")
    assert P.project(r, pid)["status"] == "screened"
    assert r.verify()["ok"] and len(r.audit()) == 3


def test_demo_screening_saved_as_project(demo_copy):
    """On the demo town: a site screened with evaluate_site is saved as a project with its
    determination and provenance frozen; its stage notice 30 hours ahead is late."""
    import ms4map
    from ms4map import pipeline
    from ms4map.datasets import alder_falls
    from ms4map.rules.conditions import evaluate_site

    ws = ms4map.open_workspace(demo_copy)
    res = pipeline.run(ws)
    scenarios = alder_falls.SCENARIO_PARCELS or alder_falls.build_layers().info["scenarios"]
    parcel = scenarios["a"]["parcel_id"]
    det = evaluate_site(
        res,
        parcel,
        disturbed_acres=6,
        project_type="residential",
        workspace=ws,
        application={"applicant": "Alder Homes", "project_name": "Creekside"},
    )
    r = rec.open_records(demo_copy, user="smo1")
    pid = P.save_project(r, det)
    p = P.project(r, pid)
    assert (p["project_name"], p["applicant"], p["parcel_ids"]) == (
        "Creekside",
        "Alder Homes",
        parcel,
    )
    assert bool(p["facility_required"]) is True  # Condition A: post-construction controls
    frozen = P.determination_of(r, pid)
    assert frozen["provenance"] == det.to_dict()["provenance"]
    assert frozen["conditions"]["A"]["value"] is True
    import hashlib

    assert hashlib.sha256(p["determination"].encode()).hexdigest() == p["determination_sha256"]
    today = dt.date.today()
    P.advance_project(r, pid, "swppp_submitted", today)
    P.advance_project(r, pid, "approved", today, approved_by="Planning Board")
    now = dt.datetime.now().replace(second=0, microsecond=0)
    eid = C.notify_stage(
        r, pid, "start_of_construction", now + dt.timedelta(hours=30), notified_at=now
    )
    row = C.construction(r, pid).set_index("event_id").loc[eid]
    assert row["hours_ahead"] == 30.0 and bool(row["late"]) is True
    _audit_equals_rows(r)


_KILLED = """
import sys, json
import ms4map.records as rec
from ms4map.records import construction as C, projects as P
r = rec.open_records(sys.argv[1], user="killed")
pid = P.save_project(r, json.loads(sys.argv[2]), date="2026-03-02")
P.advance_project(r, pid, "swppp_submitted", "2026-03-03")
P.advance_project(r, pid, "approved", "2026-03-04", approved_by="Board")
print("ready", flush=True)
i = 0
while True:
    i += 1
    C.inspect_site(r, pid, "2026-03-05", findings="x" * 2000)
    print(i, flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigkill_during_construction_writes_loses_nothing(town) -> None:
    import os
    import signal
    import time

    rec.open_records(town, user="setup")
    doc = json.dumps(determination(town))
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(town), doc],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    reported, deadline = 0, time.monotonic() + 30
    while reported < 30 and time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        if not line:
            break
        reported = int(line) if line.isdigit() else reported
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert reported >= 30, proc.stderr.read() if proc.stderr else ""
    r = rec.open_records(town, user="after")
    assert r.integrity_check() == "ok"
    n = len(C.construction(r))
    assert reported <= n <= reported + 1
    assert P.project(r, 1)["status"] == "approved"
    _audit_equals_rows(r)


def test_export_has_the_projects_and_construction(town, tmp_path) -> None:
    import pyogrio

    r = rec.open_records(town, user="smo1")
    pid = P.save_project(r, determination(town), date="2026-03-02")
    C.stop_work(r, pid, "2026-03-03", reason="no permit")
    out = r.export(tmp_path / "out.gpkg")
    layers = {name for name, _ in pyogrio.list_layers(out)}
    assert {"projects", "construction"} <= layers
    got = pyogrio.read_dataframe(out, layer="construction")
    assert got["kind"].tolist() == ["stop_work"]
    csv = r.export(tmp_path / "p.csv", table="projects")
    assert "Acme lot" in csv.read_text(encoding="utf-8")
