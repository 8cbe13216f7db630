"""The field package's QGIS project, made with QGIS's own Python API (Debian ``python3-qgis``).

:func:`write_qgis_project` runs QGIS's Python (``/usr/bin/python3`` by default, never the
project's interpreter: QGIS is a system package) in a subprocess that writes
``<package>.qgz`` beside the package, and the same project inside the package (QGIS's
``qgis_projects`` table, named :data:`PROJECT_NAME`: one file to carry, opened in QGIS
with *Project > Open From > GeoPackage*): every layer of the package, the hillshade at the
bottom, and forms whose fields show the package's ``value_lists`` (value maps), its
``field_rules`` (not-null and ``required_when`` constraints, number ranges) and a new
UUID as each row's ``device_uuid`` default, so the package opens in QGIS and in QField
with no further set-up.  Without QGIS's Python the project is not made (and said).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

__all__ = ["PROJECT_NAME", "QGIS_PYTHON", "qgis_available", "write_qgis_project"]

#: The name of the QGIS project stored inside the package.
PROJECT_NAME = "ms4map_field_trip"

#: The interpreter QGIS's Python API is installed for (Debian ``python3-qgis``).
QGIS_PYTHON = "/usr/bin/python3"

_SCRIPT = r"""
import json, os, sqlite3, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from qgis.core import (QgsApplication, QgsDefaultValue, QgsEditorWidgetSetup,
                       QgsFieldConstraints, QgsProject, QgsRasterLayer, QgsVectorLayer)
app = QgsApplication([], False)
app.initQgis()
pkg, qgz = sys.argv[1], sys.argv[2]
con = sqlite3.connect(pkg)
names = [r[0] for r in con.execute(
    "SELECT table_name FROM gpkg_contents WHERE data_type IN ('features', 'attributes') "
    "ORDER BY CASE data_type WHEN 'features' THEN 0 ELSE 1 END, table_name")]
rasters = [r[0] for r in con.execute(
    "SELECT table_name FROM gpkg_contents WHERE data_type = '2d-gridded-coverage' OR "
    "data_type = 'tiles'")]
values = {}
for t, f, v in con.execute("SELECT table_name, field, value FROM value_lists"):
    values.setdefault((t, f), []).append(v)
rules = {}
for t, f, kind, lo, hi, when in con.execute(
        "SELECT table_name, field, kind, lo, hi, required_when FROM field_rules"):
    rules[(t, f)] = (kind, lo, hi, when)
con.close()
proj = QgsProject.instance()
root = proj.layerTreeRoot()
done = []
for t in rasters:
    r = QgsRasterLayer(f"GPKG:{pkg}:{t}", t, "gdal")
    if r.isValid():
        proj.addMapLayer(r, False)
        root.addLayer(r)
        done.append(t)
for t in names:
    lyr = QgsVectorLayer(f"{pkg}|layername={t}", t, "ogr")
    if not lyr.isValid():
        continue
    proj.addMapLayer(lyr, False)
    root.insertLayer(0, lyr)
    done.append(t)
    fields = lyr.fields()
    for i in range(fields.count()):
        name = fields.at(i).name()
        if name == "device_uuid":
            lyr.setDefaultValueDefinition(i, QgsDefaultValue("uuid('WithoutBraces')"))
        if (t, name) in values:
            vm = [{v: v} for v in values[(t, name)]]
            lyr.setEditorWidgetSetup(i, QgsEditorWidgetSetup("ValueMap", {"map": vm}))
        rule = rules.get((t, name))
        if rule is None:
            continue
        kind, lo, hi, when = rule
        if when == "always":
            lyr.setFieldConstraint(i, QgsFieldConstraints.ConstraintNotNull,
                                   QgsFieldConstraints.ConstraintStrengthHard)
        elif when:
            lyr.setConstraintExpression(i, f'NOT ({when}) OR "{name}" IS NOT NULL',
                                        f"required when {when}")
        elif lo is not None and hi is not None:
            lyr.setConstraintExpression(
                i, f'"{name}" IS NULL OR ("{name}" >= {lo} AND "{name}" <= {hi})',
                f"{lo} to {hi}")
ok = proj.write(qgz)
# the same project inside the package too: one file to carry (paths relative to it)
inside = proj.write(f"geopackage:{pkg}?projectName={sys.argv[3]}")
print("RESULT " + json.dumps({"ok": bool(ok), "inside": bool(inside), "layers": done}),
      flush=True)
os._exit(0)  # QGIS 3.22's teardown can crash after the work is done
"""


def qgis_available(python: str = QGIS_PYTHON) -> bool:
    """Whether ``python`` exists and imports ``qgis.core``."""
    if not Path(python).exists():
        return False
    p = subprocess.run(
        [python, "-c", "import qgis.core"], capture_output=True, text=True, timeout=120, env=_env()
    )
    return p.returncode == 0


def _env() -> dict[str, str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env.pop("PYTHONPATH", None)  # QGIS runs on the system python, not this one
    return env


def write_qgis_project(package: str | Path, *, python: str = QGIS_PYTHON) -> Path | None:
    """Write ``<package>.qgz`` beside ``package`` and the same project inside it.

    The layers' paths are relative (``./<package name>``): the package and its project
    move together to any folder or device, under the package's own name.  ``None`` when
    QGIS's Python is missing.

    Raises
    ------
    RuntimeError
        QGIS ran but could not write the project (its message).
    """
    pkg = Path(package).resolve()
    if not qgis_available(python):
        return None
    qgz = pkg.with_suffix(".qgz")
    p = subprocess.run(
        [python, "-c", _SCRIPT, str(pkg), str(qgz), PROJECT_NAME],
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    result = json.loads(line[-1][len("RESULT ") :]) if line else {"ok": False}
    if p.returncode != 0 or not (result["ok"] and result.get("inside")) or not qgz.exists():
        raise RuntimeError(f"QGIS could not write the project {qgz.name}: {p.stderr[-2000:]}")
    return qgz
