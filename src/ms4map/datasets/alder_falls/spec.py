"""The demo town's fixed design: size, waters, streets, lots, planted defects and scenario parcels."""

from __future__ import annotations

from typing import Any

#: Working CRS of the demo: NAD83 / UTM zone 18N, metres.
CRS = "EPSG:26918"
#: Real coordinates of the DEM's south-west corner (Saratoga County, NY).
ORIGIN = (603_000.0, 4_763_000.0)
DEFAULT_SEED = 1_868
CELL = 5.0
WIDTH, HEIGHT = 4000.0, 3500.0
NCOLS, NROWS = int(WIDTH / CELL), int(HEIGHT / CELL)
NODATA = -9999.0
ACRE_M2 = 4046.8564224
GPKG_NAME = "demo.gpkg"
DEM_NAME = "demo_dem.tif"

TOWN = "Alder Falls"
ZIP = "12170"

# Waterbodies: (wb_id, name, kind)
RIVER = ("1101-0012", "Kenyon River", "river")
CREEK = ("1101-0045", "Alder Kill", "creek")
LAKE = ("1101-0099", "Tamarack Lake", "lake")
BROOK = ("1101-0101", "Tamarack Brook", "stream")

# Planted defects, scenario parcels and hand checks, with the ids a build with
# DEFAULT_SEED gives (tests/datasets/test_demo.py checks them against a fresh build; after a
# change to the generator, regenerate this block with ``_describe(build_layers())``).
# <constants>
PLANTED_DEFECTS: list[dict[str, str]] = [
    {"code": "missing_id", "id": "structures:302", "layer": "structures", "level": "data"},
    {"code": "duplicate_id", "id": "P-0301", "layer": "conveyances", "level": "data"},
    {"code": "dem_nodata", "id": "dem", "layer": "dem", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-1", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-10", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-11", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-12", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-2", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-3", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-4", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-5", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-6", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-7", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-8", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.10-1-9", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.11-1-1", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "100.11-1-2", "layer": "parcels", "level": "data"},
    {"code": "dem_not_covering", "id": "105.10-1-1", "layer": "parcels", "level": "data"},
    {"code": "reversed_digitization", "id": "P-0116", "layer": "conveyances", "level": "network"},
    {"code": "adverse_slope", "id": "P-0351", "layer": "conveyances", "level": "network"},
    {"code": "unsnapped_end", "id": "P-0569", "layer": "conveyances", "level": "network"},
    {"code": "orphan_structure", "id": "CB-0527", "layer": "structures", "level": "network"},
]
SCENARIO_PARCELS: dict[str, dict[str, str]] = {
    "a": {
        "parcel_id": "103.14-2-9",
        "what": "6.5-acre farm field west of Cole Rd; drains east into the Cole Rd ditch (D-series) "
        "to an outfall on the Alder Kill",
    },
    "b": {
        "parcel_id": "107.12-2-11",
        "what": "2.0-acre shopping plaza (452) on River Rd; drains east to River Rd catch basins "
        "piped only to Kenyon River outfalls",
    },
    "c": {
        "parcel_id": "102.11-3-3",
        "what": "house lot on the floor of the kettle north of Kettle Rd: internally drained "
        "(closed depression, no inlet)",
    },
    "d": {
        "parcel_id": "107.15-1-10",
        "what": "riverside lot east of the terrace crest: drains straight to the Kenyon River, "
        "outside the MS4; septic",
    },
    "d2": {
        "parcel_id": "107.15-1-2",
        "what": "second riverside lot draining straight to the river (septic)",
    },
    "d_fail": {
        "parcel_id": "107.15-1-4",
        "what": "riverside septic lot with a recorded sewage backup",
    },
    "e": {
        "parcel_id": "107.11-3-4",
        "what": "lot on the sharp ridge between Hill St (creek system) and River Rd (river system): "
        "half to each",
    },
    "f": {
        "parcel_id": "102.15-2-9",
        "what": "lot south of Lake Rd in the Tamarack Lake phosphorus TMDL watershed; drains to "
        "Lake Rd inlets piped to a lake outfall",
    },
    "g": {
        "parcel_id": "106.12-2-14",
        "what": "septic lot on Hill St south of the village (outside the sewer district) draining "
        "to a Hill St catch basin piped to an Alder Kill outfall (tributary to the MS4); "
        "recorded failure surface_discharge",
    },
    "h": {"parcel_id": "104.14-10-1", "what": "one-family village lot on the public sewer"},
    "i": {"parcel_id": "102.12-1-2", "what": "field-crop farm (120)"},
    "j": {"parcel_id": "100.10-1-1", "what": "lot west of Town Line Rd, about half off the DEM"},
    "storm_conn": {
        "parcel_id": "105.14-12-10",
        "what": "septic lot north of the sewer district with a recorded connection to the "
        "storm sewer",
    },
}
HAND_CHECKS: dict[str, dict[str, Any]] = {
    "HC1": {
        "expected": {"inlet:CB-0170": 1.0},
        "parcel_id": "106.12-2-15",
        "why": "The lot (85 m x 50 m, west side of Hill St) is a plane falling 4 % east and 1 % "
        "north, so every cell runs east or north-east into the Hill St curb trough between "
        "v = 1100 and 1245 m; the trough falls north and has no inlet between the catch "
        "basin at v = 1062.5 (upstream, south of the lot) and the one at v = 1252.5, which "
        "takes all of it.",
    },
    "HC2": {
        "expected": {"inlet:CB-0167": 0.5, "inlet:CB-0501": 0.5},
        "parcel_id": "107.11-3-4",
        "why": "A sharp north-south ridge crest (u = 3330 m, a cell boundary) splits the 80 m x "
        "40 m lot into equal halves.  The west half falls 3 % west, the east half about 10 "
        "% east, and a shallow east-west V-swale (1 % side slopes, axis at v = 882.5 m) "
        "gathers each half into a straight path to the sag inlet level with the lot: Hill "
        "St (Alder Kill outfall) to the west, River Rd (Kenyon River outfall) to the "
        "east.",
    },
    "HC3": {
        "expected": {"inlet:CB-0524": 0.5, "water_direct:1101-0012": 0.5},
        "parcel_id": "107.15-1-17",
        "why": "The river-terrace crest (u = 3620 m, a cell boundary) bisects the 80 m x 40 m "
        "lot.  A V-swale across the terrace (axis v = 2582.5 m) keeps each half on one "
        "straight path: the west half falls 2 % to the River Rd sag inlet at v = 2582.5, "
        "the east half falls 3.8 % straight into the Kenyon River with no MS4 structure in "
        "the way.",
    },
}
# </constants>

# ======================================================================================
# Geometry of the town (local metres)
# ======================================================================================
RIVER_W, RIVER_E = 3730.0, 3790.0  # river polygon (straight, canalised reach)
CREST_U = 3620.0  # sharp crest of the river terrace
RIVER_RD_U = 3552.5
LAKE_C, LAKE_AB, LAKE_LEVEL = (1000.0, 3050.0), (280.0, 170.0), 121.0
KETTLE_C = (802.5, 812.5)
CREEK_LINE = [
    (0.0, 2050.0),
    (300.0, 1980.0),
    (600.0, 2010.0),
    (900.0, 1900.0),
    (1200.0, 1830.0),
    (1500.0, 1780.0),
    (1800.0, 1752.0),
    (2100.0, 1760.0),
    (2400.0, 1745.0),
    (2700.0, 1755.0),
    (3000.0, 1742.0),
    (3300.0, 1752.0),
    (RIVER_W, 1750.0),
]
CREEK_BED = (125.0, 59.7)  # bed elevation at the west edge and at the river
BROOK_LINE = [
    (1198.0, 2929.8),
    (1330.0, 2700.0),
    (1450.0, 2420.0),
    (1600.0, 2130.0),
    (1740.0, 1880.0),
    (1790.0, 1752.9),
]
NODATA_HOLE = (2300.0, 400.0, 2330.0, 425.0)

# Village street grid (curbed, piped).  N-S streets at u, E-W streets at v.
VILLAGE_NS = {
    "Church St": 1902.5,
    "Elm St": 2052.5,
    "Maple Ave": 2202.5,
    "Pearl St": 2352.5,
    "Division St": 2502.5,
    "Main St": 2652.5,
    "Spring St": 2802.5,
    "Union Ave": 2952.5,
    "Hill St": 3102.5,
    "Bridge St": 3252.5,
    "Cherry St": 3402.5,
}
VILLAGE_EW = {
    "South St": 1292.5,
    "Mill St": 1422.5,
    "Canal St": 1552.5,
    "Water St": 1682.5,
    "Front St": 1822.5,
    "Broad St": 1952.5,
    "Washington St": 2082.5,
    "Grove St": 2212.5,
    "North St": 2342.5,
    "Park Ave": 2492.5,
    "Prospect St": 2652.5,
}
LAKE_RD_V = 2802.5
VILLAGE_S, VILLAGE_N = 1292.5, LAKE_RD_V
VILLAGE_W, VILLAGE_E = 1902.5, RIVER_RD_U
BRIDGE_STREETS = ("Main St", "Bridge St")  # cross the creek; the others end at it
TOWN_LINE_U = 52.5
KETTLE_RD_V = 702.5
COLE_RD_U = 1502.5
RIDGE_RD_V = 3352.5
STONY = [(602.5, 0.0), (COLE_RD_U, 1002.5), (VILLAGE_W, VILLAGE_S)]
HILL_U = VILLAGE_NS["Hill St"]
NORTH_RD_U = 2502.5
SEWER_DISTRICT = (1895.0, 1285.0, RIVER_RD_U, 2350.0)
MS4_AREA = [(1300, 400), (RIVER_W, 400), (RIVER_W, 3100), (700, 3100), (700, 2500), (1300, 2200)]
LAKE_CURB = (852.5, 1152.5)  # curbed, piped stretch of Lake Rd by the lake

# Outfall nodes of the piped systems (local coordinates of street junctions).
CREEK_OF_U = (1902.5, 2202.5, 2502.5, 2802.5, 3102.5, 3402.5)
RIVER_OF_V = (952.5, 1292.5, 1552.5, 2082.5, 2492.5, 2702.5)
LAKE_OF_U = 1002.5

# Hand-check pads and special parcels (boxes u0, v0, u1, v1).
HC1_BOX = (3010.0, 1100.0, 3095.0, 1150.0)  # planar slope to one inlet on Hill St
HC1_PAD = (2990.0, 1085.0, 3100.0, 1165.0)
HC1_CBS = (1062.5, 1252.5)  # Hill St inlets just south / north of the lot's frontage
HC2_BOX = (3290.0, 860.0, 3370.0, 900.0)  # bisected by a sharp ridge at u = 3330
HC2_PAD = (3100.0, 840.0, 3555.0, 920.0)
HC2_CREST = 3330.0
HC2_CB_V = 882.5
HC3_BOX = (3580.0, 2560.0, 3660.0, 2600.0)  # half to River Rd inlet, half to the river
HC3_CB_V = 2582.5
KETTLE_LOT = (787.5, 797.5, 817.5, 827.5)
BIG_LOT = (1330.0, 2050.0, 1495.0, 2210.0)  # (a) 6.5 acres draining to the Cole Rd ditch
SEPTIC_LOT = (3010.0, 1150.0, 3095.0, 1195.0)  # (g) on Hill St, next to HC1
COMMERCIAL_LOT = (3455.0, 1040.0, 3545.0, 1130.0)  # (b) 2.0 acres on River Rd


# ======================================================================================
# Small helpers
# ======================================================================================
