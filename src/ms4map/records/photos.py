"""Photo checks: JPEG or PNG by content (never by the file name), size-limited.

A photo is accepted when its first bytes are the JPEG or PNG signature, its structure
is whole (a JPEG ends with the end-of-image marker; a PNG starts with ``IHDR`` and has
an ``IEND`` chunk) and, when Pillow is installed, Pillow can read and verify it.
"""

from __future__ import annotations

import hashlib
import io
import struct
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import DataError, InputOpenError

__all__ = ["MAX_PHOTO_BYTES", "Photo", "check_photo"]

#: Largest photo accepted (bytes).  Phone photos are 2-6 MB; 10 MB leaves room.
MAX_PHOTO_BYTES = 10 * 1024 * 1024

_JPEG = b"\xff\xd8\xff"
_PNG = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Photo:
    """A checked photo: its bytes and what was read from them."""

    data: bytes
    mime: str
    width: int | None
    height: int | None
    sha256: str
    filename: str | None


def _structure(data: bytes, name: str) -> tuple[str, int | None, int | None]:
    if data.startswith(_JPEG):
        if data.rstrip(b"\x00")[-2:] != b"\xff\xd9":
            raise DataError(
                f"Photo {name} starts as a JPEG but has no end-of-image marker: the file is "
                "truncated or corrupt. Fix: copy the photo again from the camera or phone."
            )
        return "image/jpeg", None, None
    if data.startswith(_PNG):
        if len(data) < 33 or data[12:16] != b"IHDR" or b"IEND" not in data[-12:]:
            raise DataError(
                f"Photo {name} starts as a PNG but its chunks are incomplete (no IHDR or "
                "IEND): the file is truncated or corrupt. Fix: export the image again."
            )
        w, h = struct.unpack(">II", data[16:24])
        return "image/png", int(w), int(h)
    raise DataError(
        f"Photo {name} is not a JPEG or PNG image (its content does not start with either "
        "signature, whatever its name says). Fix: attach a .jpg or .png photo."
    )


def check_photo(
    photo: str | Path | bytes,
    *,
    filename: str | None = None,
    max_bytes: int = MAX_PHOTO_BYTES,
) -> Photo:
    """Read and check a photo.

    Parameters
    ----------
    photo : path or bytes
    filename : str, optional
        Name to keep with it (default: the path's name).
    max_bytes : int
        Size limit.

    Returns
    -------
    Photo

    Raises
    ------
    InputOpenError
        The file cannot be read.
    DataError
        Too large, empty, not a JPEG/PNG by content, or corrupt.
    """
    if isinstance(photo, (bytes, bytearray, memoryview)):
        data = bytes(photo)
    else:
        p = Path(photo).expanduser()
        filename = filename or p.name
        try:
            size = p.stat().st_size
            if size > max_bytes:
                data = b""
            else:
                data = p.read_bytes()
        except OSError as exc:
            raise InputOpenError(f"Cannot read photo '{p}': {exc.strerror}.") from None
        if size > max_bytes:
            raise DataError(
                f"Photo {p.name} is {size / 2**20:.1f} MB, above the limit of "
                f"{max_bytes / 2**20:.1f} MB. Fix: attach a smaller copy (resize it)."
            )
    name = f"'{filename}'" if filename else "(bytes)"
    if len(data) > max_bytes:
        raise DataError(
            f"Photo {name} is {len(data) / 2**20:.1f} MB, above the limit of "
            f"{max_bytes / 2**20:.1f} MB. Fix: attach a smaller copy (resize it)."
        )
    if not data:
        raise DataError(f"Photo {name} is empty. Fix: attach the photo file itself.")
    mime, w, h = _structure(data, name)
    try:
        from PIL import Image
    except ImportError:  # the structural check above is all we can do
        Image = None  # noqa: N806
    if Image is not None:
        try:
            with Image.open(io.BytesIO(data)) as im:
                fmt = im.format
                w, h = im.size
                im.verify()
            with Image.open(io.BytesIO(data)) as im:
                im.load()  # verify() does not decode the pixels; load() does
        except Exception as exc:  # noqa: BLE001 - Pillow raises many types
            raise DataError(
                f"Photo {name} is corrupt ({type(exc).__name__}: {exc}). Fix: copy the photo "
                "again from the camera or phone."
            ) from None
        if {"JPEG": "image/jpeg", "PNG": "image/png"}.get(str(fmt)) != mime:
            raise DataError(f"Photo {name}: its content reads as {fmt}, not JPEG or PNG.")
    return Photo(
        data=data,
        mime=mime,
        width=w,
        height=h,
        sha256=hashlib.sha256(data).hexdigest(),
        filename=filename,
    )
