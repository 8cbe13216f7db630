"""Whether a septic parcel is tributary to the MS4 when part of its drainage is unknown:
never a confident "no" (docs/screening.md).

Five septic lots (80 m squares, ``sewer`` septic) with hand-made drainage rows; by hand:

- ``MIX``: 10 % straight to Clear Brook, 90 % off the DEM: none of it is known to enter
  the MS4, but 90 % could: ``tributary`` not known (<NA>), not flagged, method
  ``unknown_drainage`` (it said ``direct_to_water``, not tributary);
- ``DIRECT``: 100 % straight to Clear Brook: not tributary (false), ``direct_to_water``;
- ``PART``: 50 % through inlet CB1 and outfall OF-C, 50 % off the DEM: tributary, flagged;
- ``BASIN``: 100 % into a closed depression: not tributary, ``internally_drained``;
- ``NONE``: no drainage rows: not known, ``no_drainage``.
"""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
import pyogrio
from shapely.geometry import box
from test_rules_conditions_fixtures import CLEAR, CRS, row, town_waters

from ms4map.rules.septic import flag_septic_table

LOTS = ("MIX", "DIRECT", "PART", "BASIN", "NONE")


def _septic() -> pd.DataFrame:
    parcels = gpd.GeoDataFrame(
        {"parcel_id": list(LOTS), "sewer": ["septic"] * 5, "prop_class": ["210"] * 5},
        geometry=[box(1300 + 200 * i, 100, 1380 + 200 * i, 180) for i in range(5)],
        crs=CRS,
    )
    rows = [
        ("MIX", row("water_direct", "1302-0003", 0.1, None, **CLEAR)),
        ("MIX", row("off_dem", None, 0.9)),
        ("DIRECT", row("water_direct", "1302-0003", 1.0, None, **CLEAR)),
        ("PART", row("inlet", "CB1", 0.5, "OF-C", **CLEAR)),
        ("PART", row("off_dem", None, 0.5)),
        ("BASIN", row("depression", "D1", 1.0)),
    ]
    drainage = pd.DataFrame([{"parcel_id": p, **r} for p, r in rows])
    return flag_septic_table(parcels, drainage, waters=town_waters())


def test_tributary_is_not_known_where_the_drainage_is_not():
    sp = _septic().set_index("parcel_id")
    assert str(sp["tributary"].dtype) == "boolean"
    assert pd.isna(sp.loc["MIX", "tributary"]) and not bool(sp.loc["MIX", "flagged"])
    assert sp.loc["MIX", "method"] == "unknown_drainage"
    reason = sp.loc["MIX", "reason"]
    assert "90% of its runoff drains somewhere unknown" in reason
    assert "10% reaches Clear Brook (1302-0003) directly" in reason
    assert "whether it is tributary to the MS4 is not known" in reason
    assert not pd.isna(sp.loc["DIRECT", "tributary"]) and not bool(sp.loc["DIRECT", "tributary"])
    assert sp.loc["DIRECT", "method"] == "direct_to_water"
    assert bool(sp.loc["PART", "tributary"]) and bool(sp.loc["PART", "flagged"])
    assert sp.loc["PART", "ms4_fraction"] == 0.5
    assert not pd.isna(sp.loc["BASIN", "tributary"]) and not bool(sp.loc["BASIN", "tributary"])
    assert sp.loc["BASIN", "method"] == "internally_drained"
    assert pd.isna(sp.loc["NONE", "tributary"]) and sp.loc["NONE", "method"] == "no_drainage"
    assert sp.loc[["MIX", "DIRECT", "BASIN", "NONE"], "priority"].eq(0).all()


def test_the_layer_writes_not_known_as_null(tmp_path):
    sp = _septic()
    path = tmp_path / "septic.gpkg"
    pyogrio.write_dataframe(sp, path, layer="septic")
    back = gpd.read_file(path, layer="septic").set_index("parcel_id")
    assert back.loc[["MIX", "NONE"], "tributary"].isna().all()
    assert bool(back.loc["PART", "tributary"])
    assert not back.loc[["DIRECT", "BASIN"], "tributary"].isna().any()
