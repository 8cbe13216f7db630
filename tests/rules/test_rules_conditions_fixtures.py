"""Hand-made waters, parcels and drainage rows shared by the screening tests.

A tiny town in UTM 18N (metres): Mill Creek (phosphorus, 303(d) category 5), the
Hudson River (PCBs, category 5), Clear Brook (not listed), Round Lake (phosphorus,
category 4a) inside the Round Lake phosphorus TMDL watershed (stormwater a source),
Fish Creek (pathogens, category 5).
"""

from __future__ import annotations

import geopandas as gpd
import pandas as pd
from shapely.geometry import LineString, Point, box

from ms4map.rules.waters import Waters

CRS = "EPSG:26918"


def town_waters() -> Waters:
    wb = gpd.GeoDataFrame(
        {
            "wb_id": ["1302-0001", "1101-0001", "1302-0003", "1302-0004", "1302-0005"],
            "name": ["Mill Creek", "Hudson River", "Clear Brook", "Round Lake", "Fish Creek"],
            "kind": ["creek", "river", "stream", "lake", "creek"],
        },
        geometry=[
            LineString([(0, 0), (0, 1000)]),
            LineString([(2000, 0), (2000, 1000)]),
            LineString([(1000, 0), (1000, 1000)]),
            box(3000, 3000, 3200, 3200),
            LineString([(5000, 0), (5000, 1000)]),
        ],
        crs=CRS,
    )
    imp = pd.DataFrame(
        {
            "wb_id": ["1302-0001", "1101-0001", "1302-0004", "1302-0005"],
            "pollutant": ["Phosphorus", "PCBs", "Phosphorus", "Pathogens"],
            "category": ["5", "5", "4a", "5"],
            "list_year": [2018, 2018, 2016, 2018],
            "source": ["Urban runoff", "Contaminated sediment", "Septic systems", "Septic systems"],
        }
    )
    tm = gpd.GeoDataFrame(
        {
            "tmdl_id": ["TMDL-RL-P"],
            "name": ["Round Lake phosphorus"],
            "pollutant": ["Phosphorus"],
            "stormwater_source": [True],
            "approved": ["2016"],
        },
        geometry=[box(2500, 2500, 3700, 3700)],
        crs=CRS,
    )
    return Waters.from_frames(waterbodies=wb, impairments=imp, tmdl_watersheds=tm, crs=wb.crs)


def row(kind, target, fraction=1.0, outfall=None, *, water=None, pwl=None):
    return {
        "target_kind": kind,
        "target_id": target,
        "fraction": fraction,
        "outfall_id": outfall,
        "receiving_water": water,
        "pwl_id": pwl,
        "method": "test",
        "reason": "hand-made",
    }


MILL = dict(water="Mill Creek", pwl="1302-0001")
HUDSON = dict(water="Hudson River", pwl="1101-0001")
CLEAR = dict(water="Clear Brook", pwl="1302-0003")
LAKE = dict(water="Round Lake", pwl="1302-0004")
FISH = dict(water="Fish Creek", pwl="1302-0005")

OUTFALL_POINTS = {
    "OF-M": Point(0, 500),
    "OF-H": Point(2000, 500),
    "OF-C": Point(1000, 500),
    "OF-L": Point(3000, 3100),
    "OF-F": Point(5000, 500),
}


def parcels_frame() -> gpd.GeoDataFrame:
    """Parcels P1..P8 (100 m squares) with sewer attributes."""
    recs = [
        ("P1", "septic", "210", None, 100, 100),  # septic -> Mill Creek via MS4
        ("P2", "public", "210", None, 300, 100),  # sewered -> Mill Creek
        ("P3", "septic", "210", None, 1900, 100),  # septic -> Hudson direct (no MS4)
        ("P4", None, "220", None, 600, 600),  # unknown sewer, outside district: inferred
        ("P5", None, "220", None, 600, 900),  # unknown sewer, inside district
        ("P6", "septic", "210", "B", 4800, 100),  # septic, failing, -> Fish Creek via MS4
        ("P7", None, "311", None, 700, 300),  # vacant, unknown sewer: not inferred
        ("P8", "septic", "240", None, 1300, 100),  # septic -> Clear Brook via MS4
    ]
    return gpd.GeoDataFrame(
        {
            "parcel_id": [r[0] for r in recs],
            "sewer": [r[1] for r in recs],
            "prop_class": [r[2] for r in recs],
            "septic_failure": [r[3] for r in recs],
            "owner": [f"Owner {r[0]}" for r in recs],
            "owner_address": [f"{i} Main St, Stillwater NY" for i in range(len(recs))],
            "address": [f"{i} Road" for i in range(len(recs))],
        },
        geometry=[box(r[4], r[5], r[4] + 80, r[5] + 80) for r in recs],
        crs=CRS,
    )


def parcel_drainage() -> pd.DataFrame:
    rows = [
        ("P1", row("inlet", "CB1", 1.0, "OF-M", **MILL)),
        ("P2", row("inlet", "CB2", 1.0, "OF-M", **MILL)),
        ("P3", row("water_direct", "1101-0001", 1.0, None, **HUDSON)),
        ("P4", row("inlet", "CB4", 1.0, "OF-C", **CLEAR)),
        ("P5", row("inlet", "CB5", 1.0, "OF-C", **CLEAR)),
        ("P6", row("conveyance", "D6", 1.0, "OF-F", **FISH)),
        ("P7", row("depression", "DEP7", 1.0)),
        ("P8", row("inlet", "CB8", 0.6, "OF-C", **CLEAR)),
        ("P8", row("off_dem", None, 0.4)),
    ]
    return pd.DataFrame([{"parcel_id": p, **r} for p, r in rows])


def sewer_districts() -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"name": ["Village sewer"]}, geometry=[box(550, 850, 800, 1100)], crs=CRS
    )


def condition_a_single(waters, drainage_row, *, site, outfall_points, profile=None) -> dict:
    """Condition A of one site (``site`` polygon, one drainage row) by ``determine``."""
    from ms4map.rules.conditions import determine
    from ms4map.rules.conditions.site import tmdl_hits_for

    rows = pd.DataFrame([drainage_row])
    hits = tmdl_hits_for(waters, site_geom=site, rows=rows, outfall_points=outfall_points)
    det = determine(
        rows,
        waters=waters,
        profile=profile,
        disturbed_acres=2,
        project_type="commercial",
        tmdl_hits=hits,
    )
    return det.conditions["A"]


def condition_a_batch(waters, drainage_row, *, site, outfall_points, profile=None):
    """The same site as parcel ``P1`` of the batch screening (``screen_condition_a``)."""
    from ms4map.rules.conditions import screen_condition_a

    rows = pd.DataFrame([{"parcel_id": "P1", **drainage_row}])
    parcels = gpd.GeoDataFrame({"parcel_id": ["P1"]}, geometry=[site], crs=CRS)
    out = screen_condition_a(
        rows, waters=waters, profile=profile, parcels=parcels, outfall_points=outfall_points
    )
    return out.set_index("parcel_id").loc["P1"]
