"""Pipeline caching and the ``ms4map drainage`` command."""

from __future__ import annotations

import dataclasses
from dataclasses import fields

import geopandas as gpd
import pandas as pd
import pyogrio
import pytest
import rasterio
import shapely
from ms4map.hydrology.overland import DEFAULTS
from test_hydrology_overland_fixtures import CRS18, TR, town_dem, town_layers, town_workspace

from ms4map import pipeline
from ms4map.cli import main
from ms4map.core.errors import UsageError
from ms4map.drainage import NetworkJoin
from ms4map.pipeline import DEFAULT_SETTINGS, Result, Settings, command_settings
from ms4map.pipeline.cache import StepCache
from ms4map.pipeline.settings import DRAINAGE_KEYS, NETWORK_KEYS, OVERLAND_KEYS


def test_second_run_is_cached_and_settings_key_the_cache():
    pipeline.clear_cache()
    ws = town_workspace()
    a = pipeline.run(ws)
    assert not any(a.cached.values())
    b = pipeline.run(ws)
    assert all(b.cached.values())
    assert b.overland is a.overland and b.drainage is a.drainage
    c = pipeline.run(ws, settings={"min_depth_m": 5.0})  # overland changes, the network not
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
        pipeline.run(town_workspace(), settings={"min_dept_m": 1})
    with pytest.raises(UsageError, match="non-negative"):
        pipeline.run(town_workspace(), settings={"min_area_m2": -5})
    with pytest.raises(UsageError, match="non-negative"):
        Settings(min_area_m2=-5)
    with pytest.raises(UsageError, match="Unknown setting"), pytest.warns(DeprecationWarning):
        pipeline.run(town_workspace(), min_dept_m=1)
    with pytest.raises(UsageError, match="non-negative"), pytest.warns(DeprecationWarning):
        pipeline.run(town_workspace(), min_area_m2=-5)


def test_settings_are_one_typed_source_of_defaults_units_and_help():
    assert Settings().as_dict() == DEFAULT_SETTINGS
    assert list(DEFAULT_SETTINGS) == [
        "snap_tolerance_m",
        "water_tolerance_m",
        "lateral_tolerance_m",
        *DEFAULTS,
        "fallback_distance_m",
    ]
    assert {k: DEFAULT_SETTINGS[k] for k in DEFAULTS} == DEFAULTS
    assert command_settings() == {
        **{k: float(v) for k, v in DEFAULTS.items()},
        "fallback_distance_m": 100.0,
    }
    for f in fields(Settings):
        assert f.metadata["unit"] in ("m", "m2") and f.metadata["help"]
    assert Settings.factory(None) == Settings()
    s = Settings(min_depth_m=0.5)
    assert Settings.factory(s) is s
    assert Settings.factory({"min_depth_m": 0.5}) == s
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.min_depth_m = 1.0  # type: ignore[misc]
    with pytest.raises(UsageError):
        Settings.factory([0.5])


def test_keyword_settings_are_deprecated_but_answered_and_keyed_alike():
    pipeline.clear_cache()
    ws = town_workspace()
    a = pipeline.run(ws, settings=Settings(min_depth_m=5.0))
    with pytest.warns(DeprecationWarning, match="settings="):
        b = pipeline.run(ws, min_depth_m=5.0)
    assert all(b.cached.values()) and b.drainage is a.drainage  # the same cache keys
    assert a.settings == b.settings == {**DEFAULT_SETTINGS, "min_depth_m": 5.0}
    c = pipeline.run(ws, settings={"min_depth_m": 5.0})
    assert all(c.cached.values())
    with pytest.raises(UsageError, match="not both"), pytest.warns(DeprecationWarning):
        pipeline.run(ws, settings={"min_depth_m": 5.0}, min_area_m2=1.0)


def test_the_step_cache_keys_are_those_of_the_keyword_settings():
    """The keys are made from the settings' reprs as before: ``5`` and ``5.0`` differ."""
    opts = Settings(min_depth_m=5).as_dict()
    key, _ = StepCache("w", opts, True, None).where("overland", OVERLAND_KEYS)
    assert key[4:] == (
        "min_depth_m=5",
        "min_area_m2=500.0",
        "burn_depth_m=2.0",
        "inlet_depth_m=1.0",
    )
    assert NETWORK_KEYS == ("snap_tolerance_m", "water_tolerance_m", "lateral_tolerance_m")
    assert OVERLAND_KEYS == tuple(DEFAULTS) and DRAINAGE_KEYS == ("fallback_distance_m",)


def test_result_is_typed_with_a_one_line_repr():
    pipeline.clear_cache()
    res = pipeline.run(town_workspace())
    assert isinstance(res, Result) and pipeline.PipelineResult is Result
    assert isinstance(res.join, NetworkJoin)
    text = repr(res)
    assert "\n" not in text and text.startswith("<Result in-memory: ")
    assert set(res.layers()) == {
        "parcel_drainage",
        "parcel_drainage_map",
        "inlet_catchments",
        "sewersheds",
        "qa",
    }


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


def test_cli_options_are_built_from_the_settings(capsys):
    from ms4map.cli.drainage import OPTION_SETTINGS

    assert main(["drainage", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    by_name = {f.name: f for f in fields(Settings)}
    defaults = command_settings()
    for name in OPTION_SETTINGS:
        f = by_name[name]
        option = "--" + name.removesuffix("_" + f.metadata["unit"]).replace("_", "-")
        words = f"{option} {f.metadata['unit'].upper()} {f.metadata['help']}"
        if name in defaults:
            words += f" (default {defaults[name]})"
        assert " ".join(words.split()) in text, name


def test_parcel_drainage_map_lists_each_parcels_outfalls_once_in_the_order_met():
    from ms4map.pipeline.result import parcel_drainage_map

    drainage = pd.DataFrame(
        {
            "parcel_id": ["P1", "P1", "P1", "P2", "P3"],
            "target_kind": ["inlet", "inlet", "inlet", "inlet", "off_dem"],
            "target_id": ["CB2", "CB1", "CB3", "CB1", None],
            "fraction": [0.5, 0.3, 0.2, 1.0, 1.0],
            "outfall_id": ["OF-B", "OF-A", "OF-B", "OF-A", None],
        }
    )
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P1", "P2", "P3"]},
        geometry=[shapely.box(i, 0, i + 1, 1) for i in range(3)],
        crs="EPSG:32618",
    )
    m = parcel_drainage_map(drainage, parcels)
    assert list(m["outfall_ids"][:2]) == ["OF-B;OF-A", "OF-A"]
    assert pd.isna(m["outfall_ids"].iloc[2])  # off the DEM: no outfall
    assert list(m["targets"]) == [3, 1, 1]


@pytest.mark.parametrize("where", ["network_targets", "_overland_step"])
def test_an_error_before_the_routing_ends_the_run_and_frees_the_parcel_raster_thread(
    monkeypatch, where
):
    # the parcel raster's thread waits for the routing step: an error before it (or
    # in it) must end the run with that error, not leave the run waiting on the thread
    import importlib
    import threading
    import time

    run_module = importlib.import_module("ms4map.pipeline.run")  # the module, not run()

    def broken(*_a, **_k):
        time.sleep(1.0)  # the network join is done: the parcel raster's thread waits
        raise RuntimeError(f"{where} failed")

    monkeypatch.setattr(run_module, where, broken)
    ws = town_workspace()
    seen: list[BaseException] = []

    def go() -> None:
        try:
            pipeline.run(ws, use_cache=False)
        except RuntimeError as exc:
            seen.append(exc)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "the run waits for ever on the parcel raster's thread"
    assert [str(e) for e in seen] == [f"{where} failed"]
