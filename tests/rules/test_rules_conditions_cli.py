"""`ms4map screen` and evaluate_site end to end on a tiny town GeoPackage (real pipeline)."""

from __future__ import annotations

import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import rasterio
import shapely
from test_hydrology_overland_fixtures import CRS18, TR, town_dem, town_layers

from ms4map.cli import main


@pytest.fixture(scope="module")
def town_gpkg(tmp_path_factory):
    d = tmp_path_factory.mktemp("town")
    path = d / "town.gpkg"
    layers = town_layers()
    parcels = layers["parcels"]
    parcels["sewer"] = np.where(np.arange(len(parcels)) % 3 == 0, "septic", "public")
    parcels["owner"] = [f"Owner {i}" for i in range(len(parcels))]
    parcels["owner_address"] = [f"{i} Main St" for i in range(len(parcels))]
    for role, gdf in layers.items():
        gdf.drop(columns=["src_layer", "src_fid"]).to_file(path, layer=role, driver="GPKG")
    pd.DataFrame(
        {
            "wb_id": ["1302-0001"],
            "pollutant": ["Phosphorus"],
            "category": ["5"],
            "list_year": [2018],
            "source": ["Urban runoff"],
        }
    ).pipe(lambda df: gpd.GeoDataFrame(df, geometry=[None], crs=CRS18)).to_file(
        path, layer="impairments", driver="GPKG"
    )
    arr = town_dem()
    with rasterio.open(
        d / "town_dem.tif",
        "w",
        driver="GTiff",
        height=arr.shape[0],
        width=arr.shape[1],
        count=1,
        dtype="float64",
        crs=CRS18,
        transform=TR,
    ) as dst:
        dst.write(arr, 1)
    return path


def test_screen_site_json(town_gpkg, capsys):
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--site",
            "P020_040",
            "--acres",
            "0.05",
            "--common-plan-acres",
            "2",
            "--type",
            "commercial",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)  # the JSON document alone on stdout
    assert doc["land_development_activity"]["value"] is True
    assert doc["conditions"]["A"]["value"] is True
    assert doc["conditions"]["C"]["value"] is True
    assert doc["drainage"]["receiving_waters"][0]["pwl_id"] == "1302-0001"
    assert doc["provenance"]["workspace_inputs"]


def test_screen_site_text_and_report(town_gpkg, tmp_path, capsys):
    rep = tmp_path / "r.pdf"
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--site",
            "P020_040,P020_060",
            "--acres",
            "0.7",
            "--common-plan-acres",
            "1.5",
            "--report",
            str(rep),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "Condition A: yes" in out and "Condition C: no" in out
    assert "single_family (guessed from property class)" in out  # class 210
    assert "confirm it with --type TYPE" in out and "was guessed" in out
    assert rep.read_bytes().startswith(b"%PDF")


def test_screen_polygon_file(town_gpkg, tmp_path, capsys):
    site = tmp_path / "site.geojson"
    gpd.GeoSeries([shapely.box(500040, 4699860, 500100, 4699900)], crs=CRS18).to_crs(4326).to_file(
        site, driver="GeoJSON"
    )
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--site-file",
            str(site),
            "--acres",
            "0.5",
            "--common-plan-acres",
            "3",
            "--type",
            "residential",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["site"]["kind"] == "polygon"
    assert doc["site"]["label"] == "polygon from site.geojson"
    assert doc["conditions"]["C"]["value"] is True
    # without --type a polygon over one-family lots is not guessed single_family
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--site-file",
            str(site),
            "--acres",
            "0.5",
            "--common-plan-acres",
            "3",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["site"]["parcel_ids"]) > 1 and doc["project_type"]["value"] == "other"
    assert doc["conditions"]["C"]["value"] is True


@pytest.mark.parametrize(
    "argv,code,match",
    [
        (["--site", "NOPE", "--acres", "2"], 2, "Unknown parcel id"),
        (["--site", "P020_040", "--acres", "-2"], 4, "negative"),
        (["--site", "P020_040", "--acres", "2", "--type", "castle"], 4, "Unknown project type"),
        (["--site", "P020_040", "--acres", "2", "--exemption", "x"], 4, "Unknown exemption code"),
        (["--site", "P020_040", "--acres", "900"], 4, "larger than the site"),
        (["--site", "P020_040"], 4, "--acres"),
        (["--site", "P020_040", "--acres", "2", "--profile", "nowhere"], 4, "Unknown profile"),
    ],
)
def test_screen_bad_input(town_gpkg, capsys, argv, code, match):
    assert main(["screen", str(town_gpkg), *argv]) == code
    assert match in capsys.readouterr().err


def test_polygon_outside_town(town_gpkg, tmp_path, capsys):
    site = tmp_path / "far.geojson"
    gpd.GeoSeries([shapely.box(600000, 4600000, 600100, 4600100)], crs=CRS18).to_file(
        site, driver="GeoJSON"
    )
    assert main(["screen", str(town_gpkg), "--site-file", str(site), "--acres", "1"]) == 2
    assert "outside the town" in capsys.readouterr().err


def test_screen_all(town_gpkg, tmp_path, capsys):
    out = tmp_path / "screen.gpkg"
    csv = tmp_path / "screen.csv"
    letters = tmp_path / "letters.csv"
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--all",
            "--out",
            str(out),
            "--csv",
            str(csv),
            "--letters",
            str(letters),
        ]
    )
    assert code == 0, capsys.readouterr().err
    scr = gpd.read_file(out, layer="screening")
    sep = gpd.read_file(out, layer="septic")
    assert len(scr) == 36 and set(scr["condition_a_text"]) <= {"yes", "no", "undetermined"}
    assert (scr["condition_a_text"] == "yes").any()
    assert len(sep) == 12 and sep["reason"].notna().all()
    assert len(pd.read_csv(csv)) == 36
    assert set(pd.read_csv(letters)["parcel_id"]) == set(sep.loc[sep["flagged"], "parcel_id"])


def test_screen_with_impairments_csv_skips_bad_rows(town_gpkg, capsys):
    from pathlib import Path

    bad = Path(__file__).resolve().parents[1] / "data" / "waters_303d_bad.csv"
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--site",
            "P020_040",
            "--acres",
            "0.1",
            "--common-plan-acres",
            "2",
            "--type",
            "commercial",
            "--impairments",
            str(bad),
            "--json",
        ]
    )
    cap = capsys.readouterr()
    assert code == 0
    assert "line 3" in cap.err and "NNNN-NNNN" in cap.err  # bad rows named, the rest used
    doc = json.loads(cap.out)
    assert doc["conditions"]["A"]["value"] is True  # Mill Creek 1302-0001 listed in the CSV


def test_screen_profile_file_missing_field(town_gpkg, tmp_path, capsys):
    from ms4map.rules.profiles import builtin_profile_path

    text = builtin_profile_path("stillwater").read_text(encoding="utf-8")
    p = tmp_path / "mytown.toml"
    p.write_text(text.replace("setback_ft = 100.0\n", ""), encoding="utf-8")
    assert (
        main(
            ["screen", str(town_gpkg), "--site", "P020_040", "--acres", "0.1", "--profile", str(p)]
        )
        == 2
    )
    assert "septic.setback_ft" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--csv", "--letters"])
def test_screen_all_refuses_to_overwrite_input(town_gpkg, tmp_path, capsys, option):
    import hashlib

    before = hashlib.sha256(town_gpkg.read_bytes()).hexdigest()
    out = tmp_path / "never.gpkg"
    code = main(["screen", str(town_gpkg), "--all", "--out", str(out), option, str(town_gpkg)])
    assert code == 4
    assert "Refusing to write into input file" in capsys.readouterr().err
    assert hashlib.sha256(town_gpkg.read_bytes()).hexdigest() == before
    assert not out.exists()  # checked before anything was written


def test_screen_all_refuses_input_csv_and_same_outputs(town_gpkg, tmp_path, capsys):
    from pathlib import Path

    imp = tmp_path / "list.csv"
    imp.write_bytes(
        (Path(__file__).resolve().parents[1] / "data" / "waters_303d_bad.csv").read_bytes()
    )
    assert (
        main(
            [
                "screen",
                str(town_gpkg),
                "--all",
                "--out",
                str(tmp_path / "o.gpkg"),
                "--impairments",
                str(imp),
                "--csv",
                str(imp),
            ]
        )
        == 4
    )
    assert "Refusing" in capsys.readouterr().err
    same = tmp_path / "same.csv"
    assert (
        main(
            [
                "screen",
                str(town_gpkg),
                "--all",
                "--out",
                str(tmp_path / "o.gpkg"),
                "--csv",
                str(same),
                "--letters",
                str(same),
            ]
        )
        == 4
    )
    assert "same file" in capsys.readouterr().err
    assert not (tmp_path / "o.gpkg").exists()


def test_screen_report_refuses_input_and_creates_folder(town_gpkg, tmp_path, capsys):
    dem = town_gpkg.parent / "town_dem.tif"
    before = dem.read_bytes()
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--site",
            "P020_040",
            "--acres",
            "0.3",
            "--report",
            str(dem.with_suffix(".tif.aux.xml")),
        ]
    )
    assert code == 4 and dem.read_bytes() == before
    rep = tmp_path / "new" / "deeper" / "r.html"
    code = main(
        ["screen", str(town_gpkg), "--site", "P020_040", "--acres", "0.3", "--report", str(rep)]
    )
    assert code == 0, capsys.readouterr().err
    assert rep.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_site_file_not_spatial_or_without_crs(town_gpkg, tmp_path, capsys):
    table = tmp_path / "table.csv"
    table.write_text("parcel_id,acres\nP020_040,1\n", encoding="utf-8")
    assert main(["screen", str(town_gpkg), "--site-file", str(table), "--acres", "1"]) == 2
    err = capsys.readouterr().err
    assert "not a spatial file" in err and "Traceback" not in err
    shp = tmp_path / "site.shp"
    gpd.GeoSeries([shapely.box(500040, 4699860, 500100, 4699900)], crs=CRS18).to_file(shp)
    shp.with_suffix(".prj").unlink()
    assert main(["screen", str(town_gpkg), "--site-file", str(shp), "--acres", "1"]) == 2
    assert "polygon file without a CRS" in capsys.readouterr().err
    pts = tmp_path / "pts.geojson"
    gpd.GeoSeries([shapely.Point(500040, 4699860)], crs=CRS18).to_crs(4326).to_file(pts)
    assert main(["screen", str(town_gpkg), "--site-file", str(pts), "--acres", "1"]) == 2
    assert "must be a polygon" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["xyz", "phosphorus,xyz"])
def test_screen_unknown_pollutant_is_usage_error(town_gpkg, capsys, bad):
    assert (
        main(
            ["screen", str(town_gpkg), "--site", "P020_040", "--acres", "0.1", "--pollutants", bad]
        )
        == 4
    )
    err = capsys.readouterr().err
    assert "Unknown pollutant" in err and "'xyz'" in err and "phosphorus" in err


def test_screen_pollutant_misspelling_read_as_phosphorus(town_gpkg, capsys):
    # the town's Mill Creek is listed for Phosphorus: "phosphorous" must still count
    code = main(
        [
            "screen",
            str(town_gpkg),
            "--site",
            "P020_040",
            "--acres",
            "0.1",
            "--common-plan-acres",
            "2",
            "--type",
            "commercial",
            "--pollutants",
            "phosphorous",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["conditions"]["A"]["value"] is True
    assert doc["pollutant_of_concern"]["pollutants"] == ["silt/sediment", "phosphorus"]
