"""``ms4map inspect``, ``records`` and ``case``; the next track-down sample on the demo."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_records import jpeg_bytes, make_town

import ms4map
import ms4map.records as rec
from ms4map import idde
from ms4map.cli import main


def test_inspect_and_records_commands(tmp_path, capsys) -> None:
    town = make_town(tmp_path)
    photo = tmp_path / "of1.jpg"
    photo.write_bytes(jpeg_bytes())
    base = [str(town), "--by", "jsmith"]
    code = main(
        ["inspect", *base, "--outfall", "OF-1", "--date", "2025-06-02", "--flow-present", "yes",
         "--flow-estimate", "trickle", "--odor", "2", "--detergents", "0.4", "--ammonia", "2",
         "--potassium", "1", "--characterization", "suspect", "--photo", str(photo)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "Inspection 1 of outfall OF-1 on 2025-06-02" in out and "1 photo(s)" in out
    assert "Flow type: sewage" in out and "Outfall status: suspect" in out
    assert main(["inspect", *base, "--outfall", "OF-9", "--date", "2025-06-02"]) == 2
    assert "'outfall_id' = 'OF-9'" in capsys.readouterr().err
    assert main(["inspect", *base, "--outfall", "OF-1", "--date", "2025-06-02", "--odor", "7"]) == 2
    assert main(["inspect", str(town), "--outfall", "OF-1", "--date", "2025-06-02"]) == 4  # no --by
    code = main(["inspect", *base, "--role", "viewer", "--outfall", "OF-1", "--date", "2025-06-03"])
    assert code == 4 and "viewer role" in capsys.readouterr().err
    bad = tmp_path / "bad.jpg"
    bad.write_text("hello")
    code = main(
        ["inspect", *base, "--outfall", "OF-1", "--date", "2025-06-03", "--photo", str(bad)]
    )
    assert code == 2
    assert len(rec.open_records(town, user="x").inspections()) == 1  # nothing half-written

    assert main(["records", str(town), "--summary", "--year", "2025", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["outfalls"], s["outfalls_screened"], s["flowing"], s["suspect_or_obvious"]) == (
        4,
        1,
        1,
        1,
    )
    assert main(["records", str(town), "--summary", "--year", "2025"]) == 0
    assert "Outfalls screened (inspected) in the period: 1" in capsys.readouterr().out
    exp, rep = tmp_path / "out" / "records.gpkg", tmp_path / "out" / "annual.csv"
    assert main(["records", str(town), "--export", str(exp), "--annual-report", str(rep)]) == 0
    assert exp.exists() and rep.read_text().startswith("year,period,period_start")
    assert main(["records", str(town), "--export", str(town)]) == 4  # an input file
    assert main(["records", str(town)]) == 4  # nothing asked


def test_case_commands(tmp_path, capsys) -> None:
    town = make_town(tmp_path)
    recs = tmp_path / "idde" / "town.records.gpkg"
    base = [str(town), "--by", "jsmith", "--records", str(recs), "--profile", "kingsbury"]
    assert main(["case", "open", *base, "--outfall", "OF-2", "--date", "2025-06-02"]) == 0
    assert "Case 1 opened" in capsys.readouterr().out
    code = main(["case", "sample", *base, "1", "--structure", "MH-1", "--date", "2025-06-03",
                 "--result", "flow", "--detergents", "0.1", "--fluoride", "0.5"])  # fmt: skip
    assert code == 0 and "flow type tap_water" in capsys.readouterr().out
    assert (
        main(["case", "advance", *base, "1", "--step", "notice_sent", "--date", "2025-06-04"]) == 2
    )
    assert "needs step 'source_found' first" in capsys.readouterr().err
    code = main(["case", "advance", *base, "1", "--step", "source_found", "--parcel", "P-2",
                 "--date", "2025-06-04"])  # fmt: skip
    assert code == 0
    code = main(["case", "advance", *base, "1", "--step", "notice_sent", "--date", "2025-06-05"])
    out = capsys.readouterr().out
    assert code == 0 and "2025-06-07" in out  # Kingsbury: 48 hours
    assert main(["case", "show", *base, "1", "--today", "2025-06-10", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in shown["steps"]] == ["opened", "source_found", "notice_sent"]
    assert {d["deadline"]: d["status"] for d in shown["deadlines"]} == {
        "remedy": "overdue",
        "appeal_window": "window_open",
    }
    assert [s["struct_id"] for s in shown["samples"]] == ["MH-1"]
    assert main(["case", *base]) == 4  # no action
    assert not town.with_name("town.records.gpkg").exists()  # --records was used


def test_next_sample_follows_the_plan(demo_result, tmp_path) -> None:
    ws, result = demo_result
    r = rec.open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="jsmith",
        records=tmp_path / "demo.records.gpkg",
    )
    cid = r.open_case("OF-009", "2025-06-02", origin="finding")
    plan = idde.sampling_plan(result, "OF-009", max_samples=3, weight="structures")
    first = plan.iloc[0]
    nxt = r.next_sample(cid, result, weight="structures")
    assert nxt["struct_id"] == first["struct_id"] and nxt["followed"] == []
    r.add_sample(cid, first["struct_id"], "2025-06-03", result="clean")
    child = plan[(plan["after"] == first["order"]) & (plan["if_result"] == "clean")].iloc[0]
    nxt = r.next_sample(cid, result, weight="structures")
    assert nxt["struct_id"] == child["struct_id"]
    assert nxt["followed"] == [f"{first['struct_id']}: clean"]
    assert "If sample 1 was clean" in nxt["reason"]


def test_records_beside_a_copy_of_the_demo(tmp_path) -> None:
    ws = tmp_path / "demo.gpkg"
    shutil.copyfile(ms4map.datasets.get_path("alder_falls"), ws)
    r = rec.open_records(ws, user="jsmith")
    assert r.path == Path(tmp_path / "demo.records.gpkg") and len(r.outfalls) == 24
