"""The site report of a determination with an ambiguous network path says so and lists
the candidate outfalls."""

from __future__ import annotations

from test_rules_ambiguous import ambiguous_rows, site_det
from test_rules_conditions_fixtures import town_waters

from ms4map.outputs.report import render_html


def test_report_says_ambiguous_and_lists_the_candidates():
    det = site_det(ambiguous_rows("OF-C", "OF-M"), town_waters())
    html = render_html(det, include_map=False)
    assert (
        "Outfalls: ambiguous, OF-C or OF-M (100%): the evidence cannot tell which takes the "
        "flow, outfall undetermined" in html
    )
    assert "the network cannot tell whether flow reaches OF-C or OF-M" in html
    assert "survey the pipes where the flow divides" in html
    out = det.to_dict()["drainage"]
    assert out["outfalls"] == [
        {
            "outfall_id": None,
            "fraction": 1.0,
            "receiving_water": None,
            "pwl_id": None,
            "candidates": ["OF-C", "OF-M"],
        }
    ]
    assert out["paths"][0]["outfall_candidates"] == "OF-C;OF-M"


def test_report_of_one_water_for_every_candidate_names_it():
    det = site_det(ambiguous_rows("OF-C", "OF-C3"), town_waters())
    html = render_html(det, include_map=False)
    assert "ambiguous, OF-C or OF-C3 (100%)" in html
    assert "every candidate to Clear Brook (1302-0003)" in html
    assert "holds for every candidate outfall" in html
