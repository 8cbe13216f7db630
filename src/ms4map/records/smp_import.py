"""Bulk writes of the SMP inventory: an import from a GeoPackage, shapefile or GeoJSON, and the drainage areas computed from the pipeline's catchments.

:func:`import_smps` reads one layer, maps its columns to the SMP fields
(:data:`~ms4map.records.smp_fields.SMP_FIELDS`, ``name`` and ``kind``), checks every
row and writes them in **one** transaction: a file with one bad row writes nothing,
and the message names the layer, the feature and the fix of every bad row.  A practice
is known by its name: importing the same file again adds nothing (a row equal to the
practice recorded is left as it is; a row that differs is recorded as a new version).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError, InputOpenError
from . import gpkg
from .reads import network_result
from .smp import (
    _check_project,
    _correct_in,
    _has_table,
    _insert_smp,
    _new_smp_row,
    smps,
    town_extent,
)
from .smp_drainage import drainage_area
from .smp_fields import SMP_FIELDS
from .writes import _current, need_edit

__all__ = ["IMPORT_FIELDS", "compute_drainage", "import_smps"]

#: The SMP fields a file's columns map to.
IMPORT_FIELDS = ("name", "kind", *(f.name for f in SMP_FIELDS))
#: At most this many bad rows are listed in the refusal.
MAX_LISTED = 20


def _read_layer(source: str | Path, layer: str | None, crs: Any) -> tuple[Any, str]:
    import geopandas as gpd
    import pyogrio

    p = Path(source).expanduser()
    if not p.exists():
        raise InputOpenError(f"SMP file '{p}' does not exist. Fix: check the path.")
    try:
        names = [str(n) for n, _g in pyogrio.list_layers(p)]
    except Exception as exc:  # noqa: BLE001 - any reader error: not a vector file
        raise InputOpenError(
            f"'{p.name}' cannot be read as a vector file ({exc}). Fix: give a GeoPackage, "
            "a shapefile or a GeoJSON file."
        ) from None
    if layer is None:
        if len(names) > 1:
            raise DataError(
                f"'{p.name}' has {len(names)} layers ({', '.join(names)}). Fix: name the one "
                "with the SMPs (--layer NAME)."
            )
        layer = names[0]
    elif layer not in names:
        raise DataError(f"'{p.name}' has no layer '{layer}'. Fix: select from {', '.join(names)}.")
    gdf = gpd.read_file(p, layer=layer)
    if gdf.crs is None:
        raise DataError(
            f"Layer '{layer}' of '{p.name}' has no CRS: its coordinates cannot be placed. "
            "Fix: set the CRS of the file (QGIS: Layer Properties > Source) and import again."
        )
    if crs is not None and not gdf.crs.equals(crs):
        gdf = gdf.to_crs(crs)
    return gdf, layer


def _mapping(columns: list[str], given: Mapping[str, str] | None) -> dict[str, str]:
    """SMP field -> the file's column: the given mapping, then same-named columns (any
    case)."""
    given = dict(given or {})
    bad = sorted(set(given) - set(IMPORT_FIELDS))
    if bad:
        raise DataError(
            f"Column mapping names unknown SMP field(s) {bad}. Fix: map to {list(IMPORT_FIELDS)} "
            "(--map FIELD=COLUMN)."
        )
    missing = sorted(c for c in given.values() if c not in columns)
    if missing:
        raise DataError(
            f"Column mapping names column(s) {missing} the layer does not have. Fix: select "
            f"from {columns}."
        )
    lower = {c.lower(): c for c in columns if c != "geometry"}
    out = dict(given)
    for f in IMPORT_FIELDS:
        if f not in out and f in lower:
            out[f] = lower[f]
    for need in ("name", "kind"):
        if need not in out:
            raise DataError(
                f"The layer has no column for the SMP's '{need}' ({columns}). Fix: map one "
                f"(--map {need}=COLUMN)."
            )
    return out


def _value(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, str) and not v.strip():
        return None
    return v


def _same(stored: Any, given: Any) -> bool:
    if stored is None or given is None:
        return stored is None and given is None
    if isinstance(given, bool):
        return bool(stored) == given
    if isinstance(given, int | float):
        try:
            return math.isclose(float(stored), float(given), rel_tol=1e-9, abs_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return str(stored) == str(given)


def import_smps(
    records: Any,
    source: str | Path,
    /,
    *,
    layer: str | None = None,
    columns: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Import the practices of one layer of a file, in one transaction.

    Parameters
    ----------
    records : Records
    source : path
        GeoPackage, shapefile or GeoJSON with points or polygons (any CRS: reprojected
        to the records').
    layer : str, optional
        The layer (needed when the file has several).
    columns : mapping, optional
        SMP field -> the file's column (``{"name": "SMP_NAME", "kind": "TYPE"}``);
        fields not mapped are read from columns of their own name (any case).

    Returns
    -------
    dict
        ``layer``, ``rows``, ``added``, ``updated`` (a new version: the file differs
        from the practice recorded), ``unchanged`` (ids), ``ignored_columns``.

    Raises
    ------
    PermissionError
        A viewer.
    DataError
        Any bad row (all listed: layer, feature, field, fix); nothing is written.
    """
    need_edit(records, "importing SMPs")
    gdf, name = _read_layer(source, layer, records.outfalls.crs)
    cols = [str(c) for c in gdf.columns if c != gdf.geometry.name]
    mapping = _mapping(cols, columns)
    extent = town_extent(records)
    checked: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(gdf.to_dict("records"), start=1):
        values = {f: _value(rec.get(c)) for f, c in mapping.items()}
        label = f"layer '{name}', feature {i}" + (
            f" ({values['name']})" if values.get("name") is not None else ""
        )
        try:
            fields = {k: v for k, v in values.items() if k not in ("name", "kind")}
            row = _new_smp_row(
                records,
                values.get("name"),
                values.get("kind"),
                rec.get(gdf.geometry.name),
                {k: v for k, v in fields.items() if v is not None},
                extent=extent,
            )
        except DataError as exc:
            problems.append(f"{label}: {exc}")
            continue
        key = row["name"].lower()
        if key in seen:
            problems.append(
                f"{label}: the name {row['name']!r} is also feature {seen[key]}'s. Fix: give "
                "each practice its own name."
            )
            continue
        seen[key] = i
        checked.append((i, row))
    if problems:
        shown = problems[:MAX_LISTED]
        more = len(problems) - len(shown)
        raise DataError(
            f"{len(problems)} of {len(gdf)} rows of '{Path(source).name}' are refused; "
            "nothing was imported:\n- "
            + "\n- ".join(shown)
            + (f"\n- ... and {more} more" if more else "")
        )
    added: list[int] = []
    updated: list[int] = []
    unchanged: list[int] = []
    with gpkg.write_tx(records.path) as con:
        current = _by_name(con)
        for i, row in checked:
            try:
                old_id = current.get(row["name"].lower())
                if old_id is None:
                    added.append(_insert_smp(records, con, row))
                    continue
                old = _current(con, "smps", old_id) or {}
                geom = gpkg.encode_geometry(row.pop("_geom"), records._srs_id)
                new = {k: v for k, v in row.items() if not _same(old.get(k), v)}
                old_geom = gpkg.decode_point(old.get("geom"))
                if old_geom is None or not old_geom.equals_exact(gpkg.decode_point(geom), 1e-6):
                    new["geom"] = geom
                if not new:
                    unchanged.append(old_id)
                    continue
                _check_project(con, new.get("project_id"), "SMP")
                _correct_in(records, con, old_id, new, action="import")
                updated.append(old_id)
            except DataError as exc:
                raise DataError(
                    f"layer '{name}', feature {i} ({row['name']}): {exc} Nothing was imported."
                ) from None
    return {
        "layer": name,
        "rows": len(gdf),
        "added": added,
        "updated": updated,
        "unchanged": unchanged,
        "ignored_columns": sorted(set(cols) - set(mapping.values())),
    }


def _by_name(con: Any) -> dict[str, int]:
    """Current SMP name (lower case) -> its id."""
    if not _has_table(con, "smps"):
        return {}
    rows = con.execute(
        "SELECT t.smp_id, t.name FROM smps t JOIN (SELECT smp_id AS k, MAX(version) AS v "
        "FROM smps GROUP BY smp_id) m ON t.smp_id = m.k AND t.version = m.v"
    ).fetchall()
    return {str(n).strip().lower(): int(i) for i, n in rows}


def compute_drainage(
    records: Any,
    ids: list[int] | None = None,
    /,
    *,
    result: Any = None,
    overwrite: bool = False,
) -> dict[int, tuple[float, str]]:
    """Compute and record the drainage area of practices (a new version of each, action
    ``drainage``) from the workspace's pipeline result (:mod:`~ms4map.records.smp_drainage`).

    Parameters
    ----------
    ids : list of int, optional
        The practices (default: every one without an area).
    result : PipelineResult, optional
        Of :func:`ms4map.pipeline.run` (computed, cached, when not given).
    overwrite : bool
        Also recompute an area already recorded (a given one included).

    Returns
    -------
    dict
        ``smp_id -> (area_m2, method)`` of the practices written.
    """
    need_edit(records, "computing SMP drainage areas")
    inv = smps(records)
    if ids is not None:
        unknown = sorted(set(int(i) for i in ids) - set(inv["smp_id"].astype(int)))
        if unknown:
            raise DataError(f"No SMP {unknown}. Fix: see ms4map smp list.")
        inv = inv[inv["smp_id"].astype(int).isin([int(i) for i in ids])]
    if not overwrite:
        inv = inv[inv["drainage_area_m2"].isna()]
    if not len(inv):
        return {}
    res = result if result is not None else network_result(records)
    found: dict[int, tuple[float, str]] = {}
    ws_crs = getattr(getattr(res, "overland", None), "crs", None)
    for r in inv.to_dict("records"):
        geom = r["geometry"]
        if ws_crs is not None and records.outfalls.crs is not None:
            import geopandas as gpd

            geom = gpd.GeoSeries([geom], crs=records.outfalls.crs).to_crs(ws_crs).iloc[0]
        found[int(r["smp_id"])] = drainage_area(res, geom, discharges_to=r.get("discharges_to"))
    with gpkg.write_tx(records.path) as con:
        for sid, (area, method) in found.items():
            values = {"drainage_area_m2": round(float(area), 3), "drainage_method": method}
            _correct_in(records, con, sid, values, action="drainage")
    return found
