"""A field map for a role fed by several source layers (the Esri LGIM layout).

Gravity mains have MATERIAL, connector links do not: ``--field conveyances.material=
MATERIAL`` is a warning naming the links (their material is empty), never a stop. A
column no source layer has is an error that offers the closest column names.
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import pytest
from shapely.geometry import LineString, Point

import ms4map
from ms4map.cli import main
from ms4map.core.errors import ValidationError

UTM18 = "EPSG:26918"


@pytest.fixture
def lgim(tmp_path: Path) -> Path:
    path = tmp_path / "lgim.gpkg"
    st = gpd.GeoDataFrame(
        {"FACILITYID": ["MH1", "MH2", "MH3"]},
        geometry=[Point(0, 0), Point(100, 0), Point(100, 50)],
        crs=UTM18,
    )
    mains = gpd.GeoDataFrame(
        {"FACILITYID": ["GM1"], "MATERIAL": ["RCP"]},
        geometry=[LineString([(0, 0), (100, 0)])],
        crs=UTM18,
    )
    links = gpd.GeoDataFrame(
        {"FACILITYID": ["CL1"]}, geometry=[LineString([(100, 50), (100, 0)])], crs=UTM18
    )
    st.to_file(path, layer="structures", driver="GPKG")
    mains.to_file(path, layer="gravity_mains", driver="GPKG")
    links.to_file(path, layer="connector_links", driver="GPKG")
    return path


LAYERS = {"structures": ["structures"], "conveyances": ["gravity_mains", "connector_links"]}


def test_column_some_layers_lack_is_a_warning_naming_them(lgim: Path) -> None:
    ws = ms4map.open_workspace(
        lgim, layers=LAYERS, field_map={"conveyances": {"material": "MATERIAL"}}
    )
    cv = ws.layers["conveyances"].set_index("src_layer")
    assert cv.loc["gravity_mains", "material"] == "RCP"
    assert cv.loc[["connector_links"], "material"].isna().all()
    f = [x for x in ws.qa.findings if x.code == "column_missing_in_some_layers"]
    assert len(f) == 1 and f[0].level == "warning"
    assert f[0].layer == "connector_links"
    assert "'connector_links' does not have" in f[0].message
    assert "only 'gravity_mains' has it" in f[0].message
    assert "--field conveyances.connector_links.material=COLUMN" in f[0].fix
    assert not ws.qa.has_errors


def test_column_no_layer_has_is_an_error_with_the_closest_names(lgim: Path) -> None:
    with pytest.raises(ValidationError) as exc:
        ms4map.open_workspace(
            lgim, layers=LAYERS, field_map={"conveyances": {"material": "MATERAL"}}
        )
    errs = [x for x in exc.value.report.findings if x.code == "missing_column"]
    assert {e.layer for e in errs} == {"gravity_mains", "connector_links"}
    mains = next(e for e in errs if e.layer == "gravity_mains")
    assert "Did you mean 'MATERIAL'?" in mains.fix
    assert "--field conveyances.material=MATERIAL" in mains.fix


def test_layer_specific_entry_the_layer_lacks_stays_an_error(lgim: Path) -> None:
    fm = {"conveyances": {"connector_links": {"material": "MATERIAL"}}}
    with pytest.raises(ValidationError, match="connector_links"):
        ms4map.open_workspace(lgim, layers=LAYERS, field_map=fm)


def test_cli_runs_with_the_role_wide_field(lgim: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    args = ["trace", str(lgim), "--all", "--out", str(out)]
    args += ["--layer", "conveyances=gravity_mains", "--layer", "conveyances=connector_links"]
    args += ["--field", "conveyances.material=MATERIAL"]
    assert main(args) == 0
    assert out.exists()
