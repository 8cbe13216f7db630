"""``ms4map batch`` on what a batch audit found (the tiny town of ``test_batch``).

1. A workspace edit held in its ``-wal`` file (a program such as QGIS has it open) does
   not change the file's bytes: the town was skipped with the old answers; now it is
   recomputed.
2. A town output cut short (half its bytes) stopped the whole batch with exit 4 ("not
   a GeoPackage"); it is ms4map's own output, so the town is recomputed.  A GeoPackage
   of the user's at that path is still refused.
3. A town that fails after an earlier success kept that output, made from the old
   inputs and looking current; now it is removed (and the error says so).
4. A town that failed in a ``--force`` run (its earlier output, of the same inputs,
   kept) was skipped by the next run; a town that failed is always retried.
"""

from __future__ import annotations

import sqlite3

import geopandas as gpd
import pytest
from shapely.geometry import Point
from test_batch import summary, write_manifest, write_tiny_town

from ms4map.cli import main


@pytest.fixture
def done(tmp_path):
    ws = write_tiny_town(tmp_path / "v")
    man = write_manifest(tmp_path / "b.toml", [{"name": "v1", "workspace": "v/town.gpkg"}])
    out = tmp_path / "out"
    argv = ["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]
    assert main(argv) == 0
    return ws, out, argv


def test_an_edit_held_in_the_wal_is_seen(tmp_path):
    from ms4map.records.gpkg import _register_gpkg_functions

    ws = write_tiny_town(tmp_path / "v")
    with sqlite3.connect(ws) as c:  # a workspace in WAL mode (as QGIS leaves some)
        c.execute("PRAGMA journal_mode=WAL")
    man = write_manifest(tmp_path / "b.toml", [{"name": "v1", "workspace": "v/town.gpkg"}])
    out = tmp_path / "out"
    argv = ["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]
    assert main(argv) == 0
    before = int(summary(out).loc["v1", "septic_flagged"])
    bytes_before = ws.read_bytes()
    con = sqlite3.connect(ws)
    _register_gpkg_functions(con)  # the layer's spatial index triggers call them
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("UPDATE parcels SET sewer = 'septic'")
    con.commit()  # held in town.gpkg-wal while this connection stays open
    try:
        assert ws.read_bytes() == bytes_before  # the file itself has not changed
        assert main(argv) == 0
        row = summary(out).loc["v1"]
        assert row["status"] == "ok" and int(row["septic_flagged"]) > before
    finally:
        con.close()


def test_a_damaged_output_is_recomputed_and_a_users_file_still_refused(done, capsys):
    _ws, out, argv = done
    f = out / "v1.gpkg"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    mine = gpd.GeoDataFrame({"w": [1]}, geometry=[Point(0, 0)], crs="EPSG:26918")
    f.unlink()
    mine.to_file(f, layer="wells")
    assert main(argv) == 4
    assert "was not written by ms4map" in capsys.readouterr().err
    assert gpd.read_file(f, layer="wells")["w"].tolist() == [1]


def test_a_failed_towns_stale_output_goes_and_a_failed_town_is_retried(done, monkeypatch):
    ws, out, argv = done
    dem = ws.with_name("town_dem.tif")
    good = dem.read_bytes()
    dem.write_bytes(b"not a raster")
    assert main(argv) == 1
    row = summary(out).loc["v1"]
    assert row["status"] == "failed" and "made from other inputs, was removed" in row["error"]
    assert not (out / "v1.gpkg").exists()
    dem.write_bytes(good)
    assert main(argv) == 0 and summary(out).loc["v1", "status"] == "ok"
    # a --force run that fails keeps the output of the same inputs, and is retried next
    import ms4map.rules.septic as septic

    real = septic.flag_septic

    def boom(*a, **k):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(septic, "flag_septic", boom)
    assert main([*argv, "--force"]) == 1
    assert "of the same inputs, is kept" in summary(out).loc["v1", "error"]
    monkeypatch.setattr(septic, "flag_septic", real)
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"  # retried, not skipped
