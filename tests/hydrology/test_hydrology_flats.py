"""Flats beside a real depression (docs/hydrology.md, step 3), worked out by hand.

The terrain: a dead-flat terrace at 100 m (rows 20 - 119 of a 160 x 240 grid of 1 m
cells), a hill north of it, a slope south of it falling 0.05 m per cell to the DEM's
south edge, and in the terrace a cone-shaped kettle 1 m deep, 15 cells in radius,
centred on (70, 120).  Only the kettle holds water: its cells lie below the terrace,
which is at the spill level itself (depth 0) and drains across its flat to the DEM
edge.  The fill's flat resolution raises the terrace by about 1e-9 m; that is not
ponding, and the terrace must not join the kettle's depression.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
import shapely
from affine import Affine
from pyproj import CRS

from ms4map import drainage, hydrology
from ms4map.io.workspace import Dem

CRS18 = CRS.from_epsg(26918)
X0, Y0 = 500_000.0, 4_700_000.0
H, W = 160, 240


def _terrace(base: float) -> tuple[np.ndarray, np.ndarray]:
    r, c = np.mgrid[0:H, 0:W].astype(float)
    z = np.full((H, W), base)
    z = np.where(r < 20, base + 1.0 + 0.05 * (19 - r), z)  # the hill
    z = np.where(r >= 120, base - 0.05 * (r - 119), z)  # the slope to the south edge
    kettle = np.clip(1.0 - np.hypot(r - 70, c - 120) / 15.0, 0, None)
    return z - kettle, kettle > 0


def _route(base: float) -> hydrology.OverlandResult:
    z, _ = _terrace(base)
    return hydrology.route(Dem(array=z, transform=Affine(1, 0, X0, 0, -1, Y0), crs=CRS18))


def _box(r0: int, c0: int, r1: int, c1: int) -> shapely.Polygon:
    return shapely.box(X0 + c0, Y0 - r1, X0 + c1, Y0 - r0)


@pytest.fixture(scope="module")
def at_100() -> hydrology.OverlandResult:
    return _route(100.0)


def test_the_depression_is_the_kettle_not_the_flat_terrace(at_100):
    _, kettle = _terrace(100.0)
    dep = at_100.depression_table
    # by hand: the cells within 15 cells of the centre, below the terrace (697 of them)
    assert int(kettle.sum()) == 697
    assert dep["cells"].tolist() == [697]
    assert dep["area_m2"].tolist() == [697.0]
    assert dep["max_depth_m"].iloc[0] == pytest.approx(1.0, abs=0.01)
    labels_dep = at_100.targets.loc[at_100.labels[kettle], "target_kind"]
    assert set(labels_dep) == {"depression"}


def test_a_lot_on_the_terrace_far_from_the_kettle_drains_off_the_dem(at_100):
    lots = gpd.GeoDataFrame(
        {"parcel_id": ["FAR", "KETTLE"]},
        geometry=[_box(30, 200, 60, 230), _box(60, 110, 80, 130)],
        crs=CRS18,
    )
    tab = drainage.parcel_drainage(lots, at_100)
    far = tab[tab["parcel_id"] == "FAR"]
    assert far["target_kind"].tolist() == ["off_dem"]
    assert far["fraction"].sum() == pytest.approx(1.0)
    kettle_lot = tab[tab["parcel_id"] == "KETTLE"]  # wholly within 15 cells of the centre
    assert kettle_lot["target_kind"].tolist() == ["depression"]
    assert kettle_lot["fraction"].sum() == pytest.approx(1.0)


def test_the_answer_does_not_depend_on_the_elevation_datum(at_100):
    # the same terrain 1,500 m higher: the flat gradient grows with the elevation's
    # magnitude, the depression must not
    high = _route(1600.0)
    assert high.depression_table["cells"].tolist() == [697]
    kinds_low = at_100.targets["target_kind"].reindex(at_100.labels.ravel()).to_numpy()
    kinds_high = high.targets["target_kind"].reindex(high.labels.ravel()).to_numpy()
    assert np.array_equal(kinds_low, kinds_high)
