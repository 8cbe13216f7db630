"""The records store's writes: a new row version and its audit row, in one transaction.

:class:`~ms4map.records.records.Records` calls these with itself as the first argument.
Every table is append-only: a write inserts a row (or a new version of one) and its
audit row in the same write transaction (:func:`ms4map.records.gpkg.write_tx`), with
its photos, so a change is written whole or not at all.  The refusals (a viewer, an
unknown outfall, a case or sample recorded twice, a correction that breaks the rules
of the first recording) are checked before anything is written.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import DataError
from ..core.qa import shown_ids
from ..rules.profiles import Profile, remedy_deadline, remedy_period_end
from . import gpkg, tamper
from .case_profile import case_profile, keep_profile, kept_profiles, profile_not_known
from .cases import STEPS, _d, check_case_row, check_step
from .fields import CASE_FIELDS, INSPECTION_FIELDS, SAMPLE_FIELDS, as_date, check_fields
from .layers import check_parcel, structure_point
from .photos import check_photo

__all__ = [
    "add_inspection",
    "add_sample",
    "advance_case",
    "attach",
    "check_outfall",
    "correct",
    "file_srs_id",
    "need_edit",
    "open_case",
]

_SPECS = {
    "inspections": INSPECTION_FIELDS,
    "samples": SAMPLE_FIELDS,
    "cases": CASE_FIELDS,
}


def add_inspection(
    records: Any, outfall_id: str, date: dt.date | str, /, *, photos: Any, **fields: Any
) -> int:
    """Record one outfall inspection and its photos; its ``inspection_id``."""
    need_edit(records, "adding an inspection")
    oid, geom = check_outfall(records, outfall_id)
    day = as_date(date, "inspection field 'date'").isoformat()
    values = check_fields(fields, INSPECTION_FIELDS, where="inspection")
    if not values.get("inspector"):  # not given, or blank: who records it
        values["inspector"] = records.user
    checked = _checked_photos(photos)
    with gpkg.write_tx(records.path) as con:
        row = _first_version(records, con, "inspections", geom, outfall_id=oid, date=day, **values)
        _insert(records, con, "inspections", row, action="insert")
        for ph in checked:
            _attach_in(records, con, "inspections", row["inspection_id"], ph)
    return row["inspection_id"]


def open_case(
    records: Any,
    outfall_id: str,
    date: dt.date | str,
    *,
    origin: str,
    description: str | None,
    inspection_id: int | None,
    notes: str | None,
    photos: Any,
    again: bool,
) -> int:
    """Open a case at an outfall (a repeat of one still open refused); its ``case_id``."""
    need_edit(records, "opening a case")
    oid, geom = check_outfall(records, outfall_id)
    day = as_date(date, "case field 'opened_on'")
    values = check_fields(
        {
            "origin": origin,
            "description": description,
            "inspection_id": inspection_id,
            "notes": notes,
        },
        CASE_FIELDS,
        where="case",
    )
    checked = _checked_photos(photos)
    with gpkg.write_tx(records.path) as con:
        if inspection_id is not None:
            ins = _current(con, "inspections", int(values["inspection_id"]))
            if ins is None:
                raise DataError(
                    f"Case field 'inspection_id' = {inspection_id}: no such inspection. "
                    "Fix: give the id add_inspection returned (see records.inspections())."
                )
        if not again:
            _refuse_repeated_case(con, oid, day.isoformat(), values)
        row = _first_version(
            records,
            con,
            "cases",
            geom,
            outfall_id=oid,
            status="opened",
            step="opened",
            step_on=day.isoformat(),
            profile=records.profile.name,
            opened_on=day.isoformat(),
            **values,
        )
        _insert(records, con, "cases", row, action="open")
        keep_profile(con, records.profile)
        for ph in checked:
            _attach_in(records, con, "cases", row["case_id"], ph)
    return row["case_id"]


def advance_case(
    records: Any,
    case_id: int,
    step: str,
    date: dt.date | str,
    *,
    parcel_id: str | None,
    deadline: dt.date | str | None,
    outcome: str | None,
    reason: str | None,
    notes: str | None,
    photos: Any,
) -> int:
    """Record the next step of a case (a new version of its row); the version."""
    need_edit(records, "advancing a case")
    if step not in STEPS or step == "opened":
        raise DataError(f"Unknown case step {step!r}. Fix: select from {list(STEPS)[1:]}.")
    col = STEPS[step][0]
    day = as_date(date, f"case field '{col}'")
    extra: dict[str, Any] = {col: day.isoformat()}
    if step == "source_found":
        if not parcel_id:
            raise DataError(
                "Case field 'source_parcel_id' is needed for step 'source_found'. "
                "Fix: give parcel_id= (the parcel the discharge comes from)."
            )
        check_parcel(records, str(parcel_id))
        extra["source_parcel_id"] = str(parcel_id)
    if step == "appeal_decided":
        if outcome is None:
            raise DataError(
                "Case field 'appeal_outcome' is needed for step 'appeal_decided'. "
                "Fix: give outcome='upheld' or outcome='overturned'."
            )
        extra["appeal_outcome"] = outcome
    if step == "notice_sent":
        dl = (
            None
            if deadline is None
            else as_date(deadline, "case field 'remedy_deadline'", allow_future=True)
        )
        if dl is not None and dl < day:
            raise DataError(
                f"Case field 'remedy_deadline' = {dl} is before the notice ({day}). "
                "Fix: give a later deadline."
            )
        extra["remedy_deadline"] = None if dl is None else dl.isoformat()
    elif deadline is not None:
        raise DataError("Case field 'remedy_deadline' is set only with step 'notice_sent'.")
    if step == "closed" and reason:
        extra["closed_reason"] = reason
    if notes:
        extra["notes"] = notes
    values = check_fields(
        {k: v for k, v in extra.items() if k not in ("remedy_deadline",)},
        CASE_FIELDS,
        where="case",
    )
    if "remedy_deadline" in extra:
        values["remedy_deadline"] = extra["remedy_deadline"]
    checked = _checked_photos(photos)
    with gpkg.write_tx(records.path) as con:
        old = _current(con, "cases", int(case_id))
        if old is None:
            raise DataError(f"Field 'case_id' = {case_id}: no such case. Fix: see records.cases().")
        check_step(old, step, day)
        prof = _profile_of(records, con, old)
        if step == "notice_sent" and deadline is None:  # the law's own period, if any
            values["remedy_deadline"] = _notice_remedy(prof, old, day)
        row = {**old, **values, "version": int(old["version"]) + 1}
        # the whole row as a correction is checked; step/status = its last dated step
        # (a step recorded late, dated before one already there, does not become it)
        row["step"], row["step_on"] = check_case_row(row)
        row["status"] = row["step"]
        _insert(records, con, "cases", row, action=step, old=old)
        for ph in checked:
            _attach_in(records, con, "cases", int(case_id), ph)
    return int(row["version"])


def add_sample(
    records: Any,
    case_id: int,
    struct_id: str,
    date: dt.date | str,
    /,
    *,
    photos: Any,
    again: bool,
    **fields: Any,
) -> int:
    """Record a track-down sample (a repeat refused unless ``again``); its ``sample_id``."""
    need_edit(records, "adding a sample")
    day = as_date(date, "sample field 'date'")
    values = check_fields(fields, SAMPLE_FIELDS, where="sample")
    if values.get("result") is None:
        if values.get("flow_present") is None:
            raise DataError(
                "Sample field 'result' is missing. Fix: give result='flow' (the flow or "
                "pollutant is there) or result='clean', or flow_present=True/False."
            )
        values["result"] = "flow" if values["flow_present"] else "clean"
    if not values.get("sampler"):  # not given, or blank: who records it
        values["sampler"] = records.user
    sid = str(struct_id)
    geom = structure_point(records, sid)
    checked = _checked_photos(photos)
    with gpkg.write_tx(records.path) as con:
        case = _current(con, "cases", int(case_id))
        if case is None:
            raise DataError(
                f"Sample field 'case_id' = {case_id}: no such case. Fix: open it first."
            )
        if case.get("closed_on"):
            raise DataError(
                f"Sample field 'case_id' = {case_id}: the case closed on "
                f"{case['closed_on']}. Fix: open a new case."
            )
        if day.isoformat() < str(case["opened_on"]):
            raise DataError(
                f"Sample field 'date' = {day} is before case {case_id} opened "
                f"({case['opened_on']}). Fix: check the date."
            )
        if not again:
            _refuse_repeated_sample(con, int(case_id), sid, day.isoformat(), values)
        row = _first_version(
            records,
            con,
            "samples",
            geom,
            case_id=int(case_id),
            struct_id=sid,
            date=day.isoformat(),
            **values,
        )
        _insert(records, con, "samples", row, action="insert")
        for ph in checked:
            _attach_in(records, con, "samples", row["sample_id"], ph)
    return row["sample_id"]


def correct(
    records: Any, table: str, row_id: int, /, *, expected_version: int | None, **fields: Any
) -> int:
    """Correct a row: a new version with ``fields`` changed, checked; the version."""
    need_edit(records, "correcting a record")
    if table not in _SPECS:
        raise DataError(f"Cannot correct table {table!r}. Fix: select from {list(_SPECS)}.")
    fields = dict(fields)
    day = None
    if "date" in fields and table != "cases":
        day = as_date(fields.pop("date"), f"{table[:-1]} field 'date'").isoformat()
    deadline = None
    if "remedy_deadline" in fields and table == "cases":
        # a deadline is a future date by nature (as in advance_case)
        dl = fields.pop("remedy_deadline")
        deadline = (
            "" if dl is None else as_date(dl, "case field 'remedy_deadline'", allow_future=True)
        )
    values = check_fields(fields, _SPECS[table], where=table[:-1])
    if day is not None:
        values["date"] = day
    if deadline is not None:
        values["remedy_deadline"] = deadline.isoformat() if deadline else None
    if not values:
        raise DataError("Nothing to correct. Fix: give the fields to change, e.g. notes='...'.")
    with gpkg.write_tx(records.path) as con:
        old = _current(con, table, int(row_id))
        if old is None:
            raise DataError(f"No row {row_id} in {table}. Fix: check the id.")
        if expected_version is not None and int(old["version"]) != int(expected_version):
            raise DataError(
                f"Row {row_id} of {table} changed since version {expected_version}: it is "
                f"at version {old['version']} by {old.get('created_by')} "
                f"({old.get('created_at')}). Nothing was written. Fix: read it again and "
                "make the correction on that version."
            )
        row = {**old, **values, "version": int(old["version"]) + 1}
        _check_corrected(records, con, table, row, old=old, given=values)
        _insert(records, con, table, row, action="correct", old=old)
    return int(row["version"])


def attach(
    records: Any,
    table: str,
    row_id: int,
    photo: str | Path | bytes,
    *,
    filename: str | None,
    caption: str | None,
    max_bytes: int,
) -> int:
    """Attach one checked photo to a row of ``table``; its ``attachment_id``."""
    need_edit(records, "attaching a photo")
    if table not in _SPECS:
        raise DataError(f"Photos attach to {list(_SPECS)}, not {table!r}.")
    ph = check_photo(photo, filename=filename, max_bytes=max_bytes)
    with gpkg.write_tx(records.path) as con:
        if _current(con, table, int(row_id)) is None:
            raise DataError(
                f"No row {row_id} in {table} to attach the photo to. Fix: check the id."
            )
        return _attach_in(records, con, table, int(row_id), ph, caption=caption)


# ---------------------------------------------------------------- refusals
def need_edit(records: Any, what: str) -> None:
    """Refuse ``what`` to a viewer."""
    if records.role != "smo":
        raise PermissionError(
            f"User '{records.user}' has the {records.role} role: {what} is refused (viewers only "
            "read the records). Fix: ask the SMO to record it, or to give this user the "
            "smo role (ms4map users add NAME --role smo --replace)."
        )


def check_outfall(records: Any, outfall_id: Any) -> tuple[str, Any]:
    """The id and point of an outfall of the workspace; a :class:`DataError` otherwise."""
    oid = str(outfall_id)
    hit = records.outfalls[records.outfalls["outfall_id"].astype(str) == oid]
    if not len(hit):
        ids = sorted(records.outfalls["outfall_id"].astype(str))
        shown = shown_ids(ids, 8)
        raise DataError(
            f"Field 'outfall_id' = '{oid}' is not an outfall of the workspace "
            f"({len(ids)} outfalls: {shown}). Fix: check the id (ids are case-sensitive)."
        )
    return oid, hit.geometry.iloc[0]


def _checked_photos(photos: Any) -> list[Any]:
    """Each photo checked (JPEG or PNG by content, size-limited) before any write."""
    return [check_photo(ph) for ph in (photos or ())]


def _refuse_repeated_case(con: Any, oid: str, day: str, values: Mapping[str, Any]) -> None:
    """Refuse a case that repeats one still open: the same outfall, opening day, origin
    and description (a command run twice records one case, not two)."""
    rows = con.execute(
        "SELECT case_id, origin, description, closed_on FROM cases c WHERE outfall_id = ? "
        "AND opened_on = ? AND version = (SELECT MAX(version) FROM cases d "
        "WHERE d.case_id = c.case_id)",
        (oid, day),
    ).fetchall()
    for cid, origin, description, closed in rows:
        same = origin == values.get("origin") and (description or None) == (
            values.get("description") or None
        )
        if same and not closed:
            raise DataError(
                f"Case {cid} was opened at outfall {oid} on {day} ({origin}) and is not "
                "closed: this would be the same case recorded twice. Nothing was written. "
                f"Fix: advance case {cid} (ms4map case advance WORKSPACE {cid} ...), or open "
                "a second case with again=True (--again)."
            )


def _refuse_repeated_sample(
    con: Any, case_id: int, struct_id: str, day: str, values: Mapping[str, Any]
) -> None:
    """Refuse a sample equal in every field to one the case has (a command run twice)."""
    cur = con.execute(
        "SELECT * FROM samples s WHERE case_id = ? AND struct_id = ? AND date = ? AND "
        "version = (SELECT MAX(version) FROM samples t WHERE t.sample_id = s.sample_id)",
        (case_id, struct_id, day),
    )
    names = [d[0] for d in cur.description]
    for rec in cur.fetchall():
        old = dict(zip(names, rec, strict=True))
        if all(_same(old.get(f.name), values.get(f.name)) for f in SAMPLE_FIELDS):
            raise DataError(
                f"Sample {old['sample_id']} of case {case_id} at {struct_id} on {day} has the "
                "same readings: this would be the same sample recorded twice. Nothing was "
                "written. Fix: correct sample "
                f"{old['sample_id']} if a reading was wrong, or record a second sample with "
                "again=True (--again)."
            )


def _same(stored: Any, given: Any) -> bool:
    """Whether a stored value (sqlite: 0/1 booleans, text) equals a checked one."""
    if stored is None or given is None:
        return stored is None and given is None
    if isinstance(given, bool):
        return bool(stored) == given
    if isinstance(given, (int, float)):
        try:
            return float(stored) == float(given)
        except (TypeError, ValueError):
            return False
    return str(stored) == str(given)


def _check_corrected(
    records: Any,
    con: Any,
    table: str,
    row: dict[str, Any],
    *,
    old: Mapping[str, Any],
    given: Mapping[str, Any],
) -> None:
    """A corrected row obeys the rules its first recording did: a case's steps in
    order and dated after what they follow (its ``step``/``status`` the last step
    dated), its parcel, inspection and samples as when recorded, a sample not before
    its case opened.  A corrected notice date moves a remedy deadline the law set."""
    if table == "cases":
        _check_case_refs(records, con, row, old)
        if "remedy_deadline" not in given and row.get("notice_on") != old.get("notice_on"):
            row["remedy_deadline"] = _moved_remedy(records, con, old, row)
        step, step_on = check_case_row(row)
        row["step"], row["step_on"], row["status"] = step, step_on, step
    elif table == "samples":
        case = _current(con, "cases", int(row["case_id"]))
        if case is not None and str(row["date"]) < str(case["opened_on"]):
            raise DataError(
                f"Sample field 'date' = {row['date']} is before case {row['case_id']} "
                f"opened ({case['opened_on']}). Fix: check the date."
            )


def _check_case_refs(
    records: Any, con: Any, row: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """What a case's first recording checked, for the fields a correction changes: the
    source parcel is a parcel, the inspection exists, no sample before the opening."""
    if row.get("source_parcel_id") not in (None, "", old.get("source_parcel_id")):
        check_parcel(records, str(row["source_parcel_id"]))
    ins = row.get("inspection_id")
    if ins not in (None, "", old.get("inspection_id")) and (
        _current(con, "inspections", int(ins)) is None
    ):
        raise DataError(
            f"Case field 'inspection_id' = {ins}: no such inspection. Fix: give the id of an "
            "inspection (see records.inspections())."
        )
    if str(row.get("opened_on")) != str(old.get("opened_on")):
        first = con.execute(
            "SELECT MIN(date) FROM samples s WHERE case_id = ? AND version = "
            "(SELECT MAX(version) FROM samples t WHERE t.sample_id = s.sample_id)",
            (int(row["case_id"]),),
        ).fetchone()[0]
        if first is not None and str(first) < str(row.get("opened_on")):
            raise DataError(
                f"Case field 'opened_on' = {row.get('opened_on')} is after the case's first "
                f"sample ({first}). Fix: check the date (or correct the sample first)."
            )


def _moved_remedy(records: Any, con: Any, old: Mapping[str, Any], row: Mapping[str, Any]) -> Any:
    """The remedy deadline after a correction of the notice's date: the law's own
    period (Kingsbury's 48 hours) runs again from the corrected date; a date the officer
    wrote in the notice stays as written."""
    prof = _profile_of(records, con, old)
    was, before, after = (
        _d(old.get("remedy_deadline")),
        _d(old.get("notice_on")),
        _d(row.get("notice_on")),
    )
    if prof is None or was is None or before is None:
        return row.get("remedy_deadline")
    law = remedy_deadline(prof, before)
    if law is None or was not in (law, remedy_period_end(prof.enforcement, before)):
        return row.get("remedy_deadline")  # the officer's own date
    return None if after is None else _law_remedy(prof, old, after)


def _profile_of(records: Any, con: Any, case: Mapping[str, Any]) -> Profile | None:
    """The profile ``case`` is judged by (:mod:`~ms4map.records.case_profile`); a copy of
    the session's profile is kept when it is the case's."""
    prof = case_profile(case.get("profile"), records.profile, kept_profiles(con))
    if prof is records.profile:
        keep_profile(con, prof)
    return prof


def _notice_remedy(prof: Profile | None, case: Mapping[str, Any], day: dt.date) -> str:
    """The law's remedy deadline for a notice on ``day``; refused when the law leaves it
    to the notice (a notice is then recorded with the deadline it sets)."""
    dl = _law_remedy(prof, case, day)
    if dl is None:
        raise DataError(
            f"Case {case.get('case_id')}: step 'notice_sent' needs the remedy deadline the "
            f"notice sets (the profile {getattr(prof, 'name', '')!s} leaves it to the "
            "notice). Fix: give the remedy deadline (--deadline YYYY-MM-DD; in the app, the "
            "'Remedy deadline' box)."
        )
    return dl


def _law_remedy(prof: Profile | None, case: Mapping[str, Any], day: dt.date) -> str | None:
    """The remedy deadline the case's law sets for a notice on ``day`` (ISO; ``None``
    when it leaves the period to the notice)."""
    if prof is None:
        raise DataError(
            f"Case {case.get('case_id')}: {profile_not_known(case.get('profile'))} Or give "
            "the notice's remedy deadline (--deadline)."
        )
    dl = remedy_deadline(prof, day)
    return None if dl is None else dl.isoformat()


# ---------------------------------------------------------------- the append-only rows
def _first_version(
    records: Any, con: sqlite3.Connection, table: str, geom: Any, **values: Any
) -> dict[str, Any]:
    """The first version of a new row of ``table`` at ``geom``: the next id, version 1,
    the point, then ``values``."""
    key = gpkg.TABLES[table]["id"]
    return {key: _next_id(con, table), "version": 1, "geom": _point(records, geom), **values}


def _insert(
    records: Any,
    con: sqlite3.Connection,
    table: str,
    row: dict[str, Any],
    *,
    action: str,
    old: dict[str, Any] | None = None,
) -> None:
    """Insert one row and its audit row (the caller holds the write transaction)."""
    row = {k: v for k, v in row.items() if k != "fid"}
    row["created_at"] = gpkg.now_utc()
    row["created_by"] = records.user
    cols = list(row)
    con.execute(
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        [row[c] for c in cols],
    )
    key = gpkg.TABLES[table]["id"]
    fid, previous = tamper.next_audit_fid(con)
    audit = {
        "fid": fid,
        "role": records.role,
        "table_name": table,
        "row_id": int(row[key]),
        "version": int(row.get("version", 1)),
        "action": action,
        "old_values": None if old is None else _json(old),
        "new_values": _json(row),
        "created_at": row["created_at"],
        "created_by": records.user,
    }
    tamper.append_audit(con, audit, previous)  # the audit chain


def _attach_in(
    records: Any, con: Any, table: str, row_id: int, ph: Any, *, caption: str | None = None
) -> int:
    """Insert one checked photo of row ``row_id`` in the open transaction ``con``."""
    new_id = _next_id(con, "attachments")
    row = {
        "attachment_id": new_id,
        "version": 1,
        "target_table": table,
        "target_id": int(row_id),
        "filename": ph.filename,
        "mime": ph.mime,
        "bytes": len(ph.data),
        "width": ph.width,
        "height": ph.height,
        "sha256": ph.sha256,
        "caption": caption,
        "data": ph.data,
    }
    _insert(records, con, "attachments", row, action="attach")
    return new_id


def _current(con: sqlite3.Connection, table: str, row_id: int) -> dict[str, Any] | None:
    """The current (latest) version of row ``row_id`` of ``table``; ``None`` if none."""
    key = gpkg.TABLES[table]["id"]
    cur = con.execute(
        f"SELECT * FROM {table} WHERE {key} = ? ORDER BY version DESC LIMIT 1", (row_id,)
    )
    row = cur.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def _next_id(con: sqlite3.Connection, table: str) -> int:
    """The id of the next new row of ``table``."""
    key = gpkg.TABLES[table]["id"]
    return int(con.execute(f"SELECT COALESCE(MAX({key}), 0) + 1 FROM {table}").fetchone()[0])


def _point(records: Any, geom: Any) -> bytes | None:
    """A point as GeoPackage geometry bytes in the file's srs (``None`` when empty)."""
    if geom is None or geom.is_empty:
        return None
    return gpkg.encode_point(geom.x, geom.y, records._srs_id)


def file_srs_id(records: Any) -> int:
    """The srs id of the records file's points (the outfalls' before it exists)."""
    if not records.path.exists():
        return records._srs_id
    with gpkg.read_tx(records.path) as con:
        srs = gpkg.file_srs(con)
    return srs[0] if srs else records._srs_id


def _json(row: Mapping[str, Any]) -> str:
    """A row as the audit trail's JSON (geometry as WKT, without bytes)."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k in ("data", "fid"):
            continue
        if k == "geom":
            g = gpkg.decode_point(v)
            out[k] = None if g is None else g.wkt
        else:
            out[k] = v
    return json.dumps(out, sort_keys=True, default=str)
