"""Audit defect 5: one site whose drainage rows cover only part of it is undetermined.

The batch (``screen_condition_a``) already calls a parcel whose fractions do not sum to 1
bad (``_bad_drainage_rows``) and leaves it undetermined; ``determine`` and
``evaluate_site`` used the rows as they were, so 60% to Clear Brook (not listed) and 40%
not in the table gave a confident "no".  Worked by hand:

- rows 0.6 to Clear Brook: the known 60% triggers nothing, 40% is not known ->
  undetermined, method ``bad_drainage_rows`` (as the batch says);
- rows 0.6 to Mill Creek (303(d), phosphorus): the known part triggers it -> true;
- two 100 m x 100 m parcels (1 ha each) as one site, one with no rows: its half of the
  site's area is not known -> undetermined, the reason naming that parcel.
"""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
from shapely.geometry import box
from test_rules_conditions_fixtures import CLEAR, CRS, MILL, row, town_waters

from ms4map.rules.conditions import determine
from ms4map.rules.conditions.reasons import condition_a_physics
from ms4map.rules.conditions.summary import combine_parcel_rows
from ms4map.rules.profiles import load_profile


def _a(rows):
    det = determine(
        rows,
        waters=town_waters(),
        profile="stillwater",
        disturbed_acres=2,
        project_type="commercial",
    )
    return det.doc["conditions"]["A"]


def test_rows_covering_sixty_percent_are_undetermined_as_in_the_batch():
    a = _a([row("inlet", "CB3", 0.6, "OF-C", **CLEAR)])
    assert a["value"] is None and a["method"] == "bad_drainage_rows"
    assert "fractions sum to 0.600, not 1" in a["reasons"][0]


def test_complete_rows_still_say_no():
    a = _a([row("inlet", "CB3", 0.6, "OF-C", **CLEAR), row("depression", "D1", 0.4)])
    assert a["value"] is False and a["method"] == "not_listed"


def test_known_part_that_triggers_still_decides():
    a = _a([row("inlet", "CB1", 0.6, "OF-M", **MILL)])
    assert a["value"] is True and a["method"] == "listed_water"
    assert any("0.600" in r for r in a["reasons"])


def test_site_parcel_without_rows_is_undetermined_and_named():
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["A", "B"]},
        geometry=[box(0, 0, 100, 100), box(100, 0, 200, 100)],
        crs=CRS,
    )
    drainage = pd.DataFrame([{"parcel_id": "A", **row("inlet", "CB3", 1.0, "OF-C", **CLEAR)}])
    areas = dict(zip(parcels["parcel_id"], parcels.geometry.area, strict=True))
    rows = combine_parcel_rows(drainage, ["A", "B"], areas)
    assert rows["fraction"].sum() == 0.5  # A's 1 ha of the site's 2 ha
    phys = condition_a_physics(rows, waters=town_waters(), profile=load_profile("stillwater"))
    assert phys["value"] is None and phys["method"] == "bad_drainage_rows"
    assert "fractions sum to 0.500" in phys["reasons"][0]
    assert "parcel(s) B of the site have no rows" in phys["reasons"][0]
