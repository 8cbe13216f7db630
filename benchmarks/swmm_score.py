"""Score ms4map's outfall assignment on EPA SWMM models against the models' own links.

Run:  python benchmarks/swmm_score.py [MODEL.inp ...] [--crs EPSG:2284] [--no-inverts]

Default models: ../shared/realdata/norfolk_va/*.inp (Norfolk, VA: Brambleton and Hague;
exit 3 when none is there).  Each model is opened as a workspace (``open_workspace(path,
crs=...)``), its network built and its outfalls assigned.

The truth is read independently of ms4map's network code: the model's links (conduits,
orifices, weirs, pumps, outlets) parsed by swmm-api, taken from-node -> to-node as a
directed graph (networkx), and for every node the set of [OUTFALLS] it reaches along
them (an outfall reaches itself).  Of the nodes that reach an outfall, a node is *right*
when ms4map's ``outfall_id`` is one of those outfalls, *wrong* when it names another,
*unassigned* when it names none.  The issue's target (27): right >= 99%, wrong = 0.

Also printed: ms4map's ``orient_method`` counts, the QA codes of the build, the links
ms4map turned against the model's from -> to, the links whose inverts run uphill from
-> to (adverse), and the timings.  ``--no-inverts`` blanks every invert first (the
ids-only run the issue compares with).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
from swmm_api import SwmmInput

from ms4map.io import open_workspace
from ms4map.network import assign_outfalls, build_network

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "realdata" / "norfolk_va"
if not DATA.exists():
    DATA = Path("/work/shared/realdata/norfolk_va")
LINKS = ("CONDUITS", "ORIFICES", "WEIRS", "PUMPS", "OUTLETS")
NODES = ("JUNCTIONS", "OUTFALLS", "STORAGE", "DIVIDERS")


def model_truth(path: Path) -> tuple[dict[str, set[str]], pd.DataFrame]:
    """Node -> the outfalls it reaches along the model's links from -> to; and the links
    (``name, from_node, to_node``)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    keep, cur = [], None
    for line in text.splitlines():  # only the sections read (swmm-api trips on some OPTIONS)
        s = line.strip()
        if s.startswith("["):
            cur = s.strip("[]").upper()
        if cur in LINKS + NODES:
            keep.append(line)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inp = SwmmInput.read_text("\n".join(keep))
        links = pd.concat(
            [inp[s].frame[["from_node", "to_node"]] for s in LINKS if s in inp],
            axis=0,
        )
        nodes = [str(n) for s in NODES if s in inp for n in inp[s].frame.index]
        outfalls = {str(n) for n in inp["OUTFALLS"].frame.index} if "OUTFALLS" in inp else set()
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(zip(links["from_node"].astype(str), links["to_node"].astype(str), strict=True))
    reach: dict[str, set[str]] = {}
    for n in nodes:
        down = nx.descendants(g, n) | {n}
        reach[n] = down & outfalls
    links = links.rename_axis("name").reset_index()
    links["name"] = links["name"].astype(str)
    return reach, links


def score(path: Path, crs: str, *, no_inverts: bool) -> dict:
    """Open, build, assign, compare with the truth; the figures of one model."""
    t0 = time.perf_counter()
    reach, links = model_truth(path)
    t_truth = time.perf_counter() - t0
    t0 = time.perf_counter()
    ws = open_workspace(path, crs=crs)
    t_open = time.perf_counter() - t0
    if no_inverts:
        for role, cols in (
            ("conveyances", ("us_invert", "ds_invert")),
            ("structures", ("invert_elev", "rim_elev")),
        ):
            for c in cols:
                ws.layers[role][c] = np.nan
    t0 = time.perf_counter()
    net = build_network(ws)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = assign_outfalls(net)
    t_assign = time.perf_counter() - t0
    named = dict(zip(table["struct_id"].astype(str), table["outfall_id"], strict=True))
    right = wrong = unassigned = 0
    wrong_ids: list[str] = []
    for node, outs in reach.items():
        if not outs:
            continue
        got = named.get(node)
        if got is None or pd.isna(got):
            unassigned += 1
        elif got in outs:
            right += 1
        else:
            wrong += 1
            wrong_ids.append(node)
    e = net.edges
    model_dir = dict(
        zip(links["name"], zip(links["from_node"], links["to_node"], strict=True), strict=True)
    )
    turned = sum(
        1
        for cid, a, b in zip(e["conv_id"], e["from_node"], e["to_node"], strict=True)
        if cid in model_dir and (a, b) == (model_dir[cid][1], model_dir[cid][0])
    )
    cv = ws.conveyances
    adverse = int((cv["us_invert"] < cv["ds_invert"]).sum())
    reaching = right + wrong + unassigned
    return {
        "model": path.name,
        "nodes": len(reach),
        "reach": reaching,
        "right": right,
        "wrong": wrong,
        "unassigned": unassigned,
        "wrong_ids": wrong_ids,
        "links": len(links),
        "adverse": adverse,
        "turned": turned,
        "orient": Counter(e["orient_method"].astype(str)),
        "methods": Counter(table["method"].astype(str)),
        "qa": net.qa.codes() + ws.qa.codes(),
        "times": (t_truth, t_open, t_build, t_assign),
    }


def _pct(k: int, n: int) -> str:
    return f"{k} ({100.0 * k / n:.1f}%)" if n else f"{k}"


def report(r: dict) -> None:
    n = r["reach"]
    print(f"== {r['model']}")
    print(
        f"  nodes {r['nodes']}, links {r['links']}; nodes that reach an outfall along the model's links: {n}"
    )
    print(
        f"  right {_pct(r['right'], n)}, wrong {_pct(r['wrong'], n)}, unassigned {_pct(r['unassigned'], n)}"
    )
    if r["wrong_ids"]:
        print(f"  wrong: {', '.join(r['wrong_ids'][:20])}")
    print(
        f"  links adverse by their inverts (us < ds): {r['adverse']}; edges ms4map turned against the model's from -> to: {r['turned']}"
    )
    print(f"  orient_method: {dict(r['orient'].most_common())}")
    print(f"  assign method: {dict(r['methods'].most_common())}")
    print(f"  QA codes: {dict(r['qa'].most_common())}")
    tt, to, tb, ta = r["times"]
    print(f"  time: truth {tt:.2f}s, open {to:.2f}s, build {tb:.2f}s, assign {ta:.2f}s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "models", nargs="*", type=Path, help="default: ../shared/realdata/norfolk_va/*.inp"
    )
    ap.add_argument("--crs", default="EPSG:2284", help="the models' CRS (default %(default)s)")
    ap.add_argument("--no-inverts", action="store_true", help="blank every invert first")
    args = ap.parse_args(argv)
    models = args.models or sorted(DATA.glob("*.inp"))
    missing = [p for p in models if not p.exists()]
    if not models or missing:
        print(f"swmm_score: no model at {missing or DATA / '*.inp'}", file=sys.stderr)
        return 3
    ok = True
    for p in models:
        r = score(p, args.crs, no_inverts=args.no_inverts)
        report(r)
        ok &= r["wrong"] == 0 and r["right"] >= 0.99 * r["reach"]
    print(f"target (right >= 99%, wrong = 0): {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
