"""Upload limits (issue 29 item 1): a zip of a GeoJSON and a gigabyte of zeros named
``parcels.dbf`` is refused, side files are checked against what their layer needs, and
the uploads have a total and a per-user quota."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import geopandas as gpd
import pytest
from shapely.geometry import Point
from test_app_upload import GEOJSON, _zip

from ms4map.app.upload import store_upload
from ms4map.core.errors import InputOpenError


def _zeros_zip(size: int) -> bytes:
    """A GeoJSON and ``size`` bytes of zeros named parcels.dbf, deflated (the attack of
    the issue used 1 GB in a 974 KB zip; 64 MB keeps the test quick)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("town.geojson", GEOJSON)
        zf.writestr("parcels.dbf", b"\0" * size)
    return buf.getvalue()


def test_zeros_named_as_a_dbf_are_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    data = tmp_path / "data"
    blob = _zeros_zip(64 * 2**20)
    assert len(blob) < 200 * 2**10  # a small upload ...
    with pytest.raises(InputOpenError, match="'parcels.dbf' is 64.0 MB but its header"):
        store_upload("town.zip", blob, data_dir=data)  # ... that would unpack to 64 MB
    assert not [p for p in (data / "uploads").rglob("*") if p.is_file()]


def test_a_real_shapefile_with_its_side_files_is_kept(tmp_path: Path) -> None:
    shp = tmp_path / "shp"
    shp.mkdir()
    gpd.GeoDataFrame(
        {"parcel_id": [f"P{i}" for i in range(50)]},
        geometry=[Point(600000 + i, 4760000) for i in range(50)],
        crs="EPSG:26918",
    ).to_file(shp / "parcels.shp")
    members = {p.name: p.read_bytes() for p in shp.iterdir()}
    up = store_upload("parcels.zip", _zip(members), data_dir=tmp_path / "data")
    assert [p.name for p in up.layers] == ["parcels.shp"] and not up.problems


def test_a_stray_file_larger_than_any_side_file_is_refused(tmp_path: Path) -> None:
    from ms4map.app.upload_limits import MAX_SIDE_BYTES

    blob = _zip({"town.geojson": GEOJSON, "notes.xml": b"<a/>" * (MAX_SIDE_BYTES // 4 + 1)})
    with pytest.raises(InputOpenError, match="'notes.xml' is 16.0 MB, and no layer needs"):
        store_upload("town.zip", blob, data_dir=tmp_path / "data")


def test_the_quotas_refuse_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    big = GEOJSON + b" " * 400_000  # about 0.4 MB each
    monkeypatch.setenv("MS4MAP_UPLOAD_USER_QUOTA_MB", "1")
    store_upload("a.geojson", big, data_dir=data, user="jsmith")
    store_upload("b.geojson", big + b" ", data_dir=data, user="jsmith")
    with pytest.raises(InputOpenError, match="jsmith's uploads would take 1 MB, over the limit"):
        store_upload("c.geojson", big + b"  ", data_dir=data, user="jsmith")
    store_upload("c.geojson", big + b"  ", data_dir=data, user="clerk")  # another user's share
    monkeypatch.setenv("MS4MAP_UPLOAD_QUOTA_MB", "1.5")
    with pytest.raises(InputOpenError, match="over the app's limit of 1.5 MB"):
        store_upload("d.geojson", big + b"   ", data_dir=data, user="clerk")
    assert len([p for p in (data / "uploads").iterdir() if not p.name.startswith(".")]) == 3


# -- issue 29 item 14: refusals said of the user's file, in the user's names --------------
def test_zip_refusals_name_the_users_file_not_the_stored_copy(tmp_path: Path) -> None:
    with pytest.raises(InputOpenError) as err:
        store_upload("my town.zip", _zip({"../x.geojson": GEOJSON}), data_dir=tmp_path / "d")
    assert "'my town.zip' is unsafe" in str(err.value)
    assert "upload.zip" not in str(err.value) and str(tmp_path) not in str(err.value)


def test_two_members_that_clean_to_one_name_are_named(tmp_path: Path) -> None:
    """They were called 'damaged', with a server path."""
    with pytest.raises(InputOpenError) as err:
        store_upload(
            "town.zip", _zip({"a b.geojson": GEOJSON, "a_b.geojson": GEOJSON}), data_dir=tmp_path
        )
    said = str(err.value)
    assert "'a b.geojson' and 'a_b.geojson'" in said and "rename one of them" in said
    assert "damaged" not in said and str(tmp_path) not in said


def test_one_unreadable_view_does_not_refuse_the_geopackage(tmp_path: Path) -> None:
    """A GeoPackage with one broken view was refused whole, with no fix."""
    import shutil
    import sqlite3

    import ms4map

    gpkg = tmp_path / "town.gpkg"
    shutil.copy(ms4map.datasets.get_path("alder_falls"), gpkg)
    with sqlite3.connect(gpkg) as con:
        con.execute("CREATE VIEW broken AS SELECT fid, geom FROM no_such_table")
        con.execute(
            "INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) "
            "VALUES ('broken', 'features', 'broken', 0)"
        )
        con.execute("INSERT INTO gpkg_geometry_columns VALUES ('broken','geom','POINT',0,0,0)")
    up = store_upload("town.gpkg", gpkg.read_bytes(), data_dir=tmp_path / "data")
    assert not up.problems
    assert "layer 'broken' of 'town.gpkg' cannot be read" in up.notes["town.gpkg"]
    assert "the other layers are used" in up.notes["town.gpkg"]


def test_a_geojson_with_a_stray_dbf_is_used_as_a_layer(tmp_path: Path) -> None:
    """Issue 29 item 14: a GeoJSON and a stray ``.dbf`` (no ``.shp``) in one zip gave
    'index 0 is out of bounds'; the GeoJSON is the layer, the .dbf a side file."""
    import ms4map

    shp = tmp_path / "shp"
    shp.mkdir()
    gpd.GeoDataFrame({"a": [1]}, geometry=[Point(0, 0)], crs="EPSG:4326").to_file(shp / "p.shp")
    blob = _zip({"town.geojson": GEOJSON, "parcels.dbf": (shp / "p.dbf").read_bytes()})
    up = store_upload("town.zip", blob, data_dir=tmp_path / "data")
    assert [p.name for p in up.layers] == ["town.geojson"] and not up.problems
    ws = ms4map.open_workspace(up.folder / "files", layers={"outfalls": str(up.layers[0])})
    assert len(ws.layers["outfalls"]) == 1
