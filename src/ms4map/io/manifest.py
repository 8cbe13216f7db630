"""Workspace TOML manifests: the options they hold (:func:`load_manifest`) and the files they name.

:func:`load_manifest` reads a manifest for :func:`ms4map.io.open_workspace`, refusing
what is wrong with it; :func:`manifest_files` lists the files it names without opening
the workspace (every command checks its outputs against them before any work).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import InputOpenError, UsageError
from ..core.manifest import manifest_file, manifest_files, manifest_table
from .sources import _looks_like_file

__all__ = ["load_manifest", "manifest_file", "manifest_files", "manifest_table"]

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
