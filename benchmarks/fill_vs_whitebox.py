"""ms4map's compiled fill against whitebox-workflows' ``fill_depressions`` on real DEMs.

    python benchmarks/fill_vs_whitebox.py [DEM.tif ...] [--outlets 0.01]

Default DEMs: ../shared/realdata/ny_wayne_dem/dem.tif and mn_lidar_dem/dem.tif, plus
the county of ``benchmarks/drainage_county.py`` when ``--county DIR`` names its folder.
Each DEM is filled both ways with the same outlets (its nodata cells, a share of random
cells standing for inlets, and the grid's border), as ``ms4map.hydrology`` does, and the
script prints: cells whose filled level differs (the fill without flat gradient), cells
whose result differs with the gradient, cells whose steepest-descent D8 pointer differs,
and each fill's time.  Issue 34 moved the fill from whitebox to ms4map's kernel for
memory (docs/hydrology.md "Memory per cell"); this is its check on data nobody designed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import rasterio

from ms4map.hydrology import _whitebox
from ms4map.hydrology._fill import fill_pits
from ms4map.hydrology.routing import d8_steepest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    ROOT.parent / "shared/realdata/ny_wayne_dem/dem.tif",
    ROOT.parent / "shared/realdata/mn_lidar_dem/dem.tif",
]


def read(path: Path) -> tuple[np.ndarray, object]:
    """The DEM as float64 with NaN nodata, and its transform."""
    with rasterio.open(path) as ds:
        z = ds.read(1, masked=True).astype("float64").filled(np.nan)
        return z, ds.transform


def whitebox_fill(z: np.ndarray, outlets: np.ndarray, transform, *, fix_flats: bool):
    """whitebox-workflows' fill with ``outlets`` and the border as outlets (the framed grid
    ms4map handed it until issue 34)."""
    with _whitebox._Whitebox() as wb:
        raster, max_depth = wb.send_with_outlets(z, outlets, transform, None, "z")
        t0 = time.perf_counter()
        filled = wb.wbe.hydrology.fill_depressions(
            dem=raster, fix_flats=fix_flats, max_depth=max_depth
        )
        seconds = time.perf_counter() - t0
        arr, _ = wb.fetch(filled, "filled")
    out = np.array(arr[1:-1, 1:-1], dtype="float64")
    out[outlets] = z[outlets]
    return out, seconds


def compare(path: Path, share: float, seed: int = 0) -> None:
    z, transform = read(path)
    rng = np.random.default_rng(seed)
    outlets = ~np.isfinite(z) | (rng.random(z.shape) < share)
    cell = abs(transform.a), abs(transform.e)
    row = {}
    for flats in (False, True):
        t0 = time.perf_counter()
        mine = fill_pits(z, outlets, cell_x=cell[0], cell_y=cell[1], fix_flats=flats)
        t_mine = time.perf_counter() - t0
        mine[outlets] = z[outlets]
        theirs, t_wb = whitebox_fill(z, outlets, transform, fix_flats=flats)
        same = np.isfinite(z)
        differ = int((mine[same] != theirs[same]).sum())
        row[flats] = (differ, t_mine, t_wb, mine, theirs)
    mine, theirs = row[True][3], row[True][4]
    cond_m = np.where(outlets, np.nan, mine)
    cond_t = np.where(outlets, np.nan, theirs)
    d8_differ = int((d8_steepest(cond_m, transform) != d8_steepest(cond_t, transform)).sum())
    raised = int((row[False][3] > z).sum())
    print(
        f"{path.parent.name}/{path.name}: {z.shape[0]} x {z.shape[1]} cells, "
        f"{int(outlets.sum())} outlet cells, {raised} raised by the fill\n"
        f"  levels (no flat gradient): {row[False][0]} cells differ "
        f"(ms4map {row[False][1]:.2f} s, whitebox fill {row[False][2]:.2f} s)\n"
        f"  with the flat gradient:    {row[True][0]} cells differ "
        f"(ms4map {row[True][1]:.2f} s, whitebox fill {row[True][2]:.2f} s)\n"
        f"  D8 pointer on the result:  {d8_differ} cells differ",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dems", nargs="*", type=Path)
    ap.add_argument("--outlets", type=float, default=0.01, help="share of random outlet cells")
    ap.add_argument("--county", type=Path, help="folder of drainage_county.py's county")
    a = ap.parse_args()
    dems = a.dems or [p for p in DEFAULT if p.exists()]
    if a.county:
        dems.append(a.county / "county_dem.tif")
    for path in dems:
        compare(path, a.outlets)


if __name__ == "__main__":
    main()
