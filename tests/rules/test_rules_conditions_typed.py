"""The typed answers of :mod:`ms4map.rules.conditions` and its calling shapes.

``evaluate_site(result, site, ...)`` takes the workspace from the result and answers as
the old ``evaluate_site(site, workspace=..., result=...)`` does (which now warns);
:class:`Determination` reads its document through typed, read-only properties and
``with_application`` returns a copy; ``screen_parcels`` returns a :class:`Screening`
whose table is ``screen_all``'s frame, and ``screen_all`` keeps its ``attrs``.
"""

from __future__ import annotations

import dataclasses
import warnings

import pandas as pd
import pytest
from test_rules_conditions_fixtures import CLEAR, MILL, row, town_waters

import ms4map.rules.conditions as door
from ms4map.core.errors import UsageError
from ms4map.core.qa import QAReport
from ms4map.outputs.report import site_map_layers
from ms4map.rules.conditions import (
    Condition,
    Determination,
    Inputs,
    Screening,
    SiteInfo,
    determine,
    evaluate_site,
    screen_all,
    screen_parcels,
    validate_inputs,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _timeless(doc: dict) -> dict:
    """The document without the two clock readings (the determination's and the
    workspace's ``created``)."""
    prov = dict(doc["provenance"])
    prov.pop("created")
    wsp = dict(prov.get("workspace_provenance") or {})
    wsp.pop("created", None)
    prov["workspace_provenance"] = wsp
    return {**doc, "provenance": prov}


def _parcel(ws, i: int = 0) -> str:
    return str(ws.parcels["parcel_id"].iloc[i])


# ------------------------------------------------------------------ the calling shapes
def test_new_form_equals_old_form_which_warns(demo_result):
    ws, res = demo_result
    pid = _parcel(ws)
    kw = {"disturbed_acres": 0.2, "common_plan_acres": 2.0, "project_type": "commercial"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = evaluate_site(res, pid, **kw)
    with pytest.warns(DeprecationWarning, match=r"evaluate_site\(result, site"):
        old = evaluate_site(pid, workspace=ws, result=res, **kw)
    with pytest.warns(DeprecationWarning):
        by_keyword = evaluate_site(site=pid, workspace=ws, result=res, **kw)
    assert _timeless(new.to_dict()) == _timeless(old.to_dict())
    assert _timeless(by_keyword.to_dict()) == _timeless(old.to_dict())
    assert new.evidence.rows.equals(old.evidence.rows)
    assert site_map_layers(new).keys() == site_map_layers(old).keys() >= {"site", "paths"}
    assert new.doc["workspace"] == old.doc["workspace"]


def test_new_form_takes_workspace_from_the_result_or_the_keyword(demo_result):
    ws, res = demo_result
    pid = _parcel(ws)
    bare = dataclasses.replace(res, workspace=None)
    with pytest.raises(UsageError, match="evaluate_site needs the workspace"):
        evaluate_site(bare, pid, disturbed_acres=0.2)
    a = evaluate_site(bare, pid, disturbed_acres=0.2, workspace=ws)
    b = evaluate_site(res, pid, disturbed_acres=0.2)
    assert _timeless(a.to_dict()) == _timeless(b.to_dict())


def test_old_form_argument_errors(demo_result):
    ws, res = demo_result
    pid = _parcel(ws)
    with pytest.raises(TypeError, match="'workspace'"):
        evaluate_site(pid, disturbed_acres=0.2, result=res)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        evaluate_site(pid, disturbed_acres=0.2, workspace=ws, colour="red")
    with pytest.raises(TypeError, match="unexpected keyword argument 'result'"):
        evaluate_site(res, pid, disturbed_acres=0.2, result=res)
    with pytest.raises(TypeError, match="'site'"):
        evaluate_site(disturbed_acres=0.2, workspace=ws)


# ------------------------------------------------------------------ the typed answers
def _hand_det() -> Determination:
    rows = [row("inlet", "CB1", 0.7, "OF-M", **MILL), row("inlet", "CB2", 0.3, "OF-C", **CLEAR)]
    return determine(
        rows,
        waters=town_waters(),
        disturbed_acres=2,
        common_plan_acres=3,
        project_type="commercial",
        site=SiteInfo(label="P1", kind="parcels", parcel_ids=["P1"], area_acres=4.0),
    )


def test_determination_typed_views_read_the_document():
    det = _hand_det()
    doc = det.doc
    a = det.condition_a
    assert isinstance(a, Condition)
    assert (a.value, list(a.reasons), a.method) == (
        doc["conditions"]["A"]["value"],
        doc["conditions"]["A"]["reasons"],
        doc["conditions"]["A"]["method"],
    )
    for key, cond in (("B", det.condition_b), ("C", det.condition_c)):
        assert cond == Condition(
            doc["conditions"][key]["value"], tuple(doc["conditions"][key]["reasons"]), None
        )
    assert det.land_development.value is doc["land_development_activity"]["value"]
    assert det.project_type.value == "commercial" and det.project_type.source == "user"
    assert det.exemption.code is None and det.exemption.exempt is False
    assert det.inputs == Inputs(2.0, "commercial", 3.0, None)
    assert det.inputs.effective_acres == doc["inputs"]["effective_acres"] == 3.0
    assert det.site.label == "P1" and det.site.parcel_ids == ["P1"]
    assert det.swppp.required is True and len(det.swppp.basic) == 17
    assert det.swppp.basic[12]["value"] == doc["swppp_items"]["basic"][12]["value"]
    assert [w["pwl_id"] for w in det.waters.impaired] == [
        w["pwl_id"] for w in doc["impaired_waters"]
    ]
    assert len(det.waters.receiving) == len(doc["drainage"]["receiving_waters"])
    assert [c["rule"] for c in det.citations] == [c["rule"] for c in doc["citations"]]
    assert det.provenance["schema_version"] == doc["schema_version"]
    assert det.drainage["ms4_fraction"] == doc["drainage"]["ms4_fraction"]
    assert det.application is None and det.workspace is None


def test_typed_views_are_read_only():
    det = _hand_det()
    with pytest.raises(dataclasses.FrozenInstanceError):
        det.condition_a.value = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        det.provenance["tool"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        det.citations[0]["rule"] = "other"  # type: ignore[index]
    assert det.doc["provenance"]["tool"] == "ms4map"


def test_with_application_returns_a_copy():
    det = _hand_det()
    before = det.to_json()
    filed = det.with_application({"applicant": "  A.  Smith ", "date": "2026-03-15"})
    assert det.to_json() == before and det.application is None
    assert filed.application["applicant"] == "A. Smith"
    assert filed.doc["application"] == {
        "applicant": "A. Smith",
        "project_name": None,
        "application_number": None,
        "date": "2026-03-15",
    }
    assert filed["conditions"] == det["conditions"]
    with pytest.raises(UsageError, match="YYYY-MM-DD"):
        det.with_application({"date": "15/03/2026"})


def test_validate_inputs_returns_inputs():
    inp = validate_inputs(disturbed_acres="2", project_type="Single-Family", exemption="none")
    assert inp == Inputs(disturbed_acres=2.0, project_type="single_family")
    assert inp["disturbed_acres"] == 2.0 and inp["exemption"] is None
    assert list(inp.to_dict()) == [
        "disturbed_acres",
        "project_type",
        "common_plan_acres",
        "exemption",
    ]
    with pytest.raises(KeyError):
        inp["effective_acres"]


# ------------------------------------------------------------------ the screening
def test_screen_parcels_is_screen_all_without_attrs(demo_result):
    ws, res = demo_result
    scr = screen_parcels(res)
    assert isinstance(scr, Screening) and isinstance(scr.qa, QAReport)
    frame = screen_all(res, workspace=ws)
    pd.testing.assert_frame_equal(
        pd.DataFrame(scr.table.drop(columns="geometry")),
        pd.DataFrame(frame.drop(columns="geometry")),
    )
    assert scr.table.geometry.equals(frame.geometry)
    assert list(frame.attrs) == ["qa", "pollutant_reading", "missing_layers"]
    assert frame.attrs["pollutant_reading"] == scr.pollutant_reading == "law"
    assert frame.attrs["missing_layers"] == scr.missing_layers == []
    assert [f.message for f in frame.attrs["qa"].findings] == [f.message for f in scr.qa.findings]
    assert "qa" not in scr.table.attrs


def test_screen_needs_a_workspace(demo_result):
    _ws, res = demo_result
    bare = dataclasses.replace(res, workspace=None)
    with pytest.raises(UsageError, match="screen_all needs the workspace: pass workspace="):
        screen_all(bare)
    with pytest.raises(UsageError, match="screen_parcels needs the workspace"):
        screen_parcels(bare)


# ------------------------------------------------------------------ the doors
def test_doors():
    import ms4map.rules as rules

    assert len(door.__all__) <= 20
    assert all(hasattr(door, name) for name in door.__all__)
    assert len(rules.__all__) <= 20
    assert rules.evaluate_site is evaluate_site and rules.Screening is Screening
    for name in ("flag_septic", "mailing_list", "load_profile", "Profile", "Waters"):
        assert hasattr(rules, name), name
