"""One Condition A engine: the single site and the batch decide with the same rule.

``decide_condition_a`` turns a site's facts into the value and method for both paths
(:func:`ms4map.rules.conditions.condition_a.site_condition_a` for one site, with its
reasons from :func:`ms4map.rules.conditions.reasons.condition_a_physics`, vectorised
:func:`ms4map.rules.conditions.screening.screen_condition_a` for every parcel).  The demo test runs both
paths on every parcel of the demo town and asserts the same answer, method, receiving
waters and listed waters.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ms4map.rules.conditions.condition_a import decide_condition_a

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _decide(**kw):
    base = {
        "listed_fraction": [0.0],
        "tmdl_hit": [False],
        "unknown_fraction": [0.0],
        "internal_fraction": [0.0],
        "total_fraction": [1.0],
        "has_rows": [True],
        "missing": [],
    }
    base.update(kw)
    args = {k: (np.asarray(v) if k != "missing" else v) for k, v in base.items()}
    value, method = decide_condition_a(**args)
    return value[0], method[0]


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"listed_fraction": [0.4], "unknown_fraction": [0.6]}, (True, "listed_water")),
        ({"tmdl_hit": [True]}, (True, "tmdl_watershed")),
        ({"tmdl_hit": [True], "has_rows": [False], "total_fraction": [0.0]}, (True, "tmdl_watershed")),
        ({"has_rows": [False], "total_fraction": [0.0]}, (None, "no_drainage")),
        ({"total_fraction": [0.0]}, (None, "no_drainage")),
        ({"has_rows": [False], "total_fraction": [0.0], "bad_rows": [True]}, (None, "bad_drainage_rows")),
        ({"unknown_fraction": [0.2]}, (None, "unknown_drainage")),
        ({"internal_fraction": [1.0]}, (False, "internally_drained")),
        ({}, (False, "not_listed")),
        ({"missing": ["impairments"]}, (None, "missing_layer")),
        ({"missing": ["impairments"], "listed_fraction": [1.0]}, (True, "listed_water")),
        ({"missing": ["impairments"], "unknown_fraction": [1.0]}, (None, "unknown_drainage")),
    ],
)  # fmt: skip
def test_decide_condition_a(kw, expected):
    assert _decide(**kw) == expected


# --------------------------------------------------------------------------- the demo town
@pytest.fixture(scope="module")
def town():
    gpkg = Path(
        os.environ.get("MS4MAP_DEMO_GPKG", "")
        or Path(__file__).resolve().parents[2] / "data" / "layers" / "demo.gpkg"
    )
    if not gpkg.exists():
        pytest.skip("the demo town (data/layers/demo.gpkg) is not built")
    import ms4map
    from ms4map import pipeline
    from ms4map.rules.waters import Waters

    ws = ms4map.open_workspace(gpkg)
    return ws, pipeline.run(ws), Waters.from_workspace(ws)


def _single_site(ws, res, waters, profile, *, pid, rows_of, outfall_points):
    """What :func:`evaluate_site` decides for Condition A on one parcel, by its own steps
    (``combine_parcel_rows``, ``tmdl_hits_for``, ``_reach_hits``, ``condition_a_physics``,
    ``summarize_drainage``), without the rest of the document and the report's map.
    ``rows_of`` holds each parcel's drainage rows, split once for speed."""
    from ms4map.rules.conditions import reasons, site, summary

    parcels = ws.parcels
    geom = parcels.geometry[parcels["parcel_id"].astype(str) == pid].union_all()
    rows = summary._as_rows(
        summary.combine_parcel_rows(rows_of.get(pid, res.drainage.iloc[0:0]), [pid])
    )
    hits = site.tmdl_hits_for(waters, site_geom=geom, rows=rows, outfall_points=outfall_points)
    phys = reasons.condition_a_physics(
        rows,
        waters=waters,
        profile=profile,
        tmdl_hits=hits,
        reach_hits=site._reach_hits(rows, waters, profile, ws.crs),
    )
    return phys, summary.summarize_drainage(rows, waters)


def _ids(text):
    return sorted(set(str(text).split(";"))) if isinstance(text, str) and text else []


def _profiles():
    from ms4map.rules.profiles import load_profile

    base = load_profile("stillwater")
    return {
        "law": base,
        "narrowed": base.with_pollutants(["nutrients"]),
        "reach_2km": dataclasses.replace(base, tributary_reach_km=2.0),
    }


@pytest.mark.slow
@pytest.mark.parametrize(("name", "step"), [("law", 1), ("narrowed", 5), ("reach_2km", 5)])
def test_single_site_and_batch_agree_on_every_demo_parcel(town, name, step):
    """Every parcel with the town's profile (law reading); every 5th parcel with a
    narrowed list and with ``tributary_reach_km`` (where the batch used to ignore the
    reach: parcel 103.15-4-5 was "no" in the batch and "yes" for the single site)."""
    from ms4map.rules.conditions import screen_all

    ws, res, waters = town
    profile = _profiles()[name]
    batch = screen_all(res, workspace=ws, profile=profile, waters=waters).set_index("parcel_id")
    from ms4map.rules.conditions.site import _outfall_points

    rows_of = {str(k): g for k, g in res.drainage.groupby(res.drainage["parcel_id"].astype(str))}
    points = _outfall_points(res, ws)
    wrong = []
    pids = list(ws.parcels["parcel_id"].astype(str))
    pids = list(dict.fromkeys(pids[::step] + [p for p in ("103.15-4-5",) if p in pids]))
    for pid in pids:
        a, drainage = _single_site(
            ws, res, waters, profile, pid=pid, rows_of=rows_of, outfall_points=points
        )
        b = batch.loc[pid]
        b_value = None if pd.isna(b["condition_a"]) else bool(b["condition_a"])
        recv = sorted({w["pwl_id"] for w in drainage["receiving_waters"] if w["pwl_id"]})
        listed = sorted({i["pwl_id"] for i in a["impaired_waters"] if i["counts_for_condition_a"]})
        got = (b_value, b["method"], _ids(b["receiving_waters"]), _ids(b["listed_waters"]))
        want = (a["value"], a["method"], recv, listed)
        if got != want:
            wrong.append((pid, got, want))
    assert not wrong, f"{len(wrong)} parcels disagree, e.g. {wrong[:3]}"
