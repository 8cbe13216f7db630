"""Bringing a field package home: every row checked, the valid ones added in one transaction.

:func:`import_package` reads a package made by :mod:`~ms4map.records.field_export`,
refuses a package it cannot trust (another workspace or records file, a newer ms4map,
an extra table or an edited schema; a viewer) before anything is written, checks each
inspection and sample with the rules of ``ms4map inspect`` and ``ms4map case sample``, and
each photo by its SHA-256 against the package's manifest (a photo missing or changed
refuses its inspection or sample whole), then adds the valid rows, their photos, their
audit rows and one ``field_import`` audit row naming the package, the devices and the
user, all in one write transaction: an import killed midway leaves the store as it was.
The device UUID of every row added is kept in ``field_imports``, so importing the same
package again adds nothing; rows of two packages about the same case are both kept and
the conflict is named in the report.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from ..core.errors import DataError, InputOpenError
from ..core.version import __version__
from . import gpkg, tamper, writes
from .field_export import (
    FIELD_TABLES,
    FORMAT,
    TOOL_TABLES,
    USER_FIELDS,
    records_hash,
    schema_hash,
    workspace_hash,
)
from .fields import INSPECTION_FIELDS, SAMPLE_FIELDS, as_date, check_fields
from .layers import structure_point
from .photos import check_photo

__all__ = ["import_package", "read_package"]

_IMPORTS_SQL = (
    "CREATE TABLE IF NOT EXISTS field_imports (fid INTEGER PRIMARY KEY AUTOINCREMENT "
    "NOT NULL, device_uuid TEXT NOT NULL UNIQUE, package_id TEXT NOT NULL, device_id TEXT, "
    "table_name TEXT NOT NULL, row_id INTEGER NOT NULL, case_id INTEGER, "
    "created_at DATETIME NOT NULL, created_by TEXT NOT NULL)"
)
_IMPORTS_GUARDS = tuple(
    f"CREATE TRIGGER IF NOT EXISTS field_imports_no_{op.lower()} BEFORE {op} ON field_imports "
    "BEGIN SELECT RAISE(ABORT, 'field_imports is append-only: it remembers every row a "
    "field package added'); END"
    for op in ("UPDATE", "DELETE")
)


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v.split("+")[0])[:3])


def read_package(path: str | Path, records: Any) -> dict[str, Any]:
    """The package's ``field_package`` row and its crew rows, after the package checks.

    Raises
    ------
    InputOpenError
        Not a readable field package.
    DataError
        Another workspace or records file, a newer ms4map or package format, an extra
        table, an edited schema.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputOpenError(f"The field package '{p}' does not exist.")
    try:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise InputOpenError(f"'{p.name}' is not a field package ({exc}).") from None
    try:
        if "field_package" not in names:
            raise InputOpenError(
                f"'{p.name}' is not an ms4map field package (no field_package table). Fix: "
                "make one with 'ms4map field export'."
            )
        meta = dict(con.execute("SELECT * FROM field_package").fetchone())
        _check_meta(p, meta, records)
        _check_schema(p, con, meta, names)
        rows = {
            t: [dict(r) for r in con.execute(f"SELECT * FROM {t} ORDER BY fid")]
            for t in FIELD_TABLES
        }
        rows["case_versions"] = (
            dict(con.execute("SELECT case_id, version FROM open_cases").fetchall())
            if "open_cases" in names
            else {}
        )
    finally:
        con.close()
    return {"meta": meta, **rows}


def _check_meta(p: Path, meta: dict[str, Any], records: Any) -> None:
    made = str(meta.get("ms4map_version") or "0")
    if int(meta.get("format") or 0) > FORMAT or _version_tuple(made) > _version_tuple(__version__):
        raise DataError(
            f"The field package '{p.name}' was made by ms4map {made} (package format "
            f"{meta.get('format')}); this is ms4map {__version__}. Nothing was imported. Fix: "
            "update ms4map, then import it again."
        )
    if meta.get("workspace_hash") != workspace_hash(records):
        raise DataError(
            f"The field package '{p.name}' was made from another workspace "
            f"('{meta.get('workspace')}'; its outfalls differ from these). Nothing was "
            "imported. Fix: import it into the records of the workspace it was made from."
        )
    if meta.get("records_hash") != records_hash(records):
        raise DataError(
            f"The field package '{p.name}' was made from another records file than "
            f"'{records.path.name}'. Nothing was imported. Fix: import it into the records "
            "file it was made from (its case ids are that file's)."
        )


def _check_schema(p: Path, con: sqlite3.Connection, meta: dict[str, Any], names: set[str]) -> None:
    known = set(json.loads(meta.get("tables") or "[]"))
    extra = sorted(n for n in names - known if not n.startswith(TOOL_TABLES))
    if extra:
        raise DataError(
            f"The field package '{p.name}' has table(s) {extra} that ms4map did not make. "
            "Nothing was imported. Fix: import the package as ms4map made it (enter data "
            "only in its inspections, samples and photos tables)."
        )
    if schema_hash(con, FIELD_TABLES) != meta.get("schema_hash"):
        raise DataError(
            f"The field package '{p.name}': the columns of its inspections, samples or photos "
            "tables were changed after it was made. Nothing was imported. Fix: enter data "
            "without changing the tables (make a new package with 'ms4map field export')."
        )


def _field_of(message: str) -> str:
    m = re.search(r"field\(?s?\)? \[?'([a-z_]+)'", message, re.IGNORECASE)
    return m.group(1) if m else ""


def _refusal(table: str, row: dict[str, Any], message: str) -> dict[str, Any]:
    return {
        "table": table,
        "device_uuid": row.get("device_uuid"),
        "outfall_id": row.get("outfall_id"),
        "case_id": row.get("case_id"),
        "field": _field_of(message),
        "reason": message,
    }


def _values(row: dict[str, Any], table: str) -> dict[str, Any]:
    return {f.name: row[f.name] for f in USER_FIELDS[table] if row.get(f.name) is not None}


def _photos_of(pkg: dict[str, Any], target: str) -> tuple[list[Any], str | None]:
    """The checked photos of row ``target``, or the reason one is refused."""
    out = []
    for ph in pkg["photos"]:
        if ph["target_uuid"] != target:
            continue
        data = ph.get("data")
        name = ph.get("filename") or ph["device_uuid"]
        if data is None:
            return (
                [],
                f"Photo '{name}' is missing from the package (no data). Fix: copy it again from the device.",
            )
        got = hashlib.sha256(bytes(data)).hexdigest()
        if got != str(ph["sha256"]).lower():
            return [], (
                f"Photo '{name}' was changed or cut short on the way (SHA-256 {got[:12]}... "
                f"is not the {str(ph['sha256'])[:12]}... recorded on the device). Fix: copy "
                "it again from the device."
            )
        try:
            out.append(check_photo(bytes(data), filename=name))
        except DataError as exc:
            return [], str(exc)
    return out, None


def _uuid_ok(row: dict[str, Any]) -> None:
    try:
        uuid.UUID(str(row.get("device_uuid")))
    except ValueError:
        raise DataError(
            f"Field 'device_uuid' = {row.get('device_uuid')!r} is not a UUID. Fix: let the "
            "form fill it (uuid())."
        ) from None


def _check_inspection(records: Any, row: dict[str, Any], pkg: dict[str, Any]) -> dict[str, Any]:
    _uuid_ok(row)
    oid, geom = writes.check_outfall(records, row.get("outfall_id"))
    if not row.get("date"):
        raise DataError("Inspection field 'date' is missing. Fix: enter the date of the visit.")
    day = as_date(row["date"], "inspection field 'date'").isoformat()
    values = check_fields(_values(row, "inspections"), INSPECTION_FIELDS, where="inspection")
    if not values.get("inspector"):
        values["inspector"] = records.user
    photos, why = _photos_of(pkg, row["device_uuid"])
    if why:
        raise DataError(why)
    return {
        "row": row,
        "geom": geom,
        "fixed": {"outfall_id": oid, "date": day},
        "values": values,
        "photos": photos,
    }


def _check_sample(
    records: Any, row: dict[str, Any], pkg: dict[str, Any], cases: dict[int, Any]
) -> dict[str, Any]:
    _uuid_ok(row)
    if row.get("case_id") is None or int(row["case_id"]) not in cases:
        raise DataError(
            f"Sample field 'case_id' = {row.get('case_id')}: no such open case. Fix: pick a "
            "case of the package's open_cases."
        )
    case = cases[int(row["case_id"])]
    if not row.get("date"):
        raise DataError("Sample field 'date' is missing. Fix: enter the date of the sample.")
    day = as_date(row["date"], "sample field 'date'")
    if day.isoformat() < str(case["opened_on"]):
        raise DataError(
            f"Sample field 'date' = {day} is before case {row['case_id']} opened "
            f"({case['opened_on']}). Fix: check the date."
        )
    values = check_fields(_values(row, "samples"), SAMPLE_FIELDS, where="sample")
    if values.get("result") is None:
        if values.get("flow_present") is None:
            raise DataError(
                "Sample field 'result' is missing. Fix: give result='flow' or 'clean', or "
                "flow_present."
            )
        values["result"] = "flow" if values["flow_present"] else "clean"
    if not values.get("sampler"):
        values["sampler"] = records.user
    sid = str(row.get("struct_id") or "")
    geom = structure_point(records, sid)
    photos, why = _photos_of(pkg, row["device_uuid"])
    if why:
        raise DataError(why)
    fixed = {"case_id": int(row["case_id"]), "struct_id": sid, "date": day.isoformat()}
    return {"row": row, "geom": geom, "fixed": fixed, "values": values, "photos": photos}


def _checked(
    records: Any, pkg: dict[str, Any]
) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    good: list[tuple[str, Any]] = []
    refused: list[dict[str, Any]] = []
    open_cases = records.cases()
    cases = {
        int(c["case_id"]): c
        for c in (
            open_cases[open_cases["closed_on"].isna()].to_dict("records") if len(open_cases) else []
        )
    }
    for row in pkg["inspections"]:
        try:
            good.append(("inspections", _check_inspection(records, row, pkg)))
        except DataError as exc:
            refused.append(_refusal("inspections", row, str(exc)))
    for row in pkg["samples"]:
        try:
            good.append(("samples", _check_sample(records, row, pkg, cases)))
        except DataError as exc:
            refused.append(_refusal("samples", row, str(exc)))
    rows = {r["device_uuid"] for t in ("inspections", "samples") for r in pkg[t]}
    for ph in pkg["photos"]:
        if ph["target_uuid"] not in rows:
            refused.append(
                _refusal(
                    "photos",
                    ph,
                    f"Photo field 'target_uuid' = {ph['target_uuid']!r}: no inspection or "
                    "sample of the package has that device_uuid. Fix: attach the photo to "
                    "its inspection or sample on the device.",
                )
            )
    return good, refused


def import_package(records: Any, path: str | Path, /) -> dict[str, Any]:
    """Import a field package into ``records`` (see the module's text).

    Returns
    -------
    dict
        ``package_id``, ``devices``, ``added`` (``{"inspections": n, "samples": n,
        "photos": n}``), ``already`` (rows imported before), ``refused`` (one dict per
        row: ``table``, ``device_uuid``, ``outfall_id``, ``case_id``, ``field``,
        ``reason``), ``conflicts`` (sentences), ``ids`` (device UUID -> new row id).

    Raises
    ------
    PermissionError
        A viewer.
    InputOpenError, DataError
        A package that cannot be trusted; nothing is written.
    """
    writes.need_edit(records, "importing a field package")
    pkg = read_package(path, records)
    meta = pkg["meta"]
    good, refused = _checked(records, pkg)
    report: dict[str, Any] = {
        "package_id": meta["package_id"],
        "devices": sorted({str(g["row"].get("device_id") or "unnamed") for _, g in good}),
        "added": {"inspections": 0, "samples": 0, "photos": 0},
        "already": 0,
        "refused": refused,
        "conflicts": [],
        "ids": {},
    }
    with gpkg.write_tx(records.path) as con:
        con.execute(_IMPORTS_SQL)
        for sql in _IMPORTS_GUARDS:
            con.execute(sql)
        done = {r[0] for r in con.execute("SELECT device_uuid FROM field_imports")}
        todo = [(t, g) for t, g in good if g["row"]["device_uuid"] not in done]
        report["already"] = len(good) - len(todo)
        if not todo:
            return report
        report["conflicts"] = _conflicts(con, meta["package_id"], todo, pkg["case_versions"])
        for table, g in todo:
            _add(records, con, table, g, meta=meta, report=report)
        _package_audit(records, con, meta, report)
    return report


def _conflicts(
    con: sqlite3.Connection, package_id: str, todo: list[tuple[str, Any]], versions: dict
) -> list[str]:
    """The cases this package's rows touch that another package, or the office, changed
    since the package was made (both kept: named for the SMO)."""
    cases = sorted({g["fixed"]["case_id"] for t, g in todo if t == "samples"})
    out = []
    for c in cases:
        now = con.execute(
            "SELECT version, step FROM cases WHERE case_id = ? ORDER BY version DESC LIMIT 1", (c,)
        ).fetchone()
        made = versions.get(c)
        if now and made is not None and int(now[0]) > int(made):
            out.append(
                f"Case {c} changed in the records since the package was made (version {made} "
                f"-> {now[0]}, now at step {now[1]}): the crew's rows are added beside that "
                "change; the SMO settles which findings stand."
            )
        others = con.execute(
            "SELECT DISTINCT package_id, device_id FROM field_imports WHERE case_id = ? AND "
            "package_id <> ?",
            (c, package_id),
        ).fetchall()
        for other, dev in others:
            out.append(
                f"Case {c} was also changed in field package {other} (device {dev or 'unnamed'}): "
                "the rows of both are kept; the SMO settles which findings stand (a correction "
                "or the next case step)."
            )
    return out


def _add(
    records: Any, con: Any, table: str, g: Any, *, meta: dict[str, Any], report: dict[str, Any]
) -> None:
    row = writes._first_version(records, con, table, g["geom"], **g["fixed"], **g["values"])
    writes._insert(records, con, table, row, action="insert")
    key = gpkg.TABLES[table]["id"]
    for ph in g["photos"]:
        writes._attach_in(records, con, table, row[key], ph)
        report["added"]["photos"] += 1
    src = g["row"]
    con.execute(
        "INSERT INTO field_imports (device_uuid, package_id, device_id, table_name, row_id, "
        "case_id, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            src["device_uuid"],
            meta["package_id"],
            src.get("device_id"),
            table,
            row[key],
            g["fixed"].get("case_id"),
            gpkg.now_utc(),
            records.user,
        ),
    )
    report["added"][table] += 1
    report["ids"][src["device_uuid"]] = row[key]


def _package_audit(records: Any, con: Any, meta: dict[str, Any], report: dict[str, Any]) -> None:
    """One audit row for the import: the package, its devices, the user, what was added."""
    n = int(con.execute("SELECT COUNT(DISTINCT package_id) FROM field_imports").fetchone()[0])
    fid, previous = tamper.next_audit_fid(con)
    values = {
        "package_id": meta["package_id"],
        "package_created": meta["created"],
        "package_by": meta["created_by"],
        "devices": report["devices"],
        "imported_by": records.user,
        "added": report["added"],
        "refused": len(report["refused"]),
        "conflicts": report["conflicts"],
    }
    audit = {
        "fid": fid,
        "role": records.role,
        "table_name": "field_imports",
        "row_id": n,
        "version": 1,
        "action": "field_import",
        "old_values": None,
        "new_values": json.dumps(values, sort_keys=True),
        "created_at": gpkg.now_utc(),
        "created_by": records.user,
    }
    tamper.append_audit(con, audit, previous)  # the audit chain
