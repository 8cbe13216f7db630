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
import stat
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import InputOpenError

__all__ = [
    "MAX_UPLOAD_BYTES",
    "MAX_ZIP_MEMBERS",
    "MAX_ZIP_UNPACKED",
    "SPATIAL_SUFFIXES",
    "StoredUpload",
    "app_data_dir",
    "safe_extract_zip",
    "store_upload",
]

MAX_UPLOAD_BYTES = 200 * 2**20
MAX_ZIP_UNPACKED = 2**30
MAX_ZIP_MEMBERS = 10_000
#: Files the app can read as layers (a Shapefile is its .shp plus side files).
SPATIAL_SUFFIXES = (".gpkg", ".geojson", ".json", ".shp", ".gml", ".kml", ".fgb")
_SIDE_SUFFIXES = (".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".xml", ".qmd")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def app_data_dir() -> Path:
    """The folder the app may write to (``MS4MAP_DATA_DIR``, else ``~/.local/share/ms4map``)."""
    base = os.environ.get("MS4MAP_DATA_DIR")
    p = Path(base).expanduser() if base else Path.home() / ".local" / "share" / "ms4map"
    p.mkdir(parents=True, exist_ok=True)
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

    Returns
    -------
    StoredUpload

    Raises
    ------
    ms4map.errors.InputOpenError
        Too large, not a layer, an unsafe or broken zip: the message says
        which and how to fix it.  Nothing is left behind on error.
    """
    size = len(data)
    if size > max_bytes:
        raise InputOpenError(
            f"'{name}' is {size / 2**20:.0f} MB; the upload limit is {max_bytes / 2**20:.0f} MB. "
            "Fix: upload only the layers you need, or open the workspace from disk."
        )
    if size == 0:
        raise InputOpenError(f"'{name}' is empty.")
    root = Path(data_dir) if data_dir is not None else app_data_dir()
    folder = root / "uploads" / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True)
    try:
        clean = _clean_name(name)
        is_zip = data[:4] == b"PK\x03\x04" or clean.lower().endswith(".zip")
        if is_zip:
            archive = folder / "upload.zip"
            archive.write_bytes(data)
            safe_extract_zip(
                archive, folder / "files", max_unpacked=max_unpacked, max_members=max_members
            )
            archive.unlink()
            base = folder / "files"
        else:
            base = folder / "files"
            base.mkdir()
            (base / clean).write_bytes(data)
        stored = StoredUpload(folder)
        for p in sorted(base.rglob("*")):
            if not p.is_file():
                continue
            suffix = p.suffix.lower()
            if suffix in SPATIAL_SUFFIXES:
                stored.layers.append(p)
            elif suffix not in _SIDE_SUFFIXES:
                stored.skipped.append(str(p.relative_to(base)))
        if not stored.layers:
            raise InputOpenError(
                f"'{name}' holds no spatial layer (looked for "
                f"{', '.join(SPATIAL_SUFFIXES)}). Fix: upload a zipped Shapefile, a "
                "GeoPackage or a GeoJSON file."
            )
        return stored
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


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
    ms4map.errors.InputOpenError
        On a broken zip, too many members, too many bytes, a member path that is
        absolute or climbs out (``..``), or a symlink / device member.
    """
    archive, dest = Path(archive), Path(dest)
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputOpenError(f"'{archive.name}' is not a readable zip file ({exc}).") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > max_members:
            raise InputOpenError(
                f"The zip has {len(infos):,} members (limit {max_members:,}). "
                "Fix: zip only the layers you need."
            )
        total = 0
        plan: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
        for info in infos:
            raw = info.filename
            name = raw.replace("\\", "/")
            parts = PurePosixPath(name).parts
            if (
                name.startswith("/")
                or ".." in parts
                or (parts and ":" in parts[0])
                or "\x00" in name
            ):
                raise InputOpenError(
                    f"The zip is unsafe: member '{raw}' points outside the archive folder. "
                    "Nothing was extracted. Fix: re-create the zip with relative paths."
                )
            mode = (info.external_attr >> 16) & 0xFFFF
            ftype = stat.S_IFMT(mode)  # 0 when the zip records no Unix file type
            if ftype and ftype not in (stat.S_IFREG, stat.S_IFDIR):
                raise InputOpenError(
                    f"The zip is unsafe: member '{raw}' is a link or special file. "
                    "Nothing was extracted. Fix: zip the files themselves."
                )
            total += info.file_size
            if total > max_unpacked:
                raise InputOpenError(
                    f"The zip unpacks to more than {max_unpacked / 2**30:.1f} GiB. "
                    "Fix: zip only the layers you need."
                )
            if not info.is_dir():
                plan.append((info, PurePosixPath(*[_clean_name(p) for p in parts])))
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
