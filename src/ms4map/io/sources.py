"""Source layers: ``LAYER``, ``FILE`` and ``FILE::LAYER`` resolved and read as they are.

The one zip check (:func:`check_zip`) guards every zipped layer and upload; text that is
not UTF-8 is re-read as Latin-1 (:func:`read_source`).  Nothing here maps or checks
columns: that is :mod:`ms4map.io.canonical`.
"""

from __future__ import annotations

import stat
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import geopandas as gpd
import pandas as pd
import pyogrio

from ..core import schema
from ..core.errors import InputOpenError, UsageError

__all__ = [
    "MAX_ZIP_MEMBERS",
    "MAX_ZIP_UNPACKED",
    "TABLE_SUFFIXES",
    "VECTOR_SUFFIXES",
    "Source",
    "check_zip",
    "is_zip_junk",
    "list_source_layers",
    "parse_layer_option",
    "read_source",
    "zip_layer_members",
]

VECTOR_SUFFIXES = (".gpkg", ".shp", ".geojson", ".json", ".zip", ".fgb", ".gml", ".kml", ".gdb")


#: Non-spatial tables accepted for table roles (``impairments``).
TABLE_SUFFIXES = (".csv", ".xlsx", ".dbf")


MAX_ZIP_MEMBERS = 10_000


MAX_ZIP_UNPACKED = 1 << 30  # 1 GiB


@dataclass(frozen=True)
class Source:
    """One source layer: a file (or folder) and a layer name inside it (or None);
    ``member``: the file inside a zip it is (``town/parcels.shp``), if any."""

    path: Path
    layer: str | None
    label: str  # the name findings and field maps use for this source layer
    member: str | None = None

    def gdal_path(self) -> str:
        p = str(self.path)
        if self.path.suffix.lower() == ".zip":
            member = self.member
            if member is None and self.layer is None:
                # a zipped single layer (--layer parcels=parcels.zip), maybe in a folder
                found = zip_layer_members(self.path)
                if len(found) == 1:
                    member = next(iter(found.values()))
            return f"/vsizip/{p}/{member}" if member else f"/vsizip/{p}"
        return p


#: Files inside a zip that a layer can be (one file each; a Shapefile's side files go
#: with its ``.shp``).
ZIP_LAYER_SUFFIXES = (".shp", ".geojson", ".json", ".fgb", ".gml", ".kml")
#: What macOS and Windows add to a zip beside the files: never layers.
_ZIP_JUNK_NAMES = {".ds_store", "thumbs.db", "desktop.ini"}


def is_zip_junk(name: str) -> bool:
    """Whether a zip member is an operating system's addition, not data: anything under
    ``__MACOSX/``, AppleDouble ``._*`` files, ``.DS_Store``, ``Thumbs.db``."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if not parts:
        return False
    if "__MACOSX" in parts:
        return True
    base = parts[-1]
    return base.startswith("._") or base.lower() in _ZIP_JUNK_NAMES


def zip_layer_members(zip_or_names: str | Path | list[str]) -> dict[str, str]:
    """The layers of a zip, in any sub-folder: layer name (the file's stem) -> member path.

    ``__MACOSX/`` and ``._*`` entries (:func:`is_zip_junk`) are ignored.  A GeoPackage
    or File Geodatabase inside the zip is not listed (GDAL reads those itself).

    Parameters
    ----------
    zip_or_names : path or list of str
        A zip file (checked with :func:`check_zip`) or its member names.

    Raises
    ------
    UsageError
        Two layers of the same name in different folders (``a/parcels.shp`` and
        ``b/parcels.shp``): the message names both paths.
    """
    if isinstance(zip_or_names, (str, Path)):
        label = Path(zip_or_names).name
        names = [i.filename for i in check_zip(zip_or_names)]
    else:
        label, names = "the zip", list(zip_or_names)
    found: dict[str, str] = {}
    for raw in names:
        name = raw.replace("\\", "/")
        if name.endswith("/") or is_zip_junk(name):
            continue
        member = PurePosixPath(name)
        if member.suffix.lower() not in ZIP_LAYER_SUFFIXES:
            continue
        if any(p.lower().endswith(".gdb") for p in member.parts[:-1]):
            continue
        stem = member.stem
        other = found.get(stem)
        if other is not None and other != name:
            raise UsageError(
                f"'{label}' holds two layers named '{stem}': '{other}' and '{name}'; "
                "ms4map does not pick one. Fix: remove one of them from the zip, or rename "
                "one (e.g. parcels_old.shp) and say which to use with --layer "
                f"ROLE={stem}."
            )
        found[stem] = name
    return found


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
        members = zip_layer_members(p)  # checks the zip first
        if members:
            return sorted(members)
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


def _is_layer_of(base: Path | None, name: str) -> bool:
    """Whether ``name`` is a layer of the multi-layer file ``base`` (GeoPackage, .gdb)."""
    if base is None or base.suffix.lower() not in (".gpkg", ".gdb") or not base.exists():
        return False
    try:
        return name in {str(r[0]) for r in pyogrio.list_layers(base)}
    except Exception:  # noqa: BLE001 - unreadable: the usual path says why
        return False


def _split_file_layer(spec: str, base: Path | None) -> tuple[str, str]:
    """``FILE::LAYER`` split where FILE exists (LAYER may hold ``::``), else at the last
    ``::``."""
    file_part, layer = spec.split("::", 1)
    near = base if base is None or base.is_dir() else base.parent
    if Path(file_part).expanduser().exists() or (near is not None and (near / file_part).exists()):
        return file_part, layer
    file_part, layer = spec.rsplit("::", 1)
    return file_part, layer


def _file_layer_source(spec: str, base: Path | None) -> Source:
    """The source of ``FILE::LAYER`` (or of a layer of ``base`` named with ``::``)."""
    if _is_layer_of(base, spec):  # a layer named 'x::y' in the workspace itself
        return Source(base, spec, spec)  # type: ignore[arg-type]
    file_part, layer = _split_file_layer(spec, base)
    fp = _resolve_file(file_part, base)
    if fp.suffix.lower() == ".zip":
        found = _zip_member(fp, layer)
        if found is not None:
            return Source(fp, None, PurePosixPath(found).stem, member=found)
    return Source(fp, layer, layer)


def _resolve_source(spec: str, base: Path | None, role: str | None = None) -> Source:
    """Turn a ``--layer`` value into a :class:`Source` (``role``: the role it feeds, for
    messages)."""
    if "::" in spec:
        return _file_layer_source(spec, base)
    if base is not None and base.suffix.lower() == ".zip":
        # a layer of a zipped workspace: by name or by its path in the zip
        found = _zip_member(base, spec)
        if found is not None:
            return Source(base, None, PurePosixPath(found).stem, member=found)
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


def _zip_member(zip_path: Path, spec: str) -> str | None:
    """The member of a zip a layer spec names (its stem or its path in the zip), if any."""
    members = zip_layer_members(zip_path)
    if spec in members:
        return members[spec]
    wanted = spec.replace("\\", "/").strip("/")
    return next((m for m in members.values() if m == wanted), None)


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
