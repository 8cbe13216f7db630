"""One town of a batch: run_town (drainage + screening into one GeoPackage) and its summary row.

:func:`run_town` runs validate -> network -> overland -> drainage -> batch screening ->
septic flags and writes ``DIR/<name>.gpkg`` with the layers of ``ms4map drainage`` and
``ms4map screen --all`` and their provenance, the same answers as those two commands on
the workspace (the options come from the same command-line parsers, so defaults cannot
drift apart).  A town whose output is complete and whose inputs, options, profile and
ms4map version are those its provenance records is ``skipped`` unless ``force=True``
(:func:`previous_summary`); :func:`write_summary` writes the rows as ``summary.csv``.

The libraries a town needs (geopandas, pyogrio, ...) are imported inside the functions
that use them, so that ``import ms4map.batch`` stays light.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import DataError, Ms4mapError, UsageError
from ..core.version import __version__
from .manifest import Town

__all__ = [
    "LAYERS",
    "SUMMARY_COLUMNS",
    "check_outputs",
    "off_dem_parcels",
    "output_path",
    "previous_summary",
    "run_town",
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
DRAINAGE_LAYERS = (
    "parcel_drainage",
    "parcel_drainage_map",
    "inlet_catchments",
    "sewersheds",
    "qa",
)
SCREEN_LAYERS = ("screening", "septic")
LAYERS = DRAINAGE_LAYERS + SCREEN_LAYERS
STATUSES = ("ok", "failed", "skipped")


_COUNTS = (
    "parcels",
    "condition_a_parcels",
    "septic_flagged",
    "outfalls",
    "off_dem_parcels",
    "condition_a_undetermined",
)


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
            if not force:
                _check_no_input_vanished(town, out)
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
    if row["status"] == "failed" and "is gone now" not in row["error"]:
        # (an output whose input vanished stays: it is the evidence until --force)
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
    from .. import pipeline
    from ..io import open_workspace, write_outputs
    from ..rules.conditions import screen_all
    from ..rules.profiles import profile_with
    from ..rules.septic import flag_septic
    from ..rules.waters import waters_for

    ws = open_workspace(town.workspace)  # as `ms4map drainage` / `screen` open it
    protected = [*ws.inputs, town.workspace, *town.option_files()]
    out = _check_town_output(out, protected)
    settings = pipeline.command_settings()  # `ms4map drainage`'s defaults
    res = pipeline.run(ws, use_cache=False, settings=settings)
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
    drained = {**res.layers(), **pipeline.model_layers(res)}  # as `ms4map drainage` writes
    layers = {**drained, "screening": scr, "septic": sep}
    rows = {k: int(len(v)) for k, v in layers.items() if k in LAYERS and v is not None}
    batch = {"key": town.key(), "summary": summary, "ms4map": __version__, "rows": rows}
    screen_prov = ws.provenance(**prof.screening_settings(), impairments=town.impairments)
    tmp = partial_path(out)
    try:
        write_outputs(
            tmp,
            drained,
            provenance={**ws.provenance(**settings), "batch": batch},
            inputs=list(ws.inputs),
        )
        write_outputs(
            tmp,
            {"screening": scr, "septic": sep},
            provenance={**screen_prov, "batch": batch},
            inputs=list(ws.inputs),
        )
        _check_inputs_unchanged(town, ws.inputs)  # computed from what is still there
        os.replace(tmp, out)  # the town's output appears complete or not at all
    finally:
        tmp.unlink(missing_ok=True)
    return summary


def _check_no_input_vanished(town: Town, out: Path) -> None:
    """Refuse to recompute a town without an input its earlier output was made from (a
    DEM deleted since): the new answer would silently differ (fewer Condition A parcels).

    Raises
    ------
    DataError
        Naming the inputs that are gone and the two ways on.
    """
    import json

    from ..io.write import provenance_rows

    if not out.is_file():
        return
    try:
        rows = provenance_rows(out)
    except Exception:  # noqa: BLE001 - an unreadable earlier output: nothing to compare
        return
    gone: set[str] = set()
    for _layer, row in rows.items():
        try:
            inputs = json.loads(row[1]).get("inputs") or {}
        except (TypeError, ValueError, AttributeError):
            continue
        gone |= {p for p in inputs if not (Path(p).is_file() or Path(p).is_dir())}
    if gone:
        raise DataError(
            f"workspace '{town.workspace}': the earlier output '{out.name}' was made with "
            f"{', '.join(repr(p) for p in sorted(gone))}, which is gone now; computing "
            "without it would change the answer silently. Fix: restore it, or rerun with "
            "--force to compute the town without it."
        )


def _check_inputs_unchanged(town: Town, inputs: dict[str, str]) -> None:
    """Refuse an answer computed from inputs that changed or vanished while it ran (a
    DEM deleted, a layer saved in QGIS): it would describe files that no longer exist.

    Raises
    ------
    DataError
        Naming each input that changed or is gone.
    """
    from ..io import file_sha256

    changed = []
    for p, digest in sorted(inputs.items()):
        if not (Path(p).is_file() or Path(p).is_dir()):
            changed.append(f"'{p}' is gone")
        elif file_sha256(p) != digest or _pending_changes(p):
            changed.append(f"'{p}' changed")
    if changed:
        raise DataError(
            f"workspace '{town.workspace}': its inputs changed while the town ran "
            f"({'; '.join(changed)}), so its answer is of files that no longer exist. "
            "Fix: rerun the batch when nobody is editing the town's files (or restore "
            "them)."
        )


#: The temporary output of a town being written: ``.<name>.partial-<host>-<pid>.gpkg``.
_PARTIAL = ".{stem}.partial-{host}-{pid}.gpkg"


def partial_path(out: Path) -> Path:
    """The temporary file a town's output is written to before it appears whole."""
    import socket

    host = "".join(c for c in socket.gethostname() if c.isalnum() or c in "-_")[:40]
    return out.with_name(_PARTIAL.format(stem=out.stem, host=host, pid=os.getpid()))


def remove_stale_partials(out_dir: str | Path) -> list[Path]:
    """Remove the temporary outputs of killed runs: those of this computer whose process
    is gone (and the old single-name ``.<name>.partial.gpkg``); another computer's, or a
    running process's, stay. Returns the files removed."""
    import socket

    host = "".join(c for c in socket.gethostname() if c.isalnum() or c in "-_")[:40]
    gone = []
    for p in Path(out_dir).glob(".*.partial*.gpkg"):
        stem, _, tail = p.name[:-5].rpartition(".partial")
        if tail:
            owner, _, pid = tail.lstrip("-").rpartition("-")
            if owner != host or not pid.isdigit() or _alive(int(pid)):
                continue
        with contextlib.suppress(OSError):
            p.unlink()
            gone.append(p)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


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
    from ..io import file_sha256
    from ..io.write import provenance_rows

    if not out.is_file():
        return None
    import json

    import pyogrio

    rows = provenance_rows(out)
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
    kept = _row_counts_kept(out, records[-1]["batch"].get("rows") or {})
    return {k: summary[k] for k in _COUNTS} if kept and set(_COUNTS) <= set(summary) else None


def _row_counts_kept(out: Path, counts: dict[str, Any]) -> bool:
    """Whether every layer of the output still has the rows the run wrote (an output of
    a version that did not record them is not known to be whole)."""
    import pyogrio

    if not set(LAYERS) <= set(counts):
        return False
    try:
        return all(
            int(pyogrio.read_info(out, layer=layer)["features"]) == int(counts[layer])
            for layer in LAYERS
        )
    except Exception:  # noqa: BLE001 - an unreadable layer is simply not reusable
        return False


def write_summary(rows: Iterable[dict[str, Any]], out_dir: str | Path) -> Path:
    """Write ``DIR/summary.csv`` (atomically), one row per town, :data:`SUMMARY_COLUMNS`."""
    import pandas as pd

    from ..core.tables import csv_text
    from ..io import write_text_output

    recs = []
    for r in rows:
        rec = {c: r.get(c) for c in SUMMARY_COLUMNS}
        rec["error"] = " ".join(str(rec["error"] or "").split())
        recs.append(rec)
    df = pd.DataFrame(recs, columns=list(SUMMARY_COLUMNS))
    for c in _COUNTS:
        df[c] = pd.array(df[c], dtype="Int64")
    return write_text_output(Path(out_dir) / "summary.csv", csv_text(df), suffixes=(".csv",))


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
    from ..io import check_output_path

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
    if out.is_dir():  # what killed runs left: their temporary outputs
        remove_stale_partials(out)
    return out.resolve()


def _check_town_output(path: Path, protected: list[Any]) -> Path:
    """A town's output path: never an input; an existing file there must be an ms4map
    output (a GeoPackage of the user's or a records file is refused), except a damaged
    one (not a readable database: a copy cut short, a disk error), which the town's run
    replaces."""
    from ..io import check_output_path
    from ..io.write import check_ms4map_output

    out = check_output_path(path, protected=protected, suffixes=(".gpkg",), ms4map_gpkg=False)
    check_ms4map_output(out, damaged_ok=True)
    return out
