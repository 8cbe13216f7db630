"""Causes of impairment as NYSDEC and EPA lists spell them, read as the pollutants
docs/rules.md names (``normalize_pollutant``), and what that changes for a site."""

from __future__ import annotations

import pandas as pd
import pytest
from test_rules_conditions_fixtures import CRS, row

from ms4map.rules.conditions import determine
from ms4map.rules.profiles import load_profile
from ms4map.rules.waters import Waters, normalize_pollutant


@pytest.mark.parametrize(
    ("cause", "pollutant"),
    [
        ("Escherichia coli", "pathogens"),
        ("Fecal Streptococci", "pathogens"),
        ("E. coli", "pathogens"),
        ("Fecal Coliform", "pathogens"),
        ("Cyanobacteria", "nutrients"),  # algae, not pathogens ("bacteria")
        ("Harmful Algal Blooms", "nutrients"),
        ("Soil erosion", "silt/sediment"),  # not oil and grease (the "oil" in "soil")
        ("Oil and Grease", "oil and grease"),
        ("Sediment Oxygen Demand", "oxygen demand"),
        ("Low D.O.", "oxygen demand"),
        ("Acid/Base (pH)", "ph"),
        ("Lead", "metals"),
        ("Total Phosphorus", "phosphorus"),
        # neither pH ("acid"), nor metals (the "iron" in "environmental"): kept as written
        ("Perfluorooctane sulfonic acid", "perfluorooctane sulfonic acid"),
        ("Environmental stressors", "environmental stressors"),
    ],
)
def test_cause_reads_as(cause, pollutant):
    assert normalize_pollutant(cause) == pollutant


def test_a_water_listed_for_e_coli_triggers_condition_a_for_pathogens():
    imp = pd.DataFrame(
        {"wb_id": ["1302-0007"], "pollutant": ["Escherichia coli"], "category": ["5"]}
    )
    waters = Waters.from_frames(impairments=imp, crs=CRS)
    profile = load_profile("stillwater").with_pollutants(["pathogens"])
    rows = [row("inlet", "CB1", 1.0, "OF-1", water="Pine Creek", pwl="1302-0007")]
    det = determine(
        rows, waters=waters, profile=profile, disturbed_acres=2, project_type="commercial"
    )
    assert det.conditions["A"]["value"] is True
