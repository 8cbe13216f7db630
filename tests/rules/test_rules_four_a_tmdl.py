"""A category 4a water (TMDL approved) counts through its TMDL's watershed: runoff
reaching it reaches that watershed, and where the ``tmdl_watersheds`` layer does not
have the TMDL, Condition A is undetermined, never a "no" (audit defect 4).

The town of ``test_rules_conditions_fixtures``: Round Lake (1302-0004, the square
3000 - 3200 m) is category 4a for phosphorus, listed under TMDL action ``RL-P-2016``.
One site, the lot 100 - 200 m (far from the Round Lake TMDL watershed, 2500 - 3700 m),
draining 100 % through inlet CB9 and outfall OF-X at (3300, 3300), on the lake's shore
but *outside* every watershed polygon of the cases below.  By hand:

1. the layer holds the Round Lake TMDL (stormwater a source) as ``tmdl_id``
   ``RL-P-2016`` but its polygon is elsewhere (4000 - 4100 m, so neither the site nor
   OF-X lies in it, nor does the lake): linked by the listing's action id, so the site
   drains into it -> yes (it was "no");
2. the same with ``stormwater_source`` not recorded -> undetermined, ``tmdl_unknown``;
3. the same with stormwater not a source -> no;
4. the layer holds no TMDL for the lake (an empty layer) -> undetermined,
   ``tmdl_missing``, the reason naming the lake, the action id and the fix (it was
   "no");
5. the layer holds a phosphorus TMDL whose polygon (2500 - 3700 m) holds the lake but
   with another id: linked by place -> yes;
6. the same polygon for PCBs, not phosphorus, another id: not the lake's TMDL, the
   layer lacks it -> undetermined ``tmdl_missing``;
7. under a narrowed pollutant list without phosphorus (PCBs only), case 4 is a "no":
   the missing TMDL is of a pollutant that does not count.

Each case through both engines: the single site (``determine``) and the batch
(``screen_condition_a``).
"""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import Point, box
from test_rules_conditions_fixtures import (
    CRS,
    LAKE,
    condition_a_batch,
    condition_a_single,
    row,
    town_waters,
)

import ms4map
from ms4map.rules.profiles import load_profile
from ms4map.rules.waters import Waters

SITE = box(100, 100, 200, 200)
POINTS = {"OF-X": Point(3300, 3300)}


def _waters(tmdl: dict | None, polygon=box(4000, 4000, 4100, 4100)) -> Waters:
    w = town_waters()
    imp = w.impairments.copy()
    imp["action_id"] = [None, None, "RL-P-2016", None]
    if tmdl is None:
        tm = w.tmdl_watersheds.iloc[0:0].copy()
    else:
        base = {
            "tmdl_id": "RL-P-2016",
            "name": "Round Lake phosphorus",
            "pollutant": "Phosphorus",
            "stormwater_source": True,
            "approved": "2016",
        }
        tm = gpd.GeoDataFrame([{**base, **tmdl}], geometry=[polygon], crs=CRS)
    return Waters.from_frames(
        waterbodies=w.waterbodies, impairments=imp, tmdl_watersheds=tm, crs=CRS
    )


def _single(waters: Waters, profile=None) -> dict:
    return condition_a_single(
        waters,
        row("inlet", "CB9", 1, "OF-X", **LAKE),
        site=SITE,
        outfall_points=POINTS,
        profile=profile,
    )


def _batch(waters: Waters, profile=None) -> pd.Series:
    return condition_a_batch(
        waters,
        row("inlet", "CB9", 1, "OF-X", **LAKE),
        site=SITE,
        outfall_points=POINTS,
        profile=profile,
    )


@pytest.mark.parametrize(
    ("tmdl", "polygon", "value", "method", "text"),
    [
        ({}, box(4000, 4000, 4100, 4100), True, "tmdl_watershed", "yes"),
        (
            {"stormwater_source": None},
            box(4000, 4000, 4100, 4100),
            None,
            "tmdl_unknown",
            "undetermined",
        ),
        ({"stormwater_source": False}, box(4000, 4000, 4100, 4100), False, "not_listed", "no"),
        ({"tmdl_id": "OTHER"}, box(2500, 2500, 3290, 3290), True, "tmdl_watershed", "yes"),
    ],
    ids=["by-id", "by-id-source-unknown", "by-id-not-a-source", "by-place"],
)
def test_a_4a_water_reaches_its_tmdl(tmdl, polygon, value, method, text):
    waters = _waters(tmdl, polygon)
    assert not polygon.contains(POINTS["OF-X"]) and not polygon.intersects(SITE)
    a = _single(waters)
    assert a["value"] is value and a["method"] == method
    b = _batch(waters)
    assert b["condition_a_text"] == text and b["method"] == method
    if value is True:
        assert any("Round Lake (1302-0004), category 4a under" in r for r in a["reasons"])
        assert "Round Lake phosphorus TMDL watershed" in b["reason"]


@pytest.mark.parametrize(
    ("tmdl", "polygon"),
    [
        (None, None),
        ({"tmdl_id": "OTHER", "pollutant": "PCBs"}, box(2500, 2500, 3290, 3290)),
    ],
    ids=["empty-layer", "another-pollutant"],
)
def test_a_4a_water_whose_tmdl_the_layer_lacks_is_undetermined(tmdl, polygon):
    waters = _waters(tmdl, polygon) if polygon is not None else _waters(None)
    a = _single(waters)
    assert a["value"] is None and a["method"] == "tmdl_missing"
    words = " ".join(a["reasons"])
    assert "Round Lake (1302-0004), category 4a (TMDL approved) for Phosphorus" in words
    assert "TMDL action RL-P-2016" in words and "`tmdl_watersheds`" in words
    b = _batch(waters)
    assert b["condition_a_text"] == "undetermined" and b["method"] == "tmdl_missing"
    assert "TMDL action RL-P-2016" in b["reason"] and "`stormwater_source`" in b["reason"]


def test_a_missing_tmdl_of_a_pollutant_that_does_not_count_is_a_no():
    profile = load_profile("stillwater").with_pollutants(["PCBs"])
    waters = _waters(None)
    assert _single(waters, profile)["value"] is False
    assert _batch(waters, profile)["condition_a_text"] == "no"


@pytest.mark.parametrize(
    ("tmdl", "special", "method"),
    [
        ({}, True, "special_condition"),
        ({"stormwater_source": None}, None, "tmdl_unknown"),
        ({"stormwater_source": False}, False, "tributary"),
        (None, None, "tmdl_missing"),
    ],
    ids=["by-id", "by-id-source-unknown", "by-id-not-a-source", "empty-layer"],
)
def test_the_septic_special_condition_agrees(tmdl, special, method):
    """The site as a septic lot (``sewer`` septic): its special condition follows the
    lake's TMDL as Condition A does (a 4a water's TMDL with stormwater a source is a
    special condition; not recorded, or not in the layer: not determined)."""
    from ms4map.rules.septic import flag_septic_table

    waters = _waters(tmdl)
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P1"], "sewer": ["septic"], "prop_class": ["210"]},
        geometry=[SITE],
        crs=CRS,
    )
    rows = pd.DataFrame([{"parcel_id": "P1", **row("inlet", "CB9", 1, "OF-X", **LAKE)}])
    sp = flag_septic_table(parcels, rows, waters=waters, outfall_points=POINTS).iloc[0]
    assert bool(sp["flagged"])
    assert sp["method"] == method
    if special is None:
        assert pd.isna(sp["special_condition"])
        assert "Special condition not determined" in sp["reason"]
    else:
        assert bool(sp["special_condition"]) is special
    if special:
        assert (
            "outfall OF-X discharges to Round Lake (1302-0004), category 4a under" in sp["reason"]
        )
        assert sp["listed_pollutants"] == "Phosphorus" and bool(sp["septic_pollutant"])
    if method == "tmdl_missing":
        assert "TMDL action RL-P-2016" in sp["reason"]


def test_validate_warns_about_a_4a_listing_without_its_tmdl(tmp_path, capsys):
    """The demo town with its Tamarack Lake TMDL (phosphorus, 4a) re-labelled as a PCBs
    TMDL under another id: the lake's 4a phosphorus listing has no TMDL in the layer
    any more.  ``ms4map validate`` warns (exit 1), naming the lake and the fix; the
    demo as built has no such warning."""
    import shutil

    import pyogrio

    from ms4map.cli import main

    src = ms4map.datasets.get_path("alder_falls")
    if not src.exists():
        pytest.skip("the demo town is not built")
    ws_path = tmp_path / "demo.gpkg"
    shutil.copy(src, ws_path)
    shutil.copy(src.with_name("demo_dem.tif"), tmp_path / "demo_dem.tif")
    main(["validate", str(ws_path)])
    assert "impairment_4a_no_tmdl" not in capsys.readouterr().out
    tm = gpd.read_file(ws_path, layer="tmdl_watersheds")
    tm["pollutant"] = "PCBs"
    tm["tmdl_id"] = "TMDL-OTHER"
    pyogrio.write_dataframe(tm, ws_path, layer="tmdl_watersheds")
    code = main(["validate", str(ws_path)])
    out = capsys.readouterr().out
    assert code == 1
    line = next(x for x in out.splitlines() if "impairment_4a_no_tmdl" in x)
    assert "Tamarack Lake (1101-0099): phosphorus, no action id" in line
    assert "`tmdl_watersheds`" in line and "`stormwater_source`" in line
