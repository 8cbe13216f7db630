"""Many towns at once: the whole chain per town, as one task each on ``dask.distributed``.

A batch manifest (TOML) lists towns::

    [[town]]
    name = "alder-falls"             # file-safe name of the outputs
    workspace = "alder/town.gpkg"    # relative to the manifest; a workspace manifest works too
    profile = "stillwater"           # optional (default: the CLI's default)
    # impairments = "303d.csv"       # optional, as `ms4map screen --impairments`
    # pollutants = ["phosphorus"]    # optional, as `ms4map screen --pollutants`

Each town runs validate -> network -> overland -> drainage -> batch screening -> septic
flags (:func:`run_town`) and writes ``DIR/<name>.gpkg`` with the layers of
``ms4map drainage`` and ``ms4map screen --all`` and their provenance, the same answers
as those two commands on the workspace (the options come from the same command-line
parsers, so defaults cannot drift apart).  :func:`run_batch` runs the towns in this
process (``scheduler="none"``) or on a Dask cluster (``local``, ``local:N`` or a
scheduler address) and keeps ``DIR/summary.csv`` up to date as towns finish.

A town that fails (bad data, an ms4map bug, a lost worker) is ``failed`` with its error
and the others go on.  A town whose output is complete and whose inputs, options,
profile and ms4map version are those its provenance records is ``skipped`` unless
``force=True``.  Details in ``docs/batch.md``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .core.errors import InputOpenError, Ms4mapError, UsageError

__all__ = [
    "LAYERS",
    "SUMMARY_COLUMNS",
    "Town",
    "off_dem_parcels",
    "output_path",
    "parse_scheduler",
    "read_manifest",
    "run_batch",
    "run_town",
    "start_worker_server",
    "write_summary",
]

#: Columns of ``summary.csv``, one row per town.
SUMMARY_COLUMNS = (
    "name",
    "status",
    "error",
    "parcels",
    "condition_a_parcels",
    "septic_flagged",
    "outfalls",
    "seconds",
    "off_dem_parcels",
    "condition_a_undetermined",
)
#: Layers of a town's GeoPackage: those of ``ms4map drainage`` then ``ms4map screen --all``.
DRAINAGE_LAYERS = ("parcel_drainage", "inlet_catchments", "sewersheds", "qa")
SCREEN_LAYERS = ("screening", "septic")
LAYERS = DRAINAGE_LAYERS + SCREEN_LAYERS
STATUSES = ("ok", "failed", "skipped")

_TOWN_KEYS = ("name", "workspace", "profile", "impairments", "pollutants")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
#: Names Windows keeps for devices: no file there may be called ``con.gpkg`` (nor
#: ``con.<anything>``), so a town of that name could not be written on Windows.
_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{d}{i}" for d in ("COM", "LPT") for i in range(1, 10)]
)
_COUNTS = (
    "parcels",
    "condition_a_parcels",
    "septic_flagged",
    "outfalls",
    "off_dem_parcels",
    "condition_a_undetermined",
)

TaskFn = Callable[..., dict[str, Any]]


# ======================================================================================
# The manifest
# ======================================================================================
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
            from .core.manifest import manifest_file

            fm = manifest_file(ws, "field_map")
            if fm is not None and fm.is_file():  # its mapping changes the answers too
                files.append(fm)
        for p in (self.profile, self.impairments):
            if p and Path(p).suffix.lower() in (".toml", ".csv") and Path(p).is_file():
                files.append(Path(p))
        from .rules.profiles import BUILTIN_PROFILES, builtin_profile_path

        if self.profile in BUILTIN_PROFILES:  # a bundled profile's text may change too
            files.append(Path(builtin_profile_path(self.profile)))
        return files

    def key(self) -> dict[str, Any]:
        """What the output must have been made from to be skipped on a rerun.

        The town's options, the drainage settings the command uses, and the SHA-256 of
        the option files (workspace manifest, profile file, impairments CSV).  The data
        files themselves are checked against the provenance's input hashes.
        """
        from .io.workspace import file_sha256

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
    from .rules.profiles import BUILTIN_PROFILES, DEFAULT_PROFILE

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
    from .io import load_manifest

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
    from .rules.profiles import profile_with

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


def parse_scheduler(text: str) -> tuple[str, Any]:
    """``none`` -> ("none", None); ``local`` / ``local:N`` -> ("local", N);
    an address (``tcp://host:8786``) -> ("address", text).

    Raises
    ------
    UsageError
        Anything else, or ``local:N`` with N < 1.
    """
    s = (text or "").strip()
    low = s.lower()
    if low == "none":
        return "none", None
    if low == "local":
        return "local", _cores()
    if low.startswith("local:"):
        n = low.split(":", 1)[1]
        if n.isdigit() and int(n) >= 1:
            return "local", int(n)
        raise UsageError(
            f"--scheduler {text!r}: the number of workers must be a whole number >= 1, "
            "e.g. local:2."
        )
    if "://" in s:
        return "address", s
    raise UsageError(
        f"--scheduler {text!r} is not one of local, local:N, none or a scheduler address "
        "such as tcp://host:8786."
    )


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def output_path(out_dir: str | Path, town: Town) -> Path:
    """``DIR/<name>.gpkg``."""
    return Path(out_dir) / f"{town.name}.gpkg"


def check_outputs(towns: Sequence[Town], out_dir: str | Path) -> Path:
    """Check the output folder and every town's output before any town runs.

    Raises
    ------
    UsageError
        ``--out`` is a file, cannot be created, or a town's output would be one of the
        towns' input files.
    """
    from .io import check_output_path

    out = Path(out_dir).expanduser()
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out '{out}' is a file; give a folder for the towns' outputs.")
    protected: list[Path] = []
    for t in towns:
        ws = Path(t.workspace)
        protected += [ws, ws.with_name(f"{ws.stem}_dem.tif"), *t.option_files()]
        if t.manifest:
            protected.append(Path(t.manifest))
    for t in towns:
        try:
            _check_town_output(output_path(out, t), protected)
        except UsageError as exc:
            raise UsageError(f"town '{t.name}': {exc}") from None
    check_output_path(out / "summary.csv", protected=protected, suffixes=(".csv",))
    return out.resolve()


def _failed_before(summary: Path) -> set[str]:
    """The towns the ``summary.csv`` of the previous run into this folder lists as
    ``failed`` (none when there is none, or it cannot be read)."""
    import csv

    try:
        with open(summary, newline="", encoding="utf-8") as fh:
            return {r["name"] for r in csv.DictReader(fh) if r.get("status") == "failed"}
    except (OSError, KeyError, ValueError, csv.Error):
        return set()


def _check_town_output(path: Path, protected: list[Any]) -> Path:
    """A town's output path: never an input; an existing file there must be an ms4map
    output (a GeoPackage of the user's or a records file is refused), except a damaged
    one (not a readable database: a copy cut short, a disk error), which the town's run
    replaces."""
    from .io import check_output_path
    from .io.files import check_ms4map_output

    out = check_output_path(path, protected=protected, suffixes=(".gpkg",), ms4map_gpkg=False)
    check_ms4map_output(out, damaged_ok=True)
    return out


# ======================================================================================
# One town
# ======================================================================================
def _command_settings() -> dict[str, Any]:
    from .pipeline import command_settings

    return command_settings()


def run_town(town: Town, out_dir: str | Path, *, force: bool = False) -> dict[str, Any]:
    """Run one town and write ``DIR/<name>.gpkg``; never raises for the town's own errors.

    Returns
    -------
    dict
        The :data:`SUMMARY_COLUMNS` of the town's row, plus ``cpu_seconds`` (CPU time
        of the process that ran it, during the town), ``peak_rss_mb`` (its peak
        resident memory) and ``pid``.
    """
    t0, cpu0 = time.perf_counter(), time.process_time()
    row: dict[str, Any] = {"name": town.name, "status": "failed", "error": ""}
    out = output_path(out_dir, town)
    try:
        prev = None if force else previous_summary(town, out)
        if prev is not None:
            row.update(status="skipped", **prev)
        else:
            row.update(status="ok", **_compute(town, out))
    except Ms4mapError as exc:
        row["error"] = _town_error(town, exc)
    except MemoryError:
        row["error"] = (
            f"workspace '{town.workspace}': out of memory. Fix: run fewer towns at once "
            "(--scheduler local:1) or on a machine with more memory."
        )
    except Exception as exc:  # noqa: BLE001 - an ms4map bug must not stop the other towns
        row["error"] = (
            f"workspace '{town.workspace}': internal error (a bug in ms4map): "
            f"{type(exc).__name__}: {exc}. Fix: run the town alone with "
            f"`ms4map drainage {town.workspace} --debug` and `ms4map screen "
            f"{town.workspace} --all --debug` (the chain's two halves) and report the "
            "traceback."
        )
    if row["status"] == "failed":
        row["error"] += _drop_stale_output(town, out)
    row["seconds"] = round(time.perf_counter() - t0, 3)
    row["cpu_seconds"] = round(time.process_time() - cpu0, 3)
    row["peak_rss_mb"] = _peak_rss_mb()
    row["pid"] = os.getpid()
    return row


def _drop_stale_output(town: Town, out: Path) -> str:
    """After a town failed: remove its earlier output unless it is still that of the
    current inputs (docs/batch.md: an output is complete and current, or absent), and
    say so for the row's error."""
    if not out.exists():
        return ""
    try:
        current = previous_summary(town, out) is not None
    except Exception:  # noqa: BLE001 - whatever it is, it is not known to be current
        current = False
    if current:
        return " (the earlier output, of the same inputs, is kept)"
    try:
        out.unlink()
    except OSError:  # pragma: no cover - a file another program holds open (Windows)
        return f" (the earlier output '{out.name}' is stale: delete it)"
    return f" (the earlier output '{out.name}', made from other inputs, was removed)"


def _town_error(town: Town, exc: Ms4mapError) -> str:
    msg = str(exc)
    if town.workspace not in msg and Path(town.workspace).name not in msg:
        msg = f"workspace '{town.workspace}': {msg}"
    if "fix" not in msg.lower():
        msg = msg.rstrip()
        msg += "" if msg.endswith((".", "!", "?")) else "."
        msg += (
            f" Fix: `ms4map validate {town.workspace}` lists every problem; correct the "
            "data and rerun (finished towns are skipped)."
        )
    return msg


def _peak_rss_mb() -> float:
    try:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return round(kb / 1024.0, 1)
    except (ImportError, OSError):  # pragma: no cover - not POSIX
        import psutil

        return round(psutil.Process().memory_info().rss / 2**20, 1)


def _compute(town: Town, out: Path) -> dict[str, Any]:
    """The chain of ``ms4map drainage`` and ``ms4map screen --all`` on one workspace."""
    from . import pipeline
    from .core.version import __version__
    from .io import open_workspace, write_outputs
    from .rules.conditions import screen_all
    from .rules.profiles import profile_with
    from .rules.septic import flag_septic
    from .rules.waters import waters_for

    ws = open_workspace(town.workspace)  # as `ms4map drainage` / `screen` open it
    protected = [*ws.inputs, town.workspace, *town.option_files()]
    out = _check_town_output(out, protected)
    settings = pipeline.command_settings()  # `ms4map drainage`'s defaults
    res = pipeline.run(ws, use_cache=False, **settings)
    # `ms4map screen` runs the chain with the default settings; reuse the drainage run
    # when they are the same (they are, unless the drainage command's defaults change)
    same = all(pipeline.DEFAULT_SETTINGS.get(k) == v for k, v in settings.items())
    res_screen = res if same else pipeline.run(ws, use_cache=False)
    prof = profile_with(town.profile, town.pollutants)
    waters = waters_for(ws, town.impairments, warn=lambda line: print(line, file=sys.stderr))
    scr = screen_all(res_screen, profile=prof, workspace=ws, waters=waters)
    sep = flag_septic(res_screen, profile=prof, workspace=ws, waters=waters)
    summary = {
        "parcels": int(len(scr)),
        "condition_a_parcels": int((scr["condition_a_text"] == "yes").sum()),
        "septic_flagged": int(sep["flagged"].sum()) if len(sep) else 0,
        "outfalls": int(len(res.network.outfalls)) if res.network is not None else 0,
        # runoff that leaves the DEM (or a parcel outside it): its margin is too narrow
        "off_dem_parcels": off_dem_parcels(res.drainage),
        # not a "no": a missing layer, drainage off the DEM (each row's reason says)
        "condition_a_undetermined": int((scr["condition_a_text"] == "undetermined").sum()),
    }
    batch = {"key": town.key(), "summary": summary, "ms4map": __version__}
    screen_prov = ws.provenance(**prof.screening_settings(), impairments=town.impairments)
    tmp = out.with_name(f".{out.stem}.partial.gpkg")
    tmp.unlink(missing_ok=True)
    try:
        write_outputs(
            tmp,
            res.layers(),
            provenance={**ws.provenance(**settings), "batch": batch},
            inputs=list(ws.inputs),
        )
        write_outputs(
            tmp,
            {"screening": scr, "septic": sep},
            provenance={**screen_prov, "batch": batch},
            inputs=list(ws.inputs),
        )
        os.replace(tmp, out)  # the town's output appears complete or not at all
    finally:
        tmp.unlink(missing_ok=True)
    return summary


def off_dem_parcels(drainage: Any) -> int:
    """Parcels some of whose runoff leaves the DEM at its edge, or that lie partly
    outside it (``target_kind`` ``off_dem`` in ``parcel_drainage``): where the DEM's
    margin does not hold the town's drainage (docs/scale.md)."""
    if drainage is None or not len(drainage):
        return 0
    return int(drainage.loc[drainage["target_kind"] == "off_dem", "parcel_id"].nunique())


def _pending_changes(path: str | Path) -> bool:
    """Whether another program (QGIS) holds changes to an input GeoPackage in its
    write-ahead log (``<file>-wal``): the file's own bytes, and so its hash, do not show
    them yet, so an earlier output cannot be known to be current."""
    wal = Path(f"{path}-wal")
    return wal.is_file() and wal.stat().st_size > 0


def previous_summary(town: Town, out: Path) -> dict[str, Any] | None:
    """The counts of an earlier complete output made from unchanged inputs, else ``None``.

    Unchanged: every layer of :data:`LAYERS` is in the file with a provenance record of
    this ms4map version and this town's :meth:`Town.key`, every input file recorded
    there still has its SHA-256, and no DEM appeared beside a workspace that had none.
    """
    from .core.version import __version__
    from .io.files import _provenance_rows
    from .io.workspace import file_sha256

    if not out.is_file():
        return None
    import json

    import pyogrio

    rows = _provenance_rows(out)
    try:
        present = {str(r[0]) for r in pyogrio.list_layers(out)}
    except Exception:  # noqa: BLE001 - an unreadable file is simply not reusable
        return None
    if not set(LAYERS) <= present or not set(LAYERS) <= set(rows):
        return None
    key = town.key()
    records = []
    for layer in LAYERS:
        try:
            rec = json.loads(rows[layer][1])
        except (TypeError, ValueError):
            return None
        batch = rec.get("batch") or {}
        if rec.get("version") != __version__ or batch.get("key") != key:
            return None
        records.append(rec)
    hashes: dict[str, str] = {}
    for rec in records:
        for p, digest in (rec.get("inputs") or {}).items():
            if p not in hashes:
                hashes[p] = file_sha256(p) if Path(p).is_file() or Path(p).is_dir() else ""
                if _pending_changes(p):
                    hashes[p] = "pending"
            if hashes[p] != digest:
                return None
        wss = rec.get("workspace_settings") or {}
        if not wss.get("dem") and wss.get("path"):
            base = Path(wss["path"])
            if base.with_name(f"{base.stem}_dem.tif").exists():
                return None
    summary = records[-1]["batch"].get("summary") or {}
    if not all(k in summary for k in _COUNTS):
        return None
    return {k: summary[k] for k in _COUNTS}


# ======================================================================================
# Many towns
# ======================================================================================
@dataclass
class BatchRun:
    """What :func:`run_batch` did: one row per town (manifest order) and timings."""

    rows: list[dict[str, Any]]
    wall_seconds: float
    scheduler: str
    workers: int | None = None
    dashboard: str | None = None
    summary_path: Path | None = None
    #: Seconds to start (or reach) the cluster and to close it (0 for ``none``).
    startup_seconds: float = 0.0
    shutdown_seconds: float = 0.0

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] == "failed"]

    def counts(self) -> dict[str, int]:
        return {s: sum(r["status"] == s for r in self.rows) for s in STATUSES}


def write_summary(rows: Iterable[dict[str, Any]], out_dir: str | Path) -> Path:
    """Write ``DIR/summary.csv`` (atomically), one row per town, :data:`SUMMARY_COLUMNS`."""
    import pandas as pd

    from .io import write_text_output

    recs = []
    for r in rows:
        rec = {c: r.get(c) for c in SUMMARY_COLUMNS}
        rec["error"] = " ".join(str(rec["error"] or "").split())
        recs.append(rec)
    df = pd.DataFrame(recs, columns=list(SUMMARY_COLUMNS))
    for c in _COUNTS:
        df[c] = pd.array(df[c], dtype="Int64")
    return write_text_output(
        Path(out_dir) / "summary.csv", df.to_csv(index=False), suffixes=(".csv",)
    )


def _lost_row(town: Town, exc: BaseException) -> dict[str, Any]:
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        msg = (
            f"workspace '{town.workspace}': the Dask worker running this town was lost "
            "(it crashed or ran out of memory). Fix: give each worker more memory (fewer "
            "workers, e.g. --scheduler local:1) or run the town alone with "
            f"`ms4map drainage {town.workspace}`."
        )
    else:
        msg = (
            f"workspace '{town.workspace}': the task did not finish on the cluster: "
            f"{type(exc).__name__}: {exc}. Fix: check the workers can read the town's files "
            "and have ms4map installed, then rerun (finished towns are skipped)."
        )
    return {"name": town.name, "status": "failed", "error": msg, "seconds": None}


def run_batch(
    towns: Sequence[Town],
    out_dir: str | Path,
    *,
    scheduler: str = "local",
    force: bool = False,
    on_start: Callable[[str], None] | None = None,
    on_result: Callable[[dict[str, Any], int, int], None] | None = None,
    task: TaskFn | None = None,
    connect_timeout: float = 5.0,
) -> BatchRun:
    """Run every town (one task each) and write ``summary.csv`` as they finish.

    Parameters
    ----------
    towns : sequence of Town
        From :func:`read_manifest`.
    out_dir : path
        Folder of the outputs (created).
    scheduler : str
        ``local`` (a LocalCluster, one single-threaded worker process per core),
        ``local:N``, a scheduler address (``tcp://host:8786``) or ``none`` (this
        process, no Dask).
    force : bool
        Recompute towns whose output is up to date.
    on_start : callable, optional
        Called with a line about the cluster (its dashboard address).
    on_result : callable, optional
        Called with ``(row, done, total)`` as each town finishes.
    task : callable, optional
        The function run per town, ``task(town, out_dir, force=...) -> row``; default
        :func:`run_town`.
    connect_timeout : float
        Seconds to wait for a scheduler address.

    Raises
    ------
    UsageError
        A bad scheduler, or a scheduler address that cannot be reached (before any town
        runs).
    """
    t0 = time.perf_counter()
    _refuse_in_worker_start()
    kind, arg = parse_scheduler(scheduler)
    # the workers' fork server imports their modules while the outputs are checked and
    # the scheduler starts
    forked = kind == "local" and start_worker_server()
    out = check_outputs(towns, out_dir)
    fn = task or run_town
    total = len(towns)
    rows: dict[str, dict[str, Any]] = {}
    say = on_start or (lambda _m: None)

    def finished(row: dict[str, Any]) -> None:
        rows[row["name"]] = row
        write_summary([rows[t.name] for t in towns if t.name in rows], out)
        if on_result is not None:
            on_result(row, len(rows), total)

    run = BatchRun(rows=[], wall_seconds=0.0, scheduler=scheduler)
    # a town that failed in the previous run is always retried, even if an output of
    # its inputs is there (a --force run that failed; docs/batch.md)
    retry = _failed_before(out / "summary.csv")
    if kind == "none":
        for t in towns:
            finished(fn(t, str(out), force=force or t.name in retry))
    else:
        with contextlib.ExitStack() as stack:
            if forked:
                import dask

                with contextlib.suppress(ImportError):  # without it _connect says so
                    # distributed's defaults go into dask's config first: a setting made
                    # before they are there would take them all away when it is undone
                    # (and the next cluster of this process would not start)
                    import distributed  # noqa: F401
                # for the workers started now and any a nanny restarts later
                stack.enter_context(
                    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
                )
            work = _Work(towns, out, fn, force, finished, retry)
            _run_cluster(run, kind, arg, connect_timeout=connect_timeout, say=say, work=work, t0=t0)
    run.rows = [rows[t.name] for t in towns if t.name in rows]
    run.wall_seconds = time.perf_counter() - t0
    run.summary_path = out / "summary.csv"
    if not run.rows:
        write_summary([], out)
    return run


#: How a script must call :func:`run_batch` with a local cluster (said by the errors).
_MAIN_GUARD = (
    'Fix: in a script, call run_batch under `if __name__ == "__main__":` (each worker '
    "of a local cluster imports the script that started it, docs/batch.md)"
)


def _refuse_in_worker_start() -> None:
    """Refuse to run while a new worker process imports its parent's main script.

    A script that calls :func:`run_batch` at its top level, without the
    ``if __name__ == "__main__":`` guard, would otherwise start another batch (and
    another cluster) in every worker it starts.
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise UsageError(
            "run_batch was called while a worker process was starting: it was importing "
            f"the script that started the batch. {_MAIN_GUARD}."
        )


@dataclass
class _Work:
    """The towns of a run and what to do with each: the task and who takes its row."""

    towns: Sequence[Town]
    out: Path
    fn: TaskFn
    force: bool
    finished: Callable[[dict[str, Any]], None]
    retry: set[str] = field(default_factory=set)


def _run_cluster(
    run: BatchRun,
    kind: str,
    arg: Any,
    *,
    connect_timeout: float,
    say: Callable[[str], None],
    work: _Work,
    t0: float,
) -> None:
    """Start or reach the cluster, run the towns on it and close it."""
    client, cluster = _connect(kind, arg, connect_timeout)
    run.startup_seconds = time.perf_counter() - t0
    try:
        run.workers = len(client.scheduler_info().get("workers", {}))
        run.dashboard = _dashboard(client)
        if kind == "local":
            say(f"Dask: local cluster of {arg} worker(s), dashboard {run.dashboard}")
        else:
            wait = "" if run.workers else "; no worker yet: the towns wait for one"
            say(
                f"Dask: scheduler {arg} with {run.workers} worker(s){wait}, "
                f"dashboard {run.dashboard}"
            )
        _run_on(client, work)
    finally:
        t1 = time.perf_counter()
        client.close()
        if cluster is not None:
            cluster.close()
        run.shutdown_seconds = time.perf_counter() - t1


#: Modules a town's task uses, imported once in the fork server the workers of a local
#: cluster are forked from (:func:`start_worker_server`) instead of in each worker's
#: first town.  A module missing here is only imported later, in the worker.
WORKER_PRELOAD = (
    "distributed",
    "ms4map.batch",
    "ms4map.pipeline",
    "ms4map.hydrology.overland",
    "ms4map.hydrology._kernels",  # numba and the routing kernels (from numba's disk cache)
    "ms4map.drainage",
    "ms4map.network.build",
    "ms4map.network.trace",
    "ms4map.rules.conditions",
    "ms4map.rules.septic",
    "ms4map.rules.waters",
    "ms4map.rules.profiles",
    "scipy.ndimage",
    "scipy.sparse",
    "scipy.spatial",
    "rasterio",
    "rasterio.features",
    "rasterio.warp",
    "whitebox_workflows",
    "ms4map._worker_server",  # last: freezes the collector on all of the above
)

#: Set in the fork server's environment (so in every worker's) unless already set:
#: one thread for numpy's BLAS, as distributed's nanny sets before it spawns a worker
#: (``distributed.nanny.pre-spawn-environ``; a forked worker would not get them).  Not
#: its ``MALLOC_TRIM_THRESHOLD_=65536``: measured here it made a 1M-cell town about 10 %
#: slower (every grid allocated and freed through mmap), and the in-process run does not
#: have it either; a worker runs one town at a time and large grids go back to the
#: system when freed anyway.
_WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}


def start_worker_server() -> bool:
    """Start the fork server that the workers of a local cluster are forked from.

    It imports :data:`WORKER_PRELOAD` once, in its own process, while this one goes on
    (reading the manifest, starting the scheduler); each worker is then a fork of it:
    no interpreter start-up and no imports in each worker, and a worker exits without
    the interpreter's slow tear-down of those modules.  Call it as early as possible;
    calling it again is free.  The fork server starts fresh (it is not a fork of this
    process), so it inherits no threads or open files from here.

    Returns ``False`` where there is no fork server (Windows): workers are spawned.
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover
        return False
    from multiprocessing import forkserver

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(WORKER_PRELOAD))
    env = {k: v for k, v in _WORKER_ENV.items() if k not in os.environ}
    if os.environ.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"  # as the nanny: one hash seed on every worker
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        forkserver.ensure_running()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return True


#: Dask settings of a local cluster (read by its scheduler and nannies as they start):
#:
#: - ``allowed-failures`` 0: a town whose worker dies is failed at once, not retried on
#:   the next worker.
#: - the workers' statistical profiler off: it samples the running town's stack every
#:   10 ms for the dashboard's Profile page, and measured on the benchmark towns a town
#:   took about 10 % more CPU with it (0.92 against 0.82 s, docs/batch.md).  A cluster
#:   given by address keeps its own settings.
_LOCAL_CLUSTER_CONFIG = {
    "distributed.scheduler.allowed-failures": 0,
    "distributed.worker.profile.enabled": False,
}


def _connect(kind: str, arg: Any, timeout: float) -> tuple[Any, Any]:
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "Running towns on Dask needs the dask extra. Fix: "
            "python -m pip install 'ms4map[dask]', or use --scheduler none."
        ) from None
    if kind == "local":
        try:
            with dask.config.set(_LOCAL_CLUSTER_CONFIG):
                cluster = LocalCluster(
                    n_workers=int(arg),
                    threads_per_worker=1,
                    processes=True,
                    silence_logs=logging.CRITICAL,
                )
        except RuntimeError as exc:  # "Nanny failed to start": the worker's error is above
            raise UsageError(
                f"The local Dask cluster did not start: its worker processes failed "
                f"({str(exc).rstrip('.')}; their error is printed above). {_MAIN_GUARD}; "
                "otherwise run with the scheduler 'none' to see the error in this process."
            ) from exc
        return Client(cluster), cluster
    try:
        return Client(arg, timeout=timeout), None
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(
            f"Cannot reach the Dask scheduler at {arg} within {timeout:g} s: {exc}. Fix: "
            f"start it (`dask scheduler`, then `dask worker {arg}` on each machine), check "
            "the address, or use --scheduler local."
        ) from None


def _dashboard(client: Any) -> str:
    try:
        link = str(client.dashboard_link)
    except Exception:  # noqa: BLE001 - no dashboard service
        return "not available"
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return f"{link} (its graphs need bokeh: python -m pip install 'bokeh>=3.1')"
    return link


def _input_bytes(town: Town) -> int:
    """Bytes of a town's workspace and DEM files (what is not found counts 0): the
    order towns are handed to a cluster."""
    ws, dem = Path(town.workspace), None
    if ws.suffix.lower() == ".toml":
        from .io import load_manifest

        try:
            m = load_manifest(ws)
        except Ms4mapError:
            return 0
        ws, dem = Path(m.get("workspace") or ws), m.get("dem")
    dem_path = Path(dem) if dem else ws.with_name(f"{ws.stem}_dem.tif")
    return _file_bytes(ws) + _file_bytes(dem_path)


def _file_bytes(p: Path) -> int:
    try:
        if p.is_dir():
            return sum(f.stat().st_size for f in p.iterdir() if f.is_file())
        return p.stat().st_size if p.is_file() else 0
    except OSError:
        return 0


def _run_on(client: Any, work: _Work) -> None:
    """Run the towns of ``work`` on the cluster, never more at once than it has worker
    threads (a town that failed in the previous run is forced: ``work.retry``).

    The scheduler would otherwise send a worker queued towns besides the one it runs,
    and count every one of them as having died with it when the worker is lost; handing
    out one town per thread keeps a lost worker's failure to the town that caused it.
    """
    import uuid

    from distributed import as_completed

    tag = uuid.uuid4().hex[:8]
    # largest first (stable: manifest order among equals), so a big town does not start
    # last while the other workers sit idle
    pending = sorted(work.towns, key=_input_bytes, reverse=True)
    inflight: dict[Any, Town] = {}
    done = as_completed()

    def top_up() -> None:
        slots = max(1, sum(client.nthreads().values()))
        while pending and len(inflight) < slots:
            t = pending.pop(0)
            force = work.force or t.name in work.retry
            key = f"ms4map-town-{t.name}-{tag}"
            f = client.submit(work.fn, t, str(work.out), force=force, key=key, pure=False)
            inflight[f] = t
            done.add(f)

    try:
        top_up()
        for f in done:
            t = inflight.pop(f)
            if f.status == "finished":
                try:
                    row = f.result()
                except Exception as exc:  # noqa: BLE001 - the result could not be fetched
                    row = _lost_row(t, exc)
            else:
                try:
                    exc = f.exception()
                except BaseException as e:  # noqa: BLE001 - cancelled futures raise here
                    exc = e
                row = _lost_row(t, exc)
            work.finished(row)
            top_up()
    finally:
        client.cancel(list(inflight))
