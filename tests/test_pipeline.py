"""Pipeline caching and the ``ms4map drainage`` command."""

from __future__ import annotations

import pyogrio
import pytest
import rasterio
from test_hydrology_overland_fixtures import CRS18, TR, town_dem, town_layers, town_workspace

from ms4map import pipeline
from ms4map.cli import main
from ms4map.core.errors import UsageError


def test_second_run_is_cached_and_settings_key_the_cache():
    pipeline.clear_cache()
    ws = town_workspace()
    a = pipeline.run(ws)
    assert not any(a.cached.values())
    b = pipeline.run(ws)
    assert all(b.cached.values())
    assert b.overland is a.overland and b.drainage is a.drainage
    c = pipeline.run(ws, min_depth_m=5.0)  # overland changes, the network does not
    assert c.cached["network"] and not c.cached["overland"]
    assert not (c.overland.targets["target_kind"] == "depression").any()


def test_in_memory_workspaces_with_other_data_do_not_collide():
    pipeline.clear_cache()
    a = pipeline.run(town_workspace())
    z = town_dem()
    z[:, :] = z[:, ::-1]  # mirrored terrain
    b = pipeline.run(town_workspace(array=z))
    assert not b.cached["overland"]
    assert (a.overland.labels != b.overland.labels).any()


def test_disk_cache_survives_clearing_memory(tmp_path):
    pipeline.clear_cache()
    ws = town_workspace()
    pipeline.run(ws, cache_dir=tmp_path)
    pipeline.clear_cache()
    again = pipeline.run(ws, cache_dir=tmp_path)
    assert again.cached["overland"] and again.cached["drainage"]
    assert list(tmp_path.glob("overland-*.pkl"))


def test_unknown_or_negative_setting_is_a_usage_error():
    with pytest.raises(UsageError, match="Unknown setting"):
        pipeline.run(town_workspace(), min_dept_m=1)
    with pytest.raises(UsageError, match="non-negative"):
        pipeline.run(town_workspace(), min_area_m2=-5)


@pytest.fixture()
def town_files(tmp_path):
    gpkg = tmp_path / "town.gpkg"
    for name, df in town_layers().items():
        df.drop(columns=["src_layer", "src_fid"]).to_file(gpkg, layer=name, driver="GPKG")
    z = town_dem()
    with rasterio.open(
        tmp_path / "town_dem.tif",
        "w",
        driver="GTiff",
        width=z.shape[1],
        height=z.shape[0],
        count=1,
        dtype="float64",
        crs=CRS18.to_wkt(),
        transform=TR,
        nodata=-9999.0,
    ) as ds:
        ds.write(z, 1)
        ds.update_tags(1, UNITTYPE="metre")
    return gpkg


def test_cli_writes_the_four_layers_without_touching_inputs(town_files, capsys):
    before = town_files.read_bytes()
    out = town_files.parent / "result.gpkg"
    code = main(["drainage", str(town_files), "--out", str(out)])
    assert code == 0
    assert town_files.read_bytes() == before
    layers = {name for name, _ in pyogrio.list_layers(out)}
    assert {"parcel_drainage", "inlet_catchments", "sewersheds", "qa", "provenance"} <= layers
    d = pyogrio.read_dataframe(out, layer="parcel_drainage")
    assert d.groupby("parcel_id")["fraction"].sum().sub(1).abs().max() < 1e-6
    err = capsys.readouterr().err
    assert "conditioning the DEM" in err  # progress on long steps


def test_cli_default_output_is_the_sidecar(town_files):
    pipeline.clear_cache()
    assert main(["drainage", str(town_files), "--quiet"]) == 0
    assert (town_files.parent / "town.ms4map.gpkg").exists()


def test_cli_refuses_to_overwrite_an_input(town_files, capsys):
    code = main(["drainage", str(town_files), "--out", str(town_files), "--quiet"])
    assert code == 4
    assert "Refusing" in capsys.readouterr().err
