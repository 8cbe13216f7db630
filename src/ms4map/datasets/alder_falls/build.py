"""Build the demo town: all layers in memory (build_layers) and the GeoPackage + DEM on disk (build_demo)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .grid import _rc
from .parcels import AWAY, _owner, _parcels, _pick, _prop_class
from .roads import Road, _roads
from .scenarios import _hand_checks, _pick_scenarios, _plant_data_defects, _plant_network_defects
from .spec import (
    ACRE_M2,
    BROOK,
    BROOK_LINE,
    CELL,
    CREEK,
    CREEK_LINE,
    CRS,
    DEFAULT_SEED,
    DEM_NAME,
    GPKG_NAME,
    HAND_CHECKS,
    HEIGHT,
    KETTLE_RD_V,
    LAKE,
    LAKE_AB,
    LAKE_C,
    LAKE_LEVEL,
    MS4_AREA,
    NCOLS,
    NODATA,
    NODATA_HOLE,
    NROWS,
    ORIGIN,
    PLANTED_DEFECTS,
    RIVER,
    RIVER_E,
    RIVER_RD_U,
    RIVER_W,
    SCENARIO_PARCELS,
    SEWER_DISTRICT,
    TOWN,
    VILLAGE_NS,
    VILLAGE_S,
    VILLAGE_W,
    WIDTH,
    ZIP,
)
from .storm import Net, _build_piped, _ditch_systems, _set_inverts
from .terrain import _base_terrain, _burn_ditches, _burn_roads, _quantise, _terrain


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
    from affine import Affine

    rng = np.random.default_rng(seed)
    terrain = _terrain_and_streets(rng)
    z = terrain["z"]
    U, V = terrain["fields"]["U"], terrain["fields"]["V"]
    _set_all_inverts(terrain, rng)
    convs = _conveyance_records(terrain, rng)
    info: dict[str, Any] = {}
    _plant_network_defects(terrain["net"], convs, rng, info)

    # nodata hole, then the DEM is final
    u0, v0, u1, v1 = NODATA_HOLE
    hole = (U >= u0) & (U <= u1) & (V >= v0) & (V <= v1)
    z[hole] = NODATA

    parcels = _parcel_table(terrain["roads"], rng)
    _scenarios(parcels, terrain["net"], convs, z, rng=rng, info=info)
    layers = _assemble_layers(terrain, convs, parcels)
    x0, y0 = ORIGIN
    transform = Affine(CELL, 0, x0, 0, -CELL, y0 + HEIGHT)
    return DemoBuild(layers=layers, dem=z, transform=transform, info=info)


def _terrain_and_streets(rng: np.random.Generator) -> dict[str, Any]:
    """Stage 1: the terrain, the roads, the piped and ditch systems, burnt into the DEM."""
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

    return {
        "z": z,
        "fields": fields,
        "roads": roads,
        "net": net,
        "edges": edges,
        "ditch_lines": ditch_lines,
        "ditch_prof": ditch_prof,
        "stony_hw": stony_hw,
        "ground": ground,
    }


def _set_all_inverts(terrain: dict[str, Any], rng: np.random.Generator) -> None:
    """Stage 2: structure inverts and rims from the DEM, culverts from the ditch profile."""
    net, edges, ground = terrain["net"], terrain["edges"], terrain["ground"]
    ditch_lines, ditch_prof, stony_hw = (
        terrain["ditch_lines"],
        terrain["ditch_prof"],
        terrain["stony_hw"],
    )
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


def _conveyance_records(terrain: dict[str, Any], rng: np.random.Generator) -> list[dict[str, Any]]:
    """Stage 3: the conveyance records: pipes (sized by what drains to them), ditches, culverts."""
    net, edges, ditch_lines = terrain["net"], terrain["edges"], terrain["ditch_lines"]
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

    return convs


def _parcel_table(roads: list[Road], rng: np.random.Generator) -> Any:
    """Stage 4: the tax parcels with ids, addresses, owners, property classes and sewer."""
    import geopandas as gpd
    import pandas as pd
    import shapely

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

    return parcels


def _scenarios(
    parcels: Any, net: Net, convs: list, z: np.ndarray, *, rng: np.random.Generator, info: dict
) -> None:
    """Stage 5: landmarks, scenario parcels, hand checks, off-DEM parcels, data defects."""
    import shapely

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


def _assemble_layers(terrain: dict[str, Any], convs: list, parcels: Any) -> dict[str, Any]:
    """Stage 6: the canonical layers in real coordinates (local metres + :data:`ORIGIN`)."""
    import geopandas as gpd
    import pandas as pd
    import shapely
    from affine import Affine

    net, roads, z = terrain["net"], terrain["roads"], terrain["z"]
    sewer = shapely.box(*SEWER_DISTRICT)
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
    return layers


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
