"""Condition A/B/C rules on hand-made drainage rows (no pipeline needed)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from shapely.geometry import box
from test_rules_conditions_fixtures import (
    CLEAR,
    FISH,
    HUDSON,
    LAKE,
    MILL,
    OUTFALL_POINTS,
    parcel_drainage,
    parcels_frame,
    row,
    town_waters,
)

from ms4map.core.errors import DataError, UsageError
from ms4map.rules.conditions import (
    DETERMINATION_VERSION,
    PROJECT_TYPES,
    SiteInfo,
    determine,
    screen_condition_a,
    validate_inputs,
)
from ms4map.rules.conditions.inputs import guess_project_type
from ms4map.rules.conditions.site import tmdl_hits_for
from ms4map.rules.conditions.summary import combine_parcel_rows
from ms4map.rules.profiles import load_profile


@pytest.fixture(scope="module")
def waters():
    return town_waters()


NARROW = load_profile("stillwater").with_pollutants(
    ["silt/sediment", "phosphorus", "nitrogen", "nutrients"]
)

# (id, rows, kwargs, expected: lda, exempt, A, B, C, swppp, post)
SCENARIOS = [
    (
        "6ac_to_phosphorus_creek",
        [row("inlet", "CB1", 1, "OF-M", **MILL)],
        dict(disturbed_acres=6, project_type="commercial"),
        (True, False, True, True, False, True, True),
    ),
    (
        "2ac_commercial_pcb_river_law",
        [row("inlet", "CB2", 1, "OF-H", **HUDSON)],
        dict(disturbed_acres=2, project_type="commercial"),
        (True, False, True, False, True, True, True),
    ),
    (
        "2ac_commercial_pcb_river_narrowed",
        [row("inlet", "CB2", 1, "OF-H", **HUDSON)],
        dict(disturbed_acres=2, project_type="commercial", profile=NARROW),
        (True, False, False, False, True, True, True),
    ),
    (
        "2ac_single_family_pcb_river",
        [row("inlet", "CB2", 1, "OF-H", **HUDSON)],
        dict(disturbed_acres=2, project_type="single_family"),
        (True, False, True, False, False, True, True),
    ),
    (
        "2ac_single_family_narrowed",
        [row("inlet", "CB2", 1, "OF-H", **HUDSON)],
        dict(disturbed_acres=2, project_type="single_family", profile=NARROW),
        (True, False, False, False, False, True, False),
    ),
    (
        "half_acre_in_3ac_plan",
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        dict(disturbed_acres=0.5, common_plan_acres=3, project_type="residential"),
        (True, False, False, False, True, True, True),
    ),
    (
        "half_acre_alone",
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        dict(disturbed_acres=0.5, project_type="residential"),
        (False, False, False, False, False, False, False),
    ),
    (
        "ag_construction_barn",
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        dict(disturbed_acres=2, project_type="agricultural"),
        (True, False, False, False, False, True, False),
    ),
    (
        # construction at a farm (project type agricultural) is not the farming the
        # agricultural_activity exemption covers ("building a barn is not"): 20 acres to
        # the phosphorus creek are A and B (C excludes agricultural), SWPPP with
        # post-construction controls
        "ag_construction_not_exempt",
        [row("inlet", "CB1", 1, "OF-M", **MILL)],
        dict(disturbed_acres=20, project_type="agricultural", exemption="agricultural_activity"),
        (True, False, True, True, False, True, True),
    ),
    (
        "split_two_outfalls",
        [row("inlet", "CB1", 0.3, "OF-M", **MILL), row("inlet", "CB3", 0.7, "OF-C", **CLEAR)],
        dict(disturbed_acres=1.5, project_type="road"),
        (True, False, True, False, True, True, True),
    ),
    (
        "split_unlisted_and_internal",
        [row("inlet", "CB3", 0.5, "OF-C", **CLEAR), row("depression", "DEP", 0.5)],
        dict(disturbed_acres=1.5, project_type="single_family"),
        (True, False, False, False, False, True, False),
    ),
    (
        "internally_drained",
        [row("depression", "DEP", 1.0)],
        dict(disturbed_acres=3, project_type="single_family"),
        (True, False, False, False, False, True, False),
    ),
    (
        "partly_off_dem",
        [row("inlet", "CB3", 0.6, "OF-C", **CLEAR), row("off_dem", None, 0.4)],
        dict(disturbed_acres=2, project_type="single_family"),
        (True, False, None, False, False, True, None),
    ),
    (
        "partly_off_dem_but_listed",
        [row("inlet", "CB1", 0.6, "OF-M", **MILL), row("off_dem", None, 0.4)],
        dict(disturbed_acres=2, project_type="single_family"),
        (True, False, True, False, False, True, True),
    ),
    (
        "partly_off_dem_big",
        [row("inlet", "CB3", 0.6, "OF-C", **CLEAR), row("unknown", None, 0.4)],
        dict(disturbed_acres=7, project_type="industrial"),
        (True, False, None, True, False, True, True),
    ),
    (
        "direct_to_listed_water",
        [row("water_direct", "1302-0001", 1.0, None, **MILL)],
        dict(disturbed_acres=1, project_type="institutional"),
        (True, False, True, False, True, True, True),
    ),
    # a 4a listing counts only through its TMDL watershed (tmdl_hits), not on its own
    (
        "lake_4a_listing_alone_not_A",
        [row("water_direct", "1302-0004", 1.0, None, **LAKE)],
        dict(disturbed_acres=1.2, project_type="single_family"),
        (True, False, False, False, False, True, False),
    ),
    (
        "routine_maintenance_small",
        [row("inlet", "CB1", 1, "OF-M", **MILL)],
        dict(disturbed_acres=2, project_type="road", exemption="routine_maintenance"),
        (True, True, False, False, False, False, False),
    ),
    (
        "routine_maintenance_large_not_exempt",
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        dict(disturbed_acres=6, project_type="road", exemption="routine_maintenance"),
        (True, False, False, True, False, True, True),
    ),
    (
        "exactly_5_acres",
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        dict(disturbed_acres=5, project_type="commercial"),
        (True, False, False, True, False, True, True),
    ),
    (
        "exactly_1_acre",
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        dict(disturbed_acres=1, project_type="commercial"),
        (True, False, False, False, True, True, True),
    ),
    (
        "plan_larger_makes_B",
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        dict(disturbed_acres=2, common_plan_acres=12, project_type="residential"),
        (True, False, False, True, False, True, True),
    ),
    (
        "pathogen_creek_law",
        [row("conveyance", "D1", 1, "OF-F", **FISH)],
        dict(disturbed_acres=1.1, project_type="other"),
        (True, False, True, False, True, True, True),
    ),
    (
        "pathogen_creek_narrowed",
        [row("conveyance", "D1", 1, "OF-F", **FISH)],
        dict(disturbed_acres=1.1, project_type="single_family", profile=NARROW),
        (True, False, False, False, False, True, False),
    ),
    (
        "no_rows",
        [],
        dict(disturbed_acres=2, project_type="single_family"),
        (True, False, None, False, False, True, None),
    ),
    (
        "receiving_water_without_pwl",
        [row("inlet", "CB9", 1, "OF-X", water="Nameless Ditch")],
        dict(disturbed_acres=2, project_type="single_family"),
        (True, False, None, False, False, True, None),
    ),
    (
        "name_only_resolves",
        [row("inlet", "CB9", 1, "OF-M", water="Mill Creek")],
        dict(disturbed_acres=2, project_type="single_family"),
        (True, False, True, False, False, True, True),
    ),
]


@pytest.mark.parametrize("name,rows,kwargs,expected", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_rules_table(waters, name, rows, kwargs, expected):
    kwargs = dict(kwargs)
    profile = kwargs.pop("profile", "stillwater")
    det = determine(rows, waters=waters, profile=profile, **kwargs)
    d = det.to_dict()
    got = (
        d["land_development_activity"]["value"],
        d["exemption"]["exempt"],
        d["conditions"]["A"]["value"],
        d["conditions"]["B"]["value"],
        d["conditions"]["C"]["value"],
        d["swppp_required"]["value"],
        d["swppp_items"]["post_construction_required"],
    )
    assert got == expected
    for k in "ABC":
        assert d["conditions"][k]["reasons"], f"condition {k} has no reason"


def test_lake_tmdl_reached_through_site_polygon(waters):
    # the site lies in the TMDL watershed but drains to the unlisted brook: A through TMDL
    rows = pd.DataFrame([row("inlet", "CB3", 1, "OF-C", **CLEAR)])
    site = box(2600, 2600, 2700, 2700)
    hits = tmdl_hits_for(waters, site_geom=site, rows=rows, outfall_points=OUTFALL_POINTS)
    assert list(hits["tmdl_id"]) == ["TMDL-RL-P"]
    det = determine(
        rows,
        waters=waters,
        disturbed_acres=2,
        project_type="single_family",
        tmdl_hits=hits,
        site=SiteInfo(geometry=site),
    )
    assert det.conditions["A"]["value"] is True
    assert det.conditions["A"]["method"] == "tmdl_watershed"
    tm = det["tmdl_watersheds"]
    assert tm[0]["tmdl_id"] == "TMDL-RL-P" and tm[0]["counts_for_condition_a"] is True


def test_lake_tmdl_through_outfall_point(waters):
    rows = pd.DataFrame([row("inlet", "CB", 1, "OF-L", **LAKE)])
    hits = tmdl_hits_for(
        waters, site_geom=box(0, 0, 10, 10), rows=rows, outfall_points=OUTFALL_POINTS
    )
    assert "outfall OF-L" in hits["how"].iloc[0]
    det = determine(
        rows, waters=waters, disturbed_acres=2, project_type="single_family", tmdl_hits=hits
    )
    assert det.conditions["A"]["value"] is True
    # the 4a listing itself is reported but does not count through the 303(d) branch
    lake = [i for i in det["impaired_waters"] if i["pwl_id"] == "1302-0004"]
    assert lake and lake[0]["counts_for_condition_a"] is False and lake[0]["category"] == "4a"


def test_tmdl_without_stormwater_source_does_not_count(waters):
    tm = waters.tmdl_watersheds.copy()
    tm["stormwater_source"] = False
    from ms4map.rules.waters import Waters

    w2 = Waters.from_frames(
        waterbodies=waters.waterbodies,
        impairments=waters.impairments,
        tmdl_watersheds=tm,
        crs=waters.crs,
    )
    rows = pd.DataFrame([row("inlet", "CB3", 1, "OF-C", **CLEAR)])
    hits = tmdl_hits_for(w2, site_geom=box(2600, 2600, 2700, 2700), rows=rows, outfall_points={})
    det = determine(
        rows, waters=w2, disturbed_acres=2, project_type="single_family", tmdl_hits=hits
    )
    assert det.conditions["A"]["value"] is False
    assert det["tmdl_watersheds"][0]["counts_for_condition_a"] is False


def test_reading_is_stated(waters):
    rows = [row("inlet", "CB2", 1, "OF-H", **HUDSON)]
    law = determine(rows, waters=waters, disturbed_acres=2, project_type="commercial").to_dict()
    nar = determine(
        rows, waters=waters, disturbed_acres=2, project_type="commercial", profile=NARROW
    ).to_dict()
    assert law["pollutant_of_concern"]["reading"] == "law"
    assert nar["pollutant_of_concern"]["reading"] == "list"
    assert "phosphorus" in nar["pollutant_of_concern"]["pollutants"]
    pcb = [i for i in nar["impaired_waters"] if i["pwl_id"] == "1101-0001"][0]
    assert pcb["counts_for_condition_a"] is False


def test_document_shape_and_items(waters):
    det = determine(
        [row("inlet", "CB1", 0.3, "OF-M", **MILL), row("inlet", "CB3", 0.7, "OF-C", **CLEAR)],
        waters=waters,
        disturbed_acres=6,
        project_type="commercial",
    )
    d = json.loads(det.to_json())
    for key in (
        "land_development_activity",
        "exemption",
        "swppp_required",
        "conditions",
        "drainage",
        "impaired_waters",
        "tmdl_watersheds",
        "swppp_items",
        "citations",
        "provenance",
    ):
        assert key in d
    assert d["schema_version"] == DETERMINATION_VERSION
    assert len(d["swppp_items"]["basic"]) == 17
    assert len(d["swppp_items"]["post_construction"]) == 7
    item13 = d["swppp_items"]["basic"][12]
    assert "Mill Creek" in item13["value"] and "Clear Brook" in item13["value"]
    assert d["drainage"]["ms4_fraction"] == pytest.approx(1.0)
    outf = {o["outfall_id"]: o["fraction"] for o in d["drainage"]["outfalls"]}
    assert outf == pytest.approx({"OF-M": 0.3, "OF-C": 0.7})
    rules = {c["rule"] for c in d["citations"]}
    assert {"condition_a", "condition_b", "condition_c", "pollutant_of_concern"} <= rules
    prov = d["provenance"]
    assert prov["profile"]["name"] == "stillwater" and len(prov["inputs_sha256"]) == 64
    assert prov["version"] and prov["created"]


def test_project_type_guess(waters):
    p = load_profile("stillwater")
    assert guess_project_type("210", p)[0] == "single_family"
    assert guess_project_type("112", p)[0] == "agricultural"
    assert guess_project_type("241", p)[0] == "agricultural"
    assert guess_project_type("230", p)[0] == "residential"
    assert guess_project_type("484", p)[0] == "commercial"
    assert guess_project_type(None, p)[0] == "other"
    det = determine(
        [row("inlet", "CB2", 1, "OF-H", **HUDSON)],
        waters=waters,
        disturbed_acres=2,
        site=SiteInfo(prop_class="210"),
    )
    assert det["project_type"]["value"] == "single_family"
    assert det["project_type"]["source"].startswith("guessed")
    assert det.conditions["C"]["value"] is False
    det2 = determine(
        [row("inlet", "CB2", 1, "OF-H", **HUDSON)],
        waters=waters,
        disturbed_acres=2,
        project_type="commercial",
        site=SiteInfo(prop_class="210"),
    )
    assert det2["project_type"]["source"] == "user" and det2.conditions["C"]["value"] is True


@pytest.mark.parametrize(
    "kind,classes,expected",
    [
        ("parcels", ["210", "215", "210"], "single_family"),  # every parcel one-family: guessed
        ("parcels", ["112", "241"], "agricultural"),
        ("parcels", ["210"] * 9 + ["484"], "other"),  # mixed classes
        ("polygon", ["210"] * 10, "other"),  # a drawn polygon over houses
        ("polygon", ["484", "484"], "commercial"),  # non-excluding type is harmless
        ("parcels", ["210", None], "other"),
    ],
)
def test_project_type_guess_is_conservative(waters, kind, classes, expected):
    rows = [row("inlet", "CB2", 1, "OF-H", **HUDSON)]
    det = determine(
        rows,
        waters=waters,
        disturbed_acres=2,
        site=SiteInfo(kind=kind, prop_class=classes[0], prop_classes=classes),
    )
    assert det["project_type"]["value"] == expected
    c = det.conditions["C"]
    assert c["value"] is (expected not in ("single_family", "agricultural"))
    if not c["value"]:  # the guess that removed Condition C is said, with how to confirm
        assert any("was guessed" in r and "--type" in r for r in c["reasons"])
    assert "--type" in det.summary()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(disturbed_acres=-1), "negative"),
        (dict(disturbed_acres=1e7), "absurd"),
        (dict(disturbed_acres="lots"), "number of acres"),
        (dict(disturbed_acres=float("nan")), "finite"),
        (dict(disturbed_acres=1, project_type="castle"), "Unknown project type.*single_family"),
        (dict(disturbed_acres=1, exemption="because"), "Unknown exemption code.*cemetery"),
        (dict(disturbed_acres=1, common_plan_acres=-3), "negative"),
        (dict(disturbed_acres=50, site_area_acres=2.0), "larger than the site"),
    ],
)
def test_bad_inputs(kwargs, match):
    with pytest.raises(UsageError, match=match):
        validate_inputs(**kwargs)


def test_project_types_closed_list():
    assert set(PROJECT_TYPES) == {
        "single_family",
        "agricultural",
        "residential",
        "commercial",
        "industrial",
        "institutional",
        "road",
        "other",
    }


def test_bad_drainage_rows_rejected(waters):
    with pytest.raises(DataError, match="target_kind"):
        determine([row("sewer", "X", 1)], waters=waters, disturbed_acres=2)


def test_combine_parcel_rows_weights():
    d = parcel_drainage()
    rows = combine_parcel_rows(d, ["P1", "P3"], {"P1": 3.0, "P3": 1.0})
    fr = dict(zip(rows["target_kind"], rows["fraction"], strict=True))
    assert fr == pytest.approx({"inlet": 0.75, "water_direct": 0.25})


def test_batch_matches_single_site(waters):
    d = parcel_drainage()
    parcels = parcels_frame()
    tab = screen_condition_a(d, waters=waters, parcels=parcels, outfall_points=OUTFALL_POINTS)
    by = tab.set_index("parcel_id")
    assert by.loc["P1", "condition_a"] == True  # noqa: E712 - Mill Creek phosphorus
    assert by.loc["P3", "condition_a"] == True  # noqa: E712 - PCBs under the law's reading
    assert by.loc["P4", "condition_a"] == False  # noqa: E712 - Clear Brook
    assert by.loc["P7", "method"] == "internally_drained"
    assert pd.isna(by.loc["P8", "condition_a"]) and by.loc["P8", "method"] == "unknown_drainage"
    for pid in parcels["parcel_id"]:
        det = determine(
            combine_parcel_rows(d, [pid]),
            waters=waters,
            disturbed_acres=2,
            project_type="commercial",
        )
        one = det.conditions["A"]["value"]
        many = by.loc[pid, "condition_a"]
        assert (None if pd.isna(many) else bool(many)) == one, pid
    narrowed = screen_condition_a(d, waters=waters, profile=NARROW).set_index("parcel_id")
    assert narrowed.loc["P3", "condition_a"] == False  # noqa: E712


def test_batch_reports_bad_rows_and_carries_on(waters):
    d = parcel_drainage()
    bad = pd.DataFrame(
        [
            {"parcel_id": "PX", **row("sewer", "X", 1.0)},
            {"parcel_id": "PY", **row("inlet", "CB", 0.5, "OF-M", **MILL)},
        ]
    )
    tab = screen_condition_a(pd.concat([d, bad]), waters=waters)
    found = tab.attrs["qa"].by_code("bad_drainage_rows")
    assert {f.feature_id for f in found} >= {"PX", "PY"}
    assert any(f.feature_id == "PY" and "sum" in f.message for f in found)
    by = tab.set_index("parcel_id")
    assert by.loc["P1", "condition_a"] == True  # noqa: E712 - good rows still screened
    assert by.loc["PX", "method"] == "bad_drainage_rows" and pd.isna(by.loc["PX", "condition_a"])


def test_batch_parcel_in_tmdl(waters):
    import geopandas as gpd

    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["T1"]}, geometry=[box(2600, 2600, 2650, 2650)], crs=waters.crs
    )
    d = pd.DataFrame([{"parcel_id": "T1", **row("inlet", "CB3", 1, "OF-C", **CLEAR)}])
    tab = screen_condition_a(d, waters=waters, parcels=parcels).set_index("parcel_id")
    assert tab.loc["T1", "condition_a"] == True  # noqa: E712
    assert tab.loc["T1", "method"] == "tmdl_watershed"  # as for one site (was site_in_tmdl)


def test_narrowed_list_still_counts_sediment():
    import geopandas as gpd
    from shapely.geometry import LineString

    from ms4map.rules.waters import Waters

    wb = gpd.GeoDataFrame(
        {"wb_id": ["1302-0009"], "name": ["Silty Brook"]},
        geometry=[LineString([(0, 0), (0, 10)])],
        crs="EPSG:26918",
    )
    imp = pd.DataFrame(
        {
            "wb_id": ["1302-0009"],
            "pollutant": ["Silt/Sediment"],
            "category": ["5"],
            "list_year": [2018],
            "source": ["Erosion"],
        }
    )
    w = Waters.from_frames(waterbodies=wb, impairments=imp, crs=wb.crs)
    rows = [row("inlet", "CB9", 1, "OF-9", water="Silty Brook", pwl="1302-0009")]
    kw = dict(waters=w, disturbed_acres=2, project_type="commercial")
    only_p = load_profile("stillwater").with_pollutants(["phosphorus"])
    det = determine(rows, profile=only_p, **kw)
    assert det.conditions["A"]["value"] is True
    assert "silt/sediment" in det["pollutant_of_concern"]["pollutants"]
    opt_out = load_profile("stillwater").with_pollutants(["phosphorus"], include_sediment=False)
    assert determine(rows, profile=opt_out, **kw).conditions["A"]["value"] is False


def test_tmdl_name_with_tmdl_is_not_doubled():
    import geopandas as gpd

    from ms4map.rules.conditions.reasons import tmdl_watershed_label
    from ms4map.rules.waters import Waters

    assert tmdl_watershed_label("Tamarack Lake Phosphorus TMDL") == (
        "Tamarack Lake Phosphorus TMDL watershed"
    )
    assert tmdl_watershed_label("Round Lake phosphorus") == "Round Lake phosphorus TMDL watershed"
    w = town_waters()
    tm = w.tmdl_watersheds.copy()
    tm["name"] = ["Tamarack Lake Phosphorus TMDL"]
    w2 = Waters.from_frames(
        waterbodies=w.waterbodies,
        impairments=w.impairments,
        tmdl_watersheds=gpd.GeoDataFrame(tm, crs=w.crs),
        crs=w.crs,
    )
    rows = [row("inlet", "CBL", 1, "OF-L", **LAKE)]
    hits = tmdl_hits_for(w2, site_geom=None, rows=pd.DataFrame(rows), outfall_points=OUTFALL_POINTS)
    det = determine(rows, waters=w2, disturbed_acres=2, project_type="commercial", tmdl_hits=hits)
    text = " ".join(det.conditions["A"]["reasons"])
    assert "Tamarack Lake Phosphorus TMDL watershed" in text and "TMDL TMDL" not in text
    scr = screen_condition_a(
        pd.DataFrame([{**r, "parcel_id": "P9"} for r in rows]),
        waters=w2,
        profile=load_profile("stillwater"),
        outfall_points=OUTFALL_POINTS,
    )
    assert "TMDL TMDL" not in scr["reason"].iloc[0] and "TMDL watershed" in scr["reason"].iloc[0]


def test_common_plan_wording_names_both_acreages(waters):
    det = determine(
        [row("inlet", "CB3", 1, "OF-C", **CLEAR)],
        waters=waters,
        disturbed_acres=0.7,
        common_plan_acres=3,
        project_type="commercial",
    )
    b = det.conditions["B"]["reasons"][0]
    assert "disturbs 0.7 acres within a 3-acre common plan" in b and "larger, 3 acres" in b
    assert "disturbs 3 acres" not in b
    assert "0.7 acres within a 3-acre" in det.conditions["C"]["reasons"][0]


def test_all_off_dem_says_drainage_unknown(waters):
    det = determine(
        [row("off_dem", None, 1.0)], waters=waters, disturbed_acres=2, project_type="commercial"
    )
    a = det.conditions["A"]
    assert a["value"] is None and "known part" not in " ".join(a["reasons"])
    assert "drainage is unknown" in a["reasons"][0] and "100% lies off the DEM" in a["reasons"][0]
    part = determine(
        [row("off_dem", None, 0.4), row("inlet", "CB3", 0.6, "OF-C", **CLEAR)],
        waters=waters,
        disturbed_acres=2,
        project_type="commercial",
    )
    assert "known part" in part.conditions["A"]["reasons"][0]


def test_determination_repr_is_short(waters):
    det = determine(
        [row("inlet", "CB1", 1, "OF-M", **MILL)],
        waters=waters,
        disturbed_acres=2,
        project_type="commercial",
        site=SiteInfo(label="P1"),
    )
    text = repr(det)
    assert text == "<Determination site='P1' acres=2.0 A=yes B=no C=yes SWPPP=yes>"
