"""The files a workspace manifest names, read without opening the workspace.

Every command checks its outputs against the user's files before any work; with a
manifest as the workspace those include the files the manifest names.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

__all__ = ["manifest_file", "manifest_files", "manifest_table"]


def manifest_table(manifest: str | Path) -> dict:
    """A workspace manifest's TOML, or ``{}`` when it cannot be read (opening the
    workspace then says what is wrong with it)."""
    try:
        return tomllib.loads(Path(manifest).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def manifest_file(manifest: str | Path, key: str) -> Path | None:
    """The file a manifest's ``key`` (``workspace``, ``dem``, ``field_map``) names,
    relative to the manifest; ``None`` when it names none."""
    value = manifest_table(manifest).get(key)
    if not isinstance(value, str) or not value:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else Path(manifest).parent / p


def manifest_files(manifest: str | Path) -> list[str]:
    """The files a workspace manifest names (its workspace and that one's DEM, ``dem``,
    ``field_map``, every ``[layers]`` file), relative to the manifest: an output must
    never be one of them.  A manifest that cannot be read names none here (opening the
    workspace then says what is wrong with it)."""
    manifest = Path(manifest)
    data = manifest_table(manifest)
    names = [data.get(k) for k in ("workspace", "dem", "field_map")]
    layers = data.get("layers") if isinstance(data.get("layers"), dict) else {}
    for spec in layers.values():
        for text in [spec] if isinstance(spec, str) else spec if isinstance(spec, list) else []:
            names.append(str(text).split("::", 1)[0])
    out = []
    for name in names:
        if not isinstance(name, str) or not name:
            continue
        p = Path(name).expanduser()
        out += [str(p), str(manifest.parent / p)] if not p.is_absolute() else [str(p)]
    ws = data.get("workspace")
    if isinstance(ws, str) and ws:
        w = Path(ws).expanduser()
        w = w if w.is_absolute() else manifest.parent / w
        out.append(str(w.with_name(f"{w.stem}_dem.tif")))
    return out
