"""The SMP programme in the records store (issue 31 item 3): the inventory (points and
polygons), inspections and maintenance, what is overdue, the drainage area from the
pipeline's catchments, the import, retention, an older records file, the pack rows.

Every expectation is worked by hand in the test's comments."""

from __future__ import annotations

import datetime as dt
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import geopandas as gpd
import pyogrio
import pytest
from shapely.geometry import Point, box
from test_hydrology_overland_fixtures import cell_box, dem, plane, xy
from test_records import make_town

import ms4map.records as rec
from ms4map import hydrology
from ms4map.core.errors import DataError
from ms4map.records import gpkg, smp, smp_import
from ms4map.records.periods import Period

CRS = "EPSG:26918"
IN_TOWN = Point(600050, 4760050)  # between the outfalls of make_town
POND = box(600100, 4760100, 600130, 4760120)


@pytest.fixture
def town(tmp_path: Path) -> Path:
    return make_town(tmp_path)


@pytest.fixture
def records(town: Path) -> rec.Records:
    return rec.open_records(town, user="jsmith", profile="kingsbury")


# ------------------------------------------------------------------ schedule (hand-worked)
def test_inspected_2025_01_10_every_12_months_is_overdue_on_2026_01_11_not_on_2026_01_09(
    records,
):
    sid = smp.add_smp(records, "Pond 1", "P-2", IN_TOWN, inspection_months=12)
    smp.inspect_smp(records, sid, "2025-01-10", condition="good")
    # due = 2025-01-10 + 12 months = 2026-01-10; overdue from the day after
    st = smp.smp_status(records, "2026-01-09").iloc[0]
    assert st["inspection_due"] == "2026-01-10"
    assert st["inspection_status"] == "due_soon"  # 1 day before: within 30 days
    assert smp.smp_status(records, "2026-01-10").iloc[0]["inspection_status"] == "due_soon"
    assert smp.smp_status(records, "2026-01-11").iloc[0]["inspection_status"] == "overdue"
    assert smp.smp_status(records, "2025-12-10").iloc[0]["inspection_status"] == "ok"  # 31 days
    assert smp.smp_status(records, "2025-12-11").iloc[0]["inspection_status"] == "due_soon"
    assert smp.overdue(records, "2026-01-09").empty
    late = smp.overdue(records, "2026-01-11")
    assert late[["smp_id", "what", "due", "days_overdue"]].values.tolist() == [
        [sid, "inspection", "2026-01-10", 1]
    ]


def test_six_month_schedule_inspected_eight_months_ago_is_overdue(records):
    sid = smp.add_smp(records, "Bio 1", "F-5", POND, inspection_months=6)
    smp.inspect_smp(records, sid, "2025-01-15")
    # 8 months later: 2025-09-15; due 2025-07-15 -> 62 days overdue (16+31+15)
    late = smp.overdue(records, "2025-09-15")
    assert late["days_overdue"].tolist() == [62]


def test_add_months_clamps_to_the_month_end():
    assert smp.add_months(dt.date(2025, 1, 31), 1) == dt.date(2025, 2, 28)
    assert smp.add_months(dt.date(2024, 1, 31), 1) == dt.date(2024, 2, 29)
    assert smp.add_months(dt.date(2025, 11, 30), 3) == dt.date(2026, 2, 28)
    assert smp.add_months(dt.date(2025, 1, 10), 12) == dt.date(2026, 1, 10)


def test_never_inspected_and_maintenance_schedule_from_the_as_built(records):
    sid = smp.add_smp(
        records,
        "Swale 1",
        "O-1",
        IN_TOWN,
        inspection_months=12,
        maintenance_months=6,
        as_built_on="2024-03-01",
        as_built_engineer="R. Engineer, PE",
    )
    st = smp.smp_status(records, "2025-04-01").iloc[0]
    # never inspected; its first inspection due 12 months after the as-built
    assert st["inspection_status"] == "never_inspected"
    assert st["inspection_due"] == "2025-03-01"
    assert st["maintenance_due"] == "2024-09-01" and st["maintenance_status"] == "overdue"
    late = smp.overdue(records, "2025-04-01").set_index("what")
    assert late.loc["inspection", "days_overdue"] == 31  # 1 March -> 1 April
    smp.maintain_smp(records, sid, "2025-03-20", actions="mowed; cleared the inlet")
    st = smp.smp_status(records, "2025-04-01").iloc[0]
    assert st["maintenance_due"] == "2025-09-20" and st["maintenance_status"] == "ok"


# ------------------------------------------------------------------ the inventory
def test_point_and_polygon_smps_are_a_geopackage_layer_readable_by_gdal(records):
    smp.add_smp(records, "Pond 1", "p-2", IN_TOWN, owner="HOA")
    smp.add_smp(records, "Bioretention 2", "Bioretention", POND)
    with sqlite3.connect(records.path) as con:
        kind = con.execute(
            "SELECT geometry_type_name FROM gpkg_geometry_columns WHERE table_name = 'smps'"
        ).fetchone()
    assert kind == ("GEOMETRY",)
    layers = dict(pyogrio.list_layers(records.path))
    assert "smps" in layers and "smp_inspections" in layers
    got = gpd.read_file(records.path, layer="smps")
    assert got.crs.to_epsg() == 26918
    assert list(got["kind"]) == ["P-2", "F-5"]
    assert got.geometry.iloc[0].equals(IN_TOWN) and got.geometry.iloc[1].equals(POND)
    inv = smp.smps(records)
    assert list(inv["practice"]) == ["P-2 Wet pond", "F-5 Bioretention"]
    assert records.verify()["ok"]


@pytest.mark.parametrize(
    ("args", "fields", "message"),
    [
        (("Pond", "Z-9", IN_TOWN), {}, "SMP field 'kind' = 'Z-9'"),
        (("Pond", "P-2", Point(0, 0)), {}, "lies outside the town"),
        (("Pond", "P-2", IN_TOWN), {"inspection_months": 0}, "'inspection_months' = 0"),
        (("Pond", "P-2", IN_TOWN), {"as_built_on": "2999-01-01"}, "in the future"),
        (("", "P-2", IN_TOWN), {}, "'name' is empty"),
        (("Pond", "P-2", IN_TOWN.buffer(5).exterior), {}, "give a point or a polygon"),
        (("Pond", "P-2", IN_TOWN), {"colour": "red"}, "Unknown SMP field"),
        (
            (
                "Pond",
                "P-2",
                "POLYGON ((600000 4760000, 600020 4760020, 600020 4760000, "
                "600000 4760020, 600000 4760000))",
            ),
            {},
            "polygon is not valid \\(Self-intersection",
        ),
        (("Pond", "P-2", "POINT (600050"), {}, "is not WKT"),
        (("Pond", "P-2", IN_TOWN), {"discharges_to": "MH-9"}, "'MH-9' is not a structure"),
    ],
)
def test_bad_smps_are_refused_naming_the_field_and_nothing_is_written(
    records, args, fields, message
):
    with pytest.raises(DataError, match=message):
        smp.add_smp(records, *args, **fields)
    assert smp.smps(records).empty


def test_a_name_used_twice_is_refused(records):
    smp.add_smp(records, "Pond 1", "P-2", IN_TOWN)
    with pytest.raises(DataError, match="SMP 1 already has that name"):
        smp.add_smp(records, "pond 1", "P-3", IN_TOWN)
    assert len(smp.smps(records)) == 1
    other = smp.add_smp(records, "Pond 2", "P-3", IN_TOWN)
    with pytest.raises(DataError, match="SMP 1 already has that name"):
        smp.correct_smp(records, other, name=" POND 1 ")
    assert smp.correct_smp(records, 1, name="Pond 1") == 2  # its own name: no conflict


def test_project_id_must_name_a_saved_project(records):
    with pytest.raises(DataError, match="'project_id' = 7: no such project"):
        smp.add_smp(records, "Pond 1", "P-2", IN_TOWN, project_id=7)
    with sqlite3.connect(records.path) as con:  # a saved project, as the projects table holds it
        con.execute(
            "INSERT INTO projects (project_id, version, project_name, status, step_on, "
            "profile, saved_on, determination, determination_sha256, created_at, created_by) "
            "VALUES (1, 1, 'Maple Ridge', 'screened', '2025-01-02', 'kingsbury', "
            "'2025-01-02', '{}', 'x', '2025-01-02T00:00:00Z', 'jsmith')"
        )
    with pytest.raises(DataError, match="'project_id' = 2: no such project"):
        smp.add_smp(records, "Pond 2", "P-2", IN_TOWN, project_id=2)
    sid = smp.add_smp(records, "Pond 3", "P-2", IN_TOWN, project_id=1)
    assert int(smp.smps(records).set_index("smp_id").loc[sid, "project_id"]) == 1


def test_inspection_needs_an_smp_and_valid_kind_and_condition(records):
    with pytest.raises(DataError, match="'smp_id' = 9: no such SMP"):
        smp.inspect_smp(records, 9, "2025-01-10")
    sid = smp.add_smp(records, "Pond 1", "P-2", IN_TOWN)
    with pytest.raises(DataError, match="'inspection_kind' = 'yearly'"):
        smp.inspect_smp(records, sid, "2025-01-10", inspection_kind="yearly")
    with pytest.raises(DataError, match="'condition' = 'great'"):
        smp.inspect_smp(records, sid, "2025-01-10", condition="great")
    with pytest.raises(DataError, match="'actions' is missing"):
        smp.maintain_smp(records, sid, "2025-01-10")
    for kind in ("routine", "random", "complaint", "one_year"):
        smp.inspect_smp(records, sid, "2025-01-10", inspection_kind=kind)
    assert list(smp.smp_inspections(records)["inspection_kind"]) == [
        "routine",
        "random",
        "complaint",
        "one_year",
    ]


def test_records_are_kept_for_the_profiles_retention_and_never_deleted(records, town):
    sid = smp.add_smp(records, "Pond 1", "P-2", IN_TOWN)
    smp.inspect_smp(records, sid, "2025-01-10")
    smp.maintain_smp(records, sid, "2025-02-28", actions="mowed")
    # Kingsbury: seven years (its profile's [smp] retention_years, cited from the law)
    assert smp.retention_years(records.profile) == 7
    assert smp.smp_inspections(records)["keep_until"].tolist() == ["2032-01-10"]
    assert smp.smp_maintenance(records)["keep_until"].tolist() == ["2032-02-28"]
    still = rec.open_records(town, user="jsmith", profile="stillwater")
    assert smp.retention_years(still.profile) is None  # the law states no period
    assert smp.smp_inspections(still)["keep_until"].tolist() == [None]
    for table in ("smps", "smp_inspections", "smp_maintenance"):
        with sqlite3.connect(records.path) as con, pytest.raises(sqlite3.IntegrityError):
            con.execute(f"DELETE FROM {table}")
    assert len(smp.smp_inspections(records)) == 1


def test_every_write_is_audited_in_its_transaction(records):
    sid = smp.add_smp(records, "Pond 1", "P-2", IN_TOWN)
    smp.inspect_smp(records, sid, "2025-01-10")
    smp.maintain_smp(records, sid, "2025-02-01", actions="mowed")
    smp.correct_smp(records, sid, owner="Town")
    audit = records.audit()
    assert audit[["table_name", "row_id", "version", "action"]].values.tolist() == [
        ["smps", sid, 1, "insert"],
        ["smp_inspections", 1, 1, "insert"],
        ["smp_maintenance", 1, 1, "insert"],
        ["smps", sid, 2, "correct"],
    ]
    assert records.verify()["ok"]
    assert smp.smps(records)["owner"].tolist() == ["Town"]
    assert len(smp.smps(records, history=True)) == 2


# ------------------------------------------------------------------ an older records file
def test_a_records_file_of_an_older_ms4map_gains_the_smp_tables_on_open(
    town, monkeypatch: pytest.MonkeyPatch
):
    old_tables = {k: v for k, v in gpkg.TABLES.items() if not k.startswith("smp")}
    with monkeypatch.context() as m:  # the schema of ms4map before the SMPs
        m.setattr(gpkg, "TABLES", old_tables)
        old = rec.open_records(town, user="jsmith")
        iid = old.add_inspection("OF-1", "2025-06-02", flow_present=True, odor=2)
    with sqlite3.connect(old.path) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    assert "smps" not in names
    viewer = rec.open_records(town, user="guest", role="viewer")  # reads, cannot upgrade
    assert smp.smps(viewer).empty and viewer.verify()["ok"]
    new = rec.open_records(town, user="jsmith")
    ins = new.inspections()
    assert ins["inspection_id"].tolist() == [iid] and ins["odor"].tolist() == [2]
    sid = smp.add_smp(new, "Pond 1", "P-2", POND)
    assert smp.smps(new)["smp_id"].tolist() == [sid]
    assert new.verify()["ok"]
    assert dict(pyogrio.list_layers(new.path))["inspections"] == "Point"


# ------------------------------------------------------------------ drainage areas
@pytest.fixture(scope="module")
def plane_result():
    """The overland routing of a plane tilted south (2 m cells): every cell drains
    straight down its column to the DEM's south edge."""
    return hydrology.route(dem(plane()))


def test_polygon_drainage_area_on_a_designed_plane(plane_result):
    from ms4map.records.smp_drainage import surface_area

    # the polygon covers rows 10-12, columns 20-24; water comes straight down those 5
    # columns from row 0: 13 rows x 5 columns = 65 cells of 4 m2 = 260 m2
    assert surface_area(plane_result, cell_box(10, 20, 13, 25)) == pytest.approx(260.0)
    # a point on row 10, column 20: rows 0-10 of that column = 11 cells = 44 m2
    assert surface_area(plane_result, Point(*xy(10, 20))) == pytest.approx(44.0)


def _plane_town(folder: Path) -> Path:
    """Outfalls around the designed plane's extent (EPSG:26918)."""
    of = gpd.GeoDataFrame(
        {"outfall_id": ["OF-A", "OF-B"]},
        geometry=[Point(*xy(39, 0)), Point(*xy(0, 49))],
        crs=CRS,
    )
    st = gpd.GeoDataFrame({"struct_id": ["CB-7"]}, geometry=[Point(*xy(6, 5))], crs=CRS)
    path = folder / "plane.gpkg"
    of.to_file(path, layer="outfalls", driver="GPKG")
    st.to_file(path, layer="structures", driver="GPKG")
    return path


def test_compute_drainage_records_the_area_and_its_method(tmp_path, plane_result):
    r = rec.open_records(_plane_town(tmp_path), user="jsmith")
    poly = smp.add_smp(r, "Bio 1", "F-5", cell_box(10, 20, 13, 25))
    inlet = smp.add_smp(r, "Tank 2", "rain_tank", Point(*xy(5, 5)), discharges_to="CB-7")
    given = smp.add_smp(r, "Pond 3", "P-2", Point(*xy(20, 30)), drainage_area_m2=1000)
    ic = gpd.GeoDataFrame(
        {"node_id": ["CB-7"], "area_m2": [812.5]}, geometry=[box(0, 0, 1, 1)], crs=CRS
    )
    fake = SimpleNamespace(overland=plane_result, inlet_catchments=ic)
    got = smp_import.compute_drainage(r, result=fake)
    assert got == {poly: (260.0, "surface_upstream"), inlet: (812.5, "inlet_catchment")}
    inv = smp.smps(r).set_index("smp_id")
    assert inv.loc[poly, "drainage_area_m2"] == 260.0
    assert inv.loc[poly, "drainage_method"] == "surface_upstream"
    assert inv.loc[given, "drainage_method"] == "given"  # left as given
    assert inv.loc[poly, "drainage_area_ac"] == pytest.approx(260 / 4046.8564224, abs=1e-3)
    assert r.audit()["action"].tolist()[-2:] == ["drainage", "drainage"]


def test_drainage_without_a_dem_says_how_to_give_the_area(tmp_path):
    r = rec.open_records(_plane_town(tmp_path), user="jsmith")
    smp.add_smp(r, "Bio 1", "F-5", cell_box(10, 20, 13, 25))
    with pytest.raises(DataError, match="needs the workspace's DEM"):
        smp_import.compute_drainage(r, result=SimpleNamespace(overland=None, inlet_catchments=None))
    assert smp.smps(r)["drainage_area_m2"].isna().all()


# ------------------------------------------------------------------ import
def _smp_file(folder: Path, name: str = "smps.gpkg", **change) -> Path:
    g = gpd.GeoDataFrame(
        {
            "SMP_NAME": ["Pond 1", "Bio 2", "Trench 3"],
            "TYPE": ["P-2", "F-5", "I-1"],
            "owner": ["HOA", None, "Town"],
            "Inspection_Months": [12, 6, 24],
            "as_built_on": ["2024-05-01", None, None],
            "colour": ["red", "green", "blue"],
        },
        geometry=[IN_TOWN, POND, Point(600200, 4760050)],
        crs=CRS,
    ).to_crs(4326)  # another CRS: reprojected on import
    for col, (i, v) in change.items():
        g.loc[i, col] = v
    path = folder / name
    g.to_file(path, layer=Path(name).stem)
    return path


def test_import_is_one_transaction_and_a_reimport_adds_nothing(records, tmp_path):
    src = _smp_file(tmp_path)
    cols = {"name": "SMP_NAME", "kind": "TYPE"}
    out = smp_import.import_smps(records, src, columns=cols)
    assert (out["added"], out["unchanged"], out["ignored_columns"]) == ([1, 2, 3], [], ["colour"])
    inv = smp.smps(records)
    assert inv["inspection_months"].tolist() == [12, 6, 24]  # matched in any case
    assert inv["as_built_on"].tolist()[0] == "2024-05-01"
    assert inv.geometry.iloc[1].equals_exact(POND, 1e-6)
    again = smp_import.import_smps(records, src, columns=cols)
    assert (again["added"], again["updated"], again["unchanged"]) == ([], [], [1, 2, 3])
    changed = _smp_file(tmp_path, "smps2.gpkg", owner=(1, "Village"))
    third = smp_import.import_smps(records, changed, columns=cols)
    assert (third["added"], third["updated"], third["unchanged"]) == ([], [2], [1, 3])
    assert len(smp.smps(records)) == 3
    assert smp.smps(records).set_index("smp_id").loc[2, "version"] == 2
    assert records.verify()["ok"]


def test_import_refuses_every_bad_row_with_layer_feature_and_fix(records, tmp_path):
    bad = _smp_file(tmp_path, "bad.gpkg", TYPE=(1, "Z-9"), Inspection_Months=(2, -1))
    with pytest.raises(DataError) as err:
        smp_import.import_smps(records, bad, columns={"name": "SMP_NAME", "kind": "TYPE"})
    text = str(err.value)
    assert "2 of 3 rows of 'bad.gpkg' are refused; nothing was imported" in text
    assert "layer 'bad', feature 2 (Bio 2): SMP field 'kind' = 'Z-9'" in text
    assert "layer 'bad', feature 3 (Trench 3): SMP field 'inspection_months' = -1" in text
    assert "Fix:" in text
    assert smp.smps(records).empty and records.audit().empty


def test_import_needs_name_and_kind_columns_and_known_mappings(records, tmp_path):
    src = _smp_file(tmp_path)
    with pytest.raises(DataError, match="no column for the SMP's 'name'"):
        smp_import.import_smps(records, src)
    with pytest.raises(DataError, match="unknown SMP field"):
        smp_import.import_smps(records, src, columns={"nom": "SMP_NAME"})
    with pytest.raises(DataError, match="does not have"):
        smp_import.import_smps(records, src, columns={"name": "NAME_X", "kind": "TYPE"})


def test_import_from_a_shapefile(records, tmp_path):
    g = gpd.GeoDataFrame({"name": ["Pond 1"], "kind": ["wet pond"]}, geometry=[POND], crs=CRS)
    g.to_file(tmp_path / "smps.shp")
    out = smp_import.import_smps(records, tmp_path / "smps.shp")
    assert out["added"] == [1] and smp.smps(records)["kind"].tolist() == ["P-2"]


# ------------------------------------------------------------------ the pack's rows
def test_pack_rows_for_a_permit_year(records):
    a = smp.add_smp(records, "Pond 1", "P-2", IN_TOWN, inspection_months=12)
    b = smp.add_smp(records, "Bio 2", "F-5", POND, maintenance_months=6, built_on="2024-01-01")
    smp.add_smp(records, "Pond 3", "P-2", IN_TOWN, built_on="2026-02-01")  # after the year
    smp.inspect_smp(records, a, "2024-12-20")  # before the year
    smp.inspect_smp(records, a, "2025-03-01", condition="poor")
    smp.maintain_smp(records, b, "2025-04-01", actions="removed sediment")
    smp.maintain_smp(records, b, "2026-01-05", actions="mowed")  # after the year
    year = Period("permit_year", 2025, dt.date(2025, 1, 3), dt.date(2026, 1, 2))
    rows = smp.pack_rows(records, year)
    assert set(rows) == {"smp_inventory", "smp_inspections", "smp_maintenance", "smp_overdue"}
    inv = rows["smp_inventory"]
    assert inv.values.tolist() == [
        ["F-5", "F-5 Bioretention", 1],
        ["P-2", "P-2 Wet pond", 1],
        ["all", "all practices", 2],
    ]
    assert rows["smp_inspections"]["date"].tolist() == ["2025-03-01"]
    assert rows["smp_inspections"]["name"].tolist() == ["Pond 1"]
    assert rows["smp_maintenance"]["date"].tolist() == ["2025-04-01"]
    # as of 2026-01-02: Bio 2 maintained 2025-04-01, due 2025-10-01 -> 93 days overdue;
    # Pond 1 inspected 2025-03-01, due 2026-03-01 -> not yet
    late = rows["smp_overdue"]
    assert late[["name", "what", "due", "days_overdue"]].values.tolist() == [
        ["Bio 2", "maintenance", "2025-10-01", 93]
    ]


# ------------------------------------------------------------------ durability
_SMP_WRITER = """
import sys
import ms4map.records as rec
from ms4map.records import smp
from shapely.geometry import Point
r = rec.open_records(sys.argv[1], user="killed")
sid = smp.add_smp(r, "Pond 1", "P-2", Point(600050, 4760050), inspection_months=6)
print(0, flush=True)
i = 0
while True:
    i += 1
    iid = smp.inspect_smp(r, sid, "2025-06-02", findings="x" * 2000)
    print(iid, flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigkill_mid_smp_writing_loses_nothing_committed(town):
    rec.open_records(town, user="setup")  # the file exists before the writer starts
    proc = subprocess.Popen(
        [sys.executable, "-c", _SMP_WRITER, str(town)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reported = -1
    deadline = time.monotonic() + 20
    assert proc.stdout is not None
    while reported < 30 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        reported = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert reported >= 30, proc.stderr.read() if proc.stderr else ""
    r = rec.open_records(town, user="after")
    assert r.integrity_check() == "ok"
    n = len(smp.smp_inspections(r))
    # every inspection reported committed is there, at most one more; each has its audit row
    assert reported <= n <= reported + 1
    audit = r.audit()
    assert int((audit["table_name"] == "smp_inspections").sum()) == n
    assert smp.smp_inspections(r)["smp_inspection_id"].tolist() == list(range(1, n + 1))
    assert r.verify()["ok"]


def test_a_records_file_made_by_ms4map_before_the_smps_keeps_everything(tmp_path):
    """``tests/data/records_pre_smp/town.records.gpkg`` was made by main at 86cd2a2 (before
    the SMPs) on ``make_town``: an inspection with a photo, corrected once, and a case."""
    fixture = Path(__file__).resolve().parents[1] / "data" / "records_pre_smp"
    path = tmp_path / "town.records.gpkg"
    path.write_bytes((fixture / "town.records.gpkg").read_bytes())
    old_tables = ("inspections", "samples", "cases", "attachments", "audit")

    def dump(p: Path) -> dict[str, list[tuple]]:
        with sqlite3.connect(p) as con:
            return {
                t: con.execute(f"SELECT * FROM {t} ORDER BY fid").fetchall() for t in old_tables
            }

    before = dump(path)
    with sqlite3.connect(path) as con:
        assert not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'smps'").fetchone()
    town = make_town(tmp_path)
    r = rec.open_records(town, user="jsmith", records=path)
    assert dump(path) == before  # nothing of the old file changed
    assert len(r.inspections(history=True)) == 2 and len(r.cases()) == 1
    assert len(r.attachments()) == 1
    with sqlite3.connect(path) as con:
        kind = con.execute(
            "SELECT geometry_type_name FROM gpkg_geometry_columns WHERE table_name = 'smps'"
        ).fetchone()
    assert kind == ("GEOMETRY",)
    sid = smp.add_smp(r, "Pond 1", "P-2", POND, inspection_months=12)
    smp.inspect_smp(r, sid, "2025-01-10")
    assert r.verify()["ok"]
    assert gpd.read_file(path, layer="smps").geometry.iloc[0].equals(POND)
