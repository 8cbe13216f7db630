"""The demo town's roads: village streets, rural roads, and their curbed stretches."""

from __future__ import annotations

from dataclasses import dataclass, field

from .spec import (
    COLE_RD_U,
    HEIGHT,
    HILL_U,
    KETTLE_RD_V,
    LAKE_CURB,
    LAKE_RD_V,
    NORTH_RD_U,
    RIDGE_RD_V,
    RIVER_RD_U,
    STONY,
    TOWN_LINE_U,
    VILLAGE_EW,
    VILLAGE_NS,
    VILLAGE_S,
    VILLAGE_W,
)


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
