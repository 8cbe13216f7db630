"""Opening a workspace's records: :func:`open_records`, the user's role, the store's checks.

:func:`open_records` reads the workspace's outfalls (:mod:`~ms4map.records.layers`),
takes the user's role (``smo`` edits, ``viewer`` reads; the users file may list
viewers), checks an existing records file (a GeoPackage, an ms4map records file, of
this workspace), creates it on the SMO's first use, and returns a
:class:`~ms4map.records.records.Records`.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import sqlite3
import tomllib
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyproj import CRS

from ..core.errors import DataError, InputOpenError, OutputError, UsageError
from ..io import check_output_path
from ..io.styles import write_layer_styles
from ..rules.profiles import Profile, load_profile
from . import gpkg, tamper
from .layers import _read_role
from .periods import period_settings
from .records import Records
from .summary import parse_year_start
from .users import users_file_path

__all__ = ["ROLES", "USERS_FILE_ENV", "default_user", "open_records", "records_path"]

#: Roles: ``smo`` edits, ``viewer`` only reads.
ROLES = ("smo", "viewer")
#: Environment variable naming the users file (TOML) that may list viewers.
USERS_FILE_ENV = "MS4MAP_USERS_FILE"
RECORDS_SUFFIX = ".records.gpkg"


def default_user() -> str:
    """The login name of the person running ms4map (for the CLI's ``--by`` default)."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "unknown"


def records_path(workspace: str | Path) -> Path:
    """``<stem>.records.gpkg`` beside the workspace (GeoPackage, folder or manifest)."""
    p = Path(workspace).expanduser()
    return (
        p.with_name(p.stem + RECORDS_SUFFIX) if p.suffix else p.parent / (p.name + RECORDS_SUFFIX)
    )


def check_user(user: Any) -> str:
    """A name to record changes under: 1-64 characters, no control characters (a
    newline would forge a line of every report and log it appears in).

    Raises
    ------
    UsageError
        An empty name, a control character, or a name over 64 characters.
    """
    if not isinstance(user, str) or not user.strip():
        raise UsageError("open_records needs user= (who records the changes), e.g. user='jsmith'.")
    user = user.strip()
    if any(unicodedata.category(c).startswith("C") for c in user) or len(user) > 64:
        raise UsageError(
            f"The user name {user[:70]!r} is refused: control characters (a newline, a tab, "
            "...) or over 64 characters. Fix: give the name as the users file lists it "
            "(--by jsmith)."
        )
    return user


def _users_role(user: str, users_file: str | Path | None, *, reading: bool = False) -> str | None:
    """The role the users file gives ``user``; ``None`` when there is no users file,
    ``viewer`` when it lists the user without a role (as the app reads it).

    Raises
    ------
    UsageError
        A users file exists and does not list ``user`` (unless ``reading``: then the
        answer is ``viewer``); a users file named (argument or
        ``MS4MAP_USERS_FILE``) that lists nobody.
    """
    env = os.environ.get(USERS_FILE_ENV)
    if env is not None and not env.strip() and not users_file:
        raise UsageError(
            f"{USERS_FILE_ENV} is set but empty. Fix: unset it, or set it to the users "
            "file (ms4map users list shows the app's)."
        )
    src = users_file or env
    named = bool(src)
    if not src:  # the app's users file (ms4map users add), when there is one
        src = users_file_path()
        if not src.exists():
            return None
    p = Path(src).expanduser()
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputOpenError(
            f"Users file '{p}' does not exist. Fix: check {USERS_FILE_ENV}."
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"Users file '{p}' is not valid TOML: {exc}.") from None
    users = data.get("users") or {}
    if not users:
        if named:  # e.g. --users-file /dev/null: not a way round the town's users file
            raise UsageError(
                f"Users file '{p}' lists no users. Fix: give the app's users file (ms4map "
                "users list), or none."
            )
        return None
    if user not in users:
        if reading:  # reading asks no name: only a change is recorded under one
            return "viewer"
        raise UsageError(
            f"User '{user}' is not in the users file '{p}', so cannot record. Fix: record "
            f"as a listed user (--by NAME; ms4map users list), or add them: ms4map users "
            f"add {user} --role smo|viewer."
        )
    entry = users[user]
    # a listed user without a role is a viewer, as the app reads it (users.load_users)
    role = entry.get("role", "viewer") if isinstance(entry, dict) else entry
    if role not in ROLES:
        raise DataError(
            f"Users file '{p.name}': users.{user}.role = {role!r}. Fix: select from {list(ROLES)}."
        )
    return str(role)


def _create_store(rec: Path, *, srs: Any, bounds: Any, meta: dict[str, str]) -> None:
    """Create the records file (owner-only, 0600: it holds names and enforcement
    records) with its schema; a file this call made is removed again when that fails
    (a read-only folder or file, a full disk), so no empty records file is left."""
    made = False
    fix = (
        "Fix: keep the records elsewhere with --records FILE.records.gpkg (records=...), "
        "in a folder you can write"
    )
    try:
        if not rec.exists():
            with contextlib.suppress(FileExistsError):
                os.close(os.open(rec, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                made = True
        with gpkg.write_tx(rec) as con:
            gpkg.ensure_schema(con, srs=srs, bounds=bounds, meta=meta)
            gpkg.add_missing_columns(con)  # a file of an older ms4map gains new tables here
            tamper.ensure_guards(con)
    except (sqlite3.OperationalError, PermissionError) as exc:
        _drop_if_empty(rec, made)
        raise OutputError(
            f"The records file '{rec}' cannot be created ({exc}): the file or its folder is "
            f"read-only or not yours. {fix}."
        ) from None
    except OSError as exc:  # ENOSPC, EROFS, a share gone
        _drop_if_empty(rec, made)
        raise OutputError(
            f"The records file '{rec}' cannot be created: {exc.strerror or exc}. {fix}, "
            "or free disk space."
        ) from None
    except DataError:  # write_tx's full disk: nothing of the schema was written
        _drop_if_empty(rec, made)
        raise


def _drop_if_empty(rec: Path, made: bool) -> None:
    if made:
        with contextlib.suppress(OSError, sqlite3.Error):
            if not gpkg.has_schema(rec):
                rec.unlink()
                for side in ("-wal", "-shm", "-journal"):
                    Path(str(rec) + side).unlink(missing_ok=True)


def _srs_of(crs: CRS) -> tuple[int, str, str, int, str]:
    """The ``gpkg_spatial_ref_sys`` row of ``crs`` (its EPSG code, else id 100000)."""
    epsg = crs.to_epsg()
    wkt = crs.to_wkt("WKT1_GDAL")
    if epsg:
        return (int(epsg), crs.name, "EPSG", int(epsg), wkt)
    return (100000, crs.name, "NONE", 100000, wkt)


def _has_styles(rec: Path) -> bool:
    """Whether the records file has its QGIS style of the inspections."""
    try:
        with gpkg.read_tx(rec) as con:
            return bool(
                con.execute(
                    "SELECT 1 FROM layer_styles WHERE f_table_name = 'inspections' LIMIT 1"
                ).fetchone()
            )
    except sqlite3.Error:  # no layer_styles table yet
        return False


def _check_existing_store(rec: Path, outfalls: Any, ws_path: Path, *, check_workspace: bool) -> Any:
    """Check an existing records file before use: a GeoPackage, an ms4map records file,
    of this workspace (``check_workspace``: when it was named with ``--records``);
    returns the outfalls in its CRS."""
    try:
        with gpkg.read_tx(rec) as con:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            srs = gpkg.file_srs(con) if "gpkg_geometry_columns" in names else None
    except sqlite3.DatabaseError as exc:
        raise InputOpenError(
            f"'{rec}' is not a GeoPackage ({exc}). Fix: give another --records path."
        ) from None
    if "records_meta" not in names and names:
        raise UsageError(
            f"'{rec.name}' is a GeoPackage but not an ms4map records file. Fix: give "
            "another --records path."
        )
    if "records_meta" in names and check_workspace:
        _check_same_workspace(rec, _records_meta(rec), ws_path)
    if srs is not None and outfalls.crs is not None:
        file_crs = CRS.from_epsg(srs[0]) if srs[0] not in (100000,) else CRS.from_wkt(srs[1])
        if not file_crs.equals(outfalls.crs):
            outfalls = outfalls.to_crs(file_crs)
    return outfalls


def _records_meta(rec: Path) -> dict[str, str]:
    """The ``records_meta`` rows of a records file; a clear error for a file that is not
    one (not a database, or a GeoPackage without them)."""
    try:
        with gpkg.read_tx(rec) as con:
            return dict(con.execute("SELECT key, value FROM records_meta").fetchall())
    except sqlite3.DatabaseError as exc:
        what = (
            "is a GeoPackage but not an ms4map records file"
            if "no such table" in str(exc)
            else f"is not a GeoPackage ({exc})"
        )
        raise InputOpenError(
            f"'{rec}' {what}. Fix: give a records file (<workspace>.records.gpkg) or the "
            "workspace itself."
        ) from None


def _check_same_workspace(rec: Path, meta: dict[str, str], ws_path: Path) -> None:
    """Refuse a records file that holds the records of another workspace that still
    exists (a moved workspace, whose recorded path is gone, is accepted)."""
    recorded = meta.get("workspace")
    if not recorded:
        return
    other = Path(recorded)
    if other.exists() and other.resolve() != ws_path.resolve():
        raise UsageError(
            f"--records '{rec.name}' holds the records of workspace '{other}', not of "
            f"'{ws_path}': its inspections and cases are of that town's outfalls. Fix: "
            "give that workspace with it, or another --records path for this one."
        )


def open_records(
    path: str | Path,
    *,
    user: str,
    role: str | None = None,
    records: str | Path | None = None,
    profile: str | Path | Profile | None = "stillwater",
    layers: Mapping[str, Any] | None = None,
    field_map: Any = None,
    crs: Any = None,
    users_file: str | Path | None = None,
    year_start: str | None = None,
) -> Records:
    """Open (and for the SMO, create on first use) the records of a workspace.

    Parameters
    ----------
    path : str or Path
        The workspace (GeoPackage, folder, manifest): its records file is
        ``<stem>.records.gpkg`` beside it; or a records file itself
        (``*.records.gpkg``), which remembers its workspace.
    user : str
        Who acts (written as ``created_by`` and in the audit trail): a recorded claim.
        When a users file exists (``users_file``, ``MS4MAP_USERS_FILE`` or the app's
        ``users.toml``) it must list ``user``; without one anyone may record, as the
        file permissions of the records file allow (docs/records.md, "Who recorded it").
    role : {"smo", "viewer"}, optional
        Default ``smo``, unless the users file lists ``user`` as a viewer; a
        ``viewer`` here only lowers the role. Set once: :attr:`Records.role` is read-only.
    records : path, optional
        Another records file for this workspace (never one of the input files).
    profile : str, Path or Profile
        Municipality profile for deadlines and the reporting year.
    layers, field_map, crs
        As for :func:`ms4map.io.open_workspace`; only the outfalls layer is read.
    users_file : path, optional
        TOML with ``[users.NAME] role = "viewer"``.
    year_start : "MM-DD", optional
        First day of a reporting year replacing the profile's periods (default: the
        profile's ``[records]`` periods, :mod:`ms4map.records.periods`: the permit year
        3 January - 2 January under the New York profiles; the calendar year under a
        profile without ``[records]``).

    Returns
    -------
    Records

    Raises
    ------
    UsageError
        Empty user or one with control characters, a user the users file does not
        list, unknown role, a records path that is an input file.
    InputOpenError
        The workspace cannot be read; a viewer asks for a records file that does not
        exist yet.
    DataError
        The workspace has no outfalls layer.
    """
    user = check_user(user)
    if role is not None and role not in ROLES:
        raise UsageError(f"role = {role!r}: select from {list(ROLES)}.")
    listed = _users_role(user, users_file, reading=role == "viewer")
    eff_role = "viewer" if "viewer" in (role, listed) else "smo"
    p = Path(path).expanduser()
    meta_ws: dict[str, str] = {}
    if p.name.endswith(RECORDS_SUFFIX) and records is None:
        rec = p
        if not rec.exists():
            raise InputOpenError(
                f"Records file '{rec}' does not exist. Fix: give the workspace instead; its "
                "records file is created beside it on first use."
            )
        meta_ws = _records_meta(rec)
        ws_path = Path(meta_ws.get("workspace", ""))
        if layers is None and meta_ws.get("layers"):
            layers = json.loads(meta_ws["layers"]) or None
    else:
        ws_path = p
        rec = Path(records).expanduser() if records is not None else records_path(p)
    if not ws_path.exists():
        raise InputOpenError(
            f"Workspace '{ws_path}' does not exist. Fix: check the path"
            + (" (the records file remembers where its workspace was)." if meta_ws else ".")
        )
    ws_path = ws_path.resolve()
    options = {"layers": layers, "field_map": field_map, "crs": crs}
    outfalls, inputs = _read_role(ws_path, "outfalls", **options)
    if outfalls is None or not len(outfalls):
        raise DataError(
            f"The workspace '{ws_path.name}' has no outfalls layer (or it is empty): records "
            "are kept per outfall. Fix: add an 'outfalls' layer or name it with --layer "
            "outfalls=LAYER."
        )
    rec = check_output_path(
        rec, protected=inputs, suffixes=(".gpkg",), option="--records", ms4map_gpkg=False
    )
    prof = load_profile(profile)
    if year_start is not None:
        parse_year_start(year_start)  # the message of old: MM-DD
    periods = period_settings(prof.raw.get("records"), year_start=year_start)
    yearly = periods.period(2001, periods.annual).start
    start = (yearly.month, yearly.day)
    keep = ["outfall_id", *(c for c in ("receiving_water", "status") if c in outfalls), "geometry"]
    outfalls = outfalls[keep].copy()
    if eff_role == "viewer" and not rec.exists():
        raise InputOpenError(
            f"No records yet for this workspace ('{rec.name}' does not exist); a viewer "
            "cannot create it. Fix: the SMO creates it with the first record."
        )
    if rec.exists() and rec.stat().st_size > 0:
        outfalls = _check_existing_store(
            rec, outfalls, ws_path, check_workspace=records is not None and not meta_ws
        )
    if eff_role == "smo":
        b = tuple(float(v) for v in outfalls.total_bounds)
        meta = {
            "workspace": str(ws_path),
            "layers": json.dumps(dict(layers) if layers else {}),
            "created": gpkg.now_utc(),
            "created_by": user,
        }
        if not gpkg.has_schema(rec):  # first use; two processes racing both end complete
            _create_store(rec, srs=_srs_of(outfalls.crs), bounds=b, meta=meta)
        else:  # a file made before the audit chain: add it (the old rows stay unchained)
            with gpkg.read_tx(rec) as con:
                missing = tamper.guards_missing(con)
                columns = gpkg.missing_columns(con)  # fields added since (found_lat, ...)
            if missing or columns:
                with gpkg.write_tx(rec) as con:
                    tamper.ensure_guards(con)
                    gpkg.add_missing_columns(con)
        if not _has_styles(rec):  # first use, or a first use cut short before its styles
            # QGIS draws the inspections, samples and cases styled (docs/exports.md)
            write_layer_styles(rec, description="ms4map records")
    return Records(
        rec,
        ws_path,
        user=user,
        role=eff_role,
        profile=prof,
        outfalls=outfalls.reset_index(drop=True),
        inputs=inputs,
        options=options,
        year_start=start,
        periods=periods,
    )
