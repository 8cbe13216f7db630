"""Overland audit fixes, each on a tiny synthetic DEM worked out by hand.

- flow that reaches the edge of the DEM's *data* leaves it, also where the data ends
  against nodata connected to the grid's border (a DEM clipped to a town boundary),
  instead of sliding along that edge into an inlet;
- flow that reaches an interior nodata hole stops there (``off_dem`` / ``dem_nodata``)
  instead of being carried round it;
- the part of a sag below an inlet that sits off the sag's low point drains to the
  inlet: it is no closed depression;
- a point query on a nodata cell inside the DEM says the DEM has no data there.

Grids: 2 m cells in UTM 18N (``test_hydrology_overland_fixtures``); rows grow southwards.
"""

from __future__ import annotations

from types import SimpleNamespace

import geopandas as gpd
import numpy as np
import pytest
import shapely
from test_hydrology_overland_fixtures import CRS18, cell_box, dem, xy

from ms4map import drainage, hydrology
from ms4map.analysis import what_drains_here, where_does_it_drain


def _inlets(**cells: tuple[int, int]) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"node_id": list(cells)},
        geometry=[shapely.Point(xy(*v)) for v in cells.values()],
        crs=CRS18,
    )


def _names(res: hydrology.OverlandResult) -> np.ndarray:
    """``kind:id`` of the first target of every cell ("" on nodata)."""
    t = res.targets
    name = (t["target_kind"] + ":" + t["target_id"]).reindex(res.labels.ravel())
    return name.fillna("").to_numpy().reshape(res.shape)


def _east_plane(h: int, w: int) -> np.ndarray:
    """Falls 0.2 m per cell east and 0.05 m per cell south: every cell's steepest drop
    is east (0.2 / 2 m = 0.1 against 0.25 / 2.83 m = 0.088 south-east, 0.025 south)."""
    r, c = np.mgrid[0:h, 0:w].astype(float)
    return 100.0 - 0.2 * c - 0.05 * r


# --------------------------------------------------------------------------------------
# 1. a ragged DEM edge: nodata connected to the grid's border
# --------------------------------------------------------------------------------------
def test_flow_leaves_the_dem_where_its_data_ends_against_border_nodata():
    # 12 x 10 cells, data in columns 0..5, columns 6..9 nodata (touching the border);
    # inlet I on the data's last column at (10, 5); parcel P rows 1..4, columns 2..5.
    # By hand: P's rows run east to column 5, the data's east edge; there the only
    # lower neighbours with data are south, along that edge, so the pointer is cut and
    # the flow leaves the DEM, "off the east edge", as on the grid cut at column 6.  The
    # inlet takes rows 9 and 10 west of it (row 9 via the south-east step of (9, 4),
    # 1.25 m / 2.83 m down into the sunk inlet): 5 + 6 = 11 cells.  Before: column 5
    # slid south into I, which took rows 1..10 and more (P 100 % to I).
    z = _east_plane(12, 10)
    clipped = z.copy()
    clipped[:, 6:] = np.nan
    inlets = _inlets(I=(10, 5))
    res = hydrology.route(dem(clipped), inlets=inlets)
    grid = hydrology.route(dem(z[:, :6].copy()), inlets=inlets)
    names = _names(res)
    assert (names[1:5, 2:6] == "off_dem:dem_edge").all()
    assert (
        res.targets["reason"].reindex(res.labels[1:5, 2:6].ravel())
        == ("flows off the east edge of the DEM")
    ).all()
    i = res.label_of("inlet", "I")
    assert int(res.targets.loc[i, "cells"]) == 11
    assert (res.labels[9, :5] == i).all() and (res.labels[10, :6] == i).all()
    # the same data on a grid that ends there gives the same answer, cell for cell
    assert np.array_equal(names[:, :6], _names(grid))
    assert (names[:, 6:] == "").all()
    parcels = gpd.GeoDataFrame({"parcel_id": ["P"]}, geometry=[cell_box(1, 2, 5, 6)], crs=CRS18)
    table = drainage.parcel_drainage(parcels, res)
    assert table[["target_kind", "fraction", "method"]].values.tolist() == [
        ["off_dem", 1.0, "d8_catchment"]
    ]
    assert table["reason"].iloc[0] == "flows off the east edge of the DEM"


# --------------------------------------------------------------------------------------
# 2. an interior nodata hole
# --------------------------------------------------------------------------------------
def test_flow_reaching_an_interior_nodata_hole_stops_there():
    # 12 x 14 cells, hole rows 4..6, columns 6..7; inlet I at (7, 10), east of the
    # hole's south-east corner; parcel U rows 4..6, columns 2..5, west of the hole.
    # By hand: U's rows run east to column 5, beside the hole.  From there the steepest
    # drop with data runs along the hole's edge ((4, 5) north-east to (3, 6), (5, 5)
    # south to (6, 5), (6, 5) south-east to (7, 6)): each is cut, so all 12 cells end
    # at the hole, off_dem / dem_nodata.  Before: rows 5 and 6 were carried round the
    # hole along row 7 into I (8 cells), row 4 along row 3 off the east edge (4 cells).
    # A cell beside the hole whose drop leads away from it keeps its pointer: (3, 8)
    # runs east along row 3 off the east edge.
    z = _east_plane(12, 14)
    z[4:7, 6:8] = np.nan
    res = hydrology.route(dem(z), inlets=_inlets(I=(7, 10)))
    names = _names(res)
    assert (names[4:7, 2:6] == "off_dem:dem_nodata").all()
    assert names[3, 8] == "off_dem:dem_edge" and names[3, 6] == "off_dem:dem_nodata"
    i = res.label_of("inlet", "I")
    assert not (res.labels[4:7, :6] == i).any()
    parcels = gpd.GeoDataFrame({"parcel_id": ["U"]}, geometry=[cell_box(4, 2, 7, 6)], crs=CRS18)
    table = drainage.parcel_drainage(parcels, res)
    assert table[["target_kind", "fraction"]].values.tolist() == [["off_dem", 1.0]]
    assert table["reason"].iloc[0] == "flows into a nodata hole of the DEM"


# --------------------------------------------------------------------------------------
# 3. a sag whose inlet is off its low point
# --------------------------------------------------------------------------------------
def _cone(n: int = 15) -> tuple[np.ndarray, np.ndarray]:
    """A cone bowl 2 m deep, radius 7 cells, low point (7, 7), rim plateau at 102 m;
    and each cell's distance to the low point, in cells."""
    r, c = np.mgrid[0:n, 0:n].astype(float)
    d = np.hypot(r - 7, c - 7)
    return 100.0 + 2.0 * np.minimum(d / 7.0, 1.0), d


def test_pool_below_an_inlet_off_the_low_point_drains_to_the_inlet():
    # inlet I at (7, 11), 4 cells east of the low point (z = 100 + 8 / 7 m).  The fill
    # raises the pool below I's lowest neighbour on the pool's side, (7, 10) at
    # 100 + 6 / 7 = 100.857 m: the 25 cells nearer than 3 cells to the low point (all
    # (dr, dc) with dr^2 + dc^2 < 9), 0.857 m deep, 100 m2: over min_depth_m (0.3) and
    # min_area_m2 (50 here).  Its spill cell (7, 10) is I's neighbour: the pool drains
    # to I, so all 145 cells inside the rim do.  Before: the pool was closed
    # depression DEP1 and took 123 of them.
    z, d = _cone()
    res = hydrology.route(dem(z), inlets=_inlets(I=(7, 11)), min_area_m2=50.0)
    assert len(res.depression_table) == 0
    assert "depression" not in set(res.targets["target_kind"])
    assert (res.labels[d < 7.0] == res.label_of("inlet", "I")).all()
    # the pool is routed through along the fill's gradient, as a noise pit is
    raised = (res.conditioned - z > 1e-4) & ~res.target_mask
    assert int(raised.sum()) == 25 and (raised == (d < 3.0)).all()
    assert res.conditioned[7, 7] - z[7, 7] == pytest.approx(6.0 / 7.0, abs=1e-6)
    # without the inlet the same bowl is a true closed depression, as before: filled
    # to its rim (102 m), every cell nearer than 7 cells, 2 m deep
    alone = hydrology.route(dem(z), min_area_m2=50.0)
    dep = alone.depression_table
    assert len(dep) == 1 and int(dep["cells"].iloc[0]) == int((d < 7.0).sum()) == 145
    assert dep["max_depth_m"].iloc[0] == pytest.approx(2.0, abs=1e-6)


# --------------------------------------------------------------------------------------
# 4. a point query on a nodata cell
# --------------------------------------------------------------------------------------
def test_point_queries_on_a_nodata_cell_say_the_dem_has_no_data_there():
    z = _east_plane(12, 14)
    z[4:7, 6:8] = np.nan
    result = SimpleNamespace(overland=hydrology.route(dem(z)), join=None, settings={})
    on_hole = shapely.Point(xy(5, 6))
    where = where_does_it_drain(result, on_hole)
    assert (where.target_kind, where.method) == ("unknown", "dem_nodata")
    assert where.reason.startswith("the DEM has no data at the point")
    assert where.geometry is None
    here = what_drains_here(result, on_hole)
    assert (here["method"].iloc[0], float(here["area_m2"].iloc[0])) == ("dem_nodata", 0.0)
    assert here["reason"].iloc[0].startswith("the DEM has no data at the point")
    # a point beyond the grid is still outside the DEM
    beyond = shapely.Point(xy(5, 20))
    assert where_does_it_drain(result, beyond).target_kind == "off_dem"
    assert what_drains_here(result, beyond)["method"].iloc[0] == "off_dem"
