"""IDDE records: tables, checks, derived status, summary, roles, photos, GeoPackage."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import geopandas as gpd
import pyogrio
import pytest
from shapely.geometry import Point, box

import ms4map.io
import ms4map.records as rec
from ms4map.core.errors import DataError, InputOpenError, UsageError
from ms4map.idde import flow_type_of

CRS = "EPSG:26918"


def make_town(folder: Path) -> Path:
    """A tiny workspace: 4 outfalls, 3 manholes, 2 parcels (EPSG:26918)."""
    of = gpd.GeoDataFrame(
        {"outfall_id": ["OF-1", "OF-2", "OF-3", "OF-4"], "receiving_water": ["Alder Kill"] * 4},
        geometry=[Point(600000 + 100 * i, 4760000) for i in range(4)],
        crs=CRS,
    )
    st = gpd.GeoDataFrame(
        {"struct_id": ["MH-1", "MH-2", "MH-3"], "kind": ["manhole"] * 3},
        geometry=[Point(600000 + 100 * i, 4760100) for i in range(3)],
        crs=CRS,
    )
    pa = gpd.GeoDataFrame(
        {"parcel_id": ["P-1", "P-2"]},
        geometry=[
            box(600000, 4760200, 600050, 4760250),
            box(600100, 4760200, 600150, 4760250),
        ],
        crs=CRS,
    )
    path = folder / "town.gpkg"
    for name, df in (("outfalls", of), ("structures", st), ("parcels", pa)):
        df.to_file(path, layer=name, driver="GPKG")
    return path


def png_bytes(size: tuple[int, int] = (8, 6)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


def jpeg_bytes(size: tuple[int, int] = (64, 48)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, (10, 120, 200)).save(buf, format="JPEG")
    return buf.getvalue()


@pytest.fixture
def town(tmp_path: Path) -> Path:
    return make_town(tmp_path)


@pytest.fixture
def records(town: Path) -> rec.Records:
    return rec.open_records(town, user="jsmith")


def _count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as con:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


# ------------------------------------------------------------------ file and opening
def test_records_file_is_beside_the_workspace_and_a_geopackage(town, records) -> None:
    assert records.path == town.with_name("town.records.gpkg")
    assert records.path.exists()
    iid = records.add_inspection("OF-3", "2025-06-02", flow_present=False)
    with sqlite3.connect(records.path) as con:
        assert con.execute("PRAGMA application_id").fetchone()[0] == 0x47504B47
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        contents = dict(con.execute("SELECT table_name, data_type FROM gpkg_contents"))
    assert contents == {
        "inspections": "features",
        "samples": "features",
        "cases": "features",
        "smps": "features",  # points or polygons (issue 31 item 3)
        "smp_inspections": "attributes",
        "smp_maintenance": "attributes",
        "projects": "attributes",  # issue 31: land development projects
        "construction": "attributes",
        "attachments": "attributes",
        "audit": "attributes",
        "layer_styles": "attributes",  # QGIS draws the point layers styled
    }
    with sqlite3.connect(records.path) as con:
        styled = con.execute(
            "SELECT f_table_name FROM layer_styles WHERE useAsDefault ORDER BY f_table_name"
        ).fetchall()
    assert [t for (t,) in styled] == ["cases", "inspections", "samples"]
    layers = {str(n): g for n, g in pyogrio.list_layers(records.path)}
    assert layers["inspections"] == "Point" and layers["cases"] == "Point"
    back = pyogrio.read_dataframe(records.path, layer="inspections")
    assert back.crs.to_epsg() == 26918
    assert back["inspection_id"].tolist() == [iid]
    assert back.geometry.iloc[0].equals(Point(600200, 4760000))  # the outfall's point


def test_opening_reads_only_the_outfalls_layer(town, monkeypatch) -> None:
    read: list[str] = []
    real = ms4map.io.open.read_source

    def spy(source):
        read.append(str(source.layer))
        return real(source)

    def no_pipeline(*a, **k):
        raise AssertionError("opening the records must not run the pipeline")

    monkeypatch.setattr(ms4map.io.open, "read_source", spy)
    monkeypatch.setattr("ms4map.pipeline.run", no_pipeline)
    r = rec.open_records(town, user="jsmith")
    r.add_inspection("OF-1", "2025-06-02")
    r.summary(2025)
    assert read == ["outfalls"]
    assert sorted(r.outfalls["outfall_id"]) == ["OF-1", "OF-2", "OF-3", "OF-4"]


def test_records_path_never_an_input_and_records_file_remembers_workspace(town, tmp_path) -> None:
    with pytest.raises(UsageError, match="input file"):
        rec.open_records(town, user="jsmith", records=town)
    other = tmp_path / "elsewhere" / "idde.records.gpkg"
    r = rec.open_records(town, user="jsmith", records=other)
    assert r.path == other.resolve() and other.exists()
    r.add_inspection("OF-1", "2025-06-02")
    again = rec.open_records(other, user="someone")
    assert again.workspace == town.resolve()
    assert len(again.inspections()) == 1
    with pytest.raises(UsageError, match="user="):
        rec.open_records(town, user=" ")


def test_idle_handle_holds_no_lock(records) -> None:
    records.add_inspection("OF-1", "2025-06-02")
    records.inspections()
    con = sqlite3.connect(records.path, timeout=0)
    try:
        con.execute("BEGIN EXCLUSIVE")  # fails at once if anyone holds a lock
        con.execute("ROLLBACK")
    finally:
        con.close()


# ------------------------------------------------------------------ inspections
def test_inspection_fields_are_stored_and_typed(records) -> None:
    iid = records.add_inspection(
        "OF-2",
        "2025-06-02",
        inspector="A. Diaz",
        time="9:05",
        hours_since_rain=72,
        flow_present="yes",
        flow_estimate="Trickle",
        odor=2,
        color=0,
        turbidity=1,
        floatables=3,
        deposits=True,
        vegetation=False,
        pool_quality=False,
        benthic_growth=True,
        damage=False,
        ammonia=2.0,
        detergents=0.5,
        fluoride=0.1,
        potassium=1.0,
        ph=7.2,
        temperature_c=14.5,
        conductivity=650,
        characterization="suspect",
        sample_taken=True,
        notes="grey water, sewage odour",
    )
    row = records.inspections().set_index("inspection_id").loc[iid]
    assert row["outfall_id"] == "OF-2" and row["date"] == "2025-06-02"
    assert row["time"] == "09:05" and row["flow_estimate"] == "trickle"
    assert bool(row["flow_present"]) is True and bool(row["deposits"]) is True
    assert int(row["floatables"]) == 3 and row["conductivity"] == 650.0
    assert row["created_by"] == "jsmith" and row["created_at"].endswith("Z")
    assert row["flow_type"] == "sewage"  # detergents 0.5 > 0.25, NH3/K = 2 > 1
    # the same outfall and date again is a second row
    assert records.add_inspection("OF-2", "2025-06-02") == iid + 1
    assert len(records.inspections()) == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"outfall_id": "OF-99"}, "'outfall_id' = 'OF-99'.*check the id"),
        ({"date": "2999-01-01"}, "'date' = 2999-01-01 is in the future"),
        ({"date": "06/02/2025"}, "not a date.*YYYY-MM-DD"),
        ({"odor": 4}, "'odor' = 4 is outside the severity scale.*0 \\(not present\\)"),
        ({"floatables": -1}, "'floatables'.*severity"),
        ({"flow_estimate": "lots"}, "'flow_estimate' = 'lots'.*'trickle'"),
        ({"characterization": "bad"}, "'characterization'.*'obvious'"),
        ({"flow_present": "maybe"}, "'flow_present'.*yes or no"),
        ({"ph": 15}, "'ph' = 15 is outside 0 to 14"),
        ({"detergents": -0.1}, "'detergents' = -0.1 is outside 0 to 1000 \\(mg/L\\)"),
        ({"time": "25:00"}, "'time'.*HH:MM"),
        ({"colour": 1}, "Unknown inspection field\\(s\\) \\['colour'\\].*'color'"),
    ],
)
def test_bad_inspection_is_refused_and_nothing_written(records, kwargs, match) -> None:
    args = {"outfall_id": "OF-1", "date": "2025-06-02", **kwargs}
    with pytest.raises(DataError, match=match):
        records.add_inspection(**args)
    assert _count(records.path, "inspections") == 0
    assert _count(records.path, "audit") == 0


def test_correction_is_a_new_version_and_audited(records) -> None:
    iid = records.add_inspection("OF-1", "2025-06-02", odor=1, notes="first")
    v = records.correct("inspections", iid, odor=2, notes="re-read the sheet")
    assert v == 2
    cur = records.inspections()
    assert len(cur) == 1 and int(cur["odor"].iloc[0]) == 2
    hist = records.inspections(history=True)
    assert hist["version"].tolist() == [1, 2]
    a = records.audit()
    assert a["action"].tolist() == ["insert", "correct"]
    assert json.loads(a["old_values"].iloc[1])["odor"] == 1
    assert json.loads(a["new_values"].iloc[1])["odor"] == 2
    assert a["created_by"].tolist() == ["jsmith", "jsmith"]
    assert a["table_name"].tolist() == ["inspections", "inspections"]
    assert a["row_id"].tolist() == [iid, iid]


def test_audit_and_tables_refuse_update_and_delete(records) -> None:
    records.add_inspection("OF-1", "2025-06-02")
    con = sqlite3.connect(records.path)
    try:
        for sql in (
            "UPDATE audit SET created_by = 'mallory'",
            "DELETE FROM audit",
            "UPDATE inspections SET odor = 3",
            "DELETE FROM inspections",
        ):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                con.execute(sql)
    finally:
        con.close()
    assert _count(records.path, "audit") == 1


def test_flow_type_reads_tests_of_an_inspection_or_sample() -> None:
    assert flow_type_of({"detergents": 0.6, "ammonia": 0.5, "potassium": 2.0})[0] == "wash_water"
    assert flow_type_of({"detergents": 0.1, "fluoride": 0.6})[0] == "tap_water"
    assert flow_type_of({"detergents": None})[0] == "undetermined"
    assert flow_type_of({"detergents_mg_l": 0.1, "fluoride_mg_l": 0.1})[0] == "natural_water"


# ------------------------------------------------------------------ samples and cases
def test_samples_link_to_a_case_at_a_structure(records) -> None:
    cid = records.open_case("OF-1", "2025-06-02", origin="finding")
    s1 = records.add_sample(cid, "MH-2", "2025-06-03", detergents=0.5, flow_present=True)
    s2 = records.add_sample(cid, "MH-1", "2025-06-04", result="clean")
    smp = records.samples(cid)
    assert smp["sample_id"].tolist() == [s1, s2]
    assert smp["result"].tolist() == ["flow", "clean"]  # flow from flow_present
    assert smp.geometry.iloc[0].equals(Point(600100, 4760100))  # MH-2
    assert smp["flow_type"].iloc[0] == "sewage_or_wash_water"
    with pytest.raises(DataError, match="'struct_id' = 'MH-9'"):
        records.add_sample(cid, "MH-9", "2025-06-04", result="flow")
    with pytest.raises(DataError, match="'result' is missing"):
        records.add_sample(cid, "MH-1", "2025-06-04")
    with pytest.raises(DataError, match="before case 1 opened"):
        records.add_sample(cid, "MH-1", "2025-06-01", result="flow")
    with pytest.raises(DataError, match="'case_id' = 7"):
        records.add_sample(7, "MH-1", "2025-06-04", result="flow")


def test_case_steps_in_order_each_a_version(records) -> None:
    cid = records.open_case("OF-2", "2025-06-02", description="resident: grey water")
    records.advance_case(cid, "investigation", "2025-06-03")
    with pytest.raises(DataError, match="needs step 'source_found' first"):
        records.advance_case(cid, "notice_sent", "2025-06-04")
    with pytest.raises(DataError, match="'source_parcel_id' is needed"):
        records.advance_case(cid, "source_found", "2025-06-04")
    with pytest.raises(DataError, match="'parcel_id' = 'P-9'"):
        records.advance_case(cid, "source_found", "2025-06-04", parcel_id="P-9")
    with pytest.raises(DataError, match="is before opened_on = 2025-06-02"):
        records.advance_case(cid, "source_found", "2025-06-01", parcel_id="P-1")
    records.advance_case(cid, "source_found", "2025-06-04", parcel_id="P-1")
    with pytest.raises(DataError, match="already has step 'source_found'"):
        records.advance_case(cid, "source_found", "2025-06-05", parcel_id="P-1")
    records.advance_case(cid, "notice_sent", "2025-06-05", deadline="2025-07-05")
    records.advance_case(cid, "eliminated", "2025-06-20")
    records.advance_case(cid, "closed", "2025-06-21", reason="connection removed")
    with pytest.raises(DataError, match="was closed on 2025-06-21"):
        records.advance_case(cid, "corrected", "2025-06-22")
    cur = records.cases().iloc[0]
    assert cur["status"] == "closed" and cur["version"] == 6
    assert cur["source_parcel_id"] == "P-1" and cur["remedy_deadline"] == "2025-07-05"
    hist = records.cases(history=True)
    assert hist["step"].tolist() == [
        "opened",
        "investigation",
        "source_found",
        "notice_sent",
        "eliminated",
        "closed",
    ]
    assert records.audit()["action"].tolist() == hist["step"].replace("opened", "open").tolist()


# ------------------------------------------------------------------ derived status
def test_outfall_status_is_derived_from_inspections_and_cases(records) -> None:
    def status() -> dict[str, str]:
        st = records.outfall_status()
        return dict(zip(st["outfall_id"], st["status"], strict=True))

    assert set(status().values()) == {"unknown"}
    records.add_inspection("OF-2", "2025-05-01", flow_present=False)
    records.add_inspection("OF-3", "2025-05-01", flow_present=True, characterization="unlikely")
    records.add_inspection("OF-4", "2025-05-01", flow_present=True, characterization="obvious")
    records.add_inspection("OF-1", "2025-05-01", flow_present=True, characterization="potential")
    assert status() == {
        "OF-1": "suspect",
        "OF-2": "not_flowing",
        "OF-3": "flowing",
        "OF-4": "illicit",
    }
    cid = records.open_case("OF-2", "2025-05-02")
    assert status()["OF-2"] == "suspect"
    records.advance_case(cid, "source_found", "2025-05-03", parcel_id="P-2")
    assert status()["OF-2"] == "illicit"
    records.advance_case(cid, "eliminated", "2025-05-10")
    assert status()["OF-2"] == "eliminated"
    records.add_inspection("OF-2", "2025-06-01", flow_present=False)  # confirms it
    assert status()["OF-2"] == "eliminated"
    records.add_inspection("OF-2", "2025-07-01", flow_present=True, characterization="suspect")
    st = records.outfall_status().set_index("outfall_id")
    assert st.loc["OF-2", "status"] == "suspect"
    assert "inspection 6 on 2025-07-01" in st.loc["OF-2", "reason"]


# ------------------------------------------------------------------ summary
def test_summary_on_hand_built_records(records) -> None:
    r = records
    r.add_inspection("OF-1", "2024-03-01", flow_present=False, characterization="unlikely")
    a = r.add_inspection("OF-1", "2025-04-01", flow_present=True, characterization="suspect")
    r.add_inspection("OF-1", "2025-08-01", flow_present=True, characterization="obvious")
    r.add_inspection("OF-2", "2025-05-01", flow_present=True, characterization="potential")
    r.add_inspection("OF-3", "2021-06-01", flow_present=False)
    r.add_inspection("OF-4", "2020-06-01", flow_present=False)
    r.correct("inspections", a, notes="a correction is not a second inspection")
    case_a = r.open_case("OF-1", "2025-08-02")
    r.add_sample(case_a, "MH-3", "2025-08-05", result="flow")
    r.advance_case(case_a, "source_found", "2025-08-10", parcel_id="P-1")
    r.advance_case(case_a, "notice_sent", "2025-08-12", deadline="2025-09-12")
    r.advance_case(case_a, "eliminated", "2025-09-01")
    r.advance_case(case_a, "closed", "2025-09-15")
    case_b = r.open_case("OF-2", "2025-05-02")
    case_c = r.open_case("OF-3", "2024-11-01")
    r.advance_case(case_c, "source_found", "2024-12-01", parcel_id="P-2")
    r.advance_case(case_c, "notice_sent", "2025-01-05", deadline="2025-02-05")
    r.add_sample(case_b, "MH-1", "2025-05-03", result="flow")
    r.add_sample(case_b, "MH-2", "2025-05-03", result="clean")
    s = r.summary(2025)
    # worked by hand:
    #   screened 2025: OF-1 (twice), OF-2 -> 2; flowing: OF-1, OF-2 -> 2
    #   suspect or obvious: OF-1 (OF-2 was "potential") -> 1
    #   last 5 years (2021-2025): OF-1, OF-2, OF-3 of 4 (OF-4 in 2020) -> 0.75
    #   cases opened 2025: A, B -> 2; sources found 2025: A (C's was 2024) -> 1
    #   notices 2025: A, C -> 2; eliminated: A -> 1; open at year end: B, C -> 2
    #   samples 2025: 3, in cases A and B -> 2 track-downs
    assert s == {  # the NY profile's permit year (issue 30): no date here near 1-2 January
        "year": 2025,
        "period": "permit year",
        "period_start": "2025-01-03",
        "period_end": "2026-01-02",
        "outfalls": 4,
        "outfalls_screened": 2,
        "screened_last_5_years": 0.75,
        "flowing": 2,
        "suspect_or_obvious": 1,
        "cases_opened": 2,
        "track_downs": 2,
        "samples_taken": 3,
        "illicit_found": 1,
        "notices_sent": 2,
        "illicit_eliminated": 1,
        "cases_open": 2,
    }
    s24 = r.summary(2024)
    # 2024: OF-1 screened, not flowing; 5 years 2020-2024: OF-1, OF-3, OF-4 -> 0.75
    assert (s24["outfalls_screened"], s24["flowing"], s24["screened_last_5_years"]) == (1, 0, 0.75)
    assert (s24["cases_opened"], s24["illicit_found"], s24["cases_open"]) == (1, 1, 1)
    rep = r.annual_report(2025)
    assert rep["year"].tolist() == [2020, 2021, 2022, 2023, 2024, 2025]
    assert rep["outfalls_screened"].tolist() == [1, 1, 0, 0, 1, 2]


def test_reporting_year_may_start_later(town, tmp_path) -> None:
    r = rec.open_records(town, user="jsmith", year_start="01-03")
    r.add_inspection("OF-1", "2025-01-02")  # still reporting year 2024
    r.add_inspection("OF-2", "2025-01-03")
    s = r.summary(2025)
    assert (s["period_start"], s["period_end"], s["outfalls_screened"]) == (
        "2025-01-03",
        "2026-01-02",
        1,
    )
    assert r.summary(2024)["outfalls_screened"] == 1
    calendar = rec.open_records(town, user="jsmith", year_start="01-01")
    assert calendar.summary(2025)["outfalls_screened"] == 2
    with pytest.raises(UsageError, match="MM-DD"):
        rec.open_records(town, user="jsmith", year_start="Jan 3")


# ------------------------------------------------------------------ roles
def test_viewer_is_refused_every_edit(town, records, tmp_path) -> None:
    iid = records.add_inspection("OF-1", "2025-06-02")
    cid = records.open_case("OF-1", "2025-06-02")
    v = rec.open_records(town, user="guest", role="viewer")
    assert v.role == "viewer"
    for call in (
        lambda: v.add_inspection("OF-1", "2025-06-03"),
        lambda: v.open_case("OF-1", "2025-06-03"),
        lambda: v.advance_case(cid, "investigation", "2025-06-03"),
        lambda: v.add_sample(cid, "MH-1", "2025-06-03", result="flow"),
        lambda: v.correct("inspections", iid, notes="x"),
        lambda: v.attach("inspections", iid, png_bytes()),
    ):
        with pytest.raises(PermissionError, match="guest.*viewer role"):
            call()
    assert len(v.inspections()) == 1 and len(v.cases()) == 1  # reading works
    users = tmp_path / "users.toml"
    users.write_text('[users.guest]\nrole = "viewer"\n[users.jsmith]\nrole = "smo"\n')
    listed = rec.open_records(town, user="guest", users_file=users)
    assert listed.role == "viewer"
    with pytest.raises(PermissionError):
        listed.add_inspection("OF-1", "2025-06-03")
    assert rec.open_records(town, user="jsmith", users_file=users).role == "smo"
    assert _count(records.path, "audit") == 2


def test_viewer_cannot_create_the_file(town) -> None:
    with pytest.raises(InputOpenError, match="viewer cannot create it"):
        rec.open_records(town, user="guest", role="viewer")
    assert not town.with_name("town.records.gpkg").exists()


# ------------------------------------------------------------------ photos
def test_photos_checked_by_content(records, tmp_path) -> None:
    iid = records.add_inspection("OF-1", "2025-06-02")
    jpg = tmp_path / "outfall.jpg"
    jpg.write_bytes(jpeg_bytes())
    aid = records.attach("inspections", iid, jpg, caption="staining below the pipe")
    png_named_txt = tmp_path / "photo.dat"
    png_named_txt.write_bytes(png_bytes())
    bid = records.attach("inspections", iid, png_named_txt)
    att = records.attachments().set_index("attachment_id")
    assert att.loc[aid, "mime"] == "image/jpeg" and att.loc[aid, "width"] == 64
    assert att.loc[bid, "mime"] == "image/png" and att.loc[bid, "height"] == 6
    assert "data" not in att.columns
    assert records.attachment_data(aid) == jpg.read_bytes()
    new = json.loads(records.audit()["new_values"].iloc[-1])
    assert "data" not in new and new["sha256"] == att.loc[bid, "sha256"]

    fake = tmp_path / "fake.jpg"
    fake.write_text("not a picture at all")
    with pytest.raises(DataError, match="not a JPEG or PNG"):
        records.attach("inspections", iid, fake)
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(jpeg_bytes((400, 300))[:600])
    with pytest.raises(DataError, match="truncated or corrupt"):
        records.attach("inspections", iid, cut)
    broken = bytearray(png_bytes((40, 30)))
    broken[40:60] = b"\x00" * 20  # pixel data damaged, chunks still there
    with pytest.raises(DataError, match="corrupt"):
        records.attach("inspections", iid, bytes(broken))
    with pytest.raises(DataError, match="above the limit of"):
        records.attach("inspections", iid, jpg, max_bytes=100)
    big = tmp_path / "big.jpg"
    big.write_bytes(b"\xff\xd8\xff" + b"\0" * (rec.MAX_PHOTO_BYTES + 1))
    with pytest.raises(DataError, match="MB, above the limit of 10.0 MB"):
        records.attach("inspections", iid, big)
    with pytest.raises(DataError, match="No row 99 in samples"):
        records.attach("samples", 99, jpg)
    assert len(records.attachments()) == 2


# ------------------------------------------------------------------ exports
def test_export_backup_and_annual_report(records, tmp_path) -> None:
    from ms4map.records.annual import write_annual_report

    records.add_inspection("OF-1", "2025-06-02", flow_present=True)
    records.open_case("OF-1", "2025-06-03")
    out = records.export(tmp_path / "export.gpkg")
    names = {str(n) for n, _ in pyogrio.list_layers(out)}
    assert {"inspections", "cases", "outfall_status", "audit", "provenance"} <= names
    st = pyogrio.read_dataframe(out, layer="outfall_status")
    assert st.set_index("outfall_id").loc["OF-1", "status"] == "suspect"
    csv = records.export(tmp_path / "cases.csv", table="cases")
    assert csv.read_text().splitlines()[0].startswith("case_id,version")
    b = records.backup(tmp_path / "backup.gpkg")
    with sqlite3.connect(b) as con:
        assert con.execute("SELECT count(*) FROM audit").fetchone()[0] == 2
    with pytest.raises(UsageError, match="input file"):
        records.export(records.workspace)
    rep = records.annual_report(2025)
    pdf = write_annual_report(rep, tmp_path / "annual.pdf", title="Town of Stillwater")
    assert pdf.read_bytes()[:4] == b"%PDF"
