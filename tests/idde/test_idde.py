"""IDDE: flow-type chart, candidate sources, sampling plan, notice of violation.

The sampling plan runs on a small binary storm tree built here (15 structures above a
headwall outfall); the notice runs on the bundled demo town's septic-failure parcel
(scenario ``g`` of :data:`ms4map.demo.SCENARIO_PARCELS`).
"""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import geopandas as gpd
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from pyproj import CRS
from shapely.geometry import LineString, Point, box

from ms4map import idde
from ms4map.core.errors import DataError, UsageError
from ms4map.datasets.alder_falls import SCENARIO_PARCELS
from ms4map.io.workspace import Workspace
from ms4map.network import build_network
from ms4map.rules.profiles import load_profile

UTM = CRS.from_epsg(26918)
FAILED_SEPTIC = SCENARIO_PARCELS["g"]["parcel_id"]


# --------------------------------------------------------------------------------------
# flow type
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"detergents_mg_l": 0.5, "ammonia_mg_l": 3.0, "potassium_mg_l": 1.5}, "sewage"),
        ({"detergents_mg_l": 0.5, "ammonia_mg_l": 0.5, "potassium_mg_l": 4.0}, "wash_water"),
        ({"detergents_mg_l": 0.5, "ammonia_mg_l": 1.0, "potassium_mg_l": 1.0}, "wash_water"),
        ({"detergents_mg_l": 0.5, "ammonia_mg_l": 1.0, "potassium_mg_l": 0.0}, "sewage"),
        ({"detergents_mg_l": 0.5, "ammonia_mg_l": 1.0}, "sewage_or_wash_water"),
        ({"detergents_mg_l": 0.1, "fluoride_mg_l": 0.8}, "tap_water"),
        ({"detergents_mg_l": 0.25, "fluoride_mg_l": 0.1}, "natural_water"),
        ({"detergents_mg_l": 0.0}, "tap_or_natural_water"),
        ({"fluoride_mg_l": 0.8}, "undetermined"),
        ({"detergents_mg_l": float("nan"), "fluoride_mg_l": 0.8}, "undetermined"),
    ],
)
def test_flow_type_chart(kwargs: dict, expected: str) -> None:
    kind, reason = idde.flow_type(**kwargs)
    assert kind == expected
    assert kind in idde.FLOW_TYPES
    assert "CWP IDDE manual" in reason or "not measured" in reason


def test_flow_type_thresholds_are_named_and_reasons_quote_them() -> None:
    assert idde.DETERGENTS_MG_L == 0.25 and idde.FLUORIDE_MG_L == 0.25
    assert idde.AMMONIA_POTASSIUM_RATIO == 1.0
    assert "verified against the manual" in " ".join(idde.flow_type.__doc__.split())
    _, reason = idde.flow_type(0.6, 2.0, 1.0)
    assert "0.6 mg/L > 0.25" in reason and "2/1 = 2.00 > 1" in reason


def test_flow_type_refuses_negative_and_text() -> None:
    with pytest.raises(UsageError, match="ammonia_mg_l .* cannot be negative"):
        idde.flow_type(0.5, -1.0, 1.0)
    with pytest.raises(UsageError, match="fluoride_mg_l = 'high'"):
        idde.flow_type(0.1, fluoride_mg_l="high")


# --------------------------------------------------------------------------------------
# a small storm tree: OUT <- M0 <- (M1, M2) <- 4 manholes <- 8 catch basins
# --------------------------------------------------------------------------------------
def _tree_layers() -> dict:
    pts = {"OUT": (0.0, 0.0)}
    kinds = {"OUT": "headwall"}
    parent: dict[str, str] = {}
    levels = [["M0"], ["M1", "M2"], ["M3", "M4", "M5", "M6"], [f"CB{k}" for k in range(8)]]
    for depth, names in enumerate(levels):
        for k, name in enumerate(names):
            pts[name] = ((k - (len(names) - 1) / 2) * 400.0 / (depth + 1), 100.0 * (depth + 1))
            kinds[name] = "catch_basin" if name.startswith("CB") else "manhole"
            parent[name] = "OUT" if depth == 0 else levels[depth - 1][k // 2]
    st = gpd.GeoDataFrame(
        {
            "struct_id": list(pts),
            "kind": [kinds[s] for s in pts],
            "rim_elev": np.nan,
            "invert_elev": np.nan,
        },
        geometry=[Point(*pts[s]) for s in pts],
        crs=UTM,
    )
    cv = gpd.GeoDataFrame(
        {
            "conv_id": [f"P-{c}" for c in parent],
            "kind": "pipe",
            "from_id": list(parent),
            "to_id": list(parent.values()),
            "us_invert": np.nan,
            "ds_invert": np.nan,
            "diameter_in": 12.0,
            "flow_dir": None,
        },
        geometry=[LineString([pts[c], pts[p]]) for c, p in parent.items()],
        crs=UTM,
    )
    of = gpd.GeoDataFrame(
        {
            "outfall_id": ["OF-1"],
            "receiving_water": ["Test Creek"],
            "pwl_id": ["1101-0001"],
            "status": ["suspect"],
        },
        geometry=[Point(0.0, 0.0)],
        crs=UTM,
    )
    # one 20 m lot beside each catch basin, plus a commercial lot split over CB0 and CB1
    lots = []
    for k in range(8):
        x, y = pts[f"CB{k}"]
        lots.append(
            {
                "parcel_id": f"L{k}",
                "address": f"{k} Tree St",
                "owner": f"Owner {k}",
                "owner_address": f"{k} Tree St, Town, NY",
                "prop_class": "210",
                "acres": 1.0,
                "sewer": "septic" if k in (2, 5) else "public",
                "septic_failure": "backup" if k == 5 else None,
                "geometry": box(x - 10, y + 5, x + 10, y + 25),
            }
        )
    lots.append(
        {
            "parcel_id": "SHOP",
            "address": "1 Market St",
            "owner": "Shop LLC",
            "owner_address": "PO Box 1",
            "prop_class": "452",
            "acres": 4.0,
            "sewer": "public",
            "septic_failure": None,
            "geometry": box(-300, 500, -200, 520),
        }
    )
    lots.append({**lots[0], "parcel_id": "WORKS", "prop_class": "710", "acres": 1.0})
    parcels = gpd.GeoDataFrame(lots, geometry="geometry", crs=UTM)
    return {"structures": st, "conveyances": cv, "outfalls": of, "parcels": parcels}


@pytest.fixture(scope="module")
def binary_tree():
    layers = _tree_layers()
    ws = Workspace(path=None, crs=UTM, layers=layers, source_crs=UTM)
    net = build_network(ws)
    rows = [(f"L{k}", "inlet", f"CB{k}", 1.0) for k in range(8)]
    rows += [("SHOP", "inlet", "CB0", 0.75), ("SHOP", "inlet", "CB1", 0.25)]
    rows += [("WORKS", "conveyance", "P-M6", 1.0)]  # enters the pipe M6 -> M2
    drainage = pd.DataFrame(rows, columns=["parcel_id", "target_kind", "target_id", "fraction"])
    drainage["outfall_id"] = "OF-1"
    drainage["receiving_water"] = "Test Creek"
    drainage["pwl_id"] = "1101-0001"
    drainage["method"] = "test"
    drainage["reason"] = "test"
    result = SimpleNamespace(network=net, drainage=drainage, workspace=ws, sewersheds=None)
    cv = layers["conveyances"]
    graph = nx.DiGraph(list(zip(cv["from_id"], cv["to_id"], strict=True)))
    return result, graph


def test_tree_fixture_is_a_tree_into_the_outfall(binary_tree) -> None:
    result, graph = binary_tree
    assert len(result.network.outfalls) == 1
    assert set(nx.ancestors(graph, "OUT")) == set(graph.nodes) - {"OUT"}
    assert graph.number_of_nodes() == 16


# --------------------------------------------------------------------------------------
# candidate sources
# --------------------------------------------------------------------------------------
def test_candidates_ordered_by_rule_with_share_draining_here(binary_tree) -> None:
    result, _ = binary_tree
    cand = idde.candidate_sources(result, "OF-1", septic=pd.DataFrame())
    assert cand["parcel_id"].tolist() == ["L5", "WORKS", "SHOP", "L2"]
    assert cand["method"].tolist() == [
        "septic_failure",
        "industrial_class",
        "commercial_class",
        "septic_parcel",
    ]
    assert cand["priority"].is_monotonic_increasing
    assert "recorded septic failure backup" in cand.loc[0, "reason"]
    assert "condition A" in cand.loc[0, "reason"]  # 174-6 A: backup of sewage
    assert "tributary to outfall OF-1" in cand.loc[3, "reason"]
    assert set(cand["outfall_id"]) == {"OF-1"}
    shop = cand.set_index("parcel_id").loc["SHOP"]
    assert shop["fraction"] == pytest.approx(1.0)  # 0.75 + 0.25 over two inlets
    assert "100% of the parcel drains to OF-1" in shop["reason"]


def test_candidates_septic_flags_rank_second_and_maps_reexport(binary_tree) -> None:
    from ms4map.outputs import maps

    result, _ = binary_tree
    septic = pd.DataFrame({"parcel_id": ["L2"], "violation": [False], "special_condition": [True]})
    cand = idde.candidate_sources(result, "OF-1", septic=septic)
    row = cand.set_index("parcel_id").loc["L2"]
    assert row["priority"] == 2 and row["method"] == "septic_flag"
    assert "special condition" in row["reason"]
    area = maps.outfall_area(result.workspace, result, "OF-1")
    old = idde.candidates_for_area(area, septic=septic)
    pd.testing.assert_frame_equal(old, cand)


def test_candidates_unknown_outfall(binary_tree) -> None:
    result, _ = binary_tree
    with pytest.raises(DataError, match="Outfall 'OF-9' is not in the outfalls layer.*OF-1"):
        idde.candidate_sources(result, "OF-9", septic=pd.DataFrame())


# --------------------------------------------------------------------------------------
# sampling plan
# --------------------------------------------------------------------------------------
def _consistent(graph: nx.DiGraph, observed: dict[str, bool]) -> set[str]:
    """Structures that could be the source given sample results (True = flow found)."""
    out = set()
    for t in set(graph.nodes) - {"OUT"}:
        if all((t == x or x in nx.descendants(graph, t)) == hit for x, hit in observed.items()):
            out.add(t)
    return out


def test_sampling_plan_bisects_and_isolates_every_source(binary_tree) -> None:
    result, graph = binary_tree
    plan = idde.sampling_plan(result, "OF-1", max_samples=4, weight="structures")
    assert list(plan.columns) == list(idde.PLAN_COLUMNS)
    assert plan.loc[0, "struct_id"] in ("M1", "M2")  # 7 of the 16 structures above it
    assert plan.loc[0, "upstream_structures"] == 7 and plan.loc[0, "suspect_structures"] == 16
    # every sample splits what is still suspect as evenly as any single structure can
    suspect_of = {1: (set(graph.nodes), {"OUT"})}  # order -> (suspect, already sampled)
    for r in plan.itertuples():
        if r.order > 1:
            parent = plan.set_index("order").loc[int(r.after), "struct_id"]
            susp, done = suspect_of[int(r.after)]
            above = (nx.ancestors(graph, parent) | {parent}) & susp
            suspect_of[r.order] = (
                above if r.if_result == "flow" else susp - above,
                done | {parent},
            )
        susp, done = suspect_of[r.order]
        assert r.suspect_structures == len(susp)

        def split(x, susp=susp):
            up = len((nx.ancestors(graph, x) | {x}) & susp)
            return max(up, len(susp) - up)

        assert r.upstream_structures == len(
            (nx.ancestors(graph, r.struct_id) | {r.struct_id}) & susp
        )
        assert split(r.struct_id) == min(split(x) for x in susp - done)
    assert plan.loc[0, "upstream_share"] <= 0.5
    assert plan["sample"].max() <= 4 and plan["struct_id"].ne("OUT").all()
    # walk the decision tree for every possible source: it ends on at most 2 structures
    rows = plan.set_index("order")
    for source in set(graph.nodes) - {"OUT"}:
        observed: dict[str, bool] = {}
        order = 1
        while True:
            x = rows.loc[order, "struct_id"]
            hit = source == x or x in nx.descendants(graph, source)
            observed[x] = hit
            nxt = plan[
                (plan["after"] == order) & (plan["if_result"] == ("flow" if hit else "clean"))
            ]
            if not len(nxt):
                break
            order = int(nxt["order"].iloc[0])
        left = _consistent(graph, observed)
        assert source in left
        assert len(left) <= 2, (source, observed, left)
        assert len(observed) <= 4


def test_sampling_plan_by_area_goes_to_the_big_parcels(binary_tree) -> None:
    result, _ = binary_tree
    plan = idde.sampling_plan(result, "OF-1", max_samples=2)
    first = plan.iloc[0]
    assert first["method"] == "bisection_area"
    # acres: 1 per lot, SHOP 3 at CB0 + 1 at CB1, WORKS 1 at M2 (the end of pipe P-M6):
    # M3 (above CB0, CB1) holds 2 + 4 = 6 of 13 acres, the best split (M1: 8, M2: 5).
    assert first["struct_id"] == "M3"
    assert first["upstream_acres"] == pytest.approx(6.0)
    assert first["upstream_share"] == pytest.approx(6 / 13, abs=1e-3)
    assert first["upstream_parcels"] == 3 and "contributing acres" in first["reason"]
    assert len(plan) <= 3


def test_sampling_plan_candidates_and_fallback(binary_tree) -> None:
    result, _ = binary_tree
    none = pd.DataFrame({"parcel_id": []})
    plan = idde.sampling_plan(result, "OF-1", max_samples=1, weight="candidates", candidates=none)
    assert plan.loc[0, "method"].startswith("bisection_structures (no candidates")
    plan = idde.sampling_plan(result, "OF-1", max_samples=1, weight="candidates")
    assert plan.loc[0, "method"] == "bisection_candidates"
    assert plan.loc[0, "upstream_candidates"] >= 1


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"weight": "people"}, UsageError, r"select from \['area', 'candidates', 'structures'\]"),
        ({"max_samples": 0}, UsageError, "max_samples = 0"),
    ],
)
def test_sampling_plan_bad_options(binary_tree, kwargs: dict, err: type, match: str) -> None:
    result, _ = binary_tree
    with pytest.raises(err, match=match):
        idde.sampling_plan(result, "OF-1", **kwargs)


# --------------------------------------------------------------------------------------
# notice of violation (demo town)
# --------------------------------------------------------------------------------------
def test_notice_for_the_demo_septic_failure(demo_result) -> None:
    ws, result = demo_result
    parcel = ws.layers["parcels"].set_index("parcel_id").loc[FAILED_SEPTIC]
    d = result.drainage[result.drainage["parcel_id"] == FAILED_SEPTIC]
    outfall = d.sort_values("fraction")["outfall_id"].iloc[-1]
    water = d.sort_values("fraction")["receiving_water"].iloc[-1]
    prof = load_profile("stillwater")
    n = idde.notice_of_violation(
        result,
        FAILED_SEPTIC,
        violation="failing_septic",
        workspace=ws,
        issued=dt.date(2025, 6, 2),
        deadline="2025-06-30",
    )
    doc = n.to_dict()
    assert doc["owner"] == parcel["owner"] and doc["owner_address"] == parcel["owner_address"]
    assert doc["address"] == parcel["address"]
    assert doc["drainage"][0]["outfall_id"] == outfall
    assert f"outfall {outfall}" in n.drainage_text and water in n.drainage_text
    assert "surface_discharge" in n.finding and "condition B" in n.finding
    assert doc["remedy_period"] == prof.enforcement["remedy_period"]
    assert doc["appeal"]["appeal_days"] == prof.enforcement["appeal_days"] == 15
    assert f"within {prof.enforcement['appeal_days']} days" in n.appeal_text
    assert doc["officer_title"] == prof.officer_title
    assert doc["issued"] == "2025-06-02" and doc["deadline"] == "2025-06-30"
    rules = [c["rule"] for c in doc["citations"]]
    assert rules[0] == "septic_failing" and {"appeal", "penalties"} <= set(rules)
    failing = prof.cite("septic_failing")[0]
    html = n.to_html()
    for text in (
        parcel["owner"],
        parcel["owner_address"],
        parcel["address"],
        FAILED_SEPTIC,
        outfall,
        water,
        "15 days",
        "$350",
        "June 30, 2025",
        prof.officer_title,
        "§ 174-6",
    ):
        assert text.replace("&", "&amp;") in html, text
    assert failing.quote.replace("'", "&#x27;") in html
    assert html.count("<h1>") == 1 and "@page" in html
    assert not n.warnings  # owner, address, drainage, deadline all known


def test_notice_deadline_from_the_kingsbury_remedy_period(demo_result) -> None:
    ws, result = demo_result

    def served(issued: str) -> idde.Notice:
        return idde.notice_of_violation(
            result,
            FAILED_SEPTIC,
            violation="illicit_discharge",
            workspace=ws,
            profile="kingsbury",
            issued=issued,
        )

    n = served("2025-06-02")
    assert n.remedy_period == "48 hours"
    assert n.deadline == dt.date(2025, 6, 4)
    assert "Town Board of the Town of Kingsbury" in n.appeal_text
    assert any("no citation for rule(s) ['illicit_discharge']" in w for w in n.warnings)
    # served Friday 2025-06-06: 48 hours end on Sunday, so the notice gives Monday
    # 2025-06-09 (General Construction Law section 25-a), the date the records keep
    friday = served("2025-06-06")
    assert friday.deadline == dt.date(2025, 6, 9)
    # and the appeal's 15 days end on Saturday 2025-06-21: by Monday June 23
    assert "within 15 days of its issuance, that is by Monday, June 23, 2025." in (
        friday.appeal_text
    )
    assert "that is by Tuesday, June 17, 2025." in n.appeal_text  # 2025-06-02 + 15


def test_notice_without_a_stated_period_leaves_the_deadline_blank(demo_result) -> None:
    ws, result = demo_result
    n = idde.notice_of_violation(
        None, FAILED_SEPTIC, violation="failing_septic", workspace=ws, profile="kiryas_joel"
    )
    assert n.deadline is None and n.issued == dt.date.today()
    assert n.officer_title == "Stormwater Management Administrator"
    assert "states no appeal period" in n.appeal_text
    assert "Each day's continued violation" in n.penalty_text
    assert any("set the remedy deadline of this notice" in w for w in n.warnings)
    assert any("drainage" in w for w in n.warnings)  # no result given
    assert "______" in n.to_html()


@pytest.mark.parametrize(
    ("parcel", "violation", "kwargs", "err", "match"),
    [
        ("999-9-9", "failing_septic", {}, DataError, "Parcel '999-9-9' is not in the parcels"),
        (
            FAILED_SEPTIC,
            "dumping",
            {},
            UsageError,
            r"Unknown violation 'dumping': select from \['failing_septic', "
            r"'illicit_connection', 'illicit_discharge'\]",
        ),
        (FAILED_SEPTIC, "failing_septic", {"issued": "2025/06/02"}, UsageError, "YYYY-MM-DD"),
        (FAILED_SEPTIC, "failing_septic", {"profile": "gotham"}, UsageError, "stillwater"),
    ],
)
def test_notice_bad_input(demo_result, *, parcel, violation, kwargs, err, match) -> None:
    ws, _ = demo_result
    with pytest.raises(err, match=match):
        idde.notice_of_violation(None, parcel, violation=violation, workspace=ws, **kwargs)


def test_sampling_plan_on_the_demo_outfall(demo_result) -> None:
    ws, result = demo_result
    d = result.drainage
    outfall = d[d["parcel_id"] == FAILED_SEPTIC]["outfall_id"].iloc[0]
    plan = idde.sampling_plan(result, outfall, max_samples=3)
    assert 1 <= len(plan) <= 7
    first = plan.iloc[0]
    assert 0 < first["upstream_share"] < 1
    assert first["upstream_structures"] < first["suspect_structures"]


# --------------------------------------------------------------------------------------
# app: the investigation page drafts a notice
# --------------------------------------------------------------------------------------
def test_investigation_page_drafts_a_notice(tmp_path, monkeypatch, demo_result) -> None:
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("MS4MAP_WORKSPACE", raising=False)
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    _, result = demo_result
    d = result.drainage
    outfall = d[d["parcel_id"] == FAILED_SEPTIC].sort_values("fraction")["outfall_id"].iloc[-1]
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('investigation')", default_timeout=120
    ).run()
    at.selectbox(key="inv_outfall").set_value(outfall).run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="inv_nov_parcel").set_value(FAILED_SEPTIC).run()
    assert at.selectbox(key="inv_nov_violation").value == "failing_septic"
    at.selectbox(key="inv_nov_profile").set_value("kingsbury").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    keys = [b.proto.id for b in at.get("download_button")]
    assert any("inv_nov_download" in k for k in keys)


def test_a_notice_citing_another_towns_law_warns_the_officer(demo_result) -> None:
    """Kingsbury's profile borrows Stillwater's model wording for a failing septic system
    (its own text is not at hand): its notice cited Stillwater's section 174-6 with no
    warning; the officer is now told to check the town's own section. Stillwater's own
    notice has no such warning."""
    ws, result = demo_result
    kw = dict(violation="failing_septic", workspace=ws, issued=dt.date(2025, 6, 2))
    k = idde.notice_of_violation(
        result, FAILED_SEPTIC, profile="kingsbury", deadline="2025-06-30", **kw
    )
    assert any(
        "Town of Stillwater Code" in w and "not Town of Kingsbury's own law" in w
        for w in k.warnings
    ), k.warnings
    s = idde.notice_of_violation(result, FAILED_SEPTIC, deadline="2025-06-30", **kw)
    assert not any("own law" in w for w in s.warnings)


def test_the_old_form_of_notice_of_violation_still_works_and_warns(demo_result) -> None:
    """``notice_of_violation(parcel_id, *, result=, workspace=)`` (before issue 26) gives
    the notice of the new form ``notice_of_violation(result, parcel_id)``, with a
    DeprecationWarning; the workspace defaults to the result's."""
    ws, result = demo_result
    kw = dict(violation="failing_septic", issued=dt.date(2025, 6, 2), deadline="2025-06-30")
    new = idde.notice_of_violation(result, FAILED_SEPTIC, workspace=ws, **kw)
    with pytest.warns(DeprecationWarning, match=r"notice_of_violation\(result, parcel_id"):
        old = idde.notice_of_violation(FAILED_SEPTIC, result=result, workspace=ws, **kw)
    assert old.to_dict() == new.to_dict()
    with pytest.warns(DeprecationWarning):
        no_result = idde.notice_of_violation(FAILED_SEPTIC, workspace=ws, **kw)
    assert no_result.drainage == [] and "Not determined" in no_result.drainage_text
    if getattr(result, "workspace", None) is not None:
        assert idde.notice_of_violation(result, FAILED_SEPTIC, **kw).to_dict() == new.to_dict()
    by_keyword = idde.notice_of_violation(
        parcel_id=FAILED_SEPTIC, result=result, workspace=ws, **kw
    )
    assert by_keyword.to_dict() == new.to_dict()
    with pytest.raises(TypeError, match="missing the parcel id"):
        idde.notice_of_violation(result, workspace=ws, **kw)
    with pytest.raises(TypeError, match="multiple values"):
        idde.notice_of_violation(result, FAILED_SEPTIC, result=result, workspace=ws, **kw)
    with pytest.raises(TypeError, match="unexpected keyword argument 'parcel'"):
        idde.notice_of_violation(result, FAILED_SEPTIC, parcel="x", workspace=ws, **kw)
