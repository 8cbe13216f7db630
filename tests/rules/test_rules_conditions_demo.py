"""Condition A/B/C and septic scenarios on the demo town, through the real pipeline.

The scenario parcels are those ``ms4map.demo.SCENARIO_PARCELS`` names (see
``data/layers/README.md``).  The pipeline runs once per session; every test asserts
structured fields of the determination (never reason wording, except where the brief
asks the output to say why).
"""

from __future__ import annotations

import os

import geopandas as gpd
import pandas as pd
import pytest
import shapely

from ms4map.core.errors import DataError, UsageError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

RIVER, CREEK, LAKE = "1101-0012", "1101-0045", "1101-0099"
TMDL = "TMDL-1101-0099-TP"
NARROW = ["silt/sediment", "phosphorus", "nitrogen", "nutrients"]


@pytest.fixture(scope="session")
def demo():
    from pathlib import Path

    from ms4map.datasets import alder_falls as demo_mod

    gpkg = Path(
        os.environ.get("MS4MAP_DEMO_GPKG", "")
        or Path(__file__).resolve().parents[2] / "data" / "layers" / "demo.gpkg"
    )
    if not gpkg.exists():
        pytest.skip("the demo town (data/layers/demo.gpkg) is not built")
    scenarios = demo_mod.SCENARIO_PARCELS or demo_mod.build_layers().info["scenarios"]
    import ms4map
    from ms4map import pipeline
    from ms4map.rules.conditions import screen_all
    from ms4map.rules.septic import flag_septic

    ws = ms4map.open_workspace(gpkg)
    res = pipeline.run(ws)
    ids = {k: v["parcel_id"] for k, v in scenarios.items()}
    return {
        "ws": ws,
        "res": res,
        "ids": ids,
        "screening": screen_all(res, workspace=ws).set_index("parcel_id"),
        "septic": flag_septic(res, workspace=ws).set_index("parcel_id"),
    }


def _acres(demo, key):
    p = demo["ws"].parcels
    g = p.loc[p["parcel_id"] == demo["ids"][key]].geometry.iloc[0]
    return g.area / 4046.8564224


def ev(demo, key, **kw):
    from ms4map.rules.conditions import evaluate_site

    site = kw.pop("site", None)
    if site is None:
        site = demo["ids"][key]
    kw.setdefault("profile", "stillwater")
    return evaluate_site(demo["res"], site, **kw).to_dict()


def vals(d):
    c = d["conditions"]
    return (
        d["land_development_activity"]["value"],
        d["exemption"]["exempt"],
        c["A"]["value"],
        c["B"]["value"],
        c["C"]["value"],
        d["swppp_required"]["value"],
    )


def narrowed():
    from ms4map.rules.profiles import load_profile

    return load_profile("stillwater").with_pollutants(NARROW)


def recv_ids(d):
    return {w["pwl_id"] for w in d["drainage"]["receiving_waters"]}


# --------------------------------------------------------------------------- determinations
def test_01_six_acres_to_phosphorus_creek(demo):
    d = ev(demo, "a", disturbed_acres=6, project_type="residential")
    assert vals(d) == (True, False, True, True, False, True)
    assert CREEK in recv_ids(d)
    assert any(
        i["pwl_id"] == CREEK and i["pollutant"] == "phosphorus" and i["counts_for_condition_a"]
        for i in d["impaired_waters"]
    )
    assert d["swppp_items"]["post_construction_required"] is True


def test_02_commercial_to_pcb_river_law_reading(demo):
    d = ev(demo, "b", disturbed_acres=2, project_type="commercial")
    assert vals(d) == (True, False, True, False, True, True)
    assert recv_ids(d) == {RIVER}
    assert d["pollutant_of_concern"]["reading"] == "law"


def test_03_commercial_to_pcb_river_narrowed(demo):
    d = ev(demo, "b", disturbed_acres=2, project_type="commercial", profile=narrowed())
    assert vals(d) == (True, False, False, False, True, True)
    assert d["pollutant_of_concern"]["reading"] == "list"
    pcb = [i for i in d["impaired_waters"] if i["pollutant"] == "PCBs"]
    assert pcb and not pcb[0]["counts_for_condition_a"]


def test_04_same_two_acres_single_family(demo):
    d = ev(demo, "b", disturbed_acres=2, project_type="single_family")
    assert vals(d) == (True, False, True, False, False, True)


def test_05_single_family_narrowed_needs_no_post_construction(demo):
    d = ev(demo, "b", disturbed_acres=2, project_type="single_family", profile=narrowed())
    assert vals(d) == (True, False, False, False, False, True)
    assert d["swppp_items"]["post_construction_required"] is False
    assert len(d["swppp_items"]["basic"]) == 17 and not d["swppp_items"]["post_construction"]


def test_06_half_acre_in_three_acre_plan(demo):
    acres = min(0.5, round(_acres(demo, "h") * 0.9, 2))
    d = ev(demo, "h", disturbed_acres=acres, common_plan_acres=3, project_type="residential")
    assert d["land_development_activity"]["value"] is True
    assert d["conditions"]["C"]["value"] is True and d["conditions"]["B"]["value"] is False
    assert d["inputs"]["effective_acres"] == 3


def test_07_half_acre_alone_is_not_lda(demo):
    acres = min(0.5, round(_acres(demo, "h") * 0.9, 2))
    d = ev(demo, "h", disturbed_acres=acres, project_type="residential")
    assert vals(d) == (False, False, False, False, False, False)


def test_08_construction_at_agricultural_property(demo):
    d = ev(demo, "i", disturbed_acres=2)  # type guessed from property class 120
    assert d["project_type"]["value"] == "agricultural"
    assert d["project_type"]["source"].startswith("guessed")
    assert d["land_development_activity"]["value"] is True
    assert d["swppp_required"]["value"] is True and d["conditions"]["C"]["value"] is False


def test_09_construction_at_a_farm_is_not_exempt_as_agricultural_activity(demo):
    # the law's agricultural activity "shall not include ... the construction of new
    # structures associated with agricultural activities": with the project type
    # agricultural (construction at a farm) the exemption is refused, the SWPPP required
    d = ev(
        demo,
        "i",
        disturbed_acres=10,
        project_type="agricultural",
        exemption="agricultural_activity",
    )
    assert d["exemption"]["exempt"] is False and d["swppp_required"]["value"] is True
    assert d["conditions"]["B"]["value"] is True  # 10 acres
    assert d["conditions"]["C"]["value"] is False  # agricultural: excluded from C
    assert "barn" in " ".join(d["exemption"]["reasons"])


def test_10_site_split_between_two_outfalls(demo):
    d = ev(
        demo,
        "e",
        disturbed_acres=round(_acres(demo, "e") * 0.9, 2),
        common_plan_acres=2,
        project_type="residential",
    )
    outs = {o["outfall_id"]: o for o in d["drainage"]["outfalls"]}
    assert len(outs) >= 2
    assert {CREEK, RIVER} <= {o["pwl_id"] for o in outs.values()}
    assert d["conditions"]["A"]["value"] is True


def test_11_site_in_lake_tmdl_watershed(demo):
    d = ev(
        demo,
        "f",
        disturbed_acres=round(_acres(demo, "f") * 0.9, 2),
        common_plan_acres=1.5,
        project_type="single_family",
    )
    assert d["conditions"]["A"]["value"] is True
    tm = [t for t in d["tmdl_watersheds"] if t["tmdl_id"] == TMDL]
    assert tm and tm[0]["counts_for_condition_a"] and tm[0]["stormwater_source"]
    # the lake's own listing is 4a: reported, counts through the TMDL only
    lake = [i for i in d["impaired_waters"] if i["pwl_id"] == LAKE]
    assert all(not i["counts_for_condition_a"] for i in lake)


def test_12_internally_drained(demo):
    d = ev(
        demo,
        "c",
        disturbed_acres=round(_acres(demo, "c") * 0.9, 2),
        common_plan_acres=1.5,
        project_type="single_family",
    )
    assert d["conditions"]["A"]["value"] is False
    assert d["conditions"]["A"]["method"] == "internally_drained"
    assert d["drainage"]["internal_fraction"] == pytest.approx(1.0)


def test_13_site_partly_off_dem(demo):
    d = ev(
        demo,
        "j",
        disturbed_acres=round(_acres(demo, "j") * 0.9, 2),
        common_plan_acres=1.5,
        project_type="single_family",
    )
    unk = d["drainage"]["unknown_fraction"]
    assert 0.2 < unk < 0.8
    a = d["conditions"]["A"]
    known_hits = [i for i in d["impaired_waters"] if i["counts_for_condition_a"]]
    # undetermined where it matters: only a listed water reached by the known part decides A
    assert a["value"] is (True if known_hits or d["tmdl_watersheds"] else None)
    if a["value"] is None:
        assert a["method"] == "unknown_drainage"
        assert d["swppp_items"]["post_construction_required"] is None


def test_13b_site_wholly_off_dem_is_undetermined(demo):
    # the part of lot j that lies west of the DEM: its drainage is unknown, so Condition A is
    # undetermined (null), while B and C, which do not depend on drainage, are decided
    p = demo["ws"].parcels
    g = p.loc[p["parcel_id"] == demo["ids"]["j"]].geometry.iloc[0]
    x0 = demo["ws"].dem.bounds[0]
    off = g.intersection(shapely.box(g.bounds[0] - 1, g.bounds[1] - 1, x0 - 1, g.bounds[3] + 1))
    site = gpd.GeoSeries([off], crs=p.crs)
    d = ev(
        demo, "j", site=site, disturbed_acres=0.1, common_plan_acres=2, project_type="commercial"
    )
    assert d["drainage"]["unknown_fraction"] == pytest.approx(1.0)
    assert d["conditions"]["A"]["value"] is None
    assert d["conditions"]["B"]["value"] is False and d["conditions"]["C"]["value"] is True
    assert d["swppp_items"]["post_construction_required"] is True  # C decides it


def test_14_polygon_site_equals_parcel_site(demo):
    p = demo["ws"].parcels
    geom = p.loc[p["parcel_id"] == demo["ids"]["b"]].geometry
    poly = gpd.GeoSeries(geom.to_numpy(), crs=p.crs).to_crs(4326)
    d = ev(demo, "b", site=poly, disturbed_acres=2, project_type="commercial")
    assert d["site"]["kind"] == "polygon"
    assert vals(d) == (True, False, True, False, True, True)
    assert recv_ids(d) == {RIVER}


def test_15_several_parcels(demo):
    d = ev(
        demo,
        "a",
        site=[demo["ids"]["a"], demo["ids"]["b"]],
        disturbed_acres=7,
        project_type="commercial",
    )
    assert {CREEK, RIVER} <= recv_ids(d)
    assert vals(d) == (True, False, True, True, False, True)


def test_16_routine_maintenance_exempt_under_five_acres(demo):
    d = ev(demo, "b", disturbed_acres=2, project_type="road", exemption="routine_maintenance")
    assert d["exemption"]["exempt"] is True and d["swppp_required"]["value"] is False


def test_17_kiryas_joel_profile_cites_its_law(demo):
    d = ev(demo, "b", disturbed_acres=2, project_type="commercial", profile="kiryas_joel")
    assert vals(d) == (True, False, True, False, True, True)
    assert d["officer_title"] == "Stormwater Management Administrator"
    assert any("Kiryas Joel" in c["law"] for c in d["citations"] if c["rule"] == "condition_a")


def test_18_document_is_complete(demo):
    d = ev(demo, "a", disturbed_acres=6, project_type="residential")
    assert d["schema"] == "ms4map.determination" and d["schema_version"] == "1.2"
    assert "application" in d and d["application"] is None  # 1.2: none given here
    assert d["provenance"]["workspace_inputs"] and d["provenance"]["inputs_sha256"]
    item13 = d["swppp_items"]["basic"][12]
    assert "Alder Kill" in item13["value"]
    assert all(c["quote"] for c in d["citations"])


# --------------------------------------------------------------------------- batch screening
def test_19_batch_agrees_with_single_sites(demo):
    scr = demo["screening"]
    ids = demo["ids"]
    assert scr.loc[ids["a"], "condition_a_text"] == "yes"
    assert scr.loc[ids["b"], "condition_a_text"] == "yes"
    assert scr.loc[ids["c"], "method"] == "internally_drained"
    assert scr.loc[ids["f"], "condition_a_text"] == "yes"
    for key in ("a", "b", "c", "e", "f", "h", "i", "j"):
        d = ev(
            demo,
            key,
            disturbed_acres=round(_acres(demo, key) * 0.5, 2),
            common_plan_acres=20,
            project_type="commercial",
        )
        batch = scr.loc[ids[key], "condition_a"]
        assert (None if pd.isna(batch) else bool(batch)) == d["conditions"]["A"]["value"], key


def test_20_batch_covers_every_parcel(demo):
    scr = demo["screening"]
    assert len(scr) == len(demo["ws"].parcels)
    assert scr["reason"].notna().all()
    assert set(scr["condition_a_text"]) <= {"yes", "no", "undetermined"}


# --------------------------------------------------------------------------- septic
def test_21_septic_upstream_of_creek(demo):
    r = demo["septic"].loc[demo["ids"]["g"]]
    assert r["flagged"] and r["special_condition"] and r["septic_pollutant"]
    assert r["pwl_id"] == CREEK
    assert r["priority"] >= 3


def test_22_recorded_failure_is_violation(demo):
    r = demo["septic"].loc[demo["ids"]["g"]]
    assert r["violation"] and r["failure_codes"] == "B" and r["priority_label"] == "violation"


def test_23_sewered_parcel_not_flagged(demo):
    assert demo["ids"]["h"] not in demo["septic"].index


@pytest.mark.parametrize("key", ["d", "d2"])
def test_24_septic_direct_to_river_not_flagged(demo, key):
    r = demo["septic"].loc[demo["ids"][key]]
    assert not r["flagged"] and r["method"] == "direct_to_water"
    assert "without entering the MS4" in r["reason"]


def test_25_failure_off_the_ms4_is_not_a_violation(demo):
    r = demo["septic"].loc[demo["ids"]["d_fail"]]
    assert not r["violation"] and r["failure_codes"] == "A"


def test_26_storm_connection_recorded(demo):
    r = demo["septic"].loc[demo["ids"]["storm_conn"]]
    assert r["failure_codes"] == "C"
    assert r["violation"] == bool(r["flagged"])


def test_27_mailing_list(demo):
    from ms4map.rules.septic import mailing_list

    ml = mailing_list(demo["septic"].reset_index())
    assert demo["ids"]["g"] in set(ml["parcel_id"])
    assert demo["ids"]["d"] not in set(ml["parcel_id"])
    assert ml.iloc[0]["priority_label"] == "violation"


# --------------------------------------------------------------------------- bad input
def test_28_unknown_parcel(demo):
    with pytest.raises(DataError, match="Unknown parcel id"):
        ev(demo, "a", site="NO-SUCH-PARCEL", disturbed_acres=2, project_type="other")


def test_29_polygon_outside_or_without_crs(demo):
    far = gpd.GeoSeries([shapely.box(0, 0, 100, 100)], crs="EPSG:26918")
    with pytest.raises(DataError, match="outside the town"):
        ev(demo, "a", site=far, disturbed_acres=0.1)
    with pytest.raises(DataError, match="no CRS"):
        ev(demo, "a", site=shapely.box(0, 0, 100, 100), disturbed_acres=0.1)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(disturbed_acres=-2), "negative"),
        (dict(disturbed_acres=5e6), "absurd"),
        (dict(disturbed_acres=2, project_type="spaceport"), "Unknown project type"),
        (dict(disturbed_acres=2, exemption="vibes"), "Unknown exemption code"),
    ],
)
def test_30_bad_options(demo, kw, match):
    with pytest.raises(UsageError, match=match):
        ev(demo, "b", **kw)
