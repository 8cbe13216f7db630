"""Build the bundled demo town: the Town and Village of Alder Falls, Saratoga County, NY.

A fictional upstate New York town (about 4 x 3.5 km, UTM 18N) made so that every
feature of ms4map has something real to show: a DEM with ridges, a river terrace, a
creek valley, a lake with its phosphorus TMDL watershed and a glacial kettle (a
closed depression); a village street grid with catch basins, manholes and pipes
draining to outfalls on the creek and the river; rural roads with ditches and
culverts; about 3,000 tax parcels; and a handful of *planted defects*
(:data:`PLANTED_DEFECTS`) and *scenario parcels* (:data:`SCENARIO_PARCELS`,
:data:`HAND_CHECKS`) that tests and documentation refer to.

:func:`build_demo` is deterministic: the same seed gives the same layers and the
same DEM array (only GeoPackage timestamps differ).  ``ms4map demo`` calls it.

Design notes (the coordinates below are local metres from the DEM's south-west
corner, easting ``u`` and northing ``v``; the real coordinates add :data:`ORIGIN`):

* River: the Kenyon River runs north-south at ``u`` 3730-3790, flowing south.
  Between River Road (``u`` 3552.5) and the river a terrace has a sharp crest at
  ``u`` = 3620: west of it the land drains to River Road, east of it straight to the
  river.
* Creek: the Alder Kill enters in the west and crosses the village at ``v`` ~1750 to
  the river.  Tamarack Lake (north-west) drains by Tamarack Brook to the creek.
* Curbed village streets are 1-cell troughs in the DEM with a raised shoulder and a
  shallow sag at each catch basin, so surface runoff really reaches the inlets.
  Rural roads have ditches burnt 0.6 m deep, falling monotonically to their outfall.
* Planar / ridge "pads" make the hand-check parcels exactly predictable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "CRS",
    "DEFAULT_SEED",
    "HAND_CHECKS",
    "ORIGIN",
    "PLANTED_DEFECTS",
    "SCENARIO_PARCELS",
    "build_demo",
    "build_layers",
]

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
# DEFAULT_SEED gives (tests/test_demo.py checks them against a fresh build; after a
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
    {"code": "uphill_pipe", "id": "P-0351", "layer": "conveyances", "level": "network"},
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
def _grid() -> tuple[np.ndarray, np.ndarray]:
    u = (np.arange(NCOLS) + 0.5) * CELL
    v = HEIGHT - (np.arange(NROWS) + 0.5) * CELL
    return np.meshgrid(u, v)


def _rc(u: float, v: float) -> tuple[int, int]:
    return int((HEIGHT - v) // CELL), int(u // CELL)


def _cell_centre(u: float, v: float) -> tuple[float, float]:
    return (math.floor(u / CELL) + 0.5) * CELL, (math.floor(v / CELL) + 0.5) * CELL


def _box_dist(U: np.ndarray, V: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    u0, v0, u1, v1 = box
    du = np.maximum(np.maximum(u0 - U, 0.0), U - u1)
    dv = np.maximum(np.maximum(v0 - V, 0.0), V - v1)
    return np.hypot(du, dv)


def _seg_dist(U: np.ndarray, V: np.ndarray, a: tuple[float, float], b: tuple[float, float]):
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = np.clip(((U - ax) * dx + (V - ay) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
    return np.hypot(U - (ax + t * dx), V - (ay + t * dy))


def _line_cells(coords: list[tuple[float, float]], step: float = 1.0) -> list[tuple[int, int]]:
    """Grid cells a polyline passes, in order, without repeats."""
    out: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for (x0, y0), (x1, y1) in zip(coords[:-1], coords[1:], strict=False):
        n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
        for k in range(n + 1):
            t = k / n
            r, c = _rc(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)
            if 0 <= r < NROWS and 0 <= c < NCOLS and (r, c) not in seen:
                seen.add((r, c))
                out.append((r, c))
    return out


def _chainage_field(U, V, coords, values):
    """Distance to a polyline and the value interpolated at the nearest point."""
    import shapely

    line = shapely.LineString(coords)
    pts = shapely.points(U.ravel(), V.ravel())
    d = shapely.distance(pts, line).reshape(U.shape)
    s = shapely.line_locate_point(line, pts).reshape(U.shape)
    return d, np.interp(s, [0.0, line.length], values)


# ======================================================================================
# Terrain
# ======================================================================================
def _river_level(V):
    return 58.0 + 0.0008 * V


def _base_terrain(U, V):
    W = _river_level(V)
    ns = 0.010 * np.abs(V - 1750.0)  # the land falls 1 % towards the creek
    taper = np.clip((RIVER_RD_U - U) / 150.0, 0.0, 1.0)
    z = W + 5.15 + 0.022 * np.clip(RIVER_RD_U - U, 0, None) + ns * taper
    zc = W + 6.5
    m = (U > RIVER_RD_U) & (U < CREST_U)
    z[m] = (zc - 0.02 * (CREST_U - U))[m]
    m = (U >= CREST_U) & (U < 3725.0)
    z[m] = (zc - (4.0 / 105.0) * (U - CREST_U))[m]
    m = (U >= 3725.0) & (U < RIVER_W)
    z[m] = (W + 2.5 - 0.5 * (U - 3725.0))[m]
    m = (U >= RIVER_W) & (U < RIVER_E)
    z[m] = (W - 0.3 - 1.2 * (1 - ((U - 3760.0) / 30.0) ** 2))[m]
    m = U >= RIVER_E
    z[m] = (W + 1.0 + 0.03 * (U - RIVER_E))[m]
    return z


def _terrain(rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
    """Natural terrain (before roads and ditches) and channel fields for re-burning."""
    from scipy import ndimage

    U, V = _grid()
    z = _base_terrain(U, V)
    # ridges: Stony Hill (south) and Pine Ridge (north)
    z += 10.0 * np.exp(-((_seg_dist(U, V, (2000, 150), (2800, 450)) / 120.0) ** 2))
    z += 12.0 * np.exp(-((_seg_dist(U, V, (1900, 3150), (3300, 3350)) / 130.0) ** 2))
    # gentle hills, masked out where the design must be exact
    noise = ndimage.gaussian_filter(rng.standard_normal((NROWS, NCOLS)), sigma=50, mode="reflect")
    noise *= 1.6 / noise.std()
    w = np.clip((3400.0 - U) / 150.0, 0.0, 1.0)
    for box in (HC1_PAD, HC2_PAD, COMMERCIAL_LOT):
        w *= np.clip(_box_dist(U, V, box) / 80.0, 0.0, 1.0)
    w *= np.clip((np.hypot(U - KETTLE_C[0], V - KETTLE_C[1]) - 90.0) / 80.0, 0.0, 1.0)
    z += noise * w

    # pads for the hand-check parcels
    r0, c_h = _rc(HILL_U, 1000.0)
    zh_col = z[:, c_h].copy()  # natural profile of Hill St
    pad1 = zh_col[:, None] + 0.04 * (HILL_U - U)
    wt = np.clip(1.0 - _box_dist(U, V, HC1_PAD) / 30.0, 0.0, 1.0)
    z = z + wt * (pad1 - z)

    rh, ch = _rc(HILL_U, 880.0)
    _, cr = _rc(RIVER_RD_U, 880.0)
    zh, zr = float(z[rh, ch]), float(z[rh, cr])
    crest = zh + 0.03 * (HC2_CREST - HILL_U)
    s_e = (crest - 0.225 - zr) / (RIVER_RD_U - (HC2_CREST + 7.5))
    ridge = np.where(
        U < HC2_CREST,
        crest - 0.03 * (HC2_CREST - U),
        np.where(
            U < HC2_CREST + 7.5,
            crest - 0.03 * (U - HC2_CREST),
            crest - 0.225 - s_e * (U - HC2_CREST - 7.5),
        ),
    )
    pad2 = ridge + 0.01 * np.abs(V - HC2_CB_V)  # a V-swale leads each half to its inlet
    wt = np.clip(1.0 - _box_dist(U, V, HC2_PAD) / 30.0, 0.0, 1.0)
    wt[U > HC2_PAD[2]] = 0.0  # leave the river terrace alone
    z = z + wt * (pad2 - z)

    # HC3: a V-swale across the river terrace, level with the River Rd inlet
    swale = 0.01 * np.maximum(0.0, 45.0 - np.abs(V - HC3_CB_V))
    m3 = (U > RIVER_RD_U) & (U < 3725.0)
    z = np.where(m3, z - swale, z)

    # glacial kettle: a closed depression about 2.5 m deep
    r = np.hypot(U - KETTLE_C[0], V - KETTLE_C[1])
    zk = float(z[_rc(*KETTLE_C)]) - 4.0
    z = np.minimum(z, np.where(r < 25.0, zk + 0.01 * r, zk + 0.25 + 0.07 * (r - 25.0)))

    # lake basin (flat water surface) and its bowl
    a, b = LAKE_AB
    lake = ((U - LAKE_C[0]) / a) ** 2 + ((V - LAKE_C[1]) / b) ** 2 <= 1.0
    d_lake = ndimage.distance_transform_edt(~lake) * CELL
    z = np.minimum(z, LAKE_LEVEL + 0.5 + 0.025 * d_lake)
    z[lake] = LAKE_LEVEL

    # creek and brook valleys
    d_c, bed_c = _chainage_field(U, V, CREEK_LINE, list(CREEK_BED))
    creek_prof = np.where(
        d_c < 3.0, 0.0, np.where(d_c < 8.0, 1.8 * (d_c - 3.0) / 5.0, 1.8 + 0.05 * (d_c - 8.0))
    )
    brook_end_bed = (
        float(np.interp(_creek_chainage(BROOK_LINE[-1]), [0, _creek_len()], list(CREEK_BED))) + 0.2
    )
    d_b, bed_b = _chainage_field(U, V, BROOK_LINE, [LAKE_LEVEL - 0.3, brook_end_bed])
    brook_prof = np.where(
        d_b < 2.5, 0.0, np.where(d_b < 6.0, 1.2 * (d_b - 2.5) / 3.5, 1.2 + 0.06 * (d_b - 6.0))
    )
    zb = bed_b + brook_prof
    zb[lake] = LAKE_LEVEL
    z = np.minimum(z, zb)
    z = np.minimum(z, bed_c + creek_prof)
    z[lake] = LAKE_LEVEL
    fields = {
        "d_creek": d_c,
        "bed_creek": bed_c,
        "creek_prof": creek_prof,
        "d_brook": d_b,
        "bed_brook": bed_b,
        "brook_prof": brook_prof,
        "lake": lake,
        "U": U,
        "V": V,
    }
    return z, fields


def _creek_len() -> float:
    import shapely

    return shapely.LineString(CREEK_LINE).length


def _creek_chainage(p: tuple[float, float]) -> float:
    import shapely

    return float(shapely.LineString(CREEK_LINE).project(shapely.Point(p)))


# ======================================================================================
# Roads
# ======================================================================================
@dataclass
class Road:
    name: str
    coords: list[tuple[float, float]]
    curbed: list[tuple[float, float]] = field(default_factory=list)  # curbed chainage ranges
    frontage: tuple[float, float, float, float] | None = None  # fmin, fmax, dmin, dmax
    sides: tuple[int, ...] = (1, -1)


def _roads() -> list[Road]:
    roads: list[Road] = []
    v_top = max(VILLAGE_EW.values())
    for name, u in VILLAGE_NS.items():
        if name == "Hill St":
            roads.append(
                Road(
                    name,
                    [(u, KETTLE_RD_V), (u, LAKE_RD_V)],
                    curbed=[(0.0, LAKE_RD_V - KETTLE_RD_V)],
                    frontage=(20, 30, 60, 85),
                )
            )
        else:
            roads.append(
                Road(name, [(u, VILLAGE_S), (u, LAKE_RD_V)], curbed=[(0.0, LAKE_RD_V - VILLAGE_S)])
            )
    for name, v in VILLAGE_EW.items():
        roads.append(
            Road(
                name,
                [(VILLAGE_W, v), (RIVER_RD_U, v)],
                curbed=[(0.0, RIVER_RD_U - VILLAGE_W)],
                frontage=(30, 60, 70, 110) if name == "South St" else None,
                sides=(-1,) if name == "South St" else (1, -1),
            )
        )
    del v_top
    lake_w = TOWN_LINE_U
    roads.append(
        Road(
            "Lake Rd",
            [(lake_w, LAKE_RD_V), (RIVER_RD_U, LAKE_RD_V)],
            curbed=[
                (LAKE_CURB[0] - lake_w, LAKE_CURB[1] - lake_w),
                (VILLAGE_W - lake_w, RIVER_RD_U - lake_w),
            ],
            frontage=(30, 75, 70, 120),
        )
    )
    roads.append(
        Road(
            "River Rd",
            [(RIVER_RD_U, 0.0), (RIVER_RD_U, HEIGHT)],
            curbed=[(KETTLE_RD_V, LAKE_RD_V)],
            frontage=(35, 70, 80, 120),
            sides=(1,),
        )
    )
    roads.append(
        Road(
            "Town Line Rd", [(TOWN_LINE_U, 0.0), (TOWN_LINE_U, HEIGHT)], frontage=(35, 80, 80, 120)
        )
    )
    roads.append(
        Road(
            "Kettle Rd",
            [(TOWN_LINE_U, KETTLE_RD_V), (RIVER_RD_U, KETTLE_RD_V)],
            frontage=(30, 75, 70, 120),
        )
    )
    roads.append(
        Road(
            "Cole Rd",
            [(COLE_RD_U, KETTLE_RD_V), (COLE_RD_U, RIDGE_RD_V)],
            frontage=(30, 70, 70, 110),
        )
    )
    roads.append(
        Road(
            "Ridge Rd",
            [(TOWN_LINE_U, RIDGE_RD_V), (RIVER_RD_U, RIDGE_RD_V)],
            frontage=(35, 80, 80, 130),
        )
    )
    roads.append(Road("Stony Hill Rd", list(STONY), frontage=(30, 70, 70, 110)))
    roads.append(
        Road("Hill Rd", [(HILL_U, 0.0), (HILL_U, KETTLE_RD_V)], frontage=(40, 80, 80, 120))
    )
    roads.append(
        Road(
            "North Rd",
            [(NORTH_RD_U, LAKE_RD_V), (NORTH_RD_U, RIDGE_RD_V)],
            frontage=(30, 60, 70, 110),
        )
    )
    return roads


def _curbed_lines(roads: list[Road]):
    import shapely

    out = []
    for r in roads:
        line = shapely.LineString(r.coords)
        for s0, s1 in r.curbed:
            out.append((r.name, shapely.ops.substring(line, s0, s1)))
    return out


# ======================================================================================
# Storm network
# ======================================================================================
@dataclass
class Net:
    structs: list[dict[str, Any]] = field(default_factory=list)
    convs: list[dict[str, Any]] = field(default_factory=list)
    outfalls: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)

    def new_id(self, prefix: str, width: int = 4) -> str:
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}-{n:0{width}d}"

    def add_struct(self, kind: str, u: float, v: float, prefix: str, **kw: Any) -> str:
        sid = kw.pop("struct_id", None) or self.new_id(prefix, 3 if prefix in ("HW", "OF") else 4)
        self.structs.append({"struct_id": sid, "kind": kind, "u": u, "v": v, **kw})
        return sid

    def struct(self, sid: str) -> dict[str, Any]:
        for s in self.structs:
            if s["struct_id"] == sid:
                return s
        raise KeyError(sid)


def _split_at(line, dists):
    import shapely

    cuts = sorted({0.0, line.length, *[d for d in dists if 0 < d < line.length]})
    return [
        shapely.ops.substring(line, a, b)
        for a, b in zip(cuts[:-1], cuts[1:], strict=False)
        if b - a > 1
    ]


def _curbed_graph(roads: list[Road]):
    """Segments of the curbed (piped) streets between junctions, with node coordinates."""
    import shapely

    lines = _curbed_lines(roads)
    # split points: every junction between curbed lines plus the river outfall nodes
    pts: list[tuple[float, float]] = [(RIVER_RD_U, v) for v in RIVER_OF_V]
    pts.append((LAKE_OF_U, LAKE_RD_V))
    geoms = [g for _, g in lines]
    for i, a in enumerate(geoms):
        for b in geoms[i + 1 :]:
            x = a.intersection(b)
            for p in getattr(x, "geoms", [x]):
                if isinstance(p, shapely.Point):
                    pts.append((round(p.x, 3), round(p.y, 3)))
    creek = shapely.LineString(CREEK_LINE)
    segs = []
    for name, g in lines:
        ds = [g.project(shapely.Point(p)) for p in pts if g.distance(shapely.Point(p)) < 0.01]
        for piece in _split_at(g, ds):
            if piece.intersects(creek):
                continue  # bridge: no pipes, its deck drains to the creek
            c = list(piece.coords)
            a = (round(c[0][0], 3), round(c[0][1], 3))
            b = (round(c[-1][0], 3), round(c[-1][1], 3))
            segs.append((name, a, b, piece.length))
    return segs


def _system_of(node: tuple[float, float]) -> str:
    u, v = node
    if abs(v - LAKE_RD_V) < 0.01 and u <= LAKE_CURB[1] + 0.01:
        return "lake"
    if abs(u - RIVER_RD_U) < 0.01:
        return "river"
    return "creek"


def _outfall_nodes() -> dict[tuple[float, float], str]:
    nodes = {}
    for u in CREEK_OF_U:
        nodes[(u, VILLAGE_EW["Front St"])] = "creek"
        nodes[(u, VILLAGE_EW["Water St"])] = "creek"
    for v in RIVER_OF_V:
        nodes[(RIVER_RD_U, v)] = "river"
    nodes[(LAKE_OF_U, LAKE_RD_V)] = "lake"
    return nodes


def _place_cbs(name: str, a, b, length: float) -> list[tuple[float, float]]:
    """Catch basins along a segment (every ~75 m, plus the forced hand-check inlets)."""
    forced = {
        "Hill St": [(HILL_U, HC2_CB_V), (HILL_U, HC1_CBS[0]), (HILL_U, HC1_CBS[1])],
        "River Rd": [(RIVER_RD_U, HC2_CB_V), (RIVER_RD_U, HC3_CB_V)],
    }.get(name, [])
    ax, ay = a
    bx, by = b
    on_seg = [
        p
        for p in forced
        if min(ax, bx) - 0.1 <= p[0] <= max(ax, bx) + 0.1
        and min(ay, by) + 5 < p[1] < max(ay, by) - 5
    ]
    n = max(1, round(length / 75.0))
    out = list(on_seg)
    for k in range(n):
        t = (k + 0.5) / n
        p = _cell_centre(ax + (bx - ax) * t, ay + (by - ay) * t)
        if any(math.hypot(p[0] - q[0], p[1] - q[1]) < 40 for q in forced):
            continue
        if name == "Hill St" and HC1_CBS[0] - 1 < p[1] < HC1_CBS[1] + 1:
            continue  # keep the HC1 frontage free of inlets
        out.append(p)
    out.sort(key=lambda p: math.hypot(p[0] - ax, p[1] - ay))
    return out


def _build_piped(net: Net, roads: list[Road], ground) -> tuple[list, list]:
    """Catch basins, manholes and pipes of the curbed streets; returns (cb_points, edges)."""
    import networkx as nx

    segs = _curbed_graph(roads)
    of_nodes = _outfall_nodes()
    nodes = sorted({p for _, a, b, _ in segs for p in (a, b)}, key=lambda p: (-p[1], p[0]))
    z = {p: ground(*p) for p in nodes}
    degree: dict[tuple[float, float], int] = {}
    for _, a, b, _ in segs:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    node_id = {}
    cb_dead_ends: list[tuple[float, float]] = []
    for p in nodes:
        kind = "manhole" if degree[p] > 1 or p in of_nodes else "catch_basin"
        node_id[p] = net.add_struct(kind, p[0], p[1], "MH" if kind == "manhole" else "CB")
        if kind == "catch_basin":
            cb_dead_ends.append(p)
    # drainage tree per system: cheapest path to an outfall node, uphill is expensive
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    for _, a, b, length in segs:
        if _system_of(a) != _system_of(b):
            continue
        g.add_edge(b, a, weight=length + 60.0 * max(0.0, z[b] - z[a]))  # a drains to b
        g.add_edge(a, b, weight=length + 60.0 * max(0.0, z[a] - z[b]))
    parent: dict[tuple[float, float], tuple[float, float] | None] = {}
    for system in ("creek", "river", "lake"):
        srcs = [p for p, s in of_nodes.items() if s == system]
        sub = g.subgraph([p for p in nodes if _system_of(p) == system])
        _, paths = nx.multi_source_dijkstra(sub, srcs)
        for p in sub.nodes:
            if p not in paths:
                raise RuntimeError(f"demo: node {p} cannot reach a {system} outfall")
            parent[p] = paths[p][-2] if len(paths[p]) > 1 else None
    cb_points: list[tuple[float, float]] = list(cb_dead_ends)
    edges: list[tuple[str, str]] = []
    for name, a, b, length in segs:
        cbs = _place_cbs(name, a, b, length)
        cb_ids = []
        for p in cbs:
            kind = "inlet" if (len(net.structs) % 17 == 5) else "catch_basin"
            cb_ids.append(net.add_struct(kind, p[0], p[1], "CB"))
            cb_points.append(p)
        if parent.get(a) == b:
            chain = [node_id[a], *cb_ids, node_id[b]]
        elif parent.get(b) == a:
            chain = [node_id[b], *reversed(cb_ids), node_id[a]]
        else:  # lateral: runs to the lower end (to River Rd when it joins it)
            sa, sb = _system_of(a), _system_of(b)
            if sa != sb and "river" in (sa, sb):
                lower_b = sb == "river"
            else:
                lower_b = z[b] < z[a]
            chain = [*cb_ids, node_id[b]] if lower_b else [*reversed(cb_ids), node_id[a]]
        edges.extend(zip(chain[:-1], chain[1:], strict=False))
    # outfall pipes from the outfall nodes to the bank
    import shapely

    creek = shapely.LineString(CREEK_LINE)
    of_order = sorted(
        of_nodes.items(),
        key=lambda kv: ({"creek": 0, "river": 1, "lake": 2}[kv[1]], kv[0][0], kv[0][1]),
    )
    for p, system in of_order:
        if system == "creek":
            q = creek.interpolate(creek.project(shapely.Point(p)))
            dv = 1.0 if p[1] > q.y else -1.0
            end = (p[0], q.y + 6.0 * dv)
            water = CREEK
        elif system == "river":
            end = (RIVER_W - 2.0, p[1])
            water = RIVER
        else:
            a, b = LAKE_AB
            vshore = LAKE_C[1] - b * math.sqrt(max(0.0, 1 - ((p[0] - LAKE_C[0]) / a) ** 2))
            end = (p[0], vshore - 2.0)
            water = LAKE
        of_id = _add_outfall(net, end, water)
        edges.append((node_id[p], of_id))
    return cb_points, edges


def _add_outfall(net: Net, end: tuple[float, float], water: tuple[str, str, str]) -> str:
    of_id = net.new_id("OF", 3)
    net.add_struct("outfall", end[0], end[1], "OF", struct_id=of_id)
    net.outfalls.append(
        {
            "outfall_id": of_id,
            "receiving_water": water[1],
            "pwl_id": water[0],
            "u": end[0],
            "v": end[1],
        }
    )
    return of_id


def _ditch_to_water(coords, water_coords, off: float = 5.0):
    """Cut a ditch polyline where it comes within ``off`` metres of a water line."""
    import shapely

    line = shapely.LineString(coords)
    water = shapely.LineString(water_coords)
    x = line.intersection(water)
    if x.is_empty:
        return list(line.coords)
    s = min(line.project(p) for p in getattr(x, "geoms", [x]))
    lo, hi = 0.0, s
    for _ in range(40):
        mid = (lo + hi) / 2
        if line.interpolate(mid).distance(water) > off:
            lo = mid
        else:
            hi = mid
    return list(shapely.ops.substring(line, 0, lo).coords)


def _ditch_systems(net: Net) -> list[dict[str, Any]]:
    """Rural ditches, culverts, headwalls and their outfalls.  Returns the ditch lines."""
    creek_v_cole = float(
        np.interp(COLE_RD_U, [p[0] for p in CREEK_LINE], [p[1] for p in CREEK_LINE])
    )
    wu, eu = COLE_RD_U - 5.0, COLE_RD_U + 5.0
    lines: list[dict[str, Any]] = []

    def ditch(coords, frm=None, to=None, material="grass"):
        lines.append(
            {
                "coords": [tuple(map(float, c)) for c in coords],
                "from_id": frm,
                "to_id": to,
                "kind": "ditch",
                "material": material,
            }
        )

    def culvert(a, b, frm, to, dia, material="CMP", rise=None):
        lines.append(
            {
                "coords": [a, b],
                "from_id": frm,
                "to_id": to,
                "kind": "culvert",
                "material": material,
                "diameter_in": dia,
                "rise_in": rise,
            }
        )

    # 1. Cole Rd north of the brook -> Tamarack Brook
    c = _ditch_to_water([(wu, 2790.0), (wu, 2200.0)], BROOK_LINE)
    of = _add_outfall(net, c[-1], BROOK)
    ditch(c, None, of)
    # 2. Cole Rd between brook and creek, both sides -> Alder Kill (north bank)
    hw_e = net.add_struct("headwall", eu, 1805.0, "HW")
    hw_w = net.add_struct("headwall", wu, 1805.0, "HW")
    of = _add_outfall(net, (wu, creek_v_cole + 7.5), CREEK)
    ditch([(wu, 2245.0), (wu, 1805.0)], None, hw_w)
    ditch([(eu, 2245.0), (eu, 1805.0)], None, hw_e)
    culvert((eu, 1805.0), (wu, 1805.0), hw_e, hw_w, 18.0)
    ditch([(wu, 1805.0), (wu, creek_v_cole + 7.5)], hw_w, of)
    # 3. Cole Rd south of the creek -> Alder Kill (south bank)
    of = _add_outfall(net, (wu, creek_v_cole - 7.5), CREEK)
    ditch([(wu, 1015.0), (wu, creek_v_cole - 7.5)], None, of)
    # 4. Kettle Rd east (south side) -> culverts under Hill Rd and River Rd -> Kenyon River
    kv = KETTLE_RD_V - 5.0
    h1 = net.add_struct("headwall", HILL_U - 5.0, kv, "HW")
    h2 = net.add_struct("headwall", HILL_U + 5.0, kv, "HW")
    h3 = net.add_struct("headwall", RIVER_RD_U - 5.0, kv, "HW")
    h4 = net.add_struct("headwall", RIVER_RD_U + 5.0, kv, "HW")
    of = _add_outfall(net, (RIVER_W - 2.0, kv), RIVER)
    ditch([(COLE_RD_U + 7.5, kv), (HILL_U - 5.0, kv)], None, h1)
    culvert((HILL_U - 5.0, kv), (HILL_U + 5.0, kv), h1, h2, 24.0)
    ditch([(HILL_U + 5.0, kv), (RIVER_RD_U - 5.0, kv)], h2, h3)
    culvert((RIVER_RD_U - 5.0, kv), (RIVER_RD_U + 5.0, kv), h3, h4, 36.0, "RCP", rise=24.0)
    ditch([(RIVER_RD_U + 5.0, kv), (RIVER_W - 2.0, kv)], h4, of, material="riprap")
    # 5. Stony Hill Rd (north-west side) -> headwall at the village corner (piped on)
    (ax, ay), (bx, by) = STONY[1], STONY[2]
    L = math.hypot(bx - ax, by - ay)
    dx, dy = (bx - ax) / L, (by - ay) / L
    nx_, ny_ = -dy, dx
    p0 = (ax + 15 * dx + 5 * nx_, ay + 15 * dy + 5 * ny_)
    p1 = (bx - 15 * dx + 5 * nx_, by - 15 * dy + 5 * ny_)
    hw = net.add_struct("headwall", p1[0], p1[1], "HW")
    ditch([p0, p1], None, hw)
    # 7. Lake Rd east of the lake (south side) -> Tamarack Brook
    c = _ditch_to_water(
        [(LAKE_CURB[1] + 12.5, LAKE_RD_V - 5.0), (1400.0, LAKE_RD_V - 5.0)], BROOK_LINE
    )
    of = _add_outfall(net, c[-1], BROOK)
    ditch(c, None, of)
    return lines, hw


# ======================================================================================
# DEM assembly
# ======================================================================================
def _burn_roads(z, nat, roads, cb_points):
    """Curbed streets: 1-cell trough, raised shoulders, a sag at each catch basin."""
    from scipy import ndimage

    mask = np.zeros(z.shape, bool)
    for _, g in _curbed_lines(roads):
        for r, c in _line_cells(list(g.coords)):
            mask[r, c] = True
    cbm = np.zeros(z.shape, bool)
    for p in cb_points:
        cbm[_rc(*p)] = True
    d_cb = ndimage.distance_transform_edt(~cbm) * CELL
    zr = nat - 0.3 - 0.3 * np.clip(1.0 - d_cb / 40.0, 0.0, 1.0)
    d, (ri, ci) = ndimage.distance_transform_edt(~mask, return_indices=True)
    d = d * CELL
    zr_near = np.where(mask, zr, 0.0)[ri, ci]
    shoulder = (d > 0) & (d <= 10.0 + 1e-6)
    out = z.copy()
    out[mask] = zr[mask]
    out[shoulder] = np.maximum(z, zr_near + 0.15 + 0.02 * d)[shoulder]
    return out


def _burn_ditches(z, nat, ditch_lines):
    """Ditches 0.6 m deep, falling at least 1 cm per cell along the digitised (flow)
    direction, and culverts breached through the road (as in a hydro-conditioned DEM)."""
    prof_by_line: list[Any] = []
    level: dict[str, float] = {}  # water level at headwalls, carried through culverts
    for ln in ditch_lines:
        cells = _line_cells(ln["coords"], step=0.5)
        if ln["kind"] == "culvert":
            top = level.get(ln["from_id"], nat[cells[0]] - 0.6)
            for k, (r, c) in enumerate(cells):
                z[r, c] = min(z[r, c], top - 0.01 * (k + 1))
            end = top - 0.01 * (len(cells) + 1)
            level[ln["to_id"]] = min(level.get(ln["to_id"], end), end)
            prof_by_line.append(None)
            continue
        prof = np.array([nat[r, c] - 0.6 for r, c in cells])
        if ln["from_id"] in level:
            prof[0] = min(prof[0], level[ln["from_id"]] - 0.01)
        for k in range(1, len(prof)):
            prof[k] = min(prof[k], prof[k - 1] - 0.01)
        for (r, c), p in zip(cells, prof, strict=True):
            z[r, c] = min(z[r, c], p)
        prof_by_line.append(((cells[0], float(prof[0])), (cells[-1], float(prof[-1]))))
        if ln["to_id"]:
            level[ln["to_id"]] = min(level.get(ln["to_id"], float(prof[-1])), float(prof[-1]))
    return z, prof_by_line


def _quantise(z: np.ndarray) -> np.ndarray:
    return (np.round(z * 256.0) / 256.0).astype(np.float32)


# ======================================================================================
# Inverts
# ======================================================================================
def _set_inverts(net: Net, edges, ground, rng, fixed: dict[str, float]):
    """Structure and pipe inverts: ~1.8-2.4 m cover, >= 0.5 % slope, falling downstream."""
    import networkx as nx

    g = nx.DiGraph()
    pos = {s["struct_id"]: (s["u"], s["v"]) for s in net.structs}
    g.add_edges_from(edges)
    inv: dict[str, float] = {}
    for n in nx.topological_sort(g):
        u, v = pos[n]
        gr = ground(u, v)
        cover = 1.8 + 0.6 * float(rng.random())
        cand = [gr - cover]
        s = net.struct(n)
        if s["kind"] == "outfall":
            cand = [gr - 0.3]
        if n in fixed:
            cand = [fixed[n]]
        for p in g.predecessors(n):
            pu, pv = pos[p]
            L = math.hypot(u - pu, v - pv)
            cand.append(inv[p] - max(0.005 * L, 0.03))
        inv[n] = round(min(cand), 2)
        s["rim_elev"] = round(gr, 2) if s["kind"] != "outfall" else float("nan")
        s["invert_elev"] = inv[n]
    return inv


# ======================================================================================
# Parcels
# ======================================================================================
def _largest(geom):
    import shapely

    if geom.is_empty:
        return None
    if isinstance(geom, shapely.Polygon):
        return geom
    polys = [g for g in getattr(geom, "geoms", []) if isinstance(g, shapely.Polygon)]
    return max(polys, key=lambda g: g.area) if polys else None


def _frontage_rects(coords, side, rng, fmin, fmax, dmin, dmax, row=7.5):
    import shapely

    out = []
    for (x0, y0), (x1, y1) in zip(coords[:-1], coords[1:], strict=False):
        L = math.hypot(x1 - x0, y1 - y0)
        dx, dy = (x1 - x0) / L, (y1 - y0) / L
        nx_, ny_ = -dy * side, dx * side
        batch = []
        s = 0.0
        while s < L - 1.0:
            s1 = min(L, s + float(rng.uniform(fmin, fmax)))
            if L - s1 < fmin * 0.6:
                s1 = L
            d = float(rng.uniform(dmin, dmax))

            def p(ss, oo, _x0=x0, _y0=y0, _dx=dx, _dy=dy, _nx=nx_, _ny=ny_):
                return (_x0 + _dx * ss + _nx * oo, _y0 + _dy * ss + _ny * oo)

            batch.append(
                shapely.Polygon([p(s, row - 1), p(s1, row - 1), p(s1, row + d), p(s, row + d)])
            )
            s = s1
        out.append(batch)
    return out


def _claim(available, rects, *, min_area=300.0):
    import shapely

    if not rects:
        return available, []
    parts = shapely.intersection(np.array(rects, dtype=object), available)
    kept = []
    for g in parts:
        g = _largest(g)
        if g is not None and g.area >= min_area:
            kept.append(shapely.make_valid(g))
    kept = [_largest(g) for g in kept if _largest(g) is not None]
    if kept:
        available = available.difference(shapely.union_all(kept))
    return available, kept


def _parcels(roads: list[Road], rng: np.random.Generator):
    """Parcel polygons with a zone tag, tiling the town outside roads and waters."""
    import shapely

    a, b = LAKE_AB
    lake = shapely.affinity.scale(shapely.Point(LAKE_C).buffer(1.0, 64), a, b)
    town = shapely.union_all(
        [
            shapely.box(TOWN_LINE_U, 0, RIVER_W, HEIGHT),
            shapely.box(-47.5, 0, TOWN_LINE_U, 600.0),
            shapely.box(-130.0, 0, -47.5, 200.0),
        ]
    ).difference(lake.buffer(2.0))
    row = shapely.union_all(
        [shapely.LineString(r.coords).buffer(7.5, cap_style="flat") for r in roads]
    )
    row = shapely.union_all([row, *[shapely.Point(p).buffer(7.5) for r in roads for p in r.coords]])
    land = town.difference(row)
    available = land
    parcels: list[tuple[Any, str]] = []

    def take(geoms, zone):
        nonlocal available
        for gg in geoms:
            parcels.append((gg, zone))

    specials = [
        (HC1_BOX, "hc1"),
        (HC2_BOX, "hc2"),
        (HC3_BOX, "hc3"),
        (KETTLE_LOT, "kettle"),
        (BIG_LOT, "big"),
        (SEPTIC_LOT, "septic_g"),
        (COMMERCIAL_LOT, "commercial"),
    ]
    for box, zone in specials:
        g = shapely.box(*box).intersection(available)
        available = available.difference(g)
        take([g], zone)

    # riverside strip: front row drains to River Rd, back row to the river
    v = 0.0
    rects_f, rects_b = [], []
    while v < HEIGHT - 1:
        v1 = min(HEIGHT, v + float(rng.uniform(35, 60)))
        if HEIGHT - v1 < 20:
            v1 = HEIGHT
        rects_f.append(shapely.box(RIVER_RD_U, v, CREST_U, v1))
        rects_b.append(shapely.box(CREST_U, v, RIVER_W, v1))
        v = v1
    available, kept = _claim(available, rects_f)
    take(kept, "riverside_front")
    available, kept = _claim(available, rects_b)
    take(kept, "riverside_back")

    # village blocks: two rows of lots per block
    village = shapely.box(VILLAGE_W, VILLAGE_S, VILLAGE_E, VILLAGE_N)
    blocks = available.intersection(village)
    blist = sorted(
        [g for g in getattr(blocks, "geoms", [blocks]) if g.area > 500],
        key=lambda g: (-round(g.centroid.y), round(g.centroid.x)),
    )
    for blk in blist:
        x0, y0, x1, y1 = blk.bounds
        cx, cy = blk.centroid.x, blk.centroid.y
        if (2052.5 < cx < 2202.5) and (1952.5 < cy < 2082.5):
            take([blk], "school")
            available = available.difference(blk)
            continue
        if (2652.5 < cx < 2802.5) and (1682.5 < cy < 1822.5):
            take([blk], "park")
            available = available.difference(blk)
            continue
        north = cy > VILLAGE_EW["North St"]
        wmin, wmax = (18, 27) if north else (13, 21)
        rects = []
        ymid = (y0 + y1) / 2
        for ya, yb in ((y0, ymid), (ymid, y1)):
            x = x0
            while x < x1 - 1:
                xn = min(x1, x + float(rng.uniform(wmin, wmax)))
                if x1 - xn < wmin * 0.6:
                    xn = x1
                rects.append(shapely.box(x, ya, xn, yb))
                x = xn
        available, kept = _claim(available, rects, min_area=150.0)
        take(kept, "village_n" if north else "village")

    # rural frontage lots, road by road
    for r in roads:
        if r.frontage is None:
            continue
        fmin, fmax, dmin, dmax = r.frontage
        for side in r.sides:
            for batch in _frontage_rects(r.coords, side, rng, 0.8 * fmin, 0.8 * fmax, dmin, dmax):
                available, kept = _claim(available, batch)
                zone = "hillst" if r.name == "Hill St" else "rural"
                take(kept, zone)

    # what is left: farms and woodlots (Voronoi split), slivers merged into neighbours
    rest = [g for g in getattr(available, "geoms", [available]) if g.area > 1.0]
    rest.sort(key=lambda g: (-round(g.centroid.y), round(g.centroid.x)))
    small = []
    for comp in rest:
        if comp.area < 1500:
            small.append(comp)
            continue
        n = max(1, int(round(comp.area / 90_000.0)))
        if n == 1:
            take([comp], "farm")
            continue
        x0, y0, x1, y1 = comp.bounds
        seeds = []
        tries = 0
        while len(seeds) < n and tries < 5000:
            tries += 1
            p = shapely.Point(rng.uniform(x0, x1), rng.uniform(y0, y1))
            if comp.contains(p):
                seeds.append(p)
        cells = shapely.voronoi_polygons(shapely.MultiPoint(seeds), extend_to=comp)
        for cell in cells.geoms:
            g = cell.intersection(comp)
            for part in getattr(g, "geoms", [g]):
                if isinstance(part, shapely.Polygon) and part.area > 1.0:
                    if part.area < 1500:
                        small.append(part)
                    else:
                        take([part], "farm")
    protected = {"hc1", "hc2", "hc3", "kettle", "big", "septic_g", "commercial"}
    tree = shapely.STRtree([g for g, _ in parcels])
    for piece in small:
        best, best_len = None, 0.0
        for i in tree.query(piece.buffer(0.5)):
            if parcels[i][1] in protected:
                continue
            shared = piece.buffer(0.5).intersection(parcels[i][0]).area
            if shared > best_len:
                best, best_len = i, shared
        if best is not None:
            g, zone = parcels[best]
            merged = _largest(shapely.union_all([g, piece]).buffer(0.01).buffer(-0.01))
            if merged is not None and merged.area >= g.area:
                parcels[best] = (merged, zone)
    return parcels, land


# ======================================================================================
# Attributes
# ======================================================================================
FIRST = [
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "John",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Charles",
    "Karen",
    "Daniel",
    "Nancy",
    "Matthew",
    "Lisa",
    "Anthony",
    "Margaret",
    "Mark",
    "Sandra",
    "Donald",
    "Ashley",
    "Steven",
    "Kimberly",
    "Paul",
    "Emily",
    "Andrew",
    "Donna",
    "Kevin",
    "Michelle",
    "Brian",
    "Carol",
    "George",
    "Amanda",
    "Edward",
    "Melissa",
]
LAST = [
    "VanDerveer",
    "Schuyler",
    "Mabee",
    "Quackenbush",
    "Ostrander",
    "Vrooman",
    "Lansing",
    "Hoag",
    "Whipple",
    "Brisbin",
    "DeGraff",
    "Ten Eyck",
    "Wemple",
    "Cramer",
    "Hollenbeck",
    "Fonda",
    "Fowler",
    "Sherman",
    "Hayner",
    "Gansevoort",
    "Bemis",
    "Neilson",
    "Searles",
    "Mott",
    "Palmer",
    "Cooper",
    "Doyle",
    "Murphy",
    "Kelly",
    "Sullivan",
    "Rossi",
    "Russo",
    "Kowalski",
    "Nowak",
    "Miller",
    "Smith",
    "Johnson",
    "Brown",
    "Davis",
    "Wilson",
    "Martin",
    "Thompson",
    "White",
    "Clark",
    "Lewis",
    "Walker",
    "Hall",
    "Allen",
    "Young",
    "King",
]
AWAY = [
    "Saratoga Springs, NY 12866",
    "Clifton Park, NY 12065",
    "Albany, NY 12203",
    "Mechanicville, NY 12118",
    "Schenectady, NY 12305",
    "Glens Falls, NY 12801",
    "Naples, FL 34102",
    "Bennington, VT 05201",
    "Brooklyn, NY 11215",
    "Troy, NY 12180",
]
BUSINESS = ["Holdings LLC", "Properties LLC", "Realty Corp", "Enterprises Inc", "Partners LP"]


def _pick(rng, items, probs):
    return items[int(rng.choice(len(items), p=np.array(probs) / sum(probs)))]


def _prop_class(zone: str, acres: float, cx: float, cy: float, rng) -> str:
    near_main = abs(cx - VILLAGE_NS["Main St"]) < 160 and 1600 < cy < 1900
    if zone == "village":
        if near_main:
            return _pick(rng, ["411", "421", "464", "484", "481", "210"], [2, 2, 1, 2, 2, 2])
        return _pick(rng, ["210", "220", "230", "311", "411", "484"], [72, 12, 3, 6, 3, 2])
    if zone in ("village_n", "hillst"):
        return _pick(rng, ["210", "220", "311"], [85, 5, 10])
    if zone in ("riverside_front", "riverside_back"):
        return _pick(rng, ["210", "260", "311", "314"], [70, 10, 10, 10])
    if zone == "rural":
        if acres >= 10:
            return _pick(rng, ["240", "241", "322", "105"], [4, 2, 3, 1])
        return _pick(
            rng, ["210", "220", "270", "311", "312", "314", "260"], [60, 4, 5, 8, 5, 12, 2]
        )
    if zone == "farm":
        if acres >= 10:
            return _pick(
                rng, ["105", "112", "120", "240", "241", "322", "910"], [15, 10, 20, 15, 10, 15, 10]
            )
        return _pick(rng, ["314", "240", "210", "312", "322"], [30, 15, 30, 15, 10])
    return "210"


def _owner(rng, prop_class: str) -> str:
    if prop_class[0] in "47":
        return f"{rng.choice(LAST)} {rng.choice(BUSINESS)}"
    if rng.random() < 0.55:
        return (
            f"{rng.choice(LAST).upper()}, {rng.choice(FIRST).upper()} & {rng.choice(FIRST).upper()}"
        )
    return f"{rng.choice(LAST).upper()}, {rng.choice(FIRST).upper()}"


# ======================================================================================
# The build
# ======================================================================================
@dataclass
class DemoBuild:
    """Everything :func:`build_layers` makes (local coordinates already shifted)."""

    layers: dict[str, Any]
    dem: np.ndarray  # float32 with NODATA
    transform: Any
    info: dict[str, Any]


def build_layers(*, seed: int = DEFAULT_SEED) -> DemoBuild:
    """Build the demo town in memory: canonical layers, DEM array and design notes.

    Parameters
    ----------
    seed : int
        Seed of the numpy random generator (the only source of randomness).

    Returns
    -------
    DemoBuild
        ``layers`` (role -> GeoDataFrame/DataFrame in :data:`CRS`), ``dem`` (float32
        array with ``NODATA``), ``transform`` (affine) and ``info`` (ids of planted
        defects and scenario parcels).
    """
    import geopandas as gpd
    import pandas as pd
    import shapely
    from affine import Affine
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    nat, fields = _terrain(rng)
    roads = _roads()

    def ground_nat(u: float, v: float) -> float:
        return float(nat[_rc(u, v)])

    net = Net()
    cb_points, edges = _build_piped(net, roads, ground_nat)
    ditch_lines, stony_hw = _ditch_systems(net)

    z = _burn_roads(nat, nat, roads, cb_points)
    z, ditch_prof = _burn_ditches(z, nat, ditch_lines)
    # re-open the channels under bridges and embankments
    for d_key, bed_key, prof_key, lim in (
        ("d_creek", "bed_creek", "creek_prof", 8.0),
        ("d_brook", "bed_brook", "brook_prof", 6.0),
    ):
        m = fields[d_key] < lim
        z[m] = np.minimum(z, fields[bed_key] + fields[prof_key])[m]
    z[fields["lake"]] = LAKE_LEVEL
    U, V = fields["U"], fields["V"]
    river = (U >= RIVER_W) & (U < RIVER_E)
    z[river] = _base_terrain(U, V)[river]
    z = _quantise(z)

    def ground(u: float, v: float) -> float:
        return float(z[_rc(u, v)])

    # pipes from the Stony Hill Rd ditch headwall into the village corner manhole
    corner = [
        s for s in net.structs if abs(s["u"] - VILLAGE_W) < 0.01 and abs(s["v"] - VILLAGE_S) < 0.01
    ][0]["struct_id"]
    edges.append((stony_hw, corner))
    fixed = {}
    for ln, prof in zip(ditch_lines, ditch_prof, strict=False):
        if prof is None:
            continue
        if ln["to_id"] and net.struct(ln["to_id"])["kind"] == "headwall":
            fixed[ln["to_id"]] = round(prof[1][1], 2)
    _set_inverts(net, edges, ground, rng, fixed)
    for ln in ditch_lines:  # culvert inverts from the ditch profile at the headwalls
        if ln["kind"] == "culvert":
            s0, s1 = net.struct(ln["from_id"]), net.struct(ln["to_id"])
            us = fixed.get(ln["from_id"], ground(s0["u"], s0["v"]) - 0.6)
            s0["invert_elev"] = round(us, 2)
            s0["rim_elev"] = round(ground(s0["u"], s0["v"]) + 0.6, 2)
            ds = min(us - 0.05, ground(s1["u"], s1["v"]) - 0.6)
            s1["invert_elev"] = round(ds, 2)
            s1["rim_elev"] = round(ground(s1["u"], s1["v"]) + 0.6, 2)
            fixed[ln["to_id"]] = round(ds, 2)
    for s in net.structs:
        if s["kind"] in ("headwall", "outfall") and "invert_elev" not in s:
            s["invert_elev"] = round(ground(s["u"], s["v"]) - 0.3, 2)
            s["rim_elev"] = (
                float("nan") if s["kind"] == "outfall" else round(ground(s["u"], s["v"]) + 0.6, 2)
            )

    # conveyances: pipes of the curbed systems, then ditches and culverts
    pos = {s["struct_id"]: (s["u"], s["v"]) for s in net.structs}
    inv = {s["struct_id"]: s.get("invert_elev", float("nan")) for s in net.structs}
    g_up = _upstream_counts(edges, net)
    convs = []
    for a, b in edges:
        n_up = g_up[b]
        dia = next(
            d
            for lim, d in ((3, 12.0), (8, 15.0), (15, 18.0), (30, 24.0), (60, 30.0), (10**9, 36.0))
            if n_up <= lim
        )
        material = _pick(rng, ["RCP", "RCP", "HDPE", "CMP", "VCP"], [40, 20, 25, 8, 7])
        convs.append(
            {
                "conv_id": net.new_id("P"),
                "kind": "pipe",
                "from_id": a,
                "to_id": b,
                "us_invert": inv[a],
                "ds_invert": inv[b],
                "diameter_in": dia,
                "rise_in": float("nan"),
                "material": material,
                "flow_dir": None,
                "coords": [pos[a], pos[b]],
            }
        )
    for ln in ditch_lines:
        if ln["kind"] == "ditch":
            convs.append(
                {
                    "conv_id": net.new_id("D", 3),
                    "kind": "ditch",
                    "from_id": ln["from_id"],
                    "to_id": ln["to_id"],
                    "us_invert": float("nan"),
                    "ds_invert": float("nan"),
                    "diameter_in": float("nan"),
                    "rise_in": float("nan"),
                    "material": ln["material"],
                    "flow_dir": None,
                    "coords": ln["coords"],
                }
            )
        else:
            convs.append(
                {
                    "conv_id": net.new_id("C", 3),
                    "kind": "culvert",
                    "from_id": ln["from_id"],
                    "to_id": ln["to_id"],
                    "us_invert": inv.get(ln["from_id"])
                    if False
                    else net.struct(ln["from_id"])["invert_elev"],
                    "ds_invert": net.struct(ln["to_id"])["invert_elev"],
                    "diameter_in": ln["diameter_in"],
                    "rise_in": ln["rise_in"] if ln["rise_in"] else float("nan"),
                    "material": ln["material"],
                    "flow_dir": None,
                    "coords": ln["coords"],
                }
            )
    # some pipes lack inverts (as in real data)
    for c in convs:
        if c["kind"] == "pipe" and rng.random() < 0.07:
            c["us_invert"] = c["ds_invert"] = float("nan")

    info: dict[str, Any] = {}
    _plant_network_defects(net, convs, rng, info)

    # nodata hole, then the DEM is final
    u0, v0, u1, v1 = NODATA_HOLE
    hole = (U >= u0) & (U <= u1) & (V >= v0) & (V <= v1)
    z[hole] = NODATA

    # ---- parcels
    parcels_raw, land = _parcels(roads, rng)
    comps = [g for g in getattr(land, "geoms", [land])]
    ctree = shapely.STRtree(comps)
    sewer = shapely.box(*SEWER_DISTRICT)
    road_lines = [(r.name, shapely.LineString(r.coords)) for r in roads]
    rows = []
    for geom, zone in parcels_raw:
        rp = geom.representative_point()
        comp = ctree.query(rp, predicate="intersects")
        rows.append(
            {
                "geometry": geom,
                "zone": zone,
                "cx": rp.x,
                "cy": rp.y,
                "comp": int(comp[0]) if len(comp) else -1,
            }
        )
    pdf = pd.DataFrame(rows)
    # tax map ids: section.sub-block-lot by 500 m map tiles
    pdf["sec"] = 100 + ((pdf["cx"] + 200.0) // 500).astype(int)
    pdf["sub"] = 10 + (pdf["cy"] // 500).astype(int)
    pdf = pdf.sort_values(
        ["sec", "sub", "comp", "cy", "cx"], ascending=[True, True, True, False, True]
    ).reset_index(drop=True)
    pdf["block"] = pdf.groupby(["sec", "sub"])["comp"].rank(method="dense").astype(int)
    pdf["lot"] = pdf.groupby(["sec", "sub", "block"]).cumcount() + 1
    pdf["parcel_id"] = [
        f"{a}.{b}-{c}-{d}"
        for a, b, c, d in zip(pdf["sec"], pdf["sub"], pdf["block"], pdf["lot"], strict=False)
    ]
    attrs = []
    for rec in pdf.itertuples():
        geom = rec.geometry
        acres = geom.area / ACRE_M2
        zone = rec.zone
        pc = _prop_class(zone, acres, rec.cx, rec.cy, rng)
        pc = {
            "school": "612",
            "park": "590",
            "commercial": "452",
            "big": "105",
            "hc1": "210",
            "hc2": "311",
            "hc3": "210",
            "kettle": "210",
            "septic_g": "210",
        }.get(zone, pc)
        # address: nearest road, house number by chainage and side
        rp = shapely.Point(rec.cx, rec.cy)
        name, line = min(road_lines, key=lambda nl: nl[1].distance(geom))
        s = line.project(rp)
        (x0, y0), (x1, y1) = line.coords[0], line.coords[-1]
        side = (x1 - x0) * (rec.cy - y0) - (y1 - y0) * (rec.cx - x0)
        num = int(s // 10) * 2 + (1 if side > 0 else 2)
        front = line.distance(geom) < 9.0
        if pc[0] == "3" and pc != "312" and rng.random() < 0.5:
            address = f"{name}" if front else f"{name} (rear)"
        else:
            address = f"{num} {name}" if front else f"{name} (rear)"
        if zone == "school":
            owner = f"{TOWN} Central School District"
        elif zone == "park":
            owner = f"Village of {TOWN}"
        elif zone == "commercial":
            owner = "Kenyon Plaza Associates LLC"
        else:
            owner = _owner(rng, pc)
        r_ = rng.random()
        if r_ < 0.72 and "(rear)" not in address and any(ch.isdigit() for ch in address):
            owner_address = f"{address}, {TOWN}, NY {ZIP}"
        elif r_ < 0.82:
            owner_address = f"PO Box {int(rng.integers(1, 900))}, {TOWN}, NY {ZIP}"
        else:
            owner_address = (
                f"{int(rng.integers(1, 400))} {rng.choice(['Broadway', 'Union Ave', 'Route 9', 'Maple Ave', 'State St', 'Ocean Blvd'])}, "
                f"{rng.choice(AWAY)}"
            )
        in_sewer = sewer.contains(shapely.Point(rec.cx, rec.cy))
        sewer_v = "public" if in_sewer else "septic"
        if rng.random() < 0.015:
            sewer_v = "unknown"
        if zone in ("septic_g", "riverside_back", "hc3", "kettle", "big", "hc2"):
            sewer_v = "septic"
        if zone == "school":
            sewer_v = "public"
        attrs.append(
            {
                "parcel_id": rec.parcel_id,
                "address": address,
                "owner": owner,
                "owner_address": owner_address,
                "prop_class": pc,
                "acres": round(acres, 3),
                "sewer": sewer_v,
                "septic_failure": None,
                "zone": zone,
                "geometry": geom,
            }
        )
    parcels = gpd.GeoDataFrame(attrs, geometry="geometry", crs=None)

    _landmarks(parcels)
    # ---- scenario parcels
    scen = _pick_scenarios(parcels, net, convs, z)
    for key, code in (
        ("g", "surface_discharge"),
        ("d_fail", "backup"),
        ("storm_conn", "storm_connection"),
    ):
        pid = scen[key]["parcel_id"]
        parcels.loc[parcels["parcel_id"] == pid, "septic_failure"] = code
    info["scenarios"] = scen
    info["hand_checks"] = _hand_checks(parcels, net)
    covered = parcels.geometry.covered_by(shapely.box(0, 0, WIDTH, HEIGHT).buffer(1e-6))
    in_hole = parcels.geometry.intersection(shapely.box(*NODATA_HOLE)).area > 1.0
    info["off_dem"] = sorted(parcels.loc[~covered | in_hole, "parcel_id"])

    # ---- the data-level defects on structures / conveyances
    _plant_data_defects(net, convs, rng, info)

    # ---- assemble layers (local -> real coordinates)
    x0, y0 = ORIGIN

    def gdf(records, geoms, cols):
        frame = gpd.GeoDataFrame(
            {c: [r.get(c) for r in records] for c in cols}, geometry=list(geoms), crs=CRS
        )
        return frame.set_geometry(frame.geometry.translate(x0, y0))

    scols = ["struct_id", "kind", "rim_elev", "invert_elev"]
    structures = gdf(net.structs, [shapely.Point(s["u"], s["v"]) for s in net.structs], scols)
    ccols = [
        "conv_id",
        "kind",
        "from_id",
        "to_id",
        "us_invert",
        "ds_invert",
        "diameter_in",
        "rise_in",
        "material",
        "flow_dir",
    ]
    conveyances = gdf(convs, [shapely.LineString(c["coords"]) for c in convs], ccols)
    statuses = {}
    of_ids = [o["outfall_id"] for o in net.outfalls]
    for k, st in ((3, "flowing"), (8, "suspect"), (15, "not_flowing"), (20, "flowing")):
        if k < len(of_ids):
            statuses[of_ids[k]] = st
    for o in net.outfalls:
        o["status"] = statuses.get(o["outfall_id"], "unknown")
        o["permit_id"] = "NYR20A417"
    outfalls = gdf(
        net.outfalls,
        [shapely.Point(o["u"], o["v"]) for o in net.outfalls],
        ["outfall_id", "receiving_water", "pwl_id", "status", "permit_id"],
    )
    roads_gdf = gdf(
        [{"name": r.name} for r in roads], [shapely.LineString(r.coords) for r in roads], ["name"]
    )
    a, b = LAKE_AB
    lake_poly = shapely.affinity.scale(shapely.Point(LAKE_C).buffer(1.0, 64), a, b)
    wb = [
        (
            {"wb_id": RIVER[0], "name": RIVER[1], "kind": RIVER[2]},
            shapely.box(RIVER_W, 0, RIVER_E, HEIGHT),
        ),
        ({"wb_id": CREEK[0], "name": CREEK[1], "kind": CREEK[2]}, shapely.LineString(CREEK_LINE)),
        ({"wb_id": LAKE[0], "name": LAKE[1], "kind": LAKE[2]}, lake_poly),
        ({"wb_id": BROOK[0], "name": BROOK[1], "kind": BROOK[2]}, shapely.LineString(BROOK_LINE)),
    ]
    waterbodies = gdf([w for w, _ in wb], [g for _, g in wb], ["wb_id", "name", "kind"])
    transform_local = Affine(CELL, 0, 0, 0, -CELL, HEIGHT)
    tmdl_poly = _lake_watershed(z, transform_local)
    tmdl = gdf(
        [
            {
                "tmdl_id": "TMDL-1101-0099-TP",
                "name": "Tamarack Lake Phosphorus TMDL",
                "pollutant": "phosphorus",
                "stormwater_source": True,
                "approved": "2008",
            }
        ],
        [tmdl_poly],
        ["tmdl_id", "name", "pollutant", "stormwater_source", "approved"],
    )
    ms4 = gdf(
        [{"name": f"{TOWN} Urbanized Area (2020 Census)"}], [shapely.Polygon(MS4_AREA)], ["name"]
    )
    sewer_gdf = gdf([{"name": f"Village of {TOWN} Sewer District No. 1"}], [sewer], ["name"])
    pcols = [
        "parcel_id",
        "address",
        "owner",
        "owner_address",
        "prop_class",
        "acres",
        "sewer",
        "septic_failure",
    ]
    parcels_out = gpd.GeoDataFrame(
        parcels[pcols].copy(), geometry=parcels.geometry.translate(x0, y0), crs=CRS
    )
    impairments = pd.DataFrame(
        {
            "wb_id": [CREEK[0], CREEK[0], RIVER[0], LAKE[0]],
            "pollutant": ["phosphorus", "silt/sediment", "PCBs", "phosphorus"],
            "category": ["5", "5", "5", "4a"],
            "list_year": np.array([2018, 2018, 2016, 2008], dtype="int64"),
            "source": [
                "urban/storm runoff",
                "urban/storm runoff",
                "contaminated sediment",
                "urban/storm runoff; agriculture",
            ],
        }
    )
    layers = {
        "parcels": parcels_out,
        "structures": structures,
        "conveyances": conveyances,
        "outfalls": outfalls,
        "roads": roads_gdf,
        "waterbodies": waterbodies,
        "impairments": impairments,
        "tmdl_watersheds": tmdl,
        "ms4_area": ms4,
        "sewer_districts": sewer_gdf,
    }
    transform = Affine(CELL, 0, x0, 0, -CELL, y0 + HEIGHT)
    del ndimage
    return DemoBuild(layers=layers, dem=z, transform=transform, info=info)


def _upstream_counts(edges, net: Net) -> dict[str, int]:
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(s["struct_id"] for s in net.structs)
    g.add_edges_from(edges)
    inlet = {s["struct_id"] for s in net.structs if s["kind"] in ("catch_basin", "inlet")}
    out = {}
    for n in g.nodes:
        out[n] = sum(1 for m in nx.ancestors(g, n) | {n} if m in inlet)
    return out


def _lake_watershed(z: np.ndarray, transform) -> Any:
    """The lake's watershed (phosphorus TMDL area) from the DEM, as one polygon."""
    import pyflwdir
    import shapely
    from rasterio import features

    flw = pyflwdir.from_dem(z.astype(np.float32), nodata=NODATA, transform=transform)
    # the first brook cell below the lake is the lake's outlet
    u, v = BROOK_LINE[0]
    a, b = LAKE_AB
    dx, dy = BROOK_LINE[1][0] - u, BROOK_LINE[1][1] - v
    L = math.hypot(dx, dy)
    px, py = u + dx / L * 8.0, v + dy / L * 8.0
    basins = flw.basins(xy=([px], [py]))
    mask = basins > 0
    polys = [
        shapely.geometry.shape(g)
        for g, val in features.shapes(mask.astype(np.uint8), mask=mask, transform=transform)
        if val == 1
    ]
    poly = max(polys, key=lambda p: p.area)
    poly = shapely.Polygon(poly.exterior).simplify(CELL, preserve_topology=True)
    return poly


def _landmarks(parcels) -> None:
    """A church, the town highway garage and two industrial parcels (in place)."""
    cent = parcels.geometry.centroid
    free = ~parcels["zone"].isin(
        ["hc1", "hc2", "hc3", "kettle", "big", "septic_g", "commercial", "school", "park"]
    )

    def nearest(mask, u, v):
        d = np.hypot(cent.x - u, cent.y - v).where(mask & free)
        return d.idxmin()

    i = nearest(parcels["zone"] == "village", VILLAGE_NS["Main St"] + 20, 1990.0)
    parcels.loc[i, ["prop_class", "owner"]] = ["620", "St. Mary's Church"]
    i = nearest(parcels["zone"] == "rural", 2000.0, KETTLE_RD_V - 60)
    parcels.loc[i, ["prop_class", "owner"]] = ["651", f"Town of {TOWN}"]
    south = (
        parcels["zone"].isin(["farm", "rural"])
        & (cent.x > 2900)
        & (cent.x < RIVER_RD_U)
        & (cent.y < 600)
        & free
    )
    big = parcels[south].sort_values(["acres", "parcel_id"], ascending=[False, True]).index[:2]
    for idx, (pc, owner) in zip(
        big,
        [("710", "Kenyon Valley Paper Co Inc"), ("714", "Adirondack Precast LLC")],
        strict=False,
    ):
        parcels.loc[idx, ["prop_class", "owner"]] = [pc, owner]
        parcels.loc[idx, "owner_address"] = f"PO Box {100 + len(owner)}, {TOWN}, NY {ZIP}"


def _pick_scenarios(parcels, net: Net, convs, z) -> dict[str, dict[str, str]]:
    """Choose the scenario parcels (by design zone and location)."""
    import shapely

    def by_zone(zone):
        return parcels[parcels["zone"] == zone]

    def one(zone):
        return by_zone(zone).iloc[0]

    pipes = shapely.union_all([shapely.LineString(c["coords"]) for c in convs])
    out: dict[str, dict[str, str]] = {}

    def put(key, row, what):
        out[key] = {"parcel_id": row["parcel_id"], "what": what}

    put(
        "a",
        one("big"),
        "6.5-acre farm field west of Cole Rd; drains east into the Cole Rd "
        "ditch (D-series) to an outfall on the Alder Kill",
    )
    put(
        "b",
        one("commercial"),
        "2.0-acre shopping plaza (452) on River Rd; drains east to "
        "River Rd catch basins piped only to Kenyon River outfalls",
    )
    put(
        "c",
        one("kettle"),
        "house lot on the floor of the kettle north of Kettle Rd: "
        "internally drained (closed depression, no inlet)",
    )
    rb = by_zone("riverside_back")
    rb = rb[~rb.geometry.buffer(2.0).intersects(pipes)]
    rb = rb[(rb.geometry.centroid.y > 2700) & (rb["sewer"] == "septic")]
    rb = rb.sort_values("parcel_id")
    put(
        "d",
        rb.iloc[0],
        "riverside lot east of the terrace crest: drains straight to the "
        "Kenyon River, outside the MS4; septic",
    )
    put("d2", rb.iloc[1], "second riverside lot draining straight to the river (septic)")
    put(
        "e",
        one("hc2"),
        "lot on the sharp ridge between Hill St (creek system) and River Rd "
        "(river system): half to each",
    )
    cent = parcels.geometry.centroid
    lake_lots = parcels[(cent.y < LAKE_RD_V) & (parcels["zone"] == "rural")]
    lake_lots = lake_lots.assign(dist=np.hypot(cent.x - LAKE_OF_U - 30, cent.y - LAKE_RD_V))
    lake_lots = lake_lots.sort_values(["dist", "parcel_id"])
    put(
        "f",
        lake_lots.iloc[0],
        "lot south of Lake Rd in the Tamarack Lake phosphorus TMDL "
        "watershed; drains to Lake Rd inlets piped to a lake outfall",
    )
    put(
        "g",
        one("septic_g"),
        "septic lot on Hill St south of the village (outside the sewer "
        "district) draining to a Hill St catch basin piped to an Alder Kill outfall "
        "(tributary to the MS4); recorded failure surface_discharge",
    )
    v = by_zone("village")
    v = v[(v["sewer"] == "public") & (v["prop_class"] == "210")]
    v = v[
        (v.geometry.centroid.x > 2210)
        & (v.geometry.centroid.x < 2345)
        & (v.geometry.centroid.y > 2090)
        & (v.geometry.centroid.y < 2205)
    ]
    put("h", v.sort_values("parcel_id").iloc[0], "one-family village lot on the public sewer")
    farms = parcels[
        (parcels["zone"] == "farm")
        & (parcels["acres"] > 15)
        & (cent.x < 1300)
        & (cent.y < 1600)
        & (cent.y > KETTLE_RD_V)
    ]
    farms = farms.sort_values(["acres", "parcel_id"], ascending=[False, True])
    row = farms.iloc[0]
    parcels.loc[parcels["parcel_id"] == row["parcel_id"], "prop_class"] = "120"
    put("i", row, "field-crop farm (120)")
    west = parcels[parcels.geometry.bounds["minx"] < 0]
    frac = west.geometry.intersection(shapely.box(0, 0, WIDTH, HEIGHT)).area / west.geometry.area
    west = west.assign(frac=frac)
    part = west[(west["frac"] > 0.3) & (west["frac"] < 0.7)].sort_values("parcel_id")
    put("j", part.iloc[0], "lot west of Town Line Rd, about half off the DEM")
    # extra septic failure cases
    put("d_fail", rb.iloc[2], "riverside septic lot with a recorded sewage backup")
    vn = by_zone("village_n")
    vn = vn[(vn["sewer"] == "septic")].sort_values("parcel_id")
    vn = vn[(vn.geometry.centroid.x > 2360) & (vn.geometry.centroid.x < 2495)]
    put(
        "storm_conn",
        vn.iloc[0],
        "septic lot north of the sewer district with a recorded connection to the storm sewer",
    )
    return out


def _hand_checks(parcels, net: Net) -> dict[str, dict[str, Any]]:
    def sid_at(u, v):
        for s in net.structs:
            if abs(s["u"] - u) < 0.01 and abs(s["v"] - v) < 0.01:
                return s["struct_id"]
        raise KeyError((u, v))

    def pid(zone):
        return parcels[parcels["zone"] == zone].iloc[0]["parcel_id"]

    return {
        "HC1": {
            "parcel_id": pid("hc1"),
            "expected": {f"inlet:{sid_at(HILL_U, HC1_CBS[1])}": 1.0},
            "why": "The lot (85 m x 50 m, west side of Hill St) is a plane falling 4 % east "
            "and 1 % north, so every cell runs east or north-east into the Hill St "
            "curb trough between v = 1100 and 1245 m; the trough falls north and has "
            "no inlet between the catch basin at v = 1062.5 (upstream, south of the "
            "lot) and the one at v = 1252.5, which takes all of it.",
        },
        "HC2": {
            "parcel_id": pid("hc2"),
            "expected": {
                f"inlet:{sid_at(HILL_U, HC2_CB_V)}": 0.5,
                f"inlet:{sid_at(RIVER_RD_U, HC2_CB_V)}": 0.5,
            },
            "why": "A sharp north-south ridge crest (u = 3330 m, a cell boundary) splits the "
            "80 m x 40 m lot into equal halves.  The west half falls 3 % west, the "
            "east half about 10 % east, and a shallow east-west V-swale (1 % side "
            "slopes, axis at v = 882.5 m) gathers each half into a straight path to "
            "the sag inlet level with the lot: Hill St (Alder Kill outfall) to the "
            "west, River Rd (Kenyon River outfall) to the east.",
        },
        "HC3": {
            "parcel_id": pid("hc3"),
            "expected": {
                f"inlet:{sid_at(RIVER_RD_U, HC3_CB_V)}": 0.5,
                f"water_direct:{RIVER[0]}": 0.5,
            },
            "why": "The river-terrace crest (u = 3620 m, a cell boundary) bisects the "
            "80 m x 40 m lot.  A V-swale across the terrace (axis v = 2582.5 m) keeps "
            "each half on one straight path: the west half falls 2 % to the River Rd "
            "sag inlet at v = 2582.5, the east half falls 3.8 % straight into the "
            "Kenyon River with no MS4 structure in the way.",
        },
    }


def _plant_network_defects(net: Net, convs, rng, info) -> None:
    """reversed_digitization, uphill_pipe, unsnapped_end, orphan_structure."""
    pipes = [
        c
        for c in convs
        if c["kind"] == "pipe"
        and not math.isnan(c["us_invert"])
        and net.struct(c["to_id"])["kind"] == "manhole"
        and net.struct(c["from_id"])["kind"] in ("catch_basin", "manhole")
    ]
    defects = []
    # reversed digitization: only the line is drawn backwards; ids and inverts are right
    c = pipes[40]
    c["coords"] = c["coords"][::-1]
    defects.append(
        {
            "code": "reversed_digitization",
            "layer": "conveyances",
            "id": c["conv_id"],
            "level": "network",
        }
    )
    # uphill pipe: digitised with the flow, from/to agree, inverts rise 0.25 m downstream
    c = pipes[120]
    c["us_invert"] = round(c["ds_invert"] - 0.25, 2)
    defects.append(
        {"code": "uphill_pipe", "layer": "conveyances", "id": c["conv_id"], "level": "network"}
    )
    # unsnapped end: the downstream end stops 3 m short of its structure, no to_id
    c = pipes[200]
    c["to_id"] = None
    (xa, ya), (xb, yb) = c["coords"][0], c["coords"][-1]
    L = math.hypot(xb - xa, yb - ya)
    c["coords"] = [(xa, ya), (xb - (xb - xa) / L * 3.0, yb - (yb - ya) / L * 3.0)]
    defects.append(
        {"code": "unsnapped_end", "layer": "conveyances", "id": c["conv_id"], "level": "network"}
    )
    # orphan: an abandoned catch basin on North Rd with no pipe
    sid = net.add_struct("catch_basin", NORTH_RD_U, 3102.5, "CB")
    defects.append(
        {"code": "orphan_structure", "layer": "structures", "id": sid, "level": "network"}
    )
    info["network_defects"] = defects


def _plant_data_defects(net: Net, convs, rng, info) -> None:
    defects = []
    # missing id: a catch basin whose id was never entered (pipes name it by nothing)
    idx = next(i for i, s in enumerate(net.structs) if s["kind"] == "catch_basin" and i > 300)
    old = net.structs[idx]["struct_id"]
    net.structs[idx]["struct_id"] = None
    for c in convs:
        if c["from_id"] == old:
            c["from_id"] = None
        if c["to_id"] == old:
            c["to_id"] = None
    defects.append(
        {
            "code": "missing_id",
            "layer": "structures",
            "id": f"structures:{idx + 1}",
            "level": "data",
        }
    )
    # duplicate id: two different pipes share a conv_id
    pipes = [i for i, c in enumerate(convs) if c["kind"] == "pipe"]
    i, j = pipes[300], pipes[301]
    convs[j]["conv_id"] = convs[i]["conv_id"]
    defects.append(
        {"code": "duplicate_id", "layer": "conveyances", "id": convs[i]["conv_id"], "level": "data"}
    )
    defects.append({"code": "dem_nodata", "layer": "dem", "id": "dem", "level": "data"})
    for pid in info["off_dem"]:
        defects.append({"code": "dem_not_covering", "layer": "parcels", "id": pid, "level": "data"})
    info["defects"] = defects + info.pop("network_defects")


def build_demo(out_dir: Path | str, *, seed: int = DEFAULT_SEED) -> tuple[Path, Path]:
    """Build the demo town into ``out_dir``: ``demo.gpkg`` and ``demo_dem.tif``.

    Parameters
    ----------
    out_dir : path
        Folder to write into (created if missing; existing demo files are replaced).
    seed : int
        Random seed; the default reproduces the bundled ``data/layers`` files.

    Returns
    -------
    (Path, Path)
        The GeoPackage and the DEM GeoTIFF.
    """
    import pyogrio
    import rasterio

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    build = build_layers(seed=seed)
    gpkg = out / GPKG_NAME
    dem = out / DEM_NAME
    for p in (gpkg, dem):
        if p.exists():
            p.unlink()
    for role, frame in build.layers.items():
        kwargs: dict[str, Any] = {"layer": role, "driver": "GPKG"}
        if role == "waterbodies":
            kwargs["geometry_type"] = "Unknown"
        pyogrio.write_dataframe(frame, gpkg, **kwargs)
    profile = {
        "driver": "GTiff",
        "width": NCOLS,
        "height": NROWS,
        "count": 1,
        "dtype": "float32",
        "crs": CRS,
        "transform": build.transform,
        "nodata": NODATA,
        "compress": "deflate",
        "predictor": 3,
        "zlevel": 9,
        "tiled": True,
        "blockxsize": 256,
        "blockysize": 256,
    }
    with rasterio.open(dem, "w", **profile) as dst:
        dst.write(build.dem, 1)
        dst.update_tags(AREA_OR_POINT="Area", UNITS="metre", SOURCE="ms4map.demo (synthetic)")
        dst.set_band_unit(1, "metre")
    return gpkg, dem


def _describe(build: DemoBuild) -> str:
    """Python source of the id constants for a fresh build (to paste above)."""
    import pprint

    info = build.info
    return "\n".join(
        [
            f"PLANTED_DEFECTS = {pprint.pformat(info['defects'], width=100)}",
            f"SCENARIO_PARCELS = {pprint.pformat(info['scenarios'], width=100)}",
            f"HAND_CHECKS = {pprint.pformat(info['hand_checks'], width=100)}",
        ]
    )


_SCENARIO_LABELS = {
    "a": "(a) >= 6-acre parcel draining via a ditch to a creek outfall",
    "b": "(b) ~2-acre commercial parcel draining only to river outfalls",
    "c": "(c) parcel in the closed depression (internally drained)",
    "d": "(d) riverside parcel draining straight to the river, septic",
    "d2": "(d) second riverside parcel draining straight to the river",
    "e": "(e) parcel split between a creek-system inlet and a river-system inlet (ridge)",
    "f": "(f) parcel in the lake phosphorus TMDL watershed",
    "g": "(g) septic parcel upstream of a creek outfall (tributary to the MS4)",
    "h": "(h) sewered village parcel",
    "i": "(i) agricultural parcel",
    "j": "(j) parcel partly off the DEM",
    "d_fail": "septic failure `backup` (not tributary to the MS4)",
    "storm_conn": "septic failure `storm_connection` (tributary to the MS4)",
}


def _readme_tables() -> dict[str, str]:
    """Markdown tables of the planted defects, scenario parcels and hand checks, as pasted
    into ``data/layers/README.md`` (rendered from the constants above)."""
    defects = ["| code | layer | id | level |", "|---|---|---|---|"]
    defects += [
        f"| `{d['code']}` | {d['layer']} | `{d['id']}` | {d['level']} |" for d in PLANTED_DEFECTS
    ]
    scen = ["| scenario | parcel_id | what |", "|---|---|---|"]
    scen += [
        f"| {label} | `{SCENARIO_PARCELS[key]['parcel_id']}` | {SCENARIO_PARCELS[key]['what']} |"
        for key, label in _SCENARIO_LABELS.items()
    ]
    hand = ["| check | parcel_id | expected fractions | why |", "|---|---|---|---|"]
    for key, hc in HAND_CHECKS.items():
        exp = ", ".join(f"`{t}` = {f}" for t, f in hc["expected"].items())
        hand.append(f"| {key} | `{hc['parcel_id']}` | {exp} | {hc['why']} |")
    return {
        "defects": "\n".join(defects),
        "scenarios": "\n".join(scen),
        "hand_checks": "\n".join(hand),
    }
