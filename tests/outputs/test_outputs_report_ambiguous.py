"""The site report of a determination with an ambiguous network path says so and lists
the candidate outfalls."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from ambiguous_builders import Y_CONVEYANCES, Y_STRUCTURES, y_network
from network_builders import conveyances, structures, ws_of
from shapely.geometry import Point, box
from test_rules_ambiguous import ambiguous_rows, site_det
from test_rules_conditions_fixtures import town_waters

from ms4map.outputs.report import render_html, site_map_layers, site_map_png
from ms4map.rules.conditions import SiteInfo
from ms4map.rules.conditions.document import SiteEvidence


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


def test_site_map_draws_the_ambiguous_path_uncertain_and_marks_the_candidates():
    net = y_network()
    ws = ws_of(structures(Y_STRUCTURES), conveyances(Y_CONVEYANCES))
    rows = pd.DataFrame(
        [
            {
                "target_kind": "inlet",
                "target_id": "A",
                "fraction": 1.0,
                "outfall_id": None,
                "receiving_water": None,
                "pwl_id": None,
                "method": "d8_catchment",
                "reason": "hand-made",
                "outfall_candidates": "O1;O2",
                "candidate_waters": "1302-0001;1302-0002",
            }
        ]
    )
    det = site_det(ambiguous_rows("OF-C", "OF-M"), town_waters())
    det.evidence = SiteEvidence(
        site=SiteInfo(geometry=box(-30, -20, -10, 20), label="P1"),
        rows=rows,
        result=SimpleNamespace(network=net, workspace=ws),
        workspace=ws,
        waters=town_waters(),
        outfall_points={"O1": Point(200, 50), "O2": Point(200, -50)},
    )
    layers = site_map_layers(det)
    assert layers["paths"] == [] and len(layers["uncertain_paths"]) == 1
    assert layers["outfall_ids"] == [] and layers["candidate_ids"] == ["O1?", "O2?"]
    assert site_map_png(det)[:8] == b"\x89PNG\r\n\x1a\n"
