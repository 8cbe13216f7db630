"""The steps of ``hydrology.route``, one by one, on grids small enough to check by hand."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
import shapely
from test_hydrology_overland_fixtures import CRS18, TR, xy

from ms4map import hydrology
from ms4map.hydrology import conditioning
from ms4map.io.workspace import Dem


def _bowl(n: int = 9, rim: float = 5.0, floor: float = 3.0, pit: float = 1.0) -> np.ndarray:
    """A square bowl: the outer ring (the DEM edge) at ``rim``, a flat ``floor``, one pit."""
    z = np.full((n, n), rim)
    z[1:-1, 1:-1] = floor
    z[n // 2, n // 2] = pit
    return z


def _fill(z, outlets=None):
    return hydrology.condition_dem(z, TR, CRS18, outlets=outlets)


def test_fill_drains_a_bowl_over_the_dem_edge():
    # the library alone leaves a bowl closed by the DEM edge unfilled (no cell of it has
    # a lower neighbour); the DEM edge is an outlet: the bowl fills to its rim, 5 m
    z = _bowl()
    filled = _fill(z)
    assert filled[1:-1, 1:-1].min() >= 5.0 - 1e-9
    assert np.array_equal(filled[0], z[0])  # the rim itself is not raised


def test_fill_leaves_a_bowl_with_an_outlet_cell_unraised():
    z = _bowl()
    out = np.zeros(z.shape, bool)
    out[2, 2] = True  # an inlet on the bowl's floor, off its pit
    filled = _fill(z, out)
    # the floor drains to the inlet: nothing raised but the pit, up to the floor
    # level it spills at (3 m), by hand
    assert filled[4, 4] == pytest.approx(3.0, abs=1e-3)
    free = ~out
    free[4, 4] = False
    assert np.abs(filled - z)[free].max() < 1e-3


def test_fill_treats_a_nodata_hole_as_an_outlet():
    z = _bowl()
    z[2, 6] = np.nan
    filled = _fill(z)
    assert np.isnan(filled[2, 6])
    assert filled[4, 4] == pytest.approx(3.0, abs=1e-3)  # drains into the hole, not to the rim


def test_fill_keeps_the_users_array():
    z = _bowl()
    before = z.copy()
    _fill(z, np.eye(9, dtype=bool))
    assert np.array_equal(z, before)


def _points(**cells):
    return gpd.GeoDataFrame(
        {"node_id": list(cells)},
        geometry=[shapely.Point(xy(*rc)) for rc in cells.values()],
        crs=CRS18,
    )


def test_rasterize_targets_later_kinds_win_and_odd_inlets_are_listed():
    valid = np.ones((10, 12), bool)
    valid[8, 8] = False
    water = gpd.GeoDataFrame(
        {"wb_id": ["W"], "name": ["Brook"]},
        geometry=[shapely.LineString([xy(5, 0), xy(5, 11)])],
        crs=CRS18,
    )
    grid = hydrology.rasterize_targets(
        (10, 12),
        TR,
        valid,
        inlets=_points(A=(5, 3), B=(5, 3), C=(8, 8), D=(30, 3), E=(2, 2)),
        waterbodies=water,
    )
    kinds = [r["target_kind"] for r in grid.rows]
    assert kinds[0] == "water_direct"
    burned, sunk = grid.lowered(np.array([5, 5, 2]), np.array([0, 3, 2]))
    assert (grid.seed[5, :] > 0).all() and burned.tolist() == [True, True, False]
    a = grid.seed[5, 3]
    assert grid.rows[a - 1]["target_id"] == "A"  # the inlet wins its cell ...
    assert sunk.tolist() == [False, True, True]  # ... and is sunk, on the burned water
    assert grid.burned_inlets == [5 * 12 + 3]
    assert grid.shared == ["B"] and grid.off_inlets == ["C", "D"]  # C on nodata, D off the grid
    assert grid.rows[grid.seed[2, 2] - 1]["target_id"] == "E"


def test_find_depressions_keeps_deep_large_ones_only():
    z = _bowl(n=21, rim=5.0, floor=4.9, pit=4.0)  # floor 0.1 m below the rim, 1 m pit
    filled = _fill(z)
    for min_depth, min_cells, expected in ((0.3, 100, 1), (1.5, 100, 0), (0.3, 400, 0)):
        grid = hydrology.TargetGrid(seed=np.zeros(z.shape, np.int32))
        table = conditioning.find_depressions(
            z, filled, grid, min_depth=min_depth, min_cells=min_cells
        )
        assert len(table) == expected, (min_depth, min_cells)
        if expected:
            assert table.iloc[0]["cells"] == 19 * 19  # the whole floor, by hand
            assert table.iloc[0]["max_depth_m"] == pytest.approx(1.0, abs=1e-3)
            assert (grid.seed[1:-1, 1:-1] == 1).all() and (grid.seed[0] == 0).all()


def test_raised_regions_are_scipy_label_regions_written_into_the_seed():
    # random raised patches (some touching only at a corner, some NaN), a few targets:
    # the kernel's regions are scipy's 8-connected labels, numbered alike, as -k in the
    # seed; the targets keep their labels; each region's cells come back together
    from scipy import ndimage

    from ms4map.hydrology._kernels import raised_regions

    rng = np.random.default_rng(7)
    for trial in range(20):
        z = rng.uniform(0, 10, (37, 41)).astype(np.float32 if trial % 2 else np.float64)
        filled = z.astype(np.float64) + np.where(rng.random(z.shape) < 0.35, 0.5, 0.0)
        filled[rng.random(z.shape) < 0.02] = np.nan
        seed = np.zeros(z.shape, np.int32)
        tgt = (filled == z) & (rng.random(z.shape) < 0.05)  # targets are never raised
        seed[tgt] = np.arange(1, tgt.sum() + 1)
        expected, n = ndimage.label(filled - z > 1e-4, structure=np.ones((3, 3), bool))
        cells, starts = raised_regions(filled, z, seed, 1e-4, np.empty(4, np.int32))
        assert starts.size == n + 1 and starts[-1] == cells.size == (expected > 0).sum()
        assert np.array_equal(np.where(seed < 0, -seed, 0), expected)
        assert np.array_equal(seed[tgt], np.arange(1, tgt.sum() + 1))
        for k in range(1, n + 1):
            got = np.sort(cells[starts[k - 1] : starts[k]])
            assert np.array_equal(got, np.flatnonzero(expected == k))


def test_sink_targets_puts_every_target_below_its_lowest_free_neighbour():
    z = np.full((5, 5), 10.0)
    z[2, 3] = 8.0  # a free cell lower than the target next to it, even once burned
    grid = hydrology.TargetGrid(seed=np.zeros(z.shape, np.int32))
    grid.seed[2, 2] = grid.add("inlet", "I")  # an inlet: sunk by inlet_depth
    cond = z.copy()
    changed = conditioning.sink_targets(
        z, cond, grid, np.ones(z.shape, bool), burn_depth=2.0, inlet_depth=1.0, step=0.001
    )
    assert changed.tolist() == [2 * 5 + 2]
    assert cond[2, 2] == pytest.approx(8.0 - 0.001)  # not its burned 9 m: below 8 m
    grid.seed[2, 3] = grid.add("inlet", "J")  # now that low cell is a target too
    cond = z.copy()
    conditioning.sink_targets(
        z, cond, grid, np.ones(z.shape, bool), burn_depth=2.0, inlet_depth=1.0, step=0.001
    )
    assert cond[2, 2] == pytest.approx(9.0) and cond[2, 3] == pytest.approx(7.0)  # burned


def test_first_target_names_edge_hole_and_target_outlets():
    # west of a wall (column 5): a cone falling to a nodata hole at (3, 3); east of it a
    # plane falling east to the DEM edge, with an inlet at (1, 9).  By hand: the cone
    # ends in the hole (its cells next to the hole have no lower valid neighbour), the
    # plane's row 1 west of the inlet reaches the inlet, its other rows leave the DEM
    # at the east edge
    h, w = 7, 12
    r, c = np.mgrid[0:h, 0:w].astype(float)
    z = np.where(c <= 4, 100.0 + 0.1 * np.hypot(r - 3, c - 3), 100.0 - 0.1 * (c - 6))
    z[:, 5] = 102.0
    z[3, 3] = np.nan
    res = hydrology.route(Dem(array=z, transform=TR, crs=CRS18), inlets=_points(I=(1, 9)))
    name = res.targets["target_kind"] + ":" + res.targets["target_id"]
    got = name.reindex(res.labels.ravel()).to_numpy().reshape(h, w)
    assert (got[:, :5][np.isfinite(z[:, :5])] == "off_dem:dem_nodata").all()
    assert (got[1, 6:10] == "inlet:I").all()
    assert (got[5, 6:] == "off_dem:dem_edge").all() and (got[3, 6:] == "off_dem:dem_edge").all()
    assert res.labels[3, 3] == 0  # nodata cells carry no label


def test_edge_outlets_name_the_side_flow_leaves_by():
    # a plane falling south-east: flow leaves by the south and the east edges, and the
    # drainage reason of such a part names its side
    h, w = 12, 16
    r, c = np.mgrid[0:h, 0:w].astype(float)
    z = 100.0 - 0.1 * r - 0.05 * c
    res = hydrology.route(Dem(array=z, transform=TR, crs=CRS18))
    t = res.targets
    reason = t["reason"].reindex(res.labels.ravel()).to_numpy().reshape(h, w)
    assert reason[h - 1, 3] == "flows off the south edge of the DEM"
    assert reason[2, w - 1] == "flows off the east edge of the DEM"
    south = (reason == "flows off the south edge of the DEM").sum()
    east = (reason == "flows off the east edge of the DEM").sum()
    assert south + east == h * w - 3  # all but three cells near far corners, by hand:
    # (0, 14) and (0, 15) are north edge cells whose steepest drop runs into the east
    # edge (an edge-to-edge pointer is cut: flow leaves where it is), and (10, 0) a west
    # edge cell whose drop runs into the south edge
    assert reason[0, w - 2] == reason[0, w - 1] == "flows off the north edge of the DEM"
    assert reason[h - 2, 0] == "flows off the west edge of the DEM"
