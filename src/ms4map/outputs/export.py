"""Results for QGIS and ArcGIS: copy the layers of an ms4map GeoPackage to another format.

``export(src, dest, layers)`` writes, by the suffix of ``dest``:

``.gpkg``
    A GeoPackage with the chosen layers, their provenance and their QGIS styles
    (the source's ``layer_styles`` rows, else ms4map's own, :mod:`ms4map.io.styles`).
``.gdb``
    A File Geodatabase (GDAL's OpenFileGDB driver), for ArcGIS.  Unstyled.  64-bit
    integer columns are written as 32-bit integers when every value fits (older
    ArcGIS, before Pro 3.2, cannot read 64-bit integers), else as doubles (exact up to
    2**53), else as text; each change is reported.
``.zip``
    One shapefile per spatial layer (with a ``.qml`` and ``.sld`` style beside it, the
    QGIS style of the layer), each table without geometry as CSV, ``provenance.csv``,
    and ``fields.csv`` mapping each shapefile's 10-character field names to the full
    names, with what was cut (text over 254 bytes) or changed (date-times as text).
``.geojson``
    One layer (``layers`` must name it when ``src`` has several), in WGS 84 (RFC 7946).
``.inp``
    An EPA SWMM model of the traced network and its catchments
    (:func:`ms4map.outputs.swmm_out.export_swmm`; ``layers`` does not apply).

The source is only read.  An output path that is an input, an unknown layer or a
suffix not listed is refused before anything is written.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import sqlite3
import tempfile
import uuid
import warnings
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd
import pandas as pd
import pyogrio

from ..core.errors import DataError, InputOpenError, UsageError
from ..core.tables import csv_text
from ..core.version import __version__
from ..io import check_output_path, file_sha256, write_outputs, write_text_output
from ..io.styles import (
    LAYER_STYLES,
    LAYER_STYLES_COLUMNS,
    ensure_styles_table,
    qml,
    read_layer_styles,
    sld,
    style_for,
)
from ..io.write import provenance_rows, recorded_inputs, replace_durably, writing
from .export_status import records_status, status_from_records, with_records_status
from .swmm_out import export_swmm

__all__ = ["FORMATS", "META_TABLES", "ExportResult", "export", "export_frames", "source_layers"]

#: Suffix -> what it is.
FORMATS = {
    ".gpkg": "GeoPackage (styled)",
    ".gdb": "File Geodatabase (unstyled)",
    ".zip": "zipped shapefiles + fields.csv",
    ".geojson": "GeoJSON, one layer, WGS 84",
    ".inp": "EPA SWMM model of the traced network and its inlet catchments",
}
#: Tables of an ms4map GeoPackage that describe the layers rather than being layers.
META_TABLES = ("provenance", "layer_styles")
TEXT_BYTES = 254  # longest DBF text field
_INT32 = (-(2**31), 2**31 - 1)
_GEOM_OF_KIND = {"point": "Point", "line": "LineString", "polygon": "Polygon"}


@dataclass
class ExportResult:
    """What :func:`export` wrote: the path, the format, rows per layer and notes."""

    path: Path
    format: str
    layers: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def source_layers(src: str | Path) -> dict[str, str | None]:
    """The data layers of a GeoPackage: name -> geometry type (None for a table).

    The ``provenance`` and ``layer_styles`` tables are not listed (they travel with
    the layers they describe)."""
    path = Path(src).expanduser()
    if not path.is_file():
        raise InputOpenError(f"Cannot open '{path}': no such file. Fix: check the path.")
    if path.suffix.lower() != ".gpkg":
        raise InputOpenError(
            f"'{path.name}' is not a GeoPackage; ms4map export reads the .gpkg files ms4map "
            "writes. Fix: give a .gpkg file."
        )
    try:
        listed = pyogrio.list_layers(path)
    except Exception as exc:  # noqa: BLE001 - GDAL's many errors: the file cannot be read
        raise InputOpenError(f"Cannot read '{path.name}' as a GeoPackage: {exc}") from exc
    return {str(n): (None if g is None else str(g)) for n, g in listed if str(n) not in META_TABLES}


def _choose(available: dict[str, str | None], layers: Sequence[str] | None, src: Path) -> list:
    if not layers:
        return list(available)
    unknown = [n for n in layers if n not in available]
    if unknown:
        raise InputOpenError(
            f"No layer {', '.join(repr(n) for n in unknown)} in '{src.name}'. "
            f"Its layers: {', '.join(available) or 'none'}. Fix: --layer one of these."
        )
    return list(dict.fromkeys(layers))


def _check_dest(dest: str | Path, protected: list[Path]) -> Path:

    out = Path(dest).expanduser()
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        hint = " (a shapefile goes in a .zip)" if suffix == ".shp" else ""
        raise UsageError(
            f"--to '{out.name}': ms4map export writes {', '.join(FORMATS)}{hint}, not "
            f"'{suffix or 'no suffix'}'. Fix: end the file name in one of these."
        )
    if suffix == ".gdb" and out.is_dir():  # an existing geodatabase is replaced
        res = out.resolve()
        if any(res == p.resolve() for p in protected):
            raise UsageError(
                f"Refusing to write into input file '{out.name}' (--to); ms4map never "
                "modifies your data. Fix: choose another output path."
            )
        if not (res / "gdb").exists() and not any(res.glob("*.gdbtable")):
            raise UsageError(
                f"--to '{out}' is a folder that is not a File Geodatabase; refusing to "
                "replace it. Fix: choose another name."
            )
        _check_ours(res)
        return res
    checked = check_output_path(out, protected=protected, suffixes=tuple(FORMATS), option="--to")
    _check_ours(checked)
    return checked


def _geojson_provenance(path: Path) -> Path:
    """The provenance file beside a GeoJSON export (``x.geojson.provenance.json``)."""
    return path.with_name(path.name + ".provenance.json")


#: The provenance sidecar of an output while the output is being written (replaced by
#: the output's record, ``"complete": true``, once it is).
WRITING = {
    "complete": False,
    "note": "ms4map was writing this output and did not finish: it is incomplete. Run the "
    "command again.",
}


def finished_sidecar(record: dict[str, Any], out: Path) -> str:
    """The JSON of an output's provenance sidecar once the output is written: ``record``
    with the output's SHA-256 and ``"complete": true`` (replacing :data:`WRITING`)."""

    done = {**record, "output_sha256": file_sha256(out), "complete": True}
    return json.dumps(done, indent=1, default=str) + "\n"


def _check_ours(out: Path) -> None:
    """Refuse to replace an existing ``.gdb``, ``.zip`` or ``.geojson`` that ms4map did
    not write: it would be lost (a geodatabase of the user's, an archive, a GeoJSON).
    ms4map's own exports carry their provenance: the geodatabase's ``provenance``
    table, the zip's ``provenance.csv``, the GeoJSON's ``.provenance.json`` beside it.
    (A ``.gpkg`` is checked by :func:`ms4map.io.check_output_path`.)"""
    if not out.exists():
        return
    suffix = out.suffix.lower()
    ours = True
    if suffix == ".gdb":
        try:
            ours = "provenance" in {str(n) for n, _ in pyogrio.list_layers(out)}
        except Exception:  # noqa: BLE001 - an unreadable geodatabase is not ours either
            ours = False
    elif suffix == ".zip":
        ours = zipfile.is_zipfile(out)
        if ours:
            with zipfile.ZipFile(out) as zf:
                ours = "provenance.csv" in zf.namelist()
    elif suffix == ".geojson":
        ours = _geojson_provenance(out).exists()
    if not ours:
        raise UsageError(
            f"--to '{out}' exists and ms4map did not write it (it has no ms4map provenance): "
            "refusing to replace it, so nothing of yours is lost. Fix: give a new name, or "
            "move that file away first."
        )


def _read(src: Path, name: str) -> pd.DataFrame:
    """A layer, with its integer and boolean columns that hold NULLs given back their
    type (GDAL hands them over as floats)."""
    try:
        frame = pyogrio.read_dataframe(src, layer=name)
        info = pyogrio.read_info(src, layer=name)
    except Exception as exc:  # noqa: BLE001
        raise InputOpenError(f"Cannot read layer '{name}' of '{src.name}': {exc}") from exc
    for col, dtype in zip(info["fields"], info["dtypes"], strict=False):
        if col not in frame.columns or not pd.api.types.is_float_dtype(frame[col]):
            continue
        if dtype == "bool":
            frame[col] = frame[col].astype("boolean")
        elif str(dtype).startswith("int"):
            frame[col] = frame[col].astype(f"Int{str(dtype)[3:]}")
    return with_records_status(frame)


_FAMILY = {"Point": "point", "LineString": "line", "Polygon": "polygon"}


def _parts(
    frame: pd.DataFrame, declared: str | None, name: str, notes: list[str]
) -> list[tuple[str, pd.DataFrame, str | None]]:
    """The layer as ``(name, rows, geometry type)`` parts of one geometry type each, for
    formats that hold one type per layer (None: a table).

    A layer mixing points, lines and polygons (a waterbodies layer of streams and lakes)
    becomes ``<name>_point``, ``<name>_line``, ``<name>_polygon`` (rows without geometry
    go with the first), and ``notes`` says so."""
    if not isinstance(frame, gpd.GeoDataFrame) or declared is None:
        return [(name, _table(frame), None)]
    if declared != "Unknown":
        return [(name, frame, declared)]
    types = frame.geometry.geom_type
    kinds = set(types.dropna().unique())
    if not kinds:
        st = LAYER_STYLES.get(name)
        if st is None:  # an empty layer that records no geometry type: keep it spatial
            notes.append(
                f"{name} is empty and records no geometry type: written as an empty polygon "
                "layer (its CRS kept)"
            )
            return [(name, frame, "Polygon")]
        return [(name, frame, _GEOM_OF_KIND[st.geom])]
    fam = types.map(lambda t: t.replace("Multi", "") if isinstance(t, str) else None)
    bases = [b for b in ("Point", "LineString", "Polygon") if b in set(fam.dropna())]
    out = []
    for i, base in enumerate(bases):
        mask = (fam == base) | (fam.isna() if i == 0 else False)
        part = frame[mask.to_numpy()]
        multi = any(str(k).startswith("Multi") and base in str(k) for k in kinds)
        gtype = f"Multi{base}" if multi else base
        out.append((name if len(bases) == 1 else f"{name}_{_FAMILY[base]}", part, gtype))
    if len(bases) > 1:
        notes.append(
            f"{name} mixes {', '.join(_FAMILY[b] + 's' for b in bases)}: written as "
            + ", ".join(p[0] for p in out)
            + " (one geometry type per layer in this format)"
        )
    return out


def _table(frame: pd.DataFrame) -> pd.DataFrame:
    if isinstance(frame, gpd.GeoDataFrame):
        return pd.DataFrame(frame.drop(columns=frame.geometry.name))
    return frame


def _provenance(src: Path) -> dict[str, tuple[str, str]]:

    return provenance_rows(src)


def _style_rows(src: Path, names: Iterable[str]) -> list[dict[str, Any]]:

    wanted = set(names)
    return [r for r in read_layer_styles(src) if r.get("f_table_name") in wanted]


def _default_style(
    src: Path, name: str, geom: str, *, split: bool = False
) -> tuple[str, str] | None:
    """(QML, SLD) of a layer: the source's default style, else ms4map's (for one part
    of a split layer, ms4map's classes drawn for that part's geometry)."""
    import dataclasses

    rows = [] if split else [r for r in _style_rows(src, [name]) if r.get("styleQML")]
    rows.sort(key=lambda r: (not r.get("useAsDefault"), -(r.get("id") or 0)))
    if rows:
        return str(rows[0]["styleQML"]), str(rows[0].get("styleSLD") or "")
    kind = "point" if "Point" in geom else "line" if "Line" in geom else "polygon"
    st = style_for(name, kind)
    if st.geom != kind:
        st = dataclasses.replace(st, geom=kind)
    return qml(st), sld(st, name)


# -- formats -----------------------------------------------------------------------------
def _export_gpkg(src: Path, out: Path, names: list[str], protected: list[Path]) -> ExportResult:

    res = ExportResult(out, FORMATS[".gpkg"])
    prov = _provenance(src)
    exported = {"exported_from": str(src.resolve())}
    fd, tmp_name = tempfile.mkstemp(suffix=".gpkg", dir=out.parent, prefix=".ms4map-export-")
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    try:
        # one write per provenance record (layers written by the same run go together)
        groups: dict[str, list[str]] = {}
        for n in names:
            groups.setdefault(prov.get(n, ("", "{}"))[1], []).append(n)
        for record, group in groups.items():
            try:
                rec = json.loads(record)
            except ValueError:
                rec = {}
            frames = {n: _read(src, n) for n in group}
            write_outputs(
                tmp,
                frames,
                provenance={**rec, **exported},
                inputs=[src, *protected],
            )
            res.layers.update({n: len(f) for n, f in frames.items()})
        rows = _style_rows(src, names)
        if rows:  # the source's own styles (a style edited in QGIS travels with the layer)
            _copy_styles(tmp, rows)
        replace_durably(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return res


def _copy_styles(gpkg: Path, rows: list[dict[str, Any]]) -> None:

    with sqlite3.connect(gpkg) as con:
        ensure_styles_table(con)
        for t in {r["f_table_name"] for r in rows}:
            con.execute('DELETE FROM "layer_styles" WHERE f_table_name = ?', (t,))
        con.executemany(
            f'INSERT INTO "layer_styles" ({", ".join(LAYER_STYLES_COLUMNS)}) VALUES ({", ".join("?" * len(LAYER_STYLES_COLUMNS))})',
            [tuple(r.get(c) for c in LAYER_STYLES_COLUMNS) for r in rows],
        )


def _gdb_ints(frame: pd.DataFrame, name: str, notes: list[str]) -> pd.DataFrame:
    """64-bit integer columns as 32-bit integers (or doubles, or text) for older ArcGIS."""
    out = frame
    for c in frame.columns:
        s = frame[c]
        if not pd.api.types.is_integer_dtype(s) or s.dtype.itemsize < 8:
            continue
        v = s.dropna()
        lo, hi = (int(v.min()), int(v.max())) if len(v) else (0, 0)
        if out is frame:
            out = frame.copy()
        if _INT32[0] <= lo and hi <= _INT32[1]:
            out[c] = s.astype("Int32" if s.hasnans else "int32")
        elif max(abs(lo), abs(hi)) <= 2**53:
            out[c] = s.astype("float64")
            notes.append(
                f"{name}.{c}: 64-bit integers beyond the 32-bit range written as doubles "
                "(exact up to 2**53) for ArcGIS before Pro 3.2"
            )
        else:
            out[c] = s.astype("string")
            notes.append(f"{name}.{c}: 64-bit integers beyond 2**53 written as text")
    return out


#: Field names a File Geodatabase keeps for itself (its object id, geometry and the
#: geometry's measures) or reads as SQL (compared case-insensitively).
_GDB_RESERVED = frozenset(
    """OBJECTID FID SHAPE SHAPE_LENGTH SHAPE_AREA GDB_GEOMATTR_DATA ADD ALTER AND
    BETWEEN BY COLUMN CREATE DELETE DROP EXISTS FOR FROM GROUP IN INSERT INTO IS LIKE
    NOT NULL OR ORDER SELECT SET TABLE UPDATE VALUES WHERE""".split()
)


def _gdb_field_names(columns: Sequence[str]) -> dict[str, str]:
    """``column -> field name`` a geodatabase takes as it is: letters, digits and ``_``,
    a letter first, at most 64 characters, not a reserved name (``_`` added), unique
    case-insensitively (``_1``, ``_2``, ...)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for c in columns:
        name = re.sub(r"[^\w]", "_", str(c)) or "field"
        if not name[0].isalpha():
            name = "F" + name
        name = name[:64]
        if name.upper() in _GDB_RESERVED:
            name = name[:63] + "_"
        base, k = name, 0
        while name.upper() in taken:
            k += 1
            name = f"{base[: 64 - len(str(k)) - 1]}_{k}"
        taken.add(name.upper())
        out[str(c)] = name
    return out


def _write_gdb_layer(
    tmp: Path, name: str, frame: pd.DataFrame, gtype: str | None, res: ExportResult
) -> None:
    geom = frame.geometry.name if isinstance(frame, gpd.GeoDataFrame) else None
    cols = [c for c in frame.columns if c != geom]
    names = _gdb_field_names(cols)
    frame = frame.rename(columns={c: n for c, n in names.items() if c != n})
    with warnings.catch_warnings():  # the renames are ours, reported below
        warnings.simplefilter("ignore", RuntimeWarning)
        pyogrio.write_dataframe(frame, tmp, layer=name, driver="OpenFileGDB", geometry_type=gtype)
    written = [str(f) for f in pyogrio.read_info(tmp, layer=name)["fields"]]
    renamed = [f"{a} -> {b}" for a, b in names.items() if a != b]
    lost = [b for b in names.values() if b not in written]
    if renamed:  # names a geodatabase cannot hold as they are
        res.notes.append(f"{name}: fields renamed for the geodatabase: {', '.join(renamed)}")
    if lost:  # pragma: no cover - a rule of the driver this does not know yet
        res.notes.append(f"{name}: fields the geodatabase did not keep: {', '.join(lost)}")
    res.layers[name] = len(frame)


def _export_gdb(src: Path, out: Path, names: list[str], available: dict) -> ExportResult:
    res = ExportResult(out, FORMATS[".gdb"])
    res.notes.append(
        "a File Geodatabase holds no QGIS style: ArcGIS draws the layers with its defaults "
        "(the .gpkg or .zip export carries the styles)"
    )
    tmp = out.parent / f".ms4map-export-{uuid.uuid4().hex}.gdb"
    old = out.parent / f".ms4map-old-{uuid.uuid4().hex}.gdb"
    try:
        for n in names:
            frame = _gdb_ints(_read(src, n), n, res.notes)
            for part_name, part, gtype in _parts(frame, available[n], n, res.notes):
                _write_gdb_layer(tmp, part_name, part, gtype, res)
        prov = _provenance_frame(src, names)
        if len(prov):
            pyogrio.write_dataframe(prov, tmp, layer="provenance", driver="OpenFileGDB")
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return res


def _provenance_frame(src: Path, names: list[str]) -> pd.DataFrame:
    """One row per exported layer: the source's record of how it was made (when it
    has one), with where and when it was exported from; the export's own record for a
    layer without one (a GeoPackage ms4map did not write)."""

    rows = _provenance(src)
    now = pd.Timestamp.now(tz="UTC").strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    exported = {"exported_from": str(src.resolve()), "exported": now}
    created, values = [], []
    for n in names:
        made, record = rows.get(n, (now, ""))
        try:
            rec = json.loads(record) if record else {"tool": f"ms4map {__version__}"}
        except ValueError:
            rec = {"record": record}
        created.append(made)
        values.append(json.dumps({**rec, **exported}, default=str, indent=1))
    return pd.DataFrame({"layer": list(names), "created": created, "value": values})


def _dbf_name(name: str, taken: set[str]) -> str:
    """A DBF field name of at most 10 bytes, unique (case-insensitively) in ``taken``."""

    def cut(text: str, nbytes: int) -> str:
        b = text.encode("utf-8")[:nbytes]
        return b.decode("utf-8", errors="ignore")

    cand = cut(name, 10)
    k = 1
    while cand.casefold() in taken:
        suffix = f"_{k}"
        cand = cut(name, 10 - len(suffix)) + suffix
        k += 1
    taken.add(cand.casefold())
    return cand


def _cut_text(value: Any) -> tuple[Any, bool]:
    if not isinstance(value, str):
        return value, False
    b = value.encode("utf-8")
    if len(b) <= TEXT_BYTES:
        return value, False
    return b[:TEXT_BYTES].decode("utf-8", errors="ignore"), True


def _shapefile_frame(frame: pd.DataFrame, layer: str) -> tuple[pd.DataFrame, list[dict]]:
    """The frame with 10-character names and cut text, and its fields.csv rows."""
    geom = frame.geometry.name if isinstance(frame, gpd.GeoDataFrame) else None
    taken: set[str] = set()
    renamed: dict[str, str] = {}
    rows: list[dict] = []
    out = frame.copy()
    for c in frame.columns:
        if c == geom:
            continue
        s = frame[c]
        short = _dbf_name(str(c), taken)
        renamed[c] = short
        notes = []
        kind = str(s.dtype)
        if pd.api.types.is_datetime64_any_dtype(s):
            out[c] = s.map(lambda v: None if pd.isna(v) else v.isoformat())
            notes.append("date-time written as ISO 8601 text (a shapefile date has no time)")
            kind = "datetime (as text)"
        elif s.dtype == object or pd.api.types.is_string_dtype(s):
            cut = s.map(_cut_text)
            n_cut = int(sum(flag for _v, flag in cut))
            out[c] = [v for v, _flag in cut]
            kind = "text"
            if n_cut:
                notes.append(
                    f"text over {TEXT_BYTES} bytes cut to {TEXT_BYTES} in {n_cut} row(s); the "
                    ".gpkg export keeps it whole"
                )
        elif pd.api.types.is_bool_dtype(s):
            # a DBF logical field reads back as 'T'/'F' text in older GDAL and ArcGIS
            out[c] = s.astype("Int32")
            kind = "boolean (as 1/0)"
            notes.append("boolean written as 1 (true) / 0 (false)")
        rows.append(
            {
                "layer": layer,
                "file": f"{layer}.shp",
                "field": short,
                "full_name": str(c),
                "type": kind,
                "note": "; ".join(notes),
            }
        )
    return out.rename(columns=renamed), rows


def _write_shapefile(
    work: Path,
    n: str,
    frame: pd.DataFrame,
    gtype: str,
    *,
    members: list[Path],
    notes: list[str],
    style: tuple[str, str] | None,
) -> list[dict]:
    """One shapefile (and its .qml/.sld) in ``work``; its fields.csv rows."""
    shp_frame, rows = _shapefile_frame(frame, n)
    if any("text over" in r["note"] for r in rows):
        notes.append(f"{n}: some text over {TEXT_BYTES} bytes cut (see fields.csv)")
    if any(len(r["field"]) < len(r["full_name"]) for r in rows):
        notes.append(f"{n}: field names cut to 10 characters (see fields.csv)")
    pyogrio.write_dataframe(
        shp_frame,
        work / f"{n}.shp",
        driver="ESRI Shapefile",
        geometry_type=gtype,
        promote_to_multi=gtype.startswith("Multi") or None,
        encoding="UTF-8",
    )
    members += sorted(p for p in work.glob(f"{n}.*") if p.suffix.lower() != ".csv")
    if style is not None:  # QGIS reads <name>.qml beside a shapefile as its style
        (work / f"{n}.qml").write_text(_shapefile_qml(style[0], rows), encoding="utf-8")
        members.append(work / f"{n}.qml")
        if style[1]:
            sld_text = _shapefile_qml(style[1], rows, sld=True)
            (work / f"{n}.sld").write_text(sld_text, encoding="utf-8")
            members.append(work / f"{n}.sld")
    return rows


def _export_zip(src: Path, out: Path, names: list[str], available: dict) -> ExportResult:
    res = ExportResult(out, FORMATS[".zip"])
    mapping: list[dict] = []
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".ms4map-export-") as td:
        work = Path(td)
        members: list[Path] = []
        for n in names:
            parts = _parts(_read(src, n), available[n], n, res.notes)
            for part_name, frame, gtype in parts:
                if gtype is None:
                    p = work / f"{part_name}.csv"
                    p.write_text(csv_text(frame), encoding="utf-8")
                    members.append(p)
                else:
                    mapping += _write_shapefile(
                        work, part_name, frame, gtype, members=members, notes=res.notes,
                        style=_default_style(src, n, gtype, split=len(parts) > 1),
                    )  # fmt: skip
                res.layers[part_name] = len(frame)
        buf = io.StringIO()
        w = csv.DictWriter(buf, ["layer", "file", "field", "full_name", "type", "note"])
        w.writeheader()
        w.writerows(mapping)
        (work / "fields.csv").write_text(buf.getvalue(), encoding="utf-8")
        members.append(work / "fields.csv")
        prov = _provenance_frame(src, names)
        if len(prov):
            (work / "provenance.csv").write_text(csv_text(prov), encoding="utf-8")
            members.append(work / "provenance.csv")
        tmp = work / "out.zip"
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for m in dict.fromkeys(members):
                if m.exists():
                    zf.write(m, arcname=m.name)
        replace_durably(tmp, out)
    return res


def _shapefile_qml(text: str, rows: list[dict], *, sld: bool = False) -> str:
    """A style with the layer's field names replaced by their 10-character names."""
    import re

    for r in sorted(rows, key=lambda r: -len(r["full_name"])):
        if r["field"] == r["full_name"]:
            continue
        full, short = r["full_name"], r["field"]
        if sld:
            text = text.replace(
                f"<ogc:PropertyName>{full}</ogc:PropertyName>",
                f"<ogc:PropertyName>{short}</ogc:PropertyName>",
            )
        else:
            text = text.replace(f'attr="{full}"', f'attr="{short}"')
            text = re.sub(rf"&quot;{re.escape(full)}&quot;", f"&quot;{short}&quot;", text)
    return text


def _export_geojson(
    src: Path, out: Path, names: list[str], available: dict, chose: bool
) -> ExportResult:
    if len(names) != 1:
        if chose:
            raise UsageError(
                f"A GeoJSON file holds one layer; {len(names)} given with --layer. Fix: "
                "give one --layer, or export to .gpkg or .zip."
            )
        raise UsageError(
            f"'{src.name}' has {len(names)} layers ({', '.join(names)}); a GeoJSON file "
            "holds one. Fix: name it with --layer NAME."
        )
    (n,) = names
    res = ExportResult(out, FORMATS[".geojson"])
    frame = _read(src, n)
    coords: dict[str, str] = {}
    if isinstance(frame, gpd.GeoDataFrame) and available[n] is not None:
        if frame.crs is None:
            raise DataError(
                f"Layer '{n}' has no CRS, so it cannot be put in WGS 84. Fix: export it "
                "to .gpkg instead."
            )
        coords = _geojson_coordinates(frame.crs)
        frame = frame.to_crs("EPSG:4326")
        res.notes.append(
            f"{n}: coordinates reprojected from {coords['reprojected_from']} to WGS 84 "
            "longitude/latitude (GeoJSON, RFC 7946), 7 decimals (about 1 cm); the .gpkg "
            "export keeps the source CRS"
        )
    else:
        if isinstance(frame, gpd.GeoDataFrame):
            frame = pd.DataFrame(frame.drop(columns=frame.geometry.name))
        res.notes.append(f"{n} is a table: features without geometry")
    frame = frame.copy()
    for c in frame.columns:  # GeoJSON has no date type: ISO 8601 text, as GDAL writes
        if pd.api.types.is_datetime64_any_dtype(frame[c]):
            frame[c] = frame[c].map(lambda v: None if pd.isna(v) else v.isoformat())
    fd, tmp_name = tempfile.mkstemp(suffix=".geojson", dir=out.parent, prefix=".ms4map-")
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    # the sidecar first says the file is being written, and last records it (with its
    # SHA-256): a stop between them never leaves a new file beside the last export's
    # provenance, and the file stays ms4map's own (replaced by the next export)
    if _geojson_provenance(out).exists():
        write_text_output(_geojson_provenance(out), json.dumps(WRITING, indent=1), option="--to")
    try:
        pyogrio.write_dataframe(frame, tmp, layer=n, driver="GeoJSON", RFC7946="YES")
        replace_durably(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    prov = _provenance_frame(src, [n])
    record = json.loads(prov["value"].iloc[0])
    head = {"layer": n, "created": prov["created"].iloc[0], **coords}
    write_text_output(
        _geojson_provenance(out), finished_sidecar({**head, **record}, out), option="--to"
    )
    res.layers[n] = len(frame)
    res.notes.append(
        f"GeoJSON keeps no style; its provenance is in {_geojson_provenance(out).name}"
    )
    return res


def _geojson_coordinates(crs: Any) -> dict[str, str]:
    """What a GeoJSON export does to the coordinates of a layer in ``crs`` (its record)."""
    epsg = crs.to_epsg()
    return {
        "crs": "EPSG:4326 (WGS 84 longitude/latitude, RFC 7946)",
        "reprojected_from": f"EPSG:{epsg}" if epsg else crs.name,
        "coordinate_precision": "7 decimal places (about 1 cm)",
    }


def export(
    src: str | Path,
    dest: str | Path,
    layers: Sequence[str] | None = None,
    *,
    protected: Iterable[str | Path] = (),
    storm_depth_mm: float | None = None,
    impervious: str | Path | None = None,
    records: str | Path | None = None,
) -> ExportResult:
    """Copy layers of the ms4map GeoPackage ``src`` to ``dest`` (format by suffix).

    Parameters
    ----------
    src : path
        A GeoPackage (ms4map's results, or any GeoPackage).
    dest : path
        ``.gpkg``, ``.gdb``, ``.zip`` or ``.geojson`` (:data:`FORMATS`).  An existing
        file (or geodatabase) is replaced.
    layers : list of str, optional
        Layers to export (default: every layer but the ``provenance`` and
        ``layer_styles`` tables, which go along with the layers they describe).
    protected : paths
        More files never to write (the workspace's inputs).
    storm_depth_mm : float, optional
        ``.inp`` only: the design storm's 24-hour depth (:mod:`ms4map.outputs.swmm_out`).
    impervious : path, optional
        ``.inp`` only: a percent-impervious raster (0-100) for the subcatchments.
    records : path, optional
        An IDDE records file (``*.records.gpkg``, only read): every exported layer that
        names outfalls (``outfall_id`` and ``status``) carries their one status from it
        (``status``, ``status_reason``; the layer's own as ``layer_status``), as the
        app's pages do (:mod:`ms4map.outputs.export_status`).

    Raises
    ------
    UsageError
        ``dest`` is an input, or its suffix is not one of :data:`FORMATS`, or a GeoJSON
        export has more than one layer.
    InputOpenError
        ``src`` cannot be opened, or a layer named is not in it.
    """
    src_path = Path(src).expanduser()
    if Path(dest).suffix.lower() == ".inp":  # a model, built from the layers it needs
        r = export_swmm(
            src_path,
            dest,
            storm_depth_mm=storm_depth_mm,
            impervious=impervious,
            protected=list(protected),
        )
        return ExportResult(path=r.path, format=FORMATS[".inp"], layers=r.layers, notes=r.notes)
    guard = [src_path, *(Path(p) for p in protected), *recorded_inputs(src_path)]
    status = None
    if records is not None:
        rec = Path(records).expanduser()
        if not src_path.exists():  # the source first: it is what the user asked for
            raise InputOpenError(f"Cannot open '{src_path}': no such file. Fix: check the path.")
        if not rec.exists():
            raise InputOpenError(
                f"--records {rec}: no such records file. Fix: give the IDDE records file "
                "(<workspace stem>.records.gpkg, beside the workspace), or leave --records "
                "out to export the layers' own status."
            )
        guard.append(rec)
        status = status_from_records(rec)
    with records_status(status):
        return _export_layers(src_path, dest, layers, guard)


def _export_layers(
    src_path: Path, dest: str | Path, layers: Sequence[str] | None, guard: list[Path]
) -> ExportResult:
    """The layers of ``src_path`` to ``dest`` in its format (:func:`export`)."""
    # what to export is checked first: a refused export makes no folder
    available = source_layers(src_path)
    names = _choose(available, layers, src_path)
    if not names:
        raise DataError(f"'{src_path.name}' has no layers to export.")
    if Path(dest).suffix.lower() == ".geojson" and len(names) != 1:
        _export_geojson(src_path, Path(dest), names, available, chose=bool(layers))
    out = _check_dest(dest, guard)
    suffix = out.suffix.lower()
    with writing(out):
        if suffix == ".gpkg":
            return _export_gpkg(src_path, out, names, guard)
        if suffix == ".gdb":
            return _export_gdb(src_path, out, names, available)
        if suffix == ".zip":
            return _export_zip(src_path, out, names, available)
        return _export_geojson(src_path, out, names, available, chose=bool(layers))


def export_frames(
    layers: dict[str, pd.DataFrame],
    suffix: str,
    *,
    stem: str,
    provenance: dict[str, Any],
    workdir: str | Path | None = None,
) -> tuple[str, bytes, list[str]]:
    """``layers`` as the bytes of a download in the format of ``suffix`` (the app's
    downloads; the same files as ``ms4map export``).

    The layers are written with :func:`ms4map.io.write_outputs` (provenance, styles)
    into a temporary GeoPackage under ``workdir`` and exported from there.  A ``.gdb``
    (a folder) comes zipped, as ``<stem>.gdb.zip``.

    Returns
    -------
    (file name, bytes, notes)
    """

    suffix = suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"Unknown download format {suffix!r}: select from {list(FORMATS)}.")
    with tempfile.TemporaryDirectory(dir=workdir, prefix=".ms4map-download-") as td:
        src = Path(td) / "results" / f"{stem}.gpkg"
        write_outputs(src, layers, provenance=provenance)
        if suffix == ".gpkg":
            return f"{stem}.gpkg", src.read_bytes(), []
        dest = Path(td) / "out" / f"{stem}{suffix}"
        res = export(src, dest)
        if suffix == ".geojson":  # the download is the one file: no provenance beside it
            notes = [
                "GeoJSON keeps no style and no provenance (the GeoPackage download has both)"
                if n.startswith("GeoJSON keeps no style")
                else n
                for n in res.notes
            ]
            return dest.name, dest.read_bytes(), notes
        if suffix != ".gdb":
            return dest.name, dest.read_bytes(), res.notes
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for p in sorted(dest.rglob("*")):
                if p.is_file():
                    zf.write(p, arcname=f"{dest.name}/{p.relative_to(dest).as_posix()}")
        return f"{dest.name}.zip", buf.getvalue(), res.notes
