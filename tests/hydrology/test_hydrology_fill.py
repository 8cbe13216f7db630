"""The compiled depression fill (``ms4map.hydrology._fill``): hand-worked grids and
whitebox-workflows' ``fill_depressions``, the algorithm it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from affine import Affine

from ms4map.hydrology import _whitebox
from ms4map.hydrology._fill import fill_pits, flat_increment

TR = Affine(1.0, 0.0, 0.0, 0.0, -1.0, 100.0)


def _whitebox_fill(z: np.ndarray, outlets: np.ndarray, *, fix_flats: bool) -> np.ndarray:
    """whitebox-workflows' fill of ``z`` with ``outlets`` (and the border) as outlets."""
    with _whitebox._Whitebox() as wb:
        raster, max_depth = wb.send_with_outlets(z, outlets, TR, None, "z")
        filled = wb.wbe.hydrology.fill_depressions(
            dem=raster, fix_flats=fix_flats, max_depth=max_depth
        )
        arr, _ = wb.fetch(filled, "filled")
    out = np.array(arr[1:-1, 1:-1], dtype="float64")
    out[outlets] = z[outlets]
    return out


def test_a_bowl_is_filled_to_its_spill_and_a_bowl_with_an_outlet_is_not():
    z = np.full((7, 12), 10.0)
    z[2:5, 2:5] = 4.0  # bowl A: closed, rim 10, spill at the gap (2, 1) = 6
    z[3, 1] = 6.0
    z[3, 0] = 1.0
    z[2:5, 7:10] = 3.0  # bowl B: closed, but holds an outlet cell (an inlet)
    out = np.zeros(z.shape, bool)
    out[3, 8] = True
    filled = fill_pits(z, out, cell_x=1.0, cell_y=1.0, fix_flats=False)
    assert (filled[2:5, 2:5] == 6.0).all()  # raised to the spill, no higher
    assert filled[3, 1] == 6.0 and filled[3, 0] == 1.0
    assert (filled[2:5, 7:10] == 3.0).all()  # drains to its outlet: never raised
    assert (filled[0] == 10.0).all()  # the border is an outlet: no rise


def test_a_nested_bowl_takes_the_level_of_the_lake_it_joins():
    # a high sub-bowl (floor 7) spills at 8 into a deep bowl (floor 2) whose own spill
    # is 9: both are one lake at 9 (the high pit is flooded first and raised again)
    z = np.full((5, 11), 12.0)
    z[1:4, 1:4] = 7.0
    z[2, 4] = 8.0
    z[1:4, 5:9] = 2.0
    z[2, 9] = 9.0
    z[2, 10] = 0.0
    filled = fill_pits(z, np.zeros(z.shape, bool), cell_x=1.0, cell_y=1.0, fix_flats=False)
    assert (filled[1:4, 1:4] == 9.0).all() and (filled[1:4, 5:9] == 9.0).all()
    assert filled[2, 4] == 9.0 and filled[2, 9] == 9.0


def test_a_flat_corridor_gets_the_gradient_worked_by_hand():
    # a corridor 3 cells wide at 150 between walls at 200, its outlet at (3, 1):
    # L = steps from the outlet, A = steps from the walls (1 on the sides, 2 inside
    # from the second column), H = 2; each flat cell rises by (H * L + H - A) steps
    z = np.full((7, 14), 200.0)
    z[2:5, 2:12] = 150.0
    z[3, 1] = 150.0
    z[3, 0] = 20.0
    filled = fill_pits(z, np.zeros(z.shape, bool), cell_x=1.0, cell_y=1.0)
    steps = np.round((filled[2:5, 1:12] - 150.0) / flat_increment(200.0, 1.0, 1.0))
    sides = [3, 5, 7, 9, 11, 13, 15, 17, 19, 21]
    middle = [3, 4, 6, 8, 10, 12, 14, 16, 18, 21]
    assert steps[0, 1:].tolist() == sides and steps[2, 1:].tolist() == sides
    assert steps[1].tolist() == [0, *middle]
    assert filled[3, 0] == 20.0


@pytest.mark.parametrize("seed", [0, 1])
def test_the_levels_equal_whitebox_on_random_terrain(seed):
    rng = np.random.default_rng(seed)
    for trial in range(40):
        h, w = rng.integers(3, 30, 2)
        z = rng.random((h, w)) * 50.0
        if trial % 2:
            z = np.round(z)  # ties and flats
        out = rng.random((h, w)) < 0.03
        mine = fill_pits(z, out, cell_x=1.0, cell_y=1.0, fix_flats=False)
        mine[out] = z[out]
        assert np.array_equal(mine, _whitebox_fill(z, out, fix_flats=False))


def test_designed_flats_get_whitebox_s_gradient_exactly():
    # the corridor above, a 7 x 9 pond filled to its spill and two corridors joined
    # by a low edge (one component: they share its height H)
    grids = []
    z = np.full((7, 14), 200.0)
    z[2:5, 2:12] = 150.0
    z[3, 1], z[3, 0] = 150.0, 20.0
    grids.append((z, np.zeros(z.shape, bool)))
    z = np.full((11, 13), 200.0)
    z[2:9, 2:11] = 100.0
    z[5, 1], z[5, 0] = 150.0, 20.0
    grids.append((z, np.zeros(z.shape, bool)))
    z = np.full((7, 17), 200.0)
    z[3, 1:8] = 150.0
    z[2:5, 9:16] = 150.0
    z[3, 8] = 150.0
    out = np.zeros(z.shape, bool)
    out[4, 8] = True  # an inlet below the joining cell
    grids.append((z, out))
    for z, out in grids:
        mine = fill_pits(z, out, cell_x=1.0, cell_y=1.0)
        assert np.array_equal(mine, _whitebox_fill(z, out, fix_flats=True))


def test_a_long_diagonal_flat_is_held_by_its_cells_and_gets_the_same_gradient():
    # a flat one cell wide along the diagonal of a 300 x 300 grid: its bounding box is
    # 300 times its size, so its layers are held per cell (binary search); the result
    # is whitebox's, and the rise grows away from the outlet corner
    n = 300
    z = np.full((n, n), 200.0)
    idx = np.arange(1, n - 1)
    z[idx, idx] = 150.0
    z[0, 0] = 20.0
    out = np.zeros(z.shape, bool)
    mine = fill_pits(z, out, cell_x=1.0, cell_y=1.0)
    assert np.array_equal(mine, _whitebox_fill(z, out, fix_flats=True))
    rise = mine[idx, idx] - 150.0
    assert rise[0] == 0.0  # beside the outlet corner: the flat's low edge
    assert (np.diff(rise) > 0).all()


def test_the_two_thread_scans_give_the_one_thread_result(monkeypatch):
    from ms4map.hydrology import _fill

    rng = np.random.default_rng(3)
    z = np.round(rng.random((300, 200)) * 20.0)  # many pits and flats
    out = rng.random(z.shape) < 0.01
    one = fill_pits(z, out, cell_x=2.0, cell_y=2.0)
    monkeypatch.setattr(_fill, "TWO_THREADS_CELLS", 0)
    two = fill_pits(z, out, cell_x=2.0, cell_y=2.0)
    assert np.array_equal(one, two)
    assert (one > z).sum() > 100  # the grid had pits to fill and flats to grade


def test_labels_walked_on_the_d8_grid_equal_those_on_the_downstream_index():
    from ms4map.hydrology import _kernels, cells

    rng = np.random.default_rng(5)
    codes = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 247], np.uint8)
    for _ in range(30):
        h, w = rng.integers(1, 40, 2)
        d8 = rng.choice(codes, (h, w)).astype(np.uint8)  # loops, nodata, pits, edges
        idx = _kernels.downstream_index(d8)
        seed = np.where(rng.random(h * w) < 0.1, rng.integers(1, 9, h * w), 0).astype(np.int32)
        by_index = _kernels.label_downstream(idx, seed.copy())
        assert np.array_equal(by_index, _kernels.label_downstream_d8(d8, seed.copy()))
        pits = cells._pit_cells_d8(d8)
        assert np.array_equal(pits, np.flatnonzero(idx == np.arange(h * w)))


def test_pit_cells_in_two_threads_are_those_of_one(monkeypatch):
    from ms4map.hydrology import _fill, cells

    rng = np.random.default_rng(8)
    codes = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 247], np.uint8)
    d8 = rng.choice(codes, (37, 23)).astype(np.uint8)
    one = cells._pit_cells_d8(d8)
    monkeypatch.setattr(_fill, "TWO_THREADS_CELLS", 0)
    assert np.array_equal(cells._pit_cells_d8(d8), one)
    assert one.size > 50
