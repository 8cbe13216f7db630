"""Parcel drainage table, sewersheds and point queries on the tiny town."""

from __future__ import annotations

import itertools

import geopandas as gpd
import numpy as np
import pytest
import shapely
from test_hydrology_overland_fixtures import (
    CRS18,
    cell_box,
    i1_fraction_by_hand,
    town_workspace,
    xy,
)

from ms4map import drainage, pipeline
from ms4map.analysis import polygon_drainage, what_drains_here, where_does_it_drain
from ms4map.analysis.queries import DrainagePath
from ms4map.drainage import COLUMNS, METHODS, TARGET_KINDS
from ms4map.drainage.parcels import _geojson_pairs, _pair_counts


@pytest.fixture(scope="module")
def res():
    pipeline.clear_cache()
    return pipeline.run(town_workspace())


def _rows(table, pid):
    return table[table["parcel_id"] == pid].set_index(["target_kind", "target_id"])["fraction"]


def test_columns_kinds_methods_and_sums(res):
    d = res.drainage
    assert list(d.columns) == COLUMNS
    assert set(d["target_kind"]) <= set(TARGET_KINDS)
    assert set(d["method"]) <= set(METHODS)
    sums = d.groupby("parcel_id")["fraction"].sum()
    assert len(sums) == len(res.overland.targets) * 0 + 36
    assert np.allclose(sums.to_numpy(), 1.0, atol=1e-6)


def test_fractions_match_hand_computation(res):
    d = res.drainage
    for pid, (r0, c0) in {"P000_040": (0, 40), "P020_040": (20, 40)}.items():
        got = _rows(d, pid).get(("inlet", "I1"), 0.0)
        assert got == pytest.approx(i1_fraction_by_hand(r0, c0, r0 + 20, c0 + 20), abs=0.01)


def test_join_inlet_outfall_receiving_water(res):
    d = res.drainage
    row = d[(d["parcel_id"] == "P040_060") & (d["target_id"] == "I2")].iloc[0]
    assert row["outfall_id"] == "OF1"
    assert row["receiving_water"] == "Test Creek" and row["pwl_id"] == "1302-0001"
    assert "outfall OF1" in row["reason"]


def test_depression_parcel_is_internally_drained(res):
    fr = _rows(res.drainage, "P000_000")
    dep = [v for (k, _), v in fr.items() if k == "depression"]
    assert dep and dep[0] > 0.9


def test_south_bank_drains_direct_to_water(res):
    d = res.drainage
    rows = d[d["parcel_id"] == "P100_020"]
    assert (rows["target_kind"] == "water_direct").all()
    assert rows["pwl_id"].iloc[0] == "1302-0001" and rows["receiving_water"].iloc[0] == "Test Creek"
    assert rows["outfall_id"].isna().all()


def test_sewersheds_do_not_overlap_and_cover_inlet_catchments(res):
    sw = res.sewersheds
    assert set(sw["outfall_id"]) == {"OF1", "OF2"}
    for a, b in itertools.combinations(sw.geometry, 2):
        assert a.intersection(b).area < 1e-6
    of1 = sw[sw["outfall_id"] == "OF1"].geometry.iloc[0]
    ic = res.inlet_catchments
    for g in ic[ic["outfall_id"] == "OF1"].geometry:
        assert of1.buffer(1e-6).contains(g)
    assert sw[sw["outfall_id"] == "OF1"]["inlets"].iloc[0] == 3


def test_parcel_smaller_than_a_cell_uses_representative_point(res):
    x, y = xy(10, 60)
    tiny = gpd.GeoDataFrame(
        {"parcel_id": ["T1"]},  # holds no cell centre
        geometry=[shapely.Point(x + 0.6, y + 0.6).buffer(0.3)],
        crs=CRS18,
    )
    d = drainage.parcel_drainage(tiny, res.overland, join=res.join)
    assert len(d) == 1
    assert d["method"].iloc[0] == "representative_point"
    assert d["target_id"].iloc[0] == "I1" and d["fraction"].iloc[0] == 1.0


def test_parcel_partly_off_dem_gets_off_dem_share(res):
    half_out = gpd.GeoDataFrame(
        {"parcel_id": ["X"]}, geometry=[cell_box(0, 110, 10, 130)], crs=CRS18
    )
    d = drainage.parcel_drainage(half_out, res.overland, join=res.join)
    off = d[d["target_kind"] == "off_dem"]
    assert off["fraction"].sum() == pytest.approx(0.5, abs=1e-6)
    assert (off["method"] == "off_dem").all()
    assert d["fraction"].sum() == pytest.approx(1.0)


def test_nodata_under_parcel_is_unknown():
    from test_hydrology_overland_fixtures import town_dem

    z = town_dem()
    z[40:50, 20:30] = np.nan
    r = pipeline.run(town_workspace(array=z))
    fr = r.drainage[r.drainage["parcel_id"] == "P040_020"]
    unk = fr[fr["target_kind"] == "unknown"]
    assert unk["fraction"].sum() == pytest.approx(100 / 400)
    assert (unk["method"] == "dem_nodata").all()


def test_no_dem_falls_back_to_nearest_inlet():
    r = pipeline.run(town_workspace(with_dem=False), settings={"fallback_distance_m": 30})
    d = r.drainage
    assert set(d["method"]) <= {"nearest_inlet", "no_dem"}
    near = d[d["parcel_id"] == "P020_060"].iloc[0]  # holds I1's point
    assert near["method"] == "nearest_inlet" and near["target_id"] == "I1"
    assert near["outfall_id"] == "OF1"
    far = d[d["parcel_id"] == "P000_000"].iloc[0]
    assert far["target_kind"] == "unknown" and far["method"] == "no_dem"
    assert "no_dem" in r.qa.codes()


def test_where_does_it_drain_joins_surface_and_pipes(res):
    out = where_does_it_drain(res, shapely.Point(xy(10, 50)))
    assert out.target_kind == "inlet" and out.target_id == "I1"
    assert out.outfall_ids[0] == "OF1" and out.receiving_water == "Test Creek"
    g = out.geometry
    assert g.distance(shapely.Point(xy(99, 60))) < 1.0  # reaches the outfall
    assert g.distance(shapely.Point(xy(10, 50))) < 1e-6


def test_drainage_path_is_the_typed_answer_of_where_does_it_drain(res):
    for pt in (xy(10, 50), xy(50, 60), (-1e6, -1e6)):
        path = where_does_it_drain(res, shapely.Point(pt))
        assert isinstance(path, DrainagePath)
        out = path.to_dict()
        assert DrainagePath.from_dict(out) == path and list(out) == list(
            DrainagePath.from_dict(out).to_dict()
        )
        assert path.target_kind == out["target_kind"] and path.method == out["method"]
    no_dem = pipeline.run(town_workspace(with_dem=False))
    path = where_does_it_drain(no_dem, shapely.Point(xy(10, 50)))
    assert DrainagePath.from_dict(path.to_dict()) == path and path.method == "no_dem"


def test_what_drains_here_outfall_and_point(res):
    of = what_drains_here(res, outfall_id="OF1")
    sw = res.sewersheds.set_index("outfall_id").loc["OF1"]
    assert of.geometry.iloc[0].area == pytest.approx(sw.geometry.area)
    # a point on the pipe network (I2): its own surface area plus I1 upstream in the pipes
    at_i2 = what_drains_here(res, shapely.Point(xy(60, 60)))
    ic = res.inlet_catchments.set_index("node_id")
    assert at_i2["area_m2"].iloc[0] == pytest.approx(
        ic.loc["I1", "area_m2"] + ic.loc["I2", "area_m2"]
    )
    # a point on open land: its surface catchment only
    land = what_drains_here(res, shapely.Point(xy(50, 60)))
    assert 0 < land["area_m2"].iloc[0] < ic.loc["I2", "area_m2"]


def test_polygon_drainage_of_a_site(res):
    d = polygon_drainage(res, cell_box(0, 40, 20, 60))
    assert "parcel_id" not in d.columns
    assert d["fraction"].sum() == pytest.approx(1.0)
    assert d.set_index("target_id")["fraction"]["I1"] == pytest.approx(
        i1_fraction_by_hand(0, 40, 20, 60), abs=0.01
    )


def test_pair_counts_equal_unique_over_every_cell() -> None:
    """The run-based (parcel, label) counting of the overlay gives exactly what
    ``np.unique`` over every cell gives, also with runs cut by block edges."""
    rng = np.random.default_rng(3)
    for h, w, block in ((37, 53, 5), (64, 64, 256), (1, 9, 1), (20, 1, 3)):
        codes = np.repeat(rng.integers(0, 6, size=(h, (w + 3) // 4)), 4, axis=1)[:, :w]
        labels = np.repeat(rng.integers(0, 4, size=(h, (w + 1) // 2)), 2, axis=1)[:, :w]
        nl = 4
        m = codes.ravel() > 0
        want_k, want_c = np.unique(
            codes.ravel()[m].astype(np.int64) * nl + labels.ravel()[m], return_counts=True
        )
        got_k, got_c = _pair_counts(codes.astype(np.int32), labels, nl, block_rows=block)
        assert np.array_equal(got_k, want_k) and np.array_equal(got_c, want_c)
    k, c = _pair_counts(np.zeros((4, 4), np.int32), np.ones((4, 4), np.int32), 2)
    assert k.size == 0 and c.size == 0


def test_geojson_pairs_equal_the_geojson_text_round_trip() -> None:
    from ms4map.hydrology.overland import geojson_shapes

    holes = shapely.Polygon(
        [(0, 0), (10, 0), (10, 10), (0, 10)],
        [[(2, 2), (3, 2), (3, 3), (2, 2)], [(5, 5), (6, 5), (6, 6), (5, 5)]],
    )
    geoms = np.array(
        [
            cell_box(0, 0, 3, 4),
            holes,
            shapely.Polygon(),
            shapely.MultiPolygon([cell_box(0, 0, 1, 1), cell_box(5, 5, 6, 7)]),
            shapely.Polygon([(0.1, 0.2, 5.0), (1.3, 0.2, 5.0), (1.3, 1.7, 5.0)]),
            shapely.Point(1, 2),
            shapely.Polygon([(500000.123456789, 1.0), (500001.987654321, 1.0), (500001.5, 2.5)]),
        ],
        dtype=object,
    )
    values = list(range(1, len(geoms) + 1))
    assert _geojson_pairs(geoms, values) == list(geojson_shapes(geoms, values))
    assert _geojson_pairs(geoms[:0], []) == []


def test_partly_unknown_warning_counts_parcels_by_cause(res):
    found = [f for f in res.qa.findings if f.code == "drainage_partly_unknown"]
    d = res.drainage
    unk = d[d["target_kind"].isin(["unknown", "off_dem"])]
    assert len(found) == 1 and found[0].count == unk["parcel_id"].nunique()
    for reason, n in unk.groupby("reason")["parcel_id"].nunique().items():
        assert f"{n} ({reason})" in found[0].message


def test_parcel_cells_computed_beforehand_give_the_same_table(res):
    # the pipeline rasterizes the parcels during the fill; the table must not depend on it
    ws = town_workspace()
    parcels = ws.get("parcels")
    ov = res.overland
    cells = drainage.parcel_cells(parcels.geometry.values, ov.shape, ov.transform)
    assert cells.raster.shape == ov.shape and cells.raster.max() == len(parcels)
    before = drainage.parcel_drainage(parcels, ov, join=res.join, cells=cells)
    alone = drainage.parcel_drainage(parcels, ov, join=res.join)
    assert before.equals(alone) and before.equals(res.drainage)
    # cells of another grid are not used (recomputed for the routing's grid)
    other = drainage.parcel_cells(parcels.geometry.values, (5, 5), ov.transform)
    assert drainage.parcel_drainage(parcels, ov, join=res.join, cells=other).equals(alone)


def test_the_16_bit_parcel_raster_gives_the_32_bit_table(res, monkeypatch):
    from ms4map.drainage import parcels as dp

    ws = town_workspace()
    parcels = ws.get("parcels")
    ov = res.overland
    small = drainage.parcel_cells(parcels.geometry.values, ov.shape, ov.transform)
    monkeypatch.setattr(dp, "U16_PARCELS", 1)  # as for a town of 65,535 parcels or more
    wide = drainage.parcel_cells(parcels.geometry.values, ov.shape, ov.transform)
    assert small.raster.dtype == np.uint16 and wide.raster.dtype == np.int32
    assert np.array_equal(small.raster, wide.raster)
    assert drainage.parcel_drainage(parcels, ov, join=res.join, cells=small).equals(
        drainage.parcel_drainage(parcels, ov, join=res.join, cells=wide)
    )


def test_sewersheds_are_the_polygonized_cells_of_their_outfalls(res):
    # each sewershed must be exactly the region of the cells whose first target drains to
    # its outfall: polygonize those cells directly and compare
    from ms4map.hydrology.overland import polygonize

    ov, sheds = res.overland, res.sewersheds
    t = ov.targets
    code = np.zeros(int(ov.labels.max()) + 1, dtype=np.int32)
    outs = list(sheds["outfall_id"])
    for kind, table in (("inlet", res.join.inlet_outfall), ("conveyance", res.join.conv_outfall)):
        rows = t[t["target_kind"] == kind]
        of = table.reindex(rows["target_id"])["outfall_id"].to_numpy()
        for lab, o in zip(rows.index, of, strict=True):
            if isinstance(o, str) and o in outs:
                code[lab] = outs.index(o) + 1
    table = sheds[["outfall_id"]].set_axis(range(1, len(sheds) + 1))
    direct = polygonize(code[ov.labels], table, ov.transform, ov.crs, columns=["outfall_id"])
    assert list(direct["outfall_id"]) == outs
    assert shapely.equals(direct.geometry.values, sheds.geometry.values).all()
    # and no vertex more than the direct polygonization has
    assert (
        shapely.get_num_coordinates(sheds.geometry.values)
        == shapely.get_num_coordinates(direct.geometry.values)
    ).all()
