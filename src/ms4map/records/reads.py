"""The records store's reads: current rows, status, deadlines, year figures, export, backup.

:class:`~ms4map.records.records.Records` calls these with itself as the first argument.
A read returns the current version of each row (every version with ``history=True``);
it never writes, and a store not created yet reads as empty tables.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd
from shapely.geometry import Point

from .. import idde, pipeline
from ..core.errors import DataError, UsageError
from ..core.tables import csv_text
from ..core.version import __version__
from ..idde import flow_type_of
from ..io import check_output_path, open_workspace, write_outputs, write_text_output
from ..rules.profiles import Profile
from . import gpkg
from .case_profile import case_profile, kept_profiles, profile_not_known
from .cases import case_deadlines
from .fields import CASE_FIELDS, INSPECTION_FIELDS, SAMPLE_FIELDS, as_date
from .periods import Period, first_record_day
from .smp import smp_inspections, smp_maintenance, smp_status, smps
from .summary import annual_report, outfall_status, summary
from .verify import accepted_moves

if TYPE_CHECKING:
    from ..pipeline import PipelineResult

__all__ = [
    "attachment_data",
    "attachments",
    "audit",
    "backup",
    "cases",
    "deadlines",
    "export",
    "inspections",
    "integrity_check",
    "network_result",
    "traced_workspace",
    "next_sample",
    "profile_of",
    "samples",
    "status",
    "year_report",
    "year_summary",
]

_FIELD_SPECS = (INSPECTION_FIELDS, SAMPLE_FIELDS, CASE_FIELDS)
_BOOL = {f.name for spec in _FIELD_SPECS for f in spec if f.kind == "bool"}
_INT = {f.name for spec in _FIELD_SPECS for f in spec if f.kind in ("severity", "int")}


# ---------------------------------------------------------------- tables
def inspections(records: Any, *, history: bool = False) -> gpd.GeoDataFrame:
    """The inspections with their flow type (:meth:`Records.inspections`)."""
    return _with_flow_type(_read(records, "inspections", history=history))


def samples(records: Any, case_id: int | None = None, *, history: bool = False) -> gpd.GeoDataFrame:
    """The samples, optionally of one case, with their flow type."""
    df = _read(records, "samples", history=history)
    if case_id is not None:
        df = df[df["case_id"] == int(case_id)].reset_index(drop=True)
    return _with_flow_type(df)


def cases(records: Any, *, history: bool = False) -> gpd.GeoDataFrame:
    """The cases (current version = the latest step)."""
    return _read(records, "cases", history=history)


def attachments(records: Any) -> pd.DataFrame:
    """The attachments without their bytes."""
    return _read(records, "attachments")


def attachment_data(records: Any, attachment_id: int) -> bytes:
    """The bytes of one attachment."""
    with gpkg.read_tx(records.path) as con:
        row = con.execute(
            "SELECT data FROM attachments WHERE attachment_id = ?", (int(attachment_id),)
        ).fetchone()
    if row is None:
        raise DataError(f"No attachment {attachment_id}. Fix: see records.attachments().")
    return bytes(row[0])


def audit(records: Any) -> pd.DataFrame:
    """The audit trail, oldest first (``fid`` as ``audit_id``)."""
    if not records.path.exists():
        return _empty(records, "audit")
    with gpkg.read_tx(records.path) as con:
        df = pd.read_sql_query("SELECT * FROM audit ORDER BY fid", con)
    return df.rename(columns={"fid": "audit_id"})


def _read(records: Any, table: str, *, history: bool = False) -> pd.DataFrame:
    """The current versions of ``table`` (every version with ``history``), typed."""
    spec = gpkg.TABLES[table]
    key = spec["id"]
    if not records.path.exists():
        return _empty(records, table)
    if history or not key:
        sql = f"SELECT * FROM {table} ORDER BY fid"
    else:
        sql = (
            f"SELECT t.* FROM {table} t JOIN (SELECT {key} AS k, MAX(version) AS v "
            f"FROM {table} GROUP BY {key}) m ON t.{key} = m.k AND t.version = m.v "
            f"ORDER BY t.{key}"
        )
    with gpkg.read_tx(records.path) as con:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        df = pd.DataFrame(cur.fetchall(), columns=cols)
    df = df.drop(columns=["fid", "data"], errors="ignore")
    for c in df.columns:
        if c in _BOOL:
            df[c] = df[c].astype("boolean")
        elif c in _INT:
            df[c] = df[c].astype("Int64")
    if "geom" in df.columns:
        geoms = [gpkg.decode_point(b) for b in df.pop("geom")]
        df = gpd.GeoDataFrame(df, geometry=gpd.GeoSeries(geoms, crs=records.outfalls.crs))
    return df


def _optional(records: Any, table: str) -> pd.DataFrame:
    """The current rows of ``table``; none when the file lacks it (made by an older
    ms4map and not opened by the SMO since)."""
    if records.path.exists():
        with gpkg.read_tx(records.path) as con:
            have = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name = ?", (table,)
            ).fetchone()
        if have:
            return _read(records, table)
    return _empty(records, table)


def _empty(records: Any, table: str) -> pd.DataFrame:
    """``table`` with its columns and no rows (a store not created yet)."""
    spec = gpkg.TABLES[table]
    cols = (
        ([spec["id"], "version"] if spec["id"] else ["audit_id"])
        + [c for c, _ in spec["fixed"] if c != "data"]
        + [f.name for f in spec["fields"]]
        + ["created_at", "created_by"]
    )
    df = pd.DataFrame(columns=cols)
    if spec["geometry"]:
        return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries([], crs=records.outfalls.crs))
    return df


def _with_flow_type(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``flow_type`` and ``flow_type_reason`` (the CWP chart on its tests)."""
    types = [flow_type_of(r) for r in df.to_dict("records")]
    df["flow_type"] = [t[0] for t in types]
    df["flow_type_reason"] = [t[1] for t in types]
    return df


# ---------------------------------------------------------------- status and deadlines
def status(records: Any) -> gpd.GeoDataFrame:
    """Every outfall's derived status, with the layer's own as ``layer_status``."""
    st = outfall_status(records.outfalls, records.inspections(), records.cases())
    out = records.outfalls[["outfall_id", "geometry"]].copy()
    out["outfall_id"] = out["outfall_id"].astype(str)
    out = out.merge(st, on="outfall_id", how="left")
    if "status" in records.outfalls:
        out["layer_status"] = records.outfalls["status"].to_numpy()
    return gpd.GeoDataFrame(out, geometry="geometry", crs=records.outfalls.crs)


def deadlines(
    records: Any, *, today: dt.date | str | None = None, case_id: int | None = None
) -> pd.DataFrame:
    """The deadlines the cases (or one case) have reached, judged on ``today``."""
    day = as_date(today, "today", allow_future=True) if today is not None else dt.date.today()
    cases = records.cases()
    if case_id is not None:
        cases = cases[cases["case_id"] == int(case_id)]
    rows: list[dict[str, Any]] = []
    kept = _kept_in(records.path)
    for r in cases.drop(columns="geometry").to_dict("records"):
        prof = case_profile(r.get("profile"), records.profile, kept)
        if prof is None:
            rows.append(_unknown_deadlines(r))
        else:
            rows += case_deadlines(r, prof, today=day)
    cols = ["case_id", "outfall_id", "deadline", "due", "status", "done_on", "rule", "reason"]
    return pd.DataFrame(rows, columns=cols)


def profile_of(records: Any, case: Mapping[str, Any]) -> Profile | None:
    """The profile a case is judged by; ``None`` when it is not at hand."""
    return case_profile(case.get("profile"), records.profile, _kept_in(records.path))


def _kept_in(path: Path) -> dict[str, dict[str, Any]]:
    """The profile copies a records file keeps (none before its first write)."""
    if not path.exists() or not gpkg.has_schema(path):
        return {}
    with gpkg.read_tx(path) as con:
        return kept_profiles(con)


def _unknown_deadlines(case: Mapping[str, Any]) -> dict[str, Any]:
    """The one deadline row of a case whose profile is not at hand."""
    return {
        "case_id": case.get("case_id"),
        "outfall_id": case.get("outfall_id"),
        "deadline": "profile",
        "due": None,
        "status": "unknown",
        "done_on": None,
        "rule": "profile",
        "reason": profile_not_known(case.get("profile")),
    }


# ---------------------------------------------------------------- the reporting year
def period_of(records: Any, year: int | None = None, kind: str | None = None) -> Period:
    """The period of ``kind`` (default: the profile's) starting in ``year`` (default: the
    one today falls in)."""
    settings = records.periods
    if year is None:
        year = settings.year_of(dt.date.today(), kind)
    return settings.period(int(year), kind)


def check_period_begun(records: Any, period: Period) -> None:
    """Refuse a period of a year before the records begin (a typo of the year, most often);
    with no record at all every year is accepted."""
    ins, smp, cas = records.inspections(), records.samples(), records.cases()
    first = first_record_day((ins, ("date",)), (smp, ("date",)), (cas, ("opened_on",)))
    begins = None if first is None else records.periods.year_of(first, period.kind)
    if begins is not None and period.year < begins:
        raise UsageError(
            f"year = {period.year}: the {period.text()} ends before the records begin "
            f"(first record on {first.isoformat()}: the {period.words}s with records start "
            f"in {begins}). Fix: give --year {begins} or later."
        )


def year_summary(
    records: Any, year: int | None = None, *, kind: str | None = None
) -> dict[str, Any]:
    """The figures of a reporting period (default: the one today falls in)."""
    period = period_of(records, year, kind)
    check_period_begun(records, period)
    return summary(*_year_tables(records), period.year, period=period)


def year_report(records: Any, year: int | None = None, *, kind: str | None = None) -> pd.DataFrame:
    """One row of figures per reporting period up to ``year``."""
    period = period_of(records, year, kind)
    if year is not None:
        check_period_begun(records, period)
    return annual_report(
        *_year_tables(records),
        last_year=period.year,
        start=records.year_start,
        periods=records.periods,
        kind=kind,
    )


def _year_tables(records: Any) -> tuple[Any, ...]:
    """Outfalls, inspections, samples and cases: what the year's figures count."""
    return records.outfalls, records.inspections(), records.samples(), records.cases()


# ---------------------------------------------------------------- track-down
def next_sample(
    records: Any, case_id: int, result: PipelineResult | None = None, *, weight: str = "area"
) -> dict[str, Any]:
    """The next structure to sample for a case, along the bisection plan."""
    cases = records.cases()
    hit = cases[cases["case_id"] == int(case_id)]
    if not len(hit):
        raise DataError(f"Field 'case_id' = {case_id}: no such case. Fix: see records.cases().")
    oid = str(hit["outfall_id"].iloc[0])
    samples = records.samples(case_id).sort_values(["date", "sample_id"])
    taken: dict[str, str] = {}
    for s in samples.to_dict("records"):
        taken[str(s["struct_id"])] = str(s["result"])
    if result is None:
        result = network_result(records)
    plan = idde.sampling_plan(result, oid, max_samples=len(taken) + 1, weight=weight)
    out: dict[str, Any] = {
        "case_id": int(case_id),
        "outfall_id": oid,
        "struct_id": None,
        "kind": None,
        "sample": None,
        "followed": [],
        "unused": [],
    }
    node = plan[plan["after"].isna()]
    while len(node):
        n = node.iloc[0]
        sid = str(n["struct_id"])
        if sid not in taken:
            out.update(struct_id=sid, kind=str(n["kind"]), sample=int(n["sample"]))
            break
        out["followed"].append(f"{sid}: {taken[sid]}")
        node = plan[(plan["after"] == n["order"]) & (plan["if_result"] == taken[sid])]
    used = {f.split(":")[0] for f in out["followed"]}
    out["unused"] = [f"{k}: {v}" for k, v in taken.items() if k not in used]
    if out["unused"]:  # samples off the plan count too: plan again from what all leave
        again = idde.sampling_plan(result, oid, max_samples=1, weight=weight, known=taken)
        nxt = again.iloc[0] if len(again) else None
        out.update(
            struct_id=None if nxt is None else str(nxt["struct_id"]),
            kind=None if nxt is None else str(nxt["kind"]),
            sample=None if nxt is None else len(taken) + 1,
        )
        plan = again
    head = (
        f"After {'; '.join(out['followed'])}: " if out["followed"] else "First sample (none yet): "
    )
    if out["struct_id"] is not None:
        row = plan[plan["struct_id"] == out["struct_id"]].iloc[0]
        out["reason"] = f"{head}{row['reason']}"
    else:
        out["reason"] = (
            f"{head}no structure left whose sample would split what is still "
            "suspect; the source is isolated between the samples taken."
        )
    if out["unused"]:
        out["reason"] += (
            f" Samples off the plan, counted in the track-down: {', '.join(out['unused'])} "
            "(the suspect part is what every sample taken leaves)."
        )
    return out


def network_result(records: Any) -> PipelineResult:
    """The pipeline's result of the records' workspace (cached by the pipeline), the
    outfalls at the position the traces use (:func:`traced_workspace`)."""
    return pipeline.run(traced_workspace(records))


def traced_workspace(records: Any) -> Any:
    """The records' workspace with every outfall whose move the SMO accepted
    (:func:`ms4map.records.verify.accept_move`) at its field position; the others stay
    at their mapped one.  The moves are in the workspace's settings, so the pipeline's
    cache key changes with them."""
    return with_accepted_moves(open_workspace(records.workspace, **_ws_kwargs(records)), records)


def with_accepted_moves(ws: Any, records: Any) -> Any:
    """``ws`` itself when the SMO accepted no outfall move, else a copy (``ws`` is not
    changed) whose outfalls layer has each moved outfall at its field position and whose
    settings name the moves (a new pipeline cache key)."""

    moves = accepted_moves(audit(records))
    of = ws.layers.get("outfalls")
    if not moves or of is None:
        return ws
    pts = gpd.GeoSeries(
        [Point(m["x"], m["y"]) for m in moves.values()], crs=records.outfalls.crs
    ).to_crs(of.crs)
    where = dict(zip(moves, pts, strict=True))
    of = of.copy()
    ids = of["outfall_id"].astype(str)
    of["geometry"] = [where.get(i, g) for i, g in zip(ids, of.geometry, strict=True)]
    settings = {
        **ws.settings,
        "outfall_moves": tuple(sorted((k, round(p.x, 3), round(p.y, 3)) for k, p in where.items())),
    }
    return dataclasses.replace(ws, layers={**ws.layers, "outfalls": of}, settings=settings)


def _ws_kwargs(records: Any) -> dict[str, Any]:
    """The workspace options the records were opened with, for ``open_workspace``."""
    o = records._options
    return {"layers": o.get("layers"), "field_map": o.get("field_map"), "crs": o.get("crs")}


# ---------------------------------------------------------------- files
def integrity_check(records: Any) -> str:
    """SQLite's ``PRAGMA integrity_check`` of the records file."""
    with gpkg.read_tx(records.path) as con:
        return "; ".join(str(r[0]) for r in con.execute("PRAGMA integrity_check"))


def backup(records: Any, dest: str | Path) -> Path:
    """A consistent copy of the records file (SQLite's backup API) to a new ``dest``."""
    out = check_output_path(
        dest,
        protected=[*records.inputs, records.path],
        suffixes=(".gpkg",),
        option="--backup",
        ms4map_gpkg=False,
    )
    if out.exists():
        raise UsageError(
            f"--backup '{out}' exists: a backup never replaces a file. Fix: give a new "
            "file name (e.g. with the date), or move that file away first."
        )
    src = gpkg.connect(records.path)
    dst = sqlite3.connect(str(out))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    return out


def export(records: Any, dest: str | Path, *, table: str = "inspections") -> Path:
    """The records to a GeoPackage (every table, with provenance) or one table to CSV."""
    protected = [*records.inputs, records.path]
    out = check_output_path(
        dest, protected=protected, suffixes=(".gpkg", ".csv"), option="--export"
    )
    getters = {
        "inspections": records.inspections,
        "samples": records.samples,
        "cases": records.cases,
        "outfall_status": records.outfall_status,
        "deadlines": records.deadlines,
        "attachments": records.attachments,
        "audit": records.audit,
        # the SMP programme (records/smp.py): the inventory, its schedule as of today
        "smps": lambda: smps(records),
        "smp_status": lambda: smp_status(records),
        "smp_inspections": lambda: smp_inspections(records),
        "smp_maintenance": lambda: smp_maintenance(records),
        "projects": lambda: _optional(records, "projects"),
        "construction": lambda: _optional(records, "construction"),
    }
    if out.suffix.lower() == ".csv":
        if table not in getters:
            raise UsageError(f"--table {table!r}: select from {list(getters)}.")
        df = getters[table]()
        if isinstance(df, gpd.GeoDataFrame):
            df = pd.DataFrame(df.drop(columns=df.geometry.name))
        return write_text_output(out, csv_text(df), protected=protected, option="--export")
    layers = {name: get() for name, get in getters.items()}
    prov = {
        "tool": f"ms4map {__version__}",
        "created": gpkg.now_utc(),
        "records": str(records.path),
        "workspace": str(records.workspace),
        "profile": records.profile.name,
        "exported_by": records.user,
        "inputs": {str(p): "" for p in protected},
    }
    return write_outputs(out, layers, provenance=prov, inputs=protected, option="--export")
