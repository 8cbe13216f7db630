"""The trace command never writes over its inputs and records provenance."""

from __future__ import annotations

import hashlib
import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import rasterio
from affine import Affine
from pyproj import CRS
from shapely.geometry import LineString, Point

from ms4map.cli import main

UTM = CRS.from_epsg(26918)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def town(tmp_path):
    """A GeoPackage (inlet -> outfall) with its DEM next to it (``town_dem.tif``)."""
    gpkg = tmp_path / "town.gpkg"
    st = gpd.GeoDataFrame(
        {"struct_id": ["CB1", "OF1"], "kind": ["catch_basin", "outfall"]},
        geometry=[Point(0, 0), Point(100, 0)],
        crs=UTM,
    )
    cv = gpd.GeoDataFrame(
        {"conv_id": ["P1"], "kind": ["pipe"]}, geometry=[LineString([(0, 0), (100, 0)])], crs=UTM
    )
    st.to_file(gpkg, layer="structures", driver="GPKG")
    cv.to_file(gpkg, layer="conveyances", driver="GPKG")
    dem = tmp_path / "town_dem.tif"
    with rasterio.open(
        dem,
        "w",
        driver="GTiff",
        width=20,
        height=20,
        count=1,
        dtype="float32",
        crs=UTM,
        transform=Affine(10, 0, -50, 0, -10, 50),
    ) as dst:
        dst.write(np.ones((1, 20, 20), dtype="float32"))
    return tmp_path, gpkg, dem


@pytest.mark.parametrize(
    "extra",
    [
        ["--all", "--out", "{gpkg}"],
        ["--all", "--out", "{tmp}/t.csv", "--qa", "{gpkg}"],
        ["--all", "--out", "{tmp}/t.csv", "--qa", "{dem}"],
        ["--from", "CB1", "--qa", "{dem}"],
        ["--all", "--out", "{tmp}/t.csv", "--qa", "{tmp}/t.csv"],
        ["--all", "--out", "{tmp}/t.gpkg", "--qa", "{tmp}/t.gpkg"],
        ["--all", "--out", "{tmp}/t.txt"],
        ["--from", "CB1", "--out", "{tmp}/t.csv"],
    ],
)
def test_outputs_never_overwrite_inputs(town, extra, capsys):
    tmp, gpkg, dem = town
    before = {p: _digest(p) for p in (gpkg, dem)}
    args = [a.format(tmp=tmp, gpkg=gpkg, dem=dem) for a in extra]
    assert main(["trace", str(gpkg), *args]) == 4
    assert "error" in capsys.readouterr().err
    assert {p: _digest(p) for p in (gpkg, dem)} == before
    # nothing at all was written before the refusal
    assert sorted(p.name for p in tmp.iterdir()) == ["town.gpkg", "town_dem.tif"]


def test_csv_has_provenance_sidecar_and_folders_are_made(town):
    tmp, gpkg, dem = town
    out = tmp / "new" / "trace.csv"
    qa = tmp / "new" / "qa.csv"
    assert (
        main(
            [
                "trace",
                str(gpkg),
                "--all",
                "--out",
                str(out),
                "--qa",
                str(qa),
                "--snap-tolerance",
                "2",
            ]
        )
        == 0
    )
    df = pd.read_csv(out)  # a plain CSV: no comment lines
    assert list(df["struct_id"]) == ["CB1", "OF1"]
    prov = json.loads((tmp / "new" / "trace.csv.provenance.json").read_text())
    assert prov["settings"]["snap_tolerance_m"] == 2
    assert prov["inputs"][str(gpkg.resolve())] == _digest(gpkg)
    assert prov["output"] == "trace.csv"
    assert (tmp / "new" / "qa.csv.provenance.json").exists()


def test_gpkg_out_is_a_real_geopackage_layer(town):
    import ms4map.io

    tmp, gpkg, _ = town
    out = tmp / "trace.gpkg"
    assert main(["trace", str(gpkg), "--all", "--out", str(out), "--qa", str(tmp / "qa.md")]) == 0
    layer = gpd.read_file(out, layer="structure_outfalls")
    assert list(layer["outfall_id"]) == ["OF1", "OF1"]
    assert layer.geometry.iloc[0].equals(Point(0, 0))
    assert ms4map.io.read_provenance(out)["inputs"][str(gpkg.resolve())] == _digest(gpkg)
    assert "sha256" in (tmp / "qa.md").read_text()


def test_a_stopped_csv_write_never_leaves_the_old_provenance(town, monkeypatch):
    """The sidecar first says the table is being written, last records it with its
    SHA-256: a run stopped before that record leaves "complete": false, never the old
    run's provenance beside the new table (an audit stopped it there: snap 9 beside 1)."""
    tmp, gpkg, _dem = town
    out = tmp / "t.csv"
    sidecar = tmp / "t.csv.provenance.json"
    assert main(["trace", str(gpkg), "--all", "--out", str(out)]) == 0
    prov = json.loads(sidecar.read_text())
    assert prov["complete"] is True and prov["output_sha256"] == _digest(out)
    import ms4map.io as msio

    real, calls = msio.write_text_output, []

    def stop_at_the_record(path, *a, **k):
        calls.append(path)
        if len(calls) == 3:  # the sidecar's record, after the table
            raise KeyboardInterrupt
        return real(path, *a, **k)

    monkeypatch.setattr(msio, "write_text_output", stop_at_the_record)
    code = main(["trace", str(gpkg), "--all", "--out", str(out), "--snap-tolerance", "9"])
    assert code == 130 and len(calls) == 3  # interrupted (Ctrl+C)
    assert json.loads(sidecar.read_text())["complete"] is False
