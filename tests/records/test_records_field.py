"""The offline field package (issue 32): export from the demo, the crew's rows, import home."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import uuid
from pathlib import Path

import pandas as pd
import pytest
from test_records import jpeg_bytes, make_town, png_bytes

import ms4map.records as rec
from ms4map import idde
from ms4map.core.errors import DataError, UsageError
from ms4map.datasets import get_path
from ms4map.records.field_export import export_package, upstream
from ms4map.records.field_import import import_package
from ms4map.records.layers import layer
from ms4map.records.reads import network_result


def demo_copy(folder: Path) -> Path:
    src = Path(get_path("alder_falls"))
    for f in src.parent.glob(f"{src.stem}*"):
        if f.suffix in (".gpkg", ".tif"):
            shutil.copy(f, folder / f.name)
    return folder / src.name


@pytest.fixture
def demo(tmp_path: Path) -> rec.Records:
    r = rec.open_records(demo_copy(tmp_path), user="jsmith")
    r.open_case("OF-003", "2025-05-01", description="grey water")
    return r


def package(r: rec.Records, folder: Path, name: str = "trip.gpkg", **kw) -> Path:
    info = export_package(r, folder / name, **kw)
    return Path(info["path"])


def add_rows(pkg: Path, table: str, rows: list[dict]) -> None:
    with sqlite3.connect(pkg) as con:
        for row in rows:
            cols = list(row)
            con.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [row[c] for c in cols],
            )


def crew_writes(pkg: Path, outfalls: list[str], plan: list[str]) -> dict[str, str]:
    """20 inspections (3 invalid), 2 samples for case 1, 5 photos (one cut short)."""
    ins = []
    for i in range(20):
        ins.append(
            {
                "device_uuid": str(uuid.uuid4()),
                "device_id": "phone-A",
                "outfall_id": outfalls[i % len(outfalls)],
                "date": "2025-06-02",
                "flow_present": i % 2,
                "odor": i % 4,
                "inspector": "crew1",
            }
        )
    ins[3]["outfall_id"] = "OF-999"  # not an outfall
    ins[7]["odor"] = 7  # severity 0-3
    ins[11]["date"] = "2099-01-01"  # in the future
    add_rows(pkg, "inspections", ins)
    samples = [
        {"device_uuid": str(uuid.uuid4()), "device_id": "phone-A", "case_id": 1,
         "struct_id": plan[0], "date": "2025-06-03", "result": "flow", "ammonia": 2.5},
        {"device_uuid": str(uuid.uuid4()), "device_id": "phone-A", "case_id": 1,
         "struct_id": plan[1], "date": "2025-06-03", "flow_present": 0},
    ]  # fmt: skip
    add_rows(pkg, "samples", samples)
    photos = []
    targets = [ins[0], ins[1], samples[0], ins[4], ins[5]]  # one photo of a sample
    for k, target in enumerate(targets):
        data = png_bytes((8 + k, 6)) if k % 2 else jpeg_bytes((64 + k, 48))
        sha = hashlib.sha256(data).hexdigest()
        if k == 4:
            data = data[: len(data) // 2]  # cut short on the way home
        photos.append(
            {"device_uuid": str(uuid.uuid4()), "target_uuid": target["device_uuid"],
             "filename": f"p{k}.jpg", "sha256": sha, "data": data}
        )  # fmt: skip
    add_rows(pkg, "photos", photos)
    return {"cut": ins[5]["device_uuid"], "bad": [ins[i]["device_uuid"] for i in (3, 7, 11)]}


def _plan(pkg: Path) -> list[str]:
    with sqlite3.connect(pkg) as con:
        return [r[0] for r in con.execute("SELECT struct_id FROM sampling_plan ORDER BY rank")]


def test_package_from_the_demo_holds_what_the_crew_needs(demo, tmp_path) -> None:
    pkg = package(demo, tmp_path, outfalls=["OF-003", "OF-010"])
    with sqlite3.connect(pkg) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        meta = con.execute(
            "SELECT package_id, ms4map_version, created_by FROM field_package"
        ).fetchone()
        n_of = con.execute("SELECT count(*) FROM outfalls").fetchone()[0]
        lists = con.execute(
            "SELECT value FROM value_lists WHERE field = 'characterization'"
        ).fetchall()
        rule = con.execute(
            "SELECT required_when FROM field_rules WHERE table_name='samples' AND field='result'"
        ).fetchone()[0]
        cases = con.execute("SELECT case_id, outfall_id FROM open_cases").fetchall()
        tiles = con.execute("SELECT count(*) FROM hillshade").fetchone()[0]
    assert {"outfalls", "structures", "conveyances", "parcels", "hillshade", "inspections",
            "samples", "photos", "value_lists", "field_rules", "open_cases", "sampling_plan",
            "field_package"} <= names  # fmt: skip
    assert n_of == 2 and meta[2] == "jsmith" and uuid.UUID(meta[0])
    assert [v[0] for v in lists] == list(rec.CHARACTERIZATIONS)
    assert rule == "flow_present IS NULL"
    assert cases == [(1, "OF-003")] and tiles > 0
    assert len(_plan(pkg)) > 2  # the structures upstream of OF-003, nearest first
    print(f"demo field package: {pkg.stat().st_size / 1e6:.1f} MB")
    assert pkg.stat().st_size < 50e6


def _plan_rows(pkg: Path) -> list[tuple]:
    with sqlite3.connect(pkg) as con:
        return con.execute(
            "SELECT rank, struct_id, after, if_result, method FROM sampling_plan ORDER BY rank"
        ).fetchall()


def test_package_carries_the_bisection_plan_from_the_samples_taken(demo, tmp_path) -> None:
    result = network_result(demo)
    plan = idde.sampling_plan(result, "OF-003", max_samples=4)
    rows = _plan_rows(package(demo, tmp_path, outfalls=["OF-003"]))
    assert [r[:4] for r in rows] == [
        (int(p["order"]), p["struct_id"], None if pd.isna(p["after"]) else int(p["after"]),
         None if pd.isna(p["if_result"]) else p["if_result"])
        for p in plan.to_dict("records")
    ]  # fmt: skip
    assert all(r[4].startswith("bisection") for r in rows)
    # a tree, not a list: each later sample hangs on an earlier one and its result
    assert rows[0][2] is None and {r[3] for r in rows[1:]} == {"flow", "clean"}
    nearest = upstream(layer(demo, "conveyances"), ["OF-003"])["OF-003"][0]
    assert rows[0][1] != nearest  # the old plan (nearest first) sampled here first
    # after a sample at the first structure, the package starts where the CLI would
    demo.add_sample(1, rows[0][1], "2025-05-03", result="flow")
    again = _plan_rows(package(demo, tmp_path, "trip2.gpkg", outfalls=["OF-003"]))
    assert again[0][1] == demo.next_sample(1)["struct_id"] != rows[0][1]


def test_export_never_writes_into_an_existing_file(demo, tmp_path) -> None:
    ws = Path(demo.workspace)
    before = ws.read_bytes()
    with pytest.raises(UsageError, match="new file"):
        export_package(demo, ws)
    assert ws.read_bytes() == before
    with pytest.raises(DataError, match="OF-999"):
        export_package(demo, tmp_path / "x.gpkg", outfalls=["OF-999"])
    assert not (tmp_path / "x.gpkg").exists()


def test_import_adds_the_valid_rows_refuses_the_rest_and_once_only(demo, tmp_path) -> None:
    pkg = package(demo, tmp_path)
    made = crew_writes(pkg, ["OF-001", "OF-002", "OF-003", "OF-004"], _plan(pkg))
    before = pkg.read_bytes()
    report = import_package(demo, pkg)
    assert pkg.read_bytes() == before  # the package left as it was
    assert report["added"] == {"inspections": 16, "samples": 2, "photos": 4}
    refused = {r["device_uuid"]: r for r in report["refused"]}
    assert set(refused) == {*made["bad"], made["cut"]}
    assert refused[made["bad"][0]]["field"] == "outfall_id"
    assert refused[made["bad"][1]]["field"] == "odor" and "Fix" in refused[made["bad"][1]]["reason"]
    assert refused[made["bad"][2]]["field"] == "date"
    assert "cut short" in refused[made["cut"]]["reason"]
    assert len(demo.inspections()) == 16 and len(demo.samples()) == 2
    att = demo.attachments()
    assert len(att) == 4 and sorted(att["target_table"]) == ["inspections"] * 3 + ["samples"]
    audit = demo.audit()
    assert (audit["action"] == "field_import").sum() == 1
    row = audit[audit["action"] == "field_import"].iloc[0]
    assert report["package_id"] in row["new_values"] and "phone-A" in row["new_values"]
    assert row["created_by"] == "jsmith"
    assert (audit["table_name"] == "inspections").sum() == 16
    assert demo.verify()["ok"], demo.verify()["problems"]
    again = import_package(demo, pkg)  # a second import adds nothing
    assert again["added"] == {"inspections": 0, "samples": 0, "photos": 0}
    assert again["already"] == 18
    assert len(demo.inspections()) == 16 and len(demo.audit()) == len(audit)


def test_two_packages_editing_one_case_are_both_kept_and_named(demo, tmp_path) -> None:
    a = package(demo, tmp_path, "a.gpkg")
    b = package(demo, tmp_path, "b.gpkg")
    plan = _plan(a)
    for pkg, dev, sid, res in ((a, "phone-A", plan[0], "flow"), (b, "phone-B", plan[0], "clean")):
        add_rows(pkg, "samples", [{"device_uuid": str(uuid.uuid4()), "device_id": dev,
                                   "case_id": 1, "struct_id": sid, "date": "2025-06-03",
                                   "result": res}])  # fmt: skip
    ra = import_package(demo, a)
    rb = import_package(demo, b)
    assert ra["added"]["samples"] == 1 and rb["added"]["samples"] == 1
    assert ra["conflicts"] == []
    assert len(rb["conflicts"]) == 1 and "Case 1" in rb["conflicts"][0]
    assert ra["package_id"] in rb["conflicts"][0] and "phone-A" in rb["conflicts"][0]
    s = demo.samples(1)
    assert sorted(s["result"]) == ["clean", "flow"] and set(s["version"]) == {1}


def test_a_case_changed_in_the_office_since_the_package_is_named(demo, tmp_path) -> None:
    pkg = package(demo, tmp_path)
    demo.advance_case(1, "investigation", "2025-05-02")  # the office moves the case on
    add_rows(pkg, "samples", [{"device_uuid": str(uuid.uuid4()), "device_id": "phone-A",
                               "case_id": 1, "struct_id": _plan(pkg)[0],
                               "date": "2025-06-03", "result": "flow"}])  # fmt: skip
    report = import_package(demo, pkg)
    assert report["added"]["samples"] == 1
    assert len(report["conflicts"]) == 1 and "version 1 -> 2" in report["conflicts"][0]
    assert demo.cases()["step"].tolist() == ["investigation"]  # the office's step stands


def test_bad_packages_are_refused_and_nothing_written(demo, tmp_path) -> None:
    pkg = package(demo, tmp_path)
    crew_writes(pkg, ["OF-001"], _plan(pkg))
    size = demo.path.stat().st_size
    n_audit = len(demo.audit())
    # a viewer
    viewer = rec.open_records(demo.workspace, user="v", role="viewer")
    with pytest.raises(PermissionError):
        import_package(viewer, pkg)
    # another workspace
    other = tmp_path / "other"
    other.mkdir()
    town = rec.open_records(make_town(other), user="jsmith")
    with pytest.raises(DataError, match="another workspace"):
        import_package(town, pkg)
    # a newer ms4map
    newer = tmp_path / "newer.gpkg"
    shutil.copy(pkg, newer)
    with sqlite3.connect(newer) as con:
        con.execute("CREATE TEMP TABLE t (x)")
    _edit(newer, "UPDATE field_package SET ms4map_version = '99.0.0'")
    with pytest.raises(DataError, match="ms4map 99.0.0"):
        import_package(demo, newer)
    # an extra table
    extra = tmp_path / "extra.gpkg"
    shutil.copy(pkg, extra)
    _edit(extra, "CREATE TABLE my_notes (x TEXT)")
    with pytest.raises(DataError, match="my_notes"):
        import_package(demo, extra)
    # an edited schema
    edited = tmp_path / "edited.gpkg"
    shutil.copy(pkg, edited)
    _edit(edited, "ALTER TABLE inspections ADD COLUMN weather TEXT")
    with pytest.raises(DataError, match="changed after it was made"):
        import_package(demo, edited)
    assert len(demo.audit()) == n_audit and demo.path.stat().st_size == size
    assert len(demo.inspections()) == 0


def _edit(path: Path, sql: str) -> None:
    with sqlite3.connect(path) as con:
        con.execute(sql)


def test_cli_export_from_a_schedule_and_import_report(demo, tmp_path, capsys) -> None:
    from ms4map.cli import main

    plan = tmp_path / "plan.csv"
    plan.write_text("outfall_id,year,visit\nOF-002,2026,1\nOF-005,2026,1\nOF-007,2027,1\n")
    out = tmp_path / "trip.gpkg"
    code = main(["field", "export", str(demo.workspace), "--out", str(out), "--by", "jsmith",
                 "--schedule", str(plan), "--year", "2026", "--no-qgis-project"])  # fmt: skip
    assert code == 0
    with sqlite3.connect(out) as con:
        assert sorted(r[0] for r in con.execute("SELECT outfall_id FROM outfalls")) == [
            "OF-002",
            "OF-005",
        ]
    add_rows(out, "inspections", [
        {"device_uuid": str(uuid.uuid4()), "device_id": "tab-1", "outfall_id": "OF-002",
         "date": "2025-06-02", "odor": 1},
        {"device_uuid": str(uuid.uuid4()), "device_id": "tab-1", "outfall_id": "OF-005",
         "date": "2025-06-02", "flow_estimate": "gushing"},
    ])  # fmt: skip
    capsys.readouterr()
    code = main(["field", "import", str(out), "--records", str(demo.path), "--by", "jsmith"])
    text = capsys.readouterr().out
    assert code == 0
    assert "added 1 inspection(s)" in text and "1 refused" in text
    assert "field 'flow_estimate'" in text and "Fix" in text
    code = main(["field", "import", str(out), "--records", str(demo.path), "--by", "v",
                 "--role", "viewer"])  # fmt: skip
    assert code != 0 and len(demo.inspections()) == 1


def test_an_orphan_photo_is_named_and_field_imports_is_append_only(demo, tmp_path) -> None:
    pkg = package(demo, tmp_path, outfalls=["OF-001"])
    iid = str(uuid.uuid4())
    add_rows(pkg, "inspections", [{"device_uuid": iid, "outfall_id": "OF-001",
                                   "date": "2025-06-02"}])  # fmt: skip
    data = png_bytes()
    add_rows(pkg, "photos", [{"device_uuid": str(uuid.uuid4()), "target_uuid": "nowhere",
                              "sha256": hashlib.sha256(data).hexdigest(), "data": data}])  # fmt: skip
    report = import_package(demo, pkg)
    assert report["added"] == {"inspections": 1, "samples": 0, "photos": 0}
    assert [(r["table"], r["field"]) for r in report["refused"]] == [("photos", "target_uuid")]
    with sqlite3.connect(demo.path) as con:
        assert con.execute("SELECT device_uuid FROM field_imports").fetchall() == [(iid,)]
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            con.execute("DELETE FROM field_imports")
