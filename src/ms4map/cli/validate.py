"""``ms4map validate PATH``: print the QA report of a workspace."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import add_workspace_options, workspace_kwargs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check a workspace and print its QA report",
        description="Check a workspace and print the QA report (exit 0 ok, 1 warnings, "
        "2 data errors, 3 cannot open, 4 usage).",
    )
    add_workspace_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--report", metavar="FILE", help="also write the report (.md or .json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..validate import validate

    result = validate(args.path, **workspace_kwargs(args))
    text = result.to_json() if args.json else result.to_markdown()
    print(text)
    if args.report:
        out = Path(args.report)
        out.write_text(
            result.to_json() if out.suffix.lower() == ".json" else result.to_markdown(),
            encoding="utf-8",
        )
    return result.exit_code
