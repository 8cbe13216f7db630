"""Overland routing on micro DEMs built in fixtures (tilted plane, V valley, bowl)."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from test_hydrology_overland_fixtures import CRS18, TR, dem, plane, town_dem, xy

from ms4map import hydrology
from ms4map.core.errors import DataError
from ms4map.io.workspace import Dem


def _inlets(**cells: tuple[int, int]) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"node_id": list(cells)},
        geometry=[shapely.Point(xy(*v)) for v in cells.values()],
        crs=CRS18,
    )


def test_plane_drains_off_the_south_edge():
    res = hydrology.route(dem(plane()))
    t = res.targets
    assert set(t["target_kind"]) == {"off_dem"}
    assert (res.labels > 0).all()
    assert int(t["cells"].sum()) == 40 * 50


def test_inlet_on_plane_catches_its_column_upslope():
    res = hydrology.route(dem(plane()), inlets=_inlets(I1=(20, 25)))
    lab = res.label_of("inlet", "I1")
    catch = res.labels == lab
    # every cell straight upslope (north) of the inlet drains into it
    assert catch[:20, 25].all()
    # cells downslope of it do not
    assert not catch[22:, 25].any()
    assert res.targets.loc[lab, "area_m2"] == catch.sum() * 4.0


def test_valley_flow_reaches_first_inlet_downstream_only():
    res = hydrology.route(dem(town_dem()), inlets=_inlets(I1=(30, 60), I2=(60, 60)))
    i1, i2 = res.label_of("inlet", "I1"), res.label_of("inlet", "I2")
    # a valley cell above I1 goes to I1 (first target), not to I2 further down
    assert res.labels[10, 60] == i1
    assert res.labels[45, 60] == i2


def test_bowl_is_a_real_depression_and_small_pits_are_noise():
    z = town_dem()
    z[70, 20] -= 0.2  # a one-cell pit: noise, filled
    res = hydrology.route(dem(z))
    deps = res.targets[res.targets["target_kind"] == "depression"]
    assert len(deps) == 1
    lab = deps.index[0]
    assert res.labels[20, 20] == lab
    assert res.labels[70, 20] != lab
    d = res.depressions.iloc[0]
    assert d["max_depth_m"] > 1.0 and d["area_m2"] >= 500
    assert d.geometry.contains(shapely.Point(xy(20, 20)))


def test_depression_thresholds_are_settings():
    res = hydrology.route(dem(town_dem()), min_depth_m=5.0)
    assert not (res.targets["target_kind"] == "depression").any()
    res = hydrology.route(dem(town_dem()), min_area_m2=1e6)
    assert not (res.targets["target_kind"] == "depression").any()


def test_waterbody_is_burned_and_takes_direct_runoff():
    wb = gpd.GeoDataFrame(
        {"wb_id": ["1302-0001"], "name": ["Creek"]},
        geometry=[shapely.LineString([xy(100, 0), xy(100, 119)])],
        crs=CRS18,
    )
    res = hydrology.route(dem(town_dem()), waterbodies=wb)
    lab = res.label_of("water_direct", "1302-0001")
    assert res.labels[110, 30] == lab  # south bank drains north into the creek
    assert res.labels[95, 60] == lab


def test_surface_path_stops_at_first_target():
    res = hydrology.route(dem(town_dem()), inlets=_inlets(I1=(30, 60)))
    line, lab = hydrology.surface_path(res, *xy(5, 45))
    assert lab == res.label_of("inlet", "I1")
    end = shapely.Point(line.coords[-1])
    assert end.distance(shapely.Point(xy(30, 60))) < 1e-6


def test_upstream_mask_is_stopped_by_inlets():
    res = hydrology.route(dem(town_dem()), inlets=_inlets(I1=(30, 60)))
    m = hydrology.upstream_mask(res, *xy(50, 60))
    assert m[50, 60] and m[40, 60]
    assert not m[10, 60]  # above I1: taken by the inlet first


def test_upstream_mask_of_a_polygon_is_the_union_of_its_cells_masks_stopped_by_inlets():
    """Issue 31 item 3 (an SMP's drainage area): a polygon's upstream cells are its own and
    every cell whose path enters it first; an inlet upstream keeps its own water."""
    res = hydrology.route(dem(town_dem()), inlets=_inlets(I1=(30, 60)))
    poly = shapely.box(*xy(52, 58), *xy(48, 62))  # centres of rows 48-52, columns 58-62
    m = hydrology.upstream_mask_of(res, poly)
    union = np.zeros(res.shape, dtype=bool)
    for r in range(48, 53):
        for c in range(58, 63):
            union |= hydrology.upstream_mask(res, *xy(r, c))
    assert (m == union).all()
    assert m[48:53, 58:63].all() and not m[10, 60]  # above I1: taken by the inlet first
    point = shapely.Point(xy(50, 60))
    assert (
        hydrology.upstream_mask_of(res, point) == hydrology.upstream_mask(res, *xy(50, 60))
    ).all()


def test_catchment_polygons_match_cell_counts():
    res = hydrology.route(dem(town_dem()), inlets=_inlets(I1=(30, 60), I2=(60, 60)))
    polys = res.catchments()
    assert list(polys["target_id"]) == ["I1", "I2"]
    assert np.allclose(polys.area.to_numpy(), polys["area_m2"].to_numpy())
    assert polys.geometry.is_valid.all()


# --- bad input ------------------------------------------------------------------------
def test_geographic_dem_is_refused_with_fix():
    d = Dem(array=plane(), transform=TR, crs="EPSG:4326")
    with pytest.raises(DataError, match="geographic CRS.*Fix"):
        hydrology.route(d)


def test_nodata_hole_is_reported_as_off_dem_and_unlabelled():
    z = plane()
    z[10:15, 10:15] = np.nan
    res = hydrology.route(dem(z))
    assert (res.labels[10:15, 10:15] == 0).all()
    hole = res.label_of("off_dem", "dem_nodata")
    assert hole is not None and res.labels[5, 12] == hole


def test_flat_dem_routes_and_warns():
    res = hydrology.route(dem(np.full((30, 30), 50.0)))
    assert (res.labels > 0).all()
    assert "dem_flat" in res.qa.codes()


def test_one_cell_dem_degrades():
    res = hydrology.route(dem(np.array([[10.0]])), inlets=_inlets(I1=(0, 0)))
    assert res.labels[0, 0] == res.label_of("inlet", "I1")
    assert "dem_too_small" in res.qa.codes()


def test_inlets_outside_dem_are_reported_not_fatal():
    res = hydrology.route(dem(plane()), inlets=_inlets(IN=(5, 5), OUT=(500, 500)))
    assert "inlet_off_dem" in res.qa.codes()
    row = res.targets[res.targets["target_id"] == "OUT"].iloc[0]
    assert row["cells"] == 0 and row["method"] == "off_dem"


def test_a_float32_dem_and_no_kept_conditioned_grid_give_the_same_routing():
    # the town (a bowl, a valley, the creek, inlets and a one-cell pit), its elevations
    # float32 values: routed from a float32 and from a float64 array, with and without
    # the conditioned grid kept, every answer is the same
    z32 = town_dem().astype(np.float32)
    z32[70, 20] -= np.float32(0.2)
    z32[5:9, 100:104] = np.nan  # a nodata hole
    layers = {"inlets": _inlets(I1=(30, 60), I2=(60, 60), I3=(90, 60))}
    ref = hydrology.route(dem(z32.astype(np.float64)), **layers)
    d32 = Dem(array=z32, transform=TR, crs=CRS18)
    for res in (
        hydrology.route(d32, **layers),
        hydrology.route(d32, keep_conditioned=False, **layers),
    ):
        assert np.array_equal(res.labels, ref.labels)
        assert np.array_equal(res.d8, ref.d8)
        pd.testing.assert_frame_equal(res.targets, ref.targets)
        pd.testing.assert_frame_equal(res.depression_table, ref.depression_table)
        assert np.array_equal(res.valid, ref.valid) and not res.valid[6, 101]
    assert res.conditioned is None and ref.conditioned.dtype == np.float64
    assert (ref.targets["target_kind"] == "depression").sum() == 1
