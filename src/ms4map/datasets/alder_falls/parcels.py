"""The demo town's tax parcels: lots along the roads, property classes and owners."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .roads import Road
from .spec import (
    BIG_LOT,
    COMMERCIAL_LOT,
    CREST_U,
    HC1_BOX,
    HC2_BOX,
    HC3_BOX,
    HEIGHT,
    KETTLE_LOT,
    LAKE_AB,
    LAKE_C,
    RIVER_RD_U,
    RIVER_W,
    SEPTIC_LOT,
    TOWN_LINE_U,
    VILLAGE_E,
    VILLAGE_EW,
    VILLAGE_N,
    VILLAGE_NS,
    VILLAGE_S,
    VILLAGE_W,
)


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
