"""`ms4map export --records`: exported outfalls carry their one status, as the app's
pages show it (issue 28 item 6: every page, count, PDF and export reads one status)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import geopandas as gpd
import pytest

import ms4map
from ms4map import pipeline
from ms4map.cli import main
from ms4map.cli.drainage import write_layers
from ms4map.outputs import export


@pytest.fixture(scope="module")
def results_and_records(demo_result, tmp_path_factory) -> tuple[Path, Path]:
    from ms4map.records import open_records

    ws, res = demo_result
    d = tmp_path_factory.mktemp("export_status")
    gpkg = d / "results.gpkg"
    write_layers(gpkg, {**res.layers(), **pipeline.model_layers(res)}, ws=ws, settings={})
    rec_path = d / "demo.records.gpkg"
    rec = open_records(ms4map.datasets.get_path("alder_falls"), user="jsmith", records=rec_path)
    rec.add_inspection("OF-004", "2025-06-02", flow_present=True, characterization="obvious")
    return gpkg, rec_path


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_exported_outfalls_carry_the_records_status(results_and_records, tmp_path):
    gpkg, rec_path = results_and_records
    before = _digest(rec_path)
    plain = gpd.read_file(export(gpkg, tmp_path / "plain.geojson", ["outfalls"]).path)
    out = export(gpkg, tmp_path / "status.geojson", ["outfalls"], records=rec_path)
    got = gpd.read_file(out.path).set_index("outfall_id")
    layer = plain.set_index("outfall_id")["status"]
    assert got.loc["OF-004", "status"] == "illicit"  # the inspection found it obvious
    assert got.loc["OF-004", "layer_status"] == layer["OF-004"] != "illicit"
    assert "obvious" in got.loc["OF-004", "status_reason"]
    # the others: what the records derive from the layer alone (never inspected)
    others = got.drop(index="OF-004")
    assert (others["status"] == layer.drop(index="OF-004")).all()
    assert "status_reason" not in plain.columns  # without records: the layer as it is
    assert _digest(rec_path) == before  # the records file is only read


def test_the_cli_takes_records_and_refuses_them_for_a_model(results_and_records, tmp_path, capsys):
    gpkg, rec_path = results_and_records
    dest = tmp_path / "out.zip"
    assert main(["export", str(gpkg), "--to", str(dest), "--records", str(rec_path)]) == 0
    shp = gpd.read_file(f"zip://{dest}!outfalls.shp")
    assert "illicit" in set(shp["status"])
    code = main(["export", str(gpkg), "--to", str(tmp_path / "m.inp"), "--records", str(rec_path)])
    assert code != 0 and "--records is not for a SWMM model" in capsys.readouterr().err
    assert not (tmp_path / "m.inp").exists()


def test_a_missing_source_or_records_file_is_named_with_its_fix(results_and_records, tmp_path):
    from ms4map.core.errors import InputOpenError

    gpkg, rec_path = results_and_records
    # the missing source is named first (it is what was asked for), not the records file
    with pytest.raises(InputOpenError, match=r"nope\.gpkg': no such file"):
        export(tmp_path / "nope.gpkg", tmp_path / "o.geojson", records=tmp_path / "x.gpkg")
    with pytest.raises(InputOpenError, match=r"--records .*gone\.records\.gpkg: no such re") as e:
        export(gpkg, tmp_path / "o.geojson", ["outfalls"], records=tmp_path / "gone.records.gpkg")
    assert "workspace instead" not in str(e.value)  # the wording of `ms4map records`
    assert not (tmp_path / "o.geojson").exists()
