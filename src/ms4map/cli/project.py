"""``ms4map project``: land development projects, from the determination to maintenance.

Save a determination as a project, move it step by step, record its construction::

    ms4map screen town.gpkg --site 106.12-2-14 --acres 2 --json > det.json
    ms4map project new town.gpkg --determination det.json --by jsmith
    ms4map project new town.gpkg --site 106.12-2-14 --acres 2 --by jsmith   # screens it
    ms4map project list town.gpkg
    ms4map project show town.gpkg 1
    ms4map project advance town.gpkg 1 --step approved --date 2026-03-07 \\
        --approved-by "Planning Board" --by jsmith
    ms4map project update town.gpkg 1 --guarantee-kind cash_escrow --guarantee-amount 50000
    ms4map project notify town.gpkg 1 --stage start_of_construction \\
        --stage-at 2026-03-10T08:00 --notified-at 2026-03-08T09:00 --by jsmith
    ms4map project inspect town.gpkg 1 --date 2026-03-12 --result violations --findings ...
    ms4map project violation town.gpkg 1 --date 2026-03-12 --nature ... --corrective-actions ...
    ms4map project violation town.gpkg 1 --corrected 4 --date 2026-03-15
    ms4map project stop-work town.gpkg 1 --date 2026-03-13 --reason ...
    ms4map project lift town.gpkg 1 --date 2026-03-15

The records go to ``<stem>.records.gpkg`` beside the workspace (``--records FILE``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.errors import EXIT_USAGE, UsageError
from . import Command
from .records import _common, _open, _print_table, _refused

__all__ = ["COMMANDS", "run_project"]

ABOUT = """land development projects: saved from a screening, SWPPP to maintained, construction

A site's determination (ms4map screen --json) saved as a project, its status moved only in
the order the law allows (screened, swppp_submitted, approved, under_construction,
as_built_received, one_year_inspected, guarantee_released, maintained), its guarantee,
maintenance easement and certificate-of-occupancy hold, and the construction oversight:
stage notices (late under the profile's 48 hours), inspections, violation notices,
stop-work orders. Every change is audited (docs/records.md, "Projects").
"""

ACTIONS = (
    "new", "list", "show", "advance", "update", "notify", "inspect", "violation",
    "stop-work", "lift",
)  # fmt: skip


def _options(p: argparse.ArgumentParser) -> None:
    from ..records.project_fields import GUARANTEE_KINDS, STATUSES

    acts = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    a = acts.add_parser("new", help="save a determination as a project")
    _common(a, by_required=True)
    a.add_argument("--determination", metavar="FILE.json", help="ms4map screen --json output")
    a.add_argument("--site", metavar="ID[,ID...]", help="screen these parcels now instead")
    a.add_argument("--acres", type=float, metavar="N", help="disturbed acres (with --site)")
    a.add_argument("--type", dest="project_type", metavar="TYPE", help="project type (--site)")
    a.add_argument("--date", metavar="YYYY-MM-DD", help="the day it is saved (default today)")
    a.add_argument("--name", metavar="TEXT", help="project name (default: the application's)")
    a.add_argument("--applicant", metavar="TEXT")
    a.add_argument("--notes", metavar="TEXT")
    a = acts.add_parser("list", help="the projects and their status")
    _common(a, by_required=False)
    a.add_argument("--json", action="store_true")
    a = acts.add_parser("show", help="a project: its state, steps and construction")
    _common(a, by_required=False)
    a.add_argument("project_id", type=int, metavar="PROJECT_ID")
    a.add_argument("--json", action="store_true")
    a = _on_project(acts, "advance", "move a project to its next status", date=False)
    a.add_argument("--step", required=True, help=", ".join(STATUSES[1:]))
    a.add_argument("--date", required=True, metavar="YYYY-MM-DD")
    a.add_argument("--approved-by", metavar="NAME", help="who approved the SWPPP (approved)")
    a.add_argument(
        "--engineer", metavar="NAME", help="the PE who certified the as-built (as_built_received)"
    )
    a.add_argument(
        "--acceptable",
        action="store_true",
        help="the one-year inspection found the facilities acceptable (one_year_inspected)",
    )
    a.add_argument("--notes", metavar="TEXT")
    a = _on_project(acts, "update", "guarantee, easement, C.O. hold, applicant, notes", date=False)
    a.add_argument("--applicant", metavar="TEXT")
    a.add_argument("--guarantee-kind", help=", ".join(GUARANTEE_KINDS))
    a.add_argument("--guarantee-amount", type=float, metavar="USD")
    a.add_argument("--guarantee-posted", metavar="YYYY-MM-DD")
    a.add_argument("--guarantee-expires", metavar="YYYY-MM-DD")
    a.add_argument("--guarantee-drawn", metavar="YYYY-MM-DD", help="the town drew on it")
    a.add_argument("--guarantee-drawn-amount", type=float, metavar="USD")
    a.add_argument("--easement-recorded", action="store_true", help="the easement is recorded")
    a.add_argument("--easement-on", metavar="YYYY-MM-DD", help="the day it was recorded")
    a.add_argument("--easement-where", metavar="TEXT", help="e.g. County Clerk, liber/page")
    hold = a.add_mutually_exclusive_group()
    hold.add_argument("--co-hold", action="store_true", help="withhold the C.O.")
    hold.add_argument("--release-co-hold", action="store_true", help="end the C.O. hold")
    a.add_argument("--co-hold-reason", metavar="TEXT")
    a.add_argument("--notes", metavar="TEXT")
    a = _on_project(acts, "notify", "record a stage notice (late under 48 hours)", date=False)
    a.add_argument("--stage", required=True, help="a stage of the profile's [construction]")
    a.add_argument("--stage-at", required=True, metavar="YYYY-MM-DDTHH:MM")
    a.add_argument("--notified-at", required=True, metavar="YYYY-MM-DDTHH:MM")
    a.add_argument("--notes", metavar="TEXT")
    a = _on_project(acts, "inspect", "record a construction inspection")
    a.add_argument("--inspector", metavar="NAME")
    a.add_argument("--findings", metavar="TEXT")
    a.add_argument("--result", default="approved", help="approved or violations")
    a.add_argument("--notes", metavar="TEXT")
    a = _on_project(acts, "violation", "a written violation notice, or its correction")
    a.add_argument("--nature", metavar="TEXT")
    a.add_argument("--corrective-actions", metavar="TEXT")
    a.add_argument("--deadline", metavar="YYYY-MM-DD", help="remedy deadline")
    a.add_argument("--inspection", type=int, metavar="EVENT_ID", help="the inspection")
    a.add_argument("--corrected", type=int, metavar="EVENT_ID", help="record this notice corrected")
    a.add_argument("--notes", metavar="TEXT")
    a = _on_project(acts, "stop-work", "issue a stop-work order")
    a.add_argument("--reason", required=True, metavar="TEXT")
    a.add_argument("--notes", metavar="TEXT")
    a = _on_project(acts, "lift", "lift the stop-work order in force")
    a.add_argument("--order", type=int, metavar="EVENT_ID", help="which order (default: latest)")
    a.add_argument("--notes", metavar="TEXT")


def _on_project(acts: Any, name: str, help: str, *, date: bool = True) -> argparse.ArgumentParser:
    """The parser of an action on one project (by an editor): its id and, with ``date``,
    the required day of the event."""
    a = acts.add_parser(name, help=help)
    _common(a, by_required=True)
    a.add_argument("project_id", type=int, metavar="PROJECT_ID")
    if date:
        a.add_argument("--date", required=True, metavar="YYYY-MM-DD")
    return a


def run_project(args: argparse.Namespace) -> int:
    """``ms4map project ACTION``."""
    if not getattr(args, "action", None):
        print(f"ms4map project: error: give an action: {', '.join(ACTIONS)}", file=sys.stderr)
        return EXIT_USAGE
    rec = _open(args)
    try:
        if args.action == "list":
            return _list(rec, args)
        if args.action == "show":
            return _show(rec, args)
        return _write(rec, args)
    except PermissionError as exc:
        return _refused(exc)


def _write(rec: Any, args: argparse.Namespace) -> int:
    from ..records import construction as con
    from ..records import projects as prj

    pid = getattr(args, "project_id", None)
    if args.action == "new":
        det = _determination(rec, args)
        pid = prj.save_project(
            rec, det, date=args.date, name=args.name, applicant=args.applicant, notes=args.notes
        )
        p = prj.project(rec, pid)
        print(
            f"Project {pid} '{p['project_name']}' saved (screened on {p['saved_on']}; {rec.path})."
        )
        return 0
    if args.action == "advance":
        v = prj.advance_project(
            rec,
            pid,
            args.step,
            args.date,
            approved_by=args.approved_by,
            engineer=args.engineer,
            acceptable=True if args.acceptable else None,
            notes=args.notes,
        )
        print(f"Project {pid}: {args.step} on {args.date} (version {v}).")
    elif args.action == "update":
        prj.update_project(rec, pid, **_update_fields(args))
        print(f"Project {pid} updated.")
    elif args.action == "notify":
        eid = con.notify_stage(
            rec, pid, args.stage, args.stage_at, notified_at=args.notified_at, notes=args.notes
        )
        row = con.construction(rec, pid).set_index("event_id").loc[eid]
        late = " LATE" if bool(row["late"]) else ""
        print(
            f"Notice {eid}: {args.stage} at {row['stage_at']}, received {row['notified_at']} "
            f"({row['hours_ahead']:g} hours ahead){late}."
        )
    elif args.action == "inspect":
        eid = con.inspect_site(
            rec,
            pid,
            args.date,
            inspector=args.inspector,
            findings=args.findings,
            result=args.result,
            notes=args.notes,
        )
        print(f"Inspection {eid} of project {pid} on {args.date}: {args.result}.")
    elif args.action == "violation":
        if args.corrected is not None:
            con.correct_violation(rec, pid, args.corrected, args.date, notes=args.notes)
            print(f"Violation notice {args.corrected} corrected on {args.date}.")
        else:
            eid = con.issue_violation(
                rec,
                pid,
                args.date,
                nature=args.nature or "",
                corrective_actions=args.corrective_actions or "",
                remedy_deadline=args.deadline,
                inspection_id=args.inspection,
                notes=args.notes,
            )
            print(f"Violation notice {eid} of project {pid} on {args.date}.")
    elif args.action == "stop-work":
        eid = con.stop_work(rec, pid, args.date, reason=args.reason, notes=args.notes)
        print(f"Stop-work order {eid} on project {pid} from {args.date}: only site stabilization.")
    elif args.action == "lift":
        con.lift_stop_work(rec, pid, args.date, event_id=args.order, notes=args.notes)
        print(f"Stop-work order on project {pid} lifted on {args.date}.")
    state = con.project_state(rec, pid)
    print(_state_line(state))
    return 0


def _determination(rec: Any, args: argparse.Namespace) -> Any:
    """The determination to save: ``--determination FILE`` or a screening of ``--site``."""
    if bool(args.determination) == bool(args.site):
        raise UsageError(
            "Give --determination FILE.json (ms4map screen ... --json) or --site ID --acres N, "
            "one of the two."
        )
    if args.determination:
        return args.determination
    if args.acres is None:
        raise UsageError("--acres N (disturbed acres) is required with --site.")
    from .. import pipeline
    from ..rules.conditions import evaluate_site
    from . import workspace_from_args

    ws = workspace_from_args(args)
    return evaluate_site(
        pipeline.run(ws),
        args.site,
        disturbed_acres=args.acres,
        project_type=args.project_type,
        workspace=ws,
        profile=rec.profile,
    )


def _update_fields(args: argparse.Namespace) -> dict[str, Any]:
    out = {
        "applicant": args.applicant,
        "guarantee_kind": args.guarantee_kind,
        "guarantee_amount": args.guarantee_amount,
        "guarantee_posted_on": args.guarantee_posted,
        "guarantee_expires_on": args.guarantee_expires,
        "guarantee_drawn_on": args.guarantee_drawn,
        "guarantee_drawn_amount": args.guarantee_drawn_amount,
        "easement_recorded": True if args.easement_recorded else None,
        "easement_recorded_on": args.easement_on,
        "easement_where": args.easement_where,
        "co_hold": True if args.co_hold else False if args.release_co_hold else None,
        "co_hold_reason": args.co_hold_reason,
        "notes": args.notes,
    }
    out = {k: v for k, v in out.items() if v is not None}
    if not out:
        raise UsageError(
            "ms4map project update: give a field to change, e.g. --guarantee-kind cash_escrow "
            "--guarantee-amount 50000, --easement-recorded --easement-where TEXT, --co-hold."
        )
    return out


def _state_line(state: dict[str, Any]) -> str:
    nxt = state["next_step"] or "none (maintained)"
    line = f"  status {state['status']} since {state['step_on']}; next step {nxt}"
    if state["blocked_by"]:
        line += f"; work allowed: site stabilization only ({state['blocked_by']})"
    if state["co_hold"]:
        line += "; certificate of occupancy withheld"
    return line


def _list(rec: Any, args: argparse.Namespace) -> int:
    from ..records import projects as prj

    df = prj.projects(rec)
    cols = ["project_id", "project_name", "applicant", "status", "step_on", "next_step"]
    _print_table(df[cols], args.json)
    return 0


def _show(rec: Any, args: argparse.Namespace) -> int:
    from ..records import construction as con
    from ..records import projects as prj

    pid = args.project_id
    state = con.project_state(rec, pid)  # DataError: no such project
    hist = prj.project_history(rec, pid)
    rows = con.construction(rec, pid)
    steps = hist[["version", "status", "step_on", "created_at", "created_by"]]
    if args.json:
        print(
            json.dumps(
                {
                    "state": state,
                    "project": {k: _plain(v) for k, v in prj.project(rec, pid).items()},
                    "versions": json.loads(steps.to_json(orient="records")),
                    "construction": json.loads(rows.to_json(orient="records")),
                },
                indent=1,
                default=str,
            )
        )
        return 0
    p = prj.project(rec, pid)
    print(f"Project {pid} '{p['project_name']}' (applicant {p.get('applicant') or '-'})")
    print(_state_line(state))
    g = state["guarantee"]
    print(
        f"  guarantee: {g['kind'] or '-'} {'' if g['amount'] is None else g['amount']} "
        f"({g['state']}); easement: "
        + (f"recorded {p.get('easement_where') or ''}" if p.get("easement_recorded") else "none")
    )
    print(f"  late stage notices: {state['late_notices']}\n")
    print(steps.to_string(index=False))
    if len(rows):
        cols = ["event_id", "kind", "date", "stage", "hours_ahead", "late", "result",
                "corrected_on", "lifted_on"]  # fmt: skip
        print()
        print(rows[cols].to_string(index=False))
    return 0


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, str | int | float | bool):
        return v
    return str(v)


COMMANDS = (Command("project", ABOUT, run_project, _options),)
