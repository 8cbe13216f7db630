"""The compliance pack (issue 30 item 2): every count drillable, hand-worked on a designed
set, overrides audited, the PDF read back; and field verification (item 3)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pyogrio
import pytest
from shapely.geometry import LineString, Point, box

import ms4map.records as rec
from ms4map.cli import main
from ms4map.core.errors import UsageError

CRS = "EPSG:26918"


def make_designed(folder: Path) -> Path:
    """4 outfalls (2 mapped with receiving water and PWL id, OF-4 in a TMDL watershed),
    3 structures (2 with kind and invert), 3 conveyances (2 with size and material, 2
    with both ends known), a 303(d) listing of 1101-0045."""
    of = gpd.GeoDataFrame(
        {
            "outfall_id": ["OF-1", "OF-2", "OF-3", "OF-4"],
            "receiving_water": ["Alder Kill", "Alder Kill", "Mill Brook", None],
            "pwl_id": ["1101-0045", "1101-0045", None, "1101-0099"],
        },
        geometry=[Point(600000 + 100 * i, 4760000) for i in range(4)],
        crs=CRS,
    )
    st = gpd.GeoDataFrame(
        {
            "struct_id": ["MH-1", "MH-2", "MH-3"],
            "kind": ["manhole"] * 3,
            "invert_elev": [100.0, None, 99.0],
        },
        geometry=[Point(600000 + 100 * i, 4760100) for i in range(3)],
        crs=CRS,
    )
    cv = gpd.GeoDataFrame(
        {
            "conv_id": ["P-1", "P-2", "P-3"],
            "kind": ["pipe"] * 3,
            "from_id": ["MH-1", "MH-2", "MH-3"],
            "to_id": ["MH-2", "OF-1", "X-9"],
            "diameter_in": [12.0, 15.0, None],
            "rise_in": [None, None, 24.0],
            "material": ["RCP", None, "HDPE"],
        },
        geometry=[
            LineString([(600000, 4760100), (600100, 4760100)]),
            LineString([(600100, 4760100), (600000, 4760000)]),
            LineString([(600200, 4760100), (600300, 4760150)]),
        ],
        crs=CRS,
    )
    pa = gpd.GeoDataFrame(
        {"parcel_id": ["P-1"]}, geometry=[box(600000, 4760200, 600050, 4760250)], crs=CRS
    )
    tm = gpd.GeoDataFrame(
        {"tmdl_id": ["T-1"], "name": ["Alder Lake phosphorus TMDL"], "pollutant": ["phosphorus"]},
        geometry=[box(600250, 4759950, 600350, 4760050)],
        crs=CRS,
    )
    path = folder / "designed.gpkg"
    for name, df in (
        ("outfalls", of),
        ("structures", st),
        ("conveyances", cv),
        ("parcels", pa),
        ("tmdl_watersheds", tm),
    ):
        df.to_file(path, layer=name, driver="GPKG")
    imp = pd.DataFrame({"wb_id": ["1101-0045"], "pollutant": ["phosphorus"], "category": ["5"]})
    pyogrio.write_dataframe(imp, path, layer="impairments", driver="GPKG")
    return path


# OF-1's mapped point (EPSG:26918 600000, 4760000) in WGS 84, 10 m to the north
_LAT, _LON = 42.98618009, -73.77341347


def seed(r: rec.Records) -> None:
    """The designed records (ids in order: inspections 1-6, cases 1-3, sample 1)."""
    r.add_inspection("OF-1", "2025-01-02", flow_present=True)  # 1: permit year 2024
    r.add_inspection(  # 2: verified, flowing, suspect
        "OF-1",
        "2025-03-01",
        flow_present=True,
        characterization="suspect",
        found_lat=_LAT,
        found_lon=_LON,
    )
    r.add_inspection("OF-2", "2026-01-02", flow_present=False)  # 3: last day of 2025
    r.add_inspection("OF-3", "2026-01-03")  # 4: permit year 2026
    r.add_inspection("OF-4", "2021-06-01")  # 5: within five years (from 2021-01-03)
    r.add_inspection("OF-2", "2025-05-01", flow_present=True, characterization="obvious")  # 6
    c1 = r.open_case("OF-1", "2025-03-02", origin="finding")
    r.add_sample(c1, "MH-1", "2025-03-05", result="flow")
    r.advance_case(c1, "source_found", "2025-03-10", parcel_id="P-1")
    r.advance_case(c1, "notice_sent", "2025-03-12", deadline="2025-04-12")
    r.advance_case(c1, "eliminated", "2025-04-01")
    r.open_case("OF-2", "2025-06-01", origin="complaint")
    c3 = r.open_case("OF-3", "2024-12-01", origin="complaint")
    r.advance_case(c3, "source_found", "2025-01-02", parcel_id="P-1")  # permit year 2024
    r.advance_case(c3, "notice_sent", "2025-01-03", deadline="2025-01-20")  # never remedied


#: Worked by hand from :func:`seed` for the permit year 2025 (3 Jan 2025 - 2 Jan 2026).
EXPECTED = {
    "outfalls": ["OF-1", "OF-2", "OF-3", "OF-4"],
    "outfalls_mapped": ["OF-1", "OF-2"],  # OF-3 no PWL id, OF-4 no receiving water
    "outfalls_verified": ["OF-1"],  # inspection 2 found its position
    "outfalls_screened": ["OF-1", "OF-2"],  # inspections 2, 3, 6 (1 is 2024, 4 is 2026)
    "screened_last_5_years": ["OF-1", "OF-2", "OF-4"],  # OF-3 only in 2026
    "flowing": ["OF-1", "OF-2"],  # inspections 2 and 6
    "suspect_or_obvious": ["OF-1", "OF-2"],
    "inspections": ["2", "3", "6"],
    "complaints_received": ["2"],  # case 3's complaint came in 2024
    "cases_opened": ["1", "2"],
    "track_downs": ["1"],
    "samples_taken": ["1"],
    "illicit_found": ["1"],  # case 3's source on 2 January 2025: permit year 2024
    "illicit_eliminated": ["1"],
    "cases_still_open": ["2", "3"],  # case 1 eliminated
    "notices_sent": ["1", "3"],
    "deadlines_missed": ["3:remedy"],  # due 2025-01-20, never corrected
}
MAPPING = {
    "outfalls_receiving_water_pwl": (["OF-1", "OF-2"], 4),
    "structures_kind_inverts": (["MH-1", "MH-3"], 3),
    "conveyances_size_material": (["P-1", "P-3"], 3),
    "conveyances_connected": (["P-1", "P-2"], 3),  # P-3 ends at X-9, not a structure
}


@pytest.fixture
def designed(tmp_path: Path) -> tuple[Path, rec.Records]:
    path = make_designed(tmp_path)
    r = rec.open_records(path, user="jsmith")
    seed(r)
    return path, r


def test_every_count_is_its_list_hand_worked(designed) -> None:
    _, r = designed
    pk = r.pack(2025, today="2026-03-01")
    assert pk.period.name == "permit year 2025"
    got = {row["key"]: row["ids"] for row in pk.idde.to_dict("records")}
    assert got == EXPECTED
    assert (pk.idde["count"] == pk.idde["ids"].map(len)).all()
    mp = {row["key"]: (row["ids"], row["total"]) for row in pk.mapping.to_dict("records")}
    assert mp == MAPPING  # sewersheds_drawn left out: no network result
    assert any("Sewersheds drawn: not counted" in n for n in pk.notes)
    assert (pk.mapping["count"] == pk.mapping["ids"].map(len)).all()
    ages = pk.open_cases.set_index("case_id")["age_days"].to_dict()
    assert ages == {3: 397, 2: 215}  # to 2026-01-02 from 2024-12-01 and 2025-06-01
    ex = pk.expedited.set_index("outfall_id")
    assert list(ex.index) == ["OF-1", "OF-2", "OF-4"]
    assert ex.loc["OF-1", "lacks"] == ""
    assert ex.loc["OF-2", "lacks"] == "field verification"
    assert ex.loc["OF-4", "lacks"] == "receiving water; field verification"
    assert "TMDL watershed Alder Lake phosphorus TMDL" in ex.loc["OF-4", "why"]
    assert "1101-0045 is impaired" in ex.loc["OF-1", "why"]
    interim = r.pack(2025, period="interim", today="2026-03-01")
    inter = {row["key"]: row["ids"] for row in interim.idde.to_dict("records")}
    assert inter["outfalls_screened"] == ["OF-1", "OF-2"]  # inspections 2, 6
    assert inter["inspections"] == ["2", "6"] and inter["complaints_received"] == ["2"]


def test_a_correction_changes_only_what_it_should(designed) -> None:
    _, r = designed
    before = r.pack(2025, today="2026-03-01").idde.set_index("key")["ids"].to_dict()
    r.correct("inspections", 3, notes="a note changes no count")
    assert r.pack(2025, today="2026-03-01").idde.set_index("key")["ids"].to_dict() == before
    r.correct("inspections", 4, date="2025-12-01")  # OF-3 screened in 2025 after all
    after = r.pack(2025, today="2026-03-01").idde.set_index("key")["ids"].to_dict()
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {"outfalls_screened", "screened_last_5_years", "inspections"}
    assert after["outfalls_screened"] == ["OF-1", "OF-2", "OF-3"]
    assert after["inspections"] == ["2", "3", "4", "6"]


def test_override_is_audited_and_needs_a_reason(designed) -> None:
    _, r = designed
    with pytest.raises(UsageError, match="a reason is required"):
        r.override("complaints_received", 3, reason="  ", year=2025)
    with pytest.raises(UsageError, match="not a count of the pack"):
        r.override("parking_tickets", 3, reason="x", year=2025)
    r.override("complaints_received", 3, reason="two phoned in, not entered", year=2025)
    a = r.audit()
    row = a[a["table_name"] == "pack_overrides"].iloc[-1]
    assert row["created_by"] == "jsmith" and row["action"] == "override"
    assert row["created_at"]
    v = json.loads(row["new_values"])
    assert v == {
        "computed": 1,
        "key": "complaints_received",
        "period": "permit_year",
        "reason": "two phoned in, not entered",
        "value": 3,
        "year": 2025,
    }
    pk = r.pack(2025, today="2026-03-01").idde.set_index("key")
    assert pk.loc["complaints_received", "count"] == 1  # the computed count stays
    assert pk.loc["complaints_received", "reported"] == 3
    assert pk.loc["complaints_received", "override_reason"] == "two phoned in, not entered"
    assert (
        pk.loc["cases_opened", "reported"] == 2 and pk.loc["cases_opened", "override_reason"] == ""
    )
    assert r.verify()["ok"]  # the override is chained like every audit row
    viewer = rec.open_records(r.workspace, user="guest", role="viewer")
    with pytest.raises(PermissionError):
        viewer.override("complaints_received", 4, reason="x", year=2025)


def test_pack_cli_writes_pdf_and_csvs(designed, tmp_path, capsys) -> None:
    import pypdf

    path, r = designed
    r.override("complaints_received", 3, reason="two phoned in", year=2025)
    out = tmp_path / "pack"
    code = main(
        ["records", str(path), "--year", "2025", "--pack", str(out), "--today", "2026-03-01"]
    )
    assert code == 0
    said = capsys.readouterr()
    assert "permit year 2025 (3 January 2025 to 2 January 2026" in said.out
    assert "CSV only" in said.err
    counts = list(csv.DictReader((out / "idde_counts.csv").open()))
    for row in counts:
        ids = [i for i in row["ids"].split(";") if i]
        assert int(row["count"]) == len(ids) and ids == EXPECTED[row["key"]], row["key"]
    drill = pd.read_csv(out / "drilldown.csv", dtype=str)
    for key, ids in EXPECTED.items():
        assert sorted(drill.loc[drill["key"] == key, "id"]) == sorted(ids), key
    for name in ("mapping_progress.csv", "open_cases.csv", "expedited.csv"):
        assert (out / name).exists()
    pdf = out / "compliance_pack_permit_year_2025.pdf"
    text = "\n".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages)
    flat = " ".join(text.split())
    assert "Illicit discharge detection and elimination" in flat  # the annual report first
    assert flat.index("Illicit discharge detection") < flat.index("IDDE counts")
    for section in ("IDDE counts", "Mapping progress", "Cases still open", "Expedited list"):
        assert section in flat, section
    from ms4map.records.pack import COUNT_LABELS, MAPPING_LABELS

    for key, ids in EXPECTED.items():
        assert f"{COUNT_LABELS[key][0]}: {len(ids)}" in flat, key
    for key, (ids, total) in MAPPING.items():
        assert f"{MAPPING_LABELS[key][0]}: {len(ids)} of {total}" in flat, key
    assert "reported 3: override by jsmith" in flat and "two phoned in" in flat
    assert main(["records", str(path), "--year", "2025", "--override", "cases_opened=5"]) == 4
    assert "a reason is required" in capsys.readouterr().err


def test_field_verification_and_accepted_move(designed) -> None:
    _, r = designed
    v = r.verification().set_index("outfall_id")
    assert v.loc["OF-1", "verification"] == "verified"
    assert v.loc["OF-1", "verified_on"] == "2025-03-01"
    assert 5 < v.loc["OF-1", "moved_m"] < 15  # about 10 m north
    assert v.loc["OF-1", "move"] == "pending" and v.loc["OF-1", "position_used"] == "mapped"
    assert v.loc["OF-2", "verification"] == "mapped_only"
    mapped = r.outfalls.set_index("outfall_id").geometry["OF-1"]
    assert r.trace_outfalls().set_index("outfall_id").geometry["OF-1"].equals(mapped)
    r.accept_move("OF-1", inspection_id=2, reason="found 10 m upstream")
    v = r.verification().set_index("outfall_id")
    assert v.loc["OF-1", "move"] == "accepted" and v.loc["OF-1", "position_used"] == "field"
    moved = r.trace_outfalls().set_index("outfall_id").geometry["OF-1"]
    assert 5 < moved.distance(mapped) < 15
    a = r.audit()
    row = a[a["table_name"] == "outfall_moves"].iloc[-1]
    assert row["created_by"] == "jsmith" and row["action"] == "accept_move"
    assert json.loads(row["new_values"])["reason"] == "found 10 m upstream"
    assert r.verify()["ok"]
    from ms4map.core.errors import DataError

    with pytest.raises(DataError, match="no position found in the field"):
        r.accept_move("OF-2", inspection_id=3)


def test_demo_with_seeded_records_counts_are_their_lists(tmp_path) -> None:
    import shutil

    import ms4map.datasets as datasets

    demo = tmp_path / "demo.gpkg"
    shutil.copy(datasets.get_path("alder_falls"), demo)
    r = rec.open_records(demo, user="jsmith")
    ids = r.outfalls["outfall_id"].astype(str).tolist()
    for k, oid in enumerate(ids[:10]):
        r.add_inspection(
            oid,
            f"2025-0{1 + k % 9}-1{k % 9}",
            flow_present=k % 2 == 0,
            characterization=("suspect" if k % 3 == 0 else "unlikely"),
        )
    r.add_inspection(ids[10], "2026-01-02", flow_present=True)  # still permit year 2025
    c = r.open_case(ids[0], "2025-02-01", origin="complaint")
    from ms4map.records.layers import layer

    struct = str(layer(r, "structures")["struct_id"].iloc[0])
    r.add_sample(c, struct, "2025-02-02", result="flow")
    r.open_case(ids[3], "2025-05-01", origin="finding")
    pk = r.pack(2025, today="2026-03-01")
    assert (pk.idde["count"] == pk.idde["ids"].map(len)).all()
    assert (pk.mapping["count"] == pk.mapping["ids"].map(len)).all()
    s = r.summary(2025)
    by = pk.idde.set_index("key")["count"]
    for key in ("outfalls", "outfalls_screened", "flowing", "suspect_or_obvious", "cases_opened"):
        assert by[key] == s[key], key
    assert by["outfalls_screened"] == 11 and by["complaints_received"] == 1
    assert (
        (by["track_downs"], by["samples_taken"]) == (s["track_downs"], s["samples_taken"]) == (1, 1)
    )
    assert by["screened_last_5_years"] == round(s["screened_last_5_years"] * s["outfalls"])
    assert len(pk.expedited) >= 1  # the demo's Alder Kill is listed
    drill = pk.drilldown()
    assert len(drill) == pk.idde["count"].sum() + pk.mapping["count"].sum()


def test_traces_use_the_mapped_position_until_the_move_is_accepted(tmp_path) -> None:
    import shutil

    import ms4map.datasets as datasets
    from ms4map.records.reads import traced_workspace

    demo = tmp_path / "demo.gpkg"
    shutil.copy(datasets.get_path("alder_falls"), demo)
    r = rec.open_records(demo, user="jsmith")
    mapped = r.outfalls.set_index("outfall_id").geometry["OF-009"]
    wgs = r.outfalls.to_crs(4326).set_index("outfall_id").geometry["OF-009"]
    iid = r.add_inspection("OF-009", "2025-06-02", found_lat=wgs.y + 0.0001, found_lon=wgs.x)
    before = traced_workspace(r)
    assert before.layers["outfalls"].set_index("outfall_id").geometry["OF-009"].equals(mapped)
    assert "outfall_moves" not in before.settings
    r.accept_move("OF-009", inspection_id=iid, reason="found upstream of the headwall")
    after = traced_workspace(r)
    moved = after.layers["outfalls"].set_index("outfall_id").geometry
    assert 5 < moved["OF-009"].distance(mapped) < 20
    other = r.outfalls.set_index("outfall_id").geometry["OF-010"]
    assert moved["OF-010"].equals(other)  # only the accepted move
    assert after.fingerprint() != before.fingerprint()  # the pipeline's cache sees it


def test_outfalls_verification_and_accept_move_cli(designed, capsys) -> None:
    path, _r = designed
    assert main(["outfalls", "verification", str(path), "--json"]) == 0
    rows = {v["outfall_id"]: v for v in json.loads(capsys.readouterr().out)}
    assert rows["OF-1"]["move"] == "pending" and rows["OF-2"]["verification"] == "mapped_only"
    code = main(
        ["outfalls", "accept-move", str(path), "--outfall", "OF-1", "--inspection", "2",
         "--by", "jsmith", "--reason", "found 10 m north"]
    )  # fmt: skip
    assert code == 0 and "accepted by jsmith" in capsys.readouterr().out
    assert main(["outfalls", "verification", str(path), "--json"]) == 0
    rows = {v["outfall_id"]: v for v in json.loads(capsys.readouterr().out)}
    assert rows["OF-1"]["move"] == "accepted" and rows["OF-1"]["position_used"] == "field"
    code = main(
        ["outfalls", "accept-move", str(path), "--outfall", "OF-1", "--inspection", "2",
         "--by", "guest", "--role", "viewer"]
    )  # fmt: skip
    assert code == 4


def test_a_records_file_made_before_found_positions(tmp_path) -> None:
    import sqlite3

    path = make_designed(tmp_path)
    r = rec.open_records(path, user="jsmith")
    r.add_inspection("OF-1", "2025-03-01", flow_present=True)
    con = sqlite3.connect(r.path)  # as an older ms4map made it: no found_lat, found_lon
    with con:
        for col in ("found_lat", "found_lon"):
            con.execute(f"ALTER TABLE inspections DROP COLUMN {col}")
    con.close()
    viewer = rec.open_records(path, user="guest", role="viewer")
    assert "found_lat" not in viewer.inspections()
    assert set(viewer.verification()["verification"]) == {"mapped_only"}
    counts = viewer.pack(2025, today="2026-03-01").idde.set_index("key")["ids"]
    assert counts["outfalls_verified"] == [] and counts["outfalls_screened"] == ["OF-1"]
    smo = rec.open_records(path, user="jsmith")  # the SMO's opening adds the columns
    assert "found_lat" in smo.inspections()
    smo.add_inspection("OF-3", "2025-05-05", found_lat=_LAT, found_lon=_LON)
    assert smo.verification().set_index("outfall_id").loc["OF-3", "verification"] == "verified"
    assert smo.verify()["ok"], smo.verify()["problems"]


def test_pack_has_the_post_construction_smp_section(designed, tmp_path) -> None:
    import pypdf

    from ms4map.records import smp

    path, r = designed
    pond = smp.add_smp(r, "Pond A", "P-2", Point(600050, 4760050).buffer(10),
                       built_on="2024-05-01", inspection_months=12)  # fmt: skip
    garden = smp.add_smp(r, "Garden B", "rain_garden", Point(600150, 4760050),
                         built_on="2024-06-01", inspection_months=6)  # fmt: skip
    smp.inspect_smp(r, pond, "2025-03-01", condition="good")
    smp.inspect_smp(r, pond, "2024-12-20", condition="fair")  # before the period
    pk = r.pack(2025, today="2026-03-01")
    tables = pk.programme["Post-construction stormwater management practices (SMPs)"]
    inv = tables["smp_inventory"].set_index("kind")["count"]
    assert inv.to_dict() == {"P-2": 1, "rain_garden": 1, "all": 2}
    # the period is 3 Jan 2025 - 2 Jan 2026: one inspection in it
    assert tables["smp_inspections"]["date"].tolist() == ["2025-03-01"]
    # Garden B: built 1 June 2024, every 6 months, never inspected: overdue on 2 Jan
    # 2026; Pond A: inspected 1 March 2025, every 12 months, due 1 March 2026
    assert tables["smp_overdue"]["smp_id"].astype(int).tolist() == [garden]
    out = tmp_path / "pack"
    assert main(["records", str(path), "--year", "2025", "--pack", str(out),
                 "--today", "2026-03-01"]) == 0  # fmt: skip
    written = pd.read_csv(out / "smp_overdue.csv")
    assert written["smp_id"].tolist() == [garden]
    assert pd.read_csv(out / "smp_inventory.csv")["count"].tolist() == [1, 1, 2]
    pdf = out / "compliance_pack_permit_year_2025.pdf"
    flat = " ".join(" ".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages).split())
    assert "Post-construction stormwater management practices (SMPs)" in flat
    assert "smp overdue: 1 row(s) (smp_overdue.csv)" in flat and "Garden B" in flat
