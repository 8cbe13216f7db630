"""``ms4map outfalls``: outfall priorities, the five-year screening schedule, field verification.

::

    ms4map outfalls schedule town.gpkg --start 2026 --years 5 --per-year 40 --out plan.csv
    ms4map outfalls priority town.gpkg [--no-network] [--out FILE.csv]
    ms4map outfalls verification town.gpkg [--json]
    ms4map outfalls accept-move town.gpkg --outfall OF-009 --inspection 12 --by jsmith \\
        --reason "found 8 m upstream"
"""

from __future__ import annotations

import argparse
import sys

from ..core.errors import EXIT_USAGE
from . import Command, input_paths
from .records import _common, _open, _refused

__all__ = ["COMMANDS", "run_outfalls"]

ABOUT = """outfall priorities, the five-year screening schedule, field verification

Outfall priorities from the upstream traces and the IDDE records, a screening calendar
that screens every outfall at least once in the years planned (never screened first,
then priority from high to low, then the oldest last screening), and the outfalls
verified in the field versus mapped only (docs/records.md).
"""


def _options(p: argparse.ArgumentParser) -> None:
    acts = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    for name, helptext in (
        ("schedule", "the screening calendar, one row per outfall visit"),
        ("priority", "each outfall's priority with its components and weights"),
    ):
        a = acts.add_parser(name, help=helptext)
        _common(a, by_required=False)
        if name == "schedule":
            a.add_argument("--start", type=int, required=True, metavar="YYYY", help="first year")
            a.add_argument("--years", type=int, default=5, help="years planned (default 5)")
            a.add_argument(
                "--per-year",
                type=int,
                required=True,
                metavar="N",
                help="visits the crew makes a year",
            )
        a.add_argument("--out", metavar="FILE.csv", help="write the table as CSV")
        a.add_argument(
            "--no-network",
            action="store_true",
            help="do not run the pipeline: the upstream components (septic parcels, property "
            "classes) are then not known",
        )
    a = acts.add_parser("verification", help="verified versus mapped-only, distance moved")
    _common(a, by_required=False)
    a.add_argument("--json", action="store_true")
    a = acts.add_parser("accept-move", help="accept the position an inspection found (audited)")
    _common(a, by_required=True)
    a.add_argument("--outfall", required=True, metavar="ID")
    a.add_argument("--inspection", required=True, type=int, metavar="ID")
    a.add_argument("--reason", metavar="TEXT", default="")


def run_outfalls(args: argparse.Namespace) -> int:
    """``ms4map outfalls ACTION``."""
    from ..core.tables import csv_text
    from ..io import write_text_output

    action = getattr(args, "action", None)
    if not action:
        print(
            "ms4map outfalls: error: give an action: schedule, priority, verification, accept-move",
            file=sys.stderr,
        )
        return EXIT_USAGE
    rec = _open(args)
    if action == "accept-move":
        try:
            n = rec.accept_move(args.outfall, inspection_id=args.inspection, reason=args.reason)
        except PermissionError as exc:
            return _refused(exc)
        print(
            f"Move {n}: outfall {args.outfall} now placed where inspection {args.inspection} "
            f"found it, accepted by {rec.user} (recorded in the audit trail)."
        )
        return 0
    if action == "verification":
        v = rec.verification()
        print(v.to_json(orient="records", indent=1) if args.json else v.to_string(index=False))
        return 0
    protected = [*input_paths(args), *rec.inputs, rec.path]
    if action == "priority":
        table, warnings = rec.priorities(network=not args.no_network), []
    else:
        _scores, table, warnings = rec.schedule(
            args.start, years=args.years, per_year=args.per_year, network=not args.no_network
        )
    for w in warnings:
        print(f"ms4map outfalls: warning: {w}", file=sys.stderr)
    if args.out:
        out = write_text_output(
            args.out, csv_text(table), protected=protected, option="--out", suffixes=(".csv",)
        )
        print(f"{len(table)} row(s) written to {out}", file=sys.stderr)
    else:
        print(table.to_string(index=False))
    return 0


COMMANDS = (Command("outfalls", ABOUT, run_outfalls, _options),)
