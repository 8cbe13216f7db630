"""Ambiguous storm-network paths built by hand, shared by the tests of what lies downstream.

The network contract of issue 27 part 2: a structure or conveyance whose outfall the
evidence cannot decide has ``method == "ambiguous"``, no ``outfall_id`` and its candidates
``;``-joined in ``other_outfalls``.  Until the network code gives that answer itself, these
builders turn the real answer of a real Y network (a split told apart only by input order:
``split``) into it, so the drainage join, the rules and the outputs can be tested on it.
"""

from __future__ import annotations

import pandas as pd
import pytest
from network_builders import far_water, network_workspace

from ms4map.network import assign_outfalls, build_network, edge_outfalls

#: The Y: inlet A -> manhole S, where two equal pipes N and SO leave for outfalls O1 and O2.
Y_STRUCTURES = [
    ("A", "inlet", 0, 0),
    ("S", "manhole", 100, 0),
    ("O1", "outfall", 200, 50),
    ("O2", "outfall", 200, -50),
]
Y_CONVEYANCES = [
    {"conv_id": "in", "coords": [(0, 0), (100, 0)], "us_invert": 10.0, "ds_invert": 9.0},
    {"conv_id": "N", "coords": [(100, 0), (200, 50)], "us_invert": 9.0, "ds_invert": 8.0},
    {"conv_id": "SO", "coords": [(100, 0), (200, -50)], "us_invert": 9.0, "ds_invert": 8.0},
]


def y_network(
    waters: dict[str, tuple[str | None, str | None]] | None = None, *, sized: bool = False
):
    """The Y network built by ``build_network``; ``waters`` sets the outfalls'
    ``(receiving_water, pwl_id)`` (default: O1 to Test Creek, O2 to Mill Brook).
    ``sized``: pipe N is 30 in and SO 12 in, so the sizes tell the branches apart (a
    ``split`` with main outfall O1, not an ambiguous one)."""
    waters = waters or {"O1": ("Test Creek", "1302-0001"), "O2": ("Mill Brook", "1302-0002")}
    conv = [dict(c) for c in Y_CONVEYANCES]
    if sized:
        conv[1]["diameter_in"], conv[2]["diameter_in"] = 30.0, 12.0
    net = build_network(network_workspace(Y_STRUCTURES, conv, waterbodies=far_water()))
    for of, (name, pwl) in waters.items():
        net.outfalls.loc[of, "receiving_water"] = name
        net.outfalls.loc[of, "pwl_id"] = pwl
    return net


#: The Y with nothing to orient the two branches (no inverts, ids only on the first
#: pipe): the network's own ``ambiguous`` answer once it gives one (issue 27).
BARE_Y_CONVEYANCES = [
    {"conv_id": "in", "coords": [(0, 0), (100, 0)], "from_id": "A", "to_id": "S"},
    {"conv_id": "N", "coords": [(100, 0), (200, 50)]},
    {"conv_id": "SO", "coords": [(100, 0), (200, -50)]},
]


def bare_y_network(waters: dict[str, tuple[str | None, str | None]] | None = None):
    """The Y of :data:`BARE_Y_CONVEYANCES` built by ``build_network``, ``waters`` as in
    :func:`y_network`; skips the test while the network does not call it ambiguous."""
    waters = waters or {"O1": ("Test Creek", "1302-0001"), "O2": ("Mill Brook", "1302-0002")}
    ws = network_workspace(Y_STRUCTURES, BARE_Y_CONVEYANCES, waterbodies=far_water())
    net = build_network(ws)
    if (assign_outfalls(net)["method"] != "ambiguous").all():
        pytest.skip("the network does not give the ambiguous answer yet (issue 27)")
    for of, (name, pwl) in waters.items():
        net.outfalls.loc[of, "receiving_water"] = name
        net.outfalls.loc[of, "pwl_id"] = pwl
    return net


def as_ambiguous(table: pd.DataFrame, where: str) -> pd.DataFrame:
    """``table`` (``assign_outfalls`` or ``edge_outfalls``) with its ``split`` rows turned
    into the ``ambiguous`` answer: no outfall, every outfall reached as candidates."""
    out = table.copy()
    split = out["method"] == "split"
    for i in out.index[split]:
        ids = sorted({out.at[i, "outfall_id"], *str(out.at[i, "other_outfalls"]).split(";")})
        ids = [x for x in ids if x]
        out.at[i, "other_outfalls"] = ";".join(ids)
        out.at[i, "outfall_id"] = None
        out.at[i, "method"] = "ambiguous"
        out.at[i, "reason"] = (
            f"the evidence cannot tell which way flow leaves {where}: {' or '.join(ids)}"
        )
    return out


def ambiguous_assign(net) -> pd.DataFrame:
    """``assign_outfalls(net)`` with the split at S ambiguous."""
    return as_ambiguous(assign_outfalls(net), "S")


def ambiguous_edges(net) -> pd.DataFrame:
    """``edge_outfalls(net)`` with the split at S ambiguous."""
    return as_ambiguous(edge_outfalls(net), "S")


def patch_network(monkeypatch) -> None:
    """Make ``ms4map.drainage.join`` read the ambiguous answer of the network."""
    monkeypatch.setattr("ms4map.drainage.join.assign_outfalls", ambiguous_assign)
    monkeypatch.setattr("ms4map.drainage.join.edge_outfalls", ambiguous_edges)


def inlet_rows(*targets: tuple[str, str, float]) -> pd.DataFrame:
    """Drainage rows before the join: ``(parcel_id, inlet id, fraction)``."""
    return pd.DataFrame(
        [
            {
                "parcel_id": pid,
                "target_kind": "inlet",
                "target_id": node,
                "fraction": fr,
                "method": "d8_catchment",
                "reason": f"surface flow reaches inlet {node}",
                "receiving_water": None,
                "pwl_id": None,
            }
            for pid, node, fr in targets
        ]
    )
