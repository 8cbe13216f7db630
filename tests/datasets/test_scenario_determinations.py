"""The determination of every demo scenario parcel is byte for byte the one pinned at
commit 038e72c, before the layout step (issue 26) moved the rules into their modules.

``tests/data/scenario_determinations.json`` was written by
``benchmarks/scenario_determinations.py`` with that commit's code; the new calling shape
(``ms4map.evaluate_site(result, site, ...)``) must give the same JSON text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import ms4map

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from scenario_determinations import ACRE_M2, PROJECTS, normalise  # noqa: E402

PINNED = json.loads((ROOT / "tests" / "data" / "scenario_determinations.json").read_text())


@pytest.fixture(scope="module")
def demo() -> tuple:
    ws = ms4map.open_workspace(ms4map.datasets.get_path("alder_falls"))
    return ws, ms4map.run(ws)


def test_every_scenario_parcel_is_pinned() -> None:
    from ms4map.datasets.alder_falls import SCENARIO_PARCELS

    pids = {v["parcel_id"] for v in SCENARIO_PARCELS.values()}
    assert {k.split("|")[0] for k in PINNED} == pids
    assert len(PINNED) == len(pids) * len(PROJECTS)


@pytest.mark.parametrize("key", sorted(PINNED))
def test_determination_json_is_byte_identical(demo, key: str) -> None:
    ws, result = demo
    pid, kind, share = key.split("|")
    area = ws.parcels.loc[ws.parcels["parcel_id"] == pid].geometry.area.sum()
    det = ms4map.evaluate_site(
        result,
        pid,
        disturbed_acres=round(area / ACRE_M2 * float(share), 3),
        project_type=kind,
    )
    repo = Path(ms4map.datasets.get_path("alder_falls")).parents[2]
    assert normalise(det.to_json(), repo) == PINNED[key]
