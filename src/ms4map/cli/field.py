"""``ms4map field``: the offline field package, out to the outfalls and back into the records.

::

    ms4map field export town.gpkg --out trip.gpkg [--outfalls OF-1,OF-2] \\
        [--schedule plan.csv --year 2026]
    ms4map field import trip.gpkg --records town.records.gpkg --by jsmith [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import EXIT_USAGE
from . import Command, input_paths
from .records import _common, _open, _records_options, _refused

__all__ = ["COMMANDS", "run_field"]

ABOUT = """the offline field package for outfall inspections: export, import

'export' writes one GeoPackage a crew carries (the outfalls to visit, their upstream
structures and pipes, the parcels around them, a hillshade basemap, the open cases and
their sampling plans, empty inspection, sample and photo tables with the ORI value lists
and rules). 'import' checks every row the crew wrote with the rules of 'ms4map inspect'
and 'ms4map case sample', adds the valid ones in one transaction (audited, naming the package,
the devices and the user) and lists the refused ones with the field and the fix;
importing a package again adds nothing (docs/records.md, "Field packages").
"""


def _options(p: argparse.ArgumentParser) -> None:
    acts = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    a = acts.add_parser("export", help="write a field package for outfalls to visit")
    _common(a, by_required=False)
    a.add_argument("--out", required=True, metavar="FILE.gpkg", help="the new package")
    a.add_argument("--outfalls", metavar="ID,ID,...", help="the outfalls to visit (default all)")
    a.add_argument(
        "--schedule", metavar="FILE.csv", help="a screening schedule (outfalls schedule)"
    )
    a.add_argument("--year", type=int, metavar="YYYY", help="the schedule's year to carry")
    a.add_argument("--no-hillshade", action="store_true", help="no basemap raster")
    a.add_argument(
        "--no-qgis-project",
        action="store_true",
        help="do not write the QGIS project (inside the package and as <out>.qgz beside it; "
        "made with QGIS's "
        "Python, /usr/bin/python3 with python3-qgis, when installed)",
    )
    b = acts.add_parser("import", help="check and add what a crew wrote into a package")
    b.add_argument("package", metavar="PACKAGE.gpkg")
    _records_options(b, by_required=True)
    b.add_argument("--json", action="store_true", help="print the import report as JSON")


def run_field(args: argparse.Namespace) -> int:
    """``ms4map field ACTION``."""
    action = getattr(args, "action", None)
    if action == "export":
        return _export(args)
    if action == "import":
        return _import(args)
    print("ms4map field: error: give an action: export, import", file=sys.stderr)
    return EXIT_USAGE


def _export(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..records import field_export

    rec = _open(args)
    out = args.out
    if any(str(p) == str(out) for p in input_paths(args)):
        raise UsageError(f"--out {out} is an input file: give a new .gpkg.")
    ids = [s for s in (args.outfalls or "").split(",") if s.strip()] or None
    info = field_export.export_package(
        rec,
        out,
        outfalls=ids,
        schedule=args.schedule,
        year=args.year,
        hillshade=not args.no_hillshade,
        qgis_project=not args.no_qgis_project,
    )
    print(
        f"Field package {info['package_id']} written to {info['path']}: {info['outfalls']} "
        f"outfall(s), {info['structures']} structure(s), {info['conveyances']} pipe(s), "
        f"{info['parcels']} parcel(s), {info['cases']} open case(s)"
        + (", hillshade basemap" if info["hillshade"] else ", no basemap (no DEM)")
        + f"; {info['bytes'] / 1e6:.1f} MB."
    )
    if info["qgis_project"]:
        print(
            "QGIS project (forms with the value lists; QGIS or QField): inside the package "
            f"(keep its file name), and {info['qgis_project']}"
        )
    elif not args.no_qgis_project:
        print(
            "No QGIS project written: QGIS's Python is not installed (python3-qgis); the "
            "package opens in QGIS as a GeoPackage.",
            file=sys.stderr,
        )
    return 0


def _import(args: argparse.Namespace) -> int:
    from ..records import field_import

    if not args.records:
        print("ms4map field import: error: give --records FILE.records.gpkg", file=sys.stderr)
        return EXIT_USAGE
    rec = _open_records_file(args)
    try:
        report = field_import.import_package(rec, args.package)
    except PermissionError as exc:
        return _refused(exc)
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    else:
        print(report_text(report))
    return 0


def _open_records_file(args: argparse.Namespace):  # -> Records
    from ..records import default_user, open_records

    return open_records(
        args.records,
        user=args.by or default_user(),
        role=args.role,
        profile=args.profile,
        users_file=args.users_file,
    )


def report_text(report: dict) -> str:
    """The import report as lines for people."""
    a = report["added"]
    lines = [
        f"Field package {report['package_id']} (device(s) {', '.join(report['devices']) or '-'}): "
        f"added {a['inspections']} inspection(s), {a['samples']} sample(s), "
        f"{a['photos']} photo(s); {report['already']} row(s) imported before; "
        f"{len(report['refused'])} refused."
    ]
    for r in report["refused"]:
        what = r["outfall_id"] or (f"case {r['case_id']}" if r["case_id"] else "")
        lines.append(
            f"  REFUSED {r['table'][:-1]} {r['device_uuid']} ({what}), field "
            f"'{r['field'] or '-'}': {r['reason']}"
        )
    lines += [f"  CONFLICT {c}" for c in report["conflicts"]]
    return "\n".join(lines)


COMMANDS = (Command("field", ABOUT, run_field, _options),)
