"""The demo town's scenario parcels, hand checks and planted defects, picked from the built layers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .spec import (
    HC1_CBS,
    HC2_CB_V,
    HC3_CB_V,
    HEIGHT,
    HILL_U,
    KETTLE_RD_V,
    LAKE_OF_U,
    LAKE_RD_V,
    NORTH_RD_U,
    RIVER,
    RIVER_RD_U,
    WIDTH,
)
from .storm import Net


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
    """reversed_digitization, adverse_slope, unsnapped_end, orphan_structure."""
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
    # adverse slope: digitised with the flow, from/to agree, inverts rise 0.25 m downstream
    # (the ids win; QA adverse_slope, docs/network.md)
    c = pipes[120]
    c["us_invert"] = round(c["ds_invert"] - 0.25, 2)
    defects.append(
        {"code": "adverse_slope", "layer": "conveyances", "id": c["conv_id"], "level": "network"}
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
