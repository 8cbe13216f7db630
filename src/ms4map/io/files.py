"""Reading layers and DEMs into a :class:`~ms4map.io.workspace.Workspace`; writing outputs.

This is the only module that touches the user's files, and it only reads them.
Everything it returns is in canonical form (:mod:`ms4map.core.schema`) and in one
projected working CRS; every problem found on the way is collected into one
:class:`~ms4map.core.qa.QAReport` (errors raise :class:`~ms4map.core.errors.ValidationError`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import sys
import tempfile
import tomllib
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import shapely
from pyproj import CRS

from ms4map.core.nulls import is_blank_or_null_marker

from ..core import schema
from ..core.errors import (
    DataError,
    InputOpenError,
    Ms4mapError,
    OutputError,
    UsageError,
    ValidationError,
)
from ..core.qa import QAReport
from ..core.schema import LEGAL_LAYERS
from ..core.units import metres_per_unit, metres_to_units
from .fieldmap import FieldMap
from .workspace import Dem, Workspace, file_sha256

__all__ = [
    "check_zip",
    "open_workspace",
    "read_dem",
    "warp_bilinear",
    "read_source",
    "write_outputs",
    "metres_to_crs_units",
    "crs_units_to_metres",
    "demo_path",
    "list_source_layers",
    "load_manifest",
    "parse_layer_option",
]

VECTOR_SUFFIXES = (".gpkg", ".shp", ".geojson", ".json", ".zip", ".fgb", ".gml", ".kml", ".gdb")
#: Non-spatial tables accepted for table roles (``impairments``).
TABLE_SUFFIXES = (".csv", ".xlsx", ".dbf")
MAX_ZIP_MEMBERS = 10_000
MAX_ZIP_UNPACKED = 1 << 30  # 1 GiB

_GEOM_FAMILY = {
    "Point": ("Point", "MultiPoint"),
    "LineString": ("LineString", "MultiLineString"),
    "Polygon": ("Polygon", "MultiPolygon"),
    "Line/Polygon": ("LineString", "MultiLineString", "Polygon", "MultiPolygon"),
}


# ======================================================================================
# Small helpers
# ======================================================================================
def crs_units_to_metres(crs: Any) -> float:
    """Metres per unit of a projected CRS's first axis (1.0 for metres; :mod:`ms4map.core.units`)."""
    return metres_per_unit(crs)


def metres_to_crs_units(crs: Any, metres: float) -> float:
    """Convert a distance in metres to the units of ``crs`` (e.g. US survey feet)."""
    return metres_to_units(crs, metres)


#: Builds the demo town into a folder when :func:`demo_path` finds no copy.  ``None``: the
#: package root's ``ms4map._build_demo`` (:func:`ms4map.demo.build_demo`): the generator
#: sits above io in the import order, so io does not import it, and the root is always
#: imported before io.
demo_builder: Callable[[Path], Any] | None = None


def _demo_builder() -> Callable[[Path], Any] | None:
    root = sys.modules.get("ms4map")
    return demo_builder or getattr(root, "_build_demo", None)


def demo_path() -> Path:
    """The bundled demo GeoPackage (``data/layers/demo.gpkg`` or the installed copy).

    In a source checkout the repository's ``data/layers`` is used; after a regular
    install the copy shipped as package data (``ms4map/demo_data``).  When neither is
    there the demo is rebuilt (deterministically) into the user data folder.
    """
    here = Path(__file__).resolve()
    candidates = [
        here.parents[3] / "data" / "layers" / "demo.gpkg",  # source checkout (src layout)
        here.parents[1] / "demo_data" / "demo.gpkg",  # installed package data
    ]
    for c in candidates:
        if c.exists():
            return c
    build = _demo_builder()
    if build is None:
        raise InputOpenError("The demo town is not installed and there is no demo builder.")
    out = data_dir() / "demo"
    if not (out / "demo.gpkg").exists():
        build(out)  # rebuild: deterministic
    return out / "demo.gpkg"


def data_dir() -> Path:
    """The folder ms4map may write to (``MS4MAP_DATA_DIR``, else ``~/.local/share/ms4map``)."""
    base = os.environ.get("MS4MAP_DATA_DIR")
    p = Path(base) if base else Path.home() / ".local" / "share" / "ms4map"
    p.mkdir(parents=True, exist_ok=True)
    return p


# ======================================================================================
# Sources: "layer", "file.ext", "file.gpkg::layer"
# ======================================================================================
@dataclass(frozen=True)
class Source:
    """One source layer: a file (or folder) and a layer name inside it (or None)."""

    path: Path
    layer: str | None
    label: str  # the name findings and field maps use for this source layer

    def gdal_path(self) -> str:
        p = str(self.path)
        if self.path.suffix.lower() == ".zip":
            return f"/vsizip/{p}"
        return p


def parse_layer_option(text: str) -> tuple[str, str]:
    """Parse ``ROLE=LAYER`` (the ``--layer`` option)."""
    if "=" not in text:
        raise UsageError(
            f"--layer '{text}' needs the form ROLE=LAYER, e.g. --layer structures=storm_structures. "
            f"Roles: {list(schema.LAYERS)}."
        )
    role, layer = (s.strip() for s in text.split("=", 1))
    if role not in schema.LAYERS:
        raise UsageError(f"--layer: unknown role '{role}'. Select from {list(schema.LAYERS)}.")
    if not layer:
        raise UsageError(f"--layer {role}=: the layer name is empty.")
    return role, layer


def list_source_layers(path: str | Path) -> list[str]:
    """Layer names inside a GeoPackage/FileGDB, the files of a folder, or the file's stem."""
    p = Path(path)
    if not p.exists():
        raise InputOpenError(f"'{p}' does not exist. Fix: check the path.")
    if p.is_dir() and p.suffix.lower() != ".gdb":
        return sorted(
            f.stem for f in p.iterdir() if f.suffix.lower() in VECTOR_SUFFIXES and f.is_file()
        )
    if p.suffix.lower() == ".zip":
        _check_zip(p)
    try:
        return [str(r[0]) for r in pyogrio.list_layers(_gdal(p))]
    except Exception as exc:  # GDAL raises several types
        raise InputOpenError(
            f"'{p}' cannot be opened as a GIS dataset ({_short(exc)}). "
            "Fix: give a GeoPackage, Shapefile (or zipped Shapefile), GeoJSON or File Geodatabase."
        ) from None


def _gdal(p: Path) -> str:
    return f"/vsizip/{p}" if p.suffix.lower() == ".zip" else str(p)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def check_zip(
    path: str | Path,
    *,
    max_members: int = MAX_ZIP_MEMBERS,
    max_unpacked: int = MAX_ZIP_UNPACKED,
) -> list[zipfile.ZipInfo]:
    """The one safety check of a zip (the CLI's zipped layers and the app's uploads).

    Refuses, with nothing extracted: a broken zip, more than ``max_members`` members,
    more than ``max_unpacked`` bytes unpacked, a member path that is absolute, climbs
    out (``..``), names a drive or holds a NUL byte, and a link or special-file member.

    Returns
    -------
    list of zipfile.ZipInfo
        The members, checked.
    """
    import stat
    from pathlib import PurePosixPath

    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputOpenError(f"'{path.name}' is not a readable zip file ({exc}).") from None
    if len(infos) > max_members:
        raise InputOpenError(
            f"'{path.name}' has {len(infos):,} members (limit {max_members:,}). "
            "Fix: zip only the layers you need."
        )
    total = 0
    for info in infos:
        raw = info.filename
        name = raw.replace("\\", "/")
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]) or "\x00" in name:
            raise InputOpenError(
                f"'{path.name}' is unsafe: member '{raw}' points outside the archive folder. "
                "Nothing was extracted. Fix: re-create the zip with relative paths."
            )
        ftype = stat.S_IFMT((info.external_attr >> 16) & 0xFFFF)  # 0: no Unix file type
        if ftype and ftype not in (stat.S_IFREG, stat.S_IFDIR):
            raise InputOpenError(
                f"'{path.name}' is unsafe: member '{raw}' is a link or special file. "
                "Nothing was extracted. Fix: zip the files themselves."
            )
        total += info.file_size
        if total > max_unpacked:
            raise InputOpenError(
                f"'{path.name}' unpacks to more than {max_unpacked / 2**30:.1f} GiB. "
                "Fix: zip only the layers you need."
            )
    return infos


def _check_zip(path: Path) -> None:
    check_zip(path)


def _resolve_source(spec: str, base: Path | None, role: str | None = None) -> Source:
    """Turn a ``--layer`` value into a :class:`Source` (``role``: the role it feeds, for
    messages)."""
    if "::" in spec:
        file_part, layer = spec.rsplit("::", 1)
        fp = _resolve_file(file_part, base)
        return Source(fp, layer, layer)
    if _looks_like_file(spec):
        fp = _resolve_file(spec, base)
        if fp.is_dir() and fp.suffix.lower() != ".gdb":
            raise InputOpenError(f"'{spec}' is a folder, not a layer. Fix: name a file in it.")
        return Source(fp, None, fp.stem if fp.suffix.lower() != ".zip" else fp.stem)
    if base is None:
        raise UsageError(
            f"Layer '{spec}' is not a file path and no workspace PATH was given to look it up in."
        )
    if base.is_dir() and base.suffix.lower() != ".gdb":
        matches = [
            f for f in base.iterdir() if f.stem == spec and f.suffix.lower() in VECTOR_SUFFIXES
        ]
        if not matches:
            raise InputOpenError(
                f"No layer '{spec}' in folder '{base}'. Available: {list_source_layers(base)}."
            )
        if len(matches) > 1:
            files = sorted(matches)
            options = " or ".join(f"--layer {role or 'ROLE'}={f}" for f in files)
            raise UsageError(
                f"Folder '{base}' holds {' and '.join(f.name for f in files)}: layer "
                f"'{spec}' could be either file, and ms4map does not pick one. Fix: name "
                f"the file to read with {options} (or move the other file out of the folder)."
            )
        return Source(matches[0], None, spec)
    if base.suffix.lower() not in (".gpkg", ".gdb", ".zip"):
        # a single-layer file as PATH: its one layer is named by its stem
        if spec == base.stem:
            return Source(base, None, spec)
    available = list_source_layers(base)
    if spec not in available:
        raise InputOpenError(
            f"Layer '{spec}' does not exist in '{base.name}'. Available layers: {available}. "
            "Fix: use one of these names in --layer ROLE=LAYER."
        )
    return Source(base, spec, spec)


def _looks_like_file(spec: str) -> bool:
    """Whether a source names a file (by its suffix or a ``/``) rather than a layer."""
    return any(spec.lower().endswith(s) for s in VECTOR_SUFFIXES + TABLE_SUFFIXES) or "/" in spec


def _resolve_file(text: str, base: Path | None) -> Path:
    p = Path(text).expanduser()
    tries = [p]
    if not p.is_absolute() and base is not None:
        tries.append((base if base.is_dir() else base.parent) / p)
    for t in tries:
        if t.exists():
            return t
    raise InputOpenError(f"File '{text}' does not exist. Fix: check the path.")


# ======================================================================================
# Reading one source layer
# ======================================================================================
def read_source(source: Source) -> gpd.GeoDataFrame:
    """Read one source layer as it is (no mapping); clear errors for unreadable input."""
    if source.path.suffix.lower() == ".zip":
        _check_zip(source.path)
    kwargs: dict[str, Any] = {}
    if source.layer is not None:
        kwargs["layer"] = source.layer
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = pyogrio.read_dataframe(source.gdal_path(), **kwargs)
    except UnicodeDecodeError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = pyogrio.read_dataframe(source.gdal_path(), encoding="latin1", **kwargs)
        df.attrs["ms4map_encoding"] = "latin1"
    except Exception as exc:
        msg = _short(exc)
        if "not recognized" in msg or "not a supported" in msg.lower():
            raise InputOpenError(
                f"'{source.path.name}' is not a spatial file GDAL can read ({msg}). "
                "Fix: give a GeoPackage, Shapefile (zipped or not), GeoJSON or File Geodatabase."
            ) from None
        raise InputOpenError(
            f"Cannot read layer '{source.label}' from '{source.path}': {msg}"
        ) from None
    if not isinstance(df, gpd.GeoDataFrame):
        df = pd.DataFrame(df)
    # text that decoded with replacement characters -> re-read as latin-1
    if _has_mojibake(df):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                df2 = pyogrio.read_dataframe(source.gdal_path(), encoding="latin1", **kwargs)
            df2.attrs["ms4map_encoding"] = "latin1"
            df = df2
        except Exception:  # keep what we have
            df.attrs["ms4map_encoding"] = "replaced"
    return df


def _has_mojibake(df: pd.DataFrame) -> bool:
    for col in df.columns:
        if col == "geometry" or not (
            df[col].dtype == object or pd.api.types.is_string_dtype(df[col])
        ):
            continue
        s = df[col].dropna().astype(str)
        if len(s) and s.str.contains("\ufffd", regex=False).any():
            return True
    return False


# ======================================================================================
# Manifest
# ======================================================================================
#: The keys of a workspace manifest.
_MANIFEST_KEYS = ("workspace", "dem", "crs", "repair_geometry", "layers", "fields", "field_map")

#: Step settings a manifest's ``[settings]`` table was meant to hold, and the
#: command-line option that sets each (a manifest's ``[settings]`` is refused).
_SETTING_OPTIONS = {
    "snap_tolerance_m": ("--snap-tolerance", "ms4map trace, ms4map drainage"),
    "lateral_tolerance_m": ("--lateral-tolerance", "ms4map trace"),
    "min_depth_m": ("--min-depth", "ms4map drainage"),
    "min_area_m2": ("--min-area", "ms4map drainage"),
    "burn_depth_m": ("--burn-depth", "ms4map drainage"),
    "inlet_depth_m": ("--inlet-depth", "ms4map drainage"),
    "fallback_distance_m": ("--fallback-distance", "ms4map drainage"),
}


def load_manifest(path: str | Path) -> dict[str, Any]:
    """Read a TOML manifest holding the same options as the command line.

    Keys: ``workspace`` (GeoPackage or folder, relative to the manifest), ``dem`` and
    ``field_map`` (paths relative to the manifest), ``crs``, ``repair_geometry`` (a TOML
    boolean: ``true`` or ``false`` without quotes), ``[layers]`` (role = "layer" or
    ["layer", ...]; a file there is relative to the manifest, else to the workspace's
    folder, never to the current directory) and ``[fields]`` (a field map, same shape as
    a ``--field-map`` file).  Step settings are command-line options: a ``[settings]``
    table with any entry is refused, naming the option that sets it.

    Parameters
    ----------
    path : str or Path
        The ``.toml`` file.

    Returns
    -------
    dict
        The keys present, paths made absolute; ``layers`` maps role -> list of sources.

    Raises
    ------
    InputOpenError
        The file does not exist.
    UsageError
        It is not TOML, has an unknown key, a value of the wrong type (naming the key,
        the value and the fix) or a ``[settings]`` entry.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputOpenError(f"Manifest '{p}' does not exist.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"Manifest '{p}' is not valid TOML: {exc}") from None
    unknown = set(data) - set(_MANIFEST_KEYS) - {"settings"}
    if unknown:
        raise UsageError(
            f"Manifest '{p.name}': unknown key(s) {sorted(unknown)}. "
            f"Allowed: {sorted(_MANIFEST_KEYS)}."
        )
    _check_manifest_types(p, data)
    _refuse_manifest_settings(p, data.get("settings", {}))
    out: dict[str, Any] = {}
    for key in ("workspace", "dem", "field_map"):
        if key in data:
            out[key] = (
                str((p.parent / data[key]).resolve())
                if not Path(data[key]).is_absolute()
                else data[key]
            )
    for key in ("crs", "repair_geometry"):
        if key in data:
            out[key] = data[key]
    if "layers" in data:
        out["layers"] = {
            r: [_manifest_layer(s, p, out.get("workspace")) for s in _as_list(v)]
            for r, v in data["layers"].items()
        }
    if "fields" in data:
        out["fields"] = data["fields"]
    return out


def _toml_text(value: Any) -> str:
    """``value`` as it is written in TOML (a string in double quotes), for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, list, dict)):
        return json.dumps(value, default=str)
    return repr(value)


def _check_manifest_types(p: Path, data: Mapping[str, Any]) -> None:
    """Each manifest key holds the TOML type it needs (``repair_geometry = "false"``, a
    string, would otherwise mean true)."""
    where = f"Manifest '{p.name}'"
    for key in ("workspace", "dem", "field_map"):
        if key in data and (not isinstance(data[key], str) or not data[key].strip()):
            raise UsageError(
                f"{where}: {key} = {_toml_text(data[key])} is not a path. "
                f'Fix: write the path in quotes, e.g. {key} = "town.gpkg".'
            )
    if "crs" in data and (isinstance(data["crs"], bool) or not isinstance(data["crs"], (str, int))):
        raise UsageError(
            f"{where}: crs = {_toml_text(data['crs'])} is not a CRS. "
            'Fix: write it in quotes, e.g. crs = "EPSG:26918".'
        )
    if "repair_geometry" in data and not isinstance(data["repair_geometry"], bool):
        value = data["repair_geometry"]
        raise UsageError(
            f"{where}: repair_geometry = {_toml_text(value)} is not a TOML boolean (a quoted "
            "or numeric value is not read as true or false). Fix: write "
            "repair_geometry = false (or true) without quotes."
        )
    for key in ("layers", "fields", "settings"):
        if key in data and not isinstance(data[key], dict):
            raise UsageError(
                f"{where}: {key} = {_toml_text(data[key])} must be a table ([{key}]). "
                f"Fix: write it as a [{key}] table."
            )
    for role, specs in data.get("layers", {}).items():
        items = _as_list(specs)
        if not items or not all(isinstance(s, str) and s.strip() for s in items):
            raise UsageError(
                f"{where}: [layers] {role} = {_toml_text(specs)} must name a layer or file in "
                f'quotes, or a list of them. Fix: e.g. {role} = "storm_structures" or '
                f'{role} = ["pipes.shp", "ditches.shp"].'
            )


def _as_list(value: Any) -> list[Any]:
    """A TOML value as a list (a single value becomes a list of one)."""
    return list(value) if isinstance(value, list) else [value]


def _refuse_manifest_settings(p: Path, settings: Mapping[str, Any]) -> None:
    """Refuse a ``[settings]`` entry: no command applies one (they are command-line
    options), so none is ever recorded in a provenance as if it had been used."""
    if not settings:
        return
    parts, fixes = [], []
    for key, value in settings.items():
        if key in _SETTING_OPTIONS:
            option, commands = _SETTING_OPTIONS[key]
            parts.append(f"{key} = {_toml_text(value)}")
            fixes.append(f"{option} {value} ({commands})")
        else:
            parts.append(f"{key} = {_toml_text(value)} (not a setting of any command)")
    fix = (
        "give it on the command line instead: " + "; ".join(fixes)
        if fixes
        else "see `ms4map COMMAND --help` for the settings each command takes"
    )
    raise UsageError(
        f"Manifest '{p.name}': [settings] {', '.join(parts)} would not be applied: a "
        "manifest holds the workspace options only, and step settings are command-line "
        f"options. Fix: remove [settings] from the manifest and {fix}."
    )


def _manifest_layer(spec: str, manifest: Path, workspace: str | None) -> str:
    """A manifest's ``[layers]`` source with its file made absolute: relative to the
    manifest, else (when it is not there) to the workspace's folder; never the current
    directory.  A layer name is returned as it is."""
    if "::" in spec:
        file_part, layer = spec.rsplit("::", 1)
        suffix = f"::{layer}"
    elif _looks_like_file(spec):
        file_part, suffix = spec, ""
    else:
        return spec
    fp = Path(file_part).expanduser()
    if fp.is_absolute():
        return spec
    found = (manifest.parent / fp).resolve()
    if not found.exists() and workspace is not None:
        ws = Path(workspace)
        beside_ws = ((ws if ws.is_dir() else ws.parent) / fp).resolve()
        if beside_ws.exists():
            found = beside_ws
    return f"{found}{suffix}"


# ======================================================================================
# The workspace
# ======================================================================================
def open_workspace(
    path: str | Path | None = None,
    *,
    layers: Mapping[str, str | Iterable[str]] | None = None,
    field_map: FieldMap | Mapping[str, Any] | str | Path | None = None,
    dem: str | Path | None = None,
    crs: Any = None,
    repair_geometry: bool = False,
    no_dem: bool = False,
) -> Workspace:
    """Open layers (and a DEM) as one canonical :class:`~ms4map.io.workspace.Workspace`.

    Parameters
    ----------
    path : str or Path, optional
        A GeoPackage (the usual workspace), a File Geodatabase, a folder of vector files,
        a single vector file, or a TOML manifest holding these options.
    layers : mapping, optional
        Role -> source layer(s): a layer of ``path``, a file path, or ``FILE::LAYER``.
        Several sources may feed one role (pipes, ditches and links all feed
        ``conveyances``).  Roles not named are filled from layers whose name is exactly
        the canonical role name.
    field_map : FieldMap, dict, or path to a TOML file, optional
        Column (and value) mapping beyond the built-in alias tables.  With a manifest,
        its ``field_map`` file and its ``[fields]`` apply too; entries given here win.
    dem : str or Path, optional
        DEM GeoTIFF; default ``<stem>_dem.tif`` beside the GeoPackage, else none.
    crs : optional
        Working CRS (must be projected).  Default: the DEM's projected CRS, else the
        data's own projected CRS, else the NAD83 UTM zone of the data.
    repair_geometry : bool
        Repair invalid geometries with ``shapely.make_valid`` (reported) instead of
        stopping with an error.
    no_dem : bool
        Ignore any DEM.

    Returns
    -------
    Workspace

    Raises
    ------
    InputOpenError
        A file or layer cannot be opened.
    ValidationError
        The data has errors; ``exc.report`` lists every one.
    """
    req = _request(
        path, layers=layers, field_map=field_map, dem=dem, crs=crs, repair_geometry=repair_geometry
    )
    report = QAReport()
    role_specs = _resolve_roles(req.layers, req.base)
    raw, inputs = _read_sources(role_specs, req.base, report)
    _check_field_map_layers(req.fmap, raw)
    dem_path, work_crs = _working_crs(req, raw, report, no_dem=no_dem)
    source_crs = _source_crs(raw)
    out_layers, mapping_used = _canonical_layers(raw, req, work_crs, report)
    _check_layers(out_layers, work_crs, report)
    dem_obj = _attach_dem(dem_path, work_crs, out_layers, inputs, report)
    if report.has_errors:
        raise ValidationError(report)

    for p in list(inputs):
        inputs[p] = file_sha256(p)
    settings = dict(req.settings)
    settings.update(
        {
            "path": str(req.base) if req.base else None,
            "layers": {r: list(s) for r, s in role_specs.items()},
            "dem": str(dem_path) if dem_path else None,
            "crs": work_crs.to_string() if work_crs is not None else None,
            "repair_geometry": req.repair_geometry,
            "field_map": json.dumps(mapping_used, sort_keys=True),
            "value_maps": _value_maps_used(req.fmap, raw),
        }
    )
    unit = work_crs.axis_info[0]
    report.note(
        f"Working CRS: {work_crs.name} ({work_crs.to_string()}); linear unit "
        f"{unit.unit_name} = {unit.unit_conversion_factor:.10g} m."
    )
    return Workspace(
        path=req.base.resolve() if req.base else None,
        crs=work_crs,
        layers=out_layers,
        dem=dem_obj,
        qa=report,
        source_crs=source_crs,
        field_mapping=mapping_used,
        inputs=inputs,
        settings=settings,
    )


@dataclass
class _Request:
    """What :func:`open_workspace` was asked to open, with a manifest's options filled in."""

    base: Path | None  # the workspace path (GeoPackage, folder, file), if any
    layers: Mapping[str, str | Iterable[str]] | None
    fmap: FieldMap
    dem: str | Path | None
    crs: Any
    repair_geometry: bool
    settings: dict[str, Any]  # the manifest's path, for the provenance


def _request(
    path: str | Path | None,
    *,
    layers: Mapping[str, str | Iterable[str]] | None,
    field_map: FieldMap | Mapping[str, Any] | str | Path | None,
    dem: str | Path | None,
    crs: Any,
    repair_geometry: bool,
) -> _Request:
    """The options of :func:`open_workspace` after a TOML manifest (``path``) filled the
    ones not given; checks that the workspace path exists (and a zip is safe)."""
    settings: dict[str, Any] = {}
    manifest_fields = FieldMap()  # the manifest's field_map file, then its [fields]
    if path is not None and Path(path).suffix.lower() == ".toml":
        man = load_manifest(path)
        settings["manifest"] = str(path)
        path = man.get("workspace")
        if layers is None and "layers" in man:
            layers = man["layers"]
        if dem is None and "dem" in man:
            dem = man["dem"]
        if crs is None and "crs" in man:
            crs = man["crs"]
        repair_geometry = repair_geometry or bool(man.get("repair_geometry", False))
        if "field_map" in man:
            manifest_fields = FieldMap.from_toml(man["field_map"])
        if "fields" in man:
            inline = FieldMap.from_dict(man["fields"], origin="manifest [fields]")
            manifest_fields = manifest_fields.merge(inline)

    # the caller's map (the command line's --field-map and --field) wins over the
    # manifest's, entry by entry; neither replaces the other
    fmap = manifest_fields.merge(_coerce_field_map(field_map))

    base = Path(path).expanduser() if path is not None else None
    if base is not None and not base.exists():
        raise InputOpenError(f"Workspace '{base}' does not exist. Fix: check the path.")
    if base is not None and base.suffix.lower() == ".zip":
        _check_zip(base)
    return _Request(base, layers, fmap, dem, crs, repair_geometry, settings)


def _resolve_roles(
    layers: Mapping[str, str | Iterable[str]] | None, base: Path | None
) -> dict[str, list[str]]:
    """Role -> source specs: the roles named in ``layers``, then every role a layer of
    ``base`` is named exactly like.  Raises when no role is left."""
    role_specs: dict[str, list[str]] = {}
    for role, spec in (layers or {}).items():
        if role not in schema.LAYERS:
            raise UsageError(f"Unknown layer role '{role}'. Select from {list(schema.LAYERS)}.")
        role_specs[role] = [spec] if isinstance(spec, str) else list(spec)

    # roles not named explicitly: layers with exactly the canonical name
    if base is not None:
        available = list_source_layers(base)
        for role in schema.LAYERS:
            if role not in role_specs and role in available:
                role_specs[role] = [role]
        if (
            base.suffix.lower() not in (".gpkg", ".gdb", ".zip")
            and not base.is_dir()
            and not role_specs
        ):
            raise UsageError(
                f"'{base.name}' is a single layer; say which role it plays, e.g. "
                f"--layer structures={base.stem}"
            )
    if not role_specs:
        raise ValidationError(
            _single_error(
                "no_layers",
                str(base) if base else "workspace",
                "No canonical layers found (looked for layers named "
                + ", ".join(schema.LAYERS)
                + ").",
                "Name them with --layer ROLE=LAYER, e.g. --layer structures=storm_structures.",
            )
        )
    return role_specs


def _read_sources(
    role_specs: dict[str, list[str]], base: Path | None, report: QAReport
) -> tuple[dict[str, list[tuple[Source, pd.DataFrame]]], dict[str, str]]:
    """Read every source of every role: (role -> [(source, frame)], input path -> "")."""
    raw: dict[str, list[tuple[Source, pd.DataFrame]]] = {}
    inputs: dict[str, str] = {}
    for role, specs in role_specs.items():
        for spec in specs:
            src = _resolve_source(spec, base, role)
            df = read_source(src)
            inputs.setdefault(str(src.path.resolve()), "")
            raw.setdefault(role, []).append((src, df))
            if df.attrs.get("ms4map_encoding") == "latin1":
                report.warning(
                    "non_utf8_text",
                    src.label,
                    "Attribute text is not UTF-8; it was read as Latin-1 (Windows-1252 characters may differ).",
                    fix="Save the layer with UTF-8 text (or add a .cpg file naming its encoding).",
                )
    return raw, inputs


def _working_crs(
    req: _Request, raw: dict, report: QAReport, *, no_dem: bool
) -> tuple[Path | None, CRS | None]:
    """The DEM's path and the working CRS (``--crs``, else the DEM's, else the data's);
    a geometry layer without a CRS is an error."""
    for role, items in raw.items():
        for src, df in items:
            if schema.LAYERS[role].geometry is None:
                continue
            if not isinstance(df, gpd.GeoDataFrame):
                continue  # reported as no_geometry by _canonicalise
            if df.crs is None:
                report.error(
                    "missing_crs",
                    src.label,
                    f"Layer '{src.label}' ({role}) has no coordinate reference system.",
                    fix="Define its CRS in your GIS (e.g. Define Projection) or save it as a "
                    "GeoPackage with a CRS; then re-run.",
                )

    dem_path = _find_dem(req.base, req.dem, no_dem)
    dem_crs = None
    if dem_path is not None:
        dem_crs = _dem_crs(dem_path, report)
    return dem_path, _choose_crs(req.crs, dem_crs, raw, report)


def _canonical_layers(
    raw: dict, req: _Request, work_crs: CRS | None, report: QAReport
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, str]]]]:
    """Map fields, normalise values and reproject every source; the sources of one role
    become one layer.  Returns (role -> layer, role -> source -> mapping used)."""
    out_layers: dict[str, Any] = {}
    mapping_used: dict[str, dict[str, dict[str, str]]] = {}
    for role, items in raw.items():
        frames = []
        lenient = _columns_some_layers_lack(role, items, req.fmap, report)
        for src, df in items:
            canon, used = _canonicalise(
                role,
                src,
                df,
                req.fmap,
                report,
                repair_geometry=req.repair_geometry,
                lenient=lenient,
            )
            mapping_used.setdefault(role, {})[src.label] = used
            if canon is None:
                continue
            if (
                isinstance(canon, gpd.GeoDataFrame)
                and canon.crs is not None
                and work_crs is not None
            ):
                if not canon.crs.equals(work_crs):
                    canon = canon.to_crs(work_crs)
            frames.append(canon)
        if not frames:
            continue
        if isinstance(frames[0], gpd.GeoDataFrame):
            merged = gpd.GeoDataFrame(
                pd.concat(frames, ignore_index=True), geometry="geometry", crs=work_crs
            )
        else:
            merged = pd.concat(frames, ignore_index=True)
        out_layers[role] = merged
    return out_layers, mapping_used


def _check_layers(out_layers: dict[str, Any], work_crs: CRS | None, report: QAReport) -> None:
    """Checks across the canonical layers: ids, required and legal layers, loose ends."""
    _ids(out_layers, report)
    _check_required_roles(out_layers, report)
    _check_legal_layers(out_layers, report)
    if work_crs is not None and not report.has_errors:
        _ends_without_structure(out_layers, work_crs, report)


def _attach_dem(
    dem_path: Path | None,
    work_crs: CRS | None,
    out_layers: dict[str, Any],
    inputs: dict[str, str],
    report: QAReport,
) -> Dem | None:
    """Read the DEM onto the working CRS and check it covers the layers (or report
    ``no_dem``); adds its path to ``inputs``.  Nothing is read after an error."""
    dem_obj: Dem | None = None
    if dem_path is not None and work_crs is not None and not report.has_errors:
        dem_obj = read_dem(dem_path, crs=work_crs, report=report)
        inputs[str(dem_path.resolve())] = ""
        _dem_overlap(dem_obj, out_layers, report)
        if dem_obj is not None and "parcels" in out_layers:
            _dem_coverage(dem_obj, out_layers["parcels"], report)
    elif dem_path is None:
        report.warning(
            "no_dem",
            "dem",
            "No DEM: overland flow cannot be traced; parcel drainage falls back to the nearest inlet.",
            fix="Pass --dem FILE or put <stem>_dem.tif beside the GeoPackage.",
        )
    return dem_obj


def _value_maps_used(fmap: FieldMap, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The field map's value maps of the roles read, ``{role: {column: {code: value}}}``
    (sorted, so the cache key's text is the same for the same maps): recorded in the
    settings, so the provenance names them and a changed value map changes
    :meth:`~ms4map.io.workspace.Workspace.fingerprint`."""
    out: dict[str, Any] = {}
    for role, canon in sorted(fmap.values):
        if role in raw and fmap.values[(role, canon)]:
            out.setdefault(role, {})[canon] = dict(sorted(fmap.values[(role, canon)].items()))
    return out


def _single_error(code: str, layer: str, message: str, fix: str) -> QAReport:
    r = QAReport()
    r.error(code, layer, message, fix=fix)
    return r


def _check_field_map_layers(fmap: FieldMap, raw: dict[str, list]) -> None:
    """A per-layer field-map table must name a source layer that feeds its role."""
    for role, layer in fmap.columns:
        if layer is None:
            continue
        labels = [src.label for src, _df in raw.get(role, [])]
        if layer not in labels:
            raise UsageError(
                f"The field map has a table [{role}.{layer}], but no source layer '{layer}' "
                f"feeds '{role}' (source layers of {role}: {labels or 'none'}). "
                f"Fix: correct the layer name, or use [{role}] for every source layer."
            )


def _coerce_field_map(field_map: Any) -> FieldMap:
    if field_map is None:
        return FieldMap()
    if isinstance(field_map, FieldMap):
        return field_map
    if isinstance(field_map, (str, Path)):
        return FieldMap.from_toml(field_map)
    if isinstance(field_map, Mapping):
        return FieldMap.from_dict(dict(field_map))
    raise UsageError(
        f"field_map must be a FieldMap, a dict or a TOML path, got {type(field_map).__name__}."
    )


# ---- CRS --------------------------------------------------------------------------------
def _choose_crs(crs: Any, dem_crs: CRS | None, raw: dict, report: QAReport) -> CRS | None:
    """The working CRS: ``--crs`` (projected), else the DEM's projected CRS, else the
    first projected CRS of the data, else the NAD83 UTM zone of geographic data
    (reported); ``None`` when no layer has a CRS."""
    if crs is not None:
        return _user_crs(crs)
    if dem_crs is not None and dem_crs.is_projected:
        return dem_crs
    crss: list[CRS] = []
    for role in ("structures", "conveyances", "parcels", "outfalls", "waterbodies"):
        crss.extend(df.crs for _src, df in _frames_with_crs({role: raw.get(role, [])}))
    crss.extend(df.crs for _src, df in _frames_with_crs(raw))
    projected = [c for c in crss if c.is_projected]
    if projected:
        return projected[0]
    if not crss:
        return None
    utm = _utm_zone_of(raw)
    for src, df in _frames_with_crs(raw):
        if df.crs.is_geographic:
            report.warning(
                "geographic_crs",
                src.label,
                f"Layer '{src.label}' is in a geographic CRS ({df.crs.to_string()}); it was "
                f"reprojected to {utm.name} ({utm.to_string()}) for distances and areas.",
                fix="Nothing to do; pass --crs to choose another projected CRS.",
            )
    return utm


def _frames_with_crs(raw: dict) -> Iterable[tuple[Source, gpd.GeoDataFrame]]:
    """The ``(source, frame)`` pairs of ``raw`` that are geo frames with a CRS, in order."""
    for items in raw.values():
        for src, df in items:
            if isinstance(df, gpd.GeoDataFrame) and df.crs is not None:
                yield src, df


def _user_crs(crs: Any) -> CRS:
    """The CRS ``--crs`` names; a usage error when pyproj does not know it or it is not
    projected."""
    try:
        c = CRS.from_user_input(crs)
    except Exception:
        raise UsageError(f"--crs '{crs}' is not a CRS pyproj knows (try EPSG:26918).") from None
    if not c.is_projected:
        raise UsageError(
            f"--crs {c.to_string()} is geographic; distances and areas need a projected CRS "
            "(e.g. EPSG:26918 UTM 18N, or NY State Plane EPSG:2260-2263)."
        )
    return c


def _utm_zone_of(raw: dict) -> CRS:
    """The NAD83 UTM zone (WGS 84 UTM outside zones 1-23) of the centre of the first
    non-empty layer with finite bounds; longitude -75 when there is none."""
    bounds = None
    for _src, df in _frames_with_crs(raw):
        if len(df):
            b = df.to_crs(4326).total_bounds
            if np.all(np.isfinite(b)):
                bounds = b
                break
    lon = 0.5 * (bounds[0] + bounds[2]) if bounds is not None else -75.0
    zone = int((lon + 180) // 6) + 1
    return CRS.from_epsg(26900 + zone) if 1 <= zone <= 23 else CRS.from_epsg(32600 + zone)


def _source_crs(raw: dict) -> CRS | None:
    for role in ("structures", "conveyances", "outfalls", "parcels"):
        for _src, df in raw.get(role, []):
            if isinstance(df, gpd.GeoDataFrame) and df.crs is not None:
                return df.crs
    return None


# ---- canonicalisation -------------------------------------------------------------------------
def _find_column(df: pd.DataFrame, names: Iterable[str]) -> str | None:
    lower = {str(c).lower(): c for c in df.columns}
    for n in names:
        if n in df.columns:
            return n
        if n.lower() in lower:
            return lower[n.lower()]
    return None


def _closest_columns(col: str, columns: Iterable[Any], n: int = 3) -> list[str]:
    """Column names closest to ``col`` (case-insensitive), for a typo's fix."""
    import difflib

    names = [str(c) for c in columns if str(c) != "geometry"]
    lower = {c.lower(): c for c in names}
    hits = difflib.get_close_matches(col.lower(), list(lower), n=n, cutoff=0.5)
    return [lower[h] for h in hits]


def _columns_some_layers_lack(
    role: str, items: list[tuple[Source, Any]], fmap: FieldMap, report: QAReport
) -> set[str]:
    """Role-wide field-map entries (``--field ROLE.CANON=COLUMN``) whose column some but
    not all of the role's source layers have: a warning naming the layers without it
    (the column is empty there). Returns those canonical names; a column no source
    layer has stays an error (reported per layer by :func:`_canonicalise`)."""
    shared = fmap.columns.get((role, None), {})
    out: set[str] = set()
    if len(items) < 2 or not shared:
        return out
    for canon, col in shared.items():
        # layers whose own entry for canon overrides the role-wide one do not count
        concerned = [
            (src, df)
            for src, df in items
            if isinstance(df, pd.DataFrame) and canon not in fmap.columns.get((role, src.label), {})
        ]
        has = [src.label for src, df in concerned if col in df.columns]
        lack = [src.label for src, df in concerned if col not in df.columns]
        if has and lack:
            out.add(canon)
            report.warning(
                "column_missing_in_some_layers",
                ", ".join(lack),
                f"The field map says {role}.{canon} comes from column '{col}', which "
                f"{'layer' if len(lack) == 1 else 'layers'} {', '.join(repr(x) for x in lack)} "
                f"{'does' if len(lack) == 1 else 'do'} not have (only {', '.join(map(repr, has))} "
                f"{'has' if len(has) == 1 else 'have'} it); {role}.{canon} is empty there.",
                column=col,
                fix=f"Nothing to do if those layers have no such column; otherwise map theirs "
                f"with --field {role}.{lack[0]}.{canon}=COLUMN.",
            )
    return out


#: Layers where an empty layer is a valid answer ("none"), with what the town would add.
_NONE_MEANS_EMPTY = {
    "impairments": "303(d) listings for its waters",
    "tmdl_watersheds": "TMDL watersheds",
}


def _canonicalise(
    role: str,
    src: Source,
    df: pd.DataFrame,
    fmap: FieldMap,
    report: QAReport,
    *,
    repair_geometry: bool,
    lenient: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[pd.DataFrame | None, dict[str, str]]:
    """One source layer as the canonical layer of ``role``: checked (geometry, features),
    its columns mapped, values normalised and geometries checked.  Returns the layer (or
    ``None`` when it cannot be used) and the mapping used (canonical -> source column)."""
    spec = schema.LAYERS[role]
    label = src.label
    is_geo = spec.geometry is not None
    if not _usable_layer(role, label, df, report):
        return None, {}
    used = _map_columns(role, label, df, fmap, report, lenient=lenient)
    _check_required(role, label, df, used, report)
    out = _canonical_frame(role, label, df, used)
    _normalise_values(role, label, out, used, fmap, report=report)
    if is_geo:
        gdf = gpd.GeoDataFrame(out, geometry=df.geometry.values, crs=df.crs)
        gdf = _check_geometries(role, label, gdf, report, repair_geometry)
        return gdf, used
    return out, used


def _usable_layer(role: str, label: str, df: pd.DataFrame, report: QAReport) -> bool:
    """Whether a source layer can be read as ``role``: it has geometry where the role
    needs it, and features unless an empty layer means "none" (reported either way)."""
    spec = schema.LAYERS[role]
    if spec.geometry is not None:
        if not isinstance(df, gpd.GeoDataFrame) or df.geometry.name not in df.columns:
            report.error(
                "no_geometry",
                label,
                f"Layer '{label}' ({role}) has no geometry.",
                fix=f"Give a spatial layer of {spec.geometry}s.",
            )
            return False
    if len(df) == 0 and role in _NONE_MEANS_EMPTY:
        # an empty 303(d) list or TMDL layer says "there is none": a valid answer
        report.info(
            "empty_layer",
            label,
            f"Layer '{label}' ({role}) has no features: read as 'the town has none'.",
            fix=f"If the town has {_NONE_MEANS_EMPTY[role]}, add them to the layer.",
        )
    elif len(df) == 0:
        report.error(
            "empty_layer",
            label,
            f"Layer '{label}' ({role}) has no features.",
            fix="Check that the right layer was named, or leave the role out.",
        )
        return False
    return True


def _map_columns(
    role: str,
    label: str,
    df: pd.DataFrame,
    fmap: FieldMap,
    report: QAReport,
    *,
    lenient: set[str],
) -> dict[str, str]:
    """Canonical -> source column of one layer: the field map's choices (reported when the
    column is absent or records an answer), else the alias tables'."""
    user = fmap.for_layer(role, label)
    used: dict[str, str] = {}
    for canon in schema.LAYERS[role].column_names:
        if canon in user:
            col = user[canon]
            if _user_column_usable(
                role, label, df, fmap, report, canon=canon, col=col, lenient=lenient
            ):
                used[canon] = col
            continue
        found = _find_column(df, schema.ALIASES.get(role, {}).get(canon, ()))
        if found is not None and found not in schema.ANSWER_COLUMNS and found not in used.values():
            used[canon] = found
    return used


def _user_column_usable(
    role: str,
    label: str,
    df: pd.DataFrame,
    fmap: FieldMap,
    report: QAReport,
    *,
    canon: str,
    col: str,
    lenient: set[str],
) -> bool:
    """Whether the column the field map names for ``role.canon`` can be used: an absent
    one is an error (unless another source layer has it, ``lenient``), an answer column
    a warning."""
    if col not in df.columns:
        layer_specific = canon in fmap.columns.get((role, label), {})
        if canon in lenient and not layer_specific:
            return False  # another source layer has it: warned once for the role
        close = _closest_columns(col, df.columns)
        report.error(
            "missing_column",
            label,
            f"The field map says {role}.{canon} comes from column '{col}', which layer "
            f"'{label}' does not have.",
            column=col,
            fix=(
                f"Did you mean {' or '.join(repr(c) for c in close)}? "
                f"Use --field {role}.{canon}={close[0]}."
                if close
                else f"Use one of: {[c for c in df.columns if c != 'geometry']}."
            ),
        )
        return False
    if col in schema.ANSWER_COLUMNS:
        report.warning(
            "answer_column_mapped",
            label,
            f"Column '{col}' records someone's answer about where things drain; it is "
            f"not used as {role}.{canon}.",
            column=col,
            fix="Map another column, or none.",
        )
        return False
    return True


def _check_required(
    role: str, label: str, df: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """An error for each required column of ``role`` that no source column feeds."""
    for col in schema.LAYERS[role].columns:
        if col.required and col.name not in used:
            report.error(
                "missing_column",
                label,
                f"Layer '{label}' ({role}) has no column for required '{col.name}'.",
                column=col.name,
                fix=f"Map it: --field {role}.{col.name}=YOUR_COLUMN (columns: "
                f"{[c for c in df.columns if c != 'geometry'][:30]}).",
            )


def _canonical_frame(role: str, label: str, df: pd.DataFrame, used: dict[str, str]) -> pd.DataFrame:
    """The canonical columns of ``role`` (missing ones empty), the source layer and feature
    number, then every unmapped source column (``src_`` prefixed where a name is taken);
    no geometry."""
    spec = schema.LAYERS[role]
    out = pd.DataFrame(index=df.index)
    for canon in spec.column_names:
        out[canon] = (
            df[used[canon]] if canon in used else pd.Series(pd.NA, index=df.index, dtype=object)
        )
    out["src_layer"] = label
    out["src_fid"] = np.arange(1, len(df) + 1)
    mapped_sources = set(used.values())
    geometry = df.geometry.name if spec.geometry is not None else None
    for c in df.columns:
        if c == geometry or c in mapped_sources:
            continue
        name = c if c not in out.columns else f"src_{c}"
        out[name] = df[c]
    return out


def _str_or_na(s: pd.Series) -> pd.Series:
    return schema.text_or_na(s)


def _normalise_values(
    role: str,
    label: str,
    out: pd.DataFrame,
    used: dict[str, str],
    fmap: FieldMap,
    *,
    report: QAReport,
) -> None:
    """Normalise the canonical columns of ``out`` in place: the field map's value maps,
    text columns, the role's own columns (codes, sizes, elevations ...), the id column."""
    _apply_value_maps(role, out, fmap)
    id_col = schema.LAYERS[role].id_column
    for c in schema.LAYERS[role].columns:
        if c.dtype == "str" and c.values is None:
            out[c.name] = _str_or_na(out[c.name])
    normalise = _ROLE_NORMALISERS.get(role)
    if normalise is not None:
        normalise(label, out, used, report)
    if id_col is not None and id_col in out.columns:
        out[id_col] = _str_or_na(out[id_col])


def _apply_value_maps(role: str, out: pd.DataFrame, fmap: FieldMap) -> None:
    """Replace the values of each column of ``role`` the field map has a value map for
    (blanks, null markers and unmapped values are kept)."""
    for col in schema.LAYERS[role].columns:
        canon = col.name
        vm = fmap.value_map(role, canon)
        if vm:
            keep = out[canon]
            mapped = schema.map_unique(
                keep,
                lambda v, vm=vm: vm.get(str(v).strip(), v) if not is_blank_or_null_marker(v) else v,
            )
            out[canon] = mapped.where(keep.notna(), keep)


def _normalise_structures(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Structure kinds from their codes (unknown ones 'other', reported) and elevations."""
    kinds = pd.Series(pd.unique(out["kind"].astype(object)), dtype=object)
    unknown = sorted({str(v) for v in kinds if not schema.is_known_structure_code(v)})
    out["kind"] = schema.map_unique(out["kind"], schema.normalize_structure_kind)
    out["kind"] = out["kind"].where(out["kind"].notna(), "other")
    if unknown:
        _unread_values(
            report,
            "unknown_kind_code",
            label,
            used,
            column="kind",
            message=f"Structure type codes not in the alias table were mapped to 'other': {unknown[:20]}.",
            count=int(sum(1 for v in out["kind"] if v == "other")),
            fix='Add a value map, e.g. [structures.values.kind] CODE = "catch_basin".',
        )
    for c in ("rim_elev", "invert_elev"):
        out[c] = schema.normalize_elevations(out[c])


def _normalise_conveyances(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Conveyance kinds (default from the layer name), inverts, pipe sizes (span and
    rise; sizes not understood reported), flow direction and end ids."""
    default_kind = _kind_from_layer_name(label)
    out["kind"] = schema.map_unique(
        out["kind"], lambda v: schema.normalize_conveyance_kind(v, default=default_kind)
    )
    for c in ("us_invert", "ds_invert"):
        out[c] = schema.normalize_elevations(out[c])
    sizes = schema.map_unique(out["diameter_in"], schema.parse_pipe_size)
    parseable = schema.map_unique(out["diameter_in"], schema.is_parseable_pipe_size)
    bad = out["diameter_in"][~parseable.to_numpy(dtype=bool)].astype(str).tolist()
    if bad:
        _unread_values(
            report,
            "unparsed_pipe_size",
            label,
            used,
            column="diameter_in",
            message=f"Pipe sizes not understood were left missing: {sorted(set(bad))[:10]}.",
            count=len(bad),
            fix="Use inches, e.g. 15'' or 60''X42'' (span x rise).",
        )
    rise_given = pd.to_numeric(
        schema.map_unique(out["rise_in"], lambda v: schema.parse_pipe_size(v)[0]),
        errors="coerce",
    ).to_numpy(dtype=float, na_value=np.nan)
    span = schema.map_unique(sizes, lambda t: t[0] if t else None)
    rise = schema.map_unique(sizes, lambda t: t[1] if t else None)
    out["diameter_in"] = pd.to_numeric(span, errors="coerce").astype(float)
    rise_f = pd.to_numeric(rise, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    out["rise_in"] = np.where(np.isnan(rise_given), rise_f, rise_given)
    out["flow_dir"] = schema.map_unique(out["flow_dir"], schema.normalize_flow_dir)
    for c in ("from_id", "to_id"):
        out[c] = _str_or_na(out[c])


def _normalise_outfalls(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Outfall status words."""
    out["status"] = schema.map_unique(out["status"], schema.normalize_outfall_status)


def _normalise_parcels(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Sewer service, the three-digit property class and acres."""
    out["sewer"] = schema.map_unique(out["sewer"], schema.normalize_sewer)
    out["prop_class"] = schema.map_unique(
        out["prop_class"],
        lambda v: pd.NA if is_blank_or_null_marker(v) else str(v).strip().split(".")[0].zfill(3),
    )
    out["acres"] = pd.to_numeric(out["acres"], errors="coerce").astype(float)


def _normalise_impairments(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """The listing category as text and the list year as an integer."""
    out["category"] = _str_or_na(out["category"])
    out["list_year"] = pd.to_numeric(out["list_year"], errors="coerce").astype("Int64")


def _normalise_tmdl_watersheds(
    label: str, out: pd.DataFrame, used: dict[str, str], report: QAReport
) -> None:
    """Whether stormwater is a source, as a boolean."""
    out["stormwater_source"] = schema.map_unique(out["stormwater_source"], _to_bool)


#: Role -> the normalisation of its own columns, ``(label, out, used, report)``.
_ROLE_NORMALISERS: dict[str, Callable[[str, pd.DataFrame, dict[str, str], QAReport], None]] = {
    "structures": _normalise_structures,
    "conveyances": _normalise_conveyances,
    "outfalls": _normalise_outfalls,
    "parcels": _normalise_parcels,
    "impairments": _normalise_impairments,
    "tmdl_watersheds": _normalise_tmdl_watersheds,
}


def _to_bool(v: Any) -> Any:
    """A ``stormwater_source`` cell as read: True, False, or ``pd.NA`` when blank or
    unrecognised (not known: Condition A is then undetermined, never a "no")."""
    out = schema.stormwater_source_value(v)
    return pd.NA if out is None else out


def _kind_from_layer_name(label: str) -> str:
    low = label.lower()
    for word, kind in schema.LAYER_NAME_KIND_HINTS.items():
        if word in low:
            return kind
    return "pipe"


def _check_geometries(
    role: str, label: str, gdf: gpd.GeoDataFrame, report: QAReport, repair: bool
) -> gpd.GeoDataFrame:
    spec = schema.LAYERS[role]
    allowed = _GEOM_FAMILY[spec.geometry]  # type: ignore[index]
    id_col = spec.id_column
    geom = gdf.geometry
    missing = geom.isna() | geom.is_empty
    if missing.any():
        _warn_features(
            report,
            "empty_geometry",
            label,
            _ids_for(gdf, missing, id_col),
            n=int(missing.sum()),
            what="feature(s) have no geometry and were left out.",
            fix="Digitise or delete these features.",
        )
        gdf = gdf[~missing].copy()
        geom = gdf.geometry
    types = geom.geom_type
    wrong = ~types.isin(allowed)
    if wrong.any():
        kinds = sorted(set(types[wrong]))
        report.error(
            "wrong_geometry_type",
            label,
            f"Layer '{label}' is used as {role}, which needs {spec.geometry} geometries, but "
            f"{int(wrong.sum())} feature(s) are {kinds}.",
            feature_id=", ".join(_ids_for(gdf, wrong, id_col)[:10]),
            count=int(wrong.sum()),
            fix=f"Name a {spec.geometry} layer for {role} with --layer {role}=LAYER.",
        )
        return gdf
    if spec.geometry in ("Polygon", "Line/Polygon") or role == "parcels":
        invalid = ~gdf.geometry.is_valid
        if invalid.any():
            ids = _ids_for(gdf, invalid, id_col)
            if repair:
                gdf = gdf.copy()
                fixed = shapely.make_valid(gdf.geometry.values[invalid.values])
                if spec.geometry == "Polygon":
                    fixed = np.array([_polygonal(g) for g in fixed], dtype=object)
                gdf.loc[invalid, "geometry"] = fixed
                _warn_features(
                    report,
                    "repaired_geometry",
                    label,
                    ids,
                    n=int(invalid.sum()),
                    what="invalid geometries were repaired (make_valid).",
                    fix="Check the repaired shapes; fix them in your GIS to silence this.",
                )
            else:
                reasons = shapely.is_valid_reason(gdf.geometry.values[invalid.values])
                for fid, reason in list(zip(ids, reasons, strict=False))[:50]:
                    report.error(
                        "invalid_geometry",
                        label,
                        f"Invalid geometry: {reason}.",
                        feature_id=fid,
                        fix="Repair it in your GIS, or re-run with --repair-geometry.",
                    )
                if len(ids) > 50:
                    report.error(
                        "invalid_geometry",
                        label,
                        f"... and {len(ids) - 50} more invalid geometries.",
                        count=len(ids) - 50,
                        fix="Re-run with --repair-geometry.",
                    )
    if role in ("conveyances",):
        gdf = _explode_lines(label, gdf, report)
    if spec.geometry == "Point":
        multi = gdf.geometry.geom_type == "MultiPoint"
        if multi.any():
            gdf = gdf.copy()
            gdf.loc[multi, "geometry"] = gdf.geometry[multi].centroid
    return gdf


def _unread_values(
    report: QAReport,
    code: str,
    label: str,
    used: Mapping[str, str],
    *,
    column: str,
    message: str,
    count: int,
    fix: str,
) -> None:
    """Note values of canonical ``column`` that were not understood, when the column
    came from the user's layer (``used``: canonical -> source column)."""
    if column in used:
        report.info(code, label, message, column=used[column], count=count, fix=fix)


def _warn_features(
    report: QAReport, code: str, label: str, ids: list[str], *, n: int, what: str, fix: str
) -> None:
    """A warning about ``n`` features of layer ``label`` (``"{n} {what}"``; the first 20
    ids named)."""
    report.warning(code, label, f"{n} {what}", feature_id=", ".join(ids[:20]), count=n, fix=fix)


def _polygonal(g: Any) -> Any:
    if g.geom_type in ("Polygon", "MultiPolygon"):
        return g
    polys = [p for p in getattr(g, "geoms", []) if p.geom_type in ("Polygon", "MultiPolygon")]
    return shapely.union_all(polys) if polys else g


def _explode_lines(label: str, gdf: gpd.GeoDataFrame, report: QAReport) -> gpd.GeoDataFrame:
    multi = gdf.geometry.geom_type == "MultiLineString"
    if not multi.any():
        return gdf
    gdf = gdf.copy()
    merged = shapely.line_merge(gdf.geometry.values[multi.values])
    gdf.loc[multi, "geometry"] = merged
    still = gdf.geometry.geom_type == "MultiLineString"
    n_merged = int(multi.sum() - still.sum())
    if n_merged:
        report.info(
            "multipart_merged",
            label,
            f"{n_merged} multi-part line(s) had touching parts and were merged into one line.",
            count=n_merged,
        )
    if still.any():
        ids = _ids_for(gdf, still, "conv_id")
        parts = gdf[still].explode(index_parts=True)
        k = parts.index.get_level_values(1)
        parts = parts.reset_index(level=1, drop=True)
        parts["conv_id"] = [
            pd.NA if is_blank_or_null_marker(cid) else f"{cid}.{j + 1}"
            for cid, j in zip(parts["conv_id"], k, strict=True)
        ]
        gdf = pd.concat([gdf[~still], parts]).sort_index(kind="stable")
        gdf = gpd.GeoDataFrame(gdf, geometry="geometry", crs=parts.crs)
        report.warning(
            "multipart_split",
            label,
            f"{int(still.sum())} multi-part line(s) with separate parts were split into single lines "
            "(ids get .1, .2, ...).",
            feature_id=", ".join(ids[:20]),
            count=int(still.sum()),
            fix="Check whether each part is really a separate conveyance.",
        )
    return gdf


def _ids_for(df: pd.DataFrame, mask: pd.Series, id_col: str | None) -> list[str]:
    sub = df[mask]
    out = []
    for i, (_, row) in enumerate(sub.iterrows()):
        if i >= 200:
            break
        v = row.get(id_col) if id_col else None
        out.append(
            str(v)
            if v is not None and not is_blank_or_null_marker(v)
            else f"{row['src_layer']}:{row['src_fid']}"
        )
    return out


def _ids(layers: dict[str, Any], report: QAReport) -> None:
    """Unique ids: generated for structures/conveyances/outfalls; parcels must be unique."""
    for role, df in layers.items():
        spec = schema.LAYERS[role]
        col = spec.id_column
        if col is None or col not in df.columns:
            continue
        ids = df[col]
        blank = ids.isna()
        if role == "parcels":
            if blank.any():
                report.error(
                    "missing_id",
                    "parcels",
                    f"{int(blank.sum())} parcel(s) have no parcel_id.",
                    feature_id=", ".join(_ids_for(df, blank, None)[:20]),
                    column="parcel_id",
                    count=int(blank.sum()),
                    fix="Give every parcel its SBL / print key.",
                )
            dup = ids.duplicated(keep=False) & ~blank
            if dup.any():
                for pid in sorted(set(ids[dup]))[:50]:
                    n = int((ids == pid).sum())
                    report.error(
                        "duplicate_id",
                        "parcels",
                        f"parcel_id '{pid}' is used by {n} parcels.",
                        feature_id=str(pid),
                        column="parcel_id",
                        fix="Make parcel ids unique (merge the pieces into one multipolygon, "
                        "or correct the id).",
                    )
            continue
        if not spec.generate_ids:
            continue
        gen = df["src_layer"].astype(str) + ":" + df["src_fid"].astype(str)
        if blank.any():
            for layer, n in df[blank].groupby("src_layer").size().items():
                sub = blank & (df["src_layer"] == layer)
                report.warning(
                    "missing_id",
                    str(layer),
                    f"{int(n)} {role} have no {col}; stable ids '<layer>:<row>' were generated.",
                    feature_id=", ".join(gen[sub].head(20)),
                    column=col,
                    count=int(n),
                    fix=f"Give every feature an id in '{col}' (or map the id column with --field).",
                )
        dup = ids.duplicated(keep="first") & ~blank
        if dup.any():
            for cid in sorted(set(ids[dup]))[:50]:
                rows = df.index[(ids == cid).values]
                report.warning(
                    "duplicate_id",
                    str(df.loc[rows[0], "src_layer"]),
                    f"{col} '{cid}' is used by {len(rows)} {role}; all but the first got generated ids.",
                    feature_id=str(cid),
                    column=col,
                    count=len(rows) - 1,
                    fix="Make the ids unique in your data.",
                )
        new = ids.where(~blank & ~dup, gen)
        # generated ids must not collide with real ones
        clash = new.duplicated(keep=False)
        if clash.any():
            new = new.where(~(clash & (blank | dup)), gen + "#gen")
        df[col] = new.astype(object)


#: Distance within which a conveyance end counts as touching a structure (validation only;
#: the network step has its own snap tolerance).
TOUCH_TOLERANCE_M = 1.5


def _ends_without_structure(layers: dict[str, Any], crs: CRS, report: QAReport) -> None:
    conv, struct = layers.get("conveyances"), layers.get("structures")
    if conv is None or struct is None or not len(conv) or not len(struct):
        return
    from scipy.spatial import cKDTree

    geoms = conv.geometry.values
    starts = shapely.get_coordinates(shapely.get_point(geoms, 0))
    ends = shapely.get_coordinates(shapely.get_point(geoms, -1))
    pts = shapely.get_coordinates(struct.geometry.values)
    if not len(pts) or len(starts) != len(geoms) or len(ends) != len(geoms):
        return
    tol = metres_to_crs_units(crs, TOUCH_TOLERANCE_M)
    tree = cKDTree(pts)
    d0, _ = tree.query(starts, distance_upper_bound=tol)
    d1, _ = tree.query(ends, distance_upper_bound=tol)
    loose = np.isinf(d0).astype(int) + np.isinf(d1).astype(int)
    n = int(loose.sum())
    if n:
        ids = [str(c) for c in conv["conv_id"].values[loose > 0][:20]]
        report.info(
            "end_without_structure",
            "conveyances",
            f"{n} of {2 * len(conv)} conveyance ends touch no structure within "
            f"{TOUCH_TOLERANCE_M} m ({n / (2 * len(conv)):.1%}); the network step snaps them to "
            "structures or other conveyances, or reports them.",
            feature_id=", ".join(ids),
            count=n,
            fix="Check the QA layer of `ms4map trace`/`drainage` for ends it could not connect.",
        )


def _check_required_roles(layers: dict[str, Any], report: QAReport) -> None:
    # A workspace may hold any subset of layers (an outfall inventory alone is fine); the
    # steps that need a layer say so themselves.  Here we only say what is missing.
    missing = [r for r in ("parcels", "structures", "conveyances") if r not in layers]
    if missing and layers:
        report.note(
            "Layers not in this workspace: "
            + ", ".join(missing)
            + " (steps that need them will say so)."
        )


def _check_legal_layers(layers: dict[str, Any], report: QAReport) -> None:
    """Warn for each legal layer Condition A depends on that is missing or incomplete.

    Without them the screening answers are undetermined, never "no"; the warning names
    what the layer is needed for and the fix.  Only for workspaces with parcels (the
    ones that screen sites).
    """
    if "parcels" not in layers:
        return
    for role, (what, needed, fix) in LEGAL_LAYERS.items():
        if role not in layers:
            report.warning(
                "missing_legal_layer",
                role,
                f"{what[0].upper()}{what[1:]} (layer `{role}`). It is needed for {needed}; "
                "without it Condition A is undetermined wherever it would be 'no'.",
                fix=fix[0].upper() + fix[1:] + ".",
            )
    wbs = layers.get("waterbodies")
    if wbs is not None and len(wbs):
        ids = wbs["wb_id"] if "wb_id" in wbs.columns else pd.Series(pd.NA, index=wbs.index)
        blank = ids.map(schema.id_text).isna().to_numpy()
        if blank.any():
            names = wbs["name"] if "name" in wbs.columns else pd.Series(None, index=wbs.index)
            shown = [
                str(v) if not is_blank_or_null_marker(v) else f"row {i + 1}"
                for i, v in zip(np.flatnonzero(blank), names.to_numpy()[blank], strict=True)
            ]
            report.warning(
                "waterbody_no_wb_id",
                "waterbodies",
                f"{int(blank.sum())} waterbod(ies) have no `wb_id` (PWL ID): "
                f"{', '.join(shown[:10])}. Condition A for runoff reaching them directly is "
                "undetermined (no 303(d) listing can be looked up).",
                feature_id=", ".join(shown[:50]),
                count=int(blank.sum()),
                column="wb_id",
                fix="Fill `wb_id` with the NYSDEC PWL ID (NNNN-NNNN) of each waterbody.",
            )
    of = layers.get("outfalls")
    if of is None:
        report.warning(
            "missing_legal_layer",
            "outfalls",
            "No outfalls layer: outfalls are inferred from outfall structures and pipe ends "
            "at a waterbody, and they carry no receiving water or PWL ID, so Condition A "
            "for what drains through them is undetermined.",
            fix="Add the `outfalls` layer with `receiving_water` and `pwl_id` for each outfall.",
        )
        return
    wb = layers.get("waterbodies")
    unique_names: set[str] = set()
    if wb is not None and "name" in wb.columns and "wb_id" in wb.columns:
        named = wb.dropna(subset=["name", "wb_id"])
        low = named["name"].astype(str).str.strip().str.lower()
        n_ids = named.groupby(low)["wb_id"].nunique()
        unique_names = set(n_ids[n_ids == 1].index)
    pwl = of["pwl_id"] if "pwl_id" in of.columns else pd.Series(pd.NA, index=of.index)
    rw = (
        of["receiving_water"]
        if "receiving_water" in of.columns
        else pd.Series(pd.NA, index=of.index)
    )
    imp = layers.get("impairments")
    listed_ids: set[str] = set()
    if imp is not None and "wb_id" in imp.columns:
        listed_ids = {t for t in map(schema.id_text, imp["wb_id"]) if t is not None}
    given = pwl.map(schema.id_text)
    bad_id = given.notna() & given.map(
        lambda t: t is not None and schema.normalize_pwl_id(t) is None and t not in listed_ids
    ).astype(bool)
    for i in np.flatnonzero(bad_id.to_numpy()):
        fid = of["outfall_id"].iloc[i] if "outfall_id" in of.columns else None
        fid = None if is_blank_or_null_marker(fid) else str(fid)
        report.warning(
            "outfall_bad_pwl_id",
            "outfalls",
            f"Outfall {fid or f'at row {i + 1}'}: `pwl_id` {given.iloc[i]!r} is not a NYSDEC "
            "PWL ID (NNNN-NNNN) and is not in the 303(d) list (`impairments`): Condition A "
            "for what drains through it is undetermined.",
            feature_id=fid,
            column="pwl_id",
            fix="Write the outfall's `pwl_id` as NNNN-NNNN (e.g. 1101-0012, without the "
            "'NY' of ATTAINS, which is read as well), or clear it and name the water in "
            "`receiving_water`.",
        )
    has_pwl = given.notna()  # a bad id has its own warning above
    by_name = rw.map(
        lambda v: not is_blank_or_null_marker(v) and str(v).strip().lower() in unique_names
    )
    bad = ~(has_pwl | by_name)
    if bad.any():
        ids = [str(v) for v in of.loc[bad, "outfall_id"]] if "outfall_id" in of.columns else []
        report.warning(
            "outfall_no_receiving_water",
            "outfalls",
            f"{int(bad.sum())} outfall(s) have no `pwl_id` and no `receiving_water` naming "
            "exactly one waterbody: Condition A for what drains through them is undetermined.",
            feature_id=", ".join(ids[:50]) or None,
            count=int(bad.sum()),
            column="pwl_id",
            fix="Fill `pwl_id` (NYSDEC PWL ID NNNN-NNNN) or `receiving_water` of these outfalls.",
        )


# ---- DEM ---------------------------------------------------------------------------------------
def _find_dem(base: Path | None, dem: Any, no_dem: bool) -> Path | None:
    if no_dem:
        return None
    if dem is not None:
        p = Path(dem).expanduser()
        if not p.exists():
            raise InputOpenError(f"DEM '{p}' does not exist. Fix: check the --dem path.")
        return p
    if base is not None and base.is_file():
        cand = base.with_name(f"{base.stem}_dem.tif")
        if cand.exists():
            return cand
    return None


def _dem_crs(path: Path, report: QAReport) -> CRS | None:
    import rasterio

    try:
        with rasterio.open(path) as src:
            if src.crs is None:
                report.error(
                    "missing_crs",
                    "dem",
                    f"DEM '{path.name}' has no CRS.",
                    fix="Assign its CRS (gdal_edit.py -a_srs EPSG:26918 dem.tif) and re-run.",
                )
                return None
            return CRS.from_user_input(src.crs.to_wkt())
    except rasterio.errors.RasterioIOError as exc:
        raise _dem_open_error(path, exc) from None


def _dem_open_error(path: Path, exc: Exception) -> InputOpenError:
    """The error for a DEM GDAL cannot open (not a raster, or its header is cut off)."""
    return InputOpenError(
        f"DEM '{path}' cannot be opened: {_short(exc).rstrip('.')}. Fix: give a GeoTIFF (or another "
        "raster GDAL reads; `gdalinfo FILE` shows whether it can); a file cut off while "
        "copying or downloading must be copied or exported again."
    )


def warp_bilinear(
    array: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    dst_transform: Any,
    dst_crs: Any,
    shape: tuple[int, int],
) -> np.ndarray:
    """``array`` (NaN = no data) on the grid ``transform`` of ``crs``, resampled bilinearly
    onto the grid ``dst_transform`` of ``dst_crs`` with ``shape`` rows and columns (NaN
    where nothing lands): the DEM's warp to the working CRS and the hillshade's to web
    mercator."""
    from rasterio.warp import Resampling, reproject

    out = np.full(shape, np.nan, dtype="float64")
    reproject(
        array,
        out,
        src_transform=transform,
        src_crs=crs,
        dst_transform=dst_transform,
        dst_crs=dst_crs,
        src_nodata=np.nan,
        dst_nodata=np.nan,
        resampling=Resampling.bilinear,
    )
    return out


def read_dem(path: str | Path, *, crs: Any = None, report: QAReport | None = None) -> Dem:
    """Read a DEM into a :class:`~ms4map.io.workspace.Dem`, warping it into ``crs`` if needed.

    Nodata becomes NaN, and so do values no elevation on Earth can have (voids written
    as -9999 without a nodata tag, see :func:`_mask_implausible`).  Findings
    (implausible values, reprojection, nodata holes, unknown vertical units) go to
    ``report``.

    Parameters
    ----------
    path : str or Path
        The DEM raster (band 1 is read).
    crs : optional
        The CRS to warp it into (the working CRS); ``None`` keeps the DEM's.
    report : QAReport, optional
        Receives the findings (a new report when ``None``).

    Returns
    -------
    Dem

    Raises
    ------
    InputOpenError
        GDAL cannot open or read the file.
    DataError
        No CRS, a geographic CRS whose coordinates are no degrees, a warp GDAL cannot
        do, no cells or no valid cell; each message names the file and the fix.
    """
    import rasterio

    report = report if report is not None else QAReport()
    p = Path(path)
    try:
        # NUM_THREADS: GDAL decompresses the blocks of a compressed GeoTIFF on every core
        src = rasterio.open(p, num_threads="ALL_CPUS")
    except rasterio.errors.RasterioIOError as exc:
        raise _dem_open_error(p, exc) from None
    with src:
        if src.crs is None:
            raise DataError(
                f"DEM '{p.name}' has no CRS. Fix: assign one (gdal_edit.py -a_srs EPSG:... {p})."
            )
        src_crs = CRS.from_user_input(src.crs.to_wkt())
        target = CRS.from_user_input(crs) if crs is not None else src_crs
        _check_degrees(p, src_crs, src, target)
        arr = _read_band(src, p)
        transform = src.transform
        unit = (src.units[0] if src.units and src.units[0] else None) or _vertical_unit(src_crs)
        unit_name = None if unit is None else str(unit)
        z_to_m = _z_to_m(unit_name)
        _mask_implausible(arr, p, nodata=src.nodata, unit=unit_name, z_to_m=z_to_m, report=report)
        if not src_crs.equals(target):
            arr, transform = _warp_dem(arr, src, p, target, report)
    if arr.size == 0:
        raise DataError(f"DEM '{p.name}' has no cells. Fix: give the DEM of this area with --dem.")
    finite_any = bool(np.isfinite(arr).any())
    if finite_any and np.isnan(arr).any():
        interior = _interior_nodata(arr)
        if interior:
            report.warning(
                "dem_nodata",
                "dem",
                f"DEM has {interior} nodata cell(s) inside its extent; flow there is unknown.",
                feature_id="dem",
                count=interior,
                fix="Fill the holes (e.g. gdal_fillnodata) or accept 'unknown' drainage there.",
            )
    if not finite_any:
        raise DataError(
            f"DEM '{p.name}' has only nodata cells. Fix: check it with `gdalinfo -stats {p}`: "
            "if its elevations equal the nodata value, correct the tag (gdal_edit.py "
            f"-a_nodata VALUE {p}, or -unsetnodata); otherwise export the DEM of this area "
            "again, or give another one with --dem."
        )
    if unit is None:
        report.warning(
            "vertical_units_unknown",
            "dem",
            "The DEM does not say its vertical unit; metres are assumed.",
            fix="Set the band unit (gdal_edit.py -units metre dem.tif) or use a compound CRS.",
        )
    return Dem(
        array=arr,
        transform=transform,
        crs=CRS.from_user_input(crs) if crs else src_crs,
        path=p,
        vertical_unit=unit_name,
        z_to_m=z_to_m,
    )


def _z_to_m(unit: str | None) -> float:
    """Metres per vertical unit of the DEM (1 for metres, an unknown or other unit)."""
    if unit is None:
        return 1.0
    low = unit.lower()
    if "us survey" in low or low in ("ftus", "us_ft", "us-ft"):
        return 1200 / 3937
    if "f" in low and ("oot" in low or "eet" in low or low in ("ft", "feet")):
        return 0.3048
    return 1.0


def _is_metre(unit: str | None) -> bool:
    """Whether a band unit names metres."""
    low = (unit or "").strip().lower()
    return low in ("m", "metre", "meter", "metres", "meters") or low.startswith("metre")


def _projected_epsg(crs: CRS) -> str:
    """``EPSG:xxxx`` of a projected CRS for a fix, else a placeholder."""
    if crs.is_projected:
        code = crs.to_epsg()
        return f"EPSG:{code}" if code else crs.to_string()
    return "EPSG:<the projected CRS of its coordinates>"


def _check_degrees(p: Path, src_crs: CRS, src: Any, target: CRS) -> None:
    """A DEM tagged with a geographic CRS whose extent is no longitudes/latitudes (a
    wrong CRS assigned to projected metres) is a :class:`DataError` naming the fix.

    One cell beyond +-180 / +-90 is allowed (global grids whose cell centres lie on the
    poles or the antimeridian reach half a cell past them).
    """
    if not src_crs.is_geographic:
        return
    b = src.bounds
    rx, ry = abs(src.res[0]), abs(src.res[1])
    if max(abs(b.left), abs(b.right)) <= 180 + rx and max(abs(b.bottom), abs(b.top)) <= 90 + ry:
        return
    layers = f"the layers' {target.name}" if target.is_projected else "your layers' CRS"
    raise DataError(
        f"DEM '{p.name}' is tagged with the geographic CRS {src_crs.name} "
        f"({src_crs.to_string()}), but its extent {_fmt_bounds(b)} is not in degrees (a "
        "longitude lies within +-180, a latitude within +-90): the CRS assigned to it is "
        "wrong, its coordinates are projected (metres or feet). Fix: assign the CRS its "
        f"coordinates are in, e.g. {layers}: gdal_edit.py -a_srs {_projected_epsg(target)} "
        f"{p}, then re-run."
    )


def _warp_dem(arr: np.ndarray, src: Any, p: Path, target: CRS, report: QAReport) -> tuple:
    """``arr`` (the band of ``src``) warped to ``target``, with its transform; a warp
    GDAL cannot do is a :class:`DataError` naming the file and the fix."""
    import rasterio
    from rasterio._err import CPLE_BaseError
    from rasterio.warp import calculate_default_transform

    src_crs = CRS.from_user_input(src.crs.to_wkt())
    try:
        dst_t, w, h = calculate_default_transform(
            src_crs, target, src.width, src.height, *src.bounds
        )
        out = warp_bilinear(
            arr, src.transform, src_crs, dst_transform=dst_t, dst_crs=target, shape=(h, w)
        )
    except (rasterio.errors.RasterioError, rasterio.errors.CRSError, CPLE_BaseError) as exc:
        raise DataError(
            f"DEM '{p.name}' cannot be warped from {src_crs.name} to the working CRS "
            f"{target.name} ({_short(exc).rstrip('.')}); its CRS tag may not match its "
            f"coordinates (extent {_fmt_bounds(src.bounds)}). Fix: check `gdalinfo {p}`; "
            "assign the CRS its coordinates are in (gdal_edit.py -a_srs "
            f"{_projected_epsg(target)} {p}), or give the DEM in the working CRS "
            f"(gdalwarp -t_srs {_projected_epsg(target)} {p} dem_fixed.tif)."
        ) from None
    report.warning(
        "dem_reprojected",
        "dem",
        f"DEM '{p.name}' is in {src_crs.name}; it was warped to the working CRS {target.name} "
        "(bilinear).",
        fix="Provide the DEM in the working CRS to avoid resampling.",
    )
    if src_crs.is_geographic:
        report.warning(
            "dem_geographic",
            "dem",
            "DEM is in a geographic CRS; cell sizes in degrees were converted by warping.",
            fix="Provide a projected DEM.",
        )
    return out, dst_t


#: Elevations (metres) outside this range exist nowhere on Earth (the Dead Sea shore is
#: at -430 m, Everest at 8,849 m): such values in a DEM are voids (-9999, -32768,
#: -3.4e38 written without a nodata tag) and are read as nodata.
PLAUSIBLE_ELEVATION_M = (-500.0, 10_000.0)


def _plausible_range(unit: str | None, z_to_m: float) -> tuple[float, float]:
    """The plausible elevations in the DEM's vertical unit.  For a DEM that does not say
    its unit (or names one ms4map does not convert), the upper bound is 10,000 m in
    feet, so the high ground of a DEM in feet that does not say so is kept."""
    lo, hi = PLAUSIBLE_ELEVATION_M
    if z_to_m != 1.0:
        return lo / z_to_m, hi / z_to_m
    if not _is_metre(unit):
        return lo, hi / 0.3048
    return lo, hi


def _plausible_text(lo: float, hi: float, unit: str | None, z_to_m: float) -> str:
    """The plausible range of :func:`_plausible_range` in words, for the messages."""
    if z_to_m != 1.0:
        return f"{lo:,.0f} .. {hi:,.0f} {unit} (-500 .. 10,000 m)"
    if _is_metre(unit):
        return f"{lo:,.0f} .. {hi:,.0f} m"
    said = "does not say its unit" if unit is None else f"has the unit '{unit}', not converted"
    return f"{lo:,.0f} .. {hi:,.0f}: the DEM {said}, so up to 10,000 m in feet is kept"


def _fmt_value(v: float) -> str:
    """A raster value as typed in a GDAL command (``-9999``, ``-3.4028234663852886e+38``)."""
    if np.isfinite(v) and abs(v) < 1e15 and float(v).is_integer():
        return str(int(v))
    return repr(float(v))


def _mask_implausible(
    arr: np.ndarray,
    p: Path,
    *,
    nodata: float | None,
    unit: str | None,
    z_to_m: float,
    report: QAReport,
) -> None:
    """Set the cells of ``arr`` (in place) whose value no elevation can have to NaN.

    The range is :data:`PLAUSIBLE_ELEVATION_M` in the DEM's vertical unit
    (:func:`_plausible_range`).  Such cells are voids whose value was written without
    a nodata tag (or with another tag); taken as elevations they would be pits
    kilometres deep, filled into "closed depressions".  A warning (``dem_implausible_values``)
    names the file, the values, the cell count and the fix; a DEM with no plausible
    cell left is a :class:`DataError`.
    """
    lo, hi = _plausible_range(unit, z_to_m)
    bad = np.less(arr, lo)
    bad |= np.greater(arr, hi)  # NaN compares False: already nodata
    n = int(np.count_nonzero(bad))
    if n == 0:
        return
    vmin = float(np.min(arr, where=bad, initial=np.inf))
    vmax = float(np.max(arr, where=bad, initial=-np.inf))
    arr[bad] = np.nan
    del bad
    values = (
        f"the value {_fmt_value(vmin)}"
        if vmin == vmax
        else f"values from {_fmt_value(vmin)} to {_fmt_value(vmax)}"
    )
    where = _plausible_text(lo, hi, unit, z_to_m)
    feet = (
        f"; if they are real elevations in feet, set the DEM's unit (gdal_edit.py -units foot {p})"
        if _is_metre(unit) and vmax > hi
        else ""
    )
    if nodata is None and vmin == vmax and np.isfinite(vmin):
        fix = f"tag the voids as nodata: gdal_edit.py -a_nodata {_fmt_value(vmin)} {p}"
    else:
        tag = "-9999" if nodata is None else _fmt_value(nodata)
        fix = (
            f"set the voids to one nodata value and tag it: gdal_calc.py -A {p} "
            f'--outfile=dem_fixed.tif --calc="where((A<{lo:g})|(A>{hi:g}),{tag},A)" '
            f"--NoDataValue={tag}"
        )
    tagged = "has no nodata tag" if nodata is None else f"has the nodata tag {_fmt_value(nodata)}"
    if not np.isfinite(arr).any():
        raise DataError(
            f"DEM '{p.name}' holds no plausible elevation: all {n:,} of its valid cells hold "
            f"{values}, outside {where} (it {tagged}), so it has no elevation to route on. "
            f"Fix: give a DEM with the elevations of this area (--dem){feet}."
        )
    report.warning(
        "dem_implausible_values",
        "dem",
        f"DEM '{p.name}' {tagged}, but {n:,} cell(s) hold {values}, an implausible "
        f"elevation (outside {where}); they were read as nodata (voids), so drainage "
        "there is unknown, and flow reaching them leaves the DEM (off_dem).",
        feature_id="dem",
        count=n,
        fix=f"If these are voids, {fix}{feet}.",
    )


def _read_band(src: Any, p: Path) -> np.ndarray:
    """Band 1 as float64 with NaN where GDAL's mask says invalid (nodata, mask band).

    The same values as ``src.read(1, masked=True).astype("float64").filled(np.nan)``,
    without the float32 copy, the masked array and the filled copy: GDAL widens into
    one float64 array and the mask (``read_masks``) is only read when the band has
    one.  A file whose blocks cannot be read (truncated, corrupt) is an
    :class:`~ms4map.core.errors.InputOpenError` naming it, not a traceback.
    """
    import rasterio
    from rasterio.enums import MaskFlags

    try:
        arr = src.read(1, out_dtype="float64")
        flags = src.mask_flag_enums[0]
        if list(flags) == [MaskFlags.nodata]:
            # GDAL's mask is "equals the nodata value": test it on the values read
            # (read_masks would decompress every block a second time)
            nodata = src.nodata
            if np.isnan(nodata):
                pass  # NaN is already NaN
            else:
                if np.dtype(src.dtypes[0]) == np.float32:
                    nodata = float(np.float32(nodata))  # as the band stores it
                arr[arr == nodata] = np.nan
        elif MaskFlags.all_valid not in flags:
            arr[src.read_masks(1) == 0] = np.nan
    except rasterio.errors.RasterioIOError as exc:
        # rasterio's own message says "see previous exception": GDAL's is the cause
        detail = _short(exc.__cause__ or exc).rstrip(".")
        raise InputOpenError(
            f"DEM '{p}' cannot be read ({detail}). Fix: the file is truncated or corrupt; "
            "copy or export it again (gdalinfo -checksum shows whether GDAL can read every "
            "block)."
        ) from None
    return arr


def _vertical_unit(crs: CRS) -> str | None:
    if crs.is_compound:
        for sub in crs.sub_crs_list:
            if sub.is_vertical:
                return sub.axis_info[0].unit_name
    return None


def _interior_nodata(arr: np.ndarray) -> int:
    """NaN cells not connected to the DEM's outer border (holes, not ragged edges)."""
    from scipy import ndimage

    nan = np.isnan(arr)
    lab, n = ndimage.label(nan)
    if n == 0:
        return 0
    border = set(np.unique(np.concatenate([lab[0], lab[-1], lab[:, 0], lab[:, -1]]))) - {0}
    inner = ~np.isin(lab, list(border)) & nan
    return int(inner.sum())


def _dem_overlap(dem: Dem, layers: dict[str, Any], report: QAReport) -> None:
    """A DEM that lies somewhere else entirely is an error, not 100% off-DEM results."""
    frames = [df for df in layers.values() if isinstance(df, gpd.GeoDataFrame) and len(df)]
    if not frames:
        return
    b = np.array([f.total_bounds for f in frames])
    data = shapely.box(b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max())
    grid = shapely.box(*dem.bounds)
    if not data.intersects(grid):
        name = dem.path.name if dem.path else "DEM"
        report.error(
            "dem_no_overlap",
            "dem",
            f"DEM '{name}' does not overlap the layers at all (DEM extent "
            f"{_fmt_bounds(dem.bounds)}, layers {_fmt_bounds(data.bounds)} in {dem.crs.name}).",
            feature_id="dem",
            fix="Give the DEM of this area with --dem, or check the layers' CRS.",
        )


def _fmt_bounds(b: Any) -> str:
    return "(" + ", ".join(f"{v:,.0f}" for v in b) + ")"


#: Parcels closer than this to the DEM's outer edge are counted by the coverage warning.
_EDGE_MARGIN_M = 100.0


def _dem_coverage(dem: Dem, parcels: gpd.GeoDataFrame, report: QAReport) -> None:
    from rasterio import features

    x0, y0, x1, y1 = dem.bounds
    finite = np.isfinite(dem.array)
    if finite.all():
        # no nodata cell: the covered area is the grid's rectangle (what polygonizing
        # the all-valid mask gives, without the 36M-cell pass of features.shapes)
        covered = shapely.box(x0, y0, x1, y1)
    else:
        valid = finite.astype("uint8")
        shapes = [
            g for g, v in features.shapes(valid, mask=finite, transform=dem.transform) if v == 1
        ]
        if not shapes:
            return
        covered = shapely.union_all([shapely.geometry.shape(s) for s in shapes])
    del finite
    covered = shapely.buffer(covered, dem.cellsize * 0.01)
    geoms = parcels.geometry.values
    inside = shapely.covered_by(geoms, covered)
    out_ids = [str(pid) for pid, ok in zip(parcels["parcel_id"], inside, strict=True) if not ok]
    # parcels near the DEM's outer edge: runoff that reaches the edge leaves the DEM, so
    # their answer may lack a part although the DEM covers them (drainage counts them)
    margin = metres_to_crs_units(parcels.crs, _EDGE_MARGIN_M)
    near = inside & (shapely.distance(geoms, shapely.box(x0, y0, x1, y1).boundary) < margin)
    if out_ids or near.any():
        n_near = int(near.sum())
        report.warning(
            "dem_not_covering",
            "parcels",
            f"{len(out_ids)} parcel(s) are not fully covered by the DEM; drainage of the "
            f"uncovered part is reported as off_dem. {n_near} more lie within "
            f"{_EDGE_MARGIN_M:g} m of the DEM's edge, where runoff may flow off it; "
            "`ms4map drainage` counts the parcels whose runoff does, and names the edge "
            "(QA drainage_partly_unknown).",
            feature_id=", ".join(out_ids[:50]),
            count=len(out_ids) + n_near,
            fix="Use a DEM that covers every parcel with a margin of a few hundred metres "
            "beyond the town.",
        )


# ======================================================================================
# Writing outputs
# ======================================================================================
def check_output_path(
    path: str | Path,
    *,
    protected: Iterable[str | Path] = (),
    suffixes: Iterable[str] | None = None,
    option: str = "--out",
    ms4map_gpkg: bool = True,
) -> Path:
    """Resolve an output path, refusing the user's input files; create its folder.

    Parameters
    ----------
    path : str or Path
        Where the user asked for output.
    protected : iterable of paths
        Input files (a workspace's ``inputs``): never written.  A shapefile's
        sidecar files (``.dbf``, ``.shx``, ``.prj``, ...) are protected with it.
    suffixes : iterable of str, optional
        Allowed suffixes, e.g. ``(".csv",)``.
    option : str
        The option name, for messages.
    ms4map_gpkg : bool
        An existing ``.gpkg`` must be an ms4map output (:func:`check_ms4map_output`);
        ``False`` for a records store or a backup, which check their own.

    Raises
    ------
    UsageError
        The path is an input file, has the wrong suffix, or is an existing GeoPackage
        ms4map did not write (exit 4).
    OutputError
        Its folder cannot be created (no permission, a read-only file system, a file
        in the way): the output cannot be written (exit 3).
    """
    out = Path(path).expanduser().resolve()
    guarded: set[Path] = set()
    for p in protected:
        q = Path(p).expanduser().resolve()
        guarded.add(q)
        if q.suffix.lower() in (".shp", ".tif", ".tiff", ".gpkg"):
            guarded |= {
                q.with_suffix(ext)
                for ext in (
                    ".shp",
                    ".shx",
                    ".dbf",
                    ".prj",
                    ".cpg",
                    ".qmd",
                    ".tfw",
                    ".aux.xml",
                    ".ovr",
                )
            }
            guarded |= {q.with_name(q.name + ext) for ext in ("-wal", "-shm", ".aux.xml", ".ovr")}
    if out in guarded or any(out.is_relative_to(g) for g in guarded if g.is_dir()):
        raise UsageError(
            f"Refusing to write into input file '{out.name}' ({option}); ms4map never "
            "modifies your data. Fix: choose another output path."
        )
    if suffixes is not None:
        allowed = tuple(s.lower() for s in suffixes)
        if out.suffix.lower() not in allowed:
            raise UsageError(f"{option} '{out.name}' must end in {' or '.join(allowed)}.")
    if out.exists() and out.is_dir():
        raise UsageError(f"{option} '{out}' is a folder; give a file name.")
    if ms4map_gpkg and out.suffix.lower() == ".gpkg":
        check_ms4map_output(out, option=option)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{option}: cannot create folder '{out.parent}': {exc.strerror or exc}. Fix: "
            "choose a folder you may write to (not on a read-only disk), or create it and "
            "check its permissions, then rerun; nothing was written."
        ) from None
    return out


def write_text_output(
    path: str | Path,
    text: str,
    *,
    protected: Iterable[str | Path] = (),
    option: str = "--out",
    suffixes: Iterable[str] | None = None,
) -> Path:
    """Write a text output (CSV, Markdown, JSON) atomically after :func:`check_output_path`."""
    out = check_output_path(path, protected=protected, suffixes=suffixes, option=option)
    with writing(out):
        fd, tmp_name = tempfile.mkstemp(suffix=out.suffix, dir=out.parent, prefix=".ms4map-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp_name, 0o666 & ~umask)  # mkstemp makes 0600; ordinary files
            os.replace(tmp_name, out)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
    return out


@contextlib.contextmanager
def writing(out: Path) -> Iterator[None]:
    """Report an operating-system error while writing ``out`` as :class:`OutputError`,
    with the file and the fix (an ms4map error passes through as it is)."""
    try:
        yield
    except Ms4mapError:
        raise
    except OSError as exc:
        raise OutputError(
            f"Cannot write '{out}': {exc.strerror or exc}. Fix: check that the disk has "
            "space and the folder is writable (a network share still connected), then "
            "rerun; an earlier output there is unchanged."
        ) from exc


def write_outputs(
    out_path: str | Path,
    layers: Mapping[str, pd.DataFrame],
    *,
    provenance: Mapping[str, Any],
    inputs: Iterable[str | Path] = (),
    option: str = "--out",
) -> Path:
    """Write result layers and their provenance to a GeoPackage.

    The file is written to a temporary name and moved into place, so an existing
    output is never left half-written.  Refuses to write over any input file.
    Layers of an earlier run that this one does not replace are kept, and so is
    their provenance: the ``provenance`` table has one row per layer (``layer``,
    ``created``, ``value`` = the JSON record of the run that wrote it).  Each spatial
    layer written gets its default QGIS style in ``layer_styles`` (:mod:`ms4map.io.styles`).
    An existing file ms4map did not write is refused (:func:`check_ms4map_output`);
    ``option`` names the option in the messages.
    """
    protected = list(inputs) + list(provenance.get("inputs", {}))
    out = check_output_path(out_path, protected=protected, suffixes=(".gpkg",), option=option)
    with writing(out):
        return _write_outputs(out, layers, provenance)


def check_ms4map_output(
    out: str | Path, *, option: str = "--out", damaged_ok: bool = False
) -> None:
    """Refuse to add layers to an existing file that is not an ms4map output.

    ms4map adds its layers to a GeoPackage only when it wrote that file itself (it has
    the ``provenance`` table of :func:`write_outputs`): a GeoPackage of the user's, an
    IDDE records store or any other file is never changed.  ``damaged_ok``: a file
    that is not a readable database passes (a batch town's own output cut short, which
    its run replaces whole).

    Raises
    ------
    UsageError
        Naming the file, what it is and the fix.
    """
    path = Path(out)
    if not path.is_file() or path.stat().st_size == 0:  # nothing there to lose
        return
    what = None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error:
        if damaged_ok:
            return
        what = "is not a GeoPackage"
    else:
        if "records_meta" in tables:
            what = "is an IDDE records store"
        elif "provenance" not in tables or not _provenance_rows(path):
            what = "was not written by ms4map (it has no provenance table)"
    if what:
        raise UsageError(
            f"{option} '{path}' exists and {what}: ms4map adds its layers only to files it "
            "wrote itself, and never changes another file. Fix: give a new file name, or "
            "move that file away first."
        )


def _write_outputs(
    out: Path, layers: Mapping[str, pd.DataFrame], provenance: Mapping[str, Any]
) -> Path:
    fd, tmp_name = tempfile.mkstemp(suffix=".gpkg", dir=out.parent, prefix=".ms4map-")
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    record = json.dumps(dict(provenance), default=str, indent=1)
    created = str(provenance.get("created", ""))
    try:
        rows: dict[str, tuple[str, str]] = {}
        if out.exists():  # keep layers (and their provenance) that this run does not replace
            import shutil

            shutil.copyfile(out, tmp)
            rows = {k: v for k, v in _provenance_rows(out).items() if k not in layers}
        arrow = _have_pyarrow()  # the same layers, written faster through Arrow
        with _unjournaled_sqlite():
            for name, df in layers.items():
                frame = df
                if isinstance(frame, gpd.GeoDataFrame):
                    frame = _gpkg_safe(frame)
                else:
                    frame = _gpkg_safe(pd.DataFrame(frame))
                _write_layer(frame, tmp, name, arrow=arrow)
                rows[name] = (created, record)
            prov = pd.DataFrame(
                {
                    "layer": list(rows),
                    "created": [v[0] for v in rows.values()],
                    "value": [v[1] for v in rows.values()],
                }
            )
            pyogrio.write_dataframe(prov, tmp, layer="provenance", driver="GPKG")
        from .styles import write_layer_styles  # QGIS styles (layer_styles) of these layers

        write_layer_styles(tmp, list(layers))
        replace_durably(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


#: GDAL's SQLite settings while :func:`write_outputs` fills its temporary GeoPackage: no
#: rollback journal and no sync per transaction (measured: about 180 fsyncs per benchmark
#: town's six layers).  A failed write leaves only the temporary file, which is removed;
#: the finished file is synced once before it replaces the output (:func:`replace_durably`).
_TEMP_SQLITE = {"OGR_SQLITE_SYNCHRONOUS": "OFF", "OGR_SQLITE_JOURNAL": "OFF"}


@contextlib.contextmanager
def _unjournaled_sqlite() -> Iterator[None]:
    """Set :data:`_TEMP_SQLITE` in GDAL's (process-wide) configuration, then restore it.

    A GeoPackage another thread writes meanwhile through GDAL gets them too; ms4map's
    other GDAL writes go to temporary files as well, and the records store writes
    through Python's sqlite3, which these options do not touch.
    """
    saved = {k: pyogrio.get_gdal_config_option(k) for k in _TEMP_SQLITE}
    pyogrio.set_gdal_config_options(_TEMP_SQLITE)
    try:
        yield
    finally:
        pyogrio.set_gdal_config_options(saved)


def replace_durably(tmp: Path, out: Path) -> None:
    """Move the finished ``tmp`` over ``out``: its bytes on disk first, then the rename,
    then the folder's entry, so a crash leaves the old output or the new one, whole.

    A file system that cannot sync (some network shares answer ``EINVAL``) gets the
    rename alone, as before; an I/O error while syncing is raised and ``out`` is kept.
    """
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_SYNC:
            raise
    finally:
        os.close(fd)
    os.replace(tmp, out)
    if os.name == "posix":
        with contextlib.suppress(OSError):  # a folder some file systems cannot sync
            dfd = os.open(out.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)


#: ``fsync`` errors meaning "this file system does not sync", not "the write failed".
_NO_SYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF}


def _write_layer(frame: pd.DataFrame, path: Path, name: str, *, arrow: bool) -> None:
    """One layer into a GeoPackage; through Arrow when possible, else row by row (GDAL)."""
    if arrow:
        try:
            pyogrio.write_dataframe(frame, path, layer=name, driver="GPKG", use_arrow=True)
            return
        except Exception:  # noqa: BLE001 - e.g. a mixed-type column Arrow cannot type
            written = path.exists() and name in pyogrio.list_layers(path)[:, 0]
            if written:
                raise  # the layer was (partly) written: do not write it twice
    pyogrio.write_dataframe(frame, path, layer=name, driver="GPKG")


def _have_pyarrow() -> bool:
    """Whether pyarrow is installed (pyogrio then writes layers through Arrow)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def _provenance_rows(path: Path) -> dict[str, tuple[str, str]]:
    try:
        with sqlite3.connect(path) as con:
            cols = [r[1] for r in con.execute("PRAGMA table_info(provenance)")]
            if "layer" not in cols:
                return {}
            return {
                str(layer): (str(created), str(value))
                for layer, created, value in con.execute(
                    "SELECT layer, created, value FROM provenance"
                )
            }
    except sqlite3.Error:
        return {}


def _gpkg_safe(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for c in out.columns:
        if c == getattr(out, "_geometry_column_name", None):
            continue
        s = out[c]
        if s.dtype == object:
            out[c] = s.map(
                lambda v: (
                    v
                    if v is None or isinstance(v, (str, int, float, bool)) or pd.isna(v)
                    else str(v)
                )
            )
    return out


def read_provenance(path: str | Path, layer: str | None = None) -> dict[str, Any]:
    """The provenance record of one output layer (default: the most recently written)."""
    rows = _provenance_rows(Path(path))
    if not rows:
        return {}
    if layer is None:
        layer = max(rows, key=lambda k: rows[k][0])
    if layer not in rows:
        raise DataError(f"No provenance for layer '{layer}' in '{Path(path).name}'.")
    return json.loads(rows[layer][1])
