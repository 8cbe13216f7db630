"""The offline field package: one GeoPackage a crew carries to the outfalls and back.

:func:`export_package` writes, into a new GeoPackage (never a user's file): the outfalls
to visit, the structures and pipes upstream of them (followed along the conveyances'
``from_id``/``to_id``), the parcels around them, a hillshade of the workspace's DEM (the
offline basemap), the open cases with their sampling plans (the bisection plan of
:func:`ms4map.idde.sampling_plan` from the samples already taken, the decision tree a
crew follows; the upstream structures nearest first when the network cannot be
traced, ``method`` says which), and empty ``inspections``, ``samples`` and ``photos`` tables with the
ORI fields, their value lists (``value_lists``) and rules (``field_rules``).  The
``field_package`` table names the ms4map version, the workspace and records hashes,
when, by whom, and the package id; :mod:`~ms4map.records.field_import` checks them on
the way back.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from .. import idde
from ..core.errors import DataError, UsageError
from ..core.version import __version__
from . import gpkg
from .field_qgis import write_qgis_project
from .fields import INSPECTION_FIELDS, SAMPLE_FIELDS, Field
from .layers import layer
from .reads import network_result

__all__ = [
    "FIELD_TABLES",
    "USER_FIELDS",
    "FORMAT",
    "export_package",
    "records_hash",
    "schema_hash",
    "workspace_hash",
]

#: The package format this ms4map writes and reads.
FORMAT = 1
#: Parcels within this distance (m) of an outfall or an upstream structure go along.
PARCEL_BUFFER_M = 60.0
#: The tables a crew writes into: the fixed columns before the ORI fields.
FIELD_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "inspections": (
        ("device_uuid", "TEXT NOT NULL UNIQUE"),
        ("device_id", "TEXT"),
        ("outfall_id", "TEXT"),
        ("date", "DATE"),
    ),
    "samples": (
        ("device_uuid", "TEXT NOT NULL UNIQUE"),
        ("device_id", "TEXT"),
        ("case_id", "INTEGER"),
        ("struct_id", "TEXT"),
        ("date", "DATE"),
    ),
    "photos": (
        ("device_uuid", "TEXT NOT NULL UNIQUE"),
        ("target_uuid", "TEXT NOT NULL"),
        ("filename", "TEXT"),
        ("sha256", "TEXT NOT NULL"),
        ("data", "BLOB"),
    ),
}
USER_FIELDS: dict[str, tuple[Field, ...]] = {
    "inspections": INSPECTION_FIELDS,
    "samples": SAMPLE_FIELDS,
    "photos": (),
}
#: Conditions a form shows (``field_rules.required_when``); the import applies the same
#: rules as ``ms4map inspect`` and ``ms4map case sample``.
REQUIRED_WHEN = {
    ("inspections", "outfall_id"): "always",
    ("inspections", "date"): "always",
    ("samples", "case_id"): "always",
    ("samples", "struct_id"): "always",
    ("samples", "date"): "always",
    ("samples", "result"): "flow_present IS NULL",
}
#: Samples along any branch of a case's plan in the package (at most 2**4 - 1 rows).
PLAN_DEPTH = 4
#: Tables QGIS, QField or GDAL may add to a package (never a crew's rows).
TOOL_TABLES = ("layer_styles", "qgis_projects", "gpkg_", "rtree_", "sqlite_", "gpkgext_")


def _field_columns(table: str) -> list[str]:
    cols = ["fid INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL"]
    if table != "photos":
        cols.append("geom POINT")
    cols += [f"{n} {k}" for n, k in FIELD_TABLES[table]]
    cols += [f"{f.name} {f.sql_type}" for f in USER_FIELDS[table]]
    return cols


def schema_hash(con: sqlite3.Connection, tables: Iterable[str]) -> str:
    """SHA-256 of the ``CREATE TABLE`` statements of ``tables`` (an edited schema
    changes it)."""
    sql = []
    for t in sorted(tables):
        row = con.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name=?", (t,))
        got = row.fetchone()
        sql.append(f"{t}:{' '.join(str(got[0]).split()) if got else ''}")
    return hashlib.sha256("\n".join(sql).encode()).hexdigest()


def workspace_hash(records: Any) -> str:
    """SHA-256 of the workspace's outfall ids (the same workspace gives the same hash)."""
    ids = sorted(records.outfalls["outfall_id"].astype(str))
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def records_hash(records: Any) -> str:
    """SHA-256 naming the records file (its creation stamp and workspace)."""
    with gpkg.read_tx(records.path) as con:
        meta = dict(con.execute("SELECT key, value FROM records_meta").fetchall())
    key = f"{meta.get('created', '')}\n{meta.get('created_by', '')}"
    return hashlib.sha256(key.encode()).hexdigest()


def _chosen_outfalls(
    records: Any, outfalls: Sequence[str] | None, schedule: Any, year: int | None
) -> list[str]:
    known = list(records.outfalls["outfall_id"].astype(str))
    if schedule is not None:
        if year is None:
            raise UsageError("--schedule needs --year N (the year of the visits to carry).")
        plan = pd.read_csv(schedule, dtype={"outfall_id": str})
        if not {"outfall_id", "year"} <= set(plan.columns):
            raise UsageError(
                f"Schedule '{schedule}' has no outfall_id and year columns. Fix: give the CSV "
                "of 'ms4map outfalls schedule --out FILE.csv'."
            )
        picked = plan.loc[pd.to_numeric(plan["year"], errors="coerce") == year, "outfall_id"]
        chosen = list(dict.fromkeys(str(o) for o in picked))
        if not chosen:
            raise UsageError(f"Schedule '{schedule}' plans no visit in {year}.")
    elif outfalls:
        chosen = list(dict.fromkeys(str(o).strip() for o in outfalls if str(o).strip()))
    else:
        chosen = known
    unknown = [o for o in chosen if o not in known]
    if unknown:
        raise DataError(
            f"Outfall(s) {unknown} are not outfalls of the workspace. Fix: check the ids "
            "(case-sensitive)."
        )
    return chosen


def upstream(conveyances: pd.DataFrame | None, start: Iterable[str]) -> dict[str, list[str]]:
    """Per start node, the structure ids upstream of it, nearest (fewest pipes) first,
    followed along ``to_id`` -> ``from_id``."""
    out: dict[str, list[str]] = {}
    if conveyances is None or not len(conveyances):
        return {s: [] for s in start}
    up: dict[str, list[str]] = {}
    for f, t in zip(
        conveyances["from_id"].astype(str), conveyances["to_id"].astype(str), strict=True
    ):
        up.setdefault(t, []).append(f)
    for s in start:
        seen = {s}
        order: list[str] = []
        frontier = [s]
        while frontier:
            nxt = []
            for node in frontier:
                for f in up.get(node, ()):
                    if f not in seen:
                        seen.add(f)
                        order.append(f)
                        nxt.append(f)
            frontier = nxt
        out[s] = order
    return out


def _hillshade(dem: Path, bounds: tuple[float, float, float, float], crs: Any) -> Any:
    """``(array uint8, transform, crs)`` of a hillshade of ``dem`` over ``bounds``."""
    import rasterio
    from rasterio.warp import transform_bounds
    from rasterio.windows import from_bounds

    with rasterio.open(dem) as src:
        b = bounds
        if crs is not None and src.crs is not None and src.crs != crs:
            b = transform_bounds(crs, src.crs, *bounds)
        win = from_bounds(*b, transform=src.transform).round_offsets().round_lengths()
        win = win.intersection(rasterio.windows.Window(0, 0, src.width, src.height))
        z = src.read(1, window=win, masked=True).astype("float64").filled(np.nan)
        transform = src.window_transform(win)
        dcrs = src.crs
    dx, dy = abs(transform.a), abs(transform.e)
    gy, gx = np.gradient(np.nan_to_num(z, nan=float(np.nanmean(z)) if z.size else 0.0), dy, dx)
    slope = np.arctan(np.hypot(gx, gy))
    aspect = np.arctan2(-gx, gy)
    az, alt = np.radians(315.0), np.radians(45.0)
    shade = np.sin(alt) * np.cos(slope) + np.cos(alt) * np.sin(slope) * np.cos(az - aspect)
    return (np.clip(shade, 0, 1) * 254 + 1).astype("uint8"), transform, dcrs


def _write_layers(out: Path, layers: dict[str, gpd.GeoDataFrame]) -> None:
    for name, gdf in layers.items():
        gdf.to_file(out, layer=name, driver="GPKG", engine="pyogrio")


def _dem_of(records: Any) -> Path | None:
    ws = Path(records.workspace)
    cand = ws.with_name(f"{ws.stem}_dem.tif")
    return cand if cand.is_file() else None


def export_package(
    records: Any,
    out: str | Path,
    /,
    *,
    outfalls: Sequence[str] | None = None,
    schedule: str | Path | None = None,
    year: int | None = None,
    hillshade: bool = True,
    qgis_project: bool = False,
) -> dict[str, Any]:
    """Write the field package for ``outfalls`` (all, a list, or a schedule's year).

    Parameters
    ----------
    records : Records
    out : path
        A new ``.gpkg`` (an existing file is refused: never a user's file).
    outfalls : list of str, optional
    schedule : path, optional
        A CSV of ``ms4map outfalls schedule`` (with ``year``: the visits of that year).
    hillshade : bool
        Add the hillshade basemap when the workspace has a DEM.
    qgis_project : bool
        Also write ``<out>.qgz`` beside it with QGIS's Python
        (:func:`~ms4map.records.field_qgis.write_qgis_project`), when installed.

    Returns
    -------
    dict
        ``package_id``, ``path``, ``outfalls``, ``structures``, ``conveyances``,
        ``parcels``, ``cases``, ``hillshade`` (bool), ``bytes``, ``qgis_project``
        (its path, or None).

    Raises
    ------
    UsageError
        ``out`` exists, is not ``.gpkg``, or is one of the workspace's inputs.
    """
    out = Path(out).expanduser().resolve()
    if out.suffix.lower() != ".gpkg":
        raise UsageError(f"--out {out.name}: give a new .gpkg file for the field package.")
    protected = {Path(p).resolve() for p in [*records.inputs, records.path, records.workspace]}
    if out in protected or out.exists():
        raise UsageError(
            f"--out {out} exists: a field package is always a new file (ms4map never writes "
            "into an existing file). Fix: give a new name."
        )
    if qgis_project and out.with_suffix(".qgz").exists():
        raise UsageError(
            f"{out.with_suffix('.qgz')} exists: the package's QGIS project is always a new "
            "file. Fix: give --out a new name."
        )
    chosen = _chosen_outfalls(records, outfalls, schedule, year)
    of = records.outfalls[records.outfalls["outfall_id"].astype(str).isin(chosen)].copy()
    conv = layer(records, "conveyances")
    st = layer(records, "structures")
    open_cases = records.cases()
    if len(open_cases):
        open_cases = open_cases[open_cases["closed_on"].isna()]
    case_outfalls = [str(o) for o in open_cases.get("outfall_id", [])]
    ups = upstream(conv, list(dict.fromkeys([*chosen, *case_outfalls])))
    up_ids = {s for v in ups.values() for s in v}
    layers: dict[str, gpd.GeoDataFrame] = {"outfalls": of}
    if st is not None:
        layers["structures"] = st[st["struct_id"].astype(str).isin(up_ids)].copy()
    if conv is not None:
        ends = up_ids | set(chosen)
        keep = conv["from_id"].astype(str).isin(up_ids) & conv["to_id"].astype(str).isin(ends)
        layers["conveyances"] = conv[keep].copy()
    area = pd.concat([g.geometry for g in layers.values()]).buffer(PARCEL_BUFFER_M).union_all()
    pa = layer(records, "parcels")
    if pa is not None:
        layers["parcels"] = pa[pa.intersects(area)].copy()
    plans = case_plans(records, open_cases, ups)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        _write_layers(out, {k: v for k, v in layers.items() if len(v)})
        dem = _dem_of(records) if hillshade else None
        if dem is not None:
            _write_hillshade(out, dem, area.bounds, of.crs)
        package_id = str(uuid.uuid4())
        _write_tables(
            records, out, package_id=package_id, chosen=chosen, open_cases=open_cases, plans=plans
        )
        qgz = None
        if qgis_project:
            qgz = write_qgis_project(out)
    except BaseException:
        out.unlink(missing_ok=True)
        out.with_suffix(".qgz").unlink(missing_ok=True)
        raise
    return {
        "qgis_project": qgz,
        "package_id": package_id,
        "path": out,
        "outfalls": len(of),
        "structures": len(layers.get("structures", ())),
        "conveyances": len(layers.get("conveyances", ())),
        "parcels": len(layers.get("parcels", ())),
        "cases": len(open_cases),
        "hillshade": dem is not None,
        "bytes": out.stat().st_size,
    }


def _write_hillshade(out: Path, dem: Path, bounds: Any, crs: Any) -> None:
    import rasterio

    arr, transform, dcrs = _hillshade(dem, tuple(bounds), crs)
    if arr.size == 0:
        return
    profile = {
        "driver": "GPKG",
        "width": arr.shape[1],
        "height": arr.shape[0],
        "count": 1,
        "dtype": "uint8",
        "crs": dcrs,
        "transform": transform,
        "nodata": 0,
    }
    with rasterio.open(
        out, "w", RASTER_TABLE="hillshade", APPEND_SUBDATASET="YES", TILE_FORMAT="PNG", **profile
    ) as dst:
        dst.write(arr, 1)


def _value_rows() -> list[tuple[str, str, str]]:
    rows = []
    for table, spec in USER_FIELDS.items():
        for f in spec:
            if f.kind == "choice":
                rows += [(table, f.name, c) for c in f.choices]
            elif f.kind == "severity":
                rows += [(table, f.name, str(i)) for i in range(4)]
            elif f.kind == "bool":
                rows += [(table, f.name, v) for v in ("0", "1")]
    return rows


def _rule_rows() -> list[tuple[Any, ...]]:
    rows = []
    for table, fixed in FIELD_TABLES.items():
        for name, kind in fixed:
            when = REQUIRED_WHEN.get((table, name))
            rows.append((table, name, kind.split()[0].lower(), "", None, None, when))
        for f in USER_FIELDS[table]:
            when = REQUIRED_WHEN.get((table, f.name))
            rows.append((table, f.name, f.kind, f.unit, f.lo, f.hi, when))
    return rows


def _write_tables(
    records: Any,
    out: Path,
    *,
    package_id: str,
    chosen: list[str],
    open_cases: pd.DataFrame,
    plans: list[tuple[Any, ...]],
) -> None:
    srs = records._srs_id
    con = sqlite3.connect(out, isolation_level=None)
    try:
        con.execute("BEGIN")
        _copy_srs(con, records.path, srs)
        for table in FIELD_TABLES:
            cols = ",\n  ".join(_field_columns(table))
            con.execute(f"CREATE TABLE {table} (\n  {cols})")
            geo = table != "photos"
            con.execute(
                "INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) "
                "VALUES (?, ?, ?, ?)",
                (
                    table,
                    "features" if geo else "attributes",
                    f"field {table}",
                    srs if geo else None,
                ),
            )
            if geo:
                con.execute(
                    "INSERT INTO gpkg_geometry_columns VALUES (?, 'geom', 'POINT', ?, 0, 0)",
                    (table, srs),
                )
        con.execute("CREATE TABLE value_lists (table_name TEXT, field TEXT, value TEXT)")
        con.executemany("INSERT INTO value_lists VALUES (?, ?, ?)", _value_rows())
        con.execute(
            "CREATE TABLE field_rules (table_name TEXT, field TEXT, kind TEXT, unit TEXT, "
            "lo REAL, hi REAL, required_when TEXT)"
        )
        con.executemany("INSERT INTO field_rules VALUES (?, ?, ?, ?, ?, ?, ?)", _rule_rows())
        _write_cases(con, open_cases, plans)
        for t in ("value_lists", "field_rules", "open_cases", "sampling_plan"):
            con.execute(
                "INSERT INTO gpkg_contents (table_name, data_type, identifier) VALUES (?, ?, ?)",
                (t, "attributes", t),
            )
        tables = sorted(
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if not r[0].startswith(TOOL_TABLES)
        )
        tables.append("field_package")
        con.execute(
            "CREATE TABLE field_package (package_id TEXT NOT NULL, format INTEGER NOT NULL, "
            "ms4map_version TEXT NOT NULL, workspace TEXT, workspace_hash TEXT NOT NULL, "
            "records_hash TEXT NOT NULL, schema_hash TEXT NOT NULL, tables TEXT NOT NULL, "
            "outfalls TEXT NOT NULL, created TEXT NOT NULL, created_by TEXT NOT NULL)"
        )
        con.execute(
            "INSERT INTO gpkg_contents (table_name, data_type, identifier) VALUES (?, ?, ?)",
            ("field_package", "attributes", "field_package"),
        )
        con.execute(
            "INSERT INTO field_package VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                package_id,
                FORMAT,
                __version__,
                str(records.workspace),
                workspace_hash(records),
                records_hash(records),
                schema_hash(con, FIELD_TABLES),
                json.dumps(tables),
                json.dumps(chosen),
                gpkg.now_utc(),
                records.user,
            ),
        )
        con.execute("COMMIT")
    finally:
        con.close()


def _copy_srs(con: sqlite3.Connection, records_file: Path, srs: int) -> None:
    """The records file's ``gpkg_spatial_ref_sys`` row of ``srs`` (when missing here)."""
    if con.execute("SELECT 1 FROM gpkg_spatial_ref_sys WHERE srs_id = ?", (srs,)).fetchone():
        return
    with gpkg.read_tx(records_file) as src:
        row = src.execute(
            "SELECT srs_name, srs_id, organization, organization_coordsys_id, definition, "
            "description FROM gpkg_spatial_ref_sys WHERE srs_id = ?",
            (srs,),
        ).fetchone()
    if row:
        con.execute(
            "INSERT INTO gpkg_spatial_ref_sys (srs_name, srs_id, organization, "
            "organization_coordsys_id, definition, description) VALUES (?, ?, ?, ?, ?, ?)",
            row,
        )


def case_plans(
    records: Any, cases: pd.DataFrame, ups: dict[str, list[str]], *, depth: int = PLAN_DEPTH
) -> list[tuple[Any, ...]]:
    """The ``sampling_plan`` rows of the open ``cases``.

    Each case gets the bisection plan of :func:`ms4map.idde.sampling_plan` from the
    samples already recorded (``known``), ``depth`` samples deep: the rows ``after`` and
    ``if_result`` say which earlier sample and which result lead to each one.  When the
    storm network cannot be traced (the pipeline refuses the workspace), the plan is
    the structures upstream of the outfall, nearest first, with method
    ``nearest_first`` and the reason.

    Returns
    -------
    list of tuple
        ``(case_id, rank, struct_id, kind, sample, after, if_result, method, reason)``.
    """
    if not len(cases):
        return []
    try:
        result: Any = network_result(records)
        why = ""
    except DataError as exc:
        result, why = None, str(exc)
    rows: list[tuple[Any, ...]] = []
    for c in cases.to_dict("records"):
        cid, oid = int(c["case_id"]), str(c["outfall_id"])
        if result is not None:
            samples = records.samples(cid).sort_values(["date", "sample_id"])
            known = {str(s["struct_id"]): str(s["result"]) for s in samples.to_dict("records")}
            known = {k: v for k, v in known.items() if v in ("flow", "clean")}
            try:
                plan = idde.sampling_plan(result, oid, max_samples=depth, known=known or None)
            except DataError as exc:
                why = str(exc)
            else:
                rows += [
                    (cid, int(r["order"]), str(r["struct_id"]), str(r["kind"]),
                     int(r["sample"]), None if pd.isna(r["after"]) else int(r["after"]),
                     None if pd.isna(r["if_result"]) else str(r["if_result"]),
                     f"bisection ({r['method']})", str(r["reason"]))
                    for r in plan.to_dict("records")
                ]  # fmt: skip
                continue
        rows += [
            (cid, i + 1, s, "structure", i + 1, i or None, "flow" if i else None,
             "nearest_first", f"The network could not be traced for a bisection plan ({why}); "
             "the structures upstream of the outfall, the fewest pipes away first.")
            for i, s in enumerate(ups.get(oid, []))
        ]  # fmt: skip
    return rows


def _write_cases(
    con: sqlite3.Connection, cases: pd.DataFrame, plans: list[tuple[Any, ...]]
) -> None:
    con.execute(
        "CREATE TABLE open_cases (case_id INTEGER PRIMARY KEY, version INTEGER, outfall_id "
        "TEXT, status TEXT, step TEXT, opened_on DATE, description TEXT)"
    )
    con.execute(
        "CREATE TABLE sampling_plan (case_id INTEGER, rank INTEGER, struct_id TEXT, kind TEXT, "
        "sample INTEGER, after INTEGER, if_result TEXT, method TEXT, reason TEXT, sampled TEXT)"
    )
    for c in cases.to_dict("records") if len(cases) else []:
        con.execute(
            "INSERT INTO open_cases VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                int(c["case_id"]),
                int(c["version"]),
                str(c["outfall_id"]),
                str(c["status"]),
                str(c["step"]),
                str(c["opened_on"]),
                None if pd.isna(c.get("description")) else str(c["description"]),
            ),
        )
    con.executemany("INSERT INTO sampling_plan VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)", plans)
