"""Audit of the Condition A / septic rules, eighth round: each defect worked by hand.

The hand-made town of ``test_rules_conditions_fixtures`` (UTM 18N, metres): Mill Creek
1302-0001 (phosphorus, category 5), Hudson River 1101-0001 (PCBs, 5), Clear Brook
1302-0003 (not listed), Round Lake 1302-0004 (4a), Fish Creek 1302-0005 (pathogens, 5).

1. A 303(d) CSV row that cannot be read (line 2: Clear Brook, phosphorus, list part
   ``4``) is skipped; a site draining 100 % to Clear Brook is then undetermined
   (``listing_skipped``, the reason naming line 2 and the fix), never "no"; the septic
   special condition of a parcel draining there is open (<NA>) too.
2. ``--pollutants turbidity`` gives silt/sediment + turbidity, so a Silt/Sediment
   listing of Mill Creek makes Condition A true.
3. Septic rows covering part of a parcel (fractions summing to 0.6 or 0.5) leave
   ``tributary`` (where nothing is known to enter the MS4) or the special condition
   (where something does) not known.
4. A TMDL watershed with a blank pollutant says "pollutant not given", not "nan".
5. ``--type agricultural`` with the exemption ``agricultural_activity``: building at a
   farm is not exempt (the law's agricultural activity excludes new structures).
6. A drawn polygon's parcels are those it overlaps by area (> 1 m2 and >= 1 % of the
   parcel or of the polygon), not those it touches along an edge.
7. With ``tributary_reach_km = 2`` the reason names the nearby listed water with the
   setting and does not call the receiving water listed, nor the other water
   "downstream".
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import geopandas as gpd
import pandas as pd
import pyproj
import pytest
from shapely.geometry import box
from test_rules_conditions_fixtures import (
    CLEAR,
    CRS,
    FISH,
    HUDSON,
    MILL,
    OUTFALL_POINTS,
    row,
    town_waters,
)

from ms4map.rules.conditions import determine, screen_condition_a
from ms4map.rules.conditions.site import _reach_hits, _resolve_site, tmdl_hits_for
from ms4map.rules.profiles import load_profile, profile_with
from ms4map.rules.septic import flag_septic_table, mailing_list
from ms4map.rules.waters import Waters, read_303d_csv


def _a(rows, waters, *, profile="stillwater", **kw):
    rows = pd.DataFrame(rows)
    hits = tmdl_hits_for(waters, site_geom=None, rows=rows, outfall_points=OUTFALL_POINTS)
    kw.setdefault("project_type", "commercial")
    kw.setdefault("disturbed_acres", 2)
    return determine(rows, waters=waters, profile=profile, tmdl_hits=hits, **kw)


def _septic_parcels(ids, boxes):
    return gpd.GeoDataFrame(
        {
            "parcel_id": list(ids),
            "sewer": "septic",
            "prop_class": "210",
            "septic_failure": None,
            "owner": "o",
            "owner_address": "a",
            "address": "x",
        },
        geometry=boxes,
        crs=CRS,
    )


# --------------------------------------------------------------------- 1. skipped row
def _csv_waters(tmp_path):
    path = tmp_path / "list303d.csv"
    path.write_text(
        "PWL ID,Waterbody Name,Cause/Pollutant,List Part,List Year\n"
        "1302-0003,Clear Brook,Phosphorus,4,2018\n"  # line 2: part 4 does not exist
        "1101-0001,Hudson River,PCBs,1,2018\n"
        "1101-0001,Hudson River,PCBs,1,2018\n"  # line 4: a duplicate, read on line 3
        "1302-5,Fish Creek,Pathogens,1,2018\n"  # line 5: bad id, placed by its name
    )
    imp = read_303d_csv(path, on_error="skip")
    base = town_waters()
    return Waters.from_frames(
        waterbodies=base.waterbodies,
        impairments=imp,
        tmdl_watersheds=base.tmdl_watersheds,
        crs=CRS,
    )


def test_skipped_rows_are_kept_on_the_waters_by_water(tmp_path):
    w = _csv_waters(tmp_path)
    assert set(w.skipped) == {"1302-0003", "1302-0005"}  # the duplicate is not unreadable
    (text,) = w.skipped["1302-0003"]
    assert text.startswith("line 2 of list303d.csv (1302-0003, Phosphorus): list part")
    assert w.skipped_for("1302-0005")[0].startswith("line 5 of list303d.csv")
    assert w.skipped_for("1101-0001") == []


def test_skipped_row_makes_single_site_condition_a_undetermined(tmp_path):
    w = _csv_waters(tmp_path)
    # single-family (no Condition C), 2 acres (no B): only A could ask for the controls
    det = _a([row("inlet", "CB3", 1.0, "OF-C", **CLEAR)], w, project_type="single_family")
    a = det.conditions["A"]
    assert a["value"] is None and a["method"] == "listing_skipped"
    assert "line 2 of list303d.csv" in a["reasons"][0]
    assert "Clear Brook (1302-0003)" in a["reasons"][0]
    assert "correct those rows of the 303(d) CSV" in a["reasons"][0]
    assert det["swppp_items"]["post_construction_required"] is None
    # a water read in full still decides: Hudson listed (yes)
    assert _a([row("inlet", "CB", 1.0, "OF-H", **HUDSON)], w).conditions["A"]["value"] is True


def test_skipped_row_makes_batch_condition_a_undetermined(tmp_path):
    w = _csv_waters(tmp_path)
    drainage = pd.DataFrame(
        [
            {"parcel_id": "C", **row("inlet", "CB3", 1.0, "OF-C", **CLEAR)},
            {"parcel_id": "H", **row("inlet", "CB", 1.0, "OF-H", **HUDSON)},
            {"parcel_id": "M", **row("inlet", "CB1", 1.0, "OF-M", **MILL)},
        ]
    )
    out = screen_condition_a(drainage, waters=w, outfall_points=OUTFALL_POINTS)
    by = out.set_index("parcel_id")
    assert pd.isna(by.loc["C", "condition_a"]) and by.loc["C", "method"] == "listing_skipped"
    assert by.loc["C", "condition_a_text"] == "undetermined"
    assert "line 2 of list303d.csv" in by.loc["C", "reason"]
    assert bool(by.loc["H", "condition_a"]) and by.loc["H", "method"] == "listed_water"
    # Mill Creek is not in this CSV at all and has no skipped row: a real "no"
    assert by.loc["M", "condition_a_text"] == "no" and by.loc["M", "method"] == "not_listed"


def test_skipped_row_leaves_the_septic_special_condition_open(tmp_path):
    w = _csv_waters(tmp_path)
    parcels = _septic_parcels(["S", "F"], [box(1300, 100, 1380, 180), box(4600, 100, 4680, 180)])
    drainage = pd.DataFrame(
        [
            {"parcel_id": "S", **row("inlet", "CB3", 1.0, "OF-C", **CLEAR)},
            {"parcel_id": "F", **row("inlet", "CB", 1.0, "OF-F", **FISH)},
        ]
    )
    sp = flag_septic_table(parcels, drainage, waters=w, outfall_points=OUTFALL_POINTS)
    sp = sp.set_index("parcel_id")
    assert bool(sp.loc["S", "flagged"])
    assert pd.isna(sp.loc["S", "special_condition"])
    assert sp.loc["S", "method"] == "listing_skipped"
    assert "outfall OF-C discharges to Clear Brook (1302-0003)" in sp.loc["S", "reason"]
    assert "line 2 of list303d.csv" in sp.loc["S", "reason"]
    # Fish Creek's only row (line 5) was skipped too: open, not "no"
    assert pd.isna(sp.loc["F", "special_condition"])


# ------------------------------------------------------------- 2. turbidity in a list
def test_narrowed_list_naming_turbidity_still_counts_sediment():
    prof = profile_with("stillwater", ["turbidity"])
    assert prof.pollutants_of_concern == ("silt/sediment", "turbidity")
    base = town_waters()
    w = Waters.from_frames(
        waterbodies=base.waterbodies,
        impairments=pd.DataFrame(
            {"wb_id": ["1302-0001"], "pollutant": ["Silt/Sediment"], "category": ["5"]}
        ),
        tmdl_watersheds=base.tmdl_watersheds.iloc[0:0],
        crs=CRS,
    )
    a = _a([row("inlet", "CB1", 1.0, "OF-M", **MILL)], w, profile=prof).conditions["A"]
    assert a["value"] is True and a["method"] == "listed_water"


# --------------------------------------------------------- 3. septic incomplete rows
def test_septic_incomplete_rows_are_not_a_confident_no():
    parcels = _septic_parcels(
        ["S1", "S2", "S3", "OK"],
        [box(500 + 100 * i, 500, 580 + 100 * i, 580) for i in range(4)],
    )
    drainage = pd.DataFrame(
        [
            {"parcel_id": "S1", **row("water_direct", "1302-0003", 0.6, None, **CLEAR)},
            {"parcel_id": "S2", **row("depression", "D1", 0.5)},
            {"parcel_id": "S3", **row("inlet", "CB3", 0.5, "OF-C", **CLEAR)},
            {"parcel_id": "OK", **row("inlet", "CB3", 1.0, "OF-C", **CLEAR)},
        ]
    )
    sp = flag_septic_table(parcels, drainage, waters=town_waters(), outfall_points=OUTFALL_POINTS)
    sp = sp.set_index("parcel_id")
    for pid in ("S1", "S2"):  # nothing known to enter the MS4, 40 % / 50 % not known
        assert pd.isna(sp.loc[pid, "tributary"]) and not bool(sp.loc[pid, "flagged"])
        assert sp.loc[pid, "method"] == "bad_drainage_rows"
        assert "whether it is tributary to the MS4 is not known" in sp.loc[pid, "reason"]
    assert "fractions sum to 0.600, not 1" in sp.loc["S1", "reason"]
    # half enters the MS4 (tributary), the missing half may reach a listed water
    assert bool(sp.loc["S3", "tributary"]) and pd.isna(sp.loc["S3", "special_condition"])
    assert sp.loc["S3", "method"] == "bad_drainage_rows"
    assert "fractions sum to 0.500, not 1" in sp.loc["S3", "reason"]
    assert sp.loc["S3", "priority"] == 1
    # complete rows to an unlisted water stay a confident "no"
    assert not pd.isna(sp.loc["OK", "special_condition"])
    assert not bool(sp.loc["OK", "special_condition"]) and sp.loc["OK", "method"] == "tributary"


# ------------------------------------------------------------ 4. blank TMDL pollutant
def test_blank_tmdl_pollutant_is_said_plainly():
    base = town_waters()
    tm = gpd.GeoDataFrame(
        {
            "tmdl_id": ["T1"],
            "name": ["Lake TMDL"],
            "pollutant": [None],
            "stormwater_source": [True],
            "approved": [None],
        },
        geometry=[box(2900, 2900, 4000, 4000)],
        crs=CRS,
    )
    w = Waters.from_frames(
        waterbodies=base.waterbodies,
        impairments=pd.DataFrame({"wb_id": [], "pollutant": [], "category": []}),
        tmdl_watersheds=tm,
        crs=CRS,
    )
    parcels = _septic_parcels(["D"], [box(3000, 3000, 3050, 3050)])
    drainage = pd.DataFrame(
        [{"parcel_id": "D", **row("inlet", "C", 1.0, "OF-L", water="Round Lake", pwl="1302-0004")}]
    )
    sp = flag_septic_table(parcels, drainage, waters=w, outfall_points=OUTFALL_POINTS)
    letter = mailing_list(sp).iloc[0]["reason"]
    assert "nan" not in letter
    assert "into a TMDL watershed (pollutant not given; stormwater a source)" in letter
    assert sp.iloc[0]["listed_pollutants"] == "pollutant not given"
    a = _a([row("inlet", "C", 1.0, "OF-L", water="Round Lake", pwl="1302-0004")], w).conditions["A"]
    assert a["value"] is True
    assert "(pollutant not given), where stormwater" in a["reasons"][0]


# --------------------------------------------------------- 5. construction at a farm
def test_construction_at_a_farm_is_not_exempt_as_agricultural_activity():
    w = town_waters()
    rows = [row("inlet", "CB1", 1.0, "OF-M", **MILL)]
    det = _a(
        rows,
        w,
        disturbed_acres=3,
        project_type="agricultural",
        exemption="agricultural_activity",
    )
    assert det["exemption"]["exempt"] is False
    assert "building a barn is not" in det["exemption"]["reasons"][0]
    assert det.swppp_required is True
    assert det.conditions["A"]["value"] is True
    assert det.conditions["C"]["value"] is False  # construction at a farm: excluded from C


def test_farming_on_a_farm_parcel_is_exempt_with_the_barn_note():
    from ms4map.rules.conditions import SiteInfo

    det = determine(
        [row("inlet", "CB1", 1.0, "OF-M", **MILL)],
        waters=town_waters(),
        disturbed_acres=3,
        exemption="agricultural_activity",
        site=SiteInfo(prop_class="105", prop_classes=["105"]),
    )
    assert det["project_type"]["value"] == "agricultural"
    assert det["project_type"]["source"] == "guessed from property class"
    assert det["exemption"]["exempt"] is True
    assert any("a barn) is not" in r for r in det["exemption"]["reasons"])


# ------------------------------------------------------------- 6. polygon's parcels
def _grid_site(monkeypatch, polygon):
    """Resolve ``polygon`` over a 3 x 3 grid of 100 m parcels (``C`` in the middle) and a
    1 km square farm ``FARM`` east of it; the drainage of a polygon is stubbed."""
    import ms4map.rules.conditions.site

    ids, geoms = [], []
    for i in range(3):
        for j in range(3):
            ids.append("C" if (i, j) == (1, 1) else f"N{i}{j}")
            geoms.append(box(100 * i, 100 * j, 100 * i + 100, 100 * j + 100))
    ids.append("FARM")
    geoms.append(box(1000, 0, 2000, 1000))
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ids, "prop_class": ["210"] * 9 + ["105"]}, geometry=geoms, crs=CRS
    )
    ws = SimpleNamespace(layers={"parcels": parcels}, crs=pyproj.CRS(CRS))
    result = SimpleNamespace(drainage=pd.DataFrame())
    monkeypatch.setattr(
        ms4map.rules.conditions.site,
        "polygon_drainage",
        lambda _result, _geom: pd.DataFrame([row("inlet", "CB1", 1.0, "OF-M", **MILL)]),
    )
    info, _rows, _sel = _resolve_site(gpd.GeoSeries([polygon], crs=CRS), ws, result, site_crs=None)
    return sorted(info.parcel_ids)


def test_polygon_equal_to_a_parcel_is_that_parcel_only(monkeypatch):
    assert _grid_site(monkeypatch, box(100, 100, 200, 200)) == ["C"]


def test_polygon_takes_the_parcels_it_overlaps_by_area(monkeypatch):
    # 0.2 m over each edge: 20 m2 of each edge neighbour, 0.2 % of it and of the polygon
    assert _grid_site(monkeypatch, box(99.8, 99.8, 200.2, 200.2)) == ["C"]
    # half over C, half over its east neighbour N21
    assert _grid_site(monkeypatch, box(150, 120, 250, 180)) == ["C", "N21"]
    # 20 m x 20 m in a 1 km2 farm: 0.04 % of the parcel, all of the polygon
    assert _grid_site(monkeypatch, box(1500, 500, 1520, 520)) == ["FARM"]


# ----------------------------------------------------------- 7. tributary reach reason
def test_reach_reason_names_the_setting_and_not_the_receiving_water_as_listed():
    prof = dataclasses.replace(load_profile("stillwater"), tributary_reach_km=2.0)
    base = town_waters()
    # Clear Brook (x = 1000) is unlisted; Mill Creek (x = 0) and the Hudson (x = 2000),
    # both listed, are 1 km away
    rows = pd.DataFrame([row("inlet", "CB3", 1.0, "OF-C", **CLEAR)])
    det = determine(
        rows,
        waters=base,
        profile=prof,
        disturbed_acres=2,
        project_type="commercial",
        reach_hits=_reach_hits(rows, base, prof, CRS),
    )
    a = det.conditions["A"]
    assert a["value"] is True
    reason = a["reasons"][0]
    assert reason == (
        "100% of the site drains through MS4 outfall(s) OF-C to Clear Brook (1302-0003), "
        "within 2 km (straight line; profile tributary_reach_km = 2) of Hudson River "
        "(1101-0001), on the 303(d) list for PCBs; and of Mill Creek (1302-0001), on the "
        "303(d) list for Phosphorus."
    )
    near = [x for x in det["impaired_waters"] if x["pwl_id"] == "1302-0001"]
    assert near and "downstream" not in near[0]["relation"]
    assert near[0]["relation"].startswith("listed water within 2 km (straight line) of 1302-0003")


@pytest.mark.parametrize("pid", ["S1"])
def test_condition_a_and_septic_agree_on_incomplete_rows(pid):
    """Both engines read the same incomplete rows as not known (method named alike)."""
    parcels = _septic_parcels([pid], [box(500, 500, 580, 580)])
    drainage = pd.DataFrame(
        [{"parcel_id": pid, **row("water_direct", "1302-0003", 0.6, None, **CLEAR)}]
    )
    w = town_waters()
    sp = flag_septic_table(parcels, drainage, waters=w).iloc[0]
    scr = screen_condition_a(drainage, waters=w, parcels=parcels).iloc[0]
    assert sp["method"] == scr["method"] == "bad_drainage_rows"
    assert pd.isna(sp["tributary"]) and pd.isna(scr["condition_a"])


def test_septic_runoff_partly_off_the_dem_is_not_a_confident_no():
    """P8's case: 60 % of a septic parcel enters the MS4 through an unlisted outfall,
    40 % flows off the DEM (rows summing to 1). Condition A leaves the parcel
    undetermined (the 40 % may reach a listed water); the special condition was a
    confident False. A parcel wholly to that outfall stays False."""
    parcels = _septic_parcels(
        ["P8", "OK"], [box(500 + 100 * i, 500, 580 + 100 * i, 580) for i in range(2)]
    )
    drainage = pd.DataFrame(
        [
            {"parcel_id": "P8", **row("inlet", "CB3", 0.6, "OF-C", **CLEAR)},
            {"parcel_id": "P8", **row("off_dem", "dem_edge", 0.4)},
            {"parcel_id": "OK", **row("inlet", "CB3", 1.0, "OF-C", **CLEAR)},
        ]
    )
    sp = flag_septic_table(parcels, drainage, waters=town_waters(), outfall_points=OUTFALL_POINTS)
    sp = sp.set_index("parcel_id")
    assert bool(sp.loc["P8", "tributary"]) and pd.isna(sp.loc["P8", "special_condition"])
    assert sp.loc["P8", "method"] == "drainage_partly_unknown"
    assert "40% of its runoff drains off the DEM" in sp.loc["P8", "reason"]
    assert not pd.isna(sp.loc["OK", "special_condition"])
    assert not bool(sp.loc["OK", "special_condition"])
    assert sp.loc["OK", "method"] == "tributary"
    a = _a(
        drainage[drainage["parcel_id"] == "P8"].drop(columns="parcel_id").to_dict("records"),
        town_waters(),
    ).conditions["A"]
    assert a["value"] is None  # the two agree
