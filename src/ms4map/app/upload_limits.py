"""Upload limits: side files checked against their layer, and a total and per-user quota.

An upload is checked twice: before it is unpacked (its size against the quotas) and
after (what it unpacked to).  Each file of an upload must be a layer, a raster, or a
side file of one of its layers no bigger than that layer needs:

- a Shapefile's ``.dbf`` is no longer than its header says (header + records x record
  length, plus the end mark), ``.shx`` and ``.shp`` no longer than their headers'
  file length;
- any other side file (``.prj``, ``.cpg``, ``.xml``, ``.qix``, ...) or stray file is at
  most :data:`MAX_SIDE_BYTES`.

The quotas (:func:`quotas`): every upload together at most ``MS4MAP_UPLOAD_QUOTA_MB``
(default 5,120 MB), one user's at most ``MS4MAP_UPLOAD_USER_QUOTA_MB`` (default
2,048 MB); the owner is written in each upload folder (``owner.txt``).  A refusal names
the limit, the file and the fix (docs/app.md "Data folder and uploads").
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from ..core.errors import InputOpenError

__all__ = [
    "MAX_SIDE_BYTES",
    "OWNER_FILE",
    "check_quota",
    "check_unpacked",
    "folder_bytes",
    "quotas",
    "upload_bytes",
]

#: Largest side file (or other file no layer reads) an upload may hold.
MAX_SIDE_BYTES = 16 * 2**20
#: The file in an upload folder that names who uploaded it.
OWNER_FILE = "owner.txt"
_LAYERS = (".gpkg", ".geojson", ".json", ".shp", ".gml", ".kml", ".fgb", ".tif", ".tiff")
_SLACK = 4096  # bytes a writer may add after the declared end (padding, an end mark)


def quotas() -> tuple[int, int]:
    """``(total, per user)`` bytes: ``MS4MAP_UPLOAD_QUOTA_MB`` and
    ``MS4MAP_UPLOAD_USER_QUOTA_MB`` (positive numbers), else 5,120 and 2,048 MB."""

    def mb(name: str, default: float) -> int:
        try:
            v = float(os.environ.get(name) or default)
        except ValueError:
            v = default
        return int((v if v > 0 else default) * 2**20)

    return mb("MS4MAP_UPLOAD_QUOTA_MB", 5120), mb("MS4MAP_UPLOAD_USER_QUOTA_MB", 2048)


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (links not followed)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def upload_bytes(uploads: Path) -> tuple[int, dict[str, int]]:
    """Bytes of every upload folder under ``uploads`` and per owner (``""``: unknown)."""
    total, by_owner = 0, {}
    if not uploads.is_dir():
        return 0, {}
    for folder in uploads.iterdir():
        if not folder.is_dir() or folder.is_symlink():
            continue
        size = folder_bytes(folder)
        try:
            owner = (folder / OWNER_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            owner = ""
        total += size
        by_owner[owner] = by_owner.get(owner, 0) + size
    return total, by_owner


def check_quota(uploads: Path, user: str, incoming: int, *, exclude: Path | None = None) -> None:
    """Refuse ``incoming`` more bytes when the total or ``user``'s uploads would pass
    their quota (``exclude``: the folder being checked, already counted in ``incoming``).

    Raises
    ------
    InputOpenError
        Naming the quota, what is stored and the fix.
    """
    total_max, user_max = quotas()
    total, by_owner = upload_bytes(uploads)
    if exclude is not None and exclude.is_dir():
        size = folder_bytes(exclude)
        total -= size
        by_owner[user] = by_owner.get(user, 0) - size
    mine = by_owner.get(user, 0)
    fix = "Fix: remove uploads you no longer need on the Data page, or ask the administrator"
    if total + incoming > total_max:
        raise InputOpenError(
            f"The upload is refused: uploads would take {(total + incoming) / 2**20:,.0f} MB, "
            f"over the app's limit of {total_max / 2**20:,.6g} MB (MS4MAP_UPLOAD_QUOTA_MB). "
            f"{fix} to raise the limit."
        )
    if mine + incoming > user_max:
        raise InputOpenError(
            f"The upload is refused: {user}'s uploads would take "
            f"{(mine + incoming) / 2**20:,.0f} MB, over the limit of "
            f"{user_max / 2**20:,.6g} MB per user (MS4MAP_UPLOAD_USER_QUOTA_MB). {fix}."
        )


def _declared_end(p: Path) -> int | None:
    """The size the file's own header declares (``.dbf``, ``.shp``, ``.shx``), else None."""
    suffix = p.suffix.lower()
    try:
        with open(p, "rb") as f:
            head = f.read(100)
    except OSError:
        return None
    if suffix == ".dbf" and len(head) >= 12:
        n, header, record = struct.unpack("<IHH", head[4:12])
        return header + n * record + 1
    if suffix in (".shp", ".shx") and len(head) >= 28:
        code, words = struct.unpack(">i", head[0:4])[0], struct.unpack(">i", head[24:28])[0]
        return 2 * words if code == 9994 else 0
    return None


def check_unpacked(files: Path, *, name: str) -> None:
    """Refuse an upload holding a file no layer needs at that size (see the module doc).

    Raises
    ------
    InputOpenError
        Naming the file (as in the upload), its size and what its layer needs.
    """
    for p in sorted(files.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(files).as_posix()
        size = p.stat().st_size
        suffix = p.suffix.lower()
        if suffix in (".dbf", ".shx") or (suffix == ".shp" and size > MAX_SIDE_BYTES):
            end = _declared_end(p)
            if end is not None and size > end + _SLACK:
                raise InputOpenError(
                    f"'{name}': '{rel}' is {size / 2**20:,.1f} MB but its header describes "
                    f"{end / 2**20:,.3f} MB: the rest is not part of any layer. Fix: export "
                    "the Shapefile again from your GIS and zip only its files."
                )
            continue
        if suffix in _LAYERS:
            continue
        if size > MAX_SIDE_BYTES:
            raise InputOpenError(
                f"'{name}': '{rel}' is {size / 2**20:,.1f} MB, and no layer needs a side file "
                f"or other file over {MAX_SIDE_BYTES / 2**20:.0f} MB. Fix: zip only the layers "
                "you need."
            )
