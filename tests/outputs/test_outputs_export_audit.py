"""``ms4map export`` on what an export audit found (hand-made layers, EPSG:26918).

- A destination ms4map did not write (a geodatabase, a zip, a GeoJSON of the user's) is
  refused, byte for byte unchanged; ms4map's own export there is replaced as before.
- Geodatabase field names: ``SHAPE`` crashed the export, ``OBJECTID`` vanished into the
  object id, and the rename note paired names by position (all four wrong); now each
  column gets a name the geodatabase keeps, its values under it, and the note says
  exactly ``SHAPE -> SHAPE_``, ``OBJECTID -> OBJECTID_``, ``my field -> my_field``,
  ``1st -> F1st``.
- An empty layer that records no geometry type stays a spatial layer (it was a CSV).
- A refused export makes no folder; provenance names the source by its full path, and
  a GeoJSON's provenance is beside it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile

import geopandas as gpd
import pandas as pd
import pyogrio
import pytest
from shapely.geometry import Point, box

from ms4map.cli import main
from ms4map.io import write_outputs

CRS = "EPSG:26918"


@pytest.fixture()
def src(tmp_path):
    weird = gpd.GeoDataFrame(
        {
            "OBJECTID": [501, 502],
            "SHAPE": ["s1", "s2"],
            "my field": ["a", "b"],
            "1st": ["c", "d"],
            "parcel_id": ["P1", "P2"],
        },
        geometry=[box(0, 0, 10, 10), box(20, 0, 30, 10)],
        crs=CRS,
    )
    empty = gpd.GeoDataFrame({"name": pd.Series([], dtype=object)}, geometry=[], crs=CRS)
    pts = gpd.GeoDataFrame({"k": [1]}, geometry=[Point(1, 1)], crs=CRS)
    path = tmp_path / "results.gpkg"
    write_outputs(path, {"weird": weird, "empty": empty, "pts": pts}, provenance={"tool": "t"})
    return path


def _sha(p):
    if p.is_dir():
        return sorted((f.name, hashlib.sha256(f.read_bytes()).hexdigest()) for f in p.iterdir())
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_a_destination_ms4map_did_not_write_is_refused(src, tmp_path, capsys):
    user = tmp_path / "user"
    user.mkdir()
    g = gpd.GeoDataFrame({"mine": ["precious"]}, geometry=[Point(0, 0)], crs="EPSG:4326")
    pyogrio.write_dataframe(g, user / "mywork.gdb", layer="my_layer", driver="OpenFileGDB")
    pyogrio.write_dataframe(g, user / "mine.geojson", driver="GeoJSON")
    with zipfile.ZipFile(user / "archive.zip", "w") as z:
        z.writestr("thesis.docx", "my thesis")
    for name in ("mywork.gdb", "mine.geojson", "archive.zip"):
        dest = user / name
        before = _sha(dest)
        layer = ["--layer", "pts"] if name.endswith(".geojson") else []
        assert main(["export", str(src), "--to", str(dest), *layer]) == 4, name
        assert "ms4map did not write it" in capsys.readouterr().err
        assert _sha(dest) == before, name
    ours = tmp_path / "ours"
    for name, layer in (("a.gdb", []), ("a.zip", []), ("a.geojson", ["--layer", "pts"])):
        for _ in range(2):  # the second run replaces ms4map's own export
            assert main(["export", str(src), "--to", str(ours / name), *layer]) == 0, name
    rec = json.loads((ours / "a.geojson.provenance.json").read_text())
    assert rec["layer"] == "pts" and rec["exported_from"] == str(src.resolve())


def test_geodatabase_field_names(src, tmp_path, capsys):
    out = tmp_path / "x.gdb"
    assert main(["export", str(src), "--to", str(out), "--layer", "weird"]) == 0
    text = capsys.readouterr().out
    for pair in ("OBJECTID -> OBJECTID_", "SHAPE -> SHAPE_", "my field -> my_field", "1st -> F1st"):
        assert pair in text
    assert "parcel_id ->" not in text
    back = pyogrio.read_dataframe(out, layer="weird")
    assert back["OBJECTID_"].tolist() == [501, 502] and back["SHAPE_"].tolist() == ["s1", "s2"]
    assert back["my_field"].tolist() == ["a", "b"] and back["parcel_id"].tolist() == ["P1", "P2"]


def test_an_empty_layer_stays_spatial(src, tmp_path):
    out = tmp_path / "x.zip"
    assert main(["export", str(src), "--to", str(out)]) == 0
    names = zipfile.ZipFile(out).namelist()
    assert "empty.shp" in names and "empty.prj" in names and "empty.csv" not in names


def test_a_refused_export_makes_no_folder(src, tmp_path):
    dest = tmp_path / "new" / "sub" / "x.zip"
    assert main(["export", str(src), "--to", str(dest), "--layer", "nope"]) == 3
    assert main(["export", str(src), "--to", str(tmp_path / "new2" / "x.geojson")]) == 4
    assert not (tmp_path / "new").exists() and not (tmp_path / "new2").exists()


def test_geojson_says_its_coordinates_were_reprojected(src, tmp_path, capsys):
    """The point (1, 1) in UTM 18N is written at 7 decimals of WGS 84 and both the
    command's notes and the provenance sidecar say so (they said nothing)."""
    out = tmp_path / "p.geojson"
    assert main(["export", str(src), "--to", str(out), "--layer", "pts"]) == 0
    text = capsys.readouterr().out
    assert "reprojected from EPSG:26918 to WGS 84" in text and "7 decimals" in text
    rec = json.loads((tmp_path / "p.geojson.provenance.json").read_text())
    assert rec["reprojected_from"] == "EPSG:26918" and rec["crs"].startswith("EPSG:4326")
    lon, lat = json.loads(out.read_text())["features"][0]["geometry"]["coordinates"]
    expect = gpd.GeoSeries([Point(1, 1)], crs=CRS).to_crs("EPSG:4326").iloc[0]
    assert (lon, lat) == (round(expect.x, 7), round(expect.y, 7))
