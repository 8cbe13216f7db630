"""Audit defect 6: the septic special condition agrees with Condition A.

One septic lot (80 m x 80 m, sewer = septic) draining 100% through inlet CB1 and outfall
OF-1; the hand-made waters of ``test_rules_conditions_fixtures`` (Mill Creek 1302-0001,
303(d) category 5 for phosphorus).  The special condition read only the row's ``pwl_id``;
Condition A also reads it stripped and resolves the receiving water by name.  By hand:

- ``pwl_id`` blank, ``receiving_water`` "Mill Creek" (names one waterbody): Condition A
  yes, so the special condition is true (it was false);
- ``pwl_id`` " 1302-0001 " (spaces): Mill Creek again, true (it was false);
- ``pwl_id`` blank, ``receiving_water`` "Unnamed tributary" (no waterbody of that name):
  Condition A undetermined, so the special condition is not determined (``<NA>``,
  method ``unknown_receiving_water``, the reason naming OF-1 and the fix; it was false);
- ``pwl_id`` "1302-0003" (Clear Brook, not listed): both say no.
"""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import box
from test_rules_conditions_fixtures import CRS, row, town_waters

from ms4map.rules.conditions import screen_condition_a
from ms4map.rules.septic import flag_septic_table

CASES = [
    # (pwl_id, receiving_water, Condition A text, special condition)
    (None, "Mill Creek", "yes", True),
    (" 1302-0001 ", "Mill Creek", "yes", True),
    (None, "Unnamed tributary", "undetermined", None),
    ("1302-0003", "Clear Brook", "no", False),
]


@pytest.mark.parametrize(("pwl", "water", "a_text", "special"), CASES)
def test_special_condition_agrees_with_condition_a(pwl, water, a_text, special):
    waters = town_waters()
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["S1"], "sewer": ["septic"], "prop_class": ["210"]},
        geometry=[box(100, 100, 180, 180)],
        crs=CRS,
    )
    drainage = pd.DataFrame(
        [{"parcel_id": "S1", **row("inlet", "CB1", 1.0, "OF-1", water=water, pwl=pwl)}]
    )
    a = screen_condition_a(drainage, waters=waters).iloc[0]
    assert a["condition_a_text"] == a_text
    sp = flag_septic_table(parcels, drainage, waters=waters).iloc[0]
    assert bool(sp["flagged"]) is True
    if special is None:
        assert pd.isna(sp["special_condition"])
        assert sp["method"] == "unknown_receiving_water"
        assert "OF-1" in sp["reason"] and "`receiving_water`" in sp["reason"]
        assert sp["priority_label"] == "low"  # tributary only: nothing known raises it
    else:
        assert bool(sp["special_condition"]) is special
        assert sp["method"] == ("special_condition" if special else "tributary")
