"""Land development projects in the records file: saved from a screening, moved step by step.

A site's determination (``ms4map screen --json``, :func:`ms4map.evaluate_site`) is saved
as a project with the document frozen into it (its JSON, with its provenance, and the
JSON's SHA-256). The project's status moves only along :data:`STATUSES` (``screened ->
swppp_submitted -> approved -> under_construction -> as_built_received ->
one_year_inspected -> guarantee_released -> maintained``), one step at a time, each step
a new version of the project's row with its audit row (who, when) in the same
transaction. The preconditions the laws set are checked first (docs/records.md,
"Projects"); an illegal move is refused, naming the allowed next step, and nothing is
written. Construction oversight (stage notices, inspections, violation notices, stop-work
orders) is :mod:`~ms4map.records.construction`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError
from . import gpkg, reads, writes
from .case_profile import case_profile, keep_profile, kept_profiles
from .fields import as_date, check_fields
from .project_fields import (
    FUTURE_DATES,
    PROJECT_FIELDS,
    STATUSES,
    STEP_DATE,
    UPDATE_FIELDS,
    add_years,
    construction_rules,
    next_status,
)

__all__ = [
    "STATUSES",
    "advance_project",
    "blocking",
    "determination_of",
    "project",
    "project_history",
    "projects",
    "save_project",
    "update_project",
]

_SCHEMA = "ms4map.determination"


# ---------------------------------------------------------------- reads
def table_exists(records: Any, table: str) -> bool:
    """Whether the records file has ``table`` (a file of an older ms4map that only a
    viewer has opened since lacks the new tables: it reads as empty)."""
    if not records.path.exists():
        return False
    with gpkg.read_tx(records.path) as con:
        return bool(
            con.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name = ?", (table,)
            ).fetchone()
        )


def read_table(records: Any, table: str, *, history: bool = False) -> pd.DataFrame:
    """The current rows of ``table`` (every version with ``history``); empty when the file
    or the table is not there yet."""
    if not table_exists(records, table):
        return reads._empty(records, table)
    df = reads._read(records, table, history=history)
    for f in gpkg.TABLES[table]["fields"]:
        if f.kind == "bool":
            df[f.name] = df[f.name].astype("boolean")
        elif f.kind == "int":
            df[f.name] = df[f.name].astype("Int64")
    return df


def projects(records: Any, *, history: bool = False) -> pd.DataFrame:
    """The projects (current versions; every version with ``history``), without the
    determination document (see :func:`determination_of`), with ``next_step``."""
    df = read_table(records, "projects", history=history).drop(columns=["determination"])
    df["next_step"] = [next_status(s) if s in STATUSES else None for s in df["status"]]
    return df


def project(records: Any, project_id: int) -> dict[str, Any]:
    """The current version of one project as a dict (the determination included).

    Raises
    ------
    DataError
        No such project.
    """
    df = read_table(records, "projects")
    hit = df[df["project_id"] == int(project_id)]
    if not len(hit):
        raise _no_project(project_id)
    row = hit.iloc[0].to_dict()
    return {k: (None if _na(v) else v) for k, v in row.items()}


def project_history(records: Any, project_id: int) -> pd.DataFrame:
    """Every version of one project, oldest first (its steps and updates)."""
    df = projects(records, history=True)
    return df[df["project_id"] == int(project_id)].reset_index(drop=True)


def determination_of(records: Any, project_id: int) -> dict[str, Any]:
    """The determination document frozen into the project (as saved)."""
    return json.loads(project(records, project_id)["determination"])


# ---------------------------------------------------------------- writes
def save_project(
    records: Any,
    determination: Any,
    *,
    date: dt.date | str | None = None,
    name: str | None = None,
    applicant: str | None = None,
    notes: str | None = None,
) -> int:
    """Save a site's determination as a new project (status ``screened``); its id.

    Parameters
    ----------
    records : Records
    determination : Determination, dict, JSON text or path
        The determination (``ms4map screen --json`` output, a ``Determination`` or its
        ``to_dict()``); frozen into the project as JSON with its SHA-256.
    date : date or "YYYY-MM-DD", optional
        The day the project is saved (default today); not before the determination.
    name, applicant : str, optional
        Default: the determination's application ``project_name`` and ``applicant``
        (else the site's label).

    Raises
    ------
    DataError
        Not a determination document, one made in another workspace, a date before
        it; nothing is written.
    PermissionError
        A viewer.
    """
    writes.need_edit(records, "saving a project")
    doc = _document(determination)
    day = as_date(date or dt.date.today(), "project field 'saved_on'")
    _check_document(records, doc, day)
    app = doc.get("application") or {}
    site = doc.get("site") or {}
    items = doc.get("swppp_items") or {}
    values = check_fields(
        {
            "applicant": applicant or app.get("applicant"),
            "site_label": site.get("label"),
            "parcel_ids": ",".join(str(p) for p in site.get("parcel_ids") or []) or None,
            "swppp_required": bool((doc.get("swppp_required") or {}).get("value")),
            "facility_required": bool(items.get("post_construction_required")),
            "notes": notes,
        },
        PROJECT_FIELDS,
        where="project",
    )
    text = json.dumps(doc, sort_keys=True, default=str)
    title = name or app.get("project_name") or site.get("label") or "project"
    with gpkg.write_tx(records.path) as con:
        row = {
            "project_id": writes._next_id(con, "projects"),
            "version": 1,
            "project_name": str(title).strip(),
            "status": "screened",
            "step_on": day.isoformat(),
            "profile": records.profile.name,
            "saved_on": day.isoformat(),
            "determination": text,
            "determination_sha256": hashlib.sha256(text.encode()).hexdigest(),
            **values,
        }
        writes._insert(records, con, "projects", row, action="save")
        keep_profile(con, records.profile)
    return int(row["project_id"])


def advance_project(
    records: Any,
    project_id: int,
    step: str,
    date: dt.date | str,
    *,
    approved_by: str | None = None,
    engineer: str | None = None,
    acceptable: bool | None = None,
    notes: str | None = None,
) -> int:
    """Move a project to its next status ``step`` on ``date``; the new version.

    Parameters
    ----------
    step : str
        The one status after the project's (:data:`STATUSES`).
    approved_by : str
        Who approved the SWPPP (step ``approved``; required).
    engineer : str
        The professional engineer who certified the as-built plans (step
        ``as_built_received``; required).
    acceptable : bool
        Whether the one-year inspection found the facilities acceptable (step
        ``one_year_inspected``; only an acceptable one moves the project).

    Raises
    ------
    DataError
        A step out of order (naming the allowed one), a date before the step it follows
        or in the future, a precondition the law sets not met, an open violation or a
        stop-work order in force; nothing is written.
    PermissionError
        A viewer.
    """
    writes.need_edit(records, "advancing a project")
    if step not in STATUSES or step == "screened":
        raise DataError(
            f"Project field 'status' = {step!r} is not a step. Fix: select from "
            f"{list(STATUSES[1:])} (in this order)."
        )
    col = STEP_DATE[step]
    day = as_date(date, f"project field '{col}'")
    with gpkg.write_tx(records.path) as con:
        old = _current(con, project_id)
        allowed = next_status(old["status"])
        if step != allowed:
            raise DataError(
                f"Project {project_id} is '{old['status']}': it cannot move to '{step}'. "
                + (
                    f"Fix: the allowed next step is '{allowed}' (order: {' -> '.join(STATUSES)})."
                    if allowed
                    else "It is maintained: that is the last step."
                )
            )
        values = _step_values(
            step,
            day,
            approved_by=approved_by,
            engineer=engineer,
            acceptable=acceptable,
            notes=notes,
        )
        if day.isoformat() < str(old["step_on"]):
            raise DataError(
                f"Project field '{col}' = {day} is before the project's last step "
                f"'{old['status']}' ({old['step_on']}). Fix: check the date."
            )
        rules = construction_rules(_profile(records, con, old))
        _check_preconditions(old, step, day, rules)
        blocked = blocking(con, int(project_id))
        if blocked:
            raise DataError(
                f"Project {project_id} cannot move to '{step}': {blocked}. No further work "
                "but site stabilization proceeds until the violations are corrected and "
                "approved (the law). Fix: record the correction (ms4map project violation "
                "... --corrected ID) or lift the order (ms4map project lift ...) first."
            )
        row = {**old, **values, "version": int(old["version"]) + 1}
        row["status"], row["step_on"] = step, day.isoformat()
        writes._insert(records, con, "projects", row, action=step, old=old)
    return int(row["version"])


def update_project(
    records: Any, project_id: int, *, expected_version: int | None = None, **fields: Any
) -> int:
    """Record the guarantee, easement, certificate-of-occupancy hold, applicant or notes
    of a project (a new version); the version.

    ``fields`` are from :data:`~ms4map.records.project_fields.UPDATE_FIELDS`
    (``guarantee_kind`` one the profile's law names; ``guarantee_expires_on`` may lie
    ahead). The step dates move only with :func:`advance_project`.

    Raises
    ------
    DataError
        An unknown or step field, a bad value, a guarantee kind the law does not name,
        a drawn guarantee without a kind, or the row changed since ``expected_version``.
    PermissionError
        A viewer.
    """
    writes.need_edit(records, "changing a project")
    bad = sorted(set(fields) - set(UPDATE_FIELDS))
    if bad:
        steps = sorted(set(bad) & set(STEP_DATE.values()))
        raise DataError(
            f"Project field(s) {bad} cannot be changed here. Fix: "
            + (
                "a step's date is set by advancing the project (ms4map project advance). "
                if steps
                else ""
            )
            + f"Change only {list(UPDATE_FIELDS)}."
        )
    if not fields:
        raise DataError(
            "Nothing to change. Fix: give the fields, e.g. guarantee_kind='cash_escrow'."
        )
    given = dict(fields)
    ahead = {}
    for k in FUTURE_DATES:
        if given.get(k) is not None:
            ahead[k] = as_date(given.pop(k), f"project field '{k}'", allow_future=True).isoformat()
    values = {**check_fields(given, PROJECT_FIELDS, where="project"), **ahead}
    with gpkg.write_tx(records.path) as con:
        old = _current(con, project_id)
        if expected_version is not None and int(old["version"]) != int(expected_version):
            raise DataError(
                f"Project {project_id} changed since version {expected_version}: it is at "
                f"version {old['version']} by {old.get('created_by')}. Nothing was written. "
                "Fix: read it again and make the change on that version."
            )
        rules = construction_rules(_profile(records, con, old))
        row = {**old, **values, "version": int(old["version"]) + 1}
        _check_update(row, rules)
        writes._insert(records, con, "projects", row, action="update", old=old)
    return int(row["version"])


# ---------------------------------------------------------------- rules
def _open_rows(rows: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The open violations and the stop-work orders in force among current rows."""
    viol = [int(r["event_id"]) for r in rows if r["kind"] == "violation" and not r["corrected_on"]]
    stop = [int(r["event_id"]) for r in rows if r["kind"] == "stop_work" and not r["lifted_on"]]
    return viol, stop


def _current_rows(con: Any, project_id: int) -> list[dict[str, Any]]:
    cur = con.execute(
        "SELECT * FROM construction c WHERE project_id = ? AND version = (SELECT MAX(version) "
        "FROM construction d WHERE d.event_id = c.event_id) ORDER BY event_id",
        (int(project_id),),
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _blocking_text(viol: list[int], stop: list[int]) -> str:
    parts = []
    if viol:
        parts.append("open violation notice(s) " + ", ".join(str(v) for v in viol))
    if stop:
        parts.append("stop-work order(s) " + ", ".join(str(s) for s in stop) + " in force")
    return " and ".join(parts)


def blocking(con: Any, project_id: int) -> str:
    """What stops a project's work but stabilization ('' when nothing): its open
    violation notices and stop-work orders in force (``con``: an open connection)."""
    return _blocking_text(*_open_rows(_current_rows(con, project_id)))


def _step_values(
    step: str,
    day: dt.date,
    *,
    approved_by: str | None,
    engineer: str | None,
    acceptable: bool | None,
    notes: str | None,
) -> dict[str, Any]:
    """The columns a step sets, with what the law asks for it (checked)."""
    extra: dict[str, Any] = {STEP_DATE[step]: day.isoformat()}
    if notes:
        extra["notes"] = notes
    if step == "approved":
        if not (approved_by or "").strip():
            raise DataError(
                "Project field 'approved_by' is needed for step 'approved'. Fix: give who "
                "approved the SWPPP (approved_by=, --approved-by NAME)."
            )
        extra["approved_by"] = approved_by
    if step == "as_built_received":
        if not (engineer or "").strip():
            raise DataError(
                "Project field 'as_built_engineer' is needed for step 'as_built_received': "
                "the laws ask for as-built plans certified by a professional engineer. Fix: "
                "give the engineer (engineer=, --engineer 'NAME, PE LICENSE')."
            )
        extra["as_built_engineer"] = engineer
    if step == "one_year_inspected":
        if acceptable is not True:
            raise DataError(
                "Project field 'one_year_acceptable' must be yes for step "
                "'one_year_inspected': the guarantee stays until a one-year inspection finds "
                "the facilities acceptable. Fix: record the inspection's findings "
                "(ms4map project inspect ... --result violations) and a violation notice, "
                "and advance when an inspection finds them acceptable (--acceptable)."
            )
        extra["one_year_acceptable"] = True
    return check_fields(extra, PROJECT_FIELDS, where="project")


def _check_preconditions(old: Mapping[str, Any], step: str, day: dt.date, rules: Any) -> None:
    """What the laws ask before ``step`` (docs/records.md, "Projects")."""
    pid = old["project_id"]
    if (
        step == "approved"
        and rules.easement_before_approval
        and bool(old.get("facility_required"))
        and not bool(old.get("easement_recorded"))
    ):
        raise DataError(
            f"Project {pid} cannot be approved: its determination requires post-construction "
            "stormwater management practices, and the law requires a maintenance easement "
            "recorded before approval. Fix: record the easement first (ms4map project "
            "update ... --easement-recorded --easement-where 'County Clerk, liber/page')."
        )
    as_built = _day(old.get("as_built_on"))
    if step in ("one_year_inspected", "guarantee_released") and as_built is not None:
        first = add_years(as_built, rules.guarantee_min_years)
        if day < first:
            what = "one-year inspection" if step == "one_year_inspected" else "guarantee release"
            raise DataError(
                f"Project {pid}: the {what} on {day} is less than {rules.guarantee_min_years} "
                f"year(s) after the as-built plans ({as_built}); the performance guarantee "
                f"stays in force at least that long. Fix: record it on or after {first}."
            )
    if step == "guarantee_released" and not bool(old.get("one_year_acceptable")):
        raise DataError(
            f"Project {pid}: the guarantee is released only after a one-year inspection "
            "found the facilities acceptable. Fix: advance to 'one_year_inspected' first."
        )


def _check_update(row: Mapping[str, Any], rules: Any) -> None:
    """A project's guarantee and easement fields as the law allows them."""
    pid = row["project_id"]
    kind = row.get("guarantee_kind")
    if kind is not None and kind not in rules.guarantee_kinds:
        raise DataError(
            f"Project field 'guarantee_kind' = {kind!r} is not a guarantee the profile's law "
            f"names. Fix: select from {list(rules.guarantee_kinds)}."
        )
    if row.get("guarantee_drawn_on") and not kind:
        raise DataError(
            f"Project {pid}: field 'guarantee_drawn_on' is set but no guarantee is recorded. "
            "Fix: give guarantee_kind (and amount) first."
        )
    drawn, amount = row.get("guarantee_drawn_amount"), row.get("guarantee_amount")
    if drawn is not None and amount is not None and float(drawn) > float(amount):
        raise DataError(
            f"Project field 'guarantee_drawn_amount' = {drawn} is more than the guarantee "
            f"({amount}). Fix: check the amounts."
        )
    for col in ("guarantee_posted_on", "guarantee_drawn_on", "easement_recorded_on"):
        if row.get(col) and str(row[col]) < str(row["saved_on"]):
            raise DataError(
                f"Project field '{col}' = {row[col]} is before the project was saved "
                f"({row['saved_on']}). Fix: check the date."
            )
    if row.get("easement_recorded_on") and not row.get("easement_recorded"):
        raise DataError(
            "Project field 'easement_recorded_on' is set but 'easement_recorded' is no. "
            "Fix: give easement_recorded=yes with its date."
        )


def _document(determination: Any) -> dict[str, Any]:
    """The determination as its JSON document (a dict)."""
    if hasattr(determination, "to_dict"):
        return determination.to_dict()
    if isinstance(determination, Mapping):
        return json.loads(json.dumps(dict(determination), default=str))
    text = determination
    if isinstance(determination, Path) or (
        isinstance(determination, str) and not determination.lstrip().startswith("{")
    ):
        p = Path(determination).expanduser()
        if not p.is_file():
            raise DataError(
                f"Determination file '{p}' does not exist. Fix: write it with "
                "ms4map screen WORKSPACE --site ID --acres N --json > determination.json."
            )
        text = p.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"The determination is not JSON ({exc}). Fix: give the output of ms4map screen "
            "... --json."
        ) from None
    if not isinstance(doc, dict):
        raise DataError("The determination is not a JSON object. Fix: give ms4map screen --json.")
    return doc


def _check_document(records: Any, doc: Mapping[str, Any], day: dt.date) -> None:
    """A determination of this workspace, made on or before ``day``."""
    if doc.get("schema") != _SCHEMA or "conditions" not in doc or "provenance" not in doc:
        raise DataError(
            f"The document is not an ms4map determination (schema {doc.get('schema')!r}, "
            f"expected {_SCHEMA!r} with conditions and provenance). Fix: give the output "
            "of ms4map screen ... --json."
        )
    ws = doc.get("workspace") or {}
    path = ws.get("path")
    if path and Path(path).exists() and Path(path).resolve() != Path(records.workspace).resolve():
        raise DataError(
            f"The determination was made in workspace '{path}', not in '{records.workspace}'. "
            "Fix: save it in that workspace's records, or screen the site in this one."
        )
    created = str((doc.get("provenance") or {}).get("created") or "")[:10]
    if created and day.isoformat() < created:
        raise DataError(
            f"Project field 'saved_on' = {day} is before the determination was made "
            f"({created}). Fix: check the date."
        )


def _current(con: Any, project_id: Any) -> dict[str, Any]:
    try:
        pid = int(project_id)
    except (TypeError, ValueError):
        raise _no_project(project_id) from None
    old = writes._current(con, "projects", pid)
    if old is None:
        raise _no_project(project_id)
    return old


def _no_project(project_id: Any) -> DataError:
    return DataError(
        f"Field 'project_id' = {project_id}: no such project. Fix: see ms4map project list."
    )


def _profile(records: Any, con: Any, row: Mapping[str, Any]) -> Any:
    """The profile the project was saved under (the session's when it is not at hand)."""
    prof = case_profile(row.get("profile"), records.profile, kept_profiles(con))
    return prof if prof is not None else records.profile


def _day(v: Any) -> dt.date | None:
    return None if v in (None, "") or _na(v) else dt.date.fromisoformat(str(v)[:10])


def _na(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False
