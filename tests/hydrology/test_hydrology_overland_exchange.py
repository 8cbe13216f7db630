"""Raster exchange with whitebox-workflows and the DEM-edge boundary condition."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
import shapely
from affine import Affine
from test_hydrology_overland_fixtures import CRS18, TR, dem, town_dem, xy

from ms4map import hydrology
from ms4map.hydrology import _whitebox, routing


def _inlets(**cells: tuple[int, int]) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"node_id": list(cells)},
        geometry=[shapely.Point(xy(*v)) for v in cells.values()],
        crs=CRS18,
    )


def _east_plane(h: int = 30, w: int = 40) -> np.ndarray:
    """Plane falling to the east: the steepest in-grid drop of a top-row cell is along
    the edge (east, 0.05 per 2 m) rather than into the DEM (south-east, per 2.8 m)."""
    _, c = np.mgrid[0:h, 0:w]
    return 100.0 - 0.05 * c.astype(float)


def test_saga_grid_round_trip_keeps_values_orientation_and_nodata(tmp_path):
    z = np.arange(12, dtype=float).reshape(3, 4) * 1.123456789
    z[1, 2] = np.nan
    path = tmp_path / "z.sdat"
    _whitebox._write_sgrd(path, z, TR, CRS18)
    back, nodata = _whitebox._read_sgrd(path)
    assert back.shape == (3, 4) and back[0, 0] == z[0, 0] and back[2, 3] == z[2, 3]
    assert back[1, 2] == nodata
    # whitebox reads the same grid (top row first, georeferenced at the cell centres)
    wbe = _whitebox._wbe()
    r = wbe.read_raster(str(path), file_mode="m")
    assert r.get_value(0, 1) == z[0, 1] and r.get_value(2, 0) == z[2, 0]
    assert abs(r.metadata().north - TR.f) < 1e-6 and abs(r.metadata().west - TR.c) < 1e-6
    # and what whitebox writes (bottom row first) comes back in the right order
    wbe.write_raster(r, str(tmp_path / "w.sdat"))
    w, nd = _whitebox._read_sgrd(tmp_path / "w.sdat")
    assert np.array_equal(np.where(w == nd, np.nan, w), z, equal_nan=True)
    assert w.flags.writeable  # a flipped view of one sequential read (no copy)
    with _whitebox._Whitebox(tmp_path / "wb") as wb:  # a lazily read grid is its own file
        lazy, nd = wb.fetch(wb.wbe.read_raster(str(path)), "lazy")
        assert np.array_equal(np.where(lazy == nd, np.nan, lazy), z, equal_nan=True)


def test_non_square_cells_go_through_geotiff_and_still_fill():
    z = town_dem(30, 30)
    z[5, 5] = np.nan
    tr = Affine(2.0, 0, 500000.0, 0, -3.0, 4700000.0)
    filled = hydrology.condition_dem(z, tr, CRS18)
    ok = np.isfinite(z)
    assert np.isnan(filled[5, 5]) and np.isfinite(filled[ok]).all()
    assert (filled[ok] >= z[ok] - 1e-9).all()
    assert filled[20, 20] > z[20, 20]  # the bowl is filled


def _whitebox_d8(z: np.ndarray, tr: Affine) -> np.ndarray:
    """whitebox-workflows' own ``d8_pointer`` of ``z`` (the reference of the kernel)."""
    with _whitebox._Whitebox() as wb:
        raw = wb.d8(wb.send(z, tr, CRS18, "conditioned"))
    return _whitebox._as_pointer(raw, np.isfinite(z))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cell", [(2.0, 2.0), (2.0, 3.0)])
def test_d8_kernel_equals_whitebox_d8_pointer(seed, cell):
    rng = np.random.default_rng(seed)
    z = rng.random((60, 70)).cumsum(axis=0) * 0.05 + rng.random((60, 70))
    z[10:14, 20:25] = np.nan  # a hole: nodata is no neighbour
    z[:, 40] = np.round(z[:, 40], 1)  # some equal values
    tr = Affine(cell[0], 0, 500000.0, 0, -cell[1], 4700000.0)
    for grid in (z, hydrology.condition_dem(z, tr, CRS18)):  # raw (pits, ties) and filled
        ours = routing.d8_steepest(grid, tr)
        assert ours.dtype == np.uint8
        assert np.array_equal(ours, _whitebox_d8(grid, tr))
    # a view with strides (the conditioned DEM is a view of the fill's framed grid)
    framed = np.pad(z, 1, constant_values=np.nan)
    assert np.array_equal(routing.d8_steepest(framed[1:-1, 1:-1], tr), _whitebox_d8(z, tr))


def test_d8_in_two_threads_equals_one(monkeypatch):
    # a county-sized grid makes its pointer in two threads, each half of the rows
    # reading across the seam: the same pointer as one thread (an odd row count)
    from ms4map.hydrology import _fill

    rng = np.random.default_rng(5)
    z = rng.random((61, 47)).cumsum(axis=0) * 0.05 + rng.random((61, 47))
    z[29:33, 10:14] = np.nan
    one = routing.d8_steepest(z, TR)
    monkeypatch.setattr(_fill, "TWO_THREADS_CELLS", 0)
    assert np.array_equal(routing.d8_steepest(z, TR), one)
    assert np.array_equal(one, _whitebox_d8(z, TR))


def test_d8_kernel_by_hand():
    # a 3 x 3 cone around a low centre, and the centre's pointers of single drops
    z = np.array([[5.0, 5.0, 5.0], [5.0, 1.0, 5.0], [5.0, 5.0, 5.0]])
    d8 = routing.d8_steepest(z, TR)
    assert d8[1, 1] == 0  # the pit
    # every outer cell points at the centre: E of (1,0), SE of (0,0), S of (0,1), ...
    assert d8[1, 0] == 1 and d8[0, 0] == 2 and d8[0, 1] == 4 and d8[0, 2] == 8
    assert d8[1, 2] == 16 and d8[2, 2] == 32 and d8[2, 1] == 64 and d8[2, 0] == 128
    # a 1 m drop east beats a 1.3 m drop on the diagonal (1.3 / sqrt(2) < 1)
    z = np.array([[9.0, 9.0, 9.0], [9.0, 5.0, 4.0], [9.0, 9.0, 3.7]])
    assert routing.d8_steepest(z, TR)[1, 1] == 1
    z[2, 2] = 3.5  # 1.5 / sqrt(2) = 1.06 > 1: now the diagonal
    assert routing.d8_steepest(z, TR)[1, 1] == 2
    z[1, 1] = np.nan
    assert routing.d8_steepest(z, TR)[1, 1] == 247


def test_edge_cell_running_along_the_edge_is_an_outlet():
    z = _east_plane()
    raw = hydrology.d8_pointer(z, TR, CRS18, edge_outlets=False)
    cut = hydrology.d8_pointer(z, TR, CRS18)
    assert raw[0, 10] == 1  # the library sends the top-row cell east, along the edge
    assert cut[0, 10] == 0  # ms4map: it has reached the edge
    assert (cut[1:-1, 1:-1] == raw[1:-1, 1:-1]).all()  # interior untouched
    # an inlet on the top edge: edge cells west of it no longer run into it, the
    # interior cell next to it still drops into it
    res = hydrology.route(dem(z), inlets=_inlets(I1=(0, 30)))
    i1, edge = res.label_of("inlet", "I1"), res.label_of("off_dem", "dem_edge")
    assert res.labels[0, 10] == edge and res.labels[0, 29] == edge
    assert res.labels[1, 29] == i1


def test_edge_cell_pointing_into_the_dem_keeps_its_pointer():
    z = _east_plane().T.copy()  # falls to the south now: top-row cells drain inwards
    raw = hydrology.d8_pointer(z, TR, CRS18, edge_outlets=False)
    cut = hydrology.d8_pointer(z, TR, CRS18)
    assert raw[0, 10] == 4 and cut[0, 10] == 4


def test_framed_grid_in_the_mapped_exchange_file_equals_the_copied_one(tmp_path):
    z = town_dem(40, 50)
    outlets = np.zeros(z.shape, dtype=bool)
    outlets[30, :] = True
    outlets[10, 20] = True
    before = z.copy()
    grids = []
    for workdir in (None, tmp_path / "wb"):  # private folder (mapped on POSIX), user's folder
        with _whitebox._Whitebox(workdir) as wb:
            r, max_depth = wb.send_with_outlets(z, outlets, TR, CRS18, "framed")
            grids.append(np.array([[r.get_value(i, j) for j in range(52)] for i in range(42)]))
        assert np.array_equal(z, before)  # the user's DEM is never changed
    mapped, copied = grids
    assert np.array_equal(mapped, copied)
    # the terrain sits inside a ring of outlet cells; outlet cells lie far below it,
    # each at its own elevation, deeper under the lowest terrain cell than max_depth
    assert np.array_equal(mapped[1:-1, 1:-1][~outlets], z[~outlets])
    low = np.concatenate([mapped[0], mapped[-1], mapped[:, 0], mapped[:, -1]])
    low = np.concatenate([low, mapped[1:-1, 1:-1][outlets]])
    assert low.max() < z[~outlets].min() - max_depth
    assert np.unique(low).size == 2 * 52 + 2 * 40 + outlets.sum()
    assert max_depth > z[~outlets].max() - z[~outlets].min()


def test_route_never_changes_the_users_dem_and_repeats_itself():
    z = town_dem()
    before = z.copy()
    inlets = _inlets(I1=(30, 60), I2=(60, 60))
    first = hydrology.route(dem(z), inlets=inlets)
    again = hydrology.route(dem(z), inlets=inlets)
    assert np.array_equal(z, before)  # the user's DEM is never changed
    assert np.array_equal(first.labels, again.labels)
    assert np.array_equal(first.conditioned, again.conditioned)
    assert first.targets.equals(again.targets)


def test_saga_int_grid_written_by_whitebox_reads_back(tmp_path):
    # whitebox writes 32-bit integer grids with DATAFORMAT = INT (GDAL's SAGA driver
    # refuses that name): read as int32, rows in place
    z = np.arange(12, dtype=np.int32).reshape(3, 4)
    path = tmp_path / "labels.sdat"
    with _whitebox._Whitebox(tmp_path / "wb") as wb:
        r = wb.send(z.astype(float), TR, CRS18, "f")
        out = wb.wbe.hydrology.watershed_from_raster_pour_points(
            d8_pntr=wb.send(np.zeros((3, 4)), TR, CRS18, "p"), pour_points=r, esri_pntr=True
        )
        wb.wbe.write_raster(out, str(path))
    head = path.with_suffix(".sgrd").read_text()
    arr, _ = _whitebox._read_sgrd(path)
    assert "= INT\n" in head and arr.dtype == np.int32
    assert np.array_equal(arr[z > 0], z[z > 0])  # every pour point labels its own cell
