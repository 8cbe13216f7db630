"""Real DEMs: the pipeline's flow routing against a second library on the same conditioned DEM.

    python benchmarks/overland_realdem.py [DEM.tif ...]

Default DEMs: ../shared/realdata/ny_wayne_dem/dem.tif and mn_lidar_dem/dem.tif.
The DEM is conditioned once by the pipeline (whitebox-workflows fill with a
gradient on flats, :func:`ms4map.overland.condition_dem`).  Then

- pipeline: whitebox-workflows steepest-descent ``d8_pointer`` -> pyflwdir graph
  (accumulation = ``upstream_area``, catchment = ``basins``), as ``ms4map.overland``;
- second library: **pysheds** (``Grid.flowdir`` / ``accumulation``)
  on the same conditioned array (``pip install pysheds``; benchmark only).

Checks printed next to their targets: accumulation at the 10 largest outlets within
1%; catchments of 100 random points (cells with >= 1,000 upstream cells) within 5% of
area for at least 95% of the points.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from ms4map.hydrology import overland
from ms4map.io import read_dem

ROOT = Path(__file__).resolve().parents[2] / "shared" / "realdata"
DEFAULT = [ROOT / "ny_wayne_dem" / "dem.tif", ROOT / "mn_lidar_dem" / "dem.tif"]


def pysheds_grid(filled: np.ndarray, transform):
    if not hasattr(np, "in1d"):  # pysheds 0.5 still calls np.in1d (removed in numpy 2.x)
        np.in1d = np.isin  # type: ignore[attr-defined]
    from pysheds.grid import Grid
    from pysheds.sview import Raster, ViewFinder

    nod = -9999.0
    arr = np.where(np.isfinite(filled), filled, nod)
    vf = ViewFinder(affine=transform, shape=arr.shape, nodata=nod)
    r = Raster(arr, viewfinder=vf)
    return Grid(viewfinder=vf), r


def _no_flow(a: np.ndarray) -> np.ndarray:
    """Cells without a downstream neighbour (ours: 0; pysheds: 0 nodata, -1 flat, -2 pit)."""
    return a <= 0


def _ties(filled: np.ndarray, a: np.ndarray, b: np.ndarray, diff: np.ndarray) -> int:
    """How many differing pointers are ties: both neighbours give the same steepest drop."""
    h, w = filled.shape
    dx = dy = 1.0  # unit cells are enough to compare drops of one cell
    steps = {k: v for k, v in overland._D8_STEP.items()}
    n = 0
    for i, j in np.argwhere(diff & ~_no_flow(a) & ~_no_flow(b)):
        drops = []
        for code in (int(a[i, j]), int(b[i, j])):
            di, dj = steps[code]
            dist = np.hypot(di * dy, dj * dx)
            drops.append((filled[i, j] - filled[i + di, j + dj]) / dist)
        n += abs(drops[0] - drops[1]) <= 1e-9 * max(1.0, abs(drops[0]))
    return n


def pysheds_edge_outlets(fdir: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """ms4map's boundary condition on pysheds' pointer: a cell at the edge of the data
    (the grid's border, or next to nodata) pointing to another such cell becomes a pit
    (-2), exactly as ``overland._edge_outlets`` does to ours (nodata cells are given
    pyflwdir's nodata code first, as in our pointer)."""
    a = np.asarray(fdir)
    u = np.where(a > 0, a, 0).astype(np.uint8)
    u[~valid] = overland._PYFLWDIR_NODATA
    cut = u.copy()
    overland._edge_outlets(cut)
    out = a.copy()
    out[valid & (cut == 0) & (u != 0)] = -2
    return out


def compare(
    name: str,
    z: np.ndarray,
    d8: np.ndarray,
    grid,
    fdir,
    *,
    n_points: int,
    seed: int,
    catchment_fn: bool = True,
) -> tuple[bool, bool]:
    """Accumulation at the 10 largest outlets and catchments of random points."""
    import pyflwdir

    valid = np.isfinite(z)
    flw = pyflwdir.from_array(d8, ftype="d8", check_ftype=False, transform=grid.affine)
    acc_a = flw.upstream_area("cell")
    acc_b = np.asarray(grid.accumulation(fdir, nodata_out=0.0))
    print(f"  [{name}]")
    pits = flw.idxs_pit
    top = pits[np.argsort(acc_a.ravel()[pits])[::-1][:10]]
    errs = []
    print("  outlet (row, col)   pipeline   pysheds   diff")
    for idx in top:
        r_, c_ = divmod(int(idx), z.shape[1])
        a = float(acc_a.ravel()[idx])
        b = float(acc_b.ravel()[idx])  # pysheds counts the cell itself too
        e = abs(a - b) / max(a, 1.0)
        errs.append(e)
        print(f"  ({r_:4d}, {c_:4d})   {a:9.0f}  {b:9.0f}  {e:6.2%}")
    ok_acc = max(errs) <= 0.01
    print(
        f"  largest outlet difference {max(errs):.2%}  (target <= 1%)  "
        f"{'PASS' if ok_acc else 'FAIL'}"
    )
    rng = np.random.default_rng(seed)
    cand = np.flatnonzero((acc_a.ravel() >= 1000) & valid.ravel())
    pts = rng.choice(cand, size=min(n_points, cand.size), replace=False)
    within = within_fn = 0
    rel = []
    for idx in pts:
        r_, c_ = divmod(int(idx), z.shape[1])
        a = int((flw.basins(idxs=[idx]) > 0).sum())
        # pysheds' catchment area = its accumulation at the point (cells upstream, itself
        # included); its catchment() function is printed too
        b = float(acc_b.ravel()[idx])
        e = abs(a - b) / max(a, 1)
        rel.append(e)
        within += e <= 0.05
        if catchment_fn:
            cb = grid.catchment(x=c_, y=r_, fdir=fdir, xytype="index")
            within_fn += abs(a - int(np.asarray(cb).astype(bool).sum())) / max(a, 1) <= 0.05
    share = within / len(pts)
    ok_c = share >= 0.95
    print(
        f"  catchments of {len(pts)} random points (>= 1,000 upstream cells): "
        f"{share:.0%} within 5% of area (target >= 95%), median difference "
        f"{np.median(rel):.2%}, worst {max(rel):.2%}  {'PASS' if ok_c else 'FAIL'}"
    )
    if catchment_fn:
        print(
            f"  (pysheds Grid.catchment() instead of its accumulation: "
            f"{within_fn / len(pts):.0%} within 5%)"
        )
    return ok_acc, ok_c


def check(path: Path, *, n_points: int = 100, seed: int = 0) -> bool:
    dem = read_dem(path)
    z = dem.array
    t0 = time.perf_counter()
    filled = overland.condition_dem(z, dem.transform, dem.crs)
    t_fill = time.perf_counter() - t0
    t0 = time.perf_counter()
    d8 = overland.d8_pointer(filled, dem.transform, dem.crs)  # with ms4map's edge rule
    t_a = time.perf_counter() - t0
    d8_lib = overland.d8_pointer(filled, dem.transform, dem.crs, edge_outlets=False)

    t0 = time.perf_counter()
    grid, r = pysheds_grid(filled, dem.transform)
    fdir_lib = grid.flowdir(r, nodata_out=np.int64(0))
    t_b = time.perf_counter() - t0
    from pysheds.sview import Raster

    valid = np.isfinite(z)
    fdir = Raster(
        pysheds_edge_outlets(fdir_lib, valid),
        viewfinder=fdir_lib.viewfinder,
        metadata=dict(fdir_lib.metadata),
    )
    lib_b = np.asarray(fdir_lib)
    diff = valid & (d8_lib != lib_b) & ~(_no_flow(d8_lib) & _no_flow(lib_b))
    h, w = z.shape
    ring = overland._data_edge(~valid)  # the edge of the data: the border and nodata
    cut_a = int((valid & ring & (d8 != d8_lib)).sum())
    cut_b = int((valid & ring & (np.asarray(fdir) != lib_b)).sum())
    print(
        f"\n{path.parent.name}/{path.name}: {h} x {w} cells, fill {t_fill:.2f} s; "
        f"whitebox D8 {t_a:.2f} s; pysheds D8 {t_b:.2f} s\n"
        f"  library D8 pointers on the same conditioned DEM differ on {diff.sum()} of "
        f"{valid.sum()} cells ({diff.sum() / valid.sum():.2%}; no-flow codes counted equal), "
        f"{_ties(filled, d8_lib, lib_b, diff)} of them ties (same steepest drop, "
        f"different neighbour picked)\n"
        f"  edge rule (edge cell pointing along the edge -> outlet) cut {cut_a} edge cells "
        f"of the whitebox pointer and {cut_b} of pysheds' ({(valid & ring).sum()} edge cells)"
    )
    ok_acc, ok_c = compare(
        "ms4map boundary condition on both pointers (the pipeline's routing)",
        z,
        d8,
        grid,
        fdir,
        n_points=n_points,
        seed=seed,
    )
    compare(
        "library pointers as they are (no boundary condition), for reference",
        z,
        d8_lib,
        grid,
        fdir_lib,
        n_points=n_points,
        seed=seed,
        catchment_fn=False,
    )
    return ok_acc and ok_c


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or [p for p in DEFAULT if p.exists()]
    if not paths:
        print("no DEM found (looked in ../shared/realdata)")
        return 1
    ok = all([check(p) for p in paths])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
