"""``ms4map smp``: the SMP inventory, its inspections and maintenance, what is overdue.

::

    ms4map smp add town.gpkg --name "Pond 3" --kind P-2 --at 601200,4760300 --by jsmith \\
        --inspection-months 12 --maintenance-months 6 --owner "Maple Ridge HOA"
    ms4map smp import smps.gpkg --records town.records.gpkg --by jsmith --map name=SMP_NAME
    ms4map smp list town.gpkg [--today YYYY-MM-DD] [--json]
    ms4map smp show town.gpkg 3
    ms4map smp inspect town.gpkg 3 --date 2025-06-02 --kind routine --condition fair --by jsmith
    ms4map smp maintain town.gpkg 3 --date 2025-06-10 --actions "removed sediment" --by jsmith
    ms4map smp overdue town.gpkg [--today YYYY-MM-DD] [--json]

The records file is ``<stem>.records.gpkg`` beside the workspace unless ``--records``
names another (a records file remembers its workspace, so ``PATH`` may be it).  A
viewer's edit is refused with exit code 4.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.errors import EXIT_USAGE, UsageError
from . import Command
from .records import _common, _records_options

__all__ = ["COMMANDS", "run_smp"]

SMP_ABOUT = """stormwater management practices: inventory, inspections, maintenance, overdue

The post-construction SMP programme in the workspace's records file (docs/records.md,
"SMPs"): add or import practices (points or polygons, kinds of the NYS Stormwater
Management Design Manual), record their inspections and maintenance, list what is
overdue on their schedules.
"""


def _smp_fields(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("SMP fields")
    g.add_argument("--owner", metavar="TEXT")
    g.add_argument("--project", dest="project_id", metavar="ID", help="project id (integer)")
    g.add_argument("--address", metavar="TEXT")
    g.add_argument("--discharges-to", metavar="STRUCT_ID", help="structure it discharges to")
    g.add_argument("--drainage-area", dest="drainage_area_m2", metavar="M2", help="given area")
    g.add_argument(
        "--drainage",
        action="store_true",
        help="compute the drainage area from ms4map's catchments (runs the pipeline, cached)",
    )
    g.add_argument("--design-documents", metavar="TEXT")
    g.add_argument("--as-built-on", metavar="YYYY-MM-DD", help="date of the certified as-built")
    g.add_argument("--as-built-engineer", metavar="NAME", help="the PE who certified it")
    g.add_argument("--as-built-pe-license", metavar="NUMBER")
    g.add_argument("--built-on", metavar="YYYY-MM-DD")
    g.add_argument("--inspection-months", metavar="N", help="inspect every N months")
    g.add_argument("--maintenance-months", metavar="N", help="maintain every N months")
    g.add_argument("--notes", metavar="TEXT")


_FIELD_DESTS = (
    "owner", "project_id", "address", "discharges_to", "drainage_area_m2", "design_documents",
    "as_built_on", "as_built_engineer", "as_built_pe_license", "built_on", "inspection_months",
    "maintenance_months", "notes",
)  # fmt: skip


def _smp_options(p: argparse.ArgumentParser) -> None:
    from ..records import smp_fields

    acts = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    a = acts.add_parser("add", help="add a practice to the inventory")
    _common(a, by_required=True)
    a.add_argument("--name", required=True, metavar="TEXT")
    a.add_argument("--kind", required=True, help="P-1..P-5, W-1..W-4, I-1..I-4, F-1..F-6, ...")
    where = a.add_mutually_exclusive_group(required=True)
    where.add_argument("--at", metavar="X,Y", help="a point in the workspace's CRS")
    where.add_argument("--wkt", metavar="WKT", help="a point or polygon in the workspace's CRS")
    _smp_fields(a)
    a = acts.add_parser("import", help="import practices from a GeoPackage/shapefile/GeoJSON")
    a.add_argument("file", metavar="FILE", help="the file with the practices")
    a.add_argument("--workspace", metavar="PATH", help="the workspace (or give --records)")
    a.add_argument("--layer", metavar="NAME", help="the file's layer (when it has several)")
    a.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="the file's column for an SMP field (name, kind, owner, ...); repeatable",
    )
    a.add_argument("--drainage", action="store_true", help="compute the areas not given")
    a.add_argument("--json", action="store_true")
    _records_options(a, by_required=True)
    for name, text in (("list", "the inventory with its inspection state"),
                       ("overdue", "inspections and maintenance overdue")):  # fmt: skip
        a = acts.add_parser(name, help=text)
        _common(a, by_required=False)
        a.add_argument("--today", metavar="YYYY-MM-DD", help="day the schedule is judged on")
        a.add_argument("--json", action="store_true")
    a = acts.add_parser("show", help="one practice: its versions, inspections, maintenance")
    _common(a, by_required=False)
    a.add_argument("smp_id", type=int, metavar="SMP_ID")
    a.add_argument("--today", metavar="YYYY-MM-DD")
    a.add_argument("--json", action="store_true")
    a = acts.add_parser("inspect", help="record an inspection of a practice")
    _common(a, by_required=True)
    a.add_argument("smp_id", type=int, metavar="SMP_ID")
    a.add_argument("--date", required=True, metavar="YYYY-MM-DD")
    a.add_argument("--kind", default="routine", help=", ".join(smp_fields.INSPECTION_KINDS))
    a.add_argument("--condition", help=", ".join(smp_fields.SMP_CONDITIONS))
    a.add_argument("--inspector", metavar="NAME", help="default: --by")
    a.add_argument("--findings", metavar="TEXT")
    a.add_argument("--actions-required", metavar="TEXT")
    a.add_argument("--acceptable", metavar="yes|no", help="the facilities are acceptable")
    a.add_argument("--notes", metavar="TEXT")
    a = acts.add_parser("maintain", help="record maintenance done on a practice")
    _common(a, by_required=True)
    a.add_argument("smp_id", type=int, metavar="SMP_ID")
    a.add_argument("--date", required=True, metavar="YYYY-MM-DD")
    a.add_argument("--actions", required=True, metavar="TEXT", help="what was done")
    a.add_argument("--performed-by", metavar="NAME", help="default: --by")
    a.add_argument("--notes", metavar="TEXT")


def _open(args: argparse.Namespace, path: Any = None) -> Any:
    from ..records import default_user, open_records
    from . import workspace_kwargs

    if path is None and getattr(args, "path", None) is not None:
        kw = workspace_kwargs(args)
        extra = {
            "layers": kw["layers"],
            "field_map": kw["field_map"] if (args.field or args.field_map) else None,
            "crs": kw["crs"],
        }
        path, records = args.path, args.records
    else:
        extra, records = {}, None
    return open_records(
        path,
        user=args.by or default_user(),
        role=args.role,
        records=records,
        profile=args.profile,
        users_file=args.users_file,
        **extra,
    )


def _print(df: Any, as_json: bool) -> None:
    if "geometry" in getattr(df, "columns", ()):
        df = df.drop(columns="geometry")
    if as_json:
        print(df.to_json(orient="records", indent=1))
    else:
        print(df.to_string(index=False) if len(df) else "(none)")


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    return {k: getattr(args, k) for k in _FIELD_DESTS if getattr(args, k, None) is not None}


def _geometry(args: argparse.Namespace) -> Any:
    import shapely

    if args.wkt:
        return args.wkt
    try:
        x, y = (float(v) for v in args.at.split(","))
    except ValueError:
        raise UsageError(f"--at {args.at!r}: give X,Y (e.g. --at 601200,4760300).") from None
    return shapely.Point(x, y)


def _import_records(args: argparse.Namespace) -> Any:
    if args.records and str(args.records).endswith(".records.gpkg") and not args.workspace:
        return _open(args, args.records)
    if not args.workspace:
        raise UsageError(
            "ms4map smp import needs the records: --records FILE.records.gpkg, or "
            "--workspace PATH (its records file beside it)."
        )
    from ..records import default_user, open_records

    return open_records(
        args.workspace,
        user=args.by or default_user(),
        role=args.role,
        records=args.records,
        profile=args.profile,
        users_file=args.users_file,
    )


def run_smp(args: argparse.Namespace) -> int:
    """``ms4map smp ACTION``."""
    from ..records import smp, smp_import

    if not args.action:
        raise UsageError("ms4map smp needs an action: add, import, list, show, inspect, ...")
    rec = _import_records(args) if args.action == "import" else _open(args)
    try:
        if args.action == "add":
            sid = smp.add_smp(rec, args.name, args.kind, _geometry(args), **_fields(args))
            print(f"SMP {sid} ({args.name}) added.")
            if args.drainage:
                _drainage(rec, [sid])
            return 0
        if args.action == "import":
            mapping = {}
            for item in args.map:
                field, sep, col = item.partition("=")
                if not sep:
                    raise UsageError(f"--map {item!r}: give FIELD=COLUMN (e.g. name=SMP_NAME).")
                mapping[field.strip()] = col.strip()
            out = smp_import.import_smps(rec, args.file, layer=args.layer, columns=mapping)
            if args.drainage:
                _drainage(rec, out["added"] + out["updated"])
            if args.json:
                print(json.dumps(out, indent=1))
            else:
                print(
                    f"Layer '{out['layer']}': {out['rows']} rows; {len(out['added'])} added, "
                    f"{len(out['updated'])} updated, {len(out['unchanged'])} unchanged."
                )
                if out["ignored_columns"]:
                    print(f"Columns not imported: {', '.join(out['ignored_columns'])}.")
            return 0
        if args.action == "inspect":
            fields = {
                "inspection_kind": args.kind,
                "condition": args.condition,
                "inspector": args.inspector,
                "findings": args.findings,
                "actions_required": args.actions_required,
                "acceptable": args.acceptable,
                "notes": args.notes,
            }
            iid = smp.inspect_smp(
                rec, args.smp_id, args.date, **{k: v for k, v in fields.items() if v is not None}
            )
            print(f"Inspection {iid} of SMP {args.smp_id} on {args.date} recorded.")
            return 0
        if args.action == "maintain":
            fields = {
                "actions": args.actions,
                "performed_by": args.performed_by,
                "notes": args.notes,
            }
            mid = smp.maintain_smp(
                rec, args.smp_id, args.date, **{k: v for k, v in fields.items() if v is not None}
            )
            print(f"Maintenance {mid} of SMP {args.smp_id} on {args.date} recorded.")
            return 0
    except PermissionError as exc:
        print(f"ms4map: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.action == "list":
        st = smp.smp_status(rec, args.today)
        cols = ["smp_id", "name", "practice", "owner", "last_inspection", "inspection_due",
                "inspection_status", "maintenance_due", "maintenance_status"]  # fmt: skip
        _print(st[cols], args.json)
        return 0
    if args.action == "overdue":
        _print(smp.overdue(rec, args.today), args.json)
        return 0
    return _show(rec, args)


def _drainage(rec: Any, ids: list[int]) -> None:
    from ..records import smp_import

    got = smp_import.compute_drainage(rec, ids, overwrite=True)
    for sid, (area, method) in got.items():
        print(
            f"SMP {sid}: drainage area {area:,.0f} m2 ({area / 4046.8564224:.2f} acres), {method}."
        )


def _show(rec: Any, args: argparse.Namespace) -> int:
    from ..core.errors import DataError
    from ..records import smp

    inv = smp.smps(rec, history=True)
    mine = inv[inv["smp_id"] == args.smp_id]
    if not len(mine):
        raise DataError(f"No SMP {args.smp_id}. Fix: see ms4map smp list.")
    st = smp.smp_status(rec, args.today)
    state = st[st["smp_id"] == args.smp_id].drop(columns="geometry")
    ins = smp.smp_inspections(rec, args.smp_id)
    mnt = smp.smp_maintenance(rec, args.smp_id)
    cur = mine.iloc[-1]
    if args.json:
        print(
            json.dumps(
                {
                    "smp": json.loads(mine.drop(columns="geometry").to_json(orient="records")),
                    "geometry": cur.geometry.wkt,
                    "status": json.loads(state.to_json(orient="records"))[0],
                    "inspections": json.loads(ins.to_json(orient="records")),
                    "maintenance": json.loads(mnt.to_json(orient="records")),
                },
                indent=1,
            )
        )
        return 0
    print(f"SMP {args.smp_id}: {cur['name']}, {cur['practice']} (version {cur['version']})")
    skip = {"smp_id", "name", "kind", "practice", "geometry", "version"}
    for k, v in cur.items():
        if k not in skip and v is not None and str(v) not in ("nan", "<NA>", "None"):
            print(f"  {k}: {v}")
    print(f"  geometry: {cur.geometry.geom_type}")
    print("\nSchedule:")
    _print(state.drop(columns=["smp_id", "name", "kind", "practice"]), False)
    print("\nInspections:")
    _print(ins.drop(columns=["version"], errors="ignore"), False)
    print("\nMaintenance:")
    _print(mnt.drop(columns=["version"], errors="ignore"), False)
    return 0


COMMANDS = (Command("smp", SMP_ABOUT, run_smp, _smp_options),)
