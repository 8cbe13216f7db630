"""Issue 28 item 16 (input parts): outfalls inferred from line ends are marked as guesses
(``guessed`` in the network's outfalls, ``guessed``/``found_by`` in the inventory), and
``ms4map drainage`` writes the parcels with their answer as a styled layer
(``parcel_drainage_map``), which ``parcel_drainage`` (a table) is not."""

from __future__ import annotations

from types import SimpleNamespace

import pyogrio

from ms4map import open_workspace
from ms4map.analysis import outfall_inventory
from ms4map.cli import main
from ms4map.io.styles import read_layer_styles
from ms4map.network import build_network


def test_outfalls_inferred_from_line_ends_are_guesses(demo_copy):
    # an uploaded network without its outfalls layer (and no waters to check against)
    ws = open_workspace(demo_copy, roles=["parcels", "structures", "conveyances"])
    net = build_network(ws)
    guessed = net.outfalls["guessed"].astype(bool)
    structure = net.outfalls["method"] == "outfall_structure"
    # outfall structures are outfalls; the rest is inferred at the ends of the lines
    assert (net.outfalls.loc[~structure, "method"] == "terminal_loose_end").any()
    assert (guessed == ~structure).all()
    inv = outfall_inventory(ws, SimpleNamespace(network=net, sewersheds=None, drainage=None))
    assert len(inv) == len(net.outfalls)
    loose = inv[inv["guessed"]]
    assert len(loose) == (~structure).sum()
    assert set(loose["found_by"]) == {"guessed: a loose pipe end"}
    assert set(inv.loc[~inv["guessed"], "found_by"]) <= {"outfall structure"}


def test_outfalls_of_the_outfalls_layer_are_not_guesses(demo_copy):
    ws = open_workspace(demo_copy)
    net = build_network(ws)
    mapped = net.outfalls["method"] == "outfalls_layer"
    assert mapped.any()
    assert not net.outfalls.loc[mapped, "guessed"].astype(bool).any()
    inv = outfall_inventory(ws, SimpleNamespace(network=net, sewersheds=None, drainage=None))
    assert set(inv["found_by"]) == {"outfalls layer"} and not inv["guessed"].any()


def test_drainage_writes_the_parcels_with_their_answer_as_a_styled_layer(demo_copy, tmp_path):
    out = tmp_path / "drainage.gpkg"
    assert main(["drainage", str(demo_copy), "--out", str(out), "--quiet"]) == 0
    layers = dict(pyogrio.list_layers(out))
    assert layers["parcel_drainage"] is None  # the table: no geometry
    assert layers["parcel_drainage_map"] in ("Polygon", "MultiPolygon")
    m = pyogrio.read_dataframe(out, layer="parcel_drainage_map")
    table = pyogrio.read_dataframe(out, layer="parcel_drainage")
    assert len(m) == m["parcel_id"].nunique() == len(open_workspace(demo_copy).layers["parcels"])
    assert set(table["parcel_id"]) <= set(m["parcel_id"])
    # its answer is the table's: the largest share's target and the shares by kind
    one = table[table["parcel_id"] == m["parcel_id"].iloc[0]]
    row = m.iloc[0]
    assert row["target_kind"] == one.sort_values("fraction").iloc[-1]["target_kind"]
    ms4 = one.loc[one["target_kind"].isin(["inlet", "conveyance"]), "fraction"].sum()
    assert abs(row["ms4_fraction"] - ms4) < 1e-3
    styles = {s["f_table_name"] for s in read_layer_styles(out)}
    assert "parcel_drainage_map" in styles
