"""``ms4map inspect``, ``ms4map records`` and ``ms4map case``: the IDDE records.

One outfall inspection::

    ms4map inspect town.gpkg --outfall OF-009 --date 2025-06-02 --by jsmith \\
        --flow-present yes --flow-estimate trickle --odor 2 --detergents 0.4 \\
        --characterization suspect --photo outfall.jpg

Figures, exports and the annual report::

    ms4map records town.gpkg --summary --year 2025 [--json]
    ms4map records town.gpkg --export records.gpkg          # or FILE.csv --table cases
    ms4map records town.gpkg --annual-report idde_2025.pdf  # or FILE.csv

Cases and track-down samples::

    ms4map case open town.gpkg --outfall OF-009 --date 2025-06-02 --by jsmith
    ms4map case sample town.gpkg 1 --structure MH-0042 --date 2025-06-04 --by jsmith \\
        --result flow --detergents 0.5
    ms4map case next-sample town.gpkg 1
    ms4map case advance town.gpkg 1 --step source_found --parcel 106.12-2-14 --date ...
    ms4map case show town.gpkg 1

Every command writes to ``<stem>.records.gpkg`` beside the workspace unless
``--records FILE`` names another file.  A viewer's edit is refused with exit code 4.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.errors import EXIT_USAGE
from . import Command, add_profile_option, add_workspace_options, input_paths

__all__ = ["COMMANDS", "run_case", "run_inspect", "run_records"]


def _common(p: argparse.ArgumentParser, *, by_required: bool) -> None:
    """The workspace options, then the records options (:func:`_records_options`)."""
    add_workspace_options(p)
    _records_options(p, by_required=by_required)


def _records_options(p: argparse.ArgumentParser, *, by_required: bool) -> None:
    g = p.add_argument_group("records options")
    g.add_argument(
        "--records",
        metavar="FILE.gpkg",
        help="records file (default: <stem>.records.gpkg beside the workspace)",
    )
    g.add_argument(
        "--by",
        metavar="NAME",
        required=by_required,
        help="who records it (written with every change): a recorded claim, not a login; "
        "a users file, when there is one, must list NAME (docs/records.md, 'Who recorded it')"
        + ("" if by_required else " (default: your login name)"),
    )
    g.add_argument("--role", choices=("smo", "viewer"), help="act as this role (default smo)")
    g.add_argument(
        "--users-file",
        metavar="FILE.toml",
        help="users file that may list viewers (default: $MS4MAP_USERS_FILE)",
    )
    add_profile_option(g)


def _field_options(p: argparse.ArgumentParser, fields: Any, *, skip: tuple[str, ...] = ()) -> None:
    g = p.add_argument_group("field tests and observations")
    for f in fields:
        if f.name in skip:
            continue
        opt = "--" + f.name.replace("_", "-")
        if f.kind == "bool":
            g.add_argument(opt, dest=f"f_{f.name}", metavar="yes|no")
        elif f.kind == "choice":
            g.add_argument(opt, dest=f"f_{f.name}", metavar="|".join(f.choices))
        elif f.kind == "severity":
            g.add_argument(opt, dest=f"f_{f.name}", metavar="0-3")
        else:
            unit = f" ({f.unit})" if f.unit and f.kind in ("number", "time") else ""
            g.add_argument(opt, dest=f"f_{f.name}", metavar="VALUE", help=f.name + unit)


def _today_option(p: argparse.ArgumentParser) -> None:
    """``--today``: the day deadlines are judged on (``records`` and ``case show``)."""
    p.add_argument("--today", metavar="YYYY-MM-DD", help="day the deadlines are judged on")


def _fields_from(args: argparse.Namespace) -> dict[str, Any]:
    return {k[2:]: v for k, v in vars(args).items() if k.startswith("f_") and v is not None}


INSPECT_ABOUT = """record one outfall inspection (IDDE records)

Record one outfall reconnaissance inspection in the workspace's records file
(docs/records.md). Values are checked: an unknown outfall, a future date or a value outside
its list is refused (exit 2) and nothing is written.
"""

RECORDS_ABOUT = """IDDE records: yearly summary, outfall status, export, annual report

Read the workspace's IDDE records: the reporting-year summary, the derived outfall status,
case deadlines, an export, or the annual report.
"""

CASE_ABOUT = """open and advance an IDDE case, record track-down samples

IDDE cases: open one at an outfall, record its steps (deadlines from the municipality
profile), its track-down samples and the next structure to sample.
"""


def _inspect_options(p: argparse.ArgumentParser) -> None:
    from ..records import INSPECTION_FIELDS

    _records_options(p, by_required=True)
    p.add_argument("--outfall", required=True, metavar="ID", help="outfall id")
    p.add_argument("--date", required=True, metavar="YYYY-MM-DD", help="date of the inspection")
    _field_options(p, INSPECTION_FIELDS)
    p.add_argument("--photo", action="append", default=[], metavar="FILE", help="JPEG/PNG photo")


def _records_command_options(p: argparse.ArgumentParser) -> None:
    _records_options(p, by_required=False)
    p.add_argument("--summary", action="store_true", help="figures of one reporting year")
    p.add_argument(
        "--year",
        type=int,
        metavar="YYYY",
        help="the reporting period that starts in YYYY (under the New York profiles the permit "
        "year: --year 2025 = 3 January 2025 to 2 January 2026; default: the one today is in)",
    )
    p.add_argument(
        "--period",
        metavar="KIND",
        help="permit_year, interim (3 January - 30 June), calendar, fiscal (default: the "
        "profile's, docs/records.md 'Reporting periods')",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--status", action="store_true", help="derived status of every outfall")
    p.add_argument("--deadlines", action="store_true", help="deadlines of every case")
    _today_option(p)
    p.add_argument("--export", metavar="FILE.gpkg|FILE.csv", help="write the records")
    p.add_argument(
        "--table",
        default="inspections",
        help="table of a CSV export: inspections, samples, cases, outfall_status, deadlines, "
        "attachments, audit, projects, construction, smps, smp_status, smp_inspections, "
        "smp_maintenance (default %(default)s)",
    )
    p.add_argument(
        "--annual-report", metavar="FILE.csv|FILE.pdf", help="figures per reporting year"
    )
    p.add_argument(
        "--pack",
        metavar="DIR",
        help="the compliance pack of the period: a PDF (the annual report first, then the IDDE "
        "counts, mapping progress, open cases, expedited list) and a CSV per section, every "
        "count with the ids behind it (CSV only: openpyxl is not a dependency)",
    )
    p.add_argument(
        "--network",
        action="store_true",
        help="with --pack: run the pipeline (cached) to count the sewersheds drawn",
    )
    p.add_argument(
        "--override",
        metavar="KEY=N",
        help="type over a count of the pack (e.g. complaints_received=3): recorded in the "
        "audit trail with --by, the time and --reason (required)",
    )
    p.add_argument("--reason", metavar="TEXT", help="why the count is typed over (--override)")
    p.add_argument("--backup", metavar="FILE.gpkg", help="consistent copy (SQLite backup API)")
    p.add_argument(
        "--verify",
        action="store_true",
        help="check that nothing was changed outside ms4map: the audit's hash chain and every "
        "row against its audit row (exit 2 when something was)",
    )


def _case_options(p: argparse.ArgumentParser) -> None:
    from ..records import SAMPLE_FIELDS, STEPS
    from ..records.fields import ORIGINS

    acts = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    a = acts.add_parser("open", help="open a case at an outfall")
    _common(a, by_required=True)
    a.add_argument("--outfall", required=True, metavar="ID")
    a.add_argument("--date", required=True, metavar="YYYY-MM-DD")
    a.add_argument("--origin", default="complaint", help=f"{' or '.join(ORIGINS)}")
    a.add_argument("--description", metavar="TEXT")
    a.add_argument("--inspection", type=int, metavar="ID", help="inspection that found it")
    a.add_argument("--photo", action="append", default=[], metavar="FILE")
    a.add_argument(
        "--again",
        action="store_true",
        help="open a second case although one is open at this outfall from the same day, "
        "origin and description (refused otherwise: the same case recorded twice)",
    )
    a = acts.add_parser("advance", help="record the next step of a case")
    _common(a, by_required=True)
    a.add_argument("case_id", type=int, metavar="CASE_ID")
    a.add_argument("--step", required=True, help=", ".join(list(STEPS)[1:]))
    a.add_argument("--date", required=True, metavar="YYYY-MM-DD")
    a.add_argument("--parcel", metavar="ID", help="source parcel (step source_found)")
    a.add_argument(
        "--deadline",
        metavar="YYYY-MM-DD",
        help="remedy deadline (notice_sent; required unless the profile sets one, e.g. 48 hours)",
    )
    a.add_argument("--outcome", help="upheld or overturned (appeal_decided)")
    a.add_argument("--reason", metavar="TEXT", help="why the case is closed (closed)")
    a.add_argument("--notes", metavar="TEXT")
    a.add_argument("--photo", action="append", default=[], metavar="FILE")
    a = acts.add_parser("sample", help="record a track-down sample at a structure")
    _common(a, by_required=True)
    a.add_argument("case_id", type=int, metavar="CASE_ID")
    a.add_argument("--structure", required=True, metavar="ID")
    a.add_argument("--date", required=True, metavar="YYYY-MM-DD")
    _field_options(a, SAMPLE_FIELDS)
    a.add_argument("--photo", action="append", default=[], metavar="FILE")
    a.add_argument(
        "--again",
        action="store_true",
        help="record a second sample equal in every reading to one already there",
    )
    a = acts.add_parser("next-sample", help="the next structure to sample (runs the pipeline)")
    _common(a, by_required=False)
    a.add_argument("case_id", type=int, metavar="CASE_ID")
    a.add_argument("--weight", default="area", help="area, candidates or structures")
    a.add_argument("--json", action="store_true")
    a = acts.add_parser("show", help="a case's steps, deadlines and samples")
    _common(a, by_required=False)
    a.add_argument("case_id", type=int, metavar="CASE_ID")
    _today_option(a)
    a.add_argument("--json", action="store_true")


def _open(args: argparse.Namespace, *, by: str | None = None):  # -> Records
    from ..records import default_user, open_records
    from . import workspace_kwargs

    kw = workspace_kwargs(args)
    return open_records(
        args.path,
        user=by or args.by or default_user(),
        role=args.role,
        records=args.records,
        profile=args.profile,
        layers=kw["layers"],
        field_map=kw["field_map"] if (args.field or args.field_map) else None,
        crs=kw["crs"],
        users_file=args.users_file,
    )


def _refused(exc: PermissionError) -> int:
    print(f"ms4map: error: {exc}", file=sys.stderr)
    return EXIT_USAGE


def run_inspect(args: argparse.Namespace) -> int:
    """``ms4map inspect``."""
    from ..records import check_photo

    for ph in args.photo:  # check photos before anything is written
        check_photo(ph)
    rec = _open(args)
    try:
        # the inspection and its photos in one transaction: all of them or nothing
        iid = rec.add_inspection(args.outfall, args.date, photos=args.photo, **_fields_from(args))
        att = args.photo
    except PermissionError as exc:
        return _refused(exc)
    row = rec.inspections().set_index("inspection_id").loc[iid]
    st = rec.outfall_status().set_index("outfall_id").loc[str(args.outfall)]
    print(
        f"Inspection {iid} of outfall {args.outfall} on {row['date']} recorded in {rec.path}"
        + (f" with {len(att)} photo(s)" if att else "")
        + "."
    )
    print(f"Flow type: {row['flow_type']} ({row['flow_type_reason']})")
    print(f"Outfall status: {st['status']} ({st['reason']}).")
    return 0


def _print_table(df: Any, as_json: bool) -> None:
    if as_json:
        print(df.to_json(orient="records", indent=1))
    else:
        print(df.to_string(index=False) if len(df) else "(none)")


def run_records(args: argparse.Namespace) -> int:
    """``ms4map records``."""
    from ..io import check_output_path

    if not any(
        (
            args.summary,
            args.status,
            args.deadlines,
            args.export,
            args.annual_report,
            args.backup,
            args.verify,
            args.pack,
            args.override,
        )
    ):
        print(
            "ms4map records: error: say what to do: --summary, --status, --deadlines, "
            "--export FILE, --annual-report FILE, --pack DIR, --override KEY=N, --backup FILE "
            "or --verify.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    protected = input_paths(args)
    for opt, value, suffixes in (
        ("--export", args.export, (".gpkg", ".csv")),
        ("--annual-report", args.annual_report, (".csv", ".pdf")),
        ("--backup", args.backup, (".gpkg",)),
    ):
        if value:
            check_output_path(
                value,
                protected=protected,
                suffixes=suffixes,
                option=opt,
                ms4map_gpkg=opt != "--backup",  # a backup refuses any existing file
            )
    rec = _open(args)
    period = rec.period(args.year, args.period)  # an unknown period refused here
    if args.year is not None or args.period is not None:
        print(f"Reporting period: {period.text()}.", file=sys.stderr)
    if args.summary:
        _print_summary(rec, args, period)
    if args.status:
        st = rec.outfall_status()
        _print_table(st.drop(columns="geometry"), args.json)
    if args.deadlines:
        _print_table(rec.deadlines(today=args.today), args.json)
    if args.export:
        out = rec.export(args.export, table=args.table)
        print(f"Records written to {out}", file=sys.stderr)
    if args.annual_report:
        from ..records.annual import write_annual_report

        out = write_annual_report(
            rec.annual_report(args.year, period=args.period),
            args.annual_report,
            title=f"{rec.profile.municipality} - {rec.profile.law}",
            protected=[*protected, *rec.inputs, rec.path],
        )
        print(f"Annual report written to {out}", file=sys.stderr)
    if args.override and (code := _override(rec, args, period)):
        return code
    if args.pack:
        _write_pack(rec, args, protected)
    if args.backup:
        out = rec.backup(args.backup)
        print(f"Backup of {rec.path.name} written to {out}", file=sys.stderr)
    if args.verify:
        return _print_verify(rec)
    return 0


def _print_summary(rec: Any, args: argparse.Namespace, period: Any) -> None:
    """``--summary``: the figures of the period, as a table or JSON."""
    s = rec.summary(args.year, period=args.period)
    if args.json:
        print(json.dumps(s, indent=1))
    else:
        from ..records.annual import LABELS

        print(f"IDDE summary, {period.text()}, {rec.profile.municipality}")
        for k, label in LABELS.items():
            if k in ("period", "period_start", "period_end"):
                continue
            v = f"{s[k]:.0%}" if k == "screened_last_5_years" else s[k]
            print(f"  {label}: {v}")


def _override(rec: Any, args: argparse.Namespace, period: Any) -> int:
    """``--override KEY=N --reason TEXT``: recorded in the audit trail (0, or exit 4)."""
    key, _, value = args.override.partition("=")
    try:
        oid = rec.override(
            key.strip(), value, reason=args.reason, year=args.year, period=args.period
        )
    except PermissionError as exc:
        return _refused(exc)
    print(
        f"Override {oid}: {key.strip()} = {value.strip()} for the {period.name}, by "
        f"{rec.user}, recorded in the audit trail ({args.reason.strip()})."
    )
    return 0


def _write_pack(rec: Any, args: argparse.Namespace, protected: list[Any]) -> None:
    """``--pack DIR``: the compliance pack of the period."""
    from ..records.pack_write import write_pack

    pk = rec.pack(args.year, period=args.period, network=args.network, today=args.today)
    paths = write_pack(
        pk,
        args.pack,
        title=f"{rec.profile.municipality} - {rec.profile.law}",
        protected=[*protected, *rec.inputs, rec.path],
    )
    print(f"Compliance pack of the {pk.period.text()}:")
    for r in pk.idde.to_dict("records"):
        over = f" (reported {r['reported']}: override)" if r["override_reason"] else ""
        print(f"  {r['label']}: {r['count']}{over}")
    for path in paths:
        print(f"  written: {path}", file=sys.stderr)
    print("  (CSV only: openpyxl is not a dependency of ms4map, no XLSX written)", file=sys.stderr)


def _print_verify(rec: Any) -> int:
    """``--verify``: what the check found, and exit 2 when the records were changed."""
    from ..core.errors import EXIT_DATA_ERROR

    v = rec.verify()
    old = (
        f"; {v['unchained']} older audit row(s) written before the chain" if v["unchained"] else ""
    )
    if v["ok"]:
        print(
            f"{rec.path.name}: ok: {v['chained']} audit row(s) chained, {v['rows']} row(s) "
            f"match their audit rows{old} (docs/records.md, 'What the audit proves')."
        )
        return 0
    print(f"{rec.path.name}: CHANGED OUTSIDE MS4MAP ({len(v['problems'])} problem(s)){old}:")
    for line in v["problems"]:
        print(f"  - {line}")
    return EXIT_DATA_ERROR


def run_case(args: argparse.Namespace) -> int:
    """``ms4map case ACTION``."""
    if not getattr(args, "action", None):
        print(
            "ms4map case: error: give an action: open, advance, sample, next-sample, show",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from ..records import check_photo

    for ph in getattr(args, "photo", []):
        check_photo(ph)
    rec = _open(args)
    try:
        if args.action == "open":
            cid = rec.open_case(
                args.outfall,
                args.date,
                origin=args.origin,
                description=args.description,
                inspection_id=args.inspection,
                photos=args.photo,
                again=args.again,
            )
            print(f"Case {cid} opened at outfall {args.outfall} on {args.date} ({rec.path}).")
            return 0
        if args.action == "advance":
            v = rec.advance_case(
                args.case_id,
                args.step,
                args.date,
                parcel_id=args.parcel,
                deadline=args.deadline,
                outcome=args.outcome,
                reason=args.reason,
                notes=args.notes,
                photos=args.photo,
            )
            print(f"Case {args.case_id}: step {args.step} on {args.date} recorded (version {v}).")
            _print_table(
                rec.deadlines(case_id=args.case_id)[["deadline", "due", "status", "reason"]], False
            )
            return 0
        if args.action == "sample":
            sid = rec.add_sample(
                args.case_id,
                args.structure,
                args.date,
                photos=args.photo,
                again=args.again,
                **_fields_from(args),
            )
            row = rec.samples(args.case_id).set_index("sample_id").loc[sid]
            print(
                f"Sample {sid} at {args.structure} on {args.date} for case {args.case_id}: "
                f"{row['result']}; flow type {row['flow_type']}."
            )
            return 0
    except PermissionError as exc:
        return _refused(exc)
    if args.action == "next-sample":
        nxt = rec.next_sample(args.case_id, weight=args.weight)
        if args.json:
            print(json.dumps(nxt, indent=1))
        else:
            where = nxt["struct_id"] or "none"
            print(f"Case {args.case_id}, outfall {nxt['outfall_id']}: next sample at {where}.")
            print(nxt["reason"])
        return 0
    cases = rec.cases(history=True)
    steps = cases[cases["case_id"] == args.case_id]
    if not len(steps):
        from ..core.errors import DataError

        raise DataError(
            f"Field 'case_id' = {args.case_id}: no such case. Fix: see "
            "ms4map records --export FILE.csv --table cases."
        )
    cols = [
        "version",
        "step",
        "step_on",
        "status",
        "source_parcel_id",
        "remedy_deadline",
        "created_at",
        "created_by",
    ]
    dl = rec.deadlines(today=args.today, case_id=args.case_id)
    smp = rec.samples(args.case_id)
    if args.json:
        print(
            json.dumps(
                {
                    "steps": json.loads(steps[cols].to_json(orient="records")),
                    "deadlines": json.loads(dl.to_json(orient="records")),
                    "samples": json.loads(smp.drop(columns="geometry").to_json(orient="records")),
                },
                indent=1,
            )
        )
        return 0
    judged = steps["profile"].iloc[-1] if "profile" in steps else None
    print(
        f"Case {args.case_id} at outfall {steps['outfall_id'].iloc[0]} (profile "
        f"{judged if isinstance(judged, str) and judged else rec.profile.name})"
    )
    print(steps[cols].to_string(index=False))
    print("\nDeadlines:")
    _print_table(dl[["deadline", "due", "status", "done_on", "reason"]], False)
    print("\nSamples:")
    _print_table(
        smp[["sample_id", "struct_id", "date", "result", "flow_type"]] if len(smp) else smp, False
    )
    return 0


COMMANDS = (
    Command("inspect", INSPECT_ABOUT, run_inspect, _inspect_options, workspace=True),
    Command("records", RECORDS_ABOUT, run_records, _records_command_options, workspace=True),
    Command("case", CASE_ABOUT, run_case, _case_options),
)
