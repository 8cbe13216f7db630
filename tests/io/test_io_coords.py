"""Coordinates that do not fit their declared CRS are errors (issue 28 item 7).

Parcels in UTM metres declared as EPSG:4326 used to pass validation with 0 errors and
then drain 100 % ``off_dem``; a layer in State Plane feet declared as UTM lay far from
the rest unnoticed.  Both are errors naming the layer, a sample coordinate and the CRS
the numbers fit.
"""

from __future__ import annotations

import shutil
import warnings

import geopandas as gpd
import pytest

from ms4map.cli import main
from ms4map.core.errors import ValidationError
from ms4map.io import open_workspace
from ms4map.io.coords import guess_crs


@pytest.fixture
def town(tmp_path, demo_copy):
    shutil.copy(demo_copy, tmp_path / "town.gpkg")
    shutil.copy(demo_copy.with_name("demo_dem.tif"), tmp_path / "town_dem.tif")
    return tmp_path / "town.gpkg"


def _redeclare(gpkg, layer, *, to=None, declare):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = gpd.read_file(gpkg, layer=layer)
        if to is not None:
            df = df.to_crs(to)
        df = df.set_crs(declare, allow_override=True)
        df.to_file(gpkg, layer=layer, driver="GPKG")


def _errors(gpkg, **kw):
    with pytest.raises(ValidationError) as err:
        open_workspace(gpkg, **kw)
    return err.value.report.errors


def test_utm_parcels_declared_as_degrees_are_an_error_naming_the_utm_zone(town, capsys):
    _redeclare(town, "parcels", declare=4326)
    errors = _errors(town)
    assert [e.code for e in errors] == ["impossible_coordinates"]
    e = errors[0]
    assert e.layer == "parcels"
    assert "EPSG:4326" in e.message and "EPSG:26918" in e.message  # declared, likely
    x, y = gpd.read_file(town, layer="parcels").geometry.iloc[0].exterior.coords[0]
    assert f"({x:.1f}, {y:.1f})" in e.message  # a sample coordinate
    # and the command line stops with the error (exit 2), not 100 % off_dem later
    assert main(["validate", str(town)]) == 2
    assert "impossible_coordinates" in capsys.readouterr().out


def test_without_a_dem_the_guess_comes_from_the_other_layers(town):
    (town.parent / "town_dem.tif").unlink()
    _redeclare(town, "parcels", declare=4326)
    errors = _errors(town)
    assert [e.code for e in errors] == ["impossible_coordinates"]
    assert "EPSG:26918" in errors[0].message


def test_state_plane_feet_declared_as_utm_lie_far_from_the_rest(town):
    _redeclare(town, "outfalls", to=2260, declare=26918)
    errors = _errors(town)
    assert [(e.code, e.layer) for e in errors] == [("far_from_other_layers", "outfalls")]
    assert "EPSG:2260" in errors[0].message  # NY State Plane East, feet
    assert "km from the other layers and the DEM" in errors[0].message


def test_right_crss_are_not_flagged(town):
    # the same town in three CRSs, each declared rightly
    _redeclare(town, "outfalls", to=2260, declare=2260)
    _redeclare(town, "structures", to=4326, declare=4326)
    ws = open_workspace(town)
    codes = {f.code for f in ws.qa.findings}
    assert not codes & {"impossible_coordinates", "far_from_other_layers"}


def test_guess_crs_reads_numbers_in_new_york():
    assert guess_crs((603045.0, 4763520.0), []).to_epsg() == 26918
    assert guess_crs((-73.8, 42.7), []).to_epsg() in (4269, 4326)
    assert guess_crs((1e12, 1e12), []) is None
