"""Score ms4map on hard variants of the real Norfolk network (the real-data checks of issue 27).

Run:  python benchmarks/norfolk_variants.py [--gpkg PATH] [--variants NAME,NAME]
      [--seed N] [--misses DIR]

Each variant is built from the city's layers (``LAYERS`` of ``norfolk_score.py``),
written as a GeoPackage to a temporary folder (never into the repository), opened with
``ms4map.open_workspace`` and scored exactly as ``benchmarks/norfolk_score.py`` scores
the data as given.  The city's answers (``OUTFALL`` on structures and conveyance ends,
the structure ids ``Structure_`` of the distinct-id count) are read from the original
file and kept in memory; structures are matched by row order (``src_fid``), which every
variant keeps.  The variant files carry no answer column
(:data:`ms4map.core.schema.ANSWER_COLUMNS`).  Source columns are found through
:data:`ms4map.io.aliases.ALIASES`, the names ms4map itself reads.

Variants (``--variants``, default all; random choices use ``--seed``, default 27):

- ``as-given``: the original file, as ``norfolk_score.py`` reads it.
- ``geometry-only``: structures keep their point and type code (the column ms4map
  reads as ``kind``) and nothing else (no ids, rims, inverts); pipes and connector
  links keep only their line, half of each layer reversed at random.
- ``geometry-sizes``: as ``geometry-only``, the pipes keeping their diameter.
- ``inverts-swapped``: as given, the two inverts swapped on a random 10 % of the
  conveyances (pipes and connector links) that have both inverts.
- ``inverts-removed``: as given without any invert or elevation column (ids kept).
- ``ids-removed``: as given without the conveyances' from/to structure ids (and the
  city's second copy of them, ``Upstream_1`` / ``Downstre_3``); inverts kept.

One row of figures per variant (right / wrong / unlabelled / unassigned, orientation
rules, QA codes, time), the wrong answers by assignment method and by the orientation
rules on their downstream path, and a final table with the issue's targets.  The table
also counts the right structures whose outfall is the one the same structure reaches in
the as-given run ("same end"): the score labels any end by the city OUTFALL of the lines
there, so a trace that ends elsewhere inside the right system counts as right; "same
end" does not (it measures agreement with the as-given run, not truth).  Exit
status 3 when the data is missing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import shapely
from norfolk_score import (
    DEFAULT_GPKG,
    LABEL_FT,
    LAYERS,
    city_truth,
    end_labels,
    label_structures,
    score,
)

import ms4map
from ms4map.core.schema import ANSWER_COLUMNS
from ms4map.io.aliases import ALIASES
from ms4map.network import assign_outfalls, build_network, trace_downstream

TITLES = {
    "as-given": "as given",
    "geometry-only": "geometry only",
    "geometry-sizes": "geometry + sizes",
    "inverts-swapped": "10% inverts swapped",
    "inverts-removed": "inverts removed",
    "ids-removed": "ids removed",
}
ROLE_OF = {name: role for role, names in LAYERS.items() for name in names}
ELEVATIONS = {"structures": ("rim_elev", "invert_elev"), "conveyances": ("us_invert", "ds_invert")}
# Norfolk's pipes repeat the from/to ids in two columns ms4map does not read.
ID_COPIES = {"storm_pipes": ("Upstream_1", "Downstre_3")}
SWAP_SHARE = 0.10
Layers = dict[str, gpd.GeoDataFrame]


@dataclass
class Result:
    """Figures of one variant."""

    name: str
    n: int
    pct: dict[str, float]
    counts: dict[str, int]
    seconds: float
    outfalls: int = 0
    right_ends: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------
# building the variants
# ------------------------------------------------------------------------------------------
def alias_columns(df: pd.DataFrame, role: str, canon: tuple[str, ...]) -> list[str]:
    """Source columns of ``df`` that ms4map reads as any of the canonical ``canon``,
    in ALIASES order (the first one is the column ms4map uses)."""
    by_lower = {c.lower(): c for c in df.columns if c != df.geometry.name}
    out: list[str] = []
    for c in canon:
        for a in ALIASES[role][c]:
            hit = by_lower.get(a.lower())
            if hit is not None and hit not in out:
                out.append(hit)
    return out


def without(df: gpd.GeoDataFrame, cols: list[str] | tuple[str, ...]) -> gpd.GeoDataFrame:
    """``df`` without the columns ``cols`` (case-insensitive; absent ones ignored)."""
    drop = {c.lower() for c in cols}
    return df[[c for c in df.columns if c.lower() not in drop or c == df.geometry.name]]


def reversed_line(g: shapely.Geometry) -> shapely.Geometry:
    """The line drawn the other way (a multi-line: its parts in reverse order, each reversed)."""
    if g is not None and g.geom_type == "MultiLineString":
        return shapely.MultiLineString([shapely.reverse(p) for p in reversed(g.geoms)])
    return shapely.reverse(g)


def reverse_half(df: gpd.GeoDataFrame, rng: np.random.Generator) -> tuple[gpd.GeoDataFrame, int]:
    """``df`` with half of its lines (chosen by ``rng``) reversed; and how many."""
    idx = rng.choice(len(df), size=len(df) // 2, replace=False)
    geoms = df.geometry.to_numpy().copy()
    geoms[idx] = [reversed_line(g) for g in geoms[idx]]
    out = df.copy()
    out[df.geometry.name] = gpd.GeoSeries(geoms, index=df.index, crs=df.crs)
    return out, len(idx)


def geometry_only(src: Layers, rng: np.random.Generator, *, sizes: bool) -> tuple[Layers, list]:
    """Points with their type code; bare lines (with diameters if ``sizes``), half reversed."""
    out: Layers = {}
    notes = []
    for name, df in src.items():
        role = ROLE_OF[name]
        keep = ("kind",) if role == "structures" else (("diameter_in",) if sizes else ())
        cols = alias_columns(df, role, keep)
        sub = df[[*cols, df.geometry.name]]
        if role == "conveyances":
            sub, k = reverse_half(sub, rng)
            notes.append(f"{name}: {k} of {len(df)} lines reversed")
        notes.append(f"{name} keeps {cols or 'geometry only'}")
        out[name] = sub
    return out, notes


def swap_inverts(
    src: Layers, rng: np.random.Generator, given: gpd.GeoDataFrame
) -> tuple[Layers, list]:
    """As given, with us/ds inverts swapped on SWAP_SHARE of the conveyances having both
    (both read as elevations by ms4map: ``given`` is the as-given conveyances layer)."""
    both = given[given["us_invert"].notna() & given["ds_invert"].notna()]
    pool = list(zip(both["src_layer"].astype(str), both["src_fid"].astype(int), strict=True))
    k = round(SWAP_SHARE * len(pool))
    pick = [pool[i] for i in sorted(rng.choice(len(pool), size=k, replace=False))]
    out = dict(src)
    changed = 0
    for name in {la for la, _ in pick}:
        df = src[name].copy()
        us, ds = (alias_columns(df, "conveyances", (c,))[0] for c in ("us_invert", "ds_invert"))
        fids = [f for la, f in pick if la == name]
        a, b = df.loc[fids, us].to_numpy(), df.loc[fids, ds].to_numpy()
        changed += int((a != b).sum())
        df.loc[fids, us], df.loc[fids, ds] = b, a
        out[name] = df
    by_layer = Counter(la for la, _ in pick)
    return out, [
        f"swapped {k} of {len(pool)} conveyances with both inverts ({dict(by_layer)}; "
        f"{changed} with two different values)"
    ]


def drop_roles(src: Layers, canon: dict[str, tuple[str, ...]], extra: dict) -> tuple[Layers, list]:
    """As given without the columns ms4map reads as ``canon[role]`` (and ``extra[layer]``)."""
    out: Layers = {}
    notes = []
    for name, df in src.items():
        cols = alias_columns(df, ROLE_OF[name], canon.get(ROLE_OF[name], ()))
        cols += [c for c in extra.get(name, ()) if c in df.columns]
        out[name] = without(df, cols)
        notes.append(f"{name}: removed {cols or 'nothing'}")
    return out, notes


def build_variant(
    name: str, src: Layers, *, seed: int, given: gpd.GeoDataFrame
) -> tuple[Layers, list]:
    """The layers of variant ``name`` (a fresh generator seeded ``seed`` per variant)."""
    rng = np.random.default_rng(seed)
    if name in ("geometry-only", "geometry-sizes"):
        return geometry_only(src, rng, sizes=name == "geometry-sizes")
    if name == "inverts-swapped":
        return swap_inverts(src, rng, given)
    if name == "inverts-removed":
        return drop_roles(src, ELEVATIONS, {})
    if name == "ids-removed":
        return drop_roles(src, {"conveyances": ("from_id", "to_id")}, ID_COPIES)
    raise ValueError(name)


def write_variant(layers: Layers, path: Path) -> None:
    """Write the layers (answer columns dropped) as one GeoPackage, fids 1..n in row order."""
    for name, df in layers.items():
        clean = without(df, tuple(ANSWER_COLUMNS)).reset_index(drop=True)
        pyogrio.write_dataframe(clean, path, layer=name, driver="GPKG")


# ------------------------------------------------------------------------------------------
# scoring
# ------------------------------------------------------------------------------------------
def wrong_rows(truth: pd.DataFrame, label_of_fid: dict, fids: np.ndarray) -> list[tuple]:
    """(row of the structure, city label, label got) of every scored structure not right."""
    row_of = {int(f): i for i, f in enumerate(fids)}
    out = []
    for fid, city in zip(truth["src_fid"], truth["OUTFALL"], strict=True):
        got = label_of_fid.get(int(fid), ("UNASSIGNED", "missing"))
        if got != city:
            out.append((row_of.get(int(fid), -1), city, got))
    return out


def explain_wrong(net, table: pd.DataFrame, misses: list[tuple]) -> dict[int, list[str]]:
    """Print the wrong answers by assignment method and by the orientation rules on their
    downstream path; return row -> orient_method values on the path."""
    wrong = [r for r, _, got in misses if isinstance(got, str) and got != "UNLABELLED"]
    if not wrong:
        return {}
    paths: dict[int, list[str]] = {}
    for r in wrong:
        tr = trace_downstream(net, str(table["struct_id"].iloc[r]), by="struct")
        paths[r] = sorted(set(tr.edges["orient_method"].astype(str)))
    meth = Counter(table["method"].iloc[wrong])
    on_path = Counter(m for r in wrong for m in paths[r])
    print(f"{'':<28} wrong by method: {dict(meth.most_common())}")
    print(f"{'':<28} wrong with orient_method on their path: {dict(on_path.most_common())}")
    return paths


def write_misses(path: Path, misses: list[tuple], table, truth, *, fids, paths: dict) -> None:
    """CSV of the scored structures not right, with ms4map's outfall, method and reason."""
    city_id = dict(zip(truth["src_fid"].astype(int), truth["Structure_"], strict=True))
    rows = []
    for r, city, got in misses:
        t = table.iloc[r]
        rows.append(
            {
                "src_fid": int(fids[r]),
                "city_id": city_id.get(int(fids[r])),
                "struct_id": t["struct_id"],
                "city": city,
                "got": got[0] if isinstance(got, tuple) else got,
                "outfall_id": t["outfall_id"],
                "method": t["method"],
                "reason": t["reason"],
                "path_orient_methods": " ".join(paths.get(r, [])),
            }
        )
    pd.DataFrame(rows).to_csv(path, index=False)


def right_ends(net, table: pd.DataFrame, truth, label_of_fid: dict, fids) -> dict:
    """src_fid -> (x, y) of the outfall of every scored structure that is right."""
    g = net.outfalls.geometry.values
    xy = np.c_[shapely.get_x(g), shapely.get_y(g)]  # nan where an outfall has no point
    of_xy = dict(zip(net.outfalls.index.astype(str), xy, strict=True))
    row_of = {int(f): i for i, f in enumerate(fids)}
    return {
        int(fid): of_xy[str(table["outfall_id"].iloc[row_of[int(fid)]])]
        for fid, city in zip(truth["src_fid"], truth["OUTFALL"], strict=True)
        if label_of_fid.get(int(fid)) == city
    }


def same_end(res: Result, given: Result) -> int:
    """Right structures of ``res`` whose outfall lies within LABEL_FT of the outfall the
    same structure reaches (rightly) in the as-given run.  The score labels any end by
    the city OUTFALL of the lines there, so a trace that ends elsewhere in the right
    system (earlier, at a dead end, or further down) still counts as right; this does not."""
    n = 0
    for fid, xy in res.right_ends.items():
        ref = given.right_ends.get(fid)
        n += ref is not None and bool(np.hypot(*(np.asarray(xy) - ref)) <= LABEL_FT)
    return n


def run_variant(name: str, path: Path, truth, ends, lab, *, misses: Path | None) -> Result:
    """Open, build, assign and score one variant file; print its figures."""
    t0 = time.perf_counter()
    ws = ms4map.open_workspace(path, layers=LAYERS)
    net = build_network(ws)
    table = assign_outfalls(net)
    secs = time.perf_counter() - t0
    fids = ws.layers["structures"]["src_fid"].astype(int).to_numpy()
    label_of_fid = label_structures(ws, net, table, ends, lab)
    pct = score(truth, label_of_fid, title=TITLES[name])
    n = len(truth)
    counts = {k: round(v * n / 100.0) for k, v in pct.items()}
    qa = Counter(net.qa.codes()).most_common(6)
    print(f"{'':<28} orient_method: {net.orient_counts}")
    print(f"{'':<28} top QA: {dict(qa)}")
    print(f"{'':<28} methods (all structures): {dict(Counter(table['method']).most_common())}")
    print(f"{'':<28} open+build+assign {secs:.2f} s; {net}")
    missed = wrong_rows(truth, label_of_fid, fids)
    paths = explain_wrong(net, table, missed)
    if misses is not None:
        write_misses(
            misses / f"norfolk_{name}_misses.csv", missed, table, truth, fids=fids, paths=paths
        )
    ends_xy = right_ends(net, table, truth, label_of_fid, fids)
    return Result(name, n, pct, counts, secs, outfalls=len(net.outfalls), right_ends=ends_xy)


# ------------------------------------------------------------------------------------------
# the table
# ------------------------------------------------------------------------------------------
def target(res: Result, given: Result | None) -> tuple[str, str]:
    """The issue's target for a variant and whether it is met ("yes", "NO", "" if none)."""
    p = res.pct
    if res.name == "as-given":
        return ">=81% right, <=0.5% wrong", _met(p["right"] >= 81.0 and p["wrong"] <= 0.5)
    if res.name in ("geometry-only", "geometry-sizes"):
        # the variant strips ids and inverts (geometry + sizes); geometry only
        # strips the pipe sizes too: stricter than the issue, reported against the same bar
        extra = " (sizes stripped too)" if res.name == "geometry-only" else ""
        if given is None:
            return f"within 2 pts of as given (not run), <=0.5% wrong{extra}", ""
        ok = p["right"] >= given.pct["right"] - 2.0 and p["wrong"] <= 0.5
        return f">={given.pct['right'] - 2.0:.1f}% right, <=0.5% wrong{extra}", _met(ok)
    if res.name == "inverts-swapped":
        return ">=80% right", _met(p["right"] >= 80.0)
    return "-", ""


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


def print_table(results: list[Result], seed: int) -> None:
    given = next((r for r in results if r.name == "as-given"), None)
    print(f"\nNorfolk variants (seed {seed}); n = {results[0].n} scored structures")
    head = f"{'variant':<22}{'right':>7}{'wrong':>7}{'unlab':>7}{'unass':>7}  "
    head += f"{'ambig':>7}{'amb ok':>7}  {'r/w/u/n':<20}{'same end':>9}{'outfalls':>9}{'time s':>7}  target (issue 27)"
    print(head)
    print("-" * (len(head) + 24))
    for r in results:
        c = r.counts
        tgt, met = target(r, given)
        cnt = f"{c['right']}/{c['wrong']}/{c['unlabelled']}/{c['unassigned']}"
        same = "" if given is None else str(same_end(r, given))
        print(
            f"{TITLES[r.name]:<22}{r.pct['right']:6.1f}%{r.pct['wrong']:6.1f}%"
            f"{r.pct['unlabelled']:6.1f}%{r.pct['unassigned']:6.1f}%"
            f"{r.pct['ambiguous']:6.1f}%{r.pct['amb_all_right']:6.1f}%  {cnt:<20}"
            f"{same:>9}{r.outfalls:>9}{r.seconds:7.2f}  {tgt}{'  -> ' + met if met else ''}"
        )
    print(
        "same end: right structures whose outfall is within 5 ft of the one the same structure\n"
        "reaches (rightly) as given; the score labels any end by the city OUTFALL of the lines\n"
        "there, so a trace ending elsewhere in the right system (at a dead end, or further\n"
        "down) counts as right, this does not;\n"
        "ambig: structures answered `ambiguous` (no outfall named; counted in unass);\n"
        "amb ok: of those, every candidate outfall carries the city's label;\n"
        "outfalls: ends ms4map takes as outfalls; time: open + build + assign."
    )


def read_sources(gpkg: Path) -> Layers:
    """The city's layers, indexed by fid (1..n in row order)."""
    return {
        name: pyogrio.read_dataframe(gpkg, layer=name, fid_as_index=True)
        for names in LAYERS.values()
        for name in names
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpkg", type=Path, default=DEFAULT_GPKG)
    p.add_argument(
        "--variants",
        default=",".join(TITLES),
        help=f"comma-separated, from: {', '.join(TITLES)} (default all)",
    )
    p.add_argument("--seed", type=int, default=27, help="seed of the random choices (27)")
    p.add_argument("--misses", type=Path, help="folder for one CSV per variant of the misses")
    args = p.parse_args(argv)
    asked = {v.strip() for v in args.variants.split(",") if v.strip()}
    args.variants = [v for v in TITLES if v in asked]  # as given first: the reference
    bad = sorted(asked - set(TITLES))
    if bad:
        p.error(f"unknown variant(s) {bad}; choose from {list(TITLES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.gpkg.exists():
        print(f"Norfolk data not found at {args.gpkg} (give --gpkg PATH)", file=sys.stderr)
        return 3
    if args.misses:
        args.misses.mkdir(parents=True, exist_ok=True)
    print(f"seed {args.seed}; variants: {', '.join(args.variants)}")
    truth = city_truth(args.gpkg)
    given_ws = ms4map.open_workspace(args.gpkg, layers=LAYERS)
    ends, lab = end_labels(given_ws.layers["conveyances"])
    src = read_sources(args.gpkg)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="norfolk_variants_") as tmp:
        for name in args.variants:
            print()
            path = args.gpkg
            if name != "as-given":
                layers, notes = build_variant(
                    name, src, seed=args.seed, given=given_ws.layers["conveyances"]
                )
                path = Path(tmp) / f"{name}.gpkg"
                write_variant(layers, path)
                print(f"{TITLES[name]}: " + "; ".join(notes))
            results.append(run_variant(name, path, truth, ends, lab, misses=args.misses))
    print_table(results, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
