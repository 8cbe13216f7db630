"""The records store: :func:`open_records` and :class:`Records`.

See the package docstring (:mod:`ms4map.records`) and ``docs/records.md``.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import sqlite3
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd
from pyproj import CRS

from ..core.errors import DataError, InputOpenError, OutputError, UsageError
from ..core.manifest import manifest_files
from ..core.qa import shown_ids
from ..rules.profiles import Profile, load_profile, remedy_deadline, remedy_period_end
from . import gpkg
from .case_profile import case_profile, keep_profile, kept_profiles, profile_not_known
from .cases import STEPS, _d, case_deadlines, check_case_row, check_step
from .fields import CASE_FIELDS, INSPECTION_FIELDS, SAMPLE_FIELDS, as_date, check_fields
from .photos import MAX_PHOTO_BYTES, check_photo
from .summary import annual_report, outfall_status, parse_year_start, reporting_year, summary

if TYPE_CHECKING:
    from ..pipeline import PipelineResult

__all__ = ["ROLES", "USERS_FILE_ENV", "Records", "default_user", "open_records", "records_path"]

#: Roles: ``smo`` edits, ``viewer`` only reads.
ROLES = ("smo", "viewer")
#: Environment variable naming the users file (TOML) that may list viewers.
USERS_FILE_ENV = "MS4MAP_USERS_FILE"
RECORDS_SUFFIX = ".records.gpkg"
_VECTOR = (".gpkg", ".shp", ".geojson", ".json", ".zip", ".fgb", ".gml", ".kml", ".gdb")
_SPECS = {
    "inspections": INSPECTION_FIELDS,
    "samples": SAMPLE_FIELDS,
    "cases": CASE_FIELDS,
}
_BOOL = {f.name for spec in _SPECS.values() for f in spec if f.kind == "bool"}
_INT = {f.name for spec in _SPECS.values() for f in spec if f.kind in ("severity", "int")}


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


def _users_role(user: str, users_file: str | Path | None) -> str | None:
    """The role the users file gives ``user``: ``None`` when it does not list the user,
    ``viewer`` when it lists the user without a role (as the app reads it)."""
    src = users_file or os.environ.get(USERS_FILE_ENV)
    if not src:  # the app's users file (ms4map users add), when there is one
        from .users import users_file_path

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
    if user not in users:
        return None
    entry = users[user]
    # a listed user without a role is a viewer, as the app reads it (users.load_users)
    role = entry.get("role", "viewer") if isinstance(entry, dict) else entry
    if role not in ROLES:
        raise DataError(
            f"Users file '{p.name}': users.{user}.role = {role!r}. Fix: select from {list(ROLES)}."
        )
    return str(role)


# ======================================================================================
# Reading one role of the workspace (outfalls, structures, parcels) without the pipeline
# ======================================================================================
def _source_spec(base: Path, spec: str, role: str | None = None) -> str:
    container = base.suffix.lower() in (".gpkg", ".gdb", ".zip")
    if "::" in spec:
        file_part, layer = spec.rsplit("::", 1)
        fp = Path(file_part).expanduser()
        return f"{fp if fp.is_absolute() else base.parent / fp}::{layer}"
    if "/" in spec or spec.lower().endswith(_VECTOR):
        fp = Path(spec).expanduser()
        folder = base if base.is_dir() and not container else base.parent
        return str(fp if fp.is_absolute() else folder / fp)
    if base.is_dir() and not container:
        # io's own resolver: two files of one stem are refused as open_workspace refuses
        # them (it read the first by name, the GeoJSON before the shapefile, silently)
        from ..io.files import _resolve_source

        return str(_resolve_source(spec, base, role).path)
    return f"{base}::{spec}"


def _read_role(
    workspace: Path,
    role: str,
    *,
    layers: Mapping[str, Any] | None,
    field_map: Any,
    crs: Any,
) -> tuple[gpd.GeoDataFrame | None, list[Path]]:
    """One canonical layer of the workspace (mapped, ids checked) and the files read."""
    from .. import io

    base = workspace
    specs = None if not layers else layers.get(role)
    inputs = [workspace]
    if base.suffix.lower() == ".toml":
        man = io.load_manifest(base)
        if "workspace" not in man:
            raise UsageError(f"Manifest '{base.name}' names no workspace. Fix: add workspace = ...")
        base = Path(man["workspace"])
        inputs.append(base)
        # every file the manifest names is the user's: never an output (export, report)
        inputs += [Path(f).resolve() for f in manifest_files(workspace) if Path(f).exists()]
        specs = specs or man.get("layers", {}).get(role)
        crs = crs or man.get("crs")
        if field_map is None and "fields" in man:
            field_map = man["fields"]
        elif field_map is None and "field_map" in man:
            field_map = man["field_map"]
    if isinstance(specs, str):
        specs = [specs]
    if not specs:
        if role not in io.list_source_layers(base):
            return None, inputs
        specs = [role]
    resolved = [_source_spec(base, s, role) for s in specs]
    ws = io.open_workspace(None, layers={role: resolved}, field_map=field_map, crs=crs, no_dem=True)
    inputs += [Path(p) for p in ws.inputs]
    return ws.layers.get(role), inputs


def _srs_of(crs: CRS) -> tuple[int, str, str, int, str]:
    epsg = crs.to_epsg()
    wkt = crs.to_wkt("WKT1_GDAL")
    if epsg:
        return (int(epsg), crs.name, "EPSG", int(epsg), wkt)
    return (100000, crs.name, "NONE", 100000, wkt)


# ======================================================================================
# The store
# ======================================================================================
class _RecordsBase:
    """The state of :class:`Records` and the helpers its writes and reads share."""

    def __init__(
        self,
        path: Path,
        workspace: Path,
        *,
        user: str,
        role: str,
        profile: Profile,
        outfalls: gpd.GeoDataFrame,
        inputs: list[Path],
        options: dict[str, Any],
        year_start: tuple[int, int],
    ) -> None:
        self.path = path
        self.workspace = workspace
        self.user = user
        self.role = role
        self.profile = profile
        self.outfalls = outfalls
        self.inputs = inputs
        self.year_start = year_start
        self._options = options
        self._srs_id = int(outfalls.crs.to_epsg() or 100000) if outfalls.crs else 100000
        self._structures: gpd.GeoDataFrame | None = None
        self._parcel_ids: set[str] | None = None
        self._srs_id = self._file_srs_id()

    def __repr__(self) -> str:
        return f"<Records {self.path.name}: {len(self.outfalls)} outfalls, user {self.user} ({self.role})>"

    # ---------------------------------------------------------------- helpers
    def _file_srs_id(self) -> int:
        if not self.path.exists():
            return self._srs_id
        with gpkg.read_tx(self.path) as con:
            srs = gpkg.file_srs(con)
        return srs[0] if srs else self._srs_id

    def _need_edit(self, what: str) -> None:
        if self.role != "smo":
            raise PermissionError(
                f"User '{self.user}' has the {self.role} role: {what} is refused (viewers only "
                "read the records). Fix: ask the SMO to record it, or to give this user the "
                "smo role (ms4map users add NAME --role smo --replace)."
            )

    def _check_outfall(self, outfall_id: Any) -> tuple[str, Any]:
        oid = str(outfall_id)
        hit = self.outfalls[self.outfalls["outfall_id"].astype(str) == oid]
        if not len(hit):
            ids = sorted(self.outfalls["outfall_id"].astype(str))
            shown = shown_ids(ids, 8)
            raise DataError(
                f"Field 'outfall_id' = '{oid}' is not an outfall of the workspace "
                f"({len(ids)} outfalls: {shown}). Fix: check the id (ids are case-sensitive)."
            )
        return oid, hit.geometry.iloc[0]

    def _layer(self, role: str) -> gpd.GeoDataFrame | None:
        gdf, _ = _read_role(self.workspace, role, **self._options)
        if gdf is not None and self.outfalls.crs is not None and gdf.crs != self.outfalls.crs:
            gdf = gdf.to_crs(self.outfalls.crs)
        return gdf

    def _layer_to_check(self, role: str, field: str, how: str) -> gpd.GeoDataFrame:
        """The workspace layer a field's ids are checked against (``how``: the hint
        on naming it); a :class:`DataError` when the workspace has none."""
        layer = self._layer(role)
        if layer is None:
            raise DataError(
                f"Field '{field}': the workspace has no {role} layer to check it "
                f"against. Fix: add the {role} layer ({how})."
            )
        return layer

    def _structure_point(self, struct_id: str) -> Any:
        if self._structures is None:
            self._structures = self._layer_to_check(
                "structures", "struct_id", "or name it with --layer structures=LAYER"
            )
        s = self._structures
        hit = s[s["struct_id"].astype(str) == struct_id]
        if not len(hit):
            raise DataError(
                f"Field 'struct_id' = '{struct_id}' is not a structure of the workspace "
                f"({len(s)} structures, e.g. {', '.join(s['struct_id'].astype(str).head(3))}). "
                "Fix: check the id (ids are case-sensitive)."
            )
        return hit.geometry.iloc[0]

    def _check_parcel(self, parcel_id: str) -> None:
        if self._parcel_ids is None:
            p = self._layer_to_check("parcels", "parcel_id", "or --layer parcels=LAYER")
            self._parcel_ids = set(p["parcel_id"].astype(str))
        if parcel_id not in self._parcel_ids:
            raise DataError(
                f"Field 'parcel_id' = '{parcel_id}' is not a parcel of the workspace "
                f"({len(self._parcel_ids)} parcels). Fix: check the parcel id (SBL)."
            )

    def _point(self, geom: Any) -> bytes | None:
        if geom is None or geom.is_empty:
            return None
        return gpkg.encode_point(geom.x, geom.y, self._srs_id)

    @staticmethod
    def _current(con: sqlite3.Connection, table: str, row_id: int) -> dict[str, Any] | None:
        key = gpkg.TABLES[table]["id"]
        cur = con.execute(
            f"SELECT * FROM {table} WHERE {key} = ? ORDER BY version DESC LIMIT 1", (row_id,)
        )
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row, strict=True))

    def _insert(
        self,
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
        row["created_by"] = self.user
        cols = list(row)
        con.execute(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [row[c] for c in cols],
        )
        key = gpkg.TABLES[table]["id"]
        con.execute(
            "INSERT INTO audit (role, table_name, row_id, version, action, old_values, "
            "new_values, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.role,
                table,
                int(row[key]),
                int(row.get("version", 1)),
                action,
                None if old is None else _json(old),
                _json(row),
                row["created_at"],
                self.user,
            ),
        )

    def _first_version(
        self, con: sqlite3.Connection, table: str, geom: Any, **values: Any
    ) -> dict[str, Any]:
        """The first version of a new row of ``table`` at ``geom``: the next id, version 1,
        the point, then ``values``."""
        key = gpkg.TABLES[table]["id"]
        return {key: self._next_id(con, table), "version": 1, "geom": self._point(geom), **values}

    @staticmethod
    def _next_id(con: sqlite3.Connection, table: str) -> int:
        key = gpkg.TABLES[table]["id"]
        return int(con.execute(f"SELECT COALESCE(MAX({key}), 0) + 1 FROM {table}").fetchone()[0])


class _RecordsReads(_RecordsBase):
    """The reads of :class:`Records`: tables, status, deadlines, summaries, files."""

    # ---------------------------------------------------------------- reads
    def _read(self, table: str, *, history: bool = False) -> pd.DataFrame:
        spec = gpkg.TABLES[table]
        key = spec["id"]
        if not self.path.exists():
            return self._empty(table)
        if history or not key:
            sql = f"SELECT * FROM {table} ORDER BY fid"
        else:
            sql = (
                f"SELECT t.* FROM {table} t JOIN (SELECT {key} AS k, MAX(version) AS v "
                f"FROM {table} GROUP BY {key}) m ON t.{key} = m.k AND t.version = m.v "
                f"ORDER BY t.{key}"
            )
        with gpkg.read_tx(self.path) as con:
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
            df = gpd.GeoDataFrame(df, geometry=gpd.GeoSeries(geoms, crs=self.outfalls.crs))
        return df

    def _empty(self, table: str) -> pd.DataFrame:
        spec = gpkg.TABLES[table]
        cols = (
            ([spec["id"], "version"] if spec["id"] else ["audit_id"])
            + [c for c, _ in spec["fixed"] if c != "data"]
            + [f.name for f in spec["fields"]]
            + ["created_at", "created_by"]
        )
        df = pd.DataFrame(columns=cols)
        if spec["geometry"]:
            return gpd.GeoDataFrame(df, geometry=gpd.GeoSeries([], crs=self.outfalls.crs))
        return df

    @staticmethod
    def _with_flow_type(df: pd.DataFrame) -> pd.DataFrame:
        from ..idde import flow_type_of

        types = [flow_type_of(r) for r in df.to_dict("records")]
        df["flow_type"] = [t[0] for t in types]
        df["flow_type_reason"] = [t[1] for t in types]
        return df

    def inspections(self, *, history: bool = False) -> gpd.GeoDataFrame:
        """Inspections (current versions; every version with ``history=True``).

        Columns: ``inspection_id, version, outfall_id, date``, the inspection fields,
        ``created_at, created_by``, ``flow_type`` and ``flow_type_reason`` (the
        flow-type chart of :func:`ms4map.idde.flow_type` on the tests), geometry.
        """
        return self._with_flow_type(self._read("inspections", history=history))

    def samples(self, case_id: int | None = None, *, history: bool = False) -> gpd.GeoDataFrame:
        """Track-down samples (current versions), optionally of one case, with flow type."""
        df = self._read("samples", history=history)
        if case_id is not None:
            df = df[df["case_id"] == int(case_id)].reset_index(drop=True)
        return self._with_flow_type(df)

    def cases(self, *, history: bool = False) -> gpd.GeoDataFrame:
        """Cases (current version = the latest step; every step with ``history=True``)."""
        return self._read("cases", history=history)

    def attachments(self) -> pd.DataFrame:
        """Attachments without their bytes (see :meth:`attachment_data`)."""
        return self._read("attachments")

    def attachment_data(self, attachment_id: int) -> bytes:
        """The bytes of one attachment."""
        with gpkg.read_tx(self.path) as con:
            row = con.execute(
                "SELECT data FROM attachments WHERE attachment_id = ?", (int(attachment_id),)
            ).fetchone()
        if row is None:
            raise DataError(f"No attachment {attachment_id}. Fix: see records.attachments().")
        return bytes(row[0])

    def audit(self) -> pd.DataFrame:
        """The audit trail: one row per change, oldest first.

        Columns: ``audit_id, created_at`` (when, UTC), ``created_by`` (who), ``role``,
        ``table_name``, ``row_id``, ``version``, ``action``, ``old_values`` and
        ``new_values`` (JSON text).
        """
        if not self.path.exists():
            return self._empty("audit")
        with gpkg.read_tx(self.path) as con:
            df = pd.read_sql_query("SELECT * FROM audit ORDER BY fid", con)
        return df.rename(columns={"fid": "audit_id"})

    def outfall_status(self) -> gpd.GeoDataFrame:
        """Every outfall's status, derived from its latest inspection and its cases.

        See :func:`ms4map.records.summary.outfall_status` for the rules; the layer's
        own ``status`` column is kept as ``layer_status`` for comparison.
        """
        st = outfall_status(self.outfalls, self.inspections(), self.cases())
        out = self.outfalls[["outfall_id", "geometry"]].copy()
        out["outfall_id"] = out["outfall_id"].astype(str)
        out = out.merge(st, on="outfall_id", how="left")
        if "status" in self.outfalls:
            out["layer_status"] = self.outfalls["status"].to_numpy()
        return gpd.GeoDataFrame(out, geometry="geometry", crs=self.outfalls.crs)

    def deadlines(
        self, *, today: dt.date | str | None = None, case_id: int | None = None
    ) -> pd.DataFrame:
        """Every deadline the cases have reached, ``due``/``overdue``/``met``/... on ``today``."""
        day = as_date(today, "today", allow_future=True) if today is not None else dt.date.today()
        cases = self.cases()
        if case_id is not None:
            cases = cases[cases["case_id"] == int(case_id)]
        rows: list[dict[str, Any]] = []
        kept = _kept_in(self.path)
        for r in cases.drop(columns="geometry").to_dict("records"):
            prof = case_profile(r.get("profile"), self.profile, kept)
            if prof is None:
                rows.append(_unknown_deadlines(r))
            else:
                rows += case_deadlines(r, prof, today=day)
        cols = ["case_id", "outfall_id", "deadline", "due", "status", "done_on", "rule", "reason"]
        return pd.DataFrame(rows, columns=cols)

    def profile_of(self, case: Mapping[str, Any]) -> Profile | None:
        """The profile a case (a row of :meth:`cases`) is judged by; ``None`` when it is
        not at hand (:mod:`ms4map.records.case_profile`)."""
        return case_profile(case.get("profile"), self.profile, _kept_in(self.path))

    def _year(self, year: int | None) -> int:
        """``year``, or the reporting year today falls in."""
        return reporting_year(dt.date.today(), self.year_start) if year is None else int(year)

    def _year_tables(self) -> tuple[Any, ...]:
        """Outfalls, inspections, samples and cases: what the year's figures count."""
        return self.outfalls, self.inspections(), self.samples(), self.cases()

    def summary(self, year: int | None = None) -> dict[str, Any]:
        """The figures of a reporting year (default: the one today falls in).

        See :func:`ms4map.records.summary.summary`; the year starts on the profile's
        ``[records] reporting_year_start`` (default January 1).
        """
        return summary(*self._year_tables(), self._year(year), start=self.year_start)

    def annual_report(self, year: int | None = None) -> pd.DataFrame:
        """One row of :meth:`summary` figures per reporting year up to ``year``."""
        return annual_report(
            *self._year_tables(), last_year=self._year(year), start=self.year_start
        )

    def next_sample(
        self, case_id: int, result: PipelineResult | None = None, *, weight: str = "area"
    ) -> dict[str, Any]:
        """The next structure to sample for a case, from the samples already taken.

        Walks the bisection plan of :func:`ms4map.idde.sampling_plan` along the
        recorded results: the first planned structure, then on each sample taken at
        the planned structure the branch its ``result`` (``flow``/``clean``) selects.

        Parameters
        ----------
        case_id : int
        result : PipelineResult, optional
            From :func:`ms4map.pipeline.run`; computed (cached) from the workspace
            when not given (the only method here that runs the pipeline).
        weight : {"area", "candidates", "structures"}

        Returns
        -------
        dict
            ``case_id, outfall_id, struct_id`` (None when nothing is left to split),
            ``kind``, ``sample`` (depth in the plan), ``followed`` (the samples used,
            as ``struct_id: result``), ``unused`` (samples at structures off the plan),
            ``reason``.
        """
        from .. import idde

        cases = self.cases()
        hit = cases[cases["case_id"] == int(case_id)]
        if not len(hit):
            raise DataError(f"Field 'case_id' = {case_id}: no such case. Fix: see records.cases().")
        oid = str(hit["outfall_id"].iloc[0])
        samples = self.samples(case_id).sort_values(["date", "sample_id"])
        taken: dict[str, str] = {}
        for s in samples.to_dict("records"):
            taken[str(s["struct_id"])] = str(s["result"])
        if result is None:
            from .. import pipeline
            from ..io import open_workspace

            result = pipeline.run(open_workspace(self.workspace, **self._ws_kwargs()))
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
        path = "; ".join(out["followed"]) or "no samples yet"
        if out["struct_id"] is not None:
            row = plan[plan["struct_id"] == out["struct_id"]].iloc[0]
            out["reason"] = f"After {path}: {row['reason']}"
        else:
            out["reason"] = (
                f"After {path}: no structure left whose sample would split what is still "
                "suspect; the source is isolated between the samples taken."
            )
        if out["unused"]:
            out["reason"] += f" Samples off the plan, not used: {', '.join(out['unused'])}."
        return out

    def _ws_kwargs(self) -> dict[str, Any]:
        o = self._options
        return {"layers": o.get("layers"), "field_map": o.get("field_map"), "crs": o.get("crs")}

    # ---------------------------------------------------------------- files
    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        with gpkg.read_tx(self.path) as con:
            return "; ".join(str(r[0]) for r in con.execute("PRAGMA integrity_check"))

    def backup(self, dest: str | Path) -> Path:
        """A consistent copy of the records file made with SQLite's backup API.

        Safe while others write (the copy is one committed state).  ``dest`` must not
        be the records file or an input file, and must not exist: a backup never
        replaces a file (another store, an earlier backup or any GeoPackage).
        """
        from ..io import check_output_path

        out = check_output_path(
            dest,
            protected=[*self.inputs, self.path],
            suffixes=(".gpkg",),
            option="--backup",
            ms4map_gpkg=False,
        )
        if out.exists():
            raise UsageError(
                f"--backup '{out}' exists: a backup never replaces a file. Fix: give a new "
                "file name (e.g. with the date), or move that file away first."
            )
        src = gpkg.connect(self.path)
        dst = sqlite3.connect(str(out))
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
        return out

    def export(self, dest: str | Path, *, table: str = "inspections") -> Path:
        """Write the records to a GeoPackage (every table) or one table to CSV.

        Parameters
        ----------
        dest : path
            ``.gpkg``: layers ``inspections``, ``samples``, ``cases``, ``outfall_status``,
            ``deadlines``, ``attachments`` (without bytes), ``audit`` plus provenance;
            ``.csv``: the table named by ``table``.
        table : {"inspections", "samples", "cases", "outfall_status", "deadlines", "audit", "attachments"}
        """
        from ..core.version import __version__
        from ..io import check_output_path, write_outputs, write_text_output

        protected = [*self.inputs, self.path]
        out = check_output_path(
            dest, protected=protected, suffixes=(".gpkg", ".csv"), option="--export"
        )
        getters = {
            "inspections": self.inspections,
            "samples": self.samples,
            "cases": self.cases,
            "outfall_status": self.outfall_status,
            "deadlines": self.deadlines,
            "attachments": self.attachments,
            "audit": self.audit,
        }
        if out.suffix.lower() == ".csv":
            if table not in getters:
                raise UsageError(f"--table {table!r}: select from {list(getters)}.")
            df = getters[table]()
            if isinstance(df, gpd.GeoDataFrame):
                df = pd.DataFrame(df.drop(columns=df.geometry.name))
            return write_text_output(
                out, df.to_csv(index=False), protected=protected, option="--export"
            )
        layers = {name: get() for name, get in getters.items()}
        prov = {
            "tool": f"ms4map {__version__}",
            "created": gpkg.now_utc(),
            "records": str(self.path),
            "workspace": str(self.workspace),
            "profile": self.profile.name,
            "exported_by": self.user,
            "inputs": {str(p): "" for p in protected},
        }
        return write_outputs(out, layers, provenance=prov, inputs=protected, option="--export")


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


def _attach_in(
    records: Any, con: Any, table: str, row_id: int, ph: Any, *, caption: str | None = None
) -> int:
    """Insert one checked photo of row ``row_id`` in the open transaction ``con``."""
    new_id = records._next_id(con, "attachments")
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
    records._insert(con, "attachments", row, action="attach")
    return new_id


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


def _profile_of(records: Any, con: Any, case: Mapping[str, Any]) -> Profile | None:
    """The profile ``case`` is judged by (:mod:`~ms4map.records.case_profile`); a copy of
    the session's profile is kept when it is the case's."""
    prof = case_profile(case.get("profile"), records.profile, kept_profiles(con))
    if prof is records.profile:
        keep_profile(con, prof)
    return prof


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


def _check_case_refs(
    records: Any, con: Any, row: Mapping[str, Any], old: Mapping[str, Any]
) -> None:
    """What a case's first recording checked, for the fields a correction changes: the
    source parcel is a parcel, the inspection exists, no sample before the opening."""
    if row.get("source_parcel_id") not in (None, "", old.get("source_parcel_id")):
        records._check_parcel(str(row["source_parcel_id"]))
    ins = row.get("inspection_id")
    if ins not in (None, "", old.get("inspection_id")) and (
        records._current(con, "inspections", int(ins)) is None
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
        case = records._current(con, "cases", int(row["case_id"]))
        if case is not None and str(row["date"]) < str(case["opened_on"]):
            raise DataError(
                f"Sample field 'date' = {row['date']} is before case {row['case_id']} "
                f"opened ({case['opened_on']}). Fix: check the date."
            )


class Records(_RecordsReads):
    """The IDDE records of one workspace (use :func:`open_records`).

    Attributes
    ----------
    path : pathlib.Path
        The records GeoPackage.
    workspace : pathlib.Path
        The workspace it belongs to (only its outfalls layer is read on opening).
    user, role : str
        Who acts, as ``smo`` (edits) or ``viewer`` (reads only).
    profile : Profile
        The municipality profile (deadlines, reporting-year start).
    outfalls : GeoDataFrame
        ``outfall_id`` and point of every outfall of the workspace, in the file's CRS.
    """

    # ---------------------------------------------------------------- writes
    def add_inspection(
        self, outfall_id: str, date: dt.date | str, *, photos: Any = (), **fields: Any
    ) -> int:
        """Record one outfall inspection (ORI); returns its ``inspection_id``.

        Parameters
        ----------
        outfall_id : str
            An outfall of the workspace.
        date : date or "YYYY-MM-DD"
            Not in the future.
        **fields
            Exactly the fields of :data:`~ms4map.records.fields.INSPECTION_FIELDS`
            (``inspector``, ``time``, ``hours_since_rain``, ``flow_present``, ...).
        photos : paths or bytes, optional
            Photos attached in the same transaction: the inspection and its photos are
            written together or not at all.

        Raises
        ------
        DataError
            Unknown outfall, future date, a value outside its rule, an unknown keyword;
            nothing is written.
        PermissionError
            A viewer.
        """
        self._need_edit("adding an inspection")
        oid, geom = self._check_outfall(outfall_id)
        day = as_date(date, "inspection field 'date'").isoformat()
        values = check_fields(fields, INSPECTION_FIELDS, where="inspection")
        if not values.get("inspector"):  # not given, or blank: who records it
            values["inspector"] = self.user
        checked = _checked_photos(photos)
        with gpkg.write_tx(self.path) as con:
            row = self._first_version(con, "inspections", geom, outfall_id=oid, date=day, **values)
            self._insert(con, "inspections", row, action="insert")
            for ph in checked:
                _attach_in(self, con, "inspections", row["inspection_id"], ph)
        return row["inspection_id"]

    def open_case(
        self,
        outfall_id: str,
        date: dt.date | str,
        *,
        origin: str = "complaint",
        description: str | None = None,
        inspection_id: int | None = None,
        notes: str | None = None,
        photos: Any = (),
        again: bool = False,
    ) -> int:
        """Open a case at an outfall from a complaint or a finding; returns ``case_id``.

        ``photos`` are attached in the same transaction (all or nothing).  A case open
        at the same outfall, opened the same day from the same origin and description,
        is refused as the same case recorded twice unless ``again`` (a second one).

        Raises
        ------
        DataError
            Unknown outfall or inspection, bad origin, future date.
        PermissionError
            A viewer.
        """
        self._need_edit("opening a case")
        oid, geom = self._check_outfall(outfall_id)
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
        with gpkg.write_tx(self.path) as con:
            if inspection_id is not None:
                ins = self._current(con, "inspections", int(values["inspection_id"]))
                if ins is None:
                    raise DataError(
                        f"Case field 'inspection_id' = {inspection_id}: no such inspection. "
                        "Fix: give the id add_inspection returned (see records.inspections())."
                    )
            if not again:
                _refuse_repeated_case(con, oid, day.isoformat(), values)
            row = self._first_version(
                con,
                "cases",
                geom,
                outfall_id=oid,
                status="opened",
                step="opened",
                step_on=day.isoformat(),
                profile=self.profile.name,
                opened_on=day.isoformat(),
                **values,
            )
            self._insert(con, "cases", row, action="open")
            keep_profile(con, self.profile)
            for ph in checked:
                _attach_in(self, con, "cases", row["case_id"], ph)
        return row["case_id"]

    def advance_case(
        self,
        case_id: int,
        step: str,
        date: dt.date | str,
        *,
        parcel_id: str | None = None,
        deadline: dt.date | str | None = None,
        outcome: str | None = None,
        reason: str | None = None,
        notes: str | None = None,
        photos: Any = (),
    ) -> int:
        """Record the next step of a case (a new version of its row); returns the version.

        ``photos`` are attached in the same transaction (all or nothing).

        Parameters
        ----------
        case_id : int
        step : str
            ``investigation``, ``source_found`` (needs ``parcel_id``), ``notice_sent``
            (``deadline`` = the remedy deadline of the notice; default: the profile's
            remedy period when it states one, Kingsbury 48 hours), ``appeal_filed``,
            ``appeal_decided`` (needs ``outcome``: ``upheld`` or ``overturned``),
            ``corrected``, ``eliminated``, ``closed`` (``reason`` optional).
        date : date or "YYYY-MM-DD"

        Raises
        ------
        DataError
            Unknown case or step, a step out of order or dated before the step it
            follows, a missing ``parcel_id``/``outcome``, an unknown parcel.
        PermissionError
            A viewer.
        """
        self._need_edit("advancing a case")
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
            self._check_parcel(str(parcel_id))
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
        with gpkg.write_tx(self.path) as con:
            old = self._current(con, "cases", int(case_id))
            if old is None:
                raise DataError(
                    f"Field 'case_id' = {case_id}: no such case. Fix: see records.cases()."
                )
            check_step(old, step, day)
            prof = _profile_of(self, con, old)
            if step == "notice_sent" and deadline is None:  # the law's own period, if any
                values["remedy_deadline"] = _law_remedy(prof, old, day)
            row = {**old, **values, "version": int(old["version"]) + 1}
            # the whole row as a correction is checked; step/status = its last dated step
            # (a step recorded late, dated before one already there, does not become it)
            row["step"], row["step_on"] = check_case_row(row)
            row["status"] = row["step"]
            self._insert(con, "cases", row, action=step, old=old)
            for ph in checked:
                _attach_in(self, con, "cases", int(case_id), ph)
        return int(row["version"])

    def add_sample(
        self,
        case_id: int,
        struct_id: str,
        date: dt.date | str,
        *,
        photos: Any = (),
        again: bool = False,
        **fields: Any,
    ) -> int:
        """Record a track-down sample at a structure for a case; returns ``sample_id``.

        A repeat of a sample the case has (every field equal) is refused unless ``again``.

        ``result`` (``flow`` = the flow or pollutant was found there, ``clean``)
        defaults to ``flow`` when ``flow_present`` is true and ``clean`` when it is
        false; one of the two must be given.  The other fields are the field tests of
        an inspection (:data:`~ms4map.records.fields.SAMPLE_FIELDS`).

        Raises
        ------
        DataError
            Unknown or closed case, unknown structure, a bad value, an unknown keyword,
            no ``result`` and no ``flow_present``.
        PermissionError
            A viewer.
        """
        self._need_edit("adding a sample")
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
            values["sampler"] = self.user
        sid = str(struct_id)
        geom = self._structure_point(sid)
        checked = _checked_photos(photos)
        with gpkg.write_tx(self.path) as con:
            case = self._current(con, "cases", int(case_id))
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
            row = self._first_version(
                con,
                "samples",
                geom,
                case_id=int(case_id),
                struct_id=sid,
                date=day.isoformat(),
                **values,
            )
            self._insert(con, "samples", row, action="insert")
            for ph in checked:
                _attach_in(self, con, "samples", row["sample_id"], ph)
        return row["sample_id"]

    def correct(
        self, table: str, row_id: int, *, expected_version: int | None = None, **fields: Any
    ) -> int:
        """Correct a row: a new version with the given fields changed; returns the version.

        The old version stays in the file (and in the audit trail, as ``old_values``).
        ``date`` may be corrected for inspections and samples; cases take the fields of
        :data:`~ms4map.records.fields.CASE_FIELDS`.  ``expected_version``: the version
        the change was made on (as read); when someone else has corrected the row since,
        the correction is refused instead of silently replacing theirs.

        Raises
        ------
        DataError
            Unknown table, row or field, a bad value, or the row changed since
            ``expected_version``.
        PermissionError
            A viewer.
        """
        self._need_edit("correcting a record")
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
        with gpkg.write_tx(self.path) as con:
            old = self._current(con, table, int(row_id))
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
            _check_corrected(self, con, table, row, old=old, given=values)
            self._insert(con, table, row, action="correct", old=old)
        return int(row["version"])

    def attach(
        self,
        table: str,
        row_id: int,
        photo: str | Path | bytes,
        *,
        filename: str | None = None,
        caption: str | None = None,
        max_bytes: int = MAX_PHOTO_BYTES,
    ) -> int:
        """Attach a photo (JPEG or PNG, checked by content, size-limited) to a row.

        Parameters
        ----------
        table : {"inspections", "samples", "cases"}
        row_id : int
        photo : path or bytes

        Returns
        -------
        int
            The ``attachment_id``.

        Raises
        ------
        DataError
            Unknown table or row; a photo too large, not JPEG/PNG by content, or corrupt.
        PermissionError
            A viewer.
        """
        self._need_edit("attaching a photo")
        if table not in _SPECS:
            raise DataError(f"Photos attach to {list(_SPECS)}, not {table!r}.")
        ph = check_photo(photo, filename=filename, max_bytes=max_bytes)
        with gpkg.write_tx(self.path) as con:
            if self._current(con, table, int(row_id)) is None:
                raise DataError(
                    f"No row {row_id} in {table} to attach the photo to. Fix: check the id."
                )
            return _attach_in(self, con, table, int(row_id), ph, caption=caption)


def _json(row: Mapping[str, Any]) -> str:
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


# ======================================================================================
# Opening
# ======================================================================================
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
        Who acts (written as ``created_by`` and in the audit trail).
    role : {"smo", "viewer"}, optional
        Default ``smo``, unless the users file (``users_file`` or the
        ``MS4MAP_USERS_FILE`` environment variable) lists ``user`` as a viewer.
    records : path, optional
        Another records file for this workspace (never one of the input files).
    profile : str, Path or Profile
        Municipality profile for deadlines and the reporting year.
    layers, field_map, crs
        As for :func:`ms4map.io.open_workspace`; only the outfalls layer is read.
    users_file : path, optional
        TOML with ``[users.NAME] role = "viewer"``.
    year_start : "MM-DD", optional
        First day of the reporting year (default: the profile's
        ``[records] reporting_year_start``, else ``"01-01"``).

    Returns
    -------
    Records

    Raises
    ------
    UsageError
        Empty user, unknown role, a records path that is an input file.
    InputOpenError
        The workspace cannot be read; a viewer asks for a records file that does not
        exist yet.
    DataError
        The workspace has no outfalls layer.
    """
    from ..io import check_output_path

    if not isinstance(user, str) or not user.strip():
        raise UsageError("open_records needs user= (who records the changes), e.g. user='jsmith'.")
    user = user.strip()
    if role is not None and role not in ROLES:
        raise UsageError(f"role = {role!r}: select from {list(ROLES)}.")
    listed = _users_role(user, users_file)
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
    ys = (
        year_start
        if year_start is not None
        else (prof.raw.get("records") or {}).get("reporting_year_start")
    )
    start = parse_year_start(ys)
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
            try:
                with gpkg.write_tx(rec) as con:
                    gpkg.ensure_schema(con, srs=_srs_of(outfalls.crs), bounds=b, meta=meta)
            except (sqlite3.OperationalError, PermissionError) as exc:
                raise OutputError(
                    f"The records file '{rec}' cannot be created ({exc}): its folder is "
                    "read-only or not yours. Fix: keep the records elsewhere with --records "
                    "FILE.records.gpkg (records=...), in a folder you can write."
                ) from None
        if not _has_styles(rec):  # first use, or a first use cut short before its styles
            # QGIS draws the inspections, samples and cases styled (docs/exports.md)
            from ..io.styles import write_layer_styles

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
    )
