"""An output is never a file a workspace manifest names (an audit found two lost).

``ms4map validate town.toml --report streams.json`` replaced the GeoJSON the manifest
names as its waterbodies layer, and ``ms4map records town.toml --export imp.csv`` the
303(d) CSV it names: the commands only knew the manifest itself.  Both are refused now
(exit 4), the files byte for byte unchanged; so is the library's ``Records.export``.
"""

from __future__ import annotations

import hashlib

import geopandas as gpd
import pytest
from shapely.geometry import LineString
from test_records import make_town

from ms4map.cli import main
from ms4map.core.errors import UsageError
from ms4map.records import open_records


@pytest.fixture()
def manifest(tmp_path):
    make_town(tmp_path)
    streams = gpd.GeoDataFrame(
        {"wb_id": ["1301-0001"], "name": ["Alder Kill"]},
        geometry=[LineString([(600000, 4759900), (600400, 4759900)])],
        crs="EPSG:26918",
    )
    streams.to_file(tmp_path / "streams.json", driver="GeoJSON")
    (tmp_path / "imp.csv").write_text(
        "wb_id,pollutant,category\n1301-0001,Phosphorus,5\n", encoding="utf-8"
    )
    m = tmp_path / "town.toml"
    m.write_text(
        'workspace = "town.gpkg"\n[layers]\nwaterbodies = "streams.json"\n',
        encoding="utf-8",
    )
    return m


def _sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_validate_report_never_replaces_a_manifest_layer(manifest, capsys):
    streams = manifest.with_name("streams.json")
    before = _sha(streams)
    assert main(["validate", str(manifest), "--report", str(streams)]) == 4
    assert "Refusing to write into input file 'streams.json'" in capsys.readouterr().err
    assert _sha(streams) == before


def test_records_outputs_never_replace_a_manifest_layer(manifest, capsys):
    imp = manifest.with_name("imp.csv")
    text = manifest.read_text(encoding="utf-8") + 'impairments = "imp.csv"\n'
    manifest.write_text(text, encoding="utf-8")
    before = _sha(imp)
    rec = open_records(manifest, user="smo")
    rec.add_inspection("OF-1", "2025-06-01", flow_present=False)
    for opt in ("--export", "--annual-report"):
        assert main(["records", str(manifest), opt, str(imp)]) == 4, opt
        assert "Refusing to write into input file 'imp.csv'" in capsys.readouterr().err
    with pytest.raises(UsageError, match="input file 'imp.csv'"):
        rec.export(imp)
    assert _sha(imp) == before


def test_a_batch_town_is_rerun_when_its_manifests_field_map_changes(tmp_path):
    """The field map a town's workspace manifest names changes the answers (which
    column holds the sewer type): a changed one must not leave the town "up to date"."""
    from ms4map.batch import Town

    fields = tmp_path / "fields.toml"
    fields.write_text('[parcels]\nsewer = "SEW_OLD"\n', encoding="utf-8")
    m = tmp_path / "town.toml"
    m.write_text('workspace = "town.gpkg"\nfield_map = "fields.toml"\n', encoding="utf-8")
    town = Town(name="t1", workspace=str(m))
    assert fields in town.option_files()
    before = town.key()
    fields.write_text('[parcels]\nsewer = "SEW_NEW"\n', encoding="utf-8")
    assert town.key() != before
