"""Audit defects 1 and 2: a water id that is no PWL ID never gives a confident "no".

The hand-made town of ``test_rules_conditions_fixtures``: Mill Creek (1302-0001) is on the
303(d) list for phosphorus (category 5).  A site drains 100% through outfall OF-M:

- written ATTAINS-style, ``NY1302-0001`` is the PWL ID 1302-0001: Mill Creek, so
  Condition A is true (it was "not listed": no listing under the id ``NY1302-0001``);
- written ``PINE-7`` (no PWL ID, not in the 303(d) list), the receiving water is unknown:
  undetermined, the reason naming the outfall, the id and the fix (it was "no");
- a synthetic id the impairments table lists (``W``) still counts as written.

A waterbody without a ``wb_id`` (blank, or the text ``"<NA>"`` a null becomes through
``str()``) gives no PWL id: direct runoff reaching it is undetermined (it was "no").
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
from shapely.geometry import LineString, Point, box
from test_rules_conditions_fixtures import CRS, row, town_waters

from ms4map.core.qa import QAReport
from ms4map.core.schema import id_text, normalize_pwl_id
from ms4map.io.checks import _check_legal_layers
from ms4map.rules.conditions import determine, screen_condition_a
from ms4map.rules.waters import Waters


def _a(rows, waters):
    det = determine(
        rows, waters=waters, profile="stillwater", disturbed_acres=2, project_type="commercial"
    )
    return det.doc["conditions"]["A"]


def _batch(rows, waters):
    table = pd.DataFrame([{"parcel_id": "X", **r} for r in rows])
    return screen_condition_a(table, waters=waters).iloc[0]


def test_pwl_id_forms():
    assert normalize_pwl_id("NY1302-0001") == "1302-0001"
    assert normalize_pwl_id("ny-1302-0001 ") == "1302-0001"
    assert normalize_pwl_id("1302-0001") == "1302-0001"
    assert normalize_pwl_id("PINE-7") is None
    assert normalize_pwl_id("<NA>") is None
    assert [id_text(v) for v in ("<NA>", "nan", "NULL", None, " W ")] == [
        None,
        None,
        None,
        None,
        "W",
    ]


def test_ny_prefixed_outfall_pwl_id_is_the_listed_water():
    rows = [row("inlet", "CB1", 1.0, "OF-M", water="Mill Creek", pwl="NY1302-0001")]
    a = _a(rows, town_waters())
    assert a["value"] is True and a["method"] == "listed_water"
    assert "Mill Creek (1302-0001)" in a["reasons"][0]
    b = _batch(rows, town_waters())
    assert b["condition_a_text"] == "yes" and b["listed_waters"] == "1302-0001"


def test_unknown_outfall_id_is_undetermined_naming_outfall_id_and_fix():
    # the name would resolve to Mill Creek, but the written id says something else:
    # the tool does not guess, it asks for the PWL ID
    rows = [row("inlet", "CB1", 1.0, "OF-M", water="Mill Creek", pwl="PINE-7")]
    a = _a(rows, town_waters())
    assert a["value"] is None and a["method"] == "unknown_drainage"
    text = " ".join(a["reasons"])
    assert "OF-M" in text and "'PINE-7'" in text and "NNNN-NNNN" in text
    b = _batch(rows, town_waters())
    assert b["condition_a_text"] == "undetermined" and b["method"] == "unknown_drainage"
    assert "OF-M" in b["reason"] and "'PINE-7'" in b["reason"] and "NNNN-NNNN" in b["reason"]


def test_half_to_a_bad_id_half_to_a_clear_brook_is_undetermined_not_no():
    # 50% to Clear Brook (not listed: alone it would be "no"), 50% to an unusable id
    rows = [
        row("inlet", "CB1", 0.5, "OF-C", water="Clear Brook", pwl="1302-0003"),
        row("inlet", "CB2", 0.5, "OF-X", water="Somewhere", pwl="XX"),
    ]
    a = _a(rows, town_waters())
    assert a["value"] is None
    assert "50% reaches a receiving water without a PWL ID" in " ".join(a["reasons"])


def test_synthetic_id_listed_in_impairments_still_counts():
    imp = pd.DataFrame(
        {
            "wb_id": ["W"],
            "pollutant": ["Phosphorus"],
            "pollutant_norm": ["phosphorus"],
            "category": ["5"],
            "origin": ["test"],
        }
    )
    waters = Waters.from_frames(impairments=imp, crs=CRS)
    rows = [row("inlet", "CB1", 1.0, "OF-1", water="Pond", pwl="W")]
    assert _a(rows, waters)["value"] is True
    assert _batch(rows, waters)["condition_a_text"] == "yes"


def _waters_with_nameless(wb_id):
    wb = gpd.GeoDataFrame(
        {"wb_id": ["1302-0001", wb_id], "name": ["Mill Creek", "Nameless Brook"]},
        geometry=[LineString([(0, 0), (0, 1000)]), LineString([(700, 0), (700, 1000)])],
        crs=CRS,
    )
    imp = pd.DataFrame({"wb_id": ["1302-0001"], "pollutant": ["Phosphorus"], "category": ["5"]})
    return Waters.from_frames(waterbodies=wb, impairments=imp, crs=CRS)


def test_waterbody_without_wb_id_gives_no_id_and_undetermined():
    for blank in (None, "<NA>", "  "):
        waters = _waters_with_nameless(blank)
        assert waters.wb_id_for_name("Nameless Brook") is None
        assert waters.wb_id_for_name("Mill Creek") == "1302-0001"
        # direct runoff to it, as a drainage table that wrote str(<NA>) would carry it
        rows = [row("water_direct", "<NA>", 1.0, water="Nameless Brook", pwl="<NA>")]
        a = _a(rows, waters)
        assert a["value"] is None and a["method"] == "unknown_drainage"
        assert "Nameless Brook" in " ".join(a["reasons"])
        assert "no wb_id" in " ".join(a["reasons"])
        b = _batch(rows, waters)
        assert b["condition_a_text"] == "undetermined"


def test_validation_warns_about_an_outfall_id_that_is_no_pwl_id():
    layers = {
        "parcels": gpd.GeoDataFrame({"parcel_id": ["P"]}, geometry=[box(0, 0, 1, 1)], crs=CRS),
        "outfalls": gpd.GeoDataFrame(
            {
                "outfall_id": ["OF-1", "OF-2", "OF-3", "OF-4"],
                "pwl_id": ["1302-0001", "NY1302-0001", "PINE-7", "W"],
                "receiving_water": ["Mill Creek"] * 4,
            },
            geometry=[Point(0, i) for i in range(4)],
            crs=CRS,
        ),
        "impairments": pd.DataFrame({"wb_id": ["1302-0001", "W"], "pollutant": ["P", "P"]}),
    }
    report = QAReport()
    _check_legal_layers(layers, report)
    bad = [f for f in report.findings if f.code == "outfall_bad_pwl_id"]
    assert [f.feature_id for f in bad] == ["OF-3"]
    assert bad[0].layer == "outfalls" and "'PINE-7'" in bad[0].message
    assert "NNNN-NNNN" in bad[0].fix
    assert np.all([f.code != "outfall_no_receiving_water" for f in report.findings])
