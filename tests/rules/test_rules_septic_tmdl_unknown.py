"""The septic special condition of a TMDL watershed whose layer does not say whether
stormwater is a source: not known (``<NA>``), never "no", as Condition A
(``test_rules_tmdl_unknown``).

The town of ``test_rules_conditions_fixtures``: the Round Lake phosphorus TMDL watershed
is the square 2500 - 3700 m, outfall OF-L (3000, 3100) lies in it, OF-C (1000, 500) on
Clear Brook (not listed) does not.  Round Lake itself is category 4a (a TMDL, not a
category 5 listing), so only the TMDL watershed can make a special condition here.
Septic lots (80 m squares, ``sewer`` septic), each draining 100 % through one inlet:

- ``IN``: at 2600 - 2680 m (inside the watershed), through OF-C to Clear Brook;
- ``OUT``: at 100 - 180 m (outside it), through OF-L into the watershed;
- ``FAR``: at 1300 - 1380 m, through OF-C to Clear Brook: no TMDL at all.

By hand, for each ``stormwater_source``: yes -> ``IN`` and ``OUT`` special, ``FAR`` not;
blank or unrecognised -> ``IN`` and ``OUT`` not determined (method ``tmdl_unknown``, the
reason naming the watershed and the fix, priority of a tributary parcel only), ``FAR``
still not special; no -> none of the three special.
"""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import box
from test_rules_conditions_fixtures import CLEAR, CRS, LAKE, OUTFALL_POINTS, row, town_waters

from ms4map.rules.conditions import screen_condition_a
from ms4map.rules.septic import flag_septic_table
from ms4map.rules.waters import Waters

LOTS = {"IN": (2600, 2600), "OUT": (100, 100), "FAR": (1300, 100)}


def _waters(stormwater_source) -> Waters:
    w = town_waters()
    tm = w.tmdl_watersheds.copy()
    tm["stormwater_source"] = [stormwater_source]
    return Waters.from_frames(
        waterbodies=w.waterbodies, impairments=w.impairments, tmdl_watersheds=tm, crs=CRS
    )


def _town():
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": list(LOTS),
            "sewer": ["septic"] * len(LOTS),
            "prop_class": ["210"] * len(LOTS),
        },
        geometry=[box(x, y, x + 80, y + 80) for x, y in LOTS.values()],
        crs=CRS,
    )
    drainage = pd.DataFrame(
        [
            {"parcel_id": "IN", **row("inlet", "CB-IN", 1.0, "OF-C", **CLEAR)},
            {"parcel_id": "OUT", **row("inlet", "CB-OUT", 1.0, "OF-L", **LAKE)},
            {"parcel_id": "FAR", **row("inlet", "CB-FAR", 1.0, "OF-C", **CLEAR)},
        ]
    )
    return parcels, drainage


def _septic(stormwater_source) -> pd.DataFrame:
    parcels, drainage = _town()
    out = flag_septic_table(
        parcels, drainage, waters=_waters(stormwater_source), outfall_points=OUTFALL_POINTS
    )
    return out.set_index("parcel_id")


def test_stormwater_a_source_makes_both_lots_special():
    sp = _septic(True)
    assert bool(sp.loc["IN", "special_condition"])
    assert "lies in a TMDL watershed (Phosphorus" in sp.loc["IN", "reason"]
    assert bool(sp.loc["OUT", "special_condition"])
    assert "outfall OF-L discharges into a TMDL watershed" in sp.loc["OUT", "reason"]
    assert not bool(sp.loc["FAR", "special_condition"])
    assert sp.loc["FAR", "method"] == "tributary"


@pytest.mark.parametrize("value", [None, "", "unknown"])
def test_stormwater_source_not_recorded_leaves_it_open(value):
    sp = _septic(value)
    for pid in ("IN", "OUT"):
        assert pd.isna(sp.loc[pid, "special_condition"]), pid
        assert sp.loc[pid, "method"] == "tmdl_unknown"
        reason = sp.loc[pid, "reason"]
        assert "Special condition not determined" in reason
        assert "Round Lake phosphorus TMDL watershed" in reason
        assert "`stormwater_source`" in reason and "`tmdl_watersheds`" in reason
        assert sp.loc[pid, "priority_label"] == "low"  # tributary only
        assert bool(sp.loc[pid, "flagged"])
    # a lot that reaches no TMDL watershed is still a known "no"
    assert not pd.isna(sp.loc["FAR", "special_condition"])
    assert not bool(sp.loc["FAR", "special_condition"])
    assert sp.loc["FAR", "method"] == "tributary"


def test_septic_and_condition_a_agree_on_the_unknown_tmdl():
    parcels, drainage = _town()
    waters = _waters(None)
    a = screen_condition_a(
        drainage, waters=waters, parcels=parcels, outfall_points=OUTFALL_POINTS
    ).set_index("parcel_id")
    sp = _septic(None)
    for pid in ("IN", "OUT"):
        assert a.loc[pid, "condition_a_text"] == "undetermined"
        assert pd.isna(sp.loc[pid, "special_condition"])
    assert a.loc["FAR", "condition_a_text"] == "no"
    assert not pd.isna(sp.loc["FAR", "special_condition"])


def test_a_known_listing_is_not_hidden_by_an_unknown_tmdl():
    """``IN`` also drains half through OF-M to Mill Creek (category 5, phosphorus): the
    special condition is true whatever the TMDL's layer says."""
    parcels, drainage = _town()
    drainage.loc[drainage["parcel_id"] == "IN", "fraction"] = 0.5
    extra = {
        "parcel_id": "IN",
        **row("inlet", "CB-M", 0.5, "OF-M", water="Mill Creek", pwl="1302-0001"),
    }
    drainage = pd.concat([drainage, pd.DataFrame([extra])], ignore_index=True)
    sp = flag_septic_table(
        parcels, drainage, waters=_waters(None), outfall_points=OUTFALL_POINTS
    ).set_index("parcel_id")
    assert bool(sp.loc["IN", "special_condition"])
    assert sp.loc["IN", "method"] == "special_condition"
    assert "Mill Creek" in sp.loc["IN", "reason"]


def test_stormwater_not_a_source_is_still_a_no():
    sp = _septic("no")
    for pid in LOTS:
        assert not pd.isna(sp.loc[pid, "special_condition"]), pid
        assert not bool(sp.loc[pid, "special_condition"]), pid
        assert sp.loc[pid, "method"] == "tributary"


def test_the_summaries_name_the_cause():
    """What ``ms4map screen --all`` and the app's Septic page say: two parcels open,
    because of the TMDL's stormwater source (not a missing layer)."""
    from ms4map.rules.septic import undetermined_causes

    causes = undetermined_causes(_septic(None).reset_index())
    assert [n for n, _ in causes] == [2]
    assert "does not record whether stormwater is a source" in causes[0][1]
    assert undetermined_causes(_septic(True).reset_index()) == []
