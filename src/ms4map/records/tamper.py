"""Tamper evidence: the audit rows' hash chain, the no-replace guards and ``--verify``.

Three guards, each against a different slip or edit made outside ms4map:

- every table refuses ``UPDATE`` and ``DELETE`` (:mod:`~ms4map.records.gpkg`), and an
  ``INSERT`` that reuses an existing row (``INSERT OR REPLACE`` deletes the old row
  without firing the ``DELETE`` trigger): :func:`ensure_guards`;
- every audit row carries ``chain``, the SHA-256 of the previous row's ``chain`` and of
  its own values (:func:`chain_hash`), so an audit row changed, removed or reordered
  later breaks the chain from there on;
- every row of the records tables must equal the ``new_values`` its audit row wrote.

:func:`verify` checks the last two and says where they break (``ms4map records WS
--verify``).  What it cannot prove: the chain has no secret, so someone who edits the
file with SQLite *and* recomputes every later hash, or who cuts the newest rows of both
a table and the audit, leaves no trace; only a copy kept elsewhere (``--backup``)
shows that.  docs/records.md, "What the audit proves", says the same for users.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from typing import Any

from . import gpkg

__all__ = [
    "AUDIT_CHAIN_FIELDS",
    "chain_hash",
    "ensure_guards",
    "guards_missing",
    "next_audit_fid",
    "verify",
]

#: The audit row's values the chain covers, in order.
AUDIT_CHAIN_FIELDS = (
    "fid",
    "role",
    "table_name",
    "row_id",
    "version",
    "action",
    "old_values",
    "new_values",
    "created_at",
    "created_by",
)


def chain_hash(previous: str | None, row: dict[str, Any]) -> str:
    """SHA-256 (hex) of the previous audit row's chain and this row's values."""
    body = json.dumps([row.get(k) for k in AUDIT_CHAIN_FIELDS], default=str)
    return hashlib.sha256(f"{previous or ''}\n{body}".encode()).hexdigest()


def next_audit_fid(con: sqlite3.Connection) -> tuple[int, str | None]:
    """The ``fid`` the next audit row takes and the chain of the row before it."""
    row = con.execute("SELECT fid, chain FROM audit ORDER BY fid DESC LIMIT 1").fetchone()
    seq = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'audit'").fetchone()
    last = max(int(row[0]) if row else 0, int(seq[0]) if seq else 0)
    return last + 1, (row[1] if row else None)


def append_audit(con: sqlite3.Connection, audit: dict[str, Any], previous: str | None) -> None:
    """Insert the audit row ``audit`` (its ``fid`` from :func:`next_audit_fid`), chained
    to ``previous`` (the caller holds the write transaction)."""
    audit["chain"] = chain_hash(previous, audit)
    con.execute(
        f"INSERT INTO audit ({', '.join(audit)}) VALUES ({', '.join('?' * len(audit))})",
        list(audit.values()),
    )


def _guard_sql(table: str, key: str | None) -> str:
    same = "fid = NEW.fid" + (f" OR ({key} = NEW.{key} AND version = NEW.version)" if key else "")
    return (
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_replace BEFORE INSERT ON {table} "
        f"WHEN EXISTS (SELECT 1 FROM {table} WHERE {same}) BEGIN SELECT RAISE(ABORT, "
        f"'{table} is append-only: a row that exists is never replaced; record a "
        "correction instead'); END"
    )


def ensure_guards(con: sqlite3.Connection) -> bool:
    """Add what files made before the chain lack (the audit's ``chain`` column, the
    no-replace triggers), inside the caller's write transaction; whether it added any."""
    added = False
    cols = {r[1] for r in con.execute("PRAGMA table_info(audit)")}
    if "chain" not in cols:
        con.execute("ALTER TABLE audit ADD COLUMN chain TEXT")
        added = True
    triggers = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    for table, spec in gpkg.TABLES.items():
        if f"{table}_no_replace" not in triggers:
            con.execute(_guard_sql(table, spec["id"]))
            added = True
    return added


def guards_missing(con: sqlite3.Connection) -> bool:
    """Whether :func:`ensure_guards` has something to add (read-only check)."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(audit)")}
    triggers = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    return "chain" not in cols or any(f"{t}_no_replace" not in triggers for t in gpkg.TABLES)


def _same(recorded: Any, stored: Any) -> bool:
    if recorded is None or stored is None:
        return recorded is None and stored is None
    if isinstance(recorded, bool) or isinstance(stored, bool):
        return bool(recorded) == bool(stored)
    if isinstance(recorded, int | float) and isinstance(stored, int | float):
        return math.isclose(float(recorded), float(stored), rel_tol=1e-12, abs_tol=1e-12)
    return str(recorded) == str(stored)


def _row_values(row: sqlite3.Row) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in row.keys():  # noqa: SIM118 - sqlite3.Row
        if k in ("data", "fid"):
            continue
        v = row[k]
        if k == "geom":
            g = gpkg.decode_point(v)
            v = None if g is None else g.wkt
        out[k] = v
    return out


def verify(path: Any) -> dict[str, Any]:
    """Check a records file's audit chain and that every row equals its audit row.

    Returns
    -------
    dict
        ``ok`` (bool), ``problems`` (list of sentences, each naming the table, the row
        and what differs), ``chained`` (audit rows checked), ``unchained`` (audit rows
        written before the chain existed: not checked), ``rows`` (rows compared).
    """
    problems: list[str] = []
    with gpkg.read_tx(path) as con:
        con.row_factory = sqlite3.Row
        audit = con.execute("SELECT * FROM audit ORDER BY fid").fetchall()
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        tables = {  # a file of an older ms4map, not yet opened by the SMO, lacks new tables
            t: con.execute(f"SELECT * FROM {t} ORDER BY fid").fetchall()
            for t, spec in gpkg.TABLES.items()
            if spec["id"] and t in have
        }
    has_chain = bool(audit) and "chain" in audit[0].keys()  # noqa: SIM118
    previous: str | None = None
    chained = unchained = 0
    started = False
    written: dict[tuple[str, int, int], dict[str, Any]] = {}
    for a in audit:
        values = dict(a)
        chain = values.get("chain") if has_chain else None
        if chain is None and not started:
            unchained += 1
        elif chain is None:
            problems.append(f"audit row {a['fid']} has lost its chain hash (set to NULL).")
        else:
            started = True
            chained += 1
            expected = chain_hash(previous, values)
            if chain != expected:
                problems.append(
                    f"audit row {a['fid']} ({a['action']} of {a['table_name']} "
                    f"{a['row_id']} v{a['version']}) does not match its chain hash: it, or "
                    "a row before it, was changed, removed or reordered outside ms4map."
                )
        previous = chain if chain is not None else previous
        try:
            written[(a["table_name"], int(a["row_id"]), int(a["version"]))] = json.loads(
                a["new_values"]
            )
        except (TypeError, ValueError):
            problems.append(f"audit row {a['fid']}: its new values are not JSON.")
    compared = 0
    for table, rows in tables.items():
        key = gpkg.TABLES[table]["id"]
        for r in rows:
            compared += 1
            ident = (table, int(r[key]), int(r["version"]))
            recorded = written.pop(ident, None)
            if recorded is None:
                problems.append(
                    f"{table} {ident[1]} v{ident[2]} has no audit row: it was added outside ms4map."
                )
                continue
            stored = _row_values(r)
            differ = sorted(
                k for k in set(recorded) | set(stored) if not _same(recorded.get(k), stored.get(k))
            )
            if differ:
                problems.append(
                    f"{table} {ident[1]} v{ident[2]} differs from what its audit row "
                    f"recorded in {', '.join(differ)}: changed outside ms4map."
                )
    for table, row_id, version in sorted(written):
        if table not in tables:  # a decision kept only in the audit (an override, a move)
            continue
        problems.append(
            f"{table} {row_id} v{version} is in the audit but not in its table: removed "
            "outside ms4map."
        )
    return {
        "ok": not problems,
        "problems": problems,
        "chained": chained,
        "unchained": unchained,
        "rows": compared,
    }
