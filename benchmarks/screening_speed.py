"""Batch screening speed: Condition A for every parcel plus septic flags, given the drainage table.

Synthetic county-size town: N parcels (default 300,000) on a grid of 30 m squares, about
1.5 drainage rows per parcel (inlets of 400 outfalls, some direct to water, some internally
drained, a few off the DEM), 60 waterbodies of which 15 are 303(d)-listed, a TMDL
watershed, 40% septic parcels and open ditches for the setback check.

Prints the batch timings next to the baseline: a loop of single-site ``evaluate_site``
calls (timed on a sample and extrapolated to N).

    python benchmarks/screening_speed.py [--parcels 300000] [--baseline-sample 200]
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from pyproj import CRS

from ms4map.io.workspace import Workspace
from ms4map.rules.conditions import evaluate_site, screen_condition_a
from ms4map.rules.septic import flag_septic_table
from ms4map.rules.waters import Waters

CRS18 = CRS.from_epsg(26918)


def synthetic(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    ii = np.arange(n)
    x0 = (ii % side) * 30.0
    y0 = (ii // side) * 30.0
    geoms = shapely.box(x0, y0, x0 + 28, y0 + 28)
    pid = np.char.add("P", ii.astype(str))
    sewer = np.where(rng.random(n) < 0.4, "septic", "public")
    fail = np.where((sewer == "septic") & (rng.random(n) < 0.01), "B", None)
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": pid,
            "sewer": sewer,
            "prop_class": "210",
            "septic_failure": fail,
            "owner": "Owner",
            "owner_address": "1 Main St",
            "address": "2 Road",
        },
        geometry=geoms,
        crs=CRS18,
    )

    n_of, n_wb = 400, 60
    wb_ids = [f"13{k // 100:02d}-{k:04d}" for k in range(n_wb)]
    of_ids = [f"OF{k}" for k in range(n_of)]
    of_wb = rng.integers(0, n_wb, n_of)
    # rows: 60% one inlet, 30% two inlets, 5% direct, 3% depression, 2% off the DEM + inlet
    kind_draw = rng.random(n)
    rows_pid, rows_kind, rows_frac, rows_of = [], [], [], []
    one = kind_draw < 0.6
    two = (kind_draw >= 0.6) & (kind_draw < 0.9)
    direct = (kind_draw >= 0.9) & (kind_draw < 0.95)
    dep = (kind_draw >= 0.95) & (kind_draw < 0.98)
    off = kind_draw >= 0.98
    for mask, parts in (
        (one, [("inlet", 1.0)]),
        (two, [("inlet", 0.6), ("inlet", 0.4)]),
        (direct, [("water_direct", 1.0)]),
        (dep, [("depression", 1.0)]),
        (off, [("inlet", 0.5), ("off_dem", 0.5)]),
    ):
        idx = np.flatnonzero(mask)
        for kind, fr in parts:
            rows_pid.append(pid[idx])
            rows_kind.append(np.full(len(idx), kind, dtype=object))
            rows_frac.append(np.full(len(idx), fr))
            rows_of.append(rng.integers(0, n_of, len(idx)))
    pid_r = np.concatenate(rows_pid)
    kind_r = np.concatenate(rows_kind)
    frac_r = np.concatenate(rows_frac)
    of_r = np.concatenate(rows_of)
    ms4 = np.isin(kind_r, ["inlet"])
    wb_r = np.where(
        ms4 | (kind_r == "water_direct"), np.asarray(wb_ids, dtype=object)[of_wb[of_r]], None
    )
    drainage = pd.DataFrame(
        {
            "parcel_id": pid_r,
            "target_kind": kind_r,
            "target_id": np.where(
                ms4,
                np.char.add("CB", of_r.astype(str)),
                np.where(kind_r == "water_direct", wb_r, None),
            ),
            "fraction": frac_r,
            "outfall_id": np.where(ms4, np.asarray(of_ids, dtype=object)[of_r], None),
            "receiving_water": np.where(wb_r != None, "Water " + pd.Series(wb_r).astype(str), None),  # noqa: E711
            "pwl_id": wb_r,
            "method": "synthetic",
            "reason": "synthetic",
        }
    )
    ext = side * 30.0
    wb_geoms = [
        shapely.LineString([(k * ext / n_wb, 0), (k * ext / n_wb, ext)]) for k in range(n_wb)
    ]
    waterbodies = gpd.GeoDataFrame(
        {"wb_id": wb_ids, "name": [f"Water {w}" for w in wb_ids], "kind": "stream"},
        geometry=wb_geoms,
        crs=CRS18,
    )
    listed = rng.choice(n_wb, 15, replace=False)
    pols = ["Phosphorus", "PCBs", "Pathogens", "Silt/Sediment", "Nitrogen"]
    impairments = pd.DataFrame(
        {
            "wb_id": [wb_ids[k] for k in listed],
            "pollutant": [pols[i % 5] for i in range(15)],
            "category": "5",
            "list_year": 2018,
            "source": "synthetic",
        }
    )
    tmdl = gpd.GeoDataFrame(
        {
            "tmdl_id": ["T1"],
            "name": ["Lake P TMDL"],
            "pollutant": ["Phosphorus"],
            "stormwater_source": [True],
            "approved": ["2016"],
        },
        geometry=[shapely.box(0, 0, ext / 4, ext / 4)],
        crs=CRS18,
    )
    of_pts = {o: shapely.Point(rng.random() * ext, rng.random() * ext) for o in of_ids}
    ditches = gpd.GeoDataFrame(
        {"conv_id": [f"D{k}" for k in range(500)], "kind": "ditch"},
        geometry=[shapely.LineString([(x, y), (x + 50, y)]) for x, y in rng.random((500, 2)) * ext],
        crs=CRS18,
    )
    waters = Waters.from_frames(
        waterbodies=waterbodies, impairments=impairments, tmdl_watersheds=tmdl, crs=CRS18
    )
    return dict(
        parcels=parcels,
        drainage=drainage,
        waters=waters,
        of_pts=of_pts,
        ditches=ditches,
        waterbodies=waterbodies,
        impairments=impairments,
        tmdl=tmdl,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parcels", type=int, default=300_000)
    ap.add_argument("--baseline-sample", type=int, default=200)
    args = ap.parse_args()
    t = time.perf_counter()
    s = synthetic(args.parcels)
    print(
        f"synthetic town: {args.parcels:,} parcels, {len(s['drainage']):,} drainage rows "
        f"(built in {time.perf_counter() - t:.1f} s)"
    )

    t = time.perf_counter()
    scr = screen_condition_a(
        s["drainage"], waters=s["waters"], parcels=s["parcels"], outfall_points=s["of_pts"]
    )
    t_a = time.perf_counter() - t
    t = time.perf_counter()
    sep = flag_septic_table(
        s["parcels"],
        s["drainage"],
        waters=s["waters"],
        conveyances=s["ditches"],
        outfall_points=s["of_pts"],
    )
    t_s = time.perf_counter() - t
    counts = scr["condition_a_text"].value_counts().to_dict()
    print(f"batch Condition A screening : {t_a:7.2f} s  ({counts})")
    print(
        f"batch septic flags          : {t_s:7.2f} s  ({len(sep):,} septic parcels, "
        f"{int(sep['flagged'].sum()):,} flagged, {int(sep['violation'].sum()):,} violations)"
    )
    print(f"batch total                 : {t_a + t_s:7.2f} s   (target <= 30 s on 2 cores)")

    # baseline: one evaluate_site call per parcel
    ws = Workspace(
        path=None,
        crs=CRS18,
        layers={
            "parcels": s["parcels"],
            "waterbodies": s["waterbodies"],
            "impairments": s["impairments"],
            "tmdl_watersheds": s["tmdl"],
            "outfalls": gpd.GeoDataFrame(
                {"outfall_id": list(s["of_pts"])}, geometry=list(s["of_pts"].values()), crs=CRS18
            ),
        },
    )
    result = SimpleNamespace(drainage=s["drainage"], network=None)
    sample = s["parcels"]["parcel_id"].sample(args.baseline_sample, random_state=1).tolist()
    t = time.perf_counter()
    agree = 0
    by = scr.set_index("parcel_id")["condition_a"]
    for pid in sample:
        det = evaluate_site(
            pid,
            disturbed_acres=0.1,
            common_plan_acres=2,
            project_type="commercial",
            workspace=ws,
            result=result,
            waters=s["waters"],
        )
        a = det.conditions["A"]["value"]
        b = by[pid]
        agree += (None if pd.isna(b) else bool(b)) == a
    t_b = time.perf_counter() - t
    per = t_b / len(sample)
    print(
        f"baseline evaluate_site loop : {per * 1000:7.1f} ms/parcel on {len(sample)} parcels "
        f"-> {per * args.parcels:,.0f} s for {args.parcels:,} (extrapolated; "
        f"{per * args.parcels / (t_a + t_s):,.0f}x the batch)"
    )
    print(f"batch and single-site Condition A agree on {agree}/{len(sample)} sampled parcels")


if __name__ == "__main__":
    main()
