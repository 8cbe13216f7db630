"""The records file as a GeoPackage written with the standard library's ``sqlite3``.

Why by hand: every change must be one short SQLite transaction that also writes its
audit row, which GDAL's writers do not offer.  The file still is a valid GeoPackage
(application id ``GPKG``, ``gpkg_spatial_ref_sys``, ``gpkg_contents``,
``gpkg_geometry_columns``, standard geometry blobs), so QGIS and GDAL open its layers.

Durability choices (see ``docs/records.md``):

* journal mode ``DELETE`` (the rollback journal), not WAL: WAL needs shared memory on
  one host and is unsafe on the network shares town offices keep GIS files on;
* ``synchronous = FULL``: a committed change is on disk before the call returns;
* writers start with ``BEGIN IMMEDIATE`` (no lock upgrade deadlocks) and wait for one
  another through SQLite's busy timeout plus a retry loop;
* one connection per operation: an idle :class:`~ms4map.records.Records` holds no
  lock and no open file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import sqlite3
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import shapely

from ..core.errors import DataError, InputOpenError, OutputError
from .fields import CASE_FIELDS, INSPECTION_FIELDS, SAMPLE_FIELDS
from .project_fields import CONSTRUCTION_FIELDS, PROJECT_FIELDS
from .smp_fields import SMP_FIELDS, SMP_INSPECTION_FIELDS, SMP_MAINTENANCE_FIELDS

__all__ = [
    "BUSY_TIMEOUT_S",
    "JOURNAL_MODE",
    "TABLES",
    "connect",
    "decode_point",
    "encode_geometry",
    "encode_point",
    "ensure_schema",
    "now_utc",
    "read_tx",
    "write_tx",
]

#: SQLite waits this long for another writer's lock before a statement gives up.
BUSY_TIMEOUT_S = 20.0
#: A write gives up after this many seconds of retries (then a DataError says why).
WRITE_RETRY_S = 120.0
#: The journal mode of the records file: the rollback journal (safe on network shares).
JOURNAL_MODE = "delete"
SCHEMA_VERSION = 1
GPKG_APPLICATION_ID = 0x47504B47  # "GPKG"
GPKG_USER_VERSION = 10300  # GeoPackage 1.3

# table -> (id column, geometry?, fixed columns before the user fields, user fields)
TABLES: dict[str, dict[str, Any]] = {
    "inspections": {
        "id": "inspection_id",
        "geometry": True,
        "fixed": (("outfall_id", "TEXT NOT NULL"), ("date", "DATE NOT NULL")),
        "fields": INSPECTION_FIELDS,
        "description": "Outfall reconnaissance inspections (ORI), one row per version",
    },
    "samples": {
        "id": "sample_id",
        "geometry": True,
        "fixed": (
            ("case_id", "INTEGER NOT NULL"),
            ("struct_id", "TEXT NOT NULL"),
            ("date", "DATE NOT NULL"),
        ),
        "fields": SAMPLE_FIELDS,
        "description": "Track-down samples at structures, linked to a case",
    },
    "cases": {
        "id": "case_id",
        "geometry": True,
        "fixed": (
            ("outfall_id", "TEXT NOT NULL"),
            ("status", "TEXT NOT NULL"),
            ("step", "TEXT NOT NULL"),
            ("step_on", "DATE NOT NULL"),
            ("profile", "TEXT NOT NULL"),
        ),
        "fields": CASE_FIELDS,
        "description": "IDDE cases: complaint or finding to elimination, one row per step",
    },
    # the SMP programme (issue 31 item 3; records/smp.py): a practice is a point or a
    # polygon, so its geometry column is GEOMETRY (gpkg_geometry_columns says so)
    "smps": {
        "id": "smp_id",
        "geometry": True,
        "geometry_type": "GEOMETRY",
        "fixed": (("name", "TEXT NOT NULL"), ("kind", "TEXT NOT NULL")),
        "fields": SMP_FIELDS,
        "description": "Post-construction stormwater management practices (SMPs)",
    },
    "smp_inspections": {
        "id": "smp_inspection_id",
        "geometry": False,
        "fixed": (("smp_id", "INTEGER NOT NULL"), ("date", "DATE NOT NULL")),
        "fields": SMP_INSPECTION_FIELDS,
        "description": "Inspections of SMPs (routine, random, complaint, one-year)",
    },
    "smp_maintenance": {
        "id": "smp_maintenance_id",
        "geometry": False,
        "fixed": (("smp_id", "INTEGER NOT NULL"), ("date", "DATE NOT NULL")),
        "fields": SMP_MAINTENANCE_FIELDS,
        "description": "Maintenance done on SMPs, with its actions",
    },
    "projects": {
        "id": "project_id",
        "geometry": False,
        "fixed": (
            ("project_name", "TEXT NOT NULL"),
            ("status", "TEXT NOT NULL"),
            ("step_on", "DATE NOT NULL"),
            ("profile", "TEXT NOT NULL"),
            ("saved_on", "DATE NOT NULL"),
            ("determination", "TEXT NOT NULL"),  # the frozen determination document (JSON)
            ("determination_sha256", "TEXT NOT NULL"),
        ),
        "fields": PROJECT_FIELDS,
        "description": "Land development projects: screening to maintained, one row per version",
    },
    "construction": {
        "id": "event_id",
        "geometry": False,
        "fixed": (
            ("project_id", "INTEGER NOT NULL"),
            ("kind", "TEXT NOT NULL"),
            ("date", "DATE NOT NULL"),
        ),
        "fields": CONSTRUCTION_FIELDS,
        "description": "Construction oversight: stage notices, inspections, violation "
        "notices, stop-work orders",
    },
    "attachments": {
        "id": "attachment_id",
        "geometry": False,
        "fixed": (
            ("target_table", "TEXT NOT NULL"),
            ("target_id", "INTEGER NOT NULL"),
            ("filename", "TEXT"),
            ("mime", "TEXT NOT NULL"),
            ("bytes", "INTEGER NOT NULL"),
            ("width", "INTEGER"),
            ("height", "INTEGER"),
            ("sha256", "TEXT NOT NULL"),
            ("caption", "TEXT"),
            ("data", "BLOB NOT NULL"),
        ),
        "fields": (),
        "description": "Photos (JPEG/PNG) of an inspection, sample or case",
    },
    "audit": {
        "id": None,
        "geometry": False,
        "fixed": (
            ("role", "TEXT NOT NULL"),
            ("table_name", "TEXT NOT NULL"),
            ("row_id", "INTEGER NOT NULL"),
            ("version", "INTEGER NOT NULL"),
            ("action", "TEXT NOT NULL"),
            ("old_values", "TEXT"),
            ("new_values", "TEXT NOT NULL"),
            ("chain", "TEXT"),  # SHA-256 chain of the audit rows (records/tamper.py)
        ),
        "fields": (),
        "description": "Append-only audit trail: who changed what, when, old and new values",
    },
}


def now_utc() -> str:
    """The current time as a GeoPackage DATETIME (``YYYY-MM-DDTHH:MM:SS.SSSZ``)."""
    t = dt.datetime.now(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


# ======================================================================================
# Connections and transactions
# ======================================================================================
def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode with the busy timeout (no transaction open).

    It has the GeoPackage geometry functions that the spatial index triggers call
    (:func:`_register_gpkg_functions`): GDAL and QGIS add them when a user creates a
    spatial index on a records layer, and every write would fail without them.
    """
    con = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    con.execute("PRAGMA synchronous = FULL")
    _register_gpkg_functions(con)
    return con


_ENVELOPE_DOUBLES = {0: 0, 1: 4, 2: 6, 3: 6, 4: 8}


def _gpkg_bounds(blob: Any) -> tuple[float, float, float, float] | None:
    """``(minx, maxx, miny, maxy)`` of a GeoPackage geometry blob (from its envelope,
    else from its WKB); ``None`` for a NULL or empty geometry."""
    if blob is None:
        return None
    b = bytes(blob)
    if len(b) < 8 or b[:2] != b"GP":
        return None
    flags = b[3]
    if (flags >> 4) & 1:  # the empty-geometry flag
        return None
    order = "<" if flags & 1 else ">"
    n = _ENVELOPE_DOUBLES.get((flags >> 1) & 7, 0)
    if n:
        minx, maxx, miny, maxy = struct.unpack(order + "4d", b[8 : 8 + 32])
        return minx, maxx, miny, maxy
    g = shapely.from_wkb(b[8 + 8 * n :])
    if g is None or g.is_empty:
        return None
    x0, y0, x1, y1 = g.bounds
    return x0, x1, y0, y1


def _register_gpkg_functions(con: sqlite3.Connection) -> None:
    """``ST_IsEmpty``, ``ST_MinX``, ``ST_MaxX``, ``ST_MinY``, ``ST_MaxY`` (GeoPackage
    spec, the functions of its R-tree index triggers) on ``con``."""
    con.create_function(
        "ST_IsEmpty",
        1,
        lambda g: None if g is None else int(_gpkg_bounds(g) is None),
        deterministic=True,
    )
    for name, i in (("ST_MinX", 0), ("ST_MaxX", 1), ("ST_MinY", 2), ("ST_MaxY", 3)):
        con.create_function(
            name,
            1,
            lambda g, i=i: None if (bb := _gpkg_bounds(g)) is None else bb[i],
            deterministic=True,
        )


def _locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _lock_error(path: Path) -> DataError:
    return DataError(
        f"The records file '{path.name}' stayed locked by another program for "
        f"{WRITE_RETRY_S:.0f} s. Nothing was written. Fix: close QGIS layers of it that are "
        "in edit mode (or another program writing it) and try again."
    )


@contextlib.contextmanager
def write_tx(path: Path) -> Iterator[sqlite3.Connection]:
    """One short write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``), retried on locks.

    The body runs with the write lock held; if it raises, the transaction is rolled
    back and nothing of it is in the file.
    """
    deadline = time.monotonic() + WRITE_RETRY_S
    while True:
        con = connect(path)
        try:
            with contextlib.suppress(sqlite3.OperationalError):  # a WAL file left by others
                con.execute(f"PRAGMA journal_mode = {JOURNAL_MODE}")
            con.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as exc:
            con.close()
            if _read_only(exc):
                raise _read_only_error(path, exc) from None
            if not _locked(exc) or time.monotonic() > deadline:
                raise (_lock_error(path) if _locked(exc) else exc) from None
            time.sleep(random.uniform(0.01, 0.1))
    try:
        yield con
        while True:
            try:
                con.execute("COMMIT")
                break
            except sqlite3.OperationalError as exc:  # readers still hold shared locks
                if not _locked(exc) or time.monotonic() > deadline:
                    raise (_lock_error(path) if _locked(exc) else exc) from None
                time.sleep(random.uniform(0.01, 0.1))
    except sqlite3.OperationalError as exc:
        _rollback(con)
        if _read_only(exc):
            raise _read_only_error(path, exc) from None
        if _disk_trouble(exc):
            raise DataError(
                f"Writing the records file '{path.name}' failed: {exc} (the disk may be "
                "full). Nothing of this change was written; the earlier records are "
                "intact. Fix: free disk space (or check the drive) and try again."
            ) from None
        raise
    except BaseException:
        _rollback(con)
        raise
    finally:
        con.close()


def _rollback(con: sqlite3.Connection) -> None:
    if con.in_transaction:
        with contextlib.suppress(sqlite3.Error):  # a failed disk may refuse that too
            con.execute("ROLLBACK")


def _read_only(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open database" in text


def _read_only_error(path: Path, exc: sqlite3.OperationalError) -> OutputError:
    return OutputError(
        f"The records file '{path}' is read-only ({exc}): nothing was written. Fix: make "
        "the file and its folder writable for the account that records (or keep the "
        "records elsewhere with --records FILE.records.gpkg)."
    )


def _disk_trouble(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "disk is full" in text or "disk i/o error" in text or "no space" in text


@contextlib.contextmanager
def read_tx(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection for reads; closed (and every shared lock released) on exit."""
    if not path.exists():
        raise InputOpenError(f"The records file '{path}' does not exist.")
    deadline = time.monotonic() + WRITE_RETRY_S
    con = connect(path)
    try:
        while True:
            try:
                con.execute("BEGIN")  # one consistent snapshot for several SELECTs
                con.execute("SELECT count(*) FROM sqlite_master").fetchone()
                break
            except sqlite3.OperationalError as exc:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                if not _locked(exc) or time.monotonic() > deadline:
                    raise (_lock_error(path) if _locked(exc) else exc) from None
                time.sleep(random.uniform(0.01, 0.1))
        yield con
    finally:
        if con.in_transaction:
            con.execute("ROLLBACK")
        con.close()


# ======================================================================================
# Geometry blobs (GeoPackage binary header + WKB)
# ======================================================================================
def encode_point(x: float | None, y: float | None, srs_id: int) -> bytes | None:
    """A GeoPackage geometry blob of a 2-D point (``None`` for a missing location)."""
    if x is None or y is None:
        return None
    head = b"GP" + bytes([0, 0b0000_0001]) + struct.pack("<i", srs_id)  # LE, no envelope
    return head + shapely.to_wkb(shapely.Point(float(x), float(y)), byte_order=1)


def encode_geometry(geom: Any, srs_id: int) -> bytes | None:
    """A GeoPackage geometry blob of any 2-D shapely geometry, with its envelope
    (``None`` for a missing or empty one)."""
    if geom is None or geom.is_empty:
        return None
    if geom.geom_type == "Point":
        return encode_point(geom.x, geom.y, srs_id)
    x0, y0, x1, y1 = (float(v) for v in geom.bounds)
    head = b"GP" + bytes([0, 0b0000_0011]) + struct.pack("<i", srs_id)  # LE, xy envelope
    env = struct.pack("<4d", x0, x1, y0, y1)
    return head + env + shapely.to_wkb(geom, byte_order=1, output_dimension=2)


def decode_point(blob: bytes | None) -> Any:
    """The shapely geometry of a GeoPackage blob (``None`` for NULL)."""
    if blob is None:
        return None
    flags = blob[3]
    env = (flags >> 1) & 0b111
    size = {0: 0, 1: 32, 2: 48, 3: 48, 4: 64}.get(env, 0)
    return shapely.from_wkb(bytes(blob[8 + size :]))


# ======================================================================================
# Schema
# ======================================================================================
_CORE = """
CREATE TABLE IF NOT EXISTS gpkg_spatial_ref_sys (
  srs_name TEXT NOT NULL, srs_id INTEGER NOT NULL PRIMARY KEY, organization TEXT NOT NULL,
  organization_coordsys_id INTEGER NOT NULL, definition TEXT NOT NULL, description TEXT);
CREATE TABLE IF NOT EXISTS gpkg_contents (
  table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL, identifier TEXT UNIQUE,
  description TEXT DEFAULT '',
  last_change DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE,
  srs_id INTEGER, CONSTRAINT fk_gc_r_srs_id FOREIGN KEY (srs_id)
  REFERENCES gpkg_spatial_ref_sys(srs_id));
CREATE TABLE IF NOT EXISTS gpkg_geometry_columns (
  table_name TEXT NOT NULL, column_name TEXT NOT NULL, geometry_type_name TEXT NOT NULL,
  srs_id INTEGER NOT NULL, z TINYINT NOT NULL, m TINYINT NOT NULL,
  CONSTRAINT pk_geom_cols PRIMARY KEY (table_name, column_name),
  CONSTRAINT fk_gc_tn FOREIGN KEY (table_name) REFERENCES gpkg_contents(table_name),
  CONSTRAINT fk_gc_srs FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys (srs_id));
CREATE TABLE IF NOT EXISTS records_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_WGS84 = (
    'GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,'
    'AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,'
    'AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],'
    'AXIS["Latitude",NORTH],AXIS["Longitude",EAST],AUTHORITY["EPSG","4326"]]'
)


def _columns(spec: dict[str, Any], srs: bool) -> list[str]:
    cols = ["fid INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL"]
    if spec["id"]:
        cols += [f"{spec['id']} INTEGER NOT NULL", "version INTEGER NOT NULL"]
    if spec["geometry"] and srs:
        cols.append(f"geom {spec.get('geometry_type', 'POINT')}")
    cols += [f"{name} {kind}" for name, kind in spec["fixed"]]
    cols += [f"{f.name} {f.sql_type}" for f in spec["fields"]]
    cols += ["created_at DATETIME NOT NULL", "created_by TEXT NOT NULL"]
    if spec["id"]:
        cols.append(f"UNIQUE ({spec['id']}, version)")
    return cols


def ensure_schema(
    con: sqlite3.Connection,
    *,
    srs: tuple[int, str, str, int, str],
    bounds: tuple[float, float, float, float] | None,
    meta: dict[str, str],
) -> None:
    """Create the GeoPackage tables, the records tables and their triggers if missing.

    Runs inside the caller's write transaction, so two processes creating the file at
    the same moment both end with one complete schema.

    Parameters
    ----------
    srs : (srs_id, name, organization, organization_coordsys_id, WKT definition)
        The CRS of the geometry columns (the workspace's working CRS).
    bounds : (min_x, min_y, max_x, max_y) or None
        Extent of the outfalls, for ``gpkg_contents``.
    meta : dict
        ``records_meta`` rows written once (workspace, created, ...).
    """
    con.execute(f"PRAGMA application_id = {GPKG_APPLICATION_ID}")
    con.execute(f"PRAGMA user_version = {GPKG_USER_VERSION}")
    for statement in _CORE.split(";"):  # not executescript(): it would commit
        if statement.strip():
            con.execute(statement)
    ref = [
        ("Undefined cartesian SRS", -1, "NONE", -1, "undefined", "undefined cartesian"),
        ("Undefined geographic SRS", 0, "NONE", 0, "undefined", "undefined geographic"),
        ("WGS 84 geodetic", 4326, "EPSG", 4326, _WGS84, "longitude/latitude WGS 84"),
        (srs[1], srs[0], srs[2], srs[3], srs[4], "working CRS of the ms4map workspace"),
    ]
    con.executemany("INSERT OR IGNORE INTO gpkg_spatial_ref_sys VALUES (?, ?, ?, ?, ?, ?)", ref)
    for table, spec in TABLES.items():
        cols = ",\n  ".join(_columns(spec, True))
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} (\n  {cols})")
        if spec["id"]:
            con.execute(f"CREATE INDEX IF NOT EXISTS {table}_id ON {table} ({spec['id']}, version)")
        for op in ("UPDATE", "DELETE"):
            con.execute(
                f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: ms4map records keep every "
                "version; record a correction instead'); END"
            )
        kind = "features" if spec["geometry"] else "attributes"
        b = bounds if spec["geometry"] and bounds else (None, None, None, None)
        con.execute(
            "INSERT OR IGNORE INTO gpkg_contents (table_name, data_type, identifier, "
            "description, min_x, min_y, max_x, max_y, srs_id) VALUES (?,?,?,?,?,?,?,?,?)",
            (table, kind, table, spec["description"], *b, srs[0] if spec["geometry"] else None),
        )
        if spec["geometry"]:
            con.execute(
                "INSERT OR IGNORE INTO gpkg_geometry_columns VALUES (?, 'geom', ?, ?, 0, 0)",
                (table, spec.get("geometry_type", "POINT"), srs[0]),
            )
    con.executemany(
        "INSERT OR IGNORE INTO records_meta VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), *meta.items()],
    )


def missing_columns(con: sqlite3.Connection) -> list[tuple[str, str]]:
    """``(table, column definition)`` of the user fields a file made by an older ms4map
    lacks (e.g. ``found_lat`` of the inspections)."""
    out = []
    for table, spec in TABLES.items():
        have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        if not have:
            continue
        out += [(table, f"{f.name} {f.sql_type}") for f in spec["fields"] if f.name not in have]
    return out


def add_missing_columns(con: sqlite3.Connection) -> None:
    """Add :func:`missing_columns` (inside the caller's write transaction)."""
    for table, col in missing_columns(con):
        con.execute(f"ALTER TABLE {table} ADD COLUMN {col}")


def file_srs(con: sqlite3.Connection) -> tuple[int, str] | None:
    """``(srs_id, WKT definition)`` of the records' geometry columns, or None."""
    row = con.execute(
        "SELECT g.srs_id, s.definition FROM gpkg_geometry_columns g JOIN "
        "gpkg_spatial_ref_sys s ON s.srs_id = g.srs_id WHERE g.table_name = 'inspections'"
    ).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def has_schema(path: Path) -> bool:
    """Whether ``path`` already holds the records tables."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with read_tx(path) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return set(TABLES) <= names
