"""``ms4map export`` (issue 16): each format read back with pyogrio, the refusals."""

from __future__ import annotations

import csv
import json
import sqlite3
import zipfile
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely
from shapely.geometry import Point, Polygon

import ms4map
from ms4map import io
from ms4map.cli import main
from ms4map.io import styles
from ms4map.outputs.export import export, source_layers

DEMO = ms4map.datasets.get_path("alder_falls")
CRS = "EPSG:26918"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("export_src")
    out = {"screening": d / "screening.gpkg", "drainage": d / "drainage.gpkg"}
    assert main(["screen", str(DEMO), "--all", "--out", str(out["screening"])]) == 0
    assert main(["drainage", str(DEMO), "--out", str(out["drainage"]), "--quiet"]) == 0
    return out


@pytest.fixture()
def odd(tmp_path) -> Path:
    """A small result with what shapefiles and old ArcGIS cannot hold as is."""
    long_text = "x" * 300
    accented = "é" * 200  # 400 bytes in UTF-8
    poly = Polygon([(0, 0), (10, 0), (10, 10), (0, 10)])
    frame = gpd.GeoDataFrame(
        {
            "a_very_long_column_name": ["short", long_text, accented],
            "a_very_long_column_other": [1, 2, 3],  # the same first 10 characters
            "big_count": np.array([1, 2, 3], dtype="int64"),
            "huge_id": np.array([1, 2**40, 3], dtype="int64"),
            "when": pd.to_datetime(["2025-06-02 10:30", "2025-06-03 11:00", None]),
            "flag": [True, False, True],
            "column": ["reserved", "name", "in a gdb"],
        },
        geometry=[poly, poly, None],
        crs=CRS,
    )
    table = pd.DataFrame({"k": ["a", "b"], "v": [1.5, 2.5]})
    out = tmp_path / "odd.gpkg"
    io.write_outputs(out, {"odd": frame, "a_table": table}, provenance={"created": "t0"})
    return out


def _fields_csv(zf: zipfile.ZipFile) -> list[dict[str, str]]:
    return list(csv.DictReader(zf.read("fields.csv").decode("utf-8").splitlines()))


# -- .gpkg ---------------------------------------------------------------------------------
def test_gpkg_copy_with_chosen_layers_styles_and_provenance(results, tmp_path):
    src = results["screening"]
    out = tmp_path / "copy.gpkg"
    res = export(src, out, ["septic"])
    assert res.layers == {"septic": 1501}
    assert source_layers(out) == {"septic": "Polygon"}  # provenance, layer_styles not listed
    a = pyogrio.read_dataframe(src, layer="septic")
    b = pyogrio.read_dataframe(out, layer="septic")
    pd.testing.assert_frame_equal(
        pd.DataFrame(a.drop(columns="geometry")), b.drop(columns="geometry")
    )
    assert a.geometry.geom_equals(b.geometry).all()
    with sqlite3.connect(src) as c1, sqlite3.connect(out) as c2:
        q = "SELECT sql FROM sqlite_master WHERE name = 'septic'"
        assert c1.execute(q).fetchone() == c2.execute(q).fetchone()  # same column types
    (row,) = styles.read_layer_styles(out)
    (orig,) = [r for r in styles.read_layer_styles(src) if r["f_table_name"] == "septic"]
    assert row["styleQML"] == orig["styleQML"] and row["useAsDefault"] == 1
    rec = io.read_provenance(out, "septic")
    src_rec = io.read_provenance(src, "septic")
    assert rec["exported_from"] == str(src)
    assert {k: v for k, v in rec.items() if k != "exported_from"} == src_rec


def test_gpkg_copy_keeps_a_style_edited_in_qgis(results, tmp_path):
    src = tmp_path / "edited.gpkg"
    src.write_bytes(results["screening"].read_bytes())
    with sqlite3.connect(src) as con:  # as QGIS saves a user's own style as default
        con.execute("UPDATE layer_styles SET useAsDefault = 0 WHERE f_table_name = 'screening'")
        con.execute(
            "INSERT INTO layer_styles (f_table_catalog, f_table_schema, f_table_name, "
            "f_geometry_column, styleName, styleQML, styleSLD, useAsDefault, description, "
            "owner, ui) VALUES ('', '', 'screening', 'geom', 'mine', '<qgis mine=\"1\"/>', "
            "'', 1, 'edited', '', '')"
        )
    out = tmp_path / "copy.gpkg"
    export(src, out, ["screening"])
    rows = styles.read_layer_styles(out)
    assert sorted(r["styleName"] for r in rows) == ["mine", "screening"]
    (default,) = [r for r in rows if r["useAsDefault"] == 1]
    assert default["styleName"] == "mine" and default["styleQML"] == '<qgis mine="1"/>'


# -- .gdb ----------------------------------------------------------------------------------
def test_gdb_layers_counts_types_and_ints_for_older_arcgis(results, odd, tmp_path):
    out = tmp_path / "town.gdb"
    res = export(results["drainage"], out)
    assert out.is_dir()
    names = {str(n): g for n, g in pyogrio.list_layers(out)}
    assert names["inlet_catchments"] == "MultiPolygon" and names["sewersheds"] == "MultiPolygon"
    assert names["parcel_drainage"] is None and names["qa"] is None  # tables stay tables
    assert "provenance" in names and "layer_styles" not in names
    for n in ("inlet_catchments", "sewersheds", "parcel_drainage", "qa"):
        assert pyogrio.read_info(out, layer=n)["features"] == res.layers[n]
        assert res.layers[n] == pyogrio.read_info(results["drainage"], layer=n)["features"]
    info = pyogrio.read_info(out, layer="sewersheds")
    dtypes = dict(zip(info["fields"], info["dtypes"], strict=True))
    assert dtypes["inlets"] == "int32" and dtypes["cells"] == "int32"  # not 64-bit
    assert any("unstyled" in n or "no QGIS style" in n for n in res.notes)

    res = export(odd, tmp_path / "odd.gdb")
    info = pyogrio.read_info(tmp_path / "odd.gdb", layer="odd")
    dtypes = dict(zip(info["fields"], info["dtypes"], strict=True))
    assert dtypes["big_count"] == "int32"
    assert dtypes["huge_id"] == "float64"  # beyond 32 bits: a double, exact, and said
    assert any("odd.huge_id" in n and "doubles" in n for n in res.notes)
    back = pyogrio.read_dataframe(tmp_path / "odd.gdb", layer="odd")
    assert back["huge_id"].tolist() == [1.0, float(2**40), 3.0]
    assert any("column -> column_" in n for n in res.notes)  # a name the gdb reserves
    assert pyogrio.read_info(tmp_path / "odd.gdb", layer="a_table")["features"] == 2
    # an existing geodatabase is replaced; a folder that is not one is refused
    export(odd, tmp_path / "odd.gdb", ["a_table"])
    assert {str(n) for n, _ in pyogrio.list_layers(tmp_path / "odd.gdb")} == {
        "a_table",
        "provenance",
    }
    (tmp_path / "notes.gdb").mkdir()
    (tmp_path / "notes.gdb" / "mine.txt").write_text("keep")
    assert main(["export", str(odd), "--to", str(tmp_path / "notes.gdb")]) == 4
    assert (tmp_path / "notes.gdb" / "mine.txt").read_text() == "keep"


# -- .zip ----------------------------------------------------------------------------------
def test_zip_shapefiles_fields_csv_and_tables(results, tmp_path):
    out = tmp_path / "drainage.zip"
    res = export(results["drainage"], out)
    zf = zipfile.ZipFile(out)
    members = set(zf.namelist())
    for n in ("inlet_catchments", "sewersheds"):
        assert {f"{n}.{e}" for e in ("shp", "shx", "dbf", "prj", "cpg", "qml", "sld")} <= members
    assert {"parcel_drainage.csv", "qa.csv", "fields.csv", "provenance.csv"} <= members
    zf.extractall(tmp_path / "x")
    mapping = _fields_csv(zf)
    for n in ("inlet_catchments", "sewersheds"):
        shp = tmp_path / "x" / f"{n}.shp"
        src = pyogrio.read_dataframe(results["drainage"], layer=n)
        back = pyogrio.read_dataframe(shp)
        assert len(back) == len(src) == res.layers[n]
        assert set(back.geometry.geom_type) <= {"Polygon", "MultiPolygon"}
        full = {r["field"]: r["full_name"] for r in mapping if r["layer"] == n}
        assert all(len(k.encode()) <= 10 for k in full)
        restored = back.rename(columns=full)  # the long names recovered from fields.csv
        assert list(restored.drop(columns="geometry").columns) == [
            c for c in src.columns if c != "geometry"
        ]
        assert restored["outfall_id"].tolist() == src["outfall_id"].tolist()
    table = pd.read_csv(tmp_path / "x" / "parcel_drainage.csv")
    n = pyogrio.read_info(results["drainage"], layer="parcel_drainage")["features"]
    assert len(table) == res.layers["parcel_drainage"] == n
    prov = pd.read_csv(tmp_path / "x" / "provenance.csv")
    assert set(prov["layer"]) == {
        "inlet_catchments",
        "sewersheds",
        "parcel_drainage",
        "parcel_drainage_map",
        "qa",
        # the traced network and the other catchments, for a SWMM model (issue 33)
        "structures",
        "conveyances",
        "outfalls",
        "surface_catchments",
    }
    # the style beside the shapefile names its 10-character fields
    qml = (tmp_path / "x" / "inlet_catchments.qml").read_text()
    assert "&quot;target_kin&quot;" in qml and "&quot;target_kind&quot;" not in qml


def test_zip_cuts_long_text_and_says_so(odd, tmp_path):
    out = tmp_path / "odd.zip"
    res = export(odd, out)
    zf = zipfile.ZipFile(out)
    mapping = {r["full_name"]: r for r in _fields_csv(zf) if r["layer"] == "odd"}
    assert mapping["a_very_long_column_name"]["field"] == "a_very_lon"
    assert mapping["a_very_long_column_other"]["field"] == "a_very_l_1"  # unique
    assert "cut to 254 in 2 row(s)" in mapping["a_very_long_column_name"]["note"]
    assert "ISO 8601" in mapping["when"]["note"]
    assert "1 (true) / 0 (false)" in mapping["flag"]["note"]
    assert any("cut" in n for n in res.notes)
    zf.extractall(tmp_path / "x")
    back = pyogrio.read_dataframe(tmp_path / "x" / "odd.shp")
    text = back["a_very_lon"].tolist()
    assert text[0] == "short" and text[1] == "x" * 254
    assert len(text[2].encode("utf-8")) <= 254 and set(text[2]) == {"é"}  # whole characters
    assert back["when"].tolist()[:2] == ["2025-06-02T10:30:00", "2025-06-03T11:00:00"]
    assert back["flag"].tolist() == [1, 0, 1]
    assert back["huge_id"].tolist() == [1, 2**40, 3]  # a DBF number holds it whole
    assert back.geometry.isna().tolist() == [False, False, True]
    assert pd.read_csv(tmp_path / "x" / "a_table.csv")["k"].tolist() == ["a", "b"]


# -- .geojson ------------------------------------------------------------------------------
def test_geojson_one_layer_in_wgs84(results, tmp_path, capsys):
    src = results["screening"]
    out = tmp_path / "septic.geojson"
    assert main(["export", str(src), "--to", str(out)]) == 4  # two layers: name one
    assert "--layer" in capsys.readouterr().err
    assert not out.exists()
    assert main(["export", str(src), "--to", str(out), "--layer", "septic"]) == 0
    assert "1 layer(s)" in capsys.readouterr().out
    back = pyogrio.read_dataframe(out)
    assert len(back) == 1501 and back.crs.to_epsg() == 4326
    minx, miny, maxx, maxy = back.total_bounds
    assert -80 < minx < maxx < -71 and 40 < miny < maxy < 46  # New York, in degrees
    doc = json.loads(out.read_text())
    assert "crs" not in doc  # RFC 7946: WGS 84 without a crs member
    src_geom = pyogrio.read_dataframe(src, layer="septic").to_crs(4326)
    a, b = (shapely.normalize(g.geometry.iloc[0]) for g in (back, src_geom))
    assert a.equals_exact(b, 1e-6)  # the same parcel (RFC 7946 winds the rings its way)
    two = ["--layer", "septic", "--layer", "screening"]
    assert main(["export", str(src), "--to", str(out), *two]) == 4
    assert "2 given with --layer" in capsys.readouterr().err
    assert main(["export", str(src), "--to", str(out), "--layer", "septic", "screening"]) == 4
    assert "2 given with --layer" in capsys.readouterr().err


# -- refusals ------------------------------------------------------------------------------
def test_refusals(results, tmp_path, capsys):
    src = results["screening"]
    before = src.read_bytes()
    assert main(["export", str(src), "--to", str(src)]) == 4  # the input itself
    assert "Refusing to write into input file" in capsys.readouterr().err
    assert main(["export", str(src), "--to", str(DEMO)]) == 4  # an input of its provenance
    assert "Refusing" in capsys.readouterr().err
    argv = ["export", str(src), "--to", str(tmp_path / "x.gpkg"), "--layer", "septic", "nope"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "No layer 'nope'" in err and "screening, septic" in err
    assert main(["export", str(src), "--to", str(tmp_path / "x.shp")]) == 4
    assert "a shapefile goes in a .zip" in capsys.readouterr().err
    assert main(["export", str(src), "--to", str(tmp_path / "x.kml")]) == 4
    assert main(["export", str(tmp_path / "missing.gpkg"), "--to", str(tmp_path / "x.gpkg")]) == 3
    assert src.read_bytes() == before
    assert not list(tmp_path.glob("x.*")) and not list(tmp_path.glob(".ms4map-*"))


def test_mixed_geometry_types_split_for_shapefiles_and_gdb(tmp_path, capsys):
    frame = gpd.GeoDataFrame(
        {"a": [1, 2, 3]},
        geometry=[Point(0, 0), Polygon([(0, 0), (1, 0), (1, 1)]), None],
        crs=CRS,
    )
    src = tmp_path / "mixed.gpkg"
    io.write_outputs(src, {"mixed": frame}, provenance={})
    assert main(["export", str(src), "--to", str(tmp_path / "m.zip")]) == 0
    assert "written as mixed_point, mixed_polygon" in capsys.readouterr().out
    zipfile.ZipFile(tmp_path / "m.zip").extractall(tmp_path / "x")
    pt = pyogrio.read_dataframe(tmp_path / "x" / "mixed_point.shp")
    pg = pyogrio.read_dataframe(tmp_path / "x" / "mixed_polygon.shp")
    assert pt["a"].tolist() == [1, 3] and pg["a"].tolist() == [2]  # no row lost
    assert (tmp_path / "x" / "mixed_polygon.qml").exists()
    res = export(src, tmp_path / "m.gdb")
    assert res.layers == {"mixed_point": 2, "mixed_polygon": 1}
    assert dict(pyogrio.list_layers(tmp_path / "m.gdb"))["mixed_polygon"] == "MultiPolygon"
    assert export(src, tmp_path / "m.geojson").layers == {"mixed": 3}  # GeoJSON holds both


def test_workspace_geopackage_exports_with_the_app_styles(tmp_path):
    # the demo workspace (no styles of its own): the copy gets the map's styles, and its
    # waterbodies (streams and lakes) become a line and a polygon shapefile
    res = export(DEMO, tmp_path / "demo.gpkg", ["structures", "outfalls"])
    rows = {r["f_table_name"]: r for r in styles.read_layer_styles(tmp_path / "demo.gpkg")}
    assert set(rows) == {"structures", "outfalls"}
    assert 'attr="kind"' in rows["structures"]["styleQML"]
    assert res.layers["structures"] == pyogrio.read_info(DEMO, layer="structures")["features"]
    res = export(DEMO, tmp_path / "demo.zip", ["waterbodies"])
    n = pyogrio.read_info(DEMO, layer="waterbodies")["features"]
    assert set(res.layers) == {"waterbodies_line", "waterbodies_polygon"}
    assert sum(res.layers.values()) == n


def test_qgis_draws_the_shapefile_with_its_qml(results, tmp_path):
    from test_outputs_export_styles import expected_septic_colours, qgis_or_skip, run_qgis

    qgis_or_skip()
    export(results["screening"], tmp_path / "s.zip", ["septic"])
    zipfile.ZipFile(tmp_path / "s.zip").extractall(tmp_path / "x")
    uri = str(tmp_path / "x" / "septic.shp")
    got = run_qgis(uri)[uri]
    assert got["valid"] and got["renderer"] == "categorizedSymbol"  # the .qml, not the default
    sep = pyogrio.read_dataframe(results["screening"], layer="septic")
    assert got["drawn"] == dict(expected_septic_colours(sep))  # 10-character names resolve


@pytest.mark.parametrize("suffix", [".gpkg", ".zip", ".geojson"])
def test_an_export_is_synced_before_it_replaces_the_output(odd, tmp_path, sync_events, suffix):
    """The finished file is on disk before the rename (a crash leaves the old export or
    the new one, whole), then the folder's entry."""
    out = tmp_path / f"x{suffix}"
    events = sync_events
    export(odd, out, ["odd"])
    i = max(k for k, e in enumerate(events) if e == ("replace", str(out)))
    assert events[i - 1][0] == "fsync" and events[i - 1][1] != str(out)  # the new file
    assert events[i + 1] == ("fsync", str(tmp_path))
    assert out.exists()
