"""A records file keeps taking records after a GIS adds a spatial index to it.

QGIS ("Create spatial index") and GDAL add the GeoPackage R-tree extension to a layer:
a virtual table and triggers that call ``ST_IsEmpty`` and ``ST_MinX`` ... ``ST_MaxY``
on every insert.  Those are not SQLite functions; every ``ms4map inspect`` failed with
an internal error (``no such function: ST_IsEmpty``).  Here the triggers are made as
GDAL makes them (its SQL, verbatim but for the table), then one more inspection of
OF-2 (x 600100, y 4760000 in the tiny town) is recorded: the index holds its point.
"""

from __future__ import annotations

import sqlite3

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.records.gpkg import _gpkg_bounds

GDAL_RTREE = [
    'CREATE VIRTUAL TABLE "rtree_inspections_geom" USING rtree(id, minx, maxx, miny, maxy)',
    'CREATE TRIGGER "rtree_inspections_geom_insert" AFTER INSERT ON "inspections" WHEN '
    '(new."geom" NOT NULL AND NOT ST_IsEmpty(NEW."geom")) BEGIN INSERT OR REPLACE INTO '
    '"rtree_inspections_geom" VALUES (NEW."fid",ST_MinX(NEW."geom"), ST_MaxX(NEW."geom"),'
    'ST_MinY(NEW."geom"), ST_MaxY(NEW."geom")); END',
]


def test_a_spatial_index_added_by_a_gis_does_not_stop_the_records(tmp_path):
    town = make_town(tmp_path)
    r = rec.open_records(town, user="jsmith")
    r.add_inspection(outfall_id="OF-1", date="2025-06-02")
    with sqlite3.connect(r.path) as con:
        for sql in GDAL_RTREE:
            con.execute(sql)
    r.add_inspection(outfall_id="OF-2", date="2025-06-03")
    assert r.inspections()["outfall_id"].tolist() == ["OF-1", "OF-2"]
    with sqlite3.connect(r.path) as con:
        (row,) = con.execute("SELECT minx, maxx, miny, maxy FROM rtree_inspections_geom")
    assert row == pytest.approx((600100, 600100, 4760000, 4760000), abs=0.5)


def test_the_bounds_of_a_geometry_blob():
    import struct

    import shapely

    wkb = shapely.to_wkb(shapely.LineString([(1, 5), (3, 2)]))
    no_envelope = b"GP\x00\x01" + struct.pack("<i", 26918) + wkb
    assert _gpkg_bounds(no_envelope) == (1, 3, 2, 5)
    with_envelope = b"GP\x00\x03" + struct.pack("<i4d", 26918, 1, 3, 2, 5) + wkb
    assert _gpkg_bounds(with_envelope) == (1, 3, 2, 5)
    empty = b"GP\x00\x11" + struct.pack("<i", 26918) + wkb
    assert _gpkg_bounds(empty) is None and _gpkg_bounds(None) is None


def test_styles_cut_short_at_creation_are_written_at_the_next_opening(tmp_path):
    """A first writer killed after the schema but before the styles left a records file
    that QGIS drew unstyled for good (the styles were written only with the schema)."""
    town = make_town(tmp_path)
    r = rec.open_records(town, user="jsmith")
    with sqlite3.connect(r.path) as con:
        con.execute("DELETE FROM layer_styles")
    rec.open_records(town, user="jsmith")
    with sqlite3.connect(r.path) as con:
        tables = {t for (t,) in con.execute("SELECT f_table_name FROM layer_styles")}
    assert {"inspections", "samples", "cases"} <= tables
