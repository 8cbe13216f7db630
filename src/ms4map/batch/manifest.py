"""The batch manifest: Town (one town's options, paths absolute) and read_manifest, with its checks.

A batch manifest (TOML) lists towns::

    [[town]]
    name = "alder-falls"             # file-safe name of the outputs
    workspace = "alder/town.gpkg"    # relative to the manifest; a workspace manifest works too
    profile = "stillwater"           # optional (default: the CLI's default)
    # impairments = "303d.csv"       # optional, as `ms4map screen --impairments`
    # pollutants = ["phosphorus"]    # optional, as `ms4map screen --pollutants`

:func:`read_manifest` reports every problem of it before any town runs.  Details in
``docs/batch.md``.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InputOpenError, Ms4mapError, UsageError
from ..core.manifest import manifest_file

__all__ = ["Town", "read_manifest"]


_TOWN_KEYS = ("name", "workspace", "profile", "impairments", "pollutants")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
#: Names Windows keeps for devices: no file there may be called ``con.gpkg`` (nor
#: ``con.<anything>``), so a town of that name could not be written on Windows.
_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{d}{i}" for d in ("COM", "LPT") for i in range(1, 10)]
)


@dataclass(frozen=True)
class Town:
    """One town of a batch manifest (paths absolute).

    Attributes
    ----------
    name : str
        File-safe name: the output is ``<name>.gpkg``.
    workspace : str
        The workspace (GeoPackage, folder, vector file or workspace TOML manifest).
    profile : str
        A bundled profile name or the absolute path of a profile TOML file.
    impairments : str or None
        A 303(d) CSV used instead of the workspace's impairments layer.
    pollutants : tuple of str
        Narrowed pollutants of concern (empty: the profile's own reading).
    manifest : str
        The batch manifest the town comes from (for messages).
    """

    name: str
    workspace: str
    profile: str = "stillwater"
    impairments: str | None = None
    pollutants: tuple[str, ...] = ()
    manifest: str = ""

    def screen_argv(self) -> list[str]:
        """The ``ms4map screen --all`` arguments this town is screened with."""
        argv = ["screen", self.workspace, "--all", "--profile", self.profile]
        if self.impairments:
            argv += ["--impairments", self.impairments]
        if self.pollutants:
            argv += ["--pollutants", ",".join(self.pollutants)]
        return argv

    def drainage_argv(self) -> list[str]:
        """The ``ms4map drainage`` arguments this town's drainage layers are made with."""
        return ["drainage", self.workspace]

    def option_files(self) -> list[Path]:
        """Files the town's options name besides its data (their content is in the key):
        a workspace manifest and the field-map file it names, the profile's TOML
        (bundled or not), an impairments CSV."""
        files = []
        ws = Path(self.workspace)
        if ws.suffix.lower() == ".toml":
            files.append(ws)
            fm = manifest_file(ws, "field_map")
            if fm is not None and fm.is_file():  # its mapping changes the answers too
                files.append(fm)
        for p in (self.profile, self.impairments):
            if p and Path(p).suffix.lower() in (".toml", ".csv") and Path(p).is_file():
                files.append(Path(p))
        from ..rules.profiles import BUILTIN_PROFILES, builtin_profile_path

        if self.profile in BUILTIN_PROFILES:  # a bundled profile's text may change too
            files.append(Path(builtin_profile_path(self.profile)))
        return files

    def key(self) -> dict[str, Any]:
        """What the output must have been made from to be skipped on a rerun.

        The town's options, the drainage settings the command uses, and the SHA-256 of
        the option files (workspace manifest, profile file, impairments CSV).  The data
        files themselves are checked against the provenance's input hashes.
        """
        from ..io import file_sha256

        return {
            "name": self.name,
            "workspace": self.workspace,
            "profile": self.profile,
            "impairments": self.impairments,
            "pollutants": list(self.pollutants),
            "drainage_settings": _command_settings(),
            "option_files": {str(p): file_sha256(p) for p in self.option_files()},
        }


def read_manifest(path: str | Path) -> list[Town]:
    """Read and check a batch manifest; every problem is reported before any town runs.

    Raises
    ------
    InputOpenError
        The manifest file does not exist or cannot be read (exit 3).
    UsageError
        Anything wrong inside it (exit 4): not TOML, no ``[[town]]``, unknown keys, a
        missing workspace, a duplicate or unsafe name, an unknown profile, a missing
        impairments CSV, an unknown pollutant.  The message lists every problem, each
        naming the town, the file and the fix.
    """
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputOpenError(f"Batch manifest '{p}' does not exist. Fix: check the path.") from None
    except IsADirectoryError:
        raise UsageError(
            f"Batch manifest '{p}' is a folder. Fix: give the TOML file listing the towns."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputOpenError(f"Cannot read batch manifest '{p}': {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(
            f"Batch manifest '{p.name}' is not valid TOML: {exc}. Fix: correct the line it "
            "names (each town is a [[town]] table with name and workspace)."
        ) from None
    base = p.resolve().parent
    where = f"Batch manifest '{p.name}'"
    unknown = sorted(set(data) - {"town"})
    if unknown:
        raise UsageError(
            f"{where}: unknown key(s) {unknown}. Fix: list towns as "
            "[[town]] tables (name, workspace, optional profile, impairments, pollutants)."
        )
    entries = data.get("town")
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, dict) for e in entries)
    ):
        raise UsageError(
            f"{where} lists no town. Fix: add one [[town]] table per "
            'town, e.g.\n  [[town]]\n  name = "alder-falls"\n  workspace = "alder/town.gpkg"'
        )
    problems: list[str] = []
    towns: list[Town] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries, start=1):
        label = f"town #{i}" + (f" '{entry['name']}'" if isinstance(entry.get("name"), str) else "")
        errs = _check_entry(entry, label, base)
        if errs:
            problems += errs
            continue
        name = entry["name"]
        first = seen.setdefault(name.lower(), i)
        if first != i:
            problems.append(
                f"{label}: the name '{name}' is already used by town #{first} (names are "
                "compared ignoring case, as outputs <name>.gpkg share one folder). "
                "Fix: give each town its own name."
            )
            continue
        pollutants = entry.get("pollutants", ())
        if isinstance(pollutants, str):
            pollutants = [x.strip() for x in pollutants.split(",") if x.strip()]
        towns.append(
            Town(
                name=name,
                workspace=str(_resolve(entry["workspace"], base)),
                profile=_profile_spec(entry.get("profile"), base),
                impairments=(
                    str(_resolve(entry["impairments"], base)) if entry.get("impairments") else None
                ),
                pollutants=tuple(pollutants),
                manifest=str(p),
            )
        )
    problems += _check_profiles(towns)
    if problems:
        head = f"{where} has {len(problems)} problem(s); no town was run:"
        raise UsageError("\n".join([head, *(f"  - {m}" for m in problems)]))
    return towns


def _resolve(text: str, base: Path) -> Path:
    q = Path(text).expanduser()
    return (q if q.is_absolute() else base / q).resolve()


def _profile_spec(value: Any, base: Path) -> str:
    from ..rules.profiles import BUILTIN_PROFILES, DEFAULT_PROFILE

    if value is None:
        return DEFAULT_PROFILE
    if value in BUILTIN_PROFILES:
        return str(value)
    if Path(value).suffix or "/" in value or os.sep in value:
        return str(_resolve(value, base))
    return str(value)  # an unknown name: load_profile says which names exist


def _check_entry(entry: dict[str, Any], label: str, base: Path) -> list[str]:
    """Every problem of one ``[[town]]`` table: its keys and their types, then its name
    and the files it names (only once the keys are right)."""
    return _check_keys(entry, label) or _check_paths(entry, label, base)


def _check_keys(entry: dict[str, Any], label: str) -> list[str]:
    """Unknown keys, missing ``name``/``workspace``, keys of the wrong type."""
    errs: list[str] = []
    unknown = sorted(set(entry) - set(_TOWN_KEYS))
    if unknown:
        errs.append(f"{label}: unknown key(s) {unknown}. Fix: use only {list(_TOWN_KEYS)}.")
    for key in ("name", "workspace"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            errs.append(f'{label}: `{key}` is missing (a text). Fix: add {key} = "...".')
    for key in ("profile", "impairments"):
        if key in entry and not isinstance(entry[key], str):
            errs.append(f"{label}: `{key}` must be a text, got {entry[key]!r}.")
    pol = entry.get("pollutants")
    if pol is not None and not (
        isinstance(pol, str) or (isinstance(pol, list) and all(isinstance(x, str) for x in pol))
    ):
        errs.append(f"{label}: `pollutants` must be a list of texts, got {pol!r}.")
    return errs


def _check_paths(entry: dict[str, Any], label: str, base: Path) -> list[str]:
    """A file-safe name, an existing workspace (and the one a workspace manifest names)
    and an existing impairments CSV."""
    errs: list[str] = []
    name = entry["name"]
    if not _NAME_RE.match(name) or name.endswith("."):
        errs.append(
            f"{label}: the name '{name}' is not a safe file name (its output is "
            "<name>.gpkg in the --out folder). Fix: use letters, digits, '-', '_' and '.' "
            "only, no path separators, starting with a letter or digit."
        )
    elif name.split(".")[0].upper() in _WINDOWS_DEVICES:
        errs.append(
            f"{label}: the name '{name}' is a device name on Windows (CON, PRN, AUX, NUL, "
            f"COM1-9, LPT1-9): its output {name}.gpkg could not be written there. Fix: use "
            f"another name, e.g. '{name.split('.')[0]}-town'."
        )
    ws = _resolve(entry["workspace"], base)
    if not ws.exists():
        errs.append(
            f"{label}: workspace '{entry['workspace']}' does not exist (looked for '{ws}'; "
            "paths are relative to the manifest). Fix: correct the path."
        )
    elif ws.suffix.lower() == ".toml":
        errs += _check_workspace_manifest(ws, label)
    if entry.get("impairments"):
        imp = _resolve(entry["impairments"], base)
        if not imp.is_file():
            errs.append(
                f"{label}: impairments CSV '{entry['impairments']}' does not exist (looked "
                f"for '{imp}'). Fix: correct the path or leave `impairments` out to use the "
                "workspace's impairments layer."
            )
    return errs


def _check_workspace_manifest(ws: Path, label: str) -> list[str]:
    """A town's workspace given as a workspace manifest: it reads, and its workspace exists."""
    from ..io import load_manifest

    try:
        inner = load_manifest(ws).get("workspace")
    except Ms4mapError as exc:
        return [f"{label}: workspace manifest '{ws.name}': {exc}"]
    if inner is not None and not Path(inner).exists():
        return [
            f"{label}: workspace manifest '{ws.name}' names workspace '{inner}', "
            "which does not exist. Fix: correct `workspace` in that file."
        ]
    return []


def _check_profiles(towns: Sequence[Town]) -> list[str]:
    """Load every profile (with its pollutants) the way ``ms4map screen`` does."""
    from ..rules.profiles import profile_with

    errs: list[str] = []
    done: dict[tuple[str, tuple[str, ...]], str | None] = {}
    for t in towns:
        k = (t.profile, t.pollutants)
        if k not in done:
            try:
                profile_with(t.profile, t.pollutants)
                done[k] = None
            except Ms4mapError as exc:
                done[k] = str(exc)
        if done[k] is not None:
            errs.append(f"town '{t.name}': profile '{t.profile}': {done[k]}")
    return errs


def _command_settings() -> dict[str, Any]:
    from ..pipeline import command_settings

    return command_settings()
