"""A TMDL watershed whose layer does not say whether stormwater is a source (or, under a
narrowed pollutant list, what its pollutant is): a site in it is undetermined, never a
"no" (docs/rules.md, section 2); "MS4" or "WLA" in ``stormwater_source`` (an MS4 waste
load allocation) say it is a source.

The town of ``test_rules_conditions_fixtures``: the Round Lake phosphorus TMDL watershed
is the square 2500 - 3700 m; a site at 2600 - 2700 m lies in it and drains to Clear Brook
(not listed), so only the TMDL can make it Condition A.
"""

from __future__ import annotations

import pandas as pd
import pytest
from shapely.geometry import box
from test_rules_conditions_fixtures import (
    CLEAR,
    CRS,
    OUTFALL_POINTS,
    condition_a_batch,
    condition_a_single,
    row,
    town_waters,
)

from ms4map.rules.profiles import load_profile
from ms4map.rules.waters import Waters

SITE = box(2600, 2600, 2700, 2700)


def _waters(**tmdl_values) -> Waters:
    w = town_waters()
    tm = w.tmdl_watersheds.copy()
    for k, v in tmdl_values.items():
        tm[k] = [v]
    return Waters.from_frames(
        waterbodies=w.waterbodies, impairments=w.impairments, tmdl_watersheds=tm, crs=CRS
    )


def _single(waters: Waters, profile=None) -> dict:
    return condition_a_single(
        waters,
        row("inlet", "CB3", 1, "OF-C", **CLEAR),
        site=SITE,
        outfall_points=OUTFALL_POINTS,
        profile=profile,
    )


def _batch(waters: Waters, profile=None) -> pd.Series:
    return condition_a_batch(
        waters,
        row("inlet", "CB3", 1, "OF-C", **CLEAR),
        site=SITE,
        outfall_points=OUTFALL_POINTS,
        profile=profile,
    )


@pytest.mark.parametrize("value", [None, "", "unknown"])
def test_stormwater_source_not_recorded_is_undetermined(value):
    waters = _waters(stormwater_source=value)
    a = _single(waters)
    assert a["value"] is None and a["method"] == "tmdl_unknown"
    assert any("stormwater is a source" in r for r in a["reasons"])
    b = _batch(waters)
    assert b["condition_a_text"] == "undetermined" and b["method"] == "tmdl_unknown"
    assert "stormwater_source" in b["reason"]


@pytest.mark.parametrize("value", ["MS4", "WLA", "yes"])
def test_an_ms4_waste_load_allocation_means_stormwater_is_a_source(value):
    waters = _waters(stormwater_source=value)
    assert _single(waters)["value"] is True
    assert _batch(waters)["condition_a_text"] == "yes"


def test_stormwater_not_a_source_is_still_a_no():
    waters = _waters(stormwater_source="no")
    assert _single(waters)["value"] is False
    assert _batch(waters)["condition_a_text"] == "no"


def test_a_tmdl_without_its_pollutant_under_a_narrowed_list_is_undetermined():
    waters = _waters(pollutant=None)
    narrowed = load_profile("stillwater").with_pollutants(["nutrients"])
    assert _single(waters, narrowed)["value"] is None
    assert _batch(waters, narrowed)["condition_a_text"] == "undetermined"
