"""Which library fills a DEM with the MS4 targets as outlets: whitebox-workflows or pyflwdir.

Usage: ``python benchmarks/seeded_fill.py [--size 3000] [--targets 2000]``

Synthetic DEM (hills + tilt + noise, many pits; 2 m cells) with random target cells
(inlets) and a river line.  Both fills start from the DEM edge and the target cells:

- whitebox-workflows 2.0.6 ``fill_depressions`` on ms4map's framed grid (outlet cells far
  below the terrain, a ring around the grid, ``max_depth`` just over the relief; what
  ``ms4map.overland.fill_with_outlets`` does), without and with the flat gradient;
- pyflwdir 0.5.12 ``pyflwdir.dem.fill_depressions`` (no flat gradient).  Its
  ``idxs_pit`` cells *replace* the DEM edge as outlets (the edge must be passed with
  them) and are seeded at their own elevation, so a sag next to a target higher than
  it is filled up to the target; given the targets far below the terrain and the edge
  cells in ``idxs_pit`` it computes the same fill.

Prints seconds and how many non-target cells the fills raise to different levels
(pyflwdir keeps its priority queue in float32, so levels agree to about 1e-4 m).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from affine import Affine
from pyproj import CRS

from ms4map.hydrology import overland


def synthetic(n: int, n_targets: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    z = ndimage.gaussian_filter(rng.normal(size=(n, n)), 6.0) * 60.0
    z += np.linspace(0, 30, n)[None, :] + rng.normal(size=(n, n)) * 0.05 + 100.0
    t = np.zeros((n, n), bool)
    t.ravel()[rng.choice(n * n, n_targets, replace=False)] = True
    t[n // 2, :] = True  # a river across the DEM
    return z, t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=3000)
    ap.add_argument("--targets", type=int, default=2000)
    args = ap.parse_args()
    import pyflwdir

    z, t = synthetic(args.size, args.targets)
    tr, crs = Affine(2.0, 0, 500000.0, 0, -2.0, 4700000.0), CRS.from_epsg(26918)
    print(f"DEM {args.size} x {args.size}, {int(t.sum())} target cells")
    out = {}
    for flats in (False, True):
        with overland._Whitebox() as wb:
            t0 = time.perf_counter()
            r, max_depth = wb.send_with_outlets(z, t, tr, crs, "framed")
            f = wb.wbe.hydrology.fill_depressions(dem=r, fix_flats=flats, max_depth=max_depth)
            arr, _ = wb.fetch(f, "filled")
            filled = np.array(arr[1:-1, 1:-1])
            out[flats] = (time.perf_counter() - t0, filled)
        print(
            f"whitebox-workflows framed fill (fix_flats={flats}): {out[flats][0]:.2f} s "
            "(send + fill + fetch)"
        )
    edge = np.zeros(t.shape, bool)
    edge[0, :] = edge[-1, :] = edge[:, 0] = edge[:, -1] = True
    t0 = time.perf_counter()
    zp, _ = pyflwdir.dem.fill_depressions(
        np.where(t, z.min() - 1e4, z), outlets="edge", idxs_pit=np.flatnonzero(t | edge)
    )
    sec_p = time.perf_counter() - t0
    print(
        f"pyflwdir fill_depressions(targets far below, idxs_pit=targets + edge): {sec_p:.2f} s "
        "(no flat gradient)"
    )
    zq, _ = pyflwdir.dem.fill_depressions(z, outlets="edge", idxs_pit=np.flatnonzero(t))
    dq = np.abs(zq - zp)[~t]
    print(
        "  (pyflwdir idxs_pit=targets as documented, at their own elevation: the edge is no "
        f"outlet then; {int((dq > 1e-3).sum())} cells differ, by up to "
        f"{dq.max():.1f} m)"
    )
    wb_plain = out[False][1]
    free = ~t
    raised_w = (wb_plain - z > 1e-6) & free
    raised_p = (zp - z > 1e-3) & free
    diff = np.abs(wb_plain - zp)[free]
    print(
        f"cells raised: whitebox {int(raised_w.sum())}, pyflwdir {int(raised_p.sum())}; "
        f"levels differ by > 1e-3 m on {int((diff > 1e-3).sum())} cells "
        f"(max {diff.max():.2e} m)"
    )
    grad = (out[True][1] - wb_plain)[free]
    print(
        f"whitebox flat gradient adds up to {grad.max():.2e} m (median over raised cells "
        f"{np.median(grad[raised_w[free]]) if raised_w.any() else 0:.2e} m)"
    )


if __name__ == "__main__":
    main()
