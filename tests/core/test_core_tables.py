"""Spreadsheet-safe CSV: text a spreadsheet would run as a formula is written as text."""

from __future__ import annotations

import io

import pandas as pd

from ms4map.core.tables import csv_text, safe_cell


def test_formula_cells_get_an_apostrophe_and_numbers_stay_numbers() -> None:
    frame = pd.DataFrame(
        {
            "owner": ['=HYPERLINK("http://x","y")', "Smith, J", "@SUM(1+1)*cmd|' /C calc'!A0"],
            "outfall_id": ["+OF-1", "-2", "\tOF-3"],
            "invert": [-1.5, 2.0, 3.0],
        }
    )
    back = pd.read_csv(io.StringIO(csv_text(frame)))
    assert back["owner"].tolist() == [
        '\'=HYPERLINK("http://x","y")',
        "Smith, J",
        "'@SUM(1+1)*cmd|' /C calc'!A0",
    ]
    assert back["outfall_id"].tolist() == ["'+OF-1", "'-2", "'\tOF-3"]
    assert back["invert"].tolist() == [-1.5, 2.0, 3.0]  # a negative number is not text
    assert safe_cell("\rX") == "'\rX" and safe_cell(None) is None


def test_the_septic_mailing_list_goes_through_it(tmp_path) -> None:
    import geopandas as gpd
    from shapely.geometry import box

    from ms4map.rules.septic.letters import write_mailing_list

    septic = gpd.GeoDataFrame(
        {
            "parcel_id": ["P1"],
            "address": ["1 Main St"],
            "owner": ["=1+1"],
            "owner_address": ["1 Main St"],
            "flagged": [True],
            "priority": [2],
            "priority_label": ["medium"],
            "special_condition": [False],
            "violation": [False],
            "outfall_id": ["OF-1"],
            "receiving_water": ["-Creek"],
            "reason": ["septic"],
            "geometry": [box(0, 0, 1, 1)],
        },
        crs="EPSG:26918",
    )
    out = write_mailing_list(septic, tmp_path / "letters.csv", only_flagged=False)
    text = out.read_text()
    assert "'=1+1" in text and "'-Creek" in text
