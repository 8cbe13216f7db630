"""QGIS styles in every GeoPackage ms4map writes (issue 16): one source of truth with the
app's map, QGIS's own ``layer_styles`` schema, and QGIS itself drawing the stored style."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio
import pytest
from shapely.geometry import Point

import ms4map
from ms4map import io
from ms4map.cli import main
from ms4map.io import styles
from ms4map.outputs import maps
from ms4map.outputs.maps import layers as map_layers

DEMO = ms4map.datasets.get_path("alder_falls")
QGIS_COLUMNS = [
    "f_table_catalog",
    "f_table_schema",
    "f_table_name",
    "f_geometry_column",
    "styleName",
    "styleQML",
    "styleSLD",
    "useAsDefault",
    "description",
    "owner",
    "ui",
    "update_time",
]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    """The GeoPackages the commands write on the demo town."""
    d = tmp_path_factory.mktemp("styled")
    out = {
        "drainage": d / "drainage.gpkg",
        "screening": d / "screening.gpkg",
        "trace": d / "trace.gpkg",
        "qa": d / "qa.gpkg",
        "field_check": d / "field_check.gpkg",
        "records": d / "records_export.gpkg",
    }
    assert main(["drainage", str(DEMO), "--out", str(out["drainage"]), "--quiet"]) == 0
    assert main(["screen", str(DEMO), "--all", "--out", str(out["screening"])]) == 0
    argv = ["trace", str(DEMO), "--all", "--out", str(out["trace"]), "--qa", str(out["qa"])]
    assert main([*argv, "--field-check", str(out["field_check"])]) == 0
    rec = d / "demo.records.gpkg"
    assert (
        main(
            [
                "inspect",
                str(DEMO),
                "--outfall",
                "OF-009",
                "--date",
                "2025-06-02",
                "--by",
                "jsmith",
                "--flow-present",
                "yes",
                "--records",
                str(rec),
            ]
        )  # fmt: skip
        == 0
    )
    argv = ["records", str(DEMO), "--records", str(rec), "--export", str(out["records"])]
    assert main(argv) == 0
    return out


def _geometry_columns(path: Path) -> dict[str, tuple[str, str]]:
    with sqlite3.connect(path) as con:
        return {
            t: (c, g)
            for t, c, g in con.execute(
                "SELECT table_name, column_name, geometry_type_name FROM gpkg_geometry_columns"
            )
        }


def _has_geometry(path: Path, table: str, column: str) -> bool:
    with sqlite3.connect(path) as con:
        q = f'SELECT 1 FROM "{table}" WHERE "{column}" IS NOT NULL LIMIT 1'
        return con.execute(q).fetchone() is not None


def test_layer_styles_one_default_per_spatial_layer(outputs):
    seen = set()
    for name, path in outputs.items():
        with sqlite3.connect(path) as con:
            cols = [r[1] for r in con.execute('PRAGMA table_info("layer_styles")')]
            kind = con.execute(
                "SELECT data_type FROM gpkg_contents WHERE table_name = 'layer_styles'"
            ).fetchone()
        assert cols == ["id", *QGIS_COLUMNS], name  # QGIS's own schema
        assert kind == ("attributes",)  # registered as QGIS (through GDAL) registers it
        rows = styles.read_layer_styles(path)
        geoms = _geometry_columns(path)
        spatial = {
            t
            for t, (c, _g) in geoms.items()
            if _has_geometry(path, t, c) or t in styles.LAYER_STYLES
        }
        assert spatial, name
        by_table: dict[str, list[dict]] = {}
        for r in rows:
            by_table.setdefault(r["f_table_name"], []).append(r)
        assert set(by_table) == spatial, name  # no style for tables or all-NULL geometry
        for table, rs in by_table.items():
            assert len(rs) == 1 and rs[0]["useAsDefault"] == 1, table
            assert rs[0]["f_geometry_column"] == geoms[table][0]
            root = ET.fromstring(rs[0]["styleQML"].split("\n", 1)[1])
            assert root.tag == "qgis" and root.find("renderer-v2") is not None
            ET.fromstring(rs[0]["styleSLD"].encode())  # well-formed SLD
            seen.add(table)
    # every result layer of the list is styled: drainage, screening, trace, records
    assert {
        "inlet_catchments",
        "sewersheds",
        "screening",
        "septic",
        "structure_outfalls",
        "network_qa",
        "field_check",
        "outfall_status",
        "inspections",
        "samples",  # empty, GEOMETRY: styled by its name as points
    } <= seen
    assert "parcel_drainage" not in seen and "network_qa_table" not in seen


def test_app_reads_its_colours_from_the_styles_module():
    # the very same objects, not copies: one source of truth
    assert map_layers.PARCEL_COLOURS is styles.PARCEL_COLOURS
    assert map_layers.STRUCTURE_COLOURS is styles.STRUCTURE_COLOURS
    assert map_layers.CONVEYANCE_COLOURS is styles.CONVEYANCE_COLOURS
    assert map_layers.OUTFALL_COLOURS is styles.OUTFALL_COLOURS
    assert map_layers.IMPAIRED_COLOURS is styles.IMPAIRED_COLOURS
    ws = io.open_workspace(DEMO)
    layers = maps.build_layers(ws)
    checked = 0
    for key, layer in layers.items():
        st = styles.LAYER_STYLES.get(key)
        if st is None:
            continue
        checked += 1
        assert (layer.geom, layer.fill_opacity, layer.weight, layer.dash) == (
            st.geom,
            st.fill_opacity,
            st.weight,
            st.dash,
        ), key
        if layer.geom == "point":
            assert layer.radius == st.radius, key
        for c in st.classes:
            if c.when:  # the app's category value -> the same colour and legend words
                value = c.when[0][1][0]
                assert layer.colour(value) == c.colour, (key, value)
                assert c.label == value.replace("_", " ")
            elif not st.single:
                assert layer.styles.get("other", layer.styles.get("unknown")) == c.colour, key
            else:
                drawn = {layer.colour(v) for v in layer.frame["category"].unique()}
                assert drawn == {c.colour}, key
    assert checked >= 6  # structures, conveyances, outfalls, waterbodies, tmdl, ms4 area, ...


def _qml_categories(qml_text: str) -> tuple[str, list[tuple[str, str, str]]]:
    root = ET.fromstring(qml_text.split("\n", 1)[1])
    r = root.find("renderer-v2")
    syms = {}
    for s in r.find("symbols"):
        opts = {o.get("name"): o.get("value") for o in s.find("layer").find("Option")}
        syms[s.get("name")] = opts.get("color")
    cats = [(c.get("value"), c.get("label"), syms[c.get("symbol")]) for c in r.find("categories")]
    return r.get("attr"), cats


def _rgb(colour: str) -> str:
    c = colour.lstrip("#")
    return ",".join(str(int(c[i : i + 2], 16)) for i in (0, 2, 4))


def test_screening_and_septic_qml_use_the_app_classes(outputs):
    rows = {r["f_table_name"]: r for r in styles.read_layer_styles(outputs["screening"])}
    attr, cats = _qml_categories(rows["screening"]["styleQML"])
    assert attr == "condition_a_text"
    assert [c[1] for c in cats] == list(styles.PARCEL_COLOURS["condition_a"])  # legend labels
    assert [c[0] for c in cats] == ["yes", "undetermined", "no", ""]  # "" = all other values
    for (_v, label, rgba), colour in zip(
        cats, styles.PARCEL_COLOURS["condition_a"].values(), strict=True
    ):
        assert rgba == f"{_rgb(colour)},{round(0.45 * 255)}", label  # fill 0.45 as in the app
    attr, cats = _qml_categories(rows["septic"]["styleQML"])
    assert attr.startswith("CASE WHEN") and 'to_int("violation") = 1' in attr
    assert [c[1] for c in cats] == [
        "septic violation",
        "septic, special condition",
        "septic, tributary to MS4",
        "septic, tributary not known",
        "septic, not tributary",
    ]
    # the app's own categories of these parcels are the classes the septic layer gets
    sep = pyogrio.read_dataframe(outputs["screening"], layer="septic")
    ws = io.open_workspace(DEMO)
    app = maps.parcel_categories(ws.layers["parcels"], by="septic", septic=sep)
    pid = ws.layers["parcels"]["parcel_id"].astype(str)
    app_cat = dict(zip(pid, app, strict=True))
    assert set(app_cat[p] for p in sep["parcel_id"].astype(str)) <= {c[1] for c in cats}


def test_styles_of_layers_not_rewritten_are_kept(tmp_path):
    crs = "EPSG:26918"
    pts = gpd.GeoDataFrame({"status": ["suspect"]}, geometry=[Point(0, 0)], crs=crs)
    out = tmp_path / "r.gpkg"
    io.write_outputs(out, {"outfall_status": pts}, provenance={"created": "1"})
    io.write_outputs(out, {"field_check": pts.assign(what="loose_end")}, provenance={})
    io.write_outputs(out, {"outfall_status": pts}, provenance={"created": "2"})  # again
    rows = styles.read_layer_styles(out)
    assert sorted(r["f_table_name"] for r in rows) == ["field_check", "outfall_status"]
    assert all(r["useAsDefault"] == 1 for r in rows)
    # a plain table is no spatial layer: no style
    io.write_outputs(out, {"t": pd.DataFrame({"a": [1]})}, provenance={})
    assert len(styles.read_layer_styles(out)) == 2
    names = {str(n) for n, _ in pyogrio.list_layers(out)}
    assert {"outfall_status", "field_check", "t", "provenance"} <= names


def test_unknown_layer_gets_a_grey_single_symbol(tmp_path):
    out = tmp_path / "o.gpkg"
    line = gpd.GeoDataFrame(
        {"a": [1]}, geometry=gpd.GeoSeries.from_wkt(["LINESTRING (0 0, 1 1)"]), crs=26918
    )
    io.write_outputs(out, {"my_lines": line}, provenance={})
    (row,) = styles.read_layer_styles(out)
    assert 'type="singleSymbol"' in row["styleQML"] and 'class="SimpleLine"' in row["styleQML"]
    assert row["f_geometry_column"] == _geometry_columns(out)["my_lines"][0]  # GDAL: geom


# -- QGIS itself --------------------------------------------------------------------------
QGIS_PYTHON = "/usr/bin/python3"
QGIS_SCRIPT = r"""
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from collections import Counter
from qgis.core import (QgsApplication, QgsExpressionContext, QgsExpressionContextUtils,
                       QgsRenderContext, QgsVectorLayer)
app = QgsApplication([], False)
app.initQgis()
out = {}
for uri in sys.argv[1:]:
    lyr = QgsVectorLayer(uri, "x", "ogr")  # loads the default style of layer_styles / .qml
    r = lyr.renderer()
    d = {"valid": lyr.isValid(), "renderer": r.type(), "features": lyr.featureCount()}
    if r.type() == "categorizedSymbol":
        d["attr"] = r.classAttribute()
        d["categories"] = [[c.label(), c.symbol().color().name()] for c in r.categories()]
        ec = QgsExpressionContext(QgsExpressionContextUtils.globalProjectLayerScopes(lyr))
        ctx = QgsRenderContext()
        ctx.setExpressionContext(ec)
        r.startRender(ctx, lyr.fields())
        drawn = Counter()
        for f in lyr.getFeatures():
            ctx.expressionContext().setFeature(f)
            s = r.symbolForFeature(f, ctx)
            drawn[s.color().name() if s is not None else "none"] += 1
        r.stopRender(ctx)
        d["drawn"] = dict(drawn)
    else:
        d["colour"] = r.symbol().color().name()
    out[uri] = d
print("RESULT " + json.dumps(out), flush=True)
os._exit(0)  # QGIS 3.22's teardown can crash after the work is done; nothing is left to save
"""


def qgis_or_skip() -> None:
    if not Path(QGIS_PYTHON).exists():
        pytest.skip(f"{QGIS_PYTHON} is missing: QGIS's Python (Debian python3-qgis) needs it")
    probe = subprocess.run(
        [QGIS_PYTHON, "-c", "import qgis.core"], capture_output=True, text=True, timeout=120
    )
    if probe.returncode != 0:
        pytest.skip(
            "QGIS's Python module is missing (apt-get install python3-qgis; .ci/run does): "
            + probe.stderr.strip().splitlines()[-1]
        )


def run_qgis(*uris: str) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env.pop("PYTHONPATH", None)  # QGIS runs on the system python, not this one
    p = subprocess.run(
        [QGIS_PYTHON, "-c", QGIS_SCRIPT, *uris],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stdout + p.stderr
    return json.loads(line[-1][len("RESULT ") :])


def expected_septic_colours(sep: pd.DataFrame) -> Counter:
    c = styles.PARCEL_COLOURS["septic"]
    out = Counter()
    for r in sep.to_dict("records"):
        if r["violation"]:
            out[c["septic violation"]] += 1
        elif r["special_condition"]:
            out[c["septic, special condition"]] += 1
        elif r["flagged"]:
            out[c["septic, tributary to MS4"]] += 1
        elif r["method"] in ("unknown_drainage", "no_drainage"):
            out[c["septic, tributary not known"]] += 1
        else:
            out[c["septic, not tributary"]] += 1
    return out


def test_qgis_draws_the_stored_styles(outputs):
    qgis_or_skip()
    scr = outputs["screening"]
    uris = [
        f"{scr}|layername=screening",
        f"{scr}|layername=septic",
        f"{outputs['drainage']}|layername=sewersheds",
    ]
    res = run_qgis(*uris)
    sc = res[uris[0]]
    assert sc["valid"] and sc["renderer"] == "categorizedSymbol"  # not the default single symbol
    assert sc["attr"] == "condition_a_text"
    assert sc["categories"] == [[k, v] for k, v in styles.PARCEL_COLOURS["condition_a"].items()]
    table = pyogrio.read_dataframe(scr, layer="screening")
    c = styles.PARCEL_COLOURS["condition_a"]
    want = Counter(
        table["condition_a_text"].map(
            {"yes": c["Condition A"], "no": c["not Condition A"], "undetermined": c["undetermined"]}
        )
    )
    assert sc["drawn"] == dict(want)  # every parcel drawn in its class's colour
    sp = res[uris[1]]
    assert sp["valid"] and sp["renderer"] == "categorizedSymbol"
    sep = pyogrio.read_dataframe(scr, layer="septic")
    assert sp["drawn"] == dict(expected_septic_colours(sep))
    assert len(sp["drawn"]) >= 3  # violations, special conditions, ... all told apart
    sw = res[uris[2]]
    assert sw["renderer"] == "singleSymbol" and sw["colour"] == styles.SEWERSHED_COLOUR


SLD_SCRIPT = r"""
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from qgis.core import QgsApplication, QgsVectorLayer
app = QgsApplication([], False)
app.initQgis()
lyr = QgsVectorLayer(sys.argv[1], "x", "ogr")
msg, ok = lyr.loadSldStyle(sys.argv[2])
rules = [[r.label(), r.symbol().color().name()] for r in lyr.renderer().rootRule().children()]
print("RESULT " + json.dumps({"ok": ok, "renderer": lyr.renderer().type(), "rules": rules}))
sys.stdout.flush()
os._exit(0)
"""


def test_sld_has_one_rule_per_class_and_qgis_reads_it(outputs, tmp_path):
    (row,) = [
        r for r in styles.read_layer_styles(outputs["screening"]) if r["f_table_name"] == "septic"
    ]
    ns = {"se": "http://www.opengis.net/se"}
    root = ET.fromstring(row["styleSLD"].encode())
    names = [r.find("se:Name", ns).text for r in root.iter("{http://www.opengis.net/se}Rule")]
    labels = [c.label for c in styles.LAYER_STYLES["septic"].classes]
    assert names == labels
    qgis_or_skip()
    sld_file = tmp_path / "septic.sld"
    sld_file.write_text(row["styleSLD"], encoding="utf-8")
    p = subprocess.run(
        [QGIS_PYTHON, "-c", SLD_SCRIPT, f"{outputs['screening']}|layername=septic", str(sld_file)],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        | {"QT_QPA_PLATFORM": "offscreen"},
    )
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stdout + p.stderr
    got = json.loads(line[-1][len("RESULT ") :])
    assert got["ok"] and got["renderer"] == "RuleRenderer"
    assert got["rules"] == [[c.label, c.colour] for c in styles.LAYER_STYLES["septic"].classes]


def test_batch_town_output_is_styled(tmp_path):
    from test_batch import write_manifest, write_tiny_town

    write_tiny_town(tmp_path / "v")
    man = write_manifest(tmp_path / "b.toml", [{"name": "v1", "workspace": "v/town.gpkg"}])
    out = tmp_path / "out"
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]) == 0
    gpkg = out / "v1.gpkg"
    rows = styles.read_layer_styles(gpkg)
    geoms = _geometry_columns(gpkg)
    # the drainage layers and the screening layers, written one after the other, each once
    assert sorted(r["f_table_name"] for r in rows) == sorted(
        t for t, (c, _g) in geoms.items() if _has_geometry(gpkg, t, c)
    )
    assert {"inlet_catchments", "sewersheds", "screening", "septic"} <= {
        r["f_table_name"] for r in rows
    }
    assert all(r["useAsDefault"] == 1 for r in rows)
