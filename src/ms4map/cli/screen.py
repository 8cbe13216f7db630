"""``ms4map screen PATH``: Condition A/B/C for one site, or batch screening of every parcel.

One site::

    ms4map screen town.gpkg --site 123.4-5-6 --acres 2 --type commercial [--json]
    ms4map screen town.gpkg --site-file site.geojson --acres 2 --report site.pdf

Batch (layers ``screening`` and ``septic`` + CSVs)::

    ms4map screen town.gpkg --all --out screening.gpkg [--csv screening.csv]
        [--letters septic_letters.csv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError
from . import Command, add_profile_option, workspace_from_args

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = ["COMMANDS", "run"]


ABOUT = """Condition A/B/C determination for a site, or batch screening of every parcel

Decide whether a land development activity needs a SWPPP and whether Conditions A, B and C
apply (docs/rules.md), with the drainage path, the impaired waters reached and the law's
citations. With --all: for every parcel, would a development there be Condition A, plus the
septic flags (layers screening and septic). The JSON document and CSV layouts are described
in docs/screening.md.
"""


def _options(p: argparse.ArgumentParser) -> None:
    _site_options(p.add_argument_group("one site"))
    add_profile_option(p)
    p.add_argument(
        "--pollutants",
        metavar="P1,P2",
        help="narrow 'pollutant of concern' to this list (e.g. "
        "silt/sediment,phosphorus,nitrogen) instead of the law's definition",
    )
    p.add_argument(
        "--impairments",
        metavar="CSV",
        help="303(d) listings from a CSV (NYSDEC list table or ATTAINS export; comma, "
        "semicolon or tab separated) instead of the workspace's impairments layer; name "
        "its columns with --field impairments.wb_id=COLUMN (also pollutant, category, "
        "list_year, source)",
    )
    batch = p.add_argument_group("batch")
    batch.add_argument("--all", action="store_true", help="screen every parcel")
    batch.add_argument("--out", metavar="FILE.gpkg", help="output GeoPackage (default: sidecar)")
    batch.add_argument("--csv", metavar="FILE.csv", help="also write the screening table as CSV")
    batch.add_argument(
        "--letters",
        metavar="FILE.csv",
        help="also write the owner/mailing-address list of flagged septic parcels",
    )


def _site_options(site: argparse._ArgumentGroup) -> None:
    """The options of one site's determination (without ``--all``)."""
    from ..rules.conditions import PROJECT_TYPES
    from ..rules.profiles import EXEMPTION_CODES

    site.add_argument("--site", metavar="ID[,ID...]", help="parcel id(s) of the site")
    site.add_argument(
        "--site-file",
        metavar="FILE",
        help="polygon of the site (GeoJSON, GeoPackage, Shapefile; with its CRS)",
    )
    site.add_argument("--acres", type=float, metavar="N", help="disturbed acres")
    site.add_argument(
        "--type",
        dest="project_type",
        metavar="TYPE",
        help=f"project type: {', '.join(PROJECT_TYPES)} (default: guessed from "
        "the parcel's property class)",
    )
    site.add_argument(
        "--common-plan-acres",
        type=float,
        metavar="N",
        help="acreage of the larger common plan of development or sale",
    )
    site.add_argument(
        "--exemption", metavar="CODE", help=f"exemption claimed: {', '.join(EXEMPTION_CODES)}"
    )
    site.add_argument("--json", action="store_true", help="print the JSON document alone on stdout")
    site.add_argument("--applicant", metavar="TEXT", help="applicant, printed on the report")
    site.add_argument("--project-name", metavar="TEXT", help="project name, printed on the report")
    site.add_argument(
        "--application-number", metavar="TEXT", help="application number, printed on the report"
    )
    site.add_argument(
        "--application-date", metavar="YYYY-MM-DD", help="application date, printed on the report"
    )
    site.add_argument(
        "--report", metavar="FILE.html|FILE.pdf", help="also write the one-page report"
    )


def _profile(args: argparse.Namespace) -> Any:
    from ..rules.profiles import profile_with

    return profile_with(args.profile, args.pollutants.split(",") if args.pollutants else None)


def _waters(args: argparse.Namespace, ws: Workspace) -> Any:
    from ..rules.waters import waters_for

    return waters_for(
        ws,
        args.impairments,
        warn=lambda line: print(line, file=sys.stderr),
        columns=impairment_columns(args),
    )


def impairment_columns(args: argparse.Namespace) -> dict[str, str]:
    """The 303(d) CSV's columns the user named: ``[impairments]`` of ``--field-map`` and
    ``--field impairments.COLUMN=HEADER`` (canonical column -> the CSV's header)."""
    from ..io import FieldMap
    from ..io.fieldmap import parse_field_option

    fmap = FieldMap.from_toml(args.field_map) if getattr(args, "field_map", None) else FieldMap()
    out = dict(fmap.columns.get(("impairments", None), {}))
    for text in getattr(args, "field", None) or []:
        role, _layer, column, source = parse_field_option(text)
        if role == "impairments":
            out[column] = source
    return out


def _problem_text(finding: Any) -> str:
    """A finding as the command prints it: the message, then the fix."""
    return finding.message + (f" Fix: {finding.fix}" if finding.fix else "")


def _protected(args: argparse.Namespace, ws: Workspace) -> list[str]:
    """Files no output may replace: the workspace's inputs and the user's other inputs."""
    paths = [str(p) for p in ws.inputs]
    paths += [p for p in (getattr(args, "site_file", None), args.impairments) if p]
    if isinstance(args.profile, str) and Path(args.profile).suffix.lower() == ".toml":
        paths.append(args.profile)
    return paths


def _check_batch_outputs(args: argparse.Namespace, ws: Workspace, out: Path) -> None:
    """Check every output path of ``--all`` before the run writes anything.

    Raises
    ------
    UsageError
        An output is an input file (or its sidecar), has the wrong suffix, or two
        outputs are the same file.
    """
    from ..io import check_output_path

    prot = _protected(args, ws)
    seen: dict[Path, str] = {}
    for option, path, suffixes in (
        ("--out", out, (".gpkg",)),
        ("--csv", args.csv, (".csv",)),
        ("--letters", args.letters, (".csv",)),
    ):
        if not path:
            continue
        resolved = check_output_path(path, protected=prot, suffixes=suffixes, option=option)
        if resolved in seen:
            raise UsageError(
                f"{option} and {seen[resolved]} are the same file '{resolved.name}'. "
                "Fix: give each output its own path."
            )
        seen[resolved] = option


def run(args: argparse.Namespace) -> int:
    if args.all:
        if args.site or args.site_file:
            raise UsageError("--all screens every parcel: leave out --site/--site-file.")
        return _run_batch(args)
    if not args.site and not args.site_file:
        raise UsageError("Give --site ID[,ID...] or --site-file FILE (or --all for every parcel).")
    if args.site and args.site_file:
        raise UsageError("Give either --site or --site-file, not both.")
    if args.acres is None:
        raise UsageError("--acres N (disturbed acres) is required for a site determination.")
    from ..rules.conditions import CLI_LABELS, application_info, evaluate_site, validate_inputs

    # check the user's options before the (slower) workspace and pipeline
    validate_inputs(
        disturbed_acres=args.acres,
        project_type=args.project_type,
        common_plan_acres=args.common_plan_acres,
        exemption=args.exemption,
        labels=CLI_LABELS,
    )
    application = application_info(
        {
            "applicant": args.applicant,
            "project_name": args.project_name,
            "application_number": args.application_number,
            "date": args.application_date,
        }
    )
    prof = _profile(args)
    from ..io.site_file import read_site_file

    site = read_site_file(args.site_file) if args.site_file else args.site
    ws = workspace_from_args(args)
    if args.report:  # refuse an input file (and create the folder) before the slow part
        from ..io import check_output_path
        from ..outputs.report import REPORT_SUFFIXES

        check_output_path(
            args.report,
            protected=_protected(args, ws),
            suffixes=REPORT_SUFFIXES,
            option="--report",
        )
    from .. import pipeline

    res = pipeline.run(ws)
    det = evaluate_site(
        res,
        site,
        disturbed_acres=args.acres,
        project_type=args.project_type,
        common_plan_acres=args.common_plan_acres,
        exemption=args.exemption,
        workspace=ws,
        profile=prof,
        waters=_waters(args, ws),
        labels=CLI_LABELS,
        application=application,
    )
    if args.report:
        from ..outputs import write_report

        path = write_report(det, args.report, protected=_protected(args, ws))
        if not args.json:
            print(f"report: {path}")
    if args.json:
        sys.stdout.write(det.to_json() + "\n")
    else:
        print(det.summary())
    return 0


def _run_batch(args: argparse.Namespace) -> int:
    from .. import pipeline
    from ..io import write_outputs, write_text_output
    from ..rules.conditions import screen_parcels
    from ..rules.septic import septic_flags, undetermined_causes, write_mailing_list

    prof = _profile(args)
    ws = workspace_from_args(args)
    out = Path(args.out) if args.out else ws.sidecar_path
    _check_batch_outputs(args, ws, out)  # every output, before anything is written
    res = pipeline.run(ws)
    waters = _waters(args, ws)
    screening = screen_parcels(res, profile=prof, workspace=ws, waters=waters)
    flags = septic_flags(res, profile=prof, workspace=ws, waters=waters)
    scr, sep = screening.table, flags.table
    prov = ws.provenance(**prof.screening_settings(), impairments=args.impairments)
    problems = [_problem_text(f) for f in [*screening.qa.findings, *flags.qa.findings]]
    from ..rules.waters import missing_layer_reason

    missing = [missing_layer_reason(m) for m in waters.missing]
    path = write_outputs(
        out, {"screening": scr, "septic": sep}, provenance=prov, inputs=list(ws.inputs)
    )
    if args.csv:
        from ..core.tables import csv_text

        write_text_output(
            args.csv,
            csv_text(scr),
            protected=_protected(args, ws),
            option="--csv",
            suffixes=(".csv",),
        )
    if args.letters:
        write_mailing_list(sep, args.letters, profile=prof, protected=_protected(args, ws))
    counts = scr["condition_a_text"].value_counts()
    print(f"{len(scr)} parcels screened -> {path} (layers screening, septic)")
    print("  would be Condition A: " + ", ".join(f"{k} {int(v)}" for k, v in counts.items()))
    causes = undetermined_causes(sep, missing_layers=flags.missing_layers)
    open_ = sum(n for n, _ in causes)
    print(
        f"  septic parcels: {len(sep)}, flagged {int(sep['flagged'].sum())}, special "
        f"condition {int(sep['special_condition'].sum())}"
        + (
            f" (not determined for {open_}: "
            + "; ".join(f"{n}: {cause}" for n, cause in causes)
            + "; see the septic layer's reason)"
            if open_
            else ""
        )
        + f", violations {int(sep['violation'].sum())}"
    )
    for text in missing:
        print(
            f"ms4map: warning: {text} Condition A is undetermined where it would be 'no'.",
            file=sys.stderr,
        )
    for prob in problems:
        print(f"ms4map: warning: {prob}", file=sys.stderr)
    if problems:
        print(
            f"  {len(problems)} problem(s) reported; the other parcels were screened",
            file=sys.stderr,
        )
    return 0


COMMANDS = (Command("screen", ABOUT, run, _options, workspace=True),)
