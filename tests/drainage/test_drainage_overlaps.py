"""Parcels that overlap, and a parcel smaller than a cell across the DEM's edge: each
worked out by hand (docs/hydrology.md, the parcel overlay).

The terrain: 40 x 40 cells of 1 m, an east-west ridge between rows 19 and 20 falling
0.1 m per row to a creek along the north edge (rows 0 - 1, ``N``) and one along the
south edge (rows 38 - 39, ``S``).  Every cell north of the ridge drains to N, every
cell south of it to S, but those of the east and west columns, which drain off the DEM
(its edge is an outlet).
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
import shapely
from affine import Affine
from pyproj import CRS

from ms4map import drainage
from ms4map.core.errors import DataError
from ms4map.hydrology import overland
from ms4map.io.workspace import Dem

CRS18 = CRS.from_epsg(26918)
X0, Y0 = 500_000.0, 4_700_000.0


def _box(r0: float, c0: float, r1: float, c1: float) -> shapely.Polygon:
    """Rows r0 - r1 and columns c0 - c1 of the grid (cell edges)."""
    return shapely.box(X0 + c0, Y0 - r1, X0 + c1, Y0 - r0)


@pytest.fixture(scope="module")
def ridge() -> overland.OverlandResult:
    r = np.mgrid[0:40, 0:40][0].astype(float)
    z = 10.0 - 0.1 * np.abs(r - 19.5)
    creeks = gpd.GeoDataFrame(
        {"wb_id": ["1302-0001", "1302-0002"], "name": ["N", "S"]},
        geometry=[_box(0, 0, 2, 40), _box(38, 0, 40, 40)],
        crs=CRS18,
    )
    dem = Dem(array=z, transform=Affine(1, 0, X0, 0, -1, Y0), crs=CRS18)
    return overland.route(dem, waterbodies=creeks)


def _shares(tab, pid: str) -> dict[str, float]:
    t = tab[tab["parcel_id"] == pid]
    out: dict[str, float] = {}
    for kind, rw, f in zip(t["target_kind"], t["receiving_water"], t["fraction"], strict=True):
        key = rw if kind == "water_direct" else kind
        out[key] = round(out.get(key, 0.0) + f, 6)
    return out


def test_overlapping_parcels_each_keep_all_their_cells(ridge):
    lots = gpd.GeoDataFrame(
        {"parcel_id": ["BIG", "SMALL", "CONDO_A", "CONDO_B", "NEXT"]},
        geometry=[
            _box(5, 5, 35, 25),  # 15 rows each side of the ridge: 1/2 N, 1/2 S
            _box(12, 8, 20, 14),  # inside BIG, all north of the ridge: all N
            _box(10, 26, 30, 34),  # a condominium stack: two identical polygons,
            _box(10, 26, 30, 34),  # 10 rows each side: 1/2 N, 1/2 S each
            _box(5, 34, 29, 39),  # touches the stack only along its edge: 15 N, 9 S
        ],
        crs=CRS18,
    )
    tab = drainage.parcel_drainage(lots, ridge)
    assert _shares(tab, "BIG") == {"N": 0.5, "S": 0.5}  # SMALL's cells are BIG's too
    assert _shares(tab, "SMALL") == {"N": 1.0}
    assert _shares(tab, "CONDO_A") == {"N": 0.5, "S": 0.5}
    assert _shares(tab, "CONDO_B") == {"N": 0.5, "S": 0.5}
    assert _shares(tab, "NEXT") == {"N": pytest.approx(15 / 24), "S": pytest.approx(9 / 24)}
    assert set(tab["method"]) == {"d8_catchment"}  # none treated as smaller than a cell


def test_a_stack_of_300_condominium_units_each_keeps_all_its_cells(ridge):
    # more units than 8 bits count: the cover of the stack saturates, it does not wrap
    # to 0 or 1 (where 256 or 257 units would be taken for no overlap)
    stack = [_box(10, 26, 30, 34)] * 300
    lots = gpd.GeoDataFrame(
        {"parcel_id": [f"U{i}" for i in range(300)] + ["NEXT"]},
        geometry=[*stack, _box(5, 34, 29, 39)],
        crs=CRS18,
    )
    tab = drainage.parcel_drainage(lots, ridge)
    for pid in ("U0", "U128", "U255", "U256"):
        assert _shares(tab, pid) == {"N": 0.5, "S": 0.5}
    assert _shares(tab, "NEXT") == {"N": pytest.approx(15 / 24), "S": pytest.approx(9 / 24)}


def test_a_parcel_smaller_than_a_cell_across_the_dem_edge_keeps_its_share_on_it(ridge):
    # 1 m wide, 0.3 m tall, in row 38 (creek S) between no cell centres: 0.4 of it on
    # the DEM (x 39.6 - 40.0), 0.6 beyond its east edge.  (A cell of the DEM's edge
    # that is no target drains off the DEM, so the sliver lies on the creek's cells.)
    sliver = _box(38.6, 39.6, 38.9, 40.6)
    lots = gpd.GeoDataFrame({"parcel_id": ["SLIVER"]}, geometry=[sliver], crs=CRS18)
    tab = drainage.parcel_drainage(lots, ridge)
    assert _shares(tab, "SLIVER") == {"S": pytest.approx(0.4), "off_dem": pytest.approx(0.6)}
    on = tab[tab["target_kind"] == "water_direct"]
    assert on["method"].tolist() == ["representative_point"]


def test_a_layer_in_another_crs_than_the_dem_is_refused_naming_it(ridge):
    # the same lot in New York State Plane feet: its coordinates fall off the UTM grid,
    # which would make it 100 % off_dem without another sign
    lot = gpd.GeoDataFrame({"parcel_id": ["P"]}, geometry=[_box(10, 10, 20, 20)], crs=CRS18)
    with pytest.raises(DataError, match=r"Layer 'parcels' is in EPSG:2261.*to_crs"):
        drainage.parcel_drainage(lot.to_crs("EPSG:2261"), ridge)
    inlet = gpd.GeoDataFrame(
        {"node_id": ["I"]}, geometry=[shapely.Point(X0 + 20.5, Y0 - 30.5)], crs=CRS18
    ).to_crs("EPSG:2261")
    dem = Dem(array=np.full((40, 40), 5.0), transform=Affine(1, 0, X0, 0, -1, Y0), crs=CRS18)
    with pytest.raises(DataError, match=r"Layer 'inlets' is in EPSG:2261"):
        overland.route(dem, inlets=inlet)
