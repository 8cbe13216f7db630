"""Speed of the overland chain on a synthetic 6000 x 6000 DEM (36M cells, 2 m),
10,000 inlets and 100,000 parcels, next to the bare library calls.

    python benchmarks/overland_speed.py [--size 6000] [--inlets 10000] [--parcels 100000]

Prints each step's time, the same library call run alone in this script, their
ratio (target <= 1.2), the whole chain (target <= 40 s on 2 cores) and the peak
memory (target <= 8 GiB).  The storm network join is synthetic (each inlet
assigned to one of 100 outfalls by position): building a 10,000-inlet network is
the network module's benchmark, not this one.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from affine import Affine
from pyproj import CRS
from scipy import ndimage

from ms4map import drainage, overland
from ms4map.workspace import Dem


def synthetic_dem(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    low = rng.normal(size=(n // 50 + 4, n // 50 + 4))
    hills = ndimage.zoom(low, 50, order=3)[:n, :n] * 3.0
    yy, xx = np.mgrid[0:n, 0:n].astype(np.float32)
    z = 200.0 - 0.01 * yy - 0.005 * xx + hills + rng.normal(scale=0.05, size=(n, n))
    return z.astype(np.float64)


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=6000)
    ap.add_argument("--inlets", type=int, default=10000)
    ap.add_argument("--parcels", type=int, default=100000)
    a = ap.parse_args()
    n, cell = a.size, 2.0
    crs = CRS.from_epsg(26918)
    tr = Affine(cell, 0, 500000.0, 0, -cell, 4700000.0 + n * cell)
    t = time.perf_counter()
    z = synthetic_dem(n)
    dem = Dem(array=z, transform=tr, crs=crs)
    rng = np.random.default_rng(1)
    ix = rng.integers(5, n - 5, size=(a.inlets, 2))
    inlets = gpd.GeoDataFrame(
        {"node_id": [f"I{i}" for i in range(a.inlets)]},
        geometry=shapely.points(tr.c + cell * (ix[:, 1] + 0.5), tr.f - cell * (ix[:, 0] + 0.5)),
        crs=crs,
    )
    k = int(np.ceil(np.sqrt(a.parcels)))
    step = n * cell / k
    gx, gy = np.meshgrid(np.arange(k), np.arange(k))
    gx, gy = gx.ravel()[: a.parcels], gy.ravel()[: a.parcels]
    x0 = tr.c + gx * step
    y0 = tr.f - (gy + 1) * step
    parcels = gpd.GeoDataFrame(
        {"parcel_id": [f"P{i}" for i in range(len(gx))]},
        geometry=shapely.box(x0, y0, x0 + step, y0 + step),
        crs=crs,
    )
    river = gpd.GeoDataFrame(
        {"wb_id": ["0000-0001"], "name": ["River"]},
        geometry=[
            shapely.LineString(
                [(tr.c, tr.f - n * cell * 0.9), (tr.c + n * cell, tr.f - n * cell * 0.95)]
            )
        ],
        crs=crs,
    )
    # synthetic join: 100 outfalls on a 10 x 10 block grid
    col = ((ix[:, 1] * 10) // n).astype(int)
    row = ((ix[:, 0] * 10) // n).astype(int)
    of = [f"OF{r * 10 + c}" for r, c in zip(row, col, strict=True)]
    join = drainage.NetworkJoin(
        inlet_outfall=pd.DataFrame(
            {"outfall_id": of, "other_outfalls": ""}, index=inlets["node_id"].to_numpy()
        ),
        conv_outfall=pd.DataFrame(
            {
                "outfall_id": pd.Series([], dtype=object),
                "other_outfalls": pd.Series([], dtype=object),
            }
        ),
        outfalls=pd.DataFrame(
            {"receiving_water": "River", "pwl_id": "0000-0001"},
            index=[f"OF{i}" for i in range(100)],
        ),
    )
    print(
        f"setup: {n} x {n} DEM ({n * n / 1e6:.0f}M cells), {a.inlets} inlets, "
        f"{len(parcels)} parcels, built in {time.perf_counter() - t:.1f} s"
    )

    # --- warm numba caches (pyflwdir) on a small grid so compile time is not counted
    small = Dem(array=synthetic_dem(200), transform=tr, crs=crs)
    overland.route(small, inlets=inlets.iloc[:0])

    # --- the chain ------------------------------------------------------------------
    t_all = time.perf_counter()
    ov = overland.route(dem, inlets=inlets, waterbodies=river)
    t1 = time.perf_counter()
    table = drainage.parcel_drainage(parcels, ov, join=join)
    t2 = time.perf_counter()
    sheds = drainage.sewersheds(ov, join)
    t3 = time.perf_counter()
    chain = t3 - t_all
    ic = ov.catchments(("inlet",))
    t4 = time.perf_counter()
    sums = table.groupby("parcel_id")["fraction"].sum()
    print("\nchain step                 seconds")
    for k_, v in ov.timings.items():
        print(f"  overland.{k_:<18} {v:7.2f}")
    print(
        f"  parcel table             {t2 - t1:7.2f}   ({len(table)} rows, max |sum-1| "
        f"{(sums - 1).abs().max():.1e})"
    )
    print(f"  sewersheds               {t3 - t2:7.2f}   ({len(sheds)} polygons)")
    print(f"  WHOLE CHAIN              {chain:7.2f}   (target <= 40 s)")
    print(f"  (+ inlet catchment polygons {t4 - t3:.2f} s, {len(ic)} polygons)")
    chain_peak = peak_gib()

    # --- the same library calls alone ---------------------------------------------------
    import pyflwdir
    import whitebox_workflows as wbw

    with tempfile.TemporaryDirectory() as td:
        src = Path(td) / "z.tif"
        overland._write_tif(src, z, tr, crs)
        wbe = wbw.WbEnvironment()
        t = time.perf_counter()
        filled = wbe.hydrology.fill_depressions(dem=wbe.read_raster(str(src)), fix_flats=True)
        wb_fill = time.perf_counter() - t
        t = time.perf_counter()
        wbe.hydrology.d8_pointer(dem=filled, esri_pntr=True)
        wb_d8 = time.perf_counter() - t
    del filled
    d8 = ov.flwdir.to_array(ftype="d8")
    t = time.perf_counter()
    fl = pyflwdir.from_array(d8, ftype="d8", check_ftype=False, transform=tr)
    pf_build = time.perf_counter() - t
    seeds = np.flatnonzero(ov.target_mask)
    t = time.perf_counter()
    fl.basins(idxs=seeds, ids=ov.labels.ravel()[seeds].astype(np.uint32))
    pf_basins = time.perf_counter() - t
    print("\nhydrology step vs the library call alone      ours   alone   ratio")
    rows = [
        ("condition (wbw fill_depressions)", ov.timings["condition"], wb_fill),
        ("directions (wbw d8_pointer + pyflwdir graph)", ov.timings["d8"], wb_d8 + pf_build),
        ("routing (pyflwdir basins, first target)", ov.timings["route"], pf_basins),
    ]
    for name, ours, alone in rows:
        print(f"  {name:<44} {ours:6.2f}  {alone:6.2f}  {ours / alone:5.2f}x")
    print(
        f"\npeak memory: {max(chain_peak, peak_gib()):.2f} GiB (chain alone {chain_peak:.2f}; "
        "target <= 8 GiB)"
    )


if __name__ == "__main__":
    main()
