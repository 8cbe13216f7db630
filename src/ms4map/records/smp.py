"""The SMP programme in the records store: practices, their inspections and maintenance, what is overdue.

Post-construction stormwater management practices (SMPs: ponds, wetlands, infiltration,
filters, open channels and the runoff-reduction practices of the NYS Stormwater
Management Design Manual, :mod:`~ms4map.records.smp_fields`) live in the same records
file as the IDDE records: tables ``smps`` (a point or a polygon), ``smp_inspections``
and ``smp_maintenance``, append-only, one row per version, every write with its audit
row in the same transaction (:func:`ms4map.records.tamper.append_audit`).  Functions
take a :class:`~ms4map.records.Records` as their first argument; the SMO writes,
viewers read.

What is due is computed from each practice's schedule (``inspection_months``,
``maintenance_months``) as of a day: the next inspection is due that many months after
the last one (after the as-built, or the day it was built, before any); a practice is
``overdue`` the day after that, ``due_soon`` within :data:`DUE_SOON_DAYS` before it.
"""

from __future__ import annotations

import calendar
import datetime as dt
import sqlite3
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..core.errors import DataError
from . import gpkg
from .fields import as_date, check_fields
from .layers import layer, structure_point
from .smp_fields import (
    SMP_FIELDS,
    SMP_INSPECTION_FIELDS,
    SMP_KINDS,
    SMP_MAINTENANCE_FIELDS,
    check_kind,
    kind_label,
)
from .writes import _current, _insert, _next_id, need_edit

__all__ = [
    "DUE_SOON_DAYS",
    "INSPECTION_STATUSES",
    "add_months",
    "add_smp",
    "check_geometry",
    "correct_smp",
    "inspect_smp",
    "maintain_smp",
    "overdue",
    "pack_rows",
    "retention_years",
    "smp_inspections",
    "smp_maintenance",
    "smp_status",
    "smps",
    "town_extent",
]

#: A practice is ``due_soon`` this many days before its next inspection is due.
DUE_SOON_DAYS = 30
#: The inspection status of a practice (the map's colours), as of a day.
INSPECTION_STATUSES = ("ok", "due_soon", "overdue", "never_inspected")
#: How far beyond the workspace's layers an SMP may lie (metres of the working CRS).
TOWN_MARGIN = 500.0

_BOOL = {f.name for f in (*SMP_FIELDS, *SMP_INSPECTION_FIELDS) if f.kind == "bool"}
_INT = {f.name for f in SMP_FIELDS if f.kind == "int"} | {"smp_id"}


# ---------------------------------------------------------------- dates and the law
def add_months(day: dt.date, months: int) -> dt.date:
    """``day`` plus ``months`` calendar months (the 31st of January + 1 = 28/29 February)."""
    m = day.month - 1 + int(months)
    year, month = day.year + m // 12, m % 12 + 1
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def retention_years(profile: Any) -> int | None:
    """How many years the profile's law keeps SMP records (``[smp] retention_years``);
    ``None`` when the law states no period (the records are then kept for good)."""
    value = (getattr(profile, "raw", {}) or {}).get("smp", {}).get("retention_years")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


# ---------------------------------------------------------------- checks
def town_extent(records: Any) -> Any:
    """The area an SMP must lie in: the box around the workspace's outfalls and
    parcels, :data:`TOWN_MARGIN` wider (the workspace has no town boundary layer)."""
    boxes = [records.outfalls.total_bounds]
    try:
        parcels = layer(records, "parcels")
    except Exception:  # noqa: BLE001 - no parcels layer: the outfalls alone
        parcels = None
    if parcels is not None and len(parcels):
        boxes.append(parcels.total_bounds)
    x0 = min(b[0] for b in boxes) - TOWN_MARGIN
    y0 = min(b[1] for b in boxes) - TOWN_MARGIN
    x1 = max(b[2] for b in boxes) + TOWN_MARGIN
    y1 = max(b[3] for b in boxes) + TOWN_MARGIN
    return shapely.box(x0, y0, x1, y1)


def check_geometry(geom: Any, extent: Any, *, where: str = "SMP") -> Any:
    """A point, polygon or multipolygon inside ``extent``; a :class:`DataError` naming
    the fix otherwise."""
    if isinstance(geom, str):
        try:
            geom = shapely.from_wkt(geom)
        except shapely.errors.GEOSException:
            raise DataError(
                f"{where} geometry {geom[:60]!r} is not WKT. Fix: give POINT (x y) or "
                "POLYGON ((...)) in the workspace's CRS."
            ) from None
    if geom is None or getattr(geom, "is_empty", True):
        raise DataError(f"{where} has no geometry. Fix: give its point or outline.")
    if geom.geom_type not in ("Point", "Polygon", "MultiPolygon"):
        raise DataError(
            f"{where} geometry is a {geom.geom_type}. Fix: give a point or a polygon (an "
            "SMP is drawn as one or the other)."
        )
    if not geom.is_valid:
        raise DataError(
            f"{where} polygon is not valid ({shapely.is_valid_reason(geom)}). "
            "Fix: repair it (QGIS: Vector > Geometry Tools > Fix Geometries)."
        )
    if not extent.contains(geom):
        x0, y0, x1, y1 = extent.bounds
        raise DataError(
            f"{where} lies outside the town (the area around its outfalls and parcels, "
            f"x {x0:.0f} to {x1:.0f}, y {y0:.0f} to {y1:.0f}). Fix: check the coordinates "
            "and their CRS (the workspace's working CRS)."
        )
    return geom


def _has_table(con: sqlite3.Connection, name: str) -> bool:
    return bool(
        con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone()
    )


def _check_project(con: sqlite3.Connection, project_id: Any, where: str) -> None:
    """A ``project_id`` must name a project when the file has a ``projects`` table."""
    if project_id is None or not _has_table(con, "projects"):
        return
    cols = {r[1] for r in con.execute("PRAGMA table_info(projects)")}
    if "project_id" not in cols:
        return
    hit = con.execute("SELECT 1 FROM projects WHERE project_id = ?", (int(project_id),))
    if hit.fetchone() is None:
        raise DataError(
            f"{where} field 'project_id' = {project_id}: no such project in the records. "
            "Fix: give the id of a saved project (ms4map project list), or leave it out."
        )


def _smp_values(fields: dict[str, Any]) -> dict[str, Any]:
    """The checked keyword fields of an SMP (dates of the past; drainage method only
    with an area)."""
    values = check_fields(fields, SMP_FIELDS, where="SMP")
    if values.get("drainage_area_m2") is not None and not values.get("drainage_method"):
        values["drainage_method"] = "given"
    return values


def _refuse_same_name(con: sqlite3.Connection, name: str, smp_id: int | None = None) -> None:
    """Refuse a name another current SMP has (any case)."""
    if not _has_table(con, "smps"):
        return
    hit = con.execute(
        "SELECT t.smp_id FROM smps t JOIN (SELECT smp_id AS k, MAX(version) AS v FROM smps "
        "GROUP BY smp_id) m ON t.smp_id = m.k AND t.version = m.v WHERE lower(trim(t.name)) "
        "= lower(?) AND t.smp_id != ? LIMIT 1",
        (name.strip(), smp_id or 0),
    ).fetchone()
    if hit:
        raise DataError(
            f"SMP field 'name' = {name!r}: SMP {hit[0]} already has that name. Nothing was "
            f"written. Fix: give another name, or correct SMP {hit[0]} (ms4map smp show "
            f"WORKSPACE {hit[0]})."
        )


# ---------------------------------------------------------------- writes
def add_smp(records: Any, name: str, kind: str, geometry: Any, /, **fields: Any) -> int:
    """Add a practice to the inventory; its ``smp_id``.

    Parameters
    ----------
    records : Records
    name : str
        Unique in the inventory (a command run twice adds one practice, not two).
    kind : str
        A kind of :data:`~ms4map.records.smp_fields.SMP_KINDS` (``P-2``, ``F-5``,
        ``rain_garden``, or the practice's name).
    geometry : shapely geometry or WKT
        A point or polygon in the records' CRS, inside the town.
    **fields
        :data:`~ms4map.records.smp_fields.SMP_FIELDS`: ``owner``, ``project_id``,
        ``discharges_to``, ``drainage_area_m2``, ``drainage_method``,
        ``design_documents``, ``as_built_on``, ``as_built_engineer``,
        ``as_built_pe_license``, ``built_on``, ``inspection_months``,
        ``maintenance_months``, ``address``, ``notes``.

    Raises
    ------
    PermissionError
        A viewer.
    DataError
        A field that breaks its rule, a name already used, a project that does not
        exist, a geometry outside the town; nothing is written.
    """
    need_edit(records, "adding an SMP")
    row = _new_smp_row(records, name, kind, geometry, fields, extent=town_extent(records))
    with gpkg.write_tx(records.path) as con:
        return _insert_smp(records, con, row)


def _new_smp_row(
    records: Any, name: Any, kind: Any, geometry: Any, fields: dict[str, Any], *, extent: Any
) -> dict[str, Any]:
    """The checked values of a new SMP (no id yet)."""
    text = "" if name is None else str(name).strip()
    if not text:
        raise DataError("SMP field 'name' is empty. Fix: give the practice a name.")
    code = check_kind(kind)
    geom = check_geometry(geometry, extent, where=f"SMP {text!r}")
    values = _smp_values(fields)
    if values.get("discharges_to"):
        _check_structure(records, values["discharges_to"])
    return {"name": text, "kind": code, "_geom": geom, **values}


def _check_structure(records: Any, struct_id: str) -> None:
    """``discharges_to`` names a structure of the workspace's structures layer."""
    try:
        structure_point(records, str(struct_id))
    except DataError as exc:
        raise DataError(f"SMP field 'discharges_to' = {struct_id!r}: {exc}") from None


def _insert_smp(records: Any, con: sqlite3.Connection, row: dict[str, Any]) -> int:
    """Insert a checked new SMP in the open write transaction; its id."""
    _refuse_same_name(con, row["name"])
    _check_project(con, row.get("project_id"), "SMP")
    sid = _next_id(con, "smps")
    geom = row.pop("_geom")
    full = {
        "smp_id": sid,
        "version": 1,
        "geom": gpkg.encode_geometry(geom, records._srs_id),
        **row,
    }
    _insert(records, con, "smps", full, action="insert")
    return sid


def correct_smp(records: Any, smp_id: int, /, *, action: str = "correct", **fields: Any) -> int:
    """A new version of SMP ``smp_id`` with ``fields`` changed (``name``, ``kind``,
    ``geometry`` and the SMP fields); the version."""
    need_edit(records, "correcting an SMP")
    fields = dict(fields)
    extra: dict[str, Any] = {}
    if "name" in fields:
        extra["name"] = str(fields.pop("name") or "").strip()
        if not extra["name"]:
            raise DataError("SMP field 'name' is empty. Fix: give the practice a name.")
    if "kind" in fields:
        extra["kind"] = check_kind(fields.pop("kind"))
    if "geometry" in fields:
        geom = check_geometry(fields.pop("geometry"), town_extent(records))
        extra["geom"] = gpkg.encode_geometry(geom, records._srs_id)
    values = {**extra, **_smp_values(fields)}
    if values.get("discharges_to"):
        _check_structure(records, values["discharges_to"])
    if not values:
        raise DataError("Nothing to correct. Fix: give the fields to change, e.g. owner='...'.")
    with gpkg.write_tx(records.path) as con:
        return _correct_in(records, con, int(smp_id), values, action=action)


def _correct_in(
    records: Any, con: sqlite3.Connection, smp_id: int, values: dict[str, Any], *, action: str
) -> int:
    old = _current(con, "smps", smp_id) if _has_table(con, "smps") else None
    if old is None:
        raise DataError(f"No SMP {smp_id}. Fix: see ms4map smp list.")
    if "name" in values:
        _refuse_same_name(con, values["name"], smp_id)
    _check_project(con, values.get("project_id"), "SMP")
    row = {**old, **values, "version": int(old["version"]) + 1}
    _insert(records, con, "smps", row, action=action, old=old)
    return int(row["version"])


def _smp_of(con: sqlite3.Connection, smp_id: int, what: str) -> dict[str, Any]:
    old = _current(con, "smps", int(smp_id)) if _has_table(con, "smps") else None
    if old is None:
        raise DataError(f"{what} field 'smp_id' = {smp_id}: no such SMP. Fix: see ms4map smp list.")
    return old


def inspect_smp(records: Any, smp_id: int, date: dt.date | str, /, **fields: Any) -> int:
    """Record an inspection of a practice; its ``smp_inspection_id``.

    ``fields``: ``inspection_kind`` (routine, random, complaint, one_year; default
    routine), ``inspector`` (default the user), ``condition`` (good, fair, poor,
    failing), ``findings``, ``actions_required``, ``acceptable`` (yes/no), ``notes``.
    """
    need_edit(records, "recording an SMP inspection")
    day = as_date(date, "SMP inspection field 'date'").isoformat()
    values = check_fields(fields, SMP_INSPECTION_FIELDS, where="SMP inspection")
    values.setdefault("inspection_kind", "routine")
    values["inspection_kind"] = values["inspection_kind"] or "routine"
    if not values.get("inspector"):
        values["inspector"] = records.user
    return _dated_row(records, "smp_inspections", int(smp_id), day, values)


def maintain_smp(records: Any, smp_id: int, date: dt.date | str, /, **fields: Any) -> int:
    """Record maintenance done on a practice; its ``smp_maintenance_id``.

    ``fields``: ``actions`` (what was done; required), ``performed_by`` (default the
    user), ``notes``.
    """
    need_edit(records, "recording SMP maintenance")
    day = as_date(date, "SMP maintenance field 'date'").isoformat()
    values = check_fields(fields, SMP_MAINTENANCE_FIELDS, where="SMP maintenance")
    if not values.get("actions"):
        raise DataError(
            "SMP maintenance field 'actions' is missing. Fix: say what was done (e.g. "
            "'removed sediment from the forebay; mowed')."
        )
    if not values.get("performed_by"):
        values["performed_by"] = records.user
    return _dated_row(records, "smp_maintenance", int(smp_id), day, values)


def _dated_row(records: Any, table: str, smp_id: int, day: str, values: dict[str, Any]) -> int:
    what = "SMP inspection" if table == "smp_inspections" else "SMP maintenance"
    with gpkg.write_tx(records.path) as con:
        _smp_of(con, smp_id, what)
        key = gpkg.TABLES[table]["id"]
        row = {key: _next_id(con, table), "version": 1, "smp_id": smp_id, "date": day, **values}
        _insert(records, con, table, row, action="insert")
        return int(row[key])


# ---------------------------------------------------------------- reads
def _read(records: Any, table: str, *, history: bool = False) -> pd.DataFrame:
    """The current versions of an SMP table (every version with ``history``); empty
    with its columns when the file or the table does not exist yet."""
    spec = gpkg.TABLES[table]
    key = spec["id"]
    cols = [key, "version", *(c for c, _ in spec["fixed"]), *(f.name for f in spec["fields"])]
    cols += ["created_at", "created_by"]
    df: pd.DataFrame | None = None
    if records.path.exists():
        with gpkg.read_tx(records.path) as con:
            if _has_table(con, table):
                sql = (
                    f"SELECT * FROM {table} ORDER BY fid"
                    if history
                    else f"SELECT t.* FROM {table} t JOIN (SELECT {key} AS k, MAX(version) "
                    f"AS v FROM {table} GROUP BY {key}) m ON t.{key} = m.k AND t.version = "
                    f"m.v ORDER BY t.{key}"
                )
                cur = con.execute(sql)
                df = pd.DataFrame(cur.fetchall(), columns=[d[0] for d in cur.description])
    if df is None:
        df = pd.DataFrame(columns=[*cols, *(["geom"] if spec["geometry"] else [])])
    df = df.drop(columns=["fid"], errors="ignore")
    for c in df.columns:
        if c in _BOOL:
            df[c] = df[c].astype("boolean")
        elif c in _INT or c == key or c == "version":
            df[c] = pd.to_numeric(df[c]).astype("Int64")
    if "geom" in df.columns:
        geoms = [gpkg.decode_point(b) for b in df.pop("geom")]
        df = gpd.GeoDataFrame(df, geometry=gpd.GeoSeries(geoms, crs=records.outfalls.crs))
    return df


def smps(records: Any, *, history: bool = False) -> gpd.GeoDataFrame:
    """The inventory (current versions): the SMP columns, ``practice`` (the kind in
    words), ``family`` and ``drainage_area_ac``, geometry."""
    df = _read(records, "smps", history=history)
    df["practice"] = [kind_label(k) for k in df["kind"]]
    df["family"] = [SMP_KINDS.get(str(k), ("", ""))[0] for k in df["kind"]]
    area = pd.to_numeric(df["drainage_area_m2"], errors="coerce")
    df["drainage_area_ac"] = (area / 4046.8564224).round(3)
    return df


def _with_keep_until(records: Any, df: pd.DataFrame) -> pd.DataFrame:
    years = retention_years(records.profile)
    df["keep_until"] = [
        None if years is None else _plus_years(dt.date.fromisoformat(str(d)), years).isoformat()
        for d in df["date"]
    ]
    return df


def _plus_years(day: dt.date, years: int) -> dt.date:
    return add_months(day, 12 * years)


def smp_inspections(records: Any, smp_id: int | None = None) -> pd.DataFrame:
    """SMP inspections (current versions), optionally of one practice, with
    ``keep_until`` (the date plus the profile's retention years; none when the law
    states no period)."""
    df = _read(records, "smp_inspections")
    if smp_id is not None:
        df = df[df["smp_id"] == int(smp_id)].reset_index(drop=True)
    return _with_keep_until(records, df)


def smp_maintenance(records: Any, smp_id: int | None = None) -> pd.DataFrame:
    """Maintenance records (current versions), optionally of one practice, with
    ``keep_until``."""
    df = _read(records, "smp_maintenance")
    if smp_id is not None:
        df = df[df["smp_id"] == int(smp_id)].reset_index(drop=True)
    return _with_keep_until(records, df)


def _due(last: dt.date | None, base: dt.date | None, months: Any) -> dt.date | None:
    start = last or base
    if start is None or months is None or pd.isna(months):
        return None
    return add_months(start, int(months))


def _state(due: dt.date | None, today: dt.date, *, never: bool) -> str:
    if due is None:
        return "never_inspected" if never else "no_schedule"
    if today > due:
        return "overdue"
    if (due - today).days <= DUE_SOON_DAYS:
        return "due_soon"
    return "ok"


def _date_or_none(v: Any) -> dt.date | None:
    if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA or str(v) == "":
        return None
    return dt.date.fromisoformat(str(v)[:10])


def smp_status(records: Any, today: dt.date | str | None = None) -> gpd.GeoDataFrame:
    """Every practice's inspection and maintenance state as of ``today``.

    Columns: ``smp_id, name, kind, practice, owner, inspection_months,
    last_inspection, inspection_due, inspection_status`` (:data:`INSPECTION_STATUSES`;
    ``no_schedule`` when the practice has no inspection interval),
    ``last_condition``, ``maintenance_months, last_maintenance, maintenance_due,
    maintenance_status`` (``ok``, ``due_soon``, ``overdue``, ``never_maintained``,
    ``no_schedule``), geometry.  A practice never inspected is ``never_inspected``
    (its first inspection is still due from the as-built or the day it was built:
    ``inspection_due``).
    """
    day = as_date(today or dt.date.today(), "today", allow_future=True)
    inv = smps(records)
    ins = smp_inspections(records)
    mnt = smp_maintenance(records)
    rows = []
    for r in inv.to_dict("records"):
        sid = int(r["smp_id"])
        base = _date_or_none(r.get("as_built_on")) or _date_or_none(r.get("built_on"))
        mine = ins[(ins["smp_id"] == sid) & (ins["date"].astype(str) <= day.isoformat())]
        mine = mine.sort_values(["date", "smp_inspection_id"])
        last = _date_or_none(mine["date"].iloc[-1]) if len(mine) else None
        i_months = r.get("inspection_months")
        i_due = _due(last, base, i_months)
        if last is None:
            i_state = "never_inspected"
        elif i_months is None or pd.isna(i_months):
            i_state = "no_schedule"
        else:
            i_state = _state(i_due, day, never=False)
        done = mnt[(mnt["smp_id"] == sid) & (mnt["date"].astype(str) <= day.isoformat())]
        m_last = _date_or_none(done["date"].max()) if len(done) else None
        m_months = r.get("maintenance_months")
        m_due = _due(m_last, base, m_months)
        if m_months is None or pd.isna(m_months):
            m_state = "no_schedule"
        elif m_due is None:
            m_state = "never_maintained"
        else:
            m_state = _state(m_due, day, never=False)
        rows.append(
            {
                "smp_id": sid,
                "name": r["name"],
                "kind": r["kind"],
                "practice": r["practice"],
                "owner": r.get("owner"),
                "project_id": r.get("project_id"),
                "inspection_months": i_months,
                "last_inspection": None if last is None else last.isoformat(),
                "last_condition": None if not len(mine) else mine["condition"].iloc[-1],
                "inspection_due": None if i_due is None else i_due.isoformat(),
                "inspection_status": i_state,
                "maintenance_months": m_months,
                "last_maintenance": None if m_last is None else m_last.isoformat(),
                "maintenance_due": None if m_due is None else m_due.isoformat(),
                "maintenance_status": m_state,
                "geometry": r["geometry"],
            }
        )
    cols = [
        "smp_id", "name", "kind", "practice", "owner", "project_id", "inspection_months",
        "last_inspection", "last_condition", "inspection_due", "inspection_status",
        "maintenance_months", "last_maintenance", "maintenance_due", "maintenance_status",
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=[*cols, "geometry"])
    return gpd.GeoDataFrame(frame, geometry="geometry", crs=records.outfalls.crs)


def overdue(records: Any, today: dt.date | str | None = None) -> pd.DataFrame:
    """The inspections and maintenance overdue as of ``today``: one row per practice
    and duty (``what``: ``inspection`` or ``maintenance``), with ``due`` and
    ``days_overdue``.  A practice never inspected whose first inspection (from its
    as-built or build date) is past is listed too."""
    day = as_date(today or dt.date.today(), "today", allow_future=True)
    st = smp_status(records, day)
    out = []
    for r in st.to_dict("records"):
        for what, due_col, state_col in (
            ("inspection", "inspection_due", "inspection_status"),
            ("maintenance", "maintenance_due", "maintenance_status"),
        ):
            due = _date_or_none(r[due_col])
            late = r[state_col] == "overdue" or (
                r[state_col] == "never_inspected" and due is not None and day > due
            )
            if late and due is not None:
                out.append(
                    {
                        "smp_id": r["smp_id"],
                        "name": r["name"],
                        "practice": r["practice"],
                        "owner": r["owner"],
                        "what": what,
                        "last": r[
                            "last_inspection" if what == "inspection" else "last_maintenance"
                        ],
                        "due": due.isoformat(),
                        "days_overdue": (day - due).days,
                    }
                )
    cols = ["smp_id", "name", "practice", "owner", "what", "last", "due", "days_overdue"]
    return pd.DataFrame(out, columns=cols)


def pack_rows(records: Any, period: Any) -> dict[str, pd.DataFrame]:
    """The post-construction section of the compliance pack for ``period`` (a
    :class:`~ms4map.records.periods.Period`).

    Returns
    -------
    dict
        ``smp_inventory`` (``kind, practice, count`` of the practices in the
        inventory, less those built after the period, and a last row ``all``), ``smp_inspections`` and
        ``smp_maintenance`` (the rows dated in the period), ``smp_overdue``
        (:func:`overdue` as of the period's last day, or today if earlier).
    """
    end = min(period.end, dt.date.today())
    inv = smps(records)
    built = inv["built_on"].where(inv["built_on"].notna(), inv["as_built_on"])
    keep = [b is None or pd.isna(b) or str(b) <= period.end.isoformat() for b in built]
    inv = inv.loc[np.asarray(keep, dtype=bool)]  # (a bare [] would select no columns)
    counts = inv.groupby("kind").size() if len(inv) else pd.Series(dtype=int)
    inventory = pd.DataFrame(
        {
            "kind": [str(k) for k in counts.index] + ["all"],
            "practice": [kind_label(k) for k in counts.index] + ["all practices"],
            "count": [int(v) for v in counts.to_numpy()] + [int(len(inv))],
        }
    )
    names = dict(zip(inv["smp_id"].astype(int), inv["name"].astype(str), strict=True))

    def in_period(df: pd.DataFrame) -> pd.DataFrame:
        d = df["date"].astype(str)
        df = df[(d >= period.start.isoformat()) & (d <= period.end.isoformat())].copy()
        df.insert(1, "name", [names.get(int(s), "") for s in df["smp_id"]])
        return df.drop(columns=["version", "created_at", "created_by"], errors="ignore")

    return {
        "smp_inventory": inventory,
        "smp_inspections": in_period(smp_inspections(records)).reset_index(drop=True),
        "smp_maintenance": in_period(smp_maintenance(records)).reset_index(drop=True),
        "smp_overdue": overdue(records, end),
    }
