"""The determination JSON of every demo scenario parcel, as a refactor's fixed point.

Writes ``tests/data/scenario_determinations.json``: for each parcel of the demo town's
``SCENARIO_PARCELS`` and two projects (commercial on 90 % of the parcel, residential on
25 %), the
determination document as ``ms4map screen --json`` prints it, with the run's own facts
(the time it was made, the checkout's path) replaced by placeholders.  Run it with the
code of the commit to pin (issue 26 pinned 038e72c, the commit the layout step started
from):

    git worktree add /tmp/base 038e72c
    PYTHONPATH=/tmp/base/src python benchmarks/scenario_determinations.py --repo /tmp/base

``tests/datasets/test_scenario_determinations.py`` then checks today's code gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "scenario_determinations.json"
#: (project type, share of the parcel disturbed)
PROJECTS = (("commercial", 0.9), ("residential", 0.25))
ACRE_M2 = 4046.8564224


def normalise(text: str, repo: Path) -> str:
    """The run's own facts out: creation times and the checkout's path."""
    text = text.replace(str(repo.resolve()), "<repo>")
    return re.sub(r'"created": "[^"]*"', '"created": "<created>"', text)


def determinations(repo: Path) -> dict[str, str]:
    """``{"<parcel>|<type>|<share>": JSON text}`` with the code on the path."""
    warnings.simplefilter("ignore", DeprecationWarning)
    import ms4map
    from ms4map import pipeline

    try:
        from ms4map.datasets.alder_falls import SCENARIO_PARCELS
    except ImportError:  # the commit before issue 26
        from ms4map.demo import SCENARIO_PARCELS
    from ms4map.rules import conditions

    demo = repo / "data" / "layers" / "demo.gpkg"
    ws = ms4map.open_workspace(demo)
    result = pipeline.run(ws)
    out = {}
    for key in sorted(SCENARIO_PARCELS):
        pid = SCENARIO_PARCELS[key]["parcel_id"]
        area = ws.parcels.loc[ws.parcels["parcel_id"] == pid].geometry.area.sum()
        for kind, share in PROJECTS:
            acres = round(area / ACRE_M2 * share, 3)
            det = conditions.evaluate_site(
                pid, disturbed_acres=acres, project_type=kind, workspace=ws, result=result
            )
            text = det.to_json()
            out[f"{pid}|{kind}|{share}"] = normalise(text, repo)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=ROOT, help="checkout whose code runs")
    args = ap.parse_args()
    dets = determinations(args.repo)
    OUT.write_text(json.dumps(dets, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(dets)} determinations -> {OUT}")


if __name__ == "__main__":
    main()
