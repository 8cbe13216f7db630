"""Uploaded layers: size limits, safe zip extraction, and a private folder per upload.

Uploads are written only under the app's own data folder
(``MS4MAP_DATA_DIR``, default ``~/.local/share/ms4map``), in
``uploads/<upload id>/``; the user's own files are never touched.  A zip is
checked member by member *before* anything is written: no absolute paths, no
``..``, no drive letters, no symlinks or other special files, at most
:data:`MAX_ZIP_MEMBERS` members and :data:`MAX_ZIP_UNPACKED` bytes unpacked
(and the bytes actually written are counted again while extracting, so a
lying header cannot exceed the limit).
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.errors import InputOpenError
from ..io.sources import MAX_ZIP_MEMBERS, MAX_ZIP_UNPACKED
from .upload_limits import OWNER_FILE, check_quota, check_unpacked, folder_bytes

__all__ = [
    "MAX_UPLOAD_BYTES",
    "MAX_ZIP_MEMBERS",
    "MAX_ZIP_UNPACKED",
    "RASTER_SUFFIXES",
    "SPATIAL_SUFFIXES",
    "StoredUpload",
    "UploadInfo",
    "app_data_dir",
    "check_layer_file",
    "check_raster_file",
    "import_303d_csv",
    "list_uploads",
    "remove_upload",
    "safe_extract_zip",
    "store_table_upload",
    "store_upload",
    "uploads_dir",
]

MAX_UPLOAD_BYTES = 200 * 2**20

#: Files the app can read as layers (a Shapefile is its .shp plus side files).
SPATIAL_SUFFIXES = (".gpkg", ".geojson", ".json", ".shp", ".gml", ".kml", ".fgb")
#: Rasters the app takes as a DEM (GeoTIFF).
RASTER_SUFFIXES = (".tif", ".tiff")
_SIDE_SUFFIXES = (
    ".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".xml", ".qmd",
    ".aux.xml", ".tfw", ".ovr",
)  # fmt: skip
#: Written last in an upload folder: the folder is complete (an upload being written, or
#: one interrupted, has none).
_COMPLETE = ".complete"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def app_data_dir() -> Path:
    """The folder the app may write to (``MS4MAP_DATA_DIR``, else ``~/.local/share/ms4map``).

    Made private (0700) when the app creates it: the uploads, records, users and login
    files under it hold owners' names and enforcement records. A folder that exists is
    left as its owner set it.
    """
    base = os.environ.get("MS4MAP_DATA_DIR")
    p = Path(base).expanduser() if base else Path.home() / ".local" / "share" / "ms4map"
    if not p.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.mkdir(mode=0o700, exist_ok=True)
    return p


@dataclass
class StoredUpload:
    """An upload stored in the app's data folder.

    Attributes
    ----------
    folder : pathlib.Path
        ``<data dir>/uploads/<id>``.
    layers : list of pathlib.Path
        The readable layer files found (GeoPackage, GeoJSON, Shapefile ...).
    skipped : list of str
        Files that are not layers (reported to the user).
    """

    folder: Path
    layers: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    rasters: list[Path] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    reused: bool = False


def uploads_dir(data_dir: str | Path | None = None) -> Path:
    """``<data dir>/uploads``: where every upload is kept (one folder each)."""
    return (Path(data_dir) if data_dir is not None else app_data_dir()) / "uploads"


def check_layer_file(path: str | Path) -> tuple[str | None, str | None]:
    """Check a vector file as it arrives: ``(problem, note)``, each ``None`` when none.

    A problem means the file cannot be a layer (a text file renamed ``.gpkg``, a file
    GDAL cannot read, a layer whose features all lack a geometry); a note is worth
    saying but does not stop it (no CRS: choose one on the Data page; some features
    without a geometry).  Messages name the file, the layer and the fix.
    """
    import pyogrio

    path = Path(path)
    name = path.name
    if path.suffix.lower() == ".gpkg":
        with open(path, "rb") as fh:
            head = fh.read(16)
        if head != b"SQLite format 3\x00":
            kind = "text" if _looks_like_text(head) else "something else"
            return (
                f"'{name}' is not a GeoPackage: it holds {kind}, not the SQLite database a "
                "GeoPackage is (a file renamed .gpkg?). Fix: export the layer as a "
                "GeoPackage from your GIS, or upload it as a zipped Shapefile or GeoJSON.",
                None,
            )
    try:
        layer_names = [str(x) for x in pyogrio.list_layers(path)[:, 0]]
    except Exception as exc:  # noqa: BLE001 - GDAL's own words, in full
        return (
            f"'{name}' cannot be read as a layer: GDAL says: {exc} Fix: upload a "
            "GeoPackage, a zipped Shapefile (.shp with its .shx, .dbf and .prj) or a GeoJSON "
            "file.",
            None,
        )
    problems, notes, unreadable = [], [], []
    for lyr in layer_names or [path.stem]:
        try:
            info = pyogrio.read_info(path, layer=lyr)
        except Exception as exc:  # noqa: BLE001
            unreadable.append(f"layer '{lyr}' of '{name}' cannot be read (GDAL says: {exc})")
            continue
        n = int(info.get("features") or 0)
        if n <= 0:
            notes.append(f"layer '{lyr}' of '{name}' has no features.")
            continue
        if not info.get("geometry_type") and not info.get("geometry_name"):
            if path.suffix.lower() == ".gpkg":  # a table in a GeoPackage (e.g. impairments)
                continue
        missing = _null_geometries(path, lyr, n, info)
        if missing == n:
            problems.append(
                f"every one of the {n:,} feature(s) of layer '{lyr}' in '{name}' has no "
                "geometry (null): it cannot be drawn or traced. Fix: export the layer with "
                'its geometries (a GeoJSON feature needs a "geometry" object, not null).'
            )
        elif missing:
            notes.append(
                f"{missing:,} of the {n:,} feature(s) of layer '{lyr}' in '{name}' have no "
                "geometry (null); the validation report says what happens to them."
            )
        if not info.get("crs"):
            notes.append(
                f"layer '{lyr}' of '{name}' has no CRS (a Shapefile without its .prj?): "
                "choose its CRS below before validating."
            )
    if unreadable and len(unreadable) == len(layer_names or [path.stem]):
        problems += unreadable  # nothing of the file can be read
    elif unreadable:  # one broken view does not refuse the file's other layers
        notes += [
            f"{u}: it is left out and the other layers are used. Fix: repair or delete it "
            "in your GIS if a layer you need is in it."
            for u in unreadable
        ]
    return ("; ".join(problems) or None), (" ".join(notes) or None)


def _looks_like_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _null_geometries(path: Path, layer: str, n: int, info: dict) -> int:
    """How many features of a layer have no geometry (all of them when GDAL sees no
    geometry at all)."""
    import pyogrio

    if info.get("total_bounds") is not None and info.get("geometry_type") not in (None, "Unknown"):
        # bounds known and a geometry type: count nulls only on small layers (cheap)
        if n > 200_000:
            return 0
    try:
        df = pyogrio.read_dataframe(path, layer=layer, columns=[], read_geometry=True)
    except Exception:  # noqa: BLE001 - the validation will say
        return 0
    if "geometry" not in df.columns:
        return n
    return int(df.geometry.isna().sum() + df.geometry.is_empty.fillna(False).sum())


def check_raster_file(path: str | Path) -> tuple[str | None, str | None]:
    """Check a DEM GeoTIFF as it arrives: ``(problem, note)`` like :func:`check_layer_file`."""
    path = Path(path)
    try:
        import rasterio

        with rasterio.open(path) as src:
            crs, count, shape = src.crs, src.count, (src.height, src.width)
            unit = src.crs.linear_units if src.crs is not None else None
    except Exception as exc:  # noqa: BLE001
        return (
            f"'{path.name}' is not a GeoTIFF the app can read as a DEM: {exc} Fix: export "
            "the elevation raster as a GeoTIFF (.tif).",
            None,
        )
    if crs is None:
        return (
            f"DEM '{path.name}' has no CRS. Fix: assign one in your GIS (or with "
            "gdal_edit.py -a_srs EPSG:...) and upload it again.",
            None,
        )
    note = f"DEM '{path.name}': {shape[1]:,} x {shape[0]:,} cells, {crs.to_string()}"
    if count > 1:
        note += f", {count} bands (the first is used as elevations)"
    if unit:
        note += f", horizontal unit {unit}"
    return None, note + "."


def _clean_name(name: str) -> str:
    base = PurePosixPath(name.replace("\\", "/")).name
    cleaned = _SAFE_NAME.sub("_", base).strip("._") or "upload"
    return cleaned[:120]


def store_upload(
    name: str,
    data: bytes,
    *,
    data_dir: str | Path | None = None,
    max_bytes: int = MAX_UPLOAD_BYTES,
    max_unpacked: int = MAX_ZIP_UNPACKED,
    max_members: int = MAX_ZIP_MEMBERS,
    user: str = "",
) -> StoredUpload:
    """Check and store one uploaded file; unpack it when it is a zip.

    Parameters
    ----------
    name : str
        The file name the browser sent (only its last part is used, cleaned).
    data : bytes
    data_dir : path, optional
        Default :func:`app_data_dir`.
    max_bytes, max_unpacked, max_members : int
        Limits (200 MB upload; zips 1 GiB unpacked, 10,000 members).
    user : str
        Who uploads it (the per-user quota; :mod:`ms4map.app.upload_limits`).

    Returns
    -------
    StoredUpload

    Raises
    ------
    ms4map.core.errors.InputOpenError
        Too large, not a layer, an unsafe or broken zip: the message says
        which and how to fix it.  Nothing is left behind on error.
    ms4map.core.errors.UsageError
        A zip holding two layers of the same name in different folders (both named).

    Notes
    -----
    Layers are found in any sub-folder of a zip; what macOS and Windows add
    (``__MACOSX/``, ``._*``, ``.DS_Store``, ``Thumbs.db``) is not extracted.
    """
    size = len(data)
    if size > max_bytes:
        raise InputOpenError(
            f"'{name}' is {size / 2**20:.0f} MB; the upload limit is {max_bytes / 2**20:.0f} MB. "
            "Fix: upload only the layers you need, or open the workspace from disk."
        )
    if size == 0:
        raise InputOpenError(f"'{name}' is empty.")
    import hashlib

    root = Path(data_dir) if data_dir is not None else app_data_dir()
    # the same file uploaded again is the same folder (uploads do not pile up)
    digest = hashlib.sha256(_clean_name(name).encode() + b"\0" + data).hexdigest()[:12]
    final = root / "uploads" / digest
    if (final / _COMPLETE).exists():
        stored = _scan(final, name)
        stored.reused = True
        return stored
    check_quota(root / "uploads", user, size)  # before anything is written
    folder = root / "uploads" / f".tmp-{uuid.uuid4().hex[:12]}"
    folder.mkdir(parents=True)
    try:
        clean = _clean_name(name)
        is_zip = data[:4] == b"PK\x03\x04" or clean.lower().endswith(".zip")
        if is_zip:
            archive = folder / "upload.zip"
            archive.write_bytes(data)
            try:
                safe_extract_zip(
                    archive, folder / "files", max_unpacked=max_unpacked, max_members=max_members
                )
            except InputOpenError as exc:  # said of the user's file, not the stored copy
                raise InputOpenError(
                    str(exc).replace(f"'{archive.name}'", f"'{name}'").replace(str(folder), "")
                ) from None
            archive.unlink()
            base = folder / "files"
        else:
            base = folder / "files"
            base.mkdir()
            (base / clean).write_bytes(data)
        check_unpacked(base, name=name)  # side files no bigger than their layers need
        check_quota(root / "uploads", user, folder_bytes(folder), exclude=folder)
        (folder / "name.txt").write_text(name[:300], encoding="utf-8")
        (folder / OWNER_FILE).write_text(user[:100], encoding="utf-8")
        stored = _scan(folder, name)
        if not stored.layers and not stored.rasters:
            raise InputOpenError(
                f"'{name}' holds no spatial layer (looked for "
                f"{', '.join(SPATIAL_SUFFIXES + RASTER_SUFFIXES)}). Fix: upload a zipped "
                "Shapefile, a GeoPackage, a GeoJSON file or a DEM GeoTIFF."
            )
        usable = [p for p in stored.layers + stored.rasters if p.name not in stored.problems]
        if not usable:
            raise InputOpenError(" ".join(stored.problems.values()))
        (folder / _COMPLETE).write_text("")
        try:
            folder.rename(final)
        except OSError:  # stored meanwhile by another session: use that copy
            shutil.rmtree(folder, ignore_errors=True)
            if not (final / _COMPLETE).exists():
                raise
        stored = _scan(final, name)
        return stored
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _scan(folder: Path, name: str) -> StoredUpload:
    """The layers, rasters, skipped files and arrival checks of an upload folder."""
    from ..io.sources import is_zip_junk, zip_layer_members

    base = folder / "files"
    stored = StoredUpload(folder)
    files = [
        p
        for p in sorted(base.rglob("*"))
        if p.is_file() and not is_zip_junk(str(p.relative_to(base)))
    ]
    # layers in any sub-folder; two of the same name in different folders are refused
    zip_layer_members(
        [str(p.relative_to(base)) for p in files if p.suffix.lower() in SPATIAL_SUFFIXES]
    )
    for p in files:
        low = p.name.lower()
        suffix = p.suffix.lower()
        if suffix in SPATIAL_SUFFIXES:
            stored.layers.append(p)
            problem, note = check_layer_file(p)
        elif suffix in RASTER_SUFFIXES:
            stored.rasters.append(p)
            problem, note = check_raster_file(p)
        else:
            if not low.endswith(_SIDE_SUFFIXES):
                stored.skipped.append(str(p.relative_to(base)))
            continue
        if problem:
            stored.problems[p.name] = problem
        if note:
            stored.notes[p.name] = note
    return stored


@dataclass
class UploadInfo:
    """One stored upload, as the Data page lists it."""

    folder: Path
    name: str
    files: list[str]
    bytes: int
    modified: float


def list_uploads(data_dir: str | Path | None = None) -> list[UploadInfo]:
    """Every complete upload in ``<data dir>/uploads``, newest first."""
    root = uploads_dir(data_dir)
    out = []
    if not root.is_dir():
        return out
    for folder in root.iterdir():
        if not folder.is_dir() or folder.name.startswith(".") or folder.is_symlink():
            continue
        files = [p for p in (folder / "files").rglob("*") if p.is_file()]
        try:
            name = (folder / "name.txt").read_text(encoding="utf-8").strip()
        except OSError:
            name = ", ".join(sorted(p.name for p in files)[:3]) or folder.name
        out.append(
            UploadInfo(
                folder=folder,
                name=name,
                files=sorted(str(p.relative_to(folder / "files")) for p in files),
                bytes=sum(p.stat().st_size for p in files),
                modified=folder.stat().st_mtime,
            )
        )
    return sorted(out, key=lambda u: -u.modified)


def remove_upload(folder: str | Path, data_dir: str | Path | None = None) -> None:
    """Delete one stored upload (the app's copy; the user's own file is not touched).

    Raises
    ------
    ms4map.core.errors.InputOpenError
        ``folder`` is not an upload folder of this data folder.
    """
    root = uploads_dir(data_dir).resolve()
    target = Path(folder)
    if target.is_symlink() or target.resolve().parent != root or not target.is_dir():
        raise InputOpenError(
            f"'{folder}' is not an upload of this app (uploads are in {root}); nothing removed."
        )
    shutil.rmtree(target)


def safe_extract_zip(
    archive: str | Path,
    dest: str | Path,
    *,
    max_unpacked: int = MAX_ZIP_UNPACKED,
    max_members: int = MAX_ZIP_MEMBERS,
) -> list[Path]:
    """Extract a zip into ``dest`` after checking every member; refuse anything unsafe.

    Raises
    ------
    ms4map.core.errors.InputOpenError
        On a broken zip, too many members, too many bytes, a member path that is
        absolute or climbs out (``..``), or a symlink / device member.
    """
    from ..io.sources import check_zip, is_zip_junk

    archive, dest = Path(archive), Path(dest)
    # the library's one zip check (members, size, paths, links), then the extraction plan
    check_zip(archive, max_members=max_members, max_unpacked=max_unpacked)
    with zipfile.ZipFile(archive) as zf:
        plan: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
        for info in zf.infolist():
            parts = PurePosixPath(info.filename.replace("\\", "/")).parts
            # macOS's __MACOSX/._parcels.shp is not a layer (and would be cleaned to the
            # real layer's name): what macOS and Windows add is not extracted
            if not info.is_dir() and not is_zip_junk(info.filename):
                plan.append((info, PurePosixPath(*[_clean_name(p) for p in parts])))
        _check_one_name_each(plan)
        dest.mkdir(parents=True, exist_ok=True)
        root = dest.resolve()
        written = 0
        out: list[Path] = []
        for info, rel in plan:
            target = (root / rel).resolve()
            if root not in target.parents:
                raise InputOpenError(f"The zip is unsafe: member '{info.filename}' escapes.")
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(target, "xb") as dst:
                    while chunk := src.read(1 << 20):
                        written += len(chunk)
                        if written > max_unpacked:
                            raise InputOpenError(
                                "The zip unpacks to more than its headers say (limit "
                                f"{max_unpacked / 2**30:.1f} GiB). Nothing from it is used."
                            )
                        dst.write(chunk)
            except (zipfile.BadZipFile, EOFError, OSError) as exc:
                if isinstance(exc, InputOpenError):
                    raise
                raise InputOpenError(
                    f"The zip is damaged: member '{info.filename}' cannot be read ({exc}). "
                    "Nothing from it is used. Fix: re-create the zip."
                ) from None
            out.append(target)
        return out


def _check_one_name_each(plan: list[tuple[zipfile.ZipInfo, PurePosixPath]]) -> None:
    """Refuse two members whose names become one file once made safe (``a b.geojson`` and
    ``a_b.geojson``), naming both as they are in the zip."""
    seen: dict[str, str] = {}
    for info, rel in plan:
        key = rel.as_posix().lower()  # one file on a case-insensitive disk too
        if key in seen:
            raise InputOpenError(
                f"The zip holds '{seen[key]}' and '{info.filename}', which would both be "
                f"stored as '{rel.as_posix()}' (spaces and other marks become '_'). Nothing "
                "from it is used. Fix: rename one of them and zip again."
            )
        seen[key] = info.filename


#: The tables the Data page takes besides layers: a 303(d) list CSV.
TABLE_SUFFIXES = (".csv", ".txt", ".tsv")


def store_table_upload(
    name: str,
    data: bytes,
    *,
    data_dir: str | Path | None = None,
    max_bytes: int = MAX_UPLOAD_BYTES,
    user: str = "",
) -> Path:
    """Store an uploaded 303(d) list CSV as it came (in its own upload folder, like a
    layer, within the same quotas: ``user`` as for :func:`store_upload`); the path of
    the stored file.

    Raises
    ------
    ms4map.core.errors.InputOpenError
        Too large, empty, or not a CSV.
    """
    import hashlib

    size = len(data)
    if size > max_bytes:
        raise InputOpenError(
            f"'{name}' is {size / 2**20:.0f} MB; the upload limit is {max_bytes / 2**20:.0f} MB."
        )
    if size == 0:
        raise InputOpenError(f"'{name}' is empty.")
    clean = _clean_name(name)
    if not clean.lower().endswith(TABLE_SUFFIXES) or b"\x00" in data[:4096]:
        raise InputOpenError(
            f"'{name}' is not a CSV file. Fix: save the 303(d) list from your spreadsheet as "
            "CSV (comma, semicolon or tab separated)."
        )
    root = Path(data_dir) if data_dir is not None else app_data_dir()
    digest = hashlib.sha256(clean.encode() + b"\0" + data).hexdigest()[:12]
    final = root / "uploads" / digest
    if not (final / _COMPLETE).exists():
        check_quota(root / "uploads", user, size)
        folder = root / "uploads" / f".tmp-{uuid.uuid4().hex[:12]}"
        (folder / "files").mkdir(parents=True)
        try:
            (folder / "files" / clean).write_bytes(data)
            (folder / "name.txt").write_text(name[:300], encoding="utf-8")
            (folder / OWNER_FILE).write_text(user[:100], encoding="utf-8")
            (folder / _COMPLETE).write_text("")
            try:
                folder.rename(final)
            except OSError:  # stored meanwhile by another session
                shutil.rmtree(folder, ignore_errors=True)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return final / "files" / clean


def import_303d_csv(path: str | Path, columns: dict[str, str] | None = None) -> tuple[str, Any]:
    """Read a stored 303(d) list CSV (NYSDEC or ATTAINS; delimiter sniffed; ``columns``:
    the impairments column -> the CSV's header) and write its table as the
    ``impairments`` table of a GeoPackage beside it.

    Returns
    -------
    (str, ImpairmentsRead)
        The layer spec (``FILE.gpkg::impairments``) the workspace reads, and what was read
        (its rows skipped are in ``.qa``).

    Raises
    ------
    ms4map.core.errors.DataError
        A required column not found (the message names the columns the file has).
    """
    import hashlib
    import json

    import pyogrio

    from ..io.impairments import read_impairments

    path = Path(path)
    read = read_impairments(path, columns=columns or None)
    tag = hashlib.sha256(json.dumps(columns or {}, sort_keys=True).encode()).hexdigest()[:8]
    out = path.with_name(f"{path.stem}-303d-{tag}.gpkg")
    if not out.exists():
        table = read.table.astype({"list_year": "float64"})
        tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.gpkg")
        pyogrio.write_dataframe(table, tmp, layer="impairments", driver="GPKG")
        os.replace(tmp, out)
    return f"{out}::impairments", read
