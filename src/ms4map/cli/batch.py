"""``ms4map batch MANIFEST.toml --out DIR``: many towns at once, one Dask task per town.

Each town gets ``DIR/<name>.gpkg`` (the layers of ``ms4map drainage`` and
``ms4map screen --all``, with provenance); ``DIR/summary.csv`` has one row per town.
Exit 0 when every town is ``ok`` or ``skipped``, 1 when some failed, 4 for a bad
manifest or scheduler.  See ``docs/batch.md``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.errors import UsageError
from . import Command, add_debug_option

__all__ = ["COMMANDS", "run"]


ABOUT = """run drainage and screening for many towns (one Dask task per town)

Run the whole chain (validate, network, overland, drainage, batch screening, septic flags)
for every [[town]] of MANIFEST.toml, one task per town on dask.distributed. Writes
DIR/<name>.gpkg (the layers of `ms4map drainage` and `ms4map screen --all`, with
provenance) and DIR/summary.csv. A town that fails is reported and the others finish; a
town whose output is up to date is skipped. Manifest layout and schedulers: docs/batch.md.
"""


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("manifest", metavar="MANIFEST.toml", help="the towns ([[town]] tables)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder of the outputs")
    p.add_argument(
        "--scheduler",
        default="local",
        metavar="local|local:N|ADDRESS|none",
        help="local: a local Dask cluster, one single-threaded worker per core (default); "
        "local:N: N workers (at most one per core); tcp://host:8786: an existing scheduler; "
        "none: in this process, without Dask. Every scheduler but none needs the dask extra: "
        "python -m pip install 'ms4map[dask]'",
    )
    p.add_argument(
        "--dashboard",
        action="store_true",
        help="serve the local cluster's Dask dashboard on 127.0.0.1:8787 (this machine only; "
        "it has no password). Off by default",
    )
    p.add_argument(
        "--force", action="store_true", help="recompute towns whose output is up to date"
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_debug_option(p)


def _early(argv: list[str]) -> None:
    """With a local scheduler (the default), start the workers' fork server now.

    Before the parser is built: building it imports the other commands' libraries
    (geopandas, GDAL), and the fork server's own imports go on meanwhile on another core.
    Nothing for ``--help``, ``--scheduler none`` or an address; a bad value is left to
    the parser to report.
    """
    if {"-h", "--help"} & set(argv):
        return
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--scheduler", default="local")
    known, _ = pre.parse_known_args(argv)
    from ..batch import parse_scheduler, start_worker_server

    try:
        local = parse_scheduler(known.scheduler)[0] == "local"
    except UsageError:
        return
    if local:
        start_worker_server()


def run(args: argparse.Namespace) -> int:
    from ..batch import cpu_cores, parse_scheduler, read_manifest, run_batch, start_worker_server

    # a typo is a usage error before the manifest is read
    kind, n_workers = parse_scheduler(args.scheduler)
    if kind == "local":
        start_worker_server()  # the workers' imports go on while the manifest is checked
        asked = args.scheduler.strip().lower().partition(":")[2]
        if asked.isdigit() and int(asked) > n_workers:
            print(
                f"ms4map: note: --scheduler {args.scheduler} asks for {int(asked)} workers; "
                f"this machine has {cpu_cores()} core(s), so the local cluster gets "
                f"{n_workers} (never more worker processes than cores).",
                file=sys.stderr,
            )
    towns = read_manifest(args.manifest)

    def note(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    width = len(str(len(towns)))

    def on_result(row: dict[str, Any], done: int, total: int) -> None:
        if args.quiet:
            return
        secs = row.get("seconds")
        took = f" in {secs:.1f} s" if isinstance(secs, (int, float)) else ""
        if row["status"] == "failed":
            what = "failed" + took
        else:
            undetermined = (
                f" ({row['condition_a_undetermined']} undetermined)"
                if row.get("condition_a_undetermined")
                else ""
            )
            what = (
                f"{row['status']}{took}: {row['parcels']} parcels, "
                f"{row['condition_a_parcels']} would be Condition A{undetermined}, "
                f"{row['septic_flagged']} septic flagged, {row['outfalls']} outfalls"
            )
            if row.get("off_dem_parcels"):
                what += f"; {row['off_dem_parcels']} drain partly off the DEM"
        note(f"[{done:>{width}}/{total}] {row['name']}: {what}")

    note(f"{len(towns)} town(s) from {args.manifest} -> {args.out} (scheduler {args.scheduler})")
    res = run_batch(
        towns,
        args.out,
        scheduler=args.scheduler,
        force=args.force,
        on_start=note,
        on_result=on_result,
        dashboard=args.dashboard,
    )
    c = res.counts()
    print(
        f"{len(res.rows)} town(s) in {res.wall_seconds:.1f} s: {c['ok']} ok, "
        f"{c['skipped']} skipped, {c['failed']} failed -> {res.summary_path}"
    )
    off = [r for r in res.rows if r.get("off_dem_parcels")]
    if off:
        towns_off = ", ".join(f"{r['name']} ({r['off_dem_parcels']} parcels)" for r in off[:10])
        if len(off) > 10:
            towns_off += f" and {len(off) - 10} more (summary.csv, column off_dem_parcels)"
        print(
            f"ms4map: warning: in {len(off)} town(s) runoff from some parcels leaves the DEM, "
            f"so their answers there may be undetermined: {towns_off}. Fix: cut those towns' "
            "DEM with a wider margin beyond the town and rerun them (docs/scale.md); each "
            "town's qa layer names the parcels (drainage_partly_unknown).",
            file=sys.stderr,
        )
    for row in res.failed:
        print(f"ms4map: error: town '{row['name']}': {row['error']}", file=sys.stderr)
    return 1 if res.failed else 0


COMMANDS = (Command("batch", ABOUT, run, _options, early=_early),)
