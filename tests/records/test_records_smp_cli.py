"""``ms4map smp``: add, import, list, show, inspect, maintain, overdue (issue 31 item 3)."""

from __future__ import annotations

import json

import geopandas as gpd
from shapely.geometry import Point, box
from test_records import make_town

import ms4map.records as rec
from ms4map.cli import main
from ms4map.records import smp


def test_smp_commands_add_inspect_maintain_list_overdue_show(tmp_path, capsys) -> None:
    town = make_town(tmp_path)
    base = [str(town), "--by", "jsmith"]
    code = main(
        ["smp", "add", *base, "--name", "Pond 1", "--kind", "P-2", "--at", "600050,4760050",
         "--inspection-months", "12", "--maintenance-months", "6", "--owner", "HOA"]
    )  # fmt: skip
    assert code == 0 and "SMP 1 (Pond 1) added." in capsys.readouterr().out
    poly = "POLYGON ((600100 4760100, 600130 4760100, 600130 4760120, 600100 4760100))"
    assert main(["smp", "add", *base, "--name", "Bio 2", "--kind", "F-5", "--wkt", poly]) == 0
    capsys.readouterr()
    # refusals: exit 2, nothing written
    assert (
        main(["smp", "add", *base, "--name", "X", "--kind", "Z-1", "--at", "600050,4760050"]) == 2
    )
    assert main(["smp", "add", *base, "--name", "Far", "--kind", "P-1", "--at", "0,0"]) == 2
    assert "lies outside the town" in capsys.readouterr().err
    assert main(["smp", "inspect", *base, "1", "--date", "2025-01-10", "--condition", "good"]) == 0
    code = main(["smp", "maintain", *base, "1", "--date", "2025-02-01", "--actions", "mowed"])
    assert code == 0
    code = main(
        [
            "smp",
            "inspect",
            str(town),
            "--by",
            "guest",
            "--role",
            "viewer",
            "1",
            "--date",
            "2025-01-11",
        ]
    )
    assert code == 4 and "viewer role" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["smp", "overdue", str(town), "--today", "2026-01-09", "--json"]) == 0
    late = json.loads(capsys.readouterr().out)
    # maintained 2025-02-01 every 6 months: due 2025-08-01; the inspection not yet due
    assert [(r["smp_id"], r["what"], r["due"]) for r in late] == [(1, "maintenance", "2025-08-01")]
    assert main(["smp", "overdue", str(town), "--today", "2026-01-11", "--json"]) == 0
    late = json.loads(capsys.readouterr().out)
    assert [(r["what"], r["days_overdue"]) for r in late] == [
        ("inspection", 1),
        ("maintenance", 163),
    ]
    assert main(["smp", "list", str(town), "--today", "2026-01-11", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["inspection_status"] for r in rows] == ["overdue", "never_inspected"]
    assert main(["smp", "show", str(town), "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["geometry"] == "POINT (600050 4760050)"
    assert [i["condition"] for i in shown["inspections"]] == ["good"]
    assert main(["smp", "show", str(town), "9"]) == 2


def test_smp_import_command_with_column_mapping_and_reimport(tmp_path, capsys) -> None:
    town = make_town(tmp_path)
    r = rec.open_records(town, user="jsmith")  # the records file exists, remembers its town
    g = gpd.GeoDataFrame(
        {"SMP_NAME": ["Pond 1", "Bio 2"], "TYPE": ["P-2", "F-5"], "OWNER": ["HOA", "Town"]},
        geometry=[Point(600050, 4760050), box(600100, 4760100, 600130, 4760120)],
        crs="EPSG:26918",
    )
    src = tmp_path / "smps.geojson"
    g.to_file(src)
    args = ["smp", "import", str(src), "--records", str(r.path), "--by", "jsmith"]
    args += ["--map", "name=SMP_NAME", "--map", "kind=TYPE"]
    assert main(args) == 0
    assert "2 rows; 2 added, 0 updated, 0 unchanged." in capsys.readouterr().out
    assert main(args) == 0
    assert "0 added, 0 updated, 2 unchanged." in capsys.readouterr().out
    assert smp.smps(r)["owner"].tolist() == ["HOA", "Town"]
    g.loc[1, "TYPE"] = "nonsense"
    g.to_file(tmp_path / "bad.geojson")
    bad = ["smp", "import", str(tmp_path / "bad.geojson"), "--records", str(r.path)]
    assert main([*bad, "--by", "jsmith", "--map", "name=SMP_NAME", "--map", "kind=TYPE"]) == 2
    err = capsys.readouterr().err
    assert "layer 'bad', feature 2 (Bio 2): SMP field 'kind' = 'nonsense'" in err
    assert main(["smp", "import", str(src), "--by", "jsmith"]) == 4  # no records named
    assert len(smp.smps(r)) == 2


def test_records_export_holds_the_smp_tables(tmp_path, capsys) -> None:
    town = make_town(tmp_path)
    r = rec.open_records(town, user="jsmith")
    smp.add_smp(r, "Pond 1", "P-2", Point(600050, 4760050), inspection_months=12)
    smp.add_smp(r, "Bio 2", "F-5", box(600100, 4760100, 600130, 4760120))
    smp.inspect_smp(r, 1, "2025-01-10")
    out = tmp_path / "smps.csv"
    assert main(["records", str(town), "--export", str(out), "--table", "smps"]) == 0
    assert out.read_text().splitlines()[1].startswith("1,1,Pond 1,P-2,")
    gpkg_out = tmp_path / "export.gpkg"
    assert main(["records", str(town), "--export", str(gpkg_out)]) == 0
    back = gpd.read_file(gpkg_out, layer="smps")
    assert back.geometry.geom_type.tolist() == ["Point", "Polygon"]
    st = gpd.read_file(gpkg_out, layer="smp_status")
    assert st["inspection_status"].tolist()[1] == "never_inspected"
    assert len(gpd.read_file(gpkg_out, layer="smp_inspections")) == 1
