"""Condition A, the screening and the septic flags on an ambiguous network path.

The drainage rows come out of the real join (``join_rows``) with a network answer built
by hand: inlet CB1's path is ``ambiguous`` between two outfalls of the fixtures' town.
The answer stands when every candidate gives the same one, else it is undetermined.
"""

from __future__ import annotations

import pandas as pd
import pytest
from shapely.geometry import Point
from test_rules_conditions_fixtures import (
    CLEAR,
    FISH,
    HUDSON,
    MILL,
    OUTFALL_POINTS,
    parcels_frame,
    row,
    town_waters,
)

from ms4map.drainage.join import NetworkJoin, join_rows
from ms4map.rules.conditions import determine, screen_condition_a
from ms4map.rules.conditions.condition_a import condition_a_row_facts
from ms4map.rules.conditions.site import tmdl_hits_for
from ms4map.rules.profiles import load_profile
from ms4map.rules.septic import flag_septic_table

WATERS = {
    "OF-M": MILL,  # 303(d): phosphorus
    "OF-H": HUDSON,  # 303(d): PCBs
    "OF-C": CLEAR,  # not listed
    "OF-C3": CLEAR,  # not listed, another outfall on it
    "OF-CT": CLEAR,  # not listed, but the outfall lies in the Round Lake TMDL watershed
    "OF-F": FISH,  # 303(d): pathogens
}
POINTS = {**OUTFALL_POINTS, "OF-C3": Point(1000, 700), "OF-CT": Point(2600, 2600)}


@pytest.fixture(scope="module")
def waters():
    return town_waters()


def ambiguous_rows(*candidates: str) -> pd.DataFrame:
    """Parcel P1 wholly to inlet CB1, whose network path is ambiguous between ``candidates``."""
    inlet = pd.DataFrame(
        {"outfall_id": [None], "other_outfalls": [";".join(candidates)], "method": ["ambiguous"]},
        index=pd.Index(["CB1"], name="node_id"),
    )
    outfalls = pd.DataFrame(
        {
            "receiving_water": [WATERS[c]["water"] for c in candidates],
            "pwl_id": [WATERS[c]["pwl"] for c in candidates],
        },
        index=list(candidates),
    )
    join = NetworkJoin(inlet, inlet.iloc[:0], outfalls, net=object())
    rows = pd.DataFrame([{"parcel_id": "P1", **row("inlet", "CB1", 1.0)}])
    return join_rows(rows, join)


def site_a(rows: pd.DataFrame, waters) -> dict:
    return site_det(rows, waters).conditions["A"]


def site_det(rows: pd.DataFrame, waters):
    hits = tmdl_hits_for(waters, site_geom=None, rows=rows, outfall_points=POINTS)
    det = determine(
        rows.drop(columns="parcel_id"),
        waters=waters,
        disturbed_acres=2,
        project_type="commercial",
        tmdl_hits=hits,
    )
    return det


def batch_a(rows: pd.DataFrame, waters) -> pd.Series:
    return screen_condition_a(rows, waters=waters, outfall_points=POINTS).iloc[0]


def test_listed_and_unlisted_candidates_leave_condition_a_undetermined(waters):
    rows = ambiguous_rows("OF-C", "OF-M")
    assert rows.iloc[0]["outfall_candidates"] == "OF-C;OF-M"
    assert rows.iloc[0]["outfall_id"] is None and pd.isna(rows.iloc[0]["pwl_id"])
    a = site_a(rows, waters)
    assert a["value"] is None and a["method"] == "ambiguous_outfall"
    text = " ".join(a["reasons"])
    assert "the network cannot tell whether flow reaches OF-C or OF-M" in text
    assert "OF-C: Clear Brook (1302-0003), not listed" in text
    assert "OF-M: Mill Creek (1302-0001), 303(d)-listed" in text
    assert "survey the pipes" in text and "docs/network.md" in text
    b = batch_a(rows, waters)
    assert pd.isna(b["condition_a"]) and b["method"] == "ambiguous_outfall"
    assert b["condition_a_text"] == "undetermined"
    assert "OF-C or OF-M" in b["reason"] and "docs/network.md" in b["reason"]


def test_every_candidate_listed_gives_yes_for_each(waters):
    rows = ambiguous_rows("OF-H", "OF-M")
    a = site_a(rows, waters)
    assert a["value"] is True and a["method"] == "listed_water"
    assert any("holds for every candidate outfall" in r for r in a["reasons"])
    b = batch_a(rows, waters)
    assert b["condition_a"] == True  # noqa: E712
    assert "every candidate reaches a listed water" in b["reason"]


def test_same_unlisted_water_on_every_candidate_gives_no(waters):
    rows = ambiguous_rows("OF-C", "OF-C3")
    assert rows.iloc[0]["pwl_id"] == "1302-0003"  # the join filled the one water
    a = site_a(rows, waters)
    assert a["value"] is False and a["method"] == "not_listed"
    assert any("holds for every candidate outfall" in r for r in a["reasons"])
    b = batch_a(rows, waters)
    assert b["condition_a"] == False  # noqa: E712
    assert "holds for every candidate" in b["reason"]


def test_a_candidate_outfall_in_a_tmdl_watershed_is_never_a_no(waters):
    # both candidates discharge to Clear Brook, but OF-CT lies in the Round Lake TMDL
    # watershed (stormwater a source): whether the flow goes there is not known
    rows = ambiguous_rows("OF-C", "OF-CT")
    a = site_a(rows, waters)
    assert a["value"] is None and a["method"] == "ambiguous_outfall"
    assert "OF-CT" in " ".join(a["reasons"]) and "Round Lake phosphorus" in " ".join(a["reasons"])
    assert site_det(rows, waters)["tmdl_watersheds"] == []  # not reported as reached
    b = batch_a(rows, waters)
    assert pd.isna(b["condition_a"]) and b["method"] == "ambiguous_outfall"
    assert "outfall OF-CT lies in the Round Lake phosphorus TMDL watershed" in b["reason"]


def test_a_share_reaching_no_outfall_is_still_unknown_drainage(waters):
    # what an ambiguous path must be at least as careful as (unchanged)
    rows = pd.DataFrame([{"parcel_id": "P1", **row("inlet", "CB1", 1.0)}])
    assert site_a(rows, waters)["method"] == "unknown_drainage"
    assert site_a(rows, waters)["value"] is None


def septic_of(rows: pd.DataFrame, waters) -> pd.Series:
    parcels = parcels_frame()
    out = flag_septic_table(
        parcels[parcels["parcel_id"] == "P1"], rows, waters=waters, outfall_points=POINTS
    )
    return out.iloc[0]


def test_septic_flag_undetermined_when_candidates_disagree(waters):
    s = septic_of(ambiguous_rows("OF-C", "OF-M"), waters)
    assert bool(s["flagged"]) is True  # the runoff enters the MS4 either way
    assert pd.isna(s["special_condition"]) and s["method"] == "ambiguous_outfall"
    assert "the network cannot tell whether flow reaches OF-C or OF-M" in s["reason"]
    assert "OF-C: does not apply; OF-M: applies" in s["reason"]
    assert "survey the pipes" in s["reason"]


def test_septic_flag_stands_when_every_candidate_agrees(waters):
    yes = septic_of(ambiguous_rows("OF-F", "OF-M"), waters)
    assert yes["special_condition"] == True  # noqa: E712
    assert "every candidate applies it" in yes["reason"]
    no = septic_of(ambiguous_rows("OF-C", "OF-C3"), waters)
    assert no["special_condition"] == False  # noqa: E712
    assert "holds for every candidate outfall" in no["reason"]
    tmdl = septic_of(ambiguous_rows("OF-C", "OF-CT"), waters)
    assert pd.isna(tmdl["special_condition"]) and tmdl["method"] == "ambiguous_outfall"


def test_septic_priority_rises_only_for_a_septic_pollutant_on_every_candidate(waters):
    # Fish Creek (pathogens) and Mill Creek (phosphorus): septic pollutants on both
    both = septic_of(ambiguous_rows("OF-F", "OF-M"), waters)
    assert bool(both["septic_pollutant"]) is True and both["priority"] == 3
    # Hudson River (PCBs) and Fish Creek (pathogens): only one candidate's is
    one = septic_of(ambiguous_rows("OF-F", "OF-H"), waters)
    assert one["special_condition"] == True  # noqa: E712
    assert bool(one["septic_pollutant"]) is False and one["priority"] == 2


def test_row_facts_of_a_table_whose_index_repeats_labels(waters):
    # rows concatenated without a new index: each ambiguous row decided on its own
    table = pd.concat(
        [
            ambiguous_rows("OF-C", "OF-M"),
            ambiguous_rows("OF-H", "OF-M"),
            ambiguous_rows("OF-C", "OF-C3"),
        ]
    )
    assert list(table.index) == [0, 0, 0]
    facts = condition_a_row_facts(table, waters=waters, profile=load_profile("stillwater"))
    assert facts["ambiguous_open"].tolist() == [True, False, False]
    assert facts["listed_wbs"].tolist()[1] == "1101-0001;1302-0001"
    assert "every candidate discharges to Clear Brook (1302-0003)" in facts["ambiguous"].iloc[2]
