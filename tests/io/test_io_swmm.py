"""EPA SWMM models (.inp) as workspaces: the canonical layers, the network they build, bad input."""

from __future__ import annotations

import hashlib
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pytest
import shapely

from ms4map.cli import main
from ms4map.core.errors import UsageError, ValidationError
from ms4map.io import open_workspace
from ms4map.network import assign_outfalls, build_network

CRS = "EPSG:2284"

# A designed model (feet, LINK_OFFSETS DEPTH):
#
#   J1 (10.0) --C1--> J2 (8.0) --C2 (2 vertices)--> J3 (6.0) --C4--> S1 (4.0) --OR1--> O1 (2.0)
#                                                    ^
#   J4 (9.0) --C3 (box 3 ft high, 2 ft wide)---------+
#
# Hand-worked inverts (node invert + offset):
#   C1: 10.0 + 0.5 = 10.5 -> 8.0 + 0 = 8.0       C2: 8.0 + 0 = 8.0 -> 6.0 + 0.25 = 6.25
#   C3: 9.0 -> 6.0                               C4: 6.0 + 0.5 = 6.5 -> 4.0 + 1.0 = 5.0
#   OR1 (crest offset 1.5): 4.0 + 1.5 = 5.5 -> 2.0
# SC1 (outlet J1) has a polygon, SC2 (outlet J4) has none.
MODEL = """\
[TITLE]
designed model

[OPTIONS]
;;Option      Value
FLOW_UNITS    CFS
LINK_OFFSETS  {offsets}

[RAINGAGES]
RG1  INTENSITY 0:15 1.0 TIMESERIES TS1

[SUBCATCHMENTS]
;;Name RainGage Outlet Area %Imperv Width %Slope CurbLen
SC1  RG1  J1  2.5  40  400  1  0
SC2  RG1  J4  1.2  65  300  1  0

[JUNCTIONS]
;;Name Elevation MaxDepth InitDepth SurDepth Aponded
J1   10.0  5.0  0  0  0
J2   8.0   5.0  0  0  0
J3   6.0   6.0  0  0  0
J4   9.0   4.0  0  0  0

[OUTFALLS]
O1   2.0  FREE  NO

[STORAGE]
S1   4.0  8.0  0  FUNCTIONAL 1000 0 0

[CONDUITS]
;;Name From To Length Roughness InOffset OutOffset
C1   J1  J2  100  0.013  {c1_in}  {c1_out}
C2   J2  J3  150  0.013  0    0.25
C3   J4  J3  80   0.013  0    0
C4   J3  S1  120  0.013  0.5  1.0

[ORIFICES]
OR1  S1  O1  SIDE  1.5  0.65  NO  0

[XSECTIONS]
C1   CIRCULAR     1.5  0  0  0  1
C2   CIRCULAR     2    0  0  0  1
C3   RECT_CLOSED  3    2  0  0  1
C4   CIRCULAR     2.5  0  0  0  1
OR1  CIRCULAR     1    0  0  0

[TIMESERIES]
TS1  0  0
TS1  1  1

[COORDINATES]
;;Node X Y
J1   1000  2000
J2   1100  2000
J3   1100  1850
J4   1020  1850
S1   1220  1850
O1   1300  1850

[VERTICES]
C2   1130  1960
C2   1120  1900

[Polygons]
SC1  950  1950
SC1  1050 1950
SC1  1050 2050
SC1  950  2050
"""


def _model(offsets: str = "DEPTH", c1_in: str = "0.5", c1_out: str = "0") -> str:
    return MODEL.format(offsets=offsets, c1_in=c1_in, c1_out=c1_out)


def _line_of(text: str, start: str) -> int:
    """1-based number of the first line of ``text`` starting with ``start``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(start))


@pytest.fixture
def model(tmp_path: Path) -> Path:
    p = tmp_path / "designed.inp"
    p.write_text(_model(), encoding="utf-8")
    return p


def test_structures_outfalls_and_kinds(model: Path) -> None:
    ws = open_workspace(model, crs=CRS)
    st = ws.structures.set_index("struct_id")
    assert list(st.index) == ["J1", "J2", "J3", "J4", "O1", "S1"]
    # junctions that receive a subcatchment's runoff are inlets, the others manholes
    assert st.loc[["J1", "J2", "J3", "J4", "O1", "S1"], "kind"].tolist() == [
        "inlet",
        "manhole",
        "manhole",
        "inlet",
        "outfall",
        "bmp",
    ]
    assert st.loc["J3", "invert_elev"] == 6.0
    assert st.loc["J3", "rim_elev"] == 12.0  # 6.0 + max depth 6.0
    assert st.loc["S1", "rim_elev"] == 12.0  # 4.0 + 8.0
    assert pd.isna(st.loc["O1", "rim_elev"])
    assert st.loc["J4"].geometry.equals(shapely.Point(1020, 1850))
    assert ws.outfalls["outfall_id"].tolist() == ["O1"]
    assert ws.outfalls.geometry.iloc[0].equals(shapely.Point(1300, 1850))
    assert ws.crs.to_epsg() == 2284


def test_conveyances_inverts_sizes_and_lines(model: Path) -> None:
    ws = open_workspace(model, crs=CRS)
    cv = ws.conveyances.set_index("conv_id")
    assert list(cv.index) == ["C1", "C2", "C3", "C4", "OR1"]
    assert cv["from_id"].tolist() == ["J1", "J2", "J4", "J3", "S1"]
    assert cv["to_id"].tolist() == ["J2", "J3", "J3", "S1", "O1"]
    assert cv["us_invert"].tolist() == [10.5, 8.0, 9.0, 6.5, 5.5]
    assert cv["ds_invert"].tolist() == [8.0, 6.25, 6.0, 5.0, 2.0]
    assert cv["kind"].tolist() == ["pipe", "pipe", "pipe", "pipe", "connector"]
    # feet -> inches; the box's span is Geom2 (2 ft), its rise Geom1 (3 ft)
    assert cv["diameter_in"].tolist() == [18.0, 24.0, 24.0, 30.0, 12.0]
    assert cv.loc["C3", "rise_in"] == 36.0
    assert list(cv.loc["C2"].geometry.coords) == [
        (1100.0, 2000.0),
        (1130.0, 1960.0),
        (1120.0, 1900.0),
        (1100.0, 1850.0),
    ]
    assert list(cv.loc["C1"].geometry.coords) == [(1000.0, 2000.0), (1100.0, 2000.0)]


def test_link_offsets_elevation(tmp_path: Path) -> None:
    # with ELEVATION offsets, C1's 9.0 is the elevation of its outlet end (J2 is at 8.0),
    # '*' is the node invert, and an elevation below the node (C4's 0.5, 1.0) is raised
    # to the node invert as SWMM does
    p = tmp_path / "elev.inp"
    p.write_text(_model("ELEVATION", c1_in="*", c1_out="9.0"), encoding="utf-8")
    cv = open_workspace(p, crs=CRS).conveyances.set_index("conv_id")
    assert cv.loc["C1", ["us_invert", "ds_invert"]].tolist() == [10.0, 9.0]
    assert cv.loc["C4", ["us_invert", "ds_invert"]].tolist() == [6.0, 4.0]
    assert cv.loc["OR1", ["us_invert", "ds_invert"]].tolist() == [4.0, 2.0]


def test_drainage_areas_and_missing_polygon(model: Path) -> None:
    ws = open_workspace(model, crs=CRS)
    da = ws.layers["drainage_areas"]
    assert da["area_id"].tolist() == ["SC1"]
    assert da["outlet"].tolist() == ["J1"]
    assert da["area_ac"].tolist() == [2.5]
    assert da["pct_imperv"].tolist() == [40.0]
    assert da.geometry.iloc[0].area == 100.0 * 100.0
    info = ws.qa.by_code("swmm_subcatchment_without_polygon")
    assert len(info) == 1 and info[0].level == "info"
    assert f"'SC2' (line {_line_of(_model(), 'SC2')})" in info[0].message
    assert not ws.qa.has_errors


def test_provenance_names_the_model(model: Path) -> None:
    ws = open_workspace(model, crs=CRS)
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    assert ws.provenance()["inputs"] == {str(model.resolve()): digest}


def test_network_finds_the_outfall(model: Path) -> None:
    ws = open_workspace(model, crs=CRS)
    net = build_network(ws)
    table = assign_outfalls(net).set_index("struct_id")
    assert table["outfall_id"].to_dict() == {s: "O1" for s in ["J1", "J2", "J3", "J4", "O1", "S1"]}


def test_crs_is_required(model: Path) -> None:
    with pytest.raises(UsageError, match="--crs EPSG:NNNN"):
        open_workspace(model)


def _bad(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.inp"
    p.write_text(text, encoding="utf-8")
    return p


def test_link_naming_a_missing_node(tmp_path: Path) -> None:
    text = _model().replace("C3   J4  J3", "C3   J4  J9")
    with pytest.raises(ValidationError) as exc:
        open_workspace(_bad(tmp_path, text), crs=CRS)
    msg = str(exc.value)
    assert f"[CONDUITS] line {_line_of(text, 'C3 ')}" in msg
    assert "'J9'" in msg and "Fix:" in msg
    assert [f.code for f in exc.value.report.errors] == ["swmm_missing_node"]


def test_duplicated_node(tmp_path: Path) -> None:
    text = _model().replace("[OUTFALLS]\nO1 ", "[OUTFALLS]\nJ2 ")
    text = text.replace("OR1  S1  O1", "OR1  S1  J2").replace("O1   1300", "J2   1300")
    with pytest.raises(ValidationError) as exc:
        open_workspace(_bad(tmp_path, text), crs=CRS)
    msg = str(exc.value)
    line = _line_of(text, "J2   2.0")
    assert f"[OUTFALLS] line {line}: node 'J2' is defined again (first in [JUNCTIONS] line " in msg
    assert "swmm_duplicate_node" in exc.value.report.codes()


def test_no_coordinates_section(tmp_path: Path) -> None:
    text = _model()
    text = text[: text.index("[COORDINATES]")] + text[text.index("[VERTICES]") :]
    with pytest.raises(ValidationError) as exc:
        open_workspace(_bad(tmp_path, text), crs=CRS)
    msg = str(exc.value)
    assert "[COORDINATES]" in msg and f"none of its {len(text.splitlines())} lines" in msg
    assert "Fix:" in msg


def test_node_without_coordinates(tmp_path: Path) -> None:
    text = _model().replace("J4   1020  1850\n", "")
    with pytest.raises(ValidationError) as exc:
        open_workspace(_bad(tmp_path, text), crs=CRS)
    assert f"[JUNCTIONS] line {_line_of(text, 'J4   9.0')}: node 'J4' has no coordinates" in str(
        exc.value
    )


def test_record_with_too_few_fields(tmp_path: Path) -> None:
    text = _model().replace("C2   J2  J3  150  0.013  0    0.25", "C2   J2  J3  150")
    with pytest.raises(ValidationError) as exc:
        open_workspace(_bad(tmp_path, text), crs=CRS)
    line = _line_of(text, "C2   J2")
    assert f"[CONDUITS] line {line}: record 'C2' has 4 field(s); EPA SWMM needs at least 7" in str(
        exc.value
    )


def test_cli_trace_all(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.csv"
    assert main(["trace", str(model), "--crs", CRS, "--all", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert set(table["struct_id"]) == {"J1", "J2", "J3", "J4", "O1", "S1"}
    assert set(table["outfall_id"]) == {"O1"}


def test_cli_bad_model_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = _model().replace("C3   J4  J3", "C3   J4  J9")
    bad = _bad(tmp_path, text)
    out = tmp_path / "trace.csv"
    assert main(["trace", str(bad), "--crs", CRS, "--all", "--out", str(out)]) == 2
    assert not out.exists()
    assert f"[CONDUITS] line {_line_of(text, 'C3 ')}" in capsys.readouterr().err
    assert main(["validate", str(bad)]) == 4  # no --crs


def test_other_node_and_link_sections(tmp_path: Path) -> None:
    # a divider, a weir, a pump, an outlet, an open channel with a quoted name, a culvert
    text = (
        _model()
        .replace("[STORAGE]", "[DIVIDERS]\nD1  7.0  C3  OVERFLOW  3  0  0  0\n\n[STORAGE]")
        .replace(
            "[XSECTIONS]",
            "[WEIRS]\nW1  J3  O1  TRANSVERSE  1.0  3.33  NO  0  0\n\n"
            "[PUMPS]\nP1  J1  J4  *  ON  0  0\n\n"
            "[OUTLETS]\nU1  J2  O1  0.5  FUNCTIONAL/DEPTH  10  0.5  YES\n\n[XSECTIONS]\n"
            "W1  RECT_OPEN  1  2  0  0\n"
            '"D 1"  TRAPEZOIDAL  2  4  1  1  1\n',
        )
        .replace("C4   J3  S1", '"D 1"  J2  D1  60  0.03  0  0\nC4   J3  S1')
        .replace("C3   RECT_CLOSED  3    2  0  0  1", "C3   RECT_CLOSED  3    2  0  0  1  4")
        .replace("J4   1020  1850", "J4   1020  1850\nD1   1060  1900")
    )
    p = tmp_path / "more.inp"
    p.write_text(text, encoding="utf-8")
    ws = open_workspace(p, crs=CRS)
    st = ws.structures.set_index("struct_id")
    assert st.loc["D1", ["kind", "invert_elev", "rim_elev"]].tolist() == ["junction", 7.0, 10.0]
    cv = ws.conveyances.set_index("conv_id")
    assert cv.index.tolist() == ["C1", "C2", "C3", "D 1", "C4", "OR1", "W1", "P1", "U1"]
    assert cv.loc["D 1", ["kind", "from_id", "to_id", "diameter_in", "rise_in"]].tolist() == [
        "channel",
        "J2",
        "D1",
        48.0,
        24.0,
    ]
    assert cv.loc["C3", "kind"] == "culvert"
    # weir: crest 1.0 above J3 (6.0); outlet: offset 0.5 above J2 (8.0), flap gate
    assert cv.loc["W1", ["kind", "us_invert", "ds_invert"]].tolist() == ["connector", 7.0, 2.0]
    assert cv.loc["U1", ["us_invert", "ds_invert", "flow_dir"]].tolist() == [8.5, 2.0, "uni"]
    # a pump lifts water: one way, no inverts
    assert cv.loc["P1", "flow_dir"] == "uni"
    assert cv.loc["P1", ["us_invert", "ds_invert"]].isna().all()


def test_cli_drainage_with_parcels(model: Path, tmp_path: Path) -> None:
    # no DEM: each parcel drains to its nearest inlet, i.e. the junction a subcatchment
    # of the model drains to (J1 under P1, J4 3 ft from P2), then through the pipes to O1
    parcels = gpd.GeoDataFrame(
        {"parcel_id": ["P1", "P2"]},
        geometry=[shapely.box(960, 1960, 1040, 2040), shapely.box(1000, 1800, 1040, 1847)],
        crs=CRS,
    )
    pfile = tmp_path / "parcels.geojson"
    parcels.to_file(pfile)
    out = tmp_path / "drainage.gpkg"
    argv = ["drainage", str(model), "--crs", CRS, "--layer", f"parcels={pfile}", "--out", str(out)]
    assert main([*argv, "--quiet"]) == 0
    rows = gpd.read_file(out, layer="parcel_drainage").set_index("parcel_id")
    assert rows["target_id"].to_dict() == {"P1": "J1", "P2": "J4"}
    assert set(rows["outfall_id"]) == {"O1"}
