"""ms4map never adds layers to, or replaces, a file it did not write (a records audit).

Three files stand next to an IDDE records store ``A`` of a small town: another records
store ``B`` (three inspections), a GeoPackage of the user's (``mine.gpkg``, a layer
``wells``) and an earlier ms4map output.  By hand:

- ``records --backup B`` would have replaced B with a copy of A (B's three inspections
  lost), and ``--backup mine.gpkg`` the user's layer: both are refused (exit 4) and
  both files are byte for byte as they were; a backup to a new name works;
- ``records --export B`` would have written A's tables into B (and broken B as a
  store), ``--export mine.gpkg`` added eight layers to it: refused, unchanged;
- ``ms4map drainage --out mine.gpkg`` (any command's GeoPackage output): refused before
  any work; into an earlier ms4map output it still adds its layers.
"""

from __future__ import annotations

import hashlib

import geopandas as gpd
import pytest
from shapely.geometry import Point
from test_records import make_town

import ms4map.records as rec
from ms4map.cli import main
from ms4map.core.errors import UsageError
from ms4map.io import write_outputs


def _sha(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture()
def files(tmp_path):
    town = make_town(tmp_path)
    a, b = tmp_path / "A.records.gpkg", tmp_path / "B.records.gpkg"
    for store, outfalls in ((a, ["OF-1"]), (b, ["OF-2", "OF-3", "OF-4"])):
        r = rec.open_records(town, records=store, user="jsmith")
        for of in outfalls:
            r.add_inspection(outfall_id=of, date="2025-06-02")
    mine = tmp_path / "mine.gpkg"
    gpd.GeoDataFrame({"well": ["W1"]}, geometry=[Point(0, 0)], crs="EPSG:26918").to_file(
        mine, layer="wells"
    )
    return town, a, b, mine


def test_a_backup_or_an_export_never_replaces_another_file(files, capsys):
    town, a, b, mine = files
    before = {p: _sha(p) for p in (b, mine)}
    for opt in ("--backup", "--export"):
        for target in (b, mine):
            code = main(["records", str(town), "--records", str(a), opt, str(target)])
            err = capsys.readouterr().err
            assert code == 4, (opt, target)
            assert f"{target.name}' exists" in err, err
            assert "Fix:" in err
    assert {p: _sha(p) for p in (b, mine)} == before
    assert len(rec.open_records(town, records=b, user="x").inspections()) == 3
    new = b.with_name("A-2025-06-02.records.gpkg")
    assert main(["records", str(town), "--records", str(a), "--backup", str(new)]) == 0
    assert rec.open_records(town, records=new, user="x").inspections()["outfall_id"].tolist() == [
        "OF-1"
    ]


def test_outputs_go_only_into_files_ms4map_wrote(files, tmp_path):
    town, _a, b, mine = files
    before = _sha(mine)
    assert main(["drainage", str(town), "--out", str(mine)]) == 4
    assert _sha(mine) == before
    layer = gpd.GeoDataFrame({"x": [1]}, geometry=[Point(1, 1)], crs="EPSG:26918")
    for target in (mine, b):
        with pytest.raises(UsageError, match="ms4map adds its layers only to files it wrote"):
            write_outputs(target, {"extra": layer}, provenance={"tool": "test"})
    ours = tmp_path / "ours.gpkg"
    write_outputs(ours, {"one": layer}, provenance={"tool": "test"})
    write_outputs(ours, {"two": layer}, provenance={"tool": "test"})  # an ms4map output: merged
    import pyogrio

    names = {n for n, _ in pyogrio.list_layers(ours)}
    assert {"one", "two", "provenance"} <= names
    text = tmp_path / "notes.gpkg"
    text.write_text("not a database")
    with pytest.raises(UsageError, match="is not a GeoPackage"):
        write_outputs(text, {"one": layer}, provenance={"tool": "test"})
    assert text.read_text() == "not a database"


def test_a_records_file_of_another_town_or_not_one_at_all_is_refused(files, tmp_path, capsys):
    """Town 2 (its own folder, the same outfall ids) given town 1's records file: its
    inspection would have gone into town 1's records (and counted in town 1's annual
    report). Refused (exit 4), naming both workspaces; nothing written.  A text file
    or a plain GeoPackage as the records file: a clear error (exit 3), not a crash."""
    town, a, _b, mine = files
    (tmp_path / "town2").mkdir()
    town2 = make_town(tmp_path / "town2")
    before = _sha(a)
    args = ["--outfall", "OF-1", "--date", "2025-06-03", "--by", "jsmith"]
    assert main(["inspect", str(town2), "--records", str(a), *args]) == 4
    err = capsys.readouterr().err
    assert "holds the records of workspace" in err and str(town) in err and "Fix:" in err
    assert _sha(a) == before
    assert main(["inspect", str(town), "--records", str(a), *args]) == 0  # its own town
    text = tmp_path / "notes.records.gpkg"
    text.write_text("hello")
    assert main(["inspect", str(town), "--records", str(text), *args]) == 3
    assert "is not a GeoPackage" in capsys.readouterr().err
    assert text.read_text() == "hello"
    plain = tmp_path / "plain.records.gpkg"
    plain.write_bytes(mine.read_bytes())
    assert main(["records", str(plain), "--summary"]) == 3
    assert "not an ms4map records file" in capsys.readouterr().err
