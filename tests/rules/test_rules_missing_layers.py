"""Missing legal layers never give a confident legal answer (issue 10, part 1).

The demo town is copied with one legal layer removed (``impairments``,
``tmdl_watersheds``, ``waterbodies``, ``outfalls``) and run through the real pipeline:
validation warns, a single site and the batch come out undetermined (never ``false``)
with a reason naming the layer and the fix, the CLI exits normally, and the app's
Condition A colouring says what is missing.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import geopandas as gpd
import pytest

import ms4map
from ms4map import pipeline
from ms4map.cli import main
from ms4map.rules.conditions import evaluate_site, screen_all

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

PLAZA = "107.12-2-11"  # drains to Kenyon River (303(d) for PCBs): yes on the full demo
TMDL_LOT = "102.15-2-9"  # lies in the Tamarack Lake phosphorus TMDL watershed
LEGAL = ("impairments", "tmdl_watersheds", "waterbodies")


def _demo() -> Path:
    path = ms4map.datasets.get_path("alder_falls")
    if not path.exists():
        pytest.skip("the demo town (data/layers/demo.gpkg) is not built")
    return path


def demo_without(layer: str, folder: Path) -> Path:
    """A copy of the demo GeoPackage (and its DEM) without ``layer``."""
    src = _demo()
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / "demo.gpkg"
    shutil.copy(src, dst)
    shutil.copy(src.with_name("demo_dem.tif"), folder / "demo_dem.tif")
    con = sqlite3.connect(dst)
    try:
        con.execute(f'DROP TABLE "{layer}"')
        for table in ("gpkg_contents", "gpkg_geometry_columns", "gpkg_extensions"):
            con.execute(f"DELETE FROM {table} WHERE table_name = ?", (layer,))
        con.commit()
    finally:
        con.close()
    assert layer not in {name for name, _ in ms4map.io.sources.pyogrio.list_layers(dst)}
    return dst


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("missing")
    return {layer: demo_without(layer, base / f"no_{layer}") for layer in (*LEGAL, "outfalls")}


@pytest.fixture(scope="module")
def runs(copies) -> dict[str, tuple]:
    out = {}
    for layer, path in copies.items():
        ws = ms4map.open_workspace(path)
        out[layer] = (ws, pipeline.run(ws))
    return out


@pytest.fixture(scope="module")
def full():
    ws = ms4map.open_workspace(_demo())
    res = pipeline.run(ws)
    return ws, res, screen_all(res, workspace=ws)


# ---- validate ---------------------------------------------------------------------------
@pytest.mark.parametrize("layer", [*LEGAL, "outfalls"])
def test_validate_warns_for_each_missing_legal_layer(copies, layer, capsys) -> None:
    from ms4map.io.validate import validate

    report = validate(copies[layer]).report
    hits = [f for f in report.warnings if f.code == "missing_legal_layer"]
    assert [f.layer for f in hits] == [layer]
    text = hits[0].message + " " + (hits[0].fix or "")
    assert "Condition A" in text and f"`{layer}`" in text
    if layer == "impairments":
        assert "--impairments CSV" in hits[0].fix
    assert main(["validate", str(copies[layer])]) == 1
    assert f"`{layer}`" in capsys.readouterr().out


def test_full_demo_has_no_missing_layer_warning() -> None:
    from ms4map.io.validate import validate

    assert not [f for f in validate(_demo()).report.findings if f.code == "missing_legal_layer"]


def test_empty_tmdl_layer_means_none(tmp_path) -> None:
    """An empty impairments/TMDL layer is a valid answer ("none"), not missing."""
    path = demo_without("outfalls", tmp_path / "x")  # any copy; then empty two layers
    con = sqlite3.connect(path)
    con.execute("DELETE FROM tmdl_watersheds")
    con.commit()
    con.close()
    ws = ms4map.open_workspace(path)
    assert "tmdl_watersheds" in ws.layers and len(ws.layers["tmdl_watersheds"]) == 0
    assert "empty_layer" in ws.qa.codes()
    assert not ws.qa.has_errors
    from ms4map.rules.waters import Waters

    assert "tmdl_watersheds" not in Waters.from_workspace(ws).missing


# ---- single site ------------------------------------------------------------------------
def test_no_303d_list_single_site_is_undetermined_not_no(runs, full) -> None:
    ws, res = runs["impairments"]
    a_full = evaluate_site(
        PLAZA, disturbed_acres=1, project_type="commercial", workspace=full[0], result=full[1]
    )["conditions"]["A"]
    assert a_full["value"] is True  # PCBs in Kenyon River: the 303(d) list decides it
    det = evaluate_site(
        PLAZA, disturbed_acres=1, project_type="commercial", workspace=ws, result=res
    )
    a = det["conditions"]["A"]
    assert a["value"] is None and a["method"] == "missing_layer"
    text = " ".join(a["reasons"])
    assert "no 303(d) list" in text.lower() and "`impairments`" in text
    assert "--impairments CSV" in text
    assert det["swppp_items"]["post_construction_required"] is True  # C is yes (commercial)
    assert "Condition A: undetermined" in det.summary()


def test_no_tmdl_layer_single_site_is_undetermined(runs, full) -> None:
    ws, res = runs["tmdl_watersheds"]
    kw = dict(disturbed_acres=0.5, common_plan_acres=3, project_type="residential")
    assert (
        evaluate_site(TMDL_LOT, workspace=full[0], result=full[1], **kw)["conditions"]["A"]["value"]
        is True
    )
    a = evaluate_site(TMDL_LOT, workspace=ws, result=res, **kw)["conditions"]["A"]
    assert a["value"] is None and a["method"] == "missing_layer"
    assert "`tmdl_watersheds`" in " ".join(a["reasons"])


@pytest.mark.parametrize("layer", LEGAL)
def test_a_yes_stays_yes_and_says_what_is_missing(runs, layer) -> None:
    """A positive answer decided by the layers present stands; the gap is still named."""
    ws, res = runs[layer]
    site = TMDL_LOT if layer == "impairments" else PLAZA
    kw = dict(disturbed_acres=0.5, common_plan_acres=3, project_type="commercial")
    a = evaluate_site(site, workspace=ws, result=res, **kw)["conditions"]["A"]
    assert a["value"] is True
    assert f"`{layer}`" in " ".join(a["reasons"])


def test_report_of_an_undetermined_site_names_the_layer(runs, tmp_path) -> None:
    from ms4map.outputs.report import write_report

    ws, res = runs["impairments"]
    det = evaluate_site(
        PLAZA, disturbed_acres=1, project_type="commercial", workspace=ws, result=res
    )
    html = write_report(det, tmp_path / "r.html").read_text()
    assert "Undetermined" in html and "impairments" in html


# ---- batch ------------------------------------------------------------------------------
@pytest.mark.parametrize("layer", LEGAL)
def test_batch_never_says_no_without_a_legal_layer(runs, full, layer) -> None:
    assert (full[2]["condition_a_text"] == "no").sum() > 0  # the full demo has some "no"
    ws, res = runs[layer]
    scr = screen_all(res, workspace=ws)
    assert len(scr) == len(full[2])
    assert (scr["condition_a_text"] == "no").sum() == 0
    assert scr.attrs["missing_layers"] == [layer]
    und = scr[scr["method"] == "missing_layer"]
    assert len(und) and und["condition_a"].isna().all()
    assert und["reason"].str.contains(f"`{layer}`", regex=False).all()


@pytest.mark.parametrize("layer", LEGAL)
def test_cli_screen_all_without_a_legal_layer(copies, layer, tmp_path, capsys) -> None:
    out = tmp_path / "s.gpkg"
    assert main(["screen", str(copies[layer]), "--all", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"`{layer}`" in err and "internal error" not in err
    scr = gpd.read_file(out, layer="screening")
    assert (scr["condition_a_text"] == "no").sum() == 0


def test_cli_single_site_without_303d_list(copies, capsys) -> None:
    args = ["screen", str(copies["impairments"]), "--site", PLAZA, "--acres", "1"]
    assert main([*args, "--type", "commercial"]) == 0
    out = capsys.readouterr().out
    assert "Condition A: undetermined" in out and "--impairments CSV" in out


# ---- outfall inventory without waterbodies ----------------------------------------------
def test_no_waterbodies_invents_no_outfalls_at_loose_ends(runs) -> None:
    from ms4map import network

    ws, res = runs["waterbodies"]
    net = res.network if hasattr(res, "network") else network.build_network(ws)
    assert len(ws.layers["outfalls"]) == 24
    assert sorted(net.outfalls.index.astype(str)) == sorted(ws.layers["outfalls"]["outfall_id"])
    assert "CB-0274" not in set(net.outfalls.index.astype(str))
    t = network.assign_outfalls(net).set_index("node_id")
    dead = t[t["method"] == "terminal_not_at_water"]
    assert len(dead) and dead["reason"].str.contains("`waterbodies`", regex=False).all()


def test_loose_ends_are_outfalls_only_when_nothing_maps_the_outfalls() -> None:
    """No waterbodies: a terminal is an outfall (candidate) unless the outfalls layer maps them."""
    from network_builders import UTM, network_workspace
    from shapely.geometry import Point

    from ms4map.network import assign_outfalls, build_network

    pipes = [
        {"conv_id": "P1", "from_id": "A", "to_id": "B", "coords": [(0, 0), (100, 0)]},
        {"conv_id": "P2", "from_id": "C", "to_id": "D", "coords": [(0, 50), (100, 50)]},
    ]
    guess = [("A", "manhole", 0, 0), ("B", "manhole", 100, 0)]
    guess += [("C", "manhole", 0, 50), ("D", "manhole", 100, 50)]
    t = assign_outfalls(build_network(network_workspace(guess, pipes))).set_index("node_id")
    # the only guess there is: the mapped system stops at these manholes
    assert set(t["method"]) == {"terminal_at_structure"}
    # an outfall structure is a real outlet, not an inventory: the other terminal stays
    # a candidate, ranked below it (issue 12)
    mapped = [*guess[:3], ("D", "outfall", 100, 50)]
    net = build_network(network_workspace(mapped, pipes))
    assert net.outfalls["method"].to_dict() == {
        "B": "terminal_at_structure",
        "D": "outfall_structure",
    }
    t = assign_outfalls(net).set_index("node_id")
    assert t.loc["C", "method"] == "outfall_structure"
    assert t.loc["A", "method"] == "terminal_at_structure"
    # the outfalls layer is the town's inventory: it never gains outfalls at loose ends
    inventory = gpd.GeoDataFrame({"outfall_id": ["OF-1"]}, geometry=[Point(100, 50)], crs=UTM)
    net = build_network(network_workspace(guess, pipes, outfalls=inventory))
    assert list(net.outfalls.index.astype(str)) == ["OF-1"]
    t = assign_outfalls(net).set_index("node_id")
    assert t.loc["C", "method"] == "outfalls_layer"
    assert (
        t.loc["A", "method"] == "terminal_not_at_water" and "`waterbodies`" in t.loc["A", "reason"]
    )


# ---- the app ------------------------------------------------------------------------------
def _app_page(workspace: Path, page: str, tmp_path: Path, monkeypatch):  # noqa: ANN202
    """The app's ``page`` on ``workspace``, run once (an AppTest)."""
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MS4MAP_WORKSPACE", str(workspace))
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    return AppTest.from_string(
        f"from ms4map.app import run_page\nrun_page({page!r})", default_timeout=120
    ).run()


@pytest.mark.parametrize("layer", LEGAL)
def test_app_condition_a_colours_without_a_legal_layer(copies, layer, tmp_path, monkeypatch):
    at = _app_page(copies[layer], "map", tmp_path, monkeypatch)
    at.radio(key="map_parcel_colour").set_value("condition_a").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    warn = " ".join(w.value for w in at.warning)
    assert f"`{layer}`" in warn and "undetermined" in warn


def test_app_screening_without_303d_list_is_undetermined(copies, tmp_path, monkeypatch):
    at = _app_page(copies["impairments"], "screening", tmp_path, monkeypatch)
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    at.number_input(key="screen_acres").set_value(1.0)
    at.button[-1].click()
    at.run()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Condition A"] == "undetermined"
    said = " ".join(m.value for m in at.markdown)
    # the app says where to add the list in its own words, not the command line's option
    assert "303(d) list CSV on the Data page" in said and "--impairments" not in said


# ---- septic flags -----------------------------------------------------------------------
@pytest.mark.parametrize("layer", ["impairments", "tmdl_watersheds"])
def test_septic_special_condition_is_never_a_confident_no_without_a_legal_layer(
    runs, full, layer, tmp_path
) -> None:
    """A septic parcel tributary to the MS4 whose waters are not listed has no special
    condition on the full demo; without the 303(d) listings or the TMDL watersheds that
    is not known (<NA>, method missing_layer, the layer named), while a special
    condition the other layer still shows stays true; the CLI writes it as NULL."""
    from ms4map.rules.septic import flag_septic

    ws0, res0 = full[0], full[1]
    base = flag_septic(res0, workspace=ws0).set_index("parcel_id")
    trib_no = base[(base["method"] == "tributary")].index
    assert len(trib_no) and not base.loc[trib_no, "special_condition"].any()
    ws, res = runs[layer]
    sep = flag_septic(res, workspace=ws).set_index("parcel_id")
    assert sep.loc[trib_no, "special_condition"].isna().all()
    assert (sep.loc[trib_no, "method"] == "missing_layer").all()
    assert sep.loc[trib_no, "reason"].str.contains(f"`{layer}`", regex=False).all()
    assert sep.loc[trib_no, "reason"].str.contains("Special condition not determined").all()
    # no parcel says "no special condition" while the layer is missing
    trib = sep[sep["method"].isin(["tributary", "special_condition", "missing_layer"])]
    assert not (trib["special_condition"] == False).any()  # noqa: E712 - <NA> is not False
    # parcels not tributary to the MS4 are unaffected
    other = base.index[~base["method"].isin(["tributary", "special_condition", "violation"])]
    assert (sep.loc[other, "method"] == base.loc[other, "method"]).all()
    out = tmp_path / "s.gpkg"
    assert main(["screen", str(ws.path), "--all", "--out", str(out)]) == 0
    written = gpd.read_file(out, layer="septic").set_index("parcel_id")
    assert written.loc[trib_no, "special_condition"].isna().all()


def test_app_septic_page_says_the_special_condition_is_open(copies, tmp_path, monkeypatch):
    at = _app_page(copies["impairments"], "septic", tmp_path, monkeypatch)
    assert not at.exception, [e.value for e in at.exception]
    warn = " ".join(w.value for w in at.warning)
    assert "Special condition not determined for 1083 flagged parcel(s)" in warn
    assert "`impairments`" in warn
    at.checkbox(key="septic_special_open").check().run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert len(table) == 1083 and table["special_condition"].isna().all()
