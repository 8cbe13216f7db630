"""SWMM models out (issue 33): the designed three-inlet street gives the hand-worked
subcatchments (``terrains.three_inlet_street``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import shapely
from terrains import THREE_INLET_CATCHMENTS, three_inlet_workspace
from test_hydrology_overland_fixtures import CELL, cell_box

from ms4map import pipeline
from ms4map.io import write_outputs
from ms4map.outputs import export


@pytest.fixture(scope="module")
def street_gpkg(tmp_path_factory):
    """The street's results GeoPackage, as ``ms4map drainage`` writes it."""
    pipeline.clear_cache()
    ws = three_inlet_workspace()
    res = pipeline.run(ws)
    src = tmp_path_factory.mktemp("street_src") / "street.gpkg"
    write_outputs(src, {**res.layers(), **pipeline.model_layers(res)}, provenance=ws.provenance())
    return src


@pytest.fixture(scope="module")
def street_model(street_gpkg, tmp_path_factory):
    out = tmp_path_factory.mktemp("street") / "street.inp"
    export(street_gpkg, out, storm_depth_mm=25.4)
    from swmm_api import SwmmInput

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SwmmInput.read_file(str(out))


def test_three_subcatchments_match_the_hand_worked_catchments(street_model):
    sc = street_model["SUBCATCHMENTS"].frame
    assert dict(zip(sc.index, sc["outlet"], strict=True)) == {"SC_A": "A", "SC_B": "B", "SC_C": "C"}
    polys = street_model["POLYGONS"]
    for inlet, box in THREE_INLET_CATCHMENTS.items():
        hand = cell_box(*box)
        got = shapely.Polygon(polys[f"SC_{inlet}"].polygon)
        # within one cell per edge: bounds at most a cell off, area off by at most a cell
        # strip along the outline
        assert np.allclose(got.bounds, hand.bounds, atol=CELL), (inlet, got.bounds, hand.bounds)
        tol = hand.length * CELL
        assert abs(got.area - hand.area) <= tol
        assert got.symmetric_difference(hand).area <= tol
        area_ha = float(sc.loc[f"SC_{inlet}", "area"])
        assert abs(area_ha * 1e4 - hand.area) <= tol, (inlet, area_ha * 1e4, hand.area)


def test_street_subcatchments_take_their_values_from_the_tables(street_model):
    sc = street_model["SUBCATCHMENTS"].frame
    # by hand: rows 0-19 one-family (30 %), rows 20-26 street (60 %), rows 27-39 commercial
    # building 484 -> the commercial 400s (85 %)
    hand = (20 * 30 + 7 * 60 + 13 * 85) / 40
    for name in sc.index:
        assert float(sc.loc[name, "imperviousness"]) == pytest.approx(hand, abs=1.5)
        assert float(sc.loc[name, "slope"]) > 1.0  # lots at 3 %, street and gutter lower
    n = street_model["CONDUITS"].frame["roughness"].to_dict()
    assert n == {"P1": 0.013, "P2": 0.012, "P3": 0.013}  # RCP, HDPE (smooth-lined)


def test_storage_and_defaults_are_written_and_tagged(street_gpkg):
    """A ``bmp`` structure becomes a storage unit; every value that is not data is tagged:
    a rim taken from the DEM, a node depth, a storage area, a material not in the table,
    a missing diameter, the storm depth when none is given."""
    import geopandas as gpd

    from ms4map.outputs.swmm_out import build_model

    layers = {
        n: gpd.read_file(street_gpkg, layer=n)
        for n in ("structures", "conveyances", "outfalls", "inlet_catchments")
    }
    st, cv = layers["structures"], layers["conveyances"]
    st.loc[st["node_id"] == "B", "kind"] = "bmp"
    st.loc[st["node_id"] == "C", "ground_elev"] = np.nan  # no rim, no DEM: a default depth
    cv.loc[cv["conv_id"] == "P2", "material"] = "unobtainium"
    cv.loc[cv["conv_id"] == "P3", "diameter_in"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp, counts, _notes = build_model(layers)
    assert counts["STORAGE"] == 1 and list(inp["STORAGE"]) == ["B"]
    tags = {k[1]: v.tag for k, v in inp["TAGS"].items()}
    assert tags["A"] == "DEFAULT:rim"  # the rim is the DEM's ground
    assert tags["B"] == "DEFAULT:rim,storage_area"
    assert tags["C"] == "DEFAULT:depth"
    assert float(inp["JUNCTIONS"]["C"].depth_max) == pytest.approx(1.5)
    assert "P1" not in tags  # RCP, 15 in, both inverts: all data
    assert tags["P2"] == "DEFAULT:n" and inp["CONDUITS"]["P2"].roughness == 0.013
    assert tags["P3"] == "DEFAULT:diameter"
    assert float(inp["XSECTIONS"]["P3"].height) == pytest.approx(0.305)
    assert tags["RG1"] == "DEFAULT:storm_depth"


def test_outfall_entered_by_two_pipes_gets_a_junction_and_runs(street_gpkg, tmp_path):
    """SWMM allows one link at an outfall (its ERROR 141): where two conveyances enter
    one, they meet at a junction ``OF1_J`` joined to the outfall, and the model runs."""
    import geopandas as gpd
    import pandas as pd

    from ms4map.outputs.swmm_out import build_model

    layers = {
        n: gpd.read_file(street_gpkg, layer=n)
        for n in ("structures", "conveyances", "outfalls", "inlet_catchments")
    }
    cv = layers["conveyances"]
    extra = cv[cv["conv_id"] == "P1"].copy()
    extra[["link_id", "conv_id", "to_node"]] = ["P4", "P4", "OF1"]
    st = layers["structures"].set_index("node_id")
    extra["geometry"] = [shapely.LineString([st.geometry["A"], st.geometry["OF1"]])]
    layers["conveyances"] = gpd.GeoDataFrame(pd.concat([cv, extra], ignore_index=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp, _counts, _notes = build_model(layers)
    conduits = inp["CONDUITS"]
    assert conduits["P3"].to_node == "OF1_J" and conduits["P4"].to_node == "OF1_J"
    assert (conduits["OF1_J"].from_node, conduits["OF1_J"].to_node) == ("OF1_J", "OF1")
    assert list(inp["OUTFALLS"]) == ["OF1"]
    pyswmm = pytest.importorskip("pyswmm")
    model = tmp_path / "two_in.inp"
    inp.write_file(str(model))
    with pyswmm.Simulation(str(model)) as sim:
        outfall = pyswmm.Nodes(sim)["OF1"]
        for _ in sim:
            pass
        inflow = outfall.cumulative_inflow
    assert "ERROR" not in model.with_suffix(".rpt").read_text()
    assert inflow > 0


def test_a_foot_crs_gives_a_cfs_model_with_the_crs_coordinates(street_gpkg):
    """In a CRS in US survey feet the model is CFS (feet, acres) and its map coordinates
    are the CRS's own, not rescaled."""
    import geopandas as gpd

    from ms4map.outputs.swmm_out import build_model

    layers = {
        n: gpd.read_file(street_gpkg, layer=n).to_crs(2263)  # NY Long Island, US feet
        for n in ("structures", "conveyances", "outfalls", "inlet_catchments")
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp, _counts, _notes = build_model(layers)
    assert inp["OPTIONS"]["FLOW_UNITS"] == "CFS"
    st = layers["structures"].set_index("node_id")
    c = inp["COORDINATES"]["A"]
    assert (c.x, c.y) == pytest.approx((st.geometry["A"].x, st.geometry["A"].y), abs=1e-3)
    ic = layers["inlet_catchments"].set_index("node_id")
    acres = float(inp["SUBCATCHMENTS"]["SC_A"].area)
    assert acres == pytest.approx(ic.loc["A", "area_m2"] / 4046.8564224, rel=1e-4)
    # the pipe's diameter in feet: 15 in
    assert float(inp["XSECTIONS"]["P1"].height) == pytest.approx(1.25, abs=1e-3)


def test_impervious_raster_replaces_the_class_table(street_gpkg, tmp_path):
    """``--impervious RASTER``: each subcatchment takes the raster's mean over its cells
    (data, so not tagged DEFAULT:imperv); the raster is an input, never the output."""
    import rasterio
    from test_hydrology_overland_fixtures import CRS18, TR

    from ms4map.core.errors import UsageError

    pct = np.where(np.arange(40)[:, None] < 20, 20.0, 70.0) * np.ones((40, 150))
    tif = tmp_path / "imperv.tif"
    with rasterio.open(
        tif, "w", driver="GTiff", height=40, width=150, count=1, dtype="float32",
        crs=CRS18.to_wkt(), transform=TR, nodata=-1,
    ) as dst:  # fmt: skip
        dst.write(pct.astype("float32"), 1)
    out = tmp_path / "imperv.inp"
    export(street_gpkg, out, impervious=tif)
    from swmm_api import SwmmInput

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SwmmInput.read_file(str(out))
    # by hand: rows 0-19 at 20 %, rows 20-39 at 70 %: every catchment spans all 40 rows
    for name in ("SC_A", "SC_B", "SC_C"):
        assert float(m["SUBCATCHMENTS"][name].imperviousness) == pytest.approx(45.0, abs=1.0)
        assert "imperv" not in m["TAGS"][("Subcatch", name)].tag.split("DEFAULT:")[1].split(",")
    with pytest.raises(UsageError, match="input file"):
        export(street_gpkg, tif.with_suffix(".inp"), impervious=tif.with_suffix(".inp"))


def test_a_grid_too_large_for_flow_lengths_gets_the_square_root_width(monkeypatch, tmp_path):
    """Over ``MAX_FLOW_CELLS`` no D8 flow length is computed: the width is the square
    root of the area, tagged ``DEFAULT:...width``."""
    import importlib

    ml = importlib.import_module("ms4map.pipeline.model_layers")  # the module, not the door's
    monkeypatch.setattr(ml, "MAX_FLOW_CELLS", 10)
    pipeline.clear_cache()
    ws = three_inlet_workspace()
    layers = ml.model_layers(pipeline.run(ws))
    ic = layers["inlet_catchments"]
    assert ic["flow_length_m"].isna().all() and ic["slope_pct"].notna().all()
    src = tmp_path / "big.gpkg"
    write_outputs(src, {**pipeline.run(ws).layers(), **layers}, provenance=ws.provenance())
    out = tmp_path / "big.inp"
    export(src, out)
    from swmm_api import SwmmInput

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SwmmInput.read_file(str(out))
    sc = m["SUBCATCHMENTS"]["SC_B"]
    assert float(sc.width) == pytest.approx(np.sqrt(float(sc.area) * 1e4), rel=1e-3)
    assert "width" in m["TAGS"][("Subcatch", "SC_B")].tag
