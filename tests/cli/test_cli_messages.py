"""CLI messages name the options the user typed; outputs are checked before any work
(issue 10, parts 2 and 6), on the bundled demo town."""

from __future__ import annotations

import os
import subprocess
import sys

import geopandas as gpd
import pytest
from shapely.geometry import Polygon

import ms4map
from ms4map.cli import main

PLAZA = "107.12-2-11"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--acres", "-3"], "--acres is -3 acres, a negative area"),
        (["--acres", "1", "--common-plan-acres", "-2"], "--common-plan-acres is -2 acres"),
        (["--acres", "40"], "--acres (40 acres) is larger than the site itself"),
        (["--acres", "1", "--type", "castle"], "Unknown project type 'castle' (--type)"),
    ],
)
def test_screen_messages_name_the_option(demo_copy, capsys, argv, says) -> None:
    assert main(["screen", str(demo_copy), "--site", PLAZA, *argv]) == 4
    err = capsys.readouterr().err
    assert says in err
    for code_word in ("disturbed_acres", "common_plan_acres", "project_type ="):
        assert code_word not in err


def test_larger_than_site_points_to_the_common_plan_option(demo_copy, capsys) -> None:
    assert main(["screen", str(demo_copy), "--site", PLAZA, "--acres", "40"]) == 4
    assert "--common-plan-acres" in capsys.readouterr().err


def test_polygon_outside_town_in_lat_long_with_swap_hint(demo_copy, tmp_path, capsys) -> None:
    ws = ms4map.open_workspace(demo_copy)
    p = ws.parcels[ws.parcels["parcel_id"] == PLAZA].to_crs(4326).geometry.iloc[0]
    swapped = Polygon([(y, x) for x, y in p.exterior.coords])
    site = tmp_path / "swapped.geojson"
    gpd.GeoSeries([swapped], crs=4326).to_file(site, driver="GeoJSON")
    assert main(["screen", str(demo_copy), "--site-file", str(site), "--acres", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "outside the town" in err and "° N" in err and "° W" in err
    assert "'latitude, longitude'" in err
    assert "np.float64" not in err and "span [" not in err
    far = tmp_path / "far.geojson"
    gpd.GeoSeries([Polygon([(0, 0), (0, 0.01), (0.01, 0.01)])], crs=4326).to_file(far)
    assert main(["screen", str(demo_copy), "--site-file", str(far), "--acres", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "outside the town" in err and "latitude, longitude" not in err


def test_drainage_refuses_an_input_as_output_before_any_work(
    demo_copy, monkeypatch, capsys
) -> None:
    from ms4map import pipeline

    def boom(*a, **k):
        raise AssertionError("the analysis ran before the output path was checked")

    monkeypatch.setattr(pipeline, "run", boom)
    for out in (demo_copy, demo_copy.with_name("demo_dem.tif")):
        assert main(["drainage", str(demo_copy), "--out", str(out), "--quiet"]) == 4
        assert "Refusing to write" in capsys.readouterr().err
    assert main(["drainage", str(demo_copy), "--out", str(demo_copy.with_name("x.csv"))]) == 4


@pytest.mark.skipif(sys.platform != "linux", reason="numpy marks huge pages on Linux only")
@pytest.mark.parametrize(("env", "expected"), [(None, "False"), ("1", "True")])
def test_the_command_line_asks_numpy_for_no_huge_pages_unless_the_user_did(env, expected):
    # the command's process: numpy is not yet imported when it starts, so its switch
    # (NUMPY_MADVISE_HUGEPAGE) is set to 0 before the import; the user's own wins
    code = (
        "import sys, ms4map.cli as c; assert 'numpy' not in sys.modules; "
        "c._no_numpy_hugepages(); import numpy as np; "
        "print(np._core.multiarray._get_madvise_hugepage())"
    )
    environ = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env is not None:
        environ["NUMPY_MADVISE_HUGEPAGE"] = env
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True
    )
    assert out.stdout.strip() == expected
