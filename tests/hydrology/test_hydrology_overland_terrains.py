"""Overland routing on designed terrains, each answer worked out by hand (``terrains.py``).

The rule under test (docs/hydrology.md): water that reaches an inlet, an open MS4
conveyance or a water leaves the surface there, so those cells are outlets of the
conditioning, like the DEM edge; only depressions that hold no target are filled.
"""

from __future__ import annotations

import math

import geopandas as gpd
import numpy as np
import pytest
import shapely
import terrains as T
from test_hydrology_overland_fixtures import CRS18, dem, xy

from ms4map import hydrology, pipeline


def _route(t: T.Terrain, **kw):
    return hydrology.route(dem(t.z), inlets=t.inlet_gdf(), waterbodies=t.water_gdf(), **kw)


def _shares(res, t: T.Terrain, lot: str) -> dict[str, float]:
    """``{target_id: share of the lot's cells}`` (kind:id for special targets)."""
    rs, cs = t.lot_cells(lot)
    lab = res.labels[rs, cs].ravel()
    tg = res.targets
    u, n = np.unique(lab, return_counts=True)
    out = {}
    for label, k in zip(u, n, strict=True):
        kind, tid = tg.loc[label, "target_kind"], tg.loc[label, "target_id"]
        out[tid if kind in ("inlet", "water_direct") else f"{kind}:{tid}"] = k / lab.size
    return out


@pytest.fixture(scope="module")
def street():
    t = T.curbed_street()
    return t, _route(t)


@pytest.mark.parametrize("side", ["N", "S"])
def test_curbed_street_lots_drain_to_their_own_sides_inlets(street, side):
    t, res = street
    west, east = ("IN1", "IN2") if side == "N" else ("IS1", "IS2")
    for lot, box in t.lots.items():
        if not lot.startswith(side):
            continue
        share = T.street_share(box)  # by hand: columns west of the gutter's high point
        expected = {k: v for k, v in {west: share, east: 1 - share}.items() if v > 0}
        got = _shares(res, t, lot)
        assert got.keys() == expected.keys(), (lot, got)
        for k, v in expected.items():
            assert got[k] == pytest.approx(v, abs=1e-9), (lot, got)


def test_curbed_street_every_lot_at_least_99_percent_to_the_streets_inlets(street):
    t, res = street
    for lot in t.lots:
        got = _shares(res, t, lot)
        assert sum(v for k, v in got.items() if k in t.inlets) >= 0.99, (lot, got)


def test_curbed_street_each_inlet_takes_its_own_gutter_segment(street):
    t, res = street
    for row, (west, east) in {26: ("IN1", "IN2"), 34: ("IS1", "IS2")}.items():
        ids = res.targets["target_id"].reindex(res.labels[row, 10:150]).to_numpy()
        cols = np.arange(10, 150)
        # the gutter's high point lies between columns 79 and 80
        assert (ids[cols <= 79] == west).all() and (ids[cols >= 80] == east).all()


def test_curbed_street_trough_is_not_filled(street):
    t, res = street
    street_rows = res.conditioned[26:35, 10:150] - t.z[26:35, 10:150]
    free = ~res.target_mask[26:35, 10:150]
    assert np.abs(street_rows[free]).max() < 1e-9  # no cell raised towards the spill
    assert len(res.depression_table) == 0


def test_parking_sag_splits_between_its_two_catch_basins():
    t = T.parking_sag()
    got = _shares(_route(t), t, "LOT")
    assert got == pytest.approx({"CB1": 0.5, "CB2": 0.5}, abs=1e-9)


def test_parking_sag_without_inlets_is_a_real_depression():
    t = T.parking_sag(inlets=False)
    res = _route(t)
    assert _shares(res, t, "LOT") == {"depression:DEP1": 1.0}
    dep = res.depression_table.iloc[0]
    assert dep["cells"] == 30 * 40  # the whole pavement, by hand
    top = t.z[5:35, 5:45].max() + 0.3  # the curb: the spill level
    assert dep["max_depth_m"] == pytest.approx(top - 100.0, abs=1e-3)


def test_sag_with_inlet_off_its_low_point_still_drains_to_it():
    t = T.off_low_point_sag()
    for depth in (0.0, hydrology.DEFAULTS["inlet_depth_m"]):  # with and without the burn
        res = _route(t, inlet_depth_m=depth)
        assert _shares(res, t, "LOT") == {"CB": 1.0}
        assert len(res.depression_table) == 0
        # the pool at the low point is raised to its spill into the inlet: through
        # (20, 24), 0.12 m above the low point (a noise pit, under min_depth_m)
        rise = res.conditioned[20, 20] - t.z[20, 20]
        assert rise == pytest.approx(0.12, abs=2e-3)


def test_stream_in_a_hollow_takes_both_valley_sides():
    t = T.stream_hollow()
    res = _route(t)
    assert _shares(res, t, "WEST") == {"HOLLOW": 1.0}
    assert _shares(res, t, "EAST") == {"HOLLOW": 1.0}
    assert len(res.depression_table) == 0  # the dammed hollow drains to its stream


def test_ridge_lot_splits_between_two_inlets_as_by_hand():
    t = T.ridge_lot()
    got = _shares(_route(t), t, "RIDGE")
    assert got == pytest.approx({"N": 8 / 20, "S": 12 / 20}, abs=1e-9)


def test_street_drainage_table_gives_the_hand_worked_answers():
    pipeline.clear_cache()
    res = pipeline.run(T.street_workspace())
    d = res.drainage
    sums = d.groupby("parcel_id")["fraction"].sum()
    assert np.allclose(sums.to_numpy(), 1.0, atol=1e-6)
    t = T.curbed_street()
    n4 = d[d["parcel_id"] == "N4"].set_index("target_id")["fraction"]
    assert n4.to_dict() == pytest.approx({"IN1": 0.5, "IN2": 0.5}, abs=1e-6)
    for lot, box in t.lots.items():
        if lot in ("NR", "SR"):
            continue
        share = T.street_share(box)
        west, east = ("IN1", "IN2") if lot.startswith("N") else ("IS1", "IS2")
        got = d[d["parcel_id"] == lot].set_index("target_id")["fraction"]
        assert got.get(west, 0.0) == pytest.approx(share, abs=1e-6), (lot, got)
        assert got.get(east, 0.0) == pytest.approx(1 - share, abs=1e-6), (lot, got)
    assert set(d["target_kind"]) == {"inlet"}
    assert set(d["outfall_id"]) == {"OF1"} and set(d["receiving_water"]) == {"EAST Creek"}
    assert len(sums) == len(t.lots) - 2
    sheds = res.sewersheds
    assert len(sheds) == 1 and sheds.iloc[0]["outfall_id"] == "OF1"


# --------------------------------------------------------------------------------------
# Independent check: brute-force steepest descent on random terrains
# --------------------------------------------------------------------------------------
_STEPS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc]


def _brute_force_terminals(cond, stop, valid, r, c):
    """Cells where a steepest-descent walk from (r, c) ends (every branch of a tie).

    A walk ends on a ``stop`` cell (a target), at a cell without a lower neighbour,
    or on an edge cell whose steepest drop runs to another edge cell (the DEM-edge
    boundary condition of docs/hydrology.md).
    """
    h, w = cond.shape
    pad = np.pad(~valid, 1)
    near = np.zeros((h, w), bool)
    for dr, dc in _STEPS:
        near |= pad[1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w]
    edge = valid & near
    edge[[0, -1], :] = edge[:, [0, -1]] = True
    out, todo, seen = set(), [(r, c)], set()
    while todo:
        r, c = todo.pop()
        if (r, c) in seen:
            continue
        seen.add((r, c))
        if stop[r, c]:
            out.add((r, c))
            continue
        best, nxt = 0.0, []
        for dr, dc in _STEPS:
            rr, cc = r + dr, c + dc
            if not (0 <= rr < h and 0 <= cc < w) or not valid[rr, cc]:
                continue
            slope = (cond[r, c] - cond[rr, cc]) / math.hypot(dr, dc)
            if slope > best + 1e-12:
                best, nxt = slope, [(rr, cc)]
            elif slope > 0 and abs(slope - best) <= 1e-12:
                nxt.append((rr, cc))
        if edge[r, c]:  # an edge cell: on the grid's ring or next to nodata
            inward = [(rr, cc) for rr, cc in nxt if not edge[rr, cc]]
            if len(inward) < len(nxt):  # its steepest drop (or one of a tie) runs along the edge
                out.add((r, c))
            nxt = inward
        if not nxt:
            out.add((r, c))
        todo.extend(nxt)
    return out


def _random_case(seed: int):
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    h, w = rng.integers(18, 30, size=2)
    z = ndimage.gaussian_filter(rng.normal(size=(h, w)), 2.0) * 8.0
    z += rng.normal(size=(h, w)) * 0.05 + 0.02 * np.arange(w)[None, :] * rng.choice([-1, 1])
    z += 100.0
    if seed % 3 == 0:  # a nodata hole
        r, c = rng.integers(4, h - 4), rng.integers(4, w - 4)
        z[r : r + 2, c : c + 3] = np.nan
    cells = {}
    while len(cells) < rng.integers(2, 7):
        rc = (int(rng.integers(0, h)), int(rng.integers(0, w)))
        if np.isfinite(z[rc]):
            cells[f"I{len(cells)}"] = rc
    inlets = gpd.GeoDataFrame(
        {"node_id": list(cells)},
        geometry=[shapely.Point(xy(*rc)) for rc in cells.values()],
        crs=CRS18,
    )
    waters = None
    if seed % 2 == 0:
        a = (float(rng.integers(0, h)), float(rng.integers(0, w)))
        b = (float(rng.integers(0, h)), float(rng.integers(0, w)))
        waters = gpd.GeoDataFrame(
            {"wb_id": ["W"], "name": ["Random Brook"]},
            geometry=[shapely.LineString([xy(*a), xy(*b)])],
            crs=CRS18,
        )
    return z, inlets, waters


@pytest.mark.parametrize("seed", range(12))
def test_labels_equal_a_brute_force_steepest_descent_walk(seed):
    z, inlets, waters = _random_case(seed)
    res = hydrology.route(dem(z), inlets=inlets, waterbodies=waters, min_area_m2=40.0)
    cond, valid, stop = res.conditioned, res.valid, res.target_mask
    h, w = z.shape
    ties = 0
    for r in range(h):
        for c in range(w):
            if not valid[r, c]:
                continue
            ends = _brute_force_terminals(cond, stop, valid, r, c)
            labels = {int(res.labels[e]) for e in ends}
            assert int(res.labels[r, c]) in labels, (seed, r, c, labels)
            ties += len(labels) > 1
    assert ties < 0.05 * valid.sum()  # ties (equal drops on the fill's flats) are rare
    # no pit is left inside the terrain: every cell reaches a target, a closed
    # depression, the DEM edge or a nodata hole
    assert "unknown" not in set(res.targets.loc[res.targets["cells"] > 0, "target_kind"])


@pytest.mark.parametrize("seed", range(12))
def test_no_cell_next_to_a_target_a_hole_or_the_edge_is_raised(seed):
    z, inlets, waters = _random_case(seed)
    res = hydrology.route(dem(z), inlets=inlets, waterbodies=waters)
    valid = res.valid
    raised = valid & ~res.target_mask & (res.conditioned - z > 1e-9)
    outlet = res.target_mask | ~valid
    pad = np.pad(outlet, 1, constant_values=True)  # the DEM edge is an outlet too
    h, w = z.shape
    near = np.zeros_like(outlet)
    for dr, dc in _STEPS:
        near |= pad[1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w]
    assert not (raised & near).any()


def test_ms4map_drainage_command_on_the_designed_street(tmp_path):
    """The whole command on files, as a user runs it: GeoPackage + DEM GeoTIFF beside it."""
    import pyogrio
    import rasterio

    from ms4map.cli import main

    ws = T.street_workspace()
    gpkg = tmp_path / "street.gpkg"
    for name, gdf in ws.layers.items():
        gdf.to_file(gpkg, layer=name, driver="GPKG")
    z = ws.dem.array.astype("float32")
    profile = dict(driver="GTiff", width=z.shape[1], height=z.shape[0], count=1, dtype="float32")
    profile.update(crs=CRS18.to_wkt(), transform=ws.dem.transform, tiled=True, compress="deflate")
    with rasterio.open(tmp_path / "street_dem.tif", "w", **profile) as dst:
        dst.write(z, 1)
    out = tmp_path / "out" / "result.gpkg"
    assert main(["drainage", str(gpkg), "--out", str(out), "--quiet"]) == 0
    d = pyogrio.read_dataframe(out, layer="parcel_drainage", read_geometry=False)
    t = T.curbed_street()
    for lot, box in t.lots.items():
        if lot in ("NR", "SR"):
            continue
        west, east = ("IN1", "IN2") if lot.startswith("N") else ("IS1", "IS2")
        got = d[d["parcel_id"] == lot].set_index("target_id")["fraction"]
        assert got.get(west, 0.0) == pytest.approx(T.street_share(box), abs=1e-6), lot
        assert got.sum() == pytest.approx(1.0, abs=1e-6)
    assert set(d["outfall_id"]) == {"OF1"}
    sheds = pyogrio.read_dataframe(out, layer="sewersheds")
    assert len(sheds) == 1


def test_catchments_of_some_kinds_are_the_polygons_of_a_wider_call():
    res = _route(T.curbed_street())  # a fresh result: nothing cached
    wide = res.catchments(None)  # every kind: the inlets and the DEM's edges
    some = res.catchments(("inlet",))
    alone = hydrology.catchment_polygons(res, kinds=("inlet",))
    assert 0 < len(some) < len(wide)
    assert list(some["target_id"]) == list(alone["target_id"])
    assert all(a.equals_exact(b, 0.0) for a, b in zip(some.geometry, alone.geometry, strict=True))
