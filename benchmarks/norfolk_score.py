"""Score ms4map's outfall assignment on Norfolk, VA against the city's own OUTFALL attribute.

Run:  python benchmarks/norfolk_score.py [--gpkg PATH] [--snap-tolerance METRES]
      [--csv trace.csv]

This script alone reads the city's answer (``OUTFALL``); the library never does.

Scoring (issue 3): every outfall ms4map finds is labelled with the city OUTFALL of the
pipes and connector links that end within 5 ft of it (majority).  Then, for each of
the distinct city structure ids (``Structure_``, blank counted as one id, first
occurrence) that carry a city OUTFALL, the structure is *right* (same label),
*wrong* (another label), *unlabelled* (its outfall has no label) or *unassigned*
(no outfall; counted by cause: no conveyance within the lateral tolerance, dead end,
loose end, cycle, read from the method and reason of the row).  The naive baseline of the issue (snap at 5 ft,
inverts else digitised, first sink reached) is computed in the same run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyogrio
import shapely
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

import ms4map
from ms4map.network import (
    DEFAULT_LATERAL_M,
    DEFAULT_SNAP_M,
    DEFAULT_WATER_M,
    assign_outfalls,
    build_network,
    unassigned_cause,
)

HERE = Path(__file__).resolve().parent
DEFAULT_GPKG = HERE.parents[1] / "shared" / "realdata" / "norfolk_va" / "norfolk_stormwater.gpkg"
if not DEFAULT_GPKG.exists():
    DEFAULT_GPKG = Path("/work/shared/realdata/norfolk_va/norfolk_stormwater.gpkg")
LAYERS = {"structures": ["storm_structures"], "conveyances": ["storm_pipes", "connector_links"]}
LABEL_FT = 5.0


def city_truth(gpkg: Path) -> pd.DataFrame:
    """The scored structures: src_fid, Structure_, OUTFALL (distinct ids, blank once)."""
    raw = pyogrio.read_dataframe(
        gpkg, layer="storm_structures", columns=["Structure_", "OUTFALL"], read_geometry=False
    )
    raw["src_fid"] = np.arange(1, len(raw) + 1)
    has = raw[raw["OUTFALL"].notna()]
    return has.drop_duplicates("Structure_", keep="first")


def end_labels(conv: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of every conveyance end and the city OUTFALL of its conveyance."""
    g = conv.geometry.values
    a = shapely.get_coordinates(shapely.get_point(g, 0))
    b = shapely.get_coordinates(shapely.get_point(g, -1))
    lab = conv["OUTFALL"].astype(object).where(conv["OUTFALL"].notna(), None).to_numpy()
    return np.vstack([a, b]), np.r_[lab, lab]


def label_points(xy: np.ndarray, ends: np.ndarray, lab: np.ndarray, tol: float) -> list:
    tree = cKDTree(ends)
    out = []
    for hits in tree.query_ball_point(xy, tol):
        vals = [lab[h] for h in hits if isinstance(lab[h], str)]
        out.append(Counter(vals).most_common(1)[0][0] if vals else None)
    return out


def cause_of(method: str, reason: str) -> str:
    """Cause of an unassigned structure (ms4map.network.unassigned_cause: no conveyance
    within the lateral tolerance, dead end, loose end, cycle)."""
    return unassigned_cause(method, reason)


def score(truth: pd.DataFrame, label_of_fid: dict, *, title: str) -> dict:
    """label_of_fid: src_fid -> city label | "UNLABELLED" | ("UNASSIGNED", method) |
    ("AMBIGUOUS", the candidates' labels).  An ambiguous answer names no outfall: it is
    neither right nor wrong; the figures say how many list only right candidates."""
    res = Counter()
    why = Counter()
    for fid, city in zip(truth["src_fid"], truth["OUTFALL"], strict=True):
        got = label_of_fid.get(int(fid), ("UNASSIGNED", "missing"))
        if isinstance(got, tuple) and got[0] == "AMBIGUOUS":
            res["ambiguous"] += 1
            labs = got[1]
            if labs == {city}:
                res["amb_all_right"] += 1
            elif city not in labs and None not in labs:
                res["amb_none_right"] += 1
        elif isinstance(got, tuple):
            res["unassigned"] += 1
            why[got[1]] += 1
        elif got == "UNLABELLED":
            res["unlabelled"] += 1
        elif got == city:
            res["right"] += 1
        else:
            res["wrong"] += 1
    n = len(truth)
    keys = ("right", "wrong", "unlabelled", "unassigned", "ambiguous")
    pct = {k: 100.0 * res[k] / n for k in (*keys, "amb_all_right", "amb_none_right")}
    print(
        f"{title:<28} n={n}  right {pct['right']:5.1f}%  wrong {pct['wrong']:4.1f}%  "
        f"unlabelled {pct['unlabelled']:4.1f}%  unassigned {pct['unassigned']:4.1f}%  "
        f"({res['right']}/{res['wrong']}/{res['unlabelled']}/{res['unassigned']})"
    )
    if res["ambiguous"]:
        print(
            f"{'':<28} ambiguous {pct['ambiguous']:4.1f}% ({res['ambiguous']}; no outfall "
            f"named, candidates listed): every candidate right {res['amb_all_right']}, "
            f"none right {res['amb_none_right']}; right or ambiguous with every candidate "
            f"right {pct['right'] + pct['amb_all_right']:5.1f}%"
        )
    if why:
        named = {k: v for k, v in why.items()}
        print(f"{'':<28} unassigned by cause: {named}")
    return pct


def label_structures(ws, net, table: pd.DataFrame, ends, lab, *, tol: float = LABEL_FT) -> dict:
    """src_fid -> city label | "UNLABELLED" | ("UNASSIGNED", cause) | ("AMBIGUOUS",
    frozenset of the candidates' labels) for every structure.

    ``table`` is :func:`assign_outfalls` of ``net``: one row per structure of ``ws`` in
    input order, so rows are matched by position (ids may be blank or generated).  Each
    outfall is labelled with the city OUTFALL of the conveyance ends within ``tol``.
    """
    of = net.outfalls[net.outfalls["node_id"].notna()]
    of_xy = shapely.get_coordinates(of.geometry.values)
    of_lab = dict(zip(of.index.astype(str), label_points(of_xy, ends, lab, tol), strict=True))
    fids = ws.layers["structures"]["src_fid"].astype(int).to_numpy()
    label_of_fid: dict = {}
    others = table["other_outfalls"].fillna("").astype(str)
    for fid, oid, meth, why, oth in zip(
        fids, table["outfall_id"], table["method"], table["reason"], others, strict=True
    ):
        if meth == "ambiguous":
            cands = [c for c in oth.split(";") if c]
            label_of_fid[int(fid)] = ("AMBIGUOUS", frozenset(of_lab.get(c) for c in cands))
        elif isinstance(oid, str):
            label_of_fid[int(fid)] = of_lab.get(oid) or "UNLABELLED"
        else:
            label_of_fid[int(fid)] = ("UNASSIGNED", cause_of(meth, why))
    return label_of_fid


def naive(ws, ends, lab, tol_ft: float = 5.0) -> dict:
    """The issue's naive tracer: snap at 5 ft, inverts else digitised, first sink reached."""
    st = ws.layers["structures"]
    cv = ws.layers["conveyances"]
    sxy = shapely.get_coordinates(st.geometry.values)
    ns, L = len(sxy), len(cv)
    d, i = cKDTree(sxy).query(ends, distance_upper_bound=tol_ft)
    node = np.where(np.isfinite(d), i, -1)
    un = np.where(node < 0)[0]
    nj = 0
    jxy = np.zeros((0, 2))
    if len(un):
        pairs = cKDTree(ends[un]).query_pairs(tol_ft, output_type="ndarray")
        m = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(un), len(un)))
        nj, labj = connected_components(m, directed=False)
        node[un] = ns + labj
        jxy = np.zeros((nj, 2))
        jxy[labj] = ends[un]
    nxy = np.vstack([sxy, jxy])
    u, v = node[:L], node[L:]
    ui = cv["us_invert"].to_numpy(float)
    di = cv["ds_invert"].to_numpy(float)
    rev = np.isfinite(ui) & np.isfinite(di) & (di > ui)
    fr, to = np.where(rev, v, u), np.where(rev, u, v)
    down: dict[int, int] = {}
    for x, y in zip(fr, to, strict=True):
        if x != y:
            down.setdefault(int(x), int(y))
    touched = np.zeros(ns + nj, bool)
    touched[u] = True
    touched[v] = True
    sinks = {}
    for j in range(ns):
        if not touched[j]:
            continue
        n, seen = j, set()
        while n in down and n not in seen:
            seen.add(n)
            n = down[n]
        if n not in down:
            sinks[j] = n
    labs = dict(
        zip(
            set(sinks.values()),
            label_points(nxy[list(set(sinks.values()))], ends, lab, LABEL_FT),
            strict=True,
        )
    )
    fids = st["src_fid"].to_numpy()
    out = {}
    for j in range(ns):
        if j in sinks:
            out[int(fids[j])] = labs[sinks[j]] or "UNLABELLED"
        else:
            out[int(fids[j])] = ("UNASSIGNED", "naive")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpkg", type=Path, default=DEFAULT_GPKG)
    p.add_argument("--snap-tolerance", type=float, default=DEFAULT_SNAP_M, help="metres")
    p.add_argument("--water-tolerance", type=float, default=DEFAULT_WATER_M, help="metres")
    p.add_argument("--lateral-tolerance", type=float, default=DEFAULT_LATERAL_M, help="metres")
    p.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    p.add_argument("--misses", type=Path, help="write the structures not right to this CSV")
    p.add_argument(
        "--unassigned", type=Path, help="write every unassigned structure with its cause (CSV)"
    )
    args = p.parse_args(argv)
    if not args.gpkg.exists():
        print(f"Norfolk data not found at {args.gpkg}", file=sys.stderr)
        return 3
    diffs = {
        k: v
        for k, v in (
            ("snap_tolerance_m", (args.snap_tolerance, DEFAULT_SNAP_M)),
            ("water_tolerance_m", (args.water_tolerance, DEFAULT_WATER_M)),
            ("lateral_tolerance_m", (args.lateral_tolerance, DEFAULT_LATERAL_M)),
        )
        if v[0] != v[1]
    }
    print(
        "settings: "
        + (
            "defaults"
            if not diffs
            else ", ".join(f"{k}={a} (default {b})" for k, (a, b) in diffs.items())
        )
    )
    t0 = time.perf_counter()
    ws = ms4map.open_workspace(args.gpkg, layers=LAYERS)
    t1 = time.perf_counter()
    net = build_network(
        ws,
        snap_tolerance_m=args.snap_tolerance,
        water_tolerance_m=args.water_tolerance,
        lateral_tolerance_m=args.lateral_tolerance,
    )
    t2 = time.perf_counter()
    table = assign_outfalls(net)
    t3 = time.perf_counter()
    print(f"open {t1 - t0:.2f} s, build+QA {t2 - t1:.2f} s, assign {t3 - t2:.3f} s; {net}")
    print("orient_method:", net.orient_counts)
    print("QA:", dict(sorted(net.qa.codes().items())))
    truth = city_truth(args.gpkg)
    ends, lab = end_labels(ws.layers["conveyances"])
    tol_units = LABEL_FT  # EPSG:2284 is in US survey feet
    label_of_fid = label_structures(ws, net, table, ends, lab, tol=tol_units)
    st = ws.layers["structures"]
    fid_of = dict(zip(st["struct_id"].astype(str), st["src_fid"].astype(int), strict=True))
    print(f"scored structures: {len(truth)} distinct city ids with an OUTFALL")
    if not args.no_naive:
        score(truth, naive(ws, ends, lab), title="naive baseline (5 ft)")
    score(truth, label_of_fid, title="ms4map")
    print("methods (all structures):", dict(table["method"].value_counts()))
    un = table[table["outfall_id"].isna()]
    causes = Counter(cause_of(m, r) for m, r in zip(un["method"], un["reason"], strict=True))
    print(
        "unassigned (all structures) by cause:",
        {k: v for k, v in causes.most_common()},
    )
    if args.unassigned:
        pd.DataFrame(
            {
                "struct_id": un["struct_id"],
                "cause": [
                    c
                    for c in (
                        cause_of(m, r) for m, r in zip(un["method"], un["reason"], strict=True)
                    )
                ],
                "method": un["method"],
                "reason": un["reason"],
            }
        ).to_csv(args.unassigned, index=False)
    if args.misses:
        rows = []
        by_sid = table.set_index(table["struct_id"].astype(str))
        sid_of = {v: k for k, v in fid_of.items()}
        for fid, city in zip(truth["src_fid"], truth["OUTFALL"], strict=True):
            got = label_of_fid.get(int(fid))
            if got == city:
                continue
            sid = sid_of[int(fid)]
            r = by_sid.loc[sid]
            rows.append(
                {
                    "struct_id": sid,
                    "city": city,
                    "got": got,
                    "outfall_id": r["outfall_id"],
                    "method": r["method"],
                    "reason": r["reason"],
                }
            )
        pd.DataFrame(rows).to_csv(args.misses, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
