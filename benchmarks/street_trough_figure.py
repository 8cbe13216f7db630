"""Picture for docs/hydrology.md: a curbed street trough before and after "targets are outlets".

Usage: ``python benchmarks/street_trough_figure.py [--out docs/img/street_trough.png]``

The terrain is ``tests/hydrology/terrains.py::curbed_street`` (a closed street trough, 4 inlets,
lots both sides, a creek beyond the east intersection).  "Before" re-creates the
previous conditioning with the same library calls: the burned DEM filled as a whole by
whitebox-workflows (the inlets filled with the trough, no outlet but a lower cell), the
inlet cells put back as sinks, D8, first target.
"After" is ``ms4map.overland.route``.  Prints the share of the lots' cells reaching
an inlet under each.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "hydrology"))

import terrains as T  # noqa: E402
from test_hydrology_overland_fixtures import CRS18, TR, dem  # noqa: E402

from ms4map.hydrology import overland  # noqa: E402


def before(t: T.Terrain) -> np.ndarray:
    """Labels under the previous rule (targets filled with the sag, then made sinks)."""
    import pyflwdir

    grid = overland.rasterize_targets(
        t.z.shape, TR, np.isfinite(t.z), inlets=t.inlet_gdf(), waterbodies=t.water_gdf()
    )
    rows, cols = np.nonzero(grid.mask)
    burned, sunk = grid.lowered(rows, cols)  # waters and conveyances 2 m, inlets 1 m
    zb = t.z.copy()
    zb[rows, cols] -= np.where(burned, 2.0, 0.0) + np.where(sunk, 1.0, 0.0)
    with overland._Whitebox() as wb:  # the burned DEM filled as a whole, as before
        arr, _ = wb.fetch(wb.fill(wb.send(zb, TR, CRS18, "burned")), "filled")
    filled = np.array(arr, dtype="float64")
    cond = np.where(grid.mask, zb, filled)
    flw = pyflwdir.from_array(overland.d8_pointer(cond, TR, CRS18), ftype="d8", transform=TR)
    idx = np.flatnonzero(grid.seed)
    return flw.basins(idxs=idx, ids=grid.seed.ravel()[idx].astype(np.uint32)), filled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/img/street_trough.png")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    t = T.curbed_street()
    old, filled_old = before(t)
    res = overland.route(dem(t.z), inlets=t.inlet_gdf(), waterbodies=t.water_gdf())
    new = res.labels
    lots = np.zeros(t.z.shape, bool)
    for lot in t.lots:
        lots[t.lot_cells(lot)] = True
    n_in = len(t.inlets)
    # labels: 1 = creek, 2.. = inlets (rasterize_targets adds waters first)
    for name, lab in (("before", old), ("after", new)):
        share = float(((lab[lots] >= 2) & (lab[lots] <= 1 + n_in)).mean())
        print(f"{name}: {share:.1%} of the lots' cells reach one of the street's {n_in} inlets")

    colours = ["#ffffff", "#4a90d9", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#999999"]
    cmap = ListedColormap(colours)
    fig, axes = plt.subplots(3, 1, figsize=(9, 8.2), constrained_layout=True)
    for ax, lab, title in (
        (axes[0], old, "before: the trough filled to its spill, D8 across the flat"),
        (axes[1], new, "after: inlets are outlets of the fill (each gutter segment to its inlet)"),
    ):
        show = np.where(lab > 0, np.minimum(lab, 6), 6).astype(float)
        ax.imshow(show, cmap=cmap, vmin=0, vmax=6, interpolation="nearest")
        for nid, (r, c) in t.inlets.items():
            ax.plot(c, r, "ks", ms=4)
            ax.annotate(nid, (c, r), xytext=(3, -3), textcoords="offset points", fontsize=7)
        ax.axvline(166, color="#4a90d9", lw=2)
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0].text(167, 5, "creek", color="#4a90d9", fontsize=7)
    cols = np.arange(t.z.shape[1])
    axes[2].plot(cols, t.z[26], "k-", lw=1, label="north gutter (DEM)")
    axes[2].plot(cols, filled_old[26], "--", color="#d55e00", lw=1, label="before: filled")
    axes[2].plot(
        cols, res.conditioned[26], ":", color="#009e73", lw=1.5, label="after: conditioned"
    )
    for c in (45, 114):
        axes[2].axvline(c, color="#999999", lw=0.5)
    axes[2].set_ylim(98.8, 101.4)
    axes[2].set_xlabel("column (2 m cells); inlets at 45 and 114 (the cells lie 1 m lower)")
    axes[2].set_ylabel("m")
    axes[2].legend(fontsize=7, loc="lower right")
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
