"""Bytes the app sends per map render on a synthetic county of 300,000 parcels.

Two views, as the app renders them (``ms4map.maps.render_layers``: view
limiting with the spatial index, parcels from a zoom level on, simplification
at half a screen pixel but never under 0.5 m, 6 decimals):

* the whole-county view (parcels too many to draw: the app asks to zoom in);
* a 1 km view where parcels show.

Baseline: a plain folium map of every parcel (``folium.GeoJson(parcels)``),
the way a notebook would do it.  Target: <= 2 MB per render.

Usage::

    python benchmarks/map_bytes.py [--parcels 300000] [--baseline-parcels N]

``--baseline-parcels`` limits the baseline to the first N parcels and scales
the figure up linearly (it is printed as an estimate), for small machines.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ms4map.app.static import offline_css, offline_js  # noqa: E402
from ms4map.io.workspace import Workspace  # noqa: E402
from ms4map.outputs import maps  # noqa: E402

WORKING_CRS = "EPSG:26918"
X0, Y0 = 580000.0, 4740000.0


def county_layers(n_parcels: int = 300_000, *, lot: float = 30.0, seed: int = 0) -> dict:
    """A synthetic county: irregular lots (~24 vertices each), a storm network, outfalls.

    Lots sit on a square grid with 12 m streets every 10 lots; each lot's edges
    are densified to 5 vertices a side and jittered by up to 0.3 m, like real
    digitised parcels.  Structures: one catch basin per 6 lots along the
    streets, piped in runs of 20 to an outfall.
    """
    rng = np.random.default_rng(seed)
    side = int(math.ceil(math.sqrt(n_parcels)))
    i, j = np.divmod(np.arange(n_parcels), side)
    pitch = lot + 1.0
    street = 12.0
    x = X0 + j * pitch + (j // 10) * street
    y = Y0 + i * pitch + (i // 10) * street
    # densified square ring, 20 vertices, jittered
    t = np.linspace(0, 1, 6)[:-1]
    ring = (
        np.concatenate(
            [
                np.c_[t, np.zeros_like(t)],
                np.c_[np.ones_like(t), t],
                np.c_[1 - t, np.ones_like(t)],
                np.c_[np.zeros_like(t), 1 - t],
            ]
        )
        * lot
    )
    coords = ring[None, :, :] + np.c_[x, y][:, None, :]
    coords = coords + rng.uniform(-0.3, 0.3, coords.shape)
    coords = np.concatenate([coords, coords[:, :1, :]], axis=1)
    polys = shapely.polygons(coords)
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": [f"{a:04d}.-{b:04d}" for a, b in zip(i, j, strict=True)],
            "address": [f"{b + 1} Street {a + 1}" for a, b in zip(i, j, strict=True)],
            "sewer": np.where(rng.random(n_parcels) < 0.3, "septic", "public"),
            "prop_class": np.where(rng.random(n_parcels) < 0.1, "484", "210"),
        },
        geometry=polys,
        crs=WORKING_CRS,
    )
    # catch basins along every 10th-row street
    rows = np.arange(10, side, 10)
    cols = np.arange(0, side, 6)
    cx = X0 + cols * pitch + (cols // 10) * street
    sx, sy = np.meshgrid(cx, Y0 + rows * pitch + (rows // 10 - 1) * street + street / 2 - 1.0)
    pts = shapely.points(sx.ravel(), sy.ravel())
    structures = gpd.GeoDataFrame(
        {"struct_id": [f"CB-{k}" for k in range(len(pts))], "kind": "catch_basin"},
        geometry=pts,
        crs=WORKING_CRS,
    )
    xy = np.c_[sx.ravel(), sy.ravel()]
    lines, ids = [], []
    per_row = sx.shape[1]
    for r in range(sx.shape[0]):
        for k in range(per_row - 1):
            a, b = r * per_row + k, r * per_row + k + 1
            lines.append(shapely.linestrings([xy[a], xy[b]]))
            ids.append(f"P-{a}")
    conveyances = gpd.GeoDataFrame(
        {"conv_id": ids, "kind": "pipe"}, geometry=lines, crs=WORKING_CRS
    )
    out_pts = shapely.points(sx[:, -1] + 20, sy[:, -1])
    outfalls = gpd.GeoDataFrame(
        {
            "outfall_id": [f"OF-{r}" for r in range(len(out_pts))],
            "receiving_water": "County Creek",
            "pwl_id": "1101-0001",
            "status": "unknown",
        },
        geometry=out_pts,
        crs=WORKING_CRS,
    )
    return {
        "parcels": parcels,
        "structures": structures,
        "conveyances": conveyances,
        "outfalls": outfalls,
    }


def render_bytes(layers: dict, view: maps.MapView, crs) -> tuple[int, float, maps.RenderStats]:
    """Bytes of the map the app would send for ``view`` (base map + layer groups)."""
    t = time.perf_counter()
    stats = maps.RenderStats()
    m = maps.base_map(
        view,
        asset_js=offline_js("/app/static/vendor"),
        asset_css=offline_css("/app/static/vendor"),
    )
    for fg in maps.render_layers(layers, view, crs=crs, stats=stats):
        fg.add_to(m)
    html = m.get_root().render()
    return len(html.encode()), time.perf_counter() - t, stats


def baseline_bytes(parcels: gpd.GeoDataFrame) -> tuple[int, float]:
    """A plain folium map of the parcels: folium.GeoJson of the whole frame."""
    import folium

    t = time.perf_counter()
    b = parcels.to_crs(4326).total_bounds
    m = folium.Map(location=[(b[1] + b[3]) / 2, (b[0] + b[2]) / 2], zoom_start=12)
    folium.GeoJson(parcels[["parcel_id", "geometry"]].to_crs(4326)).add_to(m)
    html = m.get_root().render()
    return len(html.encode()), time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parcels", type=int, default=300_000)
    ap.add_argument(
        "--baseline-parcels",
        type=int,
        default=None,
        help="baseline on the first N parcels, scaled up (default: all)",
    )
    args = ap.parse_args(argv)

    t = time.perf_counter()
    lay = county_layers(args.parcels)
    ws = Workspace(path=None, crs=CRS.from_user_input(WORKING_CRS), layers=lay)
    t_build = time.perf_counter() - t
    t = time.perf_counter()
    layers = maps.build_layers(ws)
    for lyr in layers.values():
        lyr.frame.sindex  # noqa: B018 - the app builds the index once, cached
    t_layers = time.perf_counter() - t
    n = len(lay["parcels"])
    print(
        f"synthetic county: {n:,} parcels, {len(lay['structures']):,} structures, "
        f"{len(lay['conveyances']):,} pipes, {len(lay['outfalls']):,} outfalls "
        f"(built in {t_build:.1f} s; map layers + spatial index {t_layers:.1f} s, once)"
    )

    whole = maps.MapView.from_bounds(tuple(lay["parcels"].total_bounds), ws.crs)
    cx, cy = lay["parcels"].geometry.iloc[n // 2 + int(math.sqrt(n)) // 2].centroid.coords[0]
    km = maps.MapView.from_bounds((cx - 500, cy - 500, cx + 500, cy + 500), ws.crs)
    rows = []
    for name, view in (("whole county", whole), ("1 km view", km)):
        size, secs, stats = render_bytes(layers, view, ws.crs)
        rows.append((name, view.zoom, size, secs, stats))

    k = args.baseline_parcels or n
    base_size, base_secs = baseline_bytes(lay["parcels"].iloc[:k])
    scale = n / k
    est = f" (estimated from the first {k:,} parcels)" if k < n else ""

    print()
    print(f"{'render':<28}{'zoom':>5}{'bytes':>14}{'MB':>9}{'server s':>10}  parcels drawn")
    for name, zoom, size, secs, stats in rows:
        print(
            f"{'ms4map ' + name:<28}{zoom:>5}{size:>14,}{size / 2**20:>9.2f}{secs:>10.2f}  "
            f"{stats.features.get('parcels', 0):,}"
        )
        for note in stats.notes:
            print(f"{'':<33}note: {note}")
    print(
        f"{'baseline: folium all parcels':<28}{'':>5}{int(base_size * scale):>14,}"
        f"{base_size * scale / 2**20:>9.2f}{base_secs * scale:>10.2f}  {n:,}{est}"
    )
    print()
    worst = max(r[2] for r in rows)
    print(
        f"target <= 2 MB per render: {'met' if worst <= 2 * 2**20 else 'NOT met'} "
        f"(largest {worst / 2**20:.2f} MB; baseline {base_size * scale / 2**20:,.0f} MB, "
        f"{base_size * scale / worst:,.0f}x more)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
