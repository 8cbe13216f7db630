"""Construction oversight of a project: stage notices, inspections, violations, stop-work orders.

The laws make the applicant notify the officer at least 48 hours (the profile's
``[construction] notice_hours``) before each stage of the profile's list; a notice that
comes later is recorded and flagged ``late``. Violations found are notified in writing
and, with a stop-work order, stop all work but site stabilization until they are
corrected and approved: while a violation is open or an order is in force, only a notice
of the stabilization stage is accepted and the project does not move to its next status
(:func:`blocking`, :func:`project_state`). Each row of the ``construction`` table is
append-only: a correction of a violation or the lifting of an order is a new version,
with its audit row in the same transaction. :func:`pack_rows` gives the compliance
pack's construction section.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pandas as pd

from ..core.errors import DataError
from . import gpkg, writes
from .fields import as_date, check_fields
from .project_fields import (
    CONSTRUCTION_FIELDS,
    STATUSES,
    as_moment,
    construction_rules,
    next_status,
)
from .projects import (
    _blocking_text,
    _current_rows,
    _open_rows,
    _profile,
    blocking,
    project,
    projects,
    read_table,
)
from .projects import _current as _project_row

__all__ = [
    "blocking",
    "construction",
    "correct_violation",
    "inspect_site",
    "issue_violation",
    "lift_stop_work",
    "notify_stage",
    "pack_rows",
    "project_state",
    "stop_work",
]

_APPROVED = STATUSES.index("approved")


# ---------------------------------------------------------------- reads
def construction(
    records: Any, project_id: int | None = None, *, history: bool = False
) -> pd.DataFrame:
    """The construction rows (current versions; every version with ``history``),
    optionally of one project, oldest first."""
    df = read_table(records, "construction", history=history)
    if project_id is not None:
        df = df[df["project_id"] == int(project_id)]
    return df.sort_values(["date", "event_id"], kind="stable").reset_index(drop=True)


def project_state(records: Any, project_id: int) -> dict[str, Any]:
    """A project's state: ``status``, ``next_step``, ``open_violations`` and
    ``stop_work_orders`` in force (event ids), ``work_allowed`` (``"all"`` or
    ``"site stabilization only"``), ``blocked_by`` (words), ``late_notices`` (count),
    ``co_hold`` and the guarantee (``guarantee``: kind, amount, released or drawn)."""
    p = project(records, project_id)
    rows = construction(records, project_id).to_dict("records")
    rows = [{k: (None if _na(v) else v) for k, v in r.items()} for r in rows]
    viol, stop = _open_rows(rows)
    late = sum(1 for r in rows if r["kind"] == "notice" and bool(r.get("late")))
    released, drawn = p.get("guarantee_released_on"), p.get("guarantee_drawn_on")
    return {
        "project_id": int(project_id),
        "project_name": p["project_name"],
        "status": p["status"],
        "step_on": p["step_on"],
        "next_step": next_status(p["status"]),
        "open_violations": viol,
        "stop_work_orders": stop,
        "work_allowed": "site stabilization only" if viol or stop else "all",
        "blocked_by": _blocking_text(viol, stop),
        "late_notices": late,
        "co_hold": bool(p.get("co_hold")),
        "guarantee": {
            "kind": p.get("guarantee_kind"),
            "amount": p.get("guarantee_amount"),
            "state": "released"
            if released
            else "drawn"
            if drawn
            else "held"
            if p.get("guarantee_kind")
            else "none recorded",
        },
    }


# ---------------------------------------------------------------- writes
def notify_stage(
    records: Any,
    project_id: int,
    stage: str,
    stage_at: Any,
    *,
    notified_at: Any,
    notes: str | None = None,
) -> int:
    """Record the applicant's notice of a construction stage; its ``event_id``.

    Parameters
    ----------
    stage : str
        A stage of the profile's ``[construction] stages`` (or its stabilization stage).
    stage_at : "YYYY-MM-DDTHH:MM"
        When the stage is to happen (may lie ahead).
    notified_at : "YYYY-MM-DDTHH:MM"
        When the notice was received; ``late`` when under the profile's
        ``notice_hours`` (48) before ``stage_at``.

    Raises
    ------
    DataError
        A stage not in the profile, a notice before the project was saved or in the
        future, a project not approved yet, any stage but stabilization while a
        violation is open or a stop-work order in force; nothing is written.
    """
    writes.need_edit(records, "recording a stage notice")
    when = as_moment(notified_at, "construction field 'notified_at'")
    at = as_moment(stage_at, "construction field 'stage_at'", allow_future=True)
    with gpkg.write_tx(records.path) as con:
        proj = _project_row(con, project_id)
        rules = construction_rules(_profile(records, con, proj))
        if stage not in rules.notice_stages:
            raise DataError(
                f"Construction field 'stage' = {stage!r} is not a stage of the profile "
                f"'{proj['profile']}'. Fix: select from {list(rules.notice_stages)}."
            )
        _not_before_saved(proj, when.date(), "notified_at")
        if STATUSES.index(proj["status"]) < _APPROVED:
            raise DataError(
                f"Project {project_id} is '{proj['status']}': no construction stage is "
                "notified before the SWPPP is approved. Fix: advance the project to "
                "'approved' first."
            )
        viol, stop = _open_rows(_current_rows(con, int(project_id)))
        if (viol or stop) and stage != rules.stabilization_stage:
            raise DataError(
                f"Project {project_id}: {_blocking_text(viol, stop)}; no further work but "
                f"site stabilization may proceed, so a notice of '{stage}' is refused. Fix: "
                "correct the violations and lift the order first, or notify "
                f"'{rules.stabilization_stage}'."
            )
        hours = (at - when).total_seconds() / 3600.0
        values = check_fields(
            {
                "stage": stage,
                "notified_at": f"{when:%Y-%m-%dT%H:%M}",
                "stage_at": f"{at:%Y-%m-%dT%H:%M}",
                "hours_ahead": round(hours, 2),
                "late": hours < rules.notice_hours,
                "notes": notes,
            },
            CONSTRUCTION_FIELDS,
            where="construction",
        )
        return _add(records, con, project_id, "notice", when.date(), values=values)


def inspect_site(
    records: Any,
    project_id: int,
    date: dt.date | str,
    *,
    inspector: str | None = None,
    findings: str | None = None,
    result: str = "approved",
    notes: str | None = None,
) -> int:
    """Record a construction inspection (``result``: ``approved`` or ``violations``);
    its ``event_id``. Violations found are then notified with :func:`issue_violation`."""
    writes.need_edit(records, "recording a construction inspection")
    day = as_date(date, "construction field 'date'")
    values = check_fields(
        {
            "inspector": inspector or records.user,
            "findings": findings,
            "result": result,
            "notes": notes,
        },
        CONSTRUCTION_FIELDS,
        where="construction",
    )
    if values["result"] == "violations" and not values.get("findings"):
        raise DataError(
            "Construction field 'findings' is needed when the result is 'violations'. "
            "Fix: say what was found (findings=, --findings TEXT)."
        )
    return _add_event(records, project_id, "inspection", day, values)


def _add_event(
    records: Any,
    project_id: int,
    kind: str,
    day: dt.date,
    values: dict[str, Any],
    *,
    check: Callable[[Any], None] | None = None,
) -> int:
    """Write a new event ``kind`` of ``day`` on project ``project_id`` (refused before the
    day the project was saved, and when ``check(con)`` refuses); its ``event_id``."""
    with gpkg.write_tx(records.path) as con:
        _not_before_saved(_project_row(con, project_id), day, "date")
        if check is not None:
            check(con)
        return _add(records, con, project_id, kind, day, values=values)


def issue_violation(
    records: Any,
    project_id: int,
    date: dt.date | str,
    *,
    nature: str,
    corrective_actions: str,
    remedy_deadline: dt.date | str | None = None,
    inspection_id: int | None = None,
    notes: str | None = None,
) -> int:
    """Record a written notice of violation (its nature and the corrective actions the
    law asks it to state); its ``event_id``. Open until :func:`correct_violation`."""
    writes.need_edit(records, "recording a violation notice")
    day = as_date(date, "construction field 'date'")
    for name, text in (("nature", nature), ("corrective_actions", corrective_actions)):
        if not (text or "").strip():
            raise DataError(
                f"Construction field '{name}' is needed for a violation notice: the law "
                "notifies 'the nature of the violation and the required corrective "
                f"actions'. Fix: give {name}= (--{name.replace('_', '-')} TEXT)."
            )
    values = check_fields(
        {
            "nature": nature,
            "corrective_actions": corrective_actions,
            "inspection_id": inspection_id,
            "notes": notes,
        },
        CONSTRUCTION_FIELDS,
        where="construction",
    )
    if remedy_deadline is not None:
        dl = as_date(remedy_deadline, "construction field 'remedy_deadline'", allow_future=True)
        if dl < day:
            raise DataError(
                f"Construction field 'remedy_deadline' = {dl} is before the notice ({day}). "
                "Fix: give a later deadline."
            )
        values["remedy_deadline"] = dl.isoformat()

    def inspection_of_project(con: Any) -> None:
        if inspection_id is None:
            return
        ins = writes._current(con, "construction", int(inspection_id))
        if ins is None or ins["kind"] != "inspection" or ins["project_id"] != int(project_id):
            raise DataError(
                f"Construction field 'inspection_id' = {inspection_id} is not an "
                f"inspection of project {project_id}. Fix: see ms4map project show."
            )

    return _add_event(records, project_id, "violation", day, values, check=inspection_of_project)


def correct_violation(
    records: Any,
    project_id: int,
    event_id: int,
    date: dt.date | str,
    *,
    approved_by: str | None = None,
    notes: str | None = None,
) -> int:
    """Record that a violation was corrected and the work approved (a new version of the
    notice); the version."""
    writes.need_edit(records, "recording a corrected violation")
    day = as_date(date, "construction field 'corrected_on'")
    with gpkg.write_tx(records.path) as con:
        old = _event(con, project_id, event_id, "violation")
        if old.get("corrected_on"):
            raise DataError(
                f"Violation notice {event_id} was corrected on {old['corrected_on']}. "
                "Nothing was written."
            )
        _not_before(old, day, "corrected_on")
        extra = {
            "corrected_on": day.isoformat(),
            "corrected_approved_by": approved_by or records.user,
        }
        if notes:
            extra["notes"] = notes
        return _new_version(records, con, old, extra, action="corrected")


def stop_work(
    records: Any, project_id: int, date: dt.date | str, *, reason: str, notes: str | None = None
) -> int:
    """Issue a stop-work order (all work halts but stabilization until it is lifted);
    its ``event_id``."""
    writes.need_edit(records, "issuing a stop-work order")
    day = as_date(date, "construction field 'date'")
    if not (reason or "").strip():
        raise DataError(
            "Construction field 'reason' is needed for a stop-work order (the violations it "
            "is issued for). Fix: give reason= (--reason TEXT)."
        )
    values = check_fields(
        {"reason": reason, "notes": notes}, CONSTRUCTION_FIELDS, where="construction"
    )
    return _add_event(records, project_id, "stop_work", day, values)


def lift_stop_work(
    records: Any,
    project_id: int,
    date: dt.date | str,
    *,
    event_id: int | None = None,
    notes: str | None = None,
) -> int:
    """Lift a stop-work order (the one in force when ``event_id`` is not given) once the
    officer confirms compliance: refused while a violation notice is open; the version."""
    writes.need_edit(records, "lifting a stop-work order")
    day = as_date(date, "construction field 'lifted_on'")
    with gpkg.write_tx(records.path) as con:
        _project_row(con, project_id)
        viol, stop = _open_rows(_current_rows(con, int(project_id)))
        if event_id is None:
            if not stop:
                raise DataError(f"Project {project_id} has no stop-work order in force.")
            event_id = stop[-1]
        old = _event(con, project_id, event_id, "stop_work")
        if old.get("lifted_on"):
            raise DataError(f"Stop-work order {event_id} was lifted on {old['lifted_on']}.")
        if viol:
            raise DataError(
                f"Stop-work order {event_id} stays in force until the violations are "
                f"addressed: violation notice(s) {', '.join(map(str, viol))} open. Fix: "
                "record their correction first (ms4map project violation ... --corrected ID)."
            )
        _not_before(old, day, "lifted_on")
        extra = {"lifted_on": day.isoformat(), "lifted_by": records.user}
        if notes:
            extra["notes"] = notes
        return _new_version(records, con, old, extra, action="lifted")


# ---------------------------------------------------------------- the compliance pack
def pack_rows(records: Any, period: Any) -> dict[str, pd.DataFrame]:
    """The construction section of the compliance pack for ``period`` (a
    :class:`~ms4map.records.periods.Period`): section name -> rows.

    ``active_projects``: projects approved and not past ``as_built_received`` at the
    period's end, or with any construction row in the period; ``stage_notices``
    (received in the period, with ``late``), ``construction_inspections``,
    ``violation_notices`` (issued in the period, with ``corrected_on``),
    ``stop_work_orders`` (issued in the period or in force during it).
    """
    lo, hi = period.start.isoformat(), period.end.isoformat()
    rows = construction(records)  # current versions (a correction, a lifting: dated)
    hist = projects(records, history=True)  # each project at its last step in the period
    hist = hist[hist["step_on"].astype(str) <= hi]
    prj = hist.sort_values("version").groupby("project_id", as_index=False).tail(1)
    in_period = rows[(rows["date"].astype(str) >= lo) & (rows["date"].astype(str) <= hi)]
    building = prj["status"].isin(STATUSES[_APPROVED : STATUSES.index("as_built_received") + 1])
    active = prj[building | prj["project_id"].isin(in_period["project_id"])]
    pcols = ["project_id", "project_name", "applicant", "status", "step_on", "saved_on"]

    def kind(k: str, cols: list[str]) -> pd.DataFrame:
        df = in_period[in_period["kind"] == k]
        return df[["event_id", "project_id", "date", *cols]].reset_index(drop=True)

    stops = rows[rows["kind"] == "stop_work"]
    lifted = stops["lifted_on"].astype("string").fillna("9999-12-31")
    stops = stops[(stops["date"].astype(str) <= hi) & (lifted >= lo)]
    return {
        "active_projects": active[pcols].sort_values("project_id").reset_index(drop=True),
        "stage_notices": kind(
            "notice", ["stage", "notified_at", "stage_at", "hours_ahead", "late"]
        ),
        "construction_inspections": kind("inspection", ["inspector", "result", "findings"]),
        "violation_notices": kind(
            "violation", ["nature", "corrective_actions", "remedy_deadline", "corrected_on"]
        ),
        "stop_work_orders": stops[
            ["event_id", "project_id", "date", "reason", "lifted_on"]
        ].reset_index(drop=True),
    }


# ---------------------------------------------------------------- helpers
def _add(records: Any, con: Any, project_id: Any, kind: str, day: dt.date, *, values: dict) -> int:
    row = {
        "event_id": writes._next_id(con, "construction"),
        "version": 1,
        "project_id": int(project_id),
        "kind": kind,
        "date": day.isoformat(),
        **values,
    }
    writes._insert(records, con, "construction", row, action=kind)
    return int(row["event_id"])


def _new_version(records: Any, con: Any, old: dict, extra: dict, *, action: str) -> int:
    values = check_fields(extra, CONSTRUCTION_FIELDS, where="construction")
    row = {**old, **values, "version": int(old["version"]) + 1}
    writes._insert(records, con, "construction", row, action=action, old=old)
    return int(row["version"])


def _event(con: Any, project_id: Any, event_id: Any, kind: str) -> dict[str, Any]:
    old = writes._current(con, "construction", int(event_id))
    if old is None or old["kind"] != kind or int(old["project_id"]) != int(project_id):
        words = {"violation": "violation notice", "stop_work": "stop-work order"}[kind]
        raise DataError(
            f"Field 'event_id' = {event_id} is not a {words} of project {project_id}. "
            "Fix: see ms4map project show."
        )
    return old


def _not_before_saved(proj: dict[str, Any], day: dt.date, field: str) -> None:
    if day.isoformat() < str(proj["saved_on"]):
        raise DataError(
            f"Construction field '{field}' = {day} is before project {proj['project_id']} "
            f"was saved ({proj['saved_on']}). Fix: check the date."
        )


def _not_before(old: dict[str, Any], day: dt.date, field: str) -> None:
    if day.isoformat() < str(old["date"]):
        raise DataError(
            f"Construction field '{field}' = {day} is before the {old['kind']} it closes "
            f"({old['date']}). Fix: check the date."
        )


def _na(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False
