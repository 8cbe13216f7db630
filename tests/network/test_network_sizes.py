"""Pipe sizes as the weakest evidence of direction, and a trunk's open end as a way out (issue 27).

The designed system (metres, no ids, no inverts; some lines drawn against the flow):

    T ===72"=== J1 ===72"=== J2 --15"-- H (headwall)
                |            |
               15"          15"
                |            |
                C1           C2

Hand-worked: each 15" branch meets a 72" pipe at one end only, so it flows into the
trunk (``pipe_sizes``). The 15" line J2-H meets the 72" at J2: its size says H -> J2,
so the search reaches H from J2 only by overruling it (one PENALTY_UNIT), while T is
the open end of the piece's largest pipe, 72" >= 2 x 15" at the piece's only real
outlet: a trunk end, reached at TRUNK_COST (half a unit, as length). So J2 and J1 go
to T; the line J2-H then runs into H (an outlet pipe), J2 splits, and the main branch
is the larger pipe: T. Without the sizes, H is the only real outlet and wins.
"""

from __future__ import annotations

import numpy as np
from network_builders import by_id
from network_builders import network_workspace as _ws

from ms4map.network import assign_outfalls, build_network
from ms4map.network.orient import size_evidence

STRUCTURES = [
    ("T", "junction", 0, 0),
    ("J1", "manhole", 100, 0),
    ("J2", "manhole", 200, 0),
    ("H", "headwall", 260, 0),
    ("C1", "catch_basin", 100, 50),
    ("C2", "catch_basin", 200, 50),
]


def _lines(sizes: bool) -> list[dict]:
    rows = [
        ("t1", [(100, 0), (0, 0)], 72),  # drawn towards T
        ("t2", [(100, 0), (200, 0)], 72),  # drawn away from T
        ("b1", [(100, 0), (100, 50)], 15),  # drawn against the flow
        ("b2", [(200, 50), (200, 0)], 15),
        ("h", [(260, 0), (200, 0)], 15),  # drawn from the headwall
    ]
    return [
        {"conv_id": c, "coords": xy, **({"diameter_in": d} if sizes else {})} for c, xy, d in rows
    ]


def test_size_evidence_points_a_branch_into_the_larger_pipe() -> None:
    # lines: 0: a-b 12", 1: b-c 36", 2: c-d 36" (nodes 0..3)
    na, nb = np.array([0, 1, 2]), np.array([1, 2, 3])
    got = size_evidence(na, nb, np.array([12.0, 36.0, 36.0]), n_nodes=4)
    assert got.tolist() == [1, 0, 0]  # only the branch says anything
    got = size_evidence(nb, na, np.array([12.0, np.nan, 36.0]), n_nodes=4)
    assert got.tolist() == [0, 0, 0]  # an unknown size says nothing
    got = size_evidence(na, nb, np.array([36.0, 37.0, 12.0]), n_nodes=4)
    assert got.tolist() == [0, 0, -1]  # 37 is not larger than 36 by 5 %; 12 -> 37


def test_the_trunk_end_is_the_way_out_not_the_small_headwall() -> None:
    net = build_network(_ws(STRUCTURES, _lines(sizes=True)))
    t = by_id(assign_outfalls(net))
    assert {s: t.loc[s, "outfall_id"] for s in ("C1", "J1", "C2", "J2")} == dict.fromkeys(
        ("C1", "J1", "C2", "J2"), "T"
    )
    assert t.loc["J2", "method"] == "split" and "H" in str(t.loc["J2", "other_outfalls"])
    e = net.edges.set_index("conv_id")
    assert e.loc["b1", "orient_method"] == "pipe_sizes" == e.loc["b2", "orient_method"]
    # the outlet pipe runs into the headwall; its size is what was overruled
    h = e.loc["h"]
    assert (h["from_node"], h["to_node"]) == ("J2", "H")
    assert h["orient_overruled"] == "pipe_sizes"
    assert bool(net.outfalls.loc["T", "guessed"])


def test_without_sizes_the_headwall_takes_the_system() -> None:
    t = by_id(assign_outfalls(build_network(_ws(STRUCTURES, _lines(sizes=False)))))
    assert {t.loc[s, "outfall_id"] for s in ("C1", "J1", "C2", "J2")} == {"H"}
