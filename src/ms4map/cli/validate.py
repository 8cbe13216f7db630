"""``ms4map validate PATH``: print the QA report of a workspace."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import Command, input_paths, workspace_kwargs

ABOUT = """check a workspace and print its QA report

Check a workspace and print the QA report (exit 0 ok, 1 warnings, 2 data errors,
3 cannot open, 4 usage).
"""


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--report", metavar="FILE", help="also write the report (.md or .json)")


def run(args: argparse.Namespace) -> int:
    from ..io import check_output_path, write_text_output
    from ..io.validate import validate

    protected = input_paths(args)
    if args.report:  # check before the work, so a bad path fails fast
        check_output_path(
            args.report, protected=protected, suffixes=(".md", ".json"), option="--report"
        )
    result = validate(args.path, **workspace_kwargs(args))
    if result.workspace is not None:
        from ..io.validate import ValidationResult
        from ..rules.waters import workspace_qa

        # with what only the rules can check (4a listings without their TMDL)
        result = ValidationResult(workspace_qa(result.workspace), result.workspace)
    text = result.to_json() if args.json else result.to_markdown()
    print(text)
    if args.report:
        out = Path(args.report)
        write_text_output(
            out,
            result.to_json() if out.suffix.lower() == ".json" else result.to_markdown(),
            protected=protected,
            option="--report",
        )
    return result.exit_code


COMMANDS = (Command("validate", ABOUT, run, _options, workspace=True),)
