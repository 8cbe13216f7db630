"""The bundled demo town: deterministic, canonical, hydrologically as designed."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pyflwdir
import pyogrio
import pytest
import rasterio
import shapely
from rasterio import features
from scipy import ndimage

from ms4map.core.schema import INLET_KINDS, LAYERS
from ms4map.datasets import alder_falls as demo
from ms4map.datasets.alder_falls import build as demo_build

pytestmark = pytest.mark.slow  # the quick lane (-m "not slow and not browser") skips it

REPO_LAYERS = Path(__file__).resolve().parents[2] / "data" / "layers"


def _read_all(gpkg: Path) -> dict[str, pd.DataFrame]:
    names = [n for n, _ in pyogrio.list_layers(gpkg)]
    return {n: pyogrio.read_dataframe(gpkg, layer=n) for n in names}


def _read_dem(path: Path):
    with rasterio.open(path) as src:
        return src.read(1), src.profile, src.transform


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    gpkg, dem = demo.build_demo(out)
    layers = _read_all(gpkg)
    array, profile, transform = _read_dem(dem)
    return {
        "gpkg": gpkg,
        "dem": dem,
        "layers": layers,
        "array": array,
        "profile": profile,
        "transform": transform,
    }


def _assert_same_layers(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True, obj=name)


# -- determinism and the committed files ------------------------------------------------
def test_rebuild_gives_identical_layers_and_dem(built, tmp_path):
    gpkg, dem = demo.build_demo(tmp_path)
    _assert_same_layers(built["layers"], _read_all(gpkg))
    array, profile, transform = _read_dem(dem)
    np.testing.assert_array_equal(array, built["array"])
    assert transform == built["transform"]


def test_committed_files_equal_a_fresh_build(built):
    gpkg, dem = REPO_LAYERS / "demo.gpkg", REPO_LAYERS / "demo_dem.tif"
    assert gpkg.exists() and dem.exists(), "run `ms4map demo` to regenerate data/layers"
    _assert_same_layers(built["layers"], _read_all(gpkg))
    array, profile, transform = _read_dem(dem)
    np.testing.assert_array_equal(array, built["array"])
    assert transform == built["transform"]
    size = gpkg.stat().st_size + dem.stat().st_size
    assert size < 10_000_000


# -- schema ---------------------------------------------------------------------------------
def test_layers_and_columns_are_canonical(built):
    layers = built["layers"]
    assert set(layers) == set(LAYERS)
    for name, spec in LAYERS.items():
        frame = layers[name]
        cols = [c for c in frame.columns if c != "geometry"]
        assert cols == spec.column_names, name
        if spec.geometry is None:
            assert "geometry" not in frame.columns
        else:
            assert frame.crs.to_epsg() == 26918, name
    for spec_name in ("structures", "conveyances", "outfalls", "parcels"):
        spec = LAYERS[spec_name]
        for col in spec.columns:
            if col.values:
                vals = set(layers[spec_name][col.name].dropna())
                assert vals <= set(col.values), (spec_name, col.name, vals - set(col.values))


# -- parcels --------------------------------------------------------------------------------
def test_parcels_tile_the_land(built):
    parcels = built["layers"]["parcels"]
    assert 2500 <= len(parcels) <= 3500
    assert parcels["parcel_id"].is_unique
    assert parcels["parcel_id"].str.fullmatch(r"\d{3}\.\d{2}-\d+-\d+").all()
    assert parcels.geometry.is_valid.all()
    left, right = parcels.sindex.query(parcels.geometry, predicate="intersects")
    pairs = left < right
    overlap = shapely.area(
        shapely.intersection(
            parcels.geometry.values[left[pairs]], parcels.geometry.values[right[pairs]]
        )
    )
    assert overlap.max() < 1.0
    wb = built["layers"]["waterbodies"]
    water = shapely.union_all(wb.geometry[wb.geom_type == "Polygon"].values)
    assert shapely.area(shapely.intersection(parcels.geometry.values, water)).max() < 1.0
    np.testing.assert_allclose(parcels["acres"], parcels.area / 4046.8564224, atol=0.001)
    assert set(parcels["sewer"]) == {"public", "septic", "unknown"}
    failures = parcels["septic_failure"].dropna()
    assert 2 <= len(failures) <= 4
    assert (parcels.loc[failures.index, "sewer"] == "septic").all()
    classes = set(parcels["prop_class"])
    for needed in ("210", "220", "240", "311", "612", "620", "651", "710"):
        assert needed in classes
    assert any(c.startswith("1") for c in classes) and any(c.startswith("4") for c in classes)
    village = parcels[parcels.within(shapely.box(*_real(demo.SEWER_DISTRICT)))]
    assert (village["acres"].median() > 0.1) and (village["acres"].median() < 0.5)


def _real(box):
    x0, y0 = demo.ORIGIN
    return (box[0] + x0, box[1] + y0, box[2] + x0, box[3] + y0)


# -- network ---------------------------------------------------------------------------------
def _defect_ids(code: str) -> list[str]:
    return [d["id"] for d in demo.PLANTED_DEFECTS if d["code"] == code]


def test_outfalls_sit_on_the_water(built):
    outfalls = built["layers"]["outfalls"]
    wb = built["layers"]["waterbodies"].set_index("wb_id")
    assert len(outfalls) >= 20 and outfalls["outfall_id"].is_unique
    for row in outfalls.itertuples():
        dist = wb.geometry.distance(row.geometry)
        assert dist.min() < 10.0, row.outfall_id
        assert dist.idxmin() == row.pwl_id
        assert wb.loc[row.pwl_id, "name"] == row.receiving_water
    assert set(outfalls["pwl_id"]) >= {"1101-0045", "1101-0012", "1101-0099"}
    assert (outfalls["status"] == "unknown").mean() > 0.7
    structures = built["layers"]["structures"].set_index("struct_id", drop=False)
    for row in outfalls.itertuples():
        s = structures.loc[row.outfall_id]
        assert s["kind"] == "outfall" and s.geometry.distance(row.geometry) < 0.01


def _struct_ids(structures) -> list[str]:
    """struct_id, or the loader's generated ``structures:<fid>`` when blank."""
    return [
        sid if isinstance(sid, str) and sid else f"structures:{i + 1}"
        for i, sid in enumerate(structures["struct_id"])
    ]


def _flow_graph(layers) -> nx.DiGraph:
    """Structure graph from from_id/to_id (blank ids resolved by position)."""
    structures = layers["structures"]
    ids = _struct_ids(structures)
    at = {
        (round(p.x, 2), round(p.y, 2)): sid for p, sid in zip(structures.geometry, ids, strict=True)
    }
    conv = layers["conveyances"]
    unsnapped = set(_defect_ids("unsnapped_end"))
    g = nx.DiGraph()
    g.add_nodes_from(ids)
    for row in conv.itertuples():
        c = row.geometry.coords
        a = (
            row.from_id
            if isinstance(row.from_id, str)
            else at.get((round(c[0][0], 2), round(c[0][1], 2)))
        )
        b = (
            row.to_id
            if isinstance(row.to_id, str)
            else at.get((round(c[-1][0], 2), round(c[-1][1], 2)))
        )
        if b is None and row.conv_id in unsnapped:  # planted: 3 m short, no to_id
            end = shapely.Point(c[-1])
            b = min(at.items(), key=lambda kv: end.distance(shapely.Point(kv[0])))[1]
        if a is not None and b is not None:
            g.add_edge(a, b, conv_id=row.conv_id)
    return g


def test_every_system_drains_to_one_outfall(built):
    layers = built["layers"]
    structures = layers["structures"]
    g = _flow_graph(layers)
    outfall_ids = set(layers["outfalls"]["outfall_id"])
    assert nx.is_directed_acyclic_graph(g)
    assert max(d for _, d in g.out_degree()) == 1  # trees: one way out of every structure
    orphan = set(_defect_ids("orphan_structure"))
    for sid in _struct_ids(structures):
        if sid in orphan:
            assert g.degree(sid) == 0
            continue
        reach = (nx.descendants(g, sid) | {sid}) & outfall_ids
        # ditch starts have no structure, but every structure reaches exactly one outfall
        assert len(reach) == 1, sid
    # conveyances without ids at both ends are ditch starts or the missing-id defect
    conv = layers["conveyances"]
    free = conv[conv["from_id"].isna()]
    assert set(free["kind"]) <= {"ditch", "pipe"}
    assert (free["kind"] == "pipe").sum() == 1


def test_inverts_fall_downstream_except_the_planted_ones(built):
    layers = built["layers"]
    conv = layers["conveyances"]
    pipes = conv[(conv["kind"] != "ditch") & conv["us_invert"].notna()]
    assert len(pipes) / (conv["kind"] == "pipe").sum() > 0.85
    uphill = set(_defect_ids("adverse_slope"))
    falling = pipes["us_invert"] > pipes["ds_invert"]
    assert set(pipes.loc[~falling, "conv_id"]) == uphill
    # cover: inverts 1.0-4.5 m below the DEM at catch basins and manholes
    s = layers["structures"]
    s = s[s["kind"].isin(["catch_basin", "inlet", "manhole"]) & s["invert_elev"].notna()]
    cover = s["rim_elev"] - s["invert_elev"]
    assert cover.between(1.0, 4.5).all(), cover.describe()
    arr, t = built["array"], built["transform"]
    rows, cols = rasterio.transform.rowcol(t, s.geometry.x, s.geometry.y)
    np.testing.assert_allclose(arr[rows, cols], s["rim_elev"], atol=0.01)


def test_planted_network_defects_are_there(built):
    layers = built["layers"]
    conv = layers["conveyances"].set_index("conv_id", drop=False)
    structures = layers["structures"]
    pos = {r.struct_id: r.geometry for r in structures.itertuples() if isinstance(r.struct_id, str)}
    (uid,) = _defect_ids("unsnapped_end")
    row = conv.loc[uid]
    end = shapely.Point(row.geometry.coords[-1])
    gap = min(end.distance(p) for p in pos.values())
    assert pd.isna(row.to_id) and 2.5 < gap < 3.5
    (rid,) = _defect_ids("reversed_digitization")
    row = conv.loc[rid]  # drawn backwards: starts at its to_id, inverts and ids are right
    assert shapely.Point(row.geometry.coords[0]).distance(pos[row.to_id]) < 0.01
    assert shapely.Point(row.geometry.coords[-1]).distance(pos[row.from_id]) < 0.01
    assert row.us_invert > row.ds_invert
    (pid,) = _defect_ids("adverse_slope")
    assert conv.loc[pid].us_invert < conv.loc[pid].ds_invert
    (oid,) = _defect_ids("orphan_structure")
    orphan = pos[oid]
    assert min(orphan.distance(g) for g in conv.geometry) > 50.0
    (sid,) = _defect_ids("missing_id")
    fid = int(sid.split(":")[1])
    assert pd.isna(structures.iloc[fid - 1]["struct_id"])
    (did,) = _defect_ids("duplicate_id")
    assert (layers["conveyances"]["conv_id"] == did).sum() == 2
    assert layers["conveyances"]["conv_id"].duplicated().sum() == 1
    assert structures["struct_id"].dropna().is_unique


# -- DEM -------------------------------------------------------------------------------------
def test_dem_profile(built):
    p = built["profile"]
    assert p["crs"].to_epsg() == 26918 and p["dtype"] == "float32"
    assert p["nodata"] == demo.NODATA and p["compress"].lower() == "deflate"
    arr = built["array"]
    hole = arr == demo.NODATA
    assert 5 <= hole.sum() <= 100
    assert 50 < arr[~hole].min() and arr[~hole].max() < 200


def test_dem_has_a_closed_depression_with_a_parcel_on_its_floor(built):
    arr = built["array"].astype("float64")
    filled, _ = pyflwdir.dem.fill_depressions(built["array"], nodata=demo.NODATA)
    depth = np.where(arr == demo.NODATA, 0.0, filled - arr)
    depth[:20, :] = depth[-20:, :] = depth[:, :20] = depth[:, -20:] = 0.0
    assert depth.max() >= 1.0
    lab, _ = ndimage.label(depth > 0.01)
    kettle = lab == lab.flat[np.argmax(depth)]
    assert kettle.sum() * 25.0 >= 2000.0
    t = built["transform"]
    parcels = built["layers"]["parcels"].set_index("parcel_id")
    pid = demo.SCENARIO_PARCELS["c"]["parcel_id"]
    cells = features.rasterize([(parcels.geometry[pid], 1)], out_shape=arr.shape, transform=t)
    assert cells.sum() > 0 and kettle[cells.astype(bool)].all()
    s = built["layers"]["structures"]
    rows, cols = rasterio.transform.rowcol(t, s.geometry.x, s.geometry.y)
    assert not kettle[rows, cols].any()


def test_dem_does_not_cover_the_listed_parcels(built):
    parcels = built["layers"]["parcels"]
    with rasterio.open(built["dem"]) as src:
        bounds = shapely.box(*src.bounds)
    off = set(parcels.loc[~parcels.covered_by(bounds.buffer(1e-6)), "parcel_id"])
    hole = shapely.box(*_real(demo.NODATA_HOLE))
    on_hole = set(parcels.loc[parcels.intersection(hole).area > 1.0, "parcel_id"])
    assert off and on_hole
    assert off | on_hole == set(_defect_ids("dem_not_covering"))
    assert 1 <= len(off) <= 20
    frac = parcels.set_index("parcel_id").loc[demo.SCENARIO_PARCELS["j"]["parcel_id"]]
    share = frac.geometry.intersection(bounds).area / frac.geometry.area
    assert 0.3 < share < 0.7


# -- scenarios and hand checks -----------------------------------------------------------
def test_constants_name_real_features(built):
    layers = built["layers"]
    ids = {
        "parcels": set(layers["parcels"]["parcel_id"]),
        "structures": set(layers["structures"]["struct_id"].dropna()),
        "conveyances": set(layers["conveyances"]["conv_id"]),
    }
    for d in demo.PLANTED_DEFECTS:
        assert d["level"] in ("data", "network")
        if d["layer"] in ids and d["code"] != "missing_id":
            assert d["id"] in ids[d["layer"]], d
    for key, sc in demo.SCENARIO_PARCELS.items():
        assert sc["parcel_id"] in ids["parcels"], key
    for hc in demo.HAND_CHECKS.values():
        assert hc["parcel_id"] in ids["parcels"]
        assert math.isclose(sum(hc["expected"].values()), 1.0)
    readme = (REPO_LAYERS / "README.md").read_text()
    for table in demo_build._readme_tables().values():
        assert table in readme, "regenerate the README tables with demo_build._readme_tables()"
    for d in demo.PLANTED_DEFECTS:
        assert f"`{d['id']}`" in readme
    for sc in demo.SCENARIO_PARCELS.values():
        assert sc["parcel_id"] in readme


@pytest.fixture(scope="module")
def routed(built):
    """D8 on the DEM with inlets, open conveyances and waters as outlets (a test oracle)."""
    layers, arr, t = built["layers"], built["array"], built["transform"]
    label = np.zeros(arr.shape, np.int32)
    names: dict[int, str] = {}
    s = layers["structures"]
    inl = s[s["kind"].isin(INLET_KINDS) & s["struct_id"].notna()]
    rows, cols = rasterio.transform.rowcol(t, inl.geometry.x, inl.geometry.y)
    for k, (sid, r, c) in enumerate(zip(inl["struct_id"], rows, cols, strict=True), start=1):
        label[r, c] = k
        names[k] = f"inlet:{sid}"
    k = len(names)
    for row in layers["waterbodies"].itertuples():
        k += 1
        geom = row.geometry if row.geometry.geom_type == "Polygon" else row.geometry.buffer(2.6)
        m = features.rasterize([(geom, 1)], out_shape=arr.shape, transform=t).astype(bool)
        label[m & (label == 0)] = k
        names[k] = f"water_direct:{row.wb_id}"
    conv = layers["conveyances"]
    for row in conv[conv["kind"] == "ditch"].itertuples():
        k += 1
        m = features.rasterize(
            [(row.geometry, 1)], out_shape=arr.shape, transform=t, all_touched=True
        ).astype(bool)
        label[m & (label == 0)] = k
        names[k] = f"conveyance:{row.conv_id}"
    nod = arr == demo.NODATA
    edge = np.zeros(arr.shape, bool)
    edge[0, :] = edge[-1, :] = edge[:, 0] = edge[:, -1] = True
    edge |= ndimage.binary_dilation(nod) & ~nod
    pits = np.flatnonzero(((label > 0) | edge).ravel())
    _, d8 = pyflwdir.dem.fill_depressions(arr, nodata=demo.NODATA, idxs_pit=pits)
    flw = pyflwdir.from_array(d8, ftype="d8", transform=t, check_ftype=False)
    idxs = np.flatnonzero(label.ravel() > 0)
    basins = flw.basins(idxs=idxs, ids=label.ravel()[idxs].astype(np.int32))
    parcels = layers["parcels"].set_index("parcel_id")

    def fractions(pid: str) -> dict[str, float]:
        cells = features.rasterize(
            [(parcels.geometry[pid], 1)], out_shape=arr.shape, transform=t
        ).astype(bool)
        vals, counts = np.unique(basins[cells], return_counts=True)
        return {
            names.get(int(v), "unknown"): n / cells.sum() for v, n in zip(vals, counts, strict=True)
        }

    return fractions


@pytest.mark.parametrize("check", sorted(demo.HAND_CHECKS))
def test_hand_check_fractions(routed, check):
    hc = demo.HAND_CHECKS[check]
    got = routed(hc["parcel_id"])
    assert set(got) == set(hc["expected"]), got
    for target, frac in hc["expected"].items():
        assert got[target] == pytest.approx(frac, abs=0.02)


def _outfall_of_inlets(layers) -> dict[str, str]:
    g = _flow_graph(layers)
    outfalls = layers["outfalls"].set_index("outfall_id")
    out = {}
    for sid in g.nodes:
        reach = (nx.descendants(g, sid) | {sid}) & set(outfalls.index)
        if len(reach) == 1:
            out[f"inlet:{sid}"] = outfalls.loc[reach.pop(), "pwl_id"]
    return out


def test_scenarios_drain_as_designed(built, routed):
    layers = built["layers"]
    water_of = _outfall_of_inlets(layers)
    sc = {k: v["parcel_id"] for k, v in demo.SCENARIO_PARCELS.items()}
    # (b) commercial parcel: only river-system inlets
    got = routed(sc["b"])
    assert all(water_of.get(k) == "1101-0012" for k in got), got
    # (d) riverside parcels: straight to the river, septic
    parcels = layers["parcels"].set_index("parcel_id")
    for key in ("d", "d2"):
        assert routed(sc[key]) == {"water_direct:1101-0012": 1.0}
        assert parcels.loc[sc[key], "sewer"] == "septic"
    # (a) mostly to the Cole Rd ditch (Alder Kill outfall); (g) to creek-system inlets
    got = routed(sc["a"])
    assert sum(v for k, v in got.items() if k.startswith("conveyance:D-")) >= 0.8, got
    got = routed(sc["g"])
    assert all(water_of.get(k) == "1101-0045" for k in got), got
    assert parcels.loc[sc["a"], "acres"] >= 6.0
    assert parcels.loc[sc["b"], "prop_class"].startswith("4")
    assert 1.8 < parcels.loc[sc["b"], "acres"] < 2.2
    assert parcels.loc[sc["i"], "prop_class"].startswith("1")
    assert parcels.loc[sc["h"], "sewer"] == "public"
    assert parcels.loc[sc["g"], "sewer"] == "septic"
    assert parcels.loc[sc["g"], "septic_failure"] == "surface_discharge"
    # (f) in the TMDL watershed, draining mostly to lake-system inlets
    tmdl = layers["tmdl_watersheds"].geometry.iloc[0]
    inside = parcels.geometry[sc["f"]].intersection(tmdl).area
    assert inside > 0.8 * parcels.geometry[sc["f"]].area
    got = routed(sc["f"])
    assert sum(v for k, v in got.items() if water_of.get(k) == "1101-0099") > 0.7, got
    # the lake system lies in the TMDL watershed
    lake_of = layers["outfalls"].query("pwl_id == '1101-0099'")
    assert len(lake_of) >= 1 and lake_of.geometry.within(tmdl.buffer(10)).all()
    g = _flow_graph(layers)
    structures = layers["structures"].assign(sid=_struct_ids(layers["structures"]))
    upstream = set().union(*(nx.ancestors(g, o) for o in lake_of["outfall_id"]))
    lake_system = structures[structures["sid"].isin(upstream)]
    assert len(lake_system) >= 3 and lake_system.geometry.within(tmdl).all()
