"""The field package's QGIS project, checked headless with QGIS's own Python (issue 32 item 3)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from test_records_field import demo_copy

import ms4map.records as rec
from ms4map.records.field_export import export_package
from ms4map.records.field_import import import_package
from ms4map.records.field_qgis import (
    PROJECT_NAME,
    QGIS_PYTHON,
    _env,
    qgis_available,
    write_qgis_project,
)

CHECK = r"""
import json, os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from qgis.core import (QgsApplication, QgsFeature, QgsGeometry, QgsMapRendererSequentialJob,
                       QgsMapSettings, QgsPointXY, QgsProject)
from qgis.PyQt.QtCore import QSize
app = QgsApplication([], False)
app.initQgis()
proj = QgsProject.instance()
ok = proj.read(sys.argv[1])
out = {"read": ok, "layers": {}}
for lyr in proj.mapLayers().values():
    out["layers"][lyr.name()] = lyr.isValid()
ins = proj.mapLayersByName("inspections")[0]
i = ins.fields().indexOf("characterization")
setup = ins.editorWidgetSetup(i)
out["widget"] = setup.type()
out["values"] = [list(d)[0] for d in setup.config().get("map", [])]
j = ins.fields().indexOf("outfall_id")
out["outfall_required"] = bool(ins.fieldConstraints(j) & 1)
# a crew's inspection entered through QGIS: device_uuid from the form's default
ins.startEditing()
f = QgsFeature(ins.fields())
for k in range(ins.fields().count()):
    dv = ins.defaultValue(k, f)
    if dv is not None and str(dv) not in ("", "NULL"):
        f.setAttribute(k, dv)
f["outfall_id"] = "OF-002"
f["date"] = "2025-06-02"
f["odor"] = 1
f.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(0, 0)))
ins.addFeature(f)
out["committed"] = ins.commitChanges()
hs = proj.mapLayersByName("hillshade")[0]
ms = QgsMapSettings()
ms.setLayers([hs])
ms.setExtent(hs.extent())
ms.setOutputSize(QSize(200, 150))
job = QgsMapRendererSequentialJob(ms)
job.start()
job.waitForFinished()
img = job.renderedImage()
colours = {img.pixel(x, y) for x in range(0, 200, 7) for y in range(0, 150, 7)}
out["basemap_colours"] = len(colours)
print("RESULT " + json.dumps(out), flush=True)
os._exit(0)
"""


def test_qgis_project_loads_has_value_lists_and_a_crew_row_comes_home(tmp_path) -> None:
    if not qgis_available():
        pytest.skip(f"QGIS's Python (python3-qgis for {QGIS_PYTHON}) is missing")
    r = rec.open_records(demo_copy(tmp_path), user="jsmith")
    info = export_package(r, tmp_path / "trip.gpkg", qgis_project=True)
    qgz = Path(info["qgis_project"])
    assert qgz == tmp_path / "trip.qgz" and qgz.exists()
    print(f"demo field package: {info['bytes'] / 1e6:.1f} MB (+ project {qgz.stat().st_size} B)")
    assert info["bytes"] < 50e6
    p = subprocess.run(
        [QGIS_PYTHON, "-c", CHECK, str(qgz)], capture_output=True, text=True, timeout=300,
        env=_env(),
    )  # fmt: skip
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stderr
    out = json.loads(line[-1][7:])
    assert out["read"] and out["layers"] and all(out["layers"].values()), out
    assert {"outfalls", "structures", "inspections", "samples", "photos", "hillshade"} <= set(
        out["layers"]
    )
    assert out["widget"] == "ValueMap" and out["values"] == list(rec.CHARACTERIZATIONS)
    assert out["outfall_required"] and out["committed"]
    assert out["basemap_colours"] > 5  # the hillshade draws
    report = import_package(r, tmp_path / "trip.gpkg")  # QGIS's edit passes the checks
    assert report["added"]["inspections"] == 1 and report["refused"] == []


def _check(project: str) -> dict:
    p = subprocess.run(
        [QGIS_PYTHON, "-c", CHECK, project], capture_output=True, text=True, timeout=300,
        env=_env(),
    )  # fmt: skip
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, p.stderr
    return json.loads(line[-1][7:])


def test_the_project_travels_inside_the_package(tmp_path) -> None:
    if not qgis_available():
        pytest.skip(f"QGIS's Python (python3-qgis for {QGIS_PYTHON}) is missing")
    r = rec.open_records(demo_copy(tmp_path), user="jsmith")
    export_package(r, tmp_path / "trip.gpkg", qgis_project=True)
    phone = tmp_path / "phone"
    phone.mkdir()
    shutil.copy(tmp_path / "trip.gpkg", phone / "trip.gpkg")  # the one file, no .qgz
    with sqlite3.connect(phone / "trip.gpkg") as con:
        assert con.execute("SELECT name FROM qgis_projects").fetchall() == [(PROJECT_NAME,)]
    out = _check(f"geopackage:{phone / 'trip.gpkg'}?projectName={PROJECT_NAME}")
    assert out["read"] and out["layers"] and all(out["layers"].values()), out
    assert out["widget"] == "ValueMap" and out["values"] == list(rec.CHARACTERIZATIONS)
    assert out["committed"] and out["basemap_colours"] > 5
    report = import_package(r, phone / "trip.gpkg")  # the project's table is QGIS's own
    assert report["added"]["inspections"] == 1 and report["refused"] == []


def test_no_qgis_python_means_no_project_not_a_failure(tmp_path) -> None:
    assert write_qgis_project(tmp_path / "x.gpkg", python=str(tmp_path / "no-python")) is None
