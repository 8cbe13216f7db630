"""SWMM models out (issue 33): the demo's model runs in EPA SWMM, traces back the same, and
bad input is refused before anything is written."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import geopandas as gpd
import pandas as pd
import pytest

from ms4map import pipeline
from ms4map.cli.drainage import write_layers
from ms4map.core.errors import DataError, InputOpenError, UsageError
from ms4map.io import open_workspace, write_outputs
from ms4map.network import assign_outfalls, build_network
from ms4map.outputs import export


@pytest.fixture(scope="module")
def demo_model(demo_result, tmp_path_factory) -> tuple[Path, Path]:
    """The demo's results GeoPackage (as ``ms4map drainage`` writes it) and its model."""
    ws, res = demo_result
    d = tmp_path_factory.mktemp("swmm")
    gpkg = d / "results.gpkg"
    write_layers(gpkg, {**res.layers(), **pipeline.model_layers(res)}, ws=ws, settings={})
    inp = d / "model.inp"
    out = export(gpkg, inp, storm_depth_mm=50.8)
    assert out.path == inp.resolve() and out.layers["SUBCATCHMENTS"] > 500
    return gpkg, inp


def _sections(inp: Path) -> dict[str, pd.DataFrame]:
    from swmm_api import SwmmInput

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SwmmInput.read_file(str(inp))
        return {s: m[s].frame for s in ("SUBCATCHMENTS", "OUTFALLS", "JUNCTIONS", "TAGS")}


def _continuity(rpt: str, block: str) -> float:
    part = rpt[rpt.index(block) :]
    return float(re.search(r"Continuity Error \(%\) \.+\s+(-?[\d.]+)", part).group(1))


def test_demo_model_runs_in_swmm(demo_model, tmp_path):
    """EPA SWMM 5.2 (pyswmm) runs the demo's model: no error, runoff reaches the outfalls,
    flow-routing continuity error within +-10 %."""
    pyswmm = pytest.importorskip("pyswmm")
    gpkg, inp = demo_model
    model = tmp_path / "demo.inp"
    model.write_bytes(inp.read_bytes())  # SWMM writes its .rpt/.out beside the model
    inflow: dict[str, float] = {}
    with pyswmm.Simulation(str(model)) as sim:
        outfalls = [n for n in pyswmm.Nodes(sim) if n.is_outfall()]
        for _ in sim:
            pass
        for n in outfalls:
            inflow[n.nodeid] = n.cumulative_inflow
    rpt = model.with_suffix(".rpt").read_text()
    assert "ERROR" not in rpt
    routing = _continuity(rpt, "Flow Routing Continuity")
    assert abs(routing) <= 10.0, routing
    runoff = _continuity(rpt, "Runoff Quantity Continuity")
    assert abs(runoff) <= 10.0, runoff
    # every outfall with an inlet catchment upstream receives water
    ic = gpd.read_file(gpkg, layer="inlet_catchments")
    fed = set(ic["outfall_id"].dropna().astype(str))
    assert fed and fed <= set(inflow)
    assert all(inflow[o] > 0 for o in fed), {o: inflow[o] for o in fed if inflow[o] <= 0}
    outflow = float(re.search(r"External Outflow \.+\s+([\d.]+)", rpt).group(1))
    wet = float(re.search(r"Wet Weather Inflow \.+\s+([\d.]+)", rpt).group(1))
    assert wet > 0 and outflow / wet > 0.5  # most of the storm's runoff leaves by the outfalls


def test_subcatchment_outlets_are_the_inlets_of_the_drainage_table(demo_model, demo_result):
    gpkg, inp = demo_model
    sc = _sections(inp)["SUBCATCHMENTS"]
    ic = gpd.read_file(gpkg, layer="inlet_catchments")
    # one subcatchment per inlet catchment, named after it, draining to that inlet
    ours = sc[sc.index.isin("SC_" + ic["node_id"].astype(str))]
    assert len(ours) == len(ic)
    assert dict(zip(ours.index, ours["outlet"], strict=True)) == {
        f"SC_{n}": n for n in ic["node_id"].astype(str)
    }
    # every inlet the drainage table sends a parcel's share to is a subcatchment's outlet,
    # and that subcatchment's area is the inlet's catchment (hectares, CMS model)
    _ws, res = demo_result
    d = res.drainage
    inlets = set(d.loc[d["target_kind"] == "inlet", "target_id"].astype(str))
    assert inlets and inlets <= set(ours["outlet"])
    area = dict(zip(ic["node_id"].astype(str), ic["area_m2"] / 1e4, strict=True))
    for _name, row in ours.iterrows():
        assert row["area"] == pytest.approx(area[row["outlet"]], rel=1e-4)


def test_ditch_and_water_catchments_drain_where_the_drainage_table_says(demo_model):
    """An open conveyance's catchment drains to the conveyance's downstream node; a water
    reached directly gets an outfall of its own, W_<water id>, at its lowest cell."""
    gpkg, inp = demo_model
    s = _sections(inp)
    sc, ofs = s["SUBCATCHMENTS"], s["OUTFALLS"]
    surf = gpd.read_file(gpkg, layer="surface_catchments")
    cv = gpd.read_file(gpkg, layer="conveyances").set_index("conv_id")
    assert {"conveyance", "water_direct"} <= set(surf["target_kind"])
    for kind, tid in zip(surf["target_kind"], surf["target_id"], strict=True):
        if kind == "conveyance":
            assert sc.loc[f"SC_{tid}", "outlet"] == cv.loc[tid, "to_node"]
        else:
            assert sc.loc[f"SC_W_{tid}", "outlet"] == f"W_{tid}" and f"W_{tid}" in ofs.index
    assert len(sc) == len(surf) + len(gpd.read_file(gpkg, layer="inlet_catchments"))


def test_outfalls_and_defaults_are_marked(demo_model):
    gpkg, inp = demo_model
    text = inp.read_text()
    assert "EPA SWMM model written by ms4map" in text
    assert "NRCS 24-hour Type II, 50.8 mm" in text and "DEFAULT depth" not in text
    tags = _sections(inp)["TAGS"]
    node_tags = tags.loc["Node"]["tag"]
    of = gpd.read_file(gpkg, layer="outfalls")
    for oid, pwl in zip(of["node_id"], of["pwl_id"], strict=True):
        assert f"PWL:{pwl}" in node_tags[oid]
    sub_tags = tags.loc["Subcatch"]["tag"]
    assert all("imperv" in t and "infiltration" in t for t in sub_tags)


def test_round_trip_traces_every_structure_to_the_same_outfall(demo_model):
    """The exported model opened as a workspace traces like the GeoPackage it came from."""
    gpkg, inp = demo_model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ws = open_workspace(inp, crs="EPSG:26918")
        net = build_network(ws)
    back = assign_outfalls(net).set_index("struct_id")["outfall_id"]
    st = gpd.read_file(gpkg, layer="structures")
    st = st[st["struct_id"].notna()].set_index("struct_id")["outfall_id"]
    assert len(st) > 700
    got = back.reindex(st.index)
    differ = st.fillna("-") != got.fillna("-")
    assert not differ.any(), pd.DataFrame({"gpkg": st[differ], "inp": got[differ]}).head()
    assert st.notna().sum() > 690  # the comparison is of real answers, not of blanks


# -- bad input: clear errors, nothing written ---------------------------------------------


@pytest.fixture(scope="module")
def demo_layers(demo_result):
    ws, res = demo_result
    return ws, {**res.layers(), **pipeline.model_layers(res)}


def _write(path: Path, layers: dict, ws) -> Path:
    write_outputs(path, layers, provenance=ws.provenance())
    return path


def test_results_without_network_are_refused(demo_layers, tmp_path):
    ws, layers = demo_layers
    src = _write(tmp_path / "r.gpkg", {k: v for k, v in layers.items() if k != "conveyances"}, ws)
    out = tmp_path / "m.inp"
    with pytest.raises(InputOpenError, match="no conveyances layer.*traced network"):
        export(src, out)
    assert not out.exists()


def test_results_without_inlet_catchments_are_refused(demo_layers, tmp_path):
    ws, layers = demo_layers
    src = _write(
        tmp_path / "r.gpkg", {k: v for k, v in layers.items() if k != "inlet_catchments"}, ws
    )
    out = tmp_path / "m.inp"
    with pytest.raises(InputOpenError, match="no inlet_catchments layer.*inlet catchments"):
        export(src, out)
    assert not out.exists()


def test_geographic_crs_is_refused(demo_layers, tmp_path):
    ws, layers = demo_layers
    geo = {
        k: (v.to_crs(4326) if isinstance(v, gpd.GeoDataFrame) else v)
        for k, v in layers.items()
        if k in ("structures", "conveyances", "outfalls", "inlet_catchments")
    }
    src = _write(tmp_path / "r.gpkg", geo, ws)
    out = tmp_path / "sub" / "m.inp"
    with pytest.raises(DataError, match="geographic CRS"):
        export(src, out)
    assert not out.parent.exists()


def test_output_that_is_an_input_is_refused(demo_layers, tmp_path):
    """A .inp the results were made from (a SWMM workspace) is an input: never written."""
    ws, layers = demo_layers
    model = tmp_path / "town.inp"
    model.write_text("[TITLE]\nthe town's own model, read as the workspace\n")
    prov = ws.provenance()
    prov["inputs"] = {**prov["inputs"], str(model): "0" * 64}
    src = tmp_path / "r.gpkg"
    write_outputs(src, layers, provenance=prov)
    before = model.read_bytes()
    with pytest.raises(UsageError, match="input file 'town.inp'"):
        export(src, model)
    with pytest.raises(UsageError, match="input file"):  # named by the caller
        export(src, tmp_path / "other.inp", protected=[tmp_path / "other.inp"])
    assert model.read_bytes() == before and not (tmp_path / "other.inp").exists()
    # a .inp that ms4map did not write is never replaced either
    theirs = tmp_path / "theirs.inp"
    theirs.write_text("[TITLE]\nmy own model\n")
    with pytest.raises(UsageError, match="did not write it"):
        export(src, theirs)
    assert theirs.read_text() == "[TITLE]\nmy own model\n"


def test_cli_writes_the_model_with_the_storm_depth(demo_model, tmp_path, capsys):
    from ms4map.cli import main

    gpkg, _inp = demo_model
    out = tmp_path / "cli.inp"
    assert main(["export", str(gpkg), "--to", str(out), "--storm-depth", "63.5"]) == 0
    assert "SWMM model ->" in capsys.readouterr().out
    assert "NRCS 24-hour Type II, 63.5 mm" in out.read_text()
    assert main(["export", str(gpkg), "--to", str(out), "--storm-depth", "0"]) != 0
