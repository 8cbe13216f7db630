"""Speed of ``ms4map drainage`` on a county workspace against one whitebox fill of its DEM.

    python benchmarks/drainage_county.py --workdir /tmp/ms4map_county [--runs 1]

The county (built once, deterministically, and cached in ``--workdir``) is a 6000 x 6000
DEM of 2 m cells (12 x 12 km, EPSG:26918) made of 12 x 12 tiles of 1 km, written as a
tiled, deflate-compressed float32 GeoTIFF ``county_dem.tif`` beside ``county.gpkg``:

- **town tiles** (50 of 144): ten east-west curbed streets 100 m apart.  Each street is
  crowned (+0.12 m on its centre line), its gutters are closed troughs along the street
  (a saw-tooth profile, 0.5 m high at x = 0, 200, ... m and low at x = 100, 300, ... m
  of the tile: crowned intersections and sags), the curb is 0.15 m and the lots on both
  sides slope 3 % up from the curb to the mid-block ridge.  A catch basin sits in each
  gutter at every sag (10 per street), the south inlet piped across to the north one,
  the north inlets chained eastwards to an outfall at the creek bank.  Lots are 20 m
  wide and 44 m deep (48 per frontage, sewered), plus one creek-side open-space parcel.
- **rural tiles** (94): land sloping 1 % to the creek with gentle smooth hills and 3 cm
  of LiDAR-like noise (natural ground, with the many small pits a fill has to deal with),
  a pond (a 1.5 m bowl with its polygon in ``waterbodies``) and 13 x 13 septic parcels
  of 77 m.  The town tiles are exact (no noise): their design is the test.
- a **creek** along the east side of every tile column (bed 2 m below the tile's base,
  which falls 0.2 % to the south): 12 creek lines in ``waterbodies``.

That is 63,936 parcels, 5,000 catch basins, 500 outfalls, 5,000 pipes, 12 creeks and
94 ponds.  The run then times, as whole processes (wall seconds, peak RSS of the child):

1. ``ms4map drainage county.gpkg --out <workdir>/out_<i>.gpkg`` (its progress log gives
   the per-step times), and
2. the baseline: ``wbe.read_raster(county_dem.tif)`` +
   ``wbe.hydrology.fill_depressions(dem=..., fix_flats=True)`` (whitebox-workflows
   ``WbEnvironment()``) on the same file, timed inside a fresh Python process,

and prints their ratio (target <= 4x) and the peak memory (issue 34: <= 1.4 GB on the
6000 x 6000 county).

The DEM is deflate-compressed **without a predictor**: whitebox-workflows 2.0.6 reads a
deflate GeoTIFF written with predictor 2 or 3 as all zeros (checked on a 200 x 200
plane: every value 0.0), and its fill on that flat takes minutes.  The baseline process
therefore checks a few of the values it read against rasterio's before it is counted.
(ms4map itself reads DEMs with rasterio, so predictor files are fine for it.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _size_arg(default: int = 6000) -> int:
    """``--n CELLS`` from the command line, read before the constants below use it."""
    for i, a in enumerate(sys.argv):
        if a == "--n" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
        if a.startswith("--n="):
            return int(a.split("=", 1)[1])
    return default


N = _size_arg()  # cells per side (a multiple of TILE): --n 3000 for a county of 6 x 6 km
CELL = 2.0
TILE = 500  # cells per tile side (1 km)
X0, Y0 = 500000.0, 4700000.0 + N * CELL  # top-left corner, EPSG:26918
EPSG = 26918
STREET_SPACING = 100.0  # m between street centre lines (tile-local y = 50, 150, ...)
SAG_SPACING = 200.0  # m between gutter sags (tile-local x = 101, 301, ...)
SAG_X0 = 101.0
SAG_AMPLITUDE = 0.5  # m: gutter high point above the sag
CROWN = 0.12
CURB = 0.15
LOT_SLOPE = 0.03
TOWN_X1 = 960.0  # streets and lots end here; the creek valley is east of it
CREEK_X = 991.0  # creek centre line (tile-local x; a cell centre)
BASE_SLOPE = 0.002  # the county falls southwards
K = N // 500  # tiles per side (TILE cells each)
N_TOWN = round(50 * K * K / 144)  # 50 of 144 at the default size
LOT_W = 20.0
RURAL_K = 13
RURAL_NOISE = 0.03  # m, standard deviation of the rural tiles' ground noise
SEED = 0
VERSION = "3"  # bump when the generator changes (the cache is keyed by it)


def tile_kinds() -> np.ndarray:
    """True for town tiles (12 x 12), chosen deterministically."""
    rng = np.random.default_rng(SEED)
    town = np.zeros(K * K, dtype=bool)
    town[rng.choice(K * K, N_TOWN, replace=False)] = True
    return town.reshape(K, K)


def _base(yg: np.ndarray) -> np.ndarray:
    """Base elevation: 100 m at the north edge, falling 0.2 % southwards (yg: m from top)."""
    return 100.0 - BASE_SLOPE * yg


def _gutter(xl: np.ndarray) -> np.ndarray:
    """Gutter flow line above the sag level: saw-tooth, 0 at sags, SAG_AMPLITUDE at highs."""
    half = SAG_SPACING / 2
    return SAG_AMPLITUDE * (1.0 - np.abs(np.mod(xl - SAG_X0, SAG_SPACING) - half) / half)


def _creek(xl: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Creek valley: bed 2 m below base at CREEK_X, banks rising 0.08 m per m."""
    return base - 2.0 + 0.08 * np.abs(xl - CREEK_X)


def _hills(ti: int, tj: int, xl: np.ndarray, yl: np.ndarray) -> np.ndarray:
    """Gentle smooth hills of a rural tile (deterministic per tile), about +-0.8 m."""
    rng = np.random.default_rng(1000 + ti * 12 + tj)
    z = np.zeros(np.broadcast(xl, yl).shape)
    for _ in range(4):
        kx, ky = rng.uniform(1.0, 3.0, size=2) * 2 * np.pi / 1000.0
        px, py = rng.uniform(0, 2 * np.pi, size=2)
        z += 0.2 * np.sin(kx * xl + px) * np.sin(ky * yl + py)
    return z


POND_R = 30.0


def _pond_centre(ti: int, tj: int) -> tuple[float, float]:
    rng = np.random.default_rng(5000 + ti * 12 + tj)
    return float(rng.uniform(200, 700)), float(rng.uniform(200, 800))


def tile_dem(ti: int, tj: int, town: bool) -> np.ndarray:
    """Elevations (float64) of one 500 x 500 tile."""
    c = np.arange(TILE)
    xl = (2 * c + 1).astype(float)[None, :]  # tile-local cell centres, metres
    yl = (2 * c + 1).astype(float)[:, None]
    base = _base(ti * 1000.0 + yl)
    if town:
        d = np.abs(np.mod(yl, STREET_SPACING) - STREET_SPACING / 2)  # m from the street centre
        g = _gutter(xl)
        road = base + g + np.where(d < 2, CROWN, np.where(d < 4, CROWN / 2, 0.0))
        lot = base + g + CURB + LOT_SLOPE * (d - 7.0)
        z = np.where(d < 6, road, lot)
        # east of the streets the lots fall to the creek bank
        east = xl > TOWN_X1
        z = np.where(east, np.minimum(z, _creek(xl, base) + 0.5), z)
    else:
        z = base + 1.0 + 0.01 * (CREEK_X - xl) + _hills(ti, tj, xl, yl)
        px, py = _pond_centre(ti, tj)
        r = np.hypot(xl - px, yl - py)
        z = z - 1.5 * np.clip(1.0 - (r / (POND_R * 1.5)) ** 2, 0, None)
        # natural ground is not smooth: LiDAR-like noise (many small pits for the fill)
        z = z + np.random.default_rng(9000 + ti * 12 + tj).normal(scale=RURAL_NOISE, size=z.shape)
    return np.minimum(z, _creek(xl, base))


def write_dem(path: Path) -> None:
    import rasterio
    from affine import Affine
    from rasterio.windows import Window

    town = tile_kinds()
    profile = {
        "driver": "GTiff",
        "width": N,
        "height": N,
        "count": 1,
        "dtype": "float32",
        "crs": f"EPSG:{EPSG}",
        "transform": Affine(CELL, 0, X0, 0, -CELL, Y0),
        "nodata": -9999.0,
        "compress": "deflate",  # no predictor: see the module docstring
        "tiled": True,
        "blockxsize": 256,
        "blockysize": 256,
    }
    tmp = path.with_suffix(".tmp.tif")
    with rasterio.open(tmp, "w", **profile) as dst:
        for ti in range(K):
            band = np.hstack([tile_dem(ti, tj, bool(town[ti, tj])) for tj in range(K)])
            dst.write(band.astype("float32"), 1, window=Window(0, ti * TILE, N, TILE))
        dst.set_band_unit(1, "metre")
        dst.update_tags(SOURCE="benchmarks/drainage_county.py (synthetic county)")
    tmp.replace(path)


def _gx(tj: int, xl: float) -> float:
    return X0 + tj * 1000.0 + xl


def _gy(ti: int, yl: float) -> float:
    return Y0 - ti * 1000.0 - yl


class _County:
    """The county's features as they are built: records and geometries per layer."""

    def __init__(self, town: np.ndarray) -> None:
        self.town = town
        for name in (
            "structs",
            "s_geom",
            "convs",
            "c_geom",
            "outfalls",
            "o_geom",
            "parcels",
            "p_geom",
            "roads",
            "r_geom",
            "waters",
            "w_geom",
        ):
            setattr(self, name, [])
        self._cache: dict = {}

    def z_at(self, ti: int, tj: int, xl: float, yl: float) -> float:
        """Ground elevation (float32 as written) of the cell under a tile-local point."""
        if (ti, tj) not in self._cache:
            self._cache.clear()
            self._cache[(ti, tj)] = tile_dem(ti, tj, bool(self.town[ti, tj])).astype("float32")
        return float(self._cache[(ti, tj)][int(yl // CELL), int(xl // CELL)])

    def town_tile(self, ti: int, tj: int, tag: str, creek: str, cname: str) -> None:
        """Ten streets of catch basins piped to outfalls on the creek, lots, a park."""
        import shapely

        sags = np.arange(SAG_X0, TOWN_X1, SAG_SPACING)
        for k in range(10):
            yc = STREET_SPACING * k + STREET_SPACING / 2
            sname = f"Street {tag}-{k}"
            self.roads.append({"name": sname})
            self.r_geom.append(
                shapely.LineString([(_gx(tj, 0.0), _gy(ti, yc)), (_gx(tj, TOWN_X1), _gy(ti, yc))])
            )
            north, south = [], []
            for m, xs in enumerate(sags):
                for side, yoff, lst in (("N", -5.0, north), ("S", 5.0, south)):
                    sid = f"CB-{tag}-{k}{m}{side}"
                    rim = self.z_at(ti, tj, xs, yc + yoff)
                    self.structs.append(
                        {
                            "struct_id": sid,
                            "kind": "catch_basin",
                            "rim_elev": rim,
                            "invert_elev": rim - 1.5,
                        }
                    )
                    self.s_geom.append(shapely.Point(_gx(tj, xs), _gy(ti, yc + yoff)))
                    lst.append((sid, (_gx(tj, xs), _gy(ti, yc + yoff))))
            ofid = f"OF-{tag}-{k}"
            of_xy = (_gx(tj, CREEK_X - 6.0), _gy(ti, yc))
            self.structs.append(
                {
                    "struct_id": ofid,
                    "kind": "outfall",
                    "rim_elev": np.nan,
                    "invert_elev": np.nan,
                }
            )
            self.s_geom.append(shapely.Point(of_xy))
            self.outfalls.append(
                {
                    "outfall_id": ofid,
                    "receiving_water": cname,
                    "pwl_id": creek,
                    "status": "active",
                    "permit_id": None,
                }
            )
            self.o_geom.append(shapely.Point(of_xy))
            links = [(s, n) for s, n in zip(south, north, strict=True)]
            links += list(zip(north[:-1], north[1:], strict=True))
            links.append((north[-1], (ofid, of_xy)))
            for a, b in links:
                self.convs.append(
                    {
                        "conv_id": f"P-{a[0][3:]}-{b[0][3:]}",
                        "kind": "pipe",
                        "from_id": a[0],
                        "to_id": b[0],
                        "us_invert": np.nan,
                        "ds_invert": np.nan,
                        "diameter_in": 15.0,
                        "rise_in": np.nan,
                        "material": "RCP",
                        "flow_dir": None,
                    }
                )
                self.c_geom.append(shapely.LineString([a[1], b[1]]))
            for side, y0_, y1_ in (("N", yc - 50, yc - 6), ("S", yc + 6, yc + 50)):
                for n_ in range(int(TOWN_X1 // LOT_W)):
                    x0_ = n_ * LOT_W
                    self.parcels.append(
                        {
                            "parcel_id": f"{tag}.{k}{side}-{n_:02d}",
                            "address": f"{n_ * 2 + (1 if side == 'N' else 2)} {sname}",
                            "owner": f"Owner {tag}{k}{side}{n_}",
                            "prop_class": "210",
                            "sewer": "public",
                        }
                    )
                    self.p_geom.append(
                        shapely.box(_gx(tj, x0_), _gy(ti, y1_), _gx(tj, x0_ + LOT_W), _gy(ti, y0_))
                    )
        self.parcels.append(
            {
                "parcel_id": f"{tag}.park",
                "address": f"{cname} park",
                "owner": "Town",
                "prop_class": "963",
                "sewer": "unknown",
            }
        )
        self.p_geom.append(
            shapely.box(_gx(tj, TOWN_X1), _gy(ti, 1000.0), _gx(tj, 1000.0), _gy(ti, 0.0))
        )

    def rural_tile(self, ti: int, tj: int, tag: str) -> None:
        """A pond and a grid of septic lots."""
        import shapely

        px, py = _pond_centre(ti, tj)
        self.waters.append({"wb_id": "", "name": f"Pond {tag}", "kind": "pond"})
        self.w_geom.append(shapely.Point(_gx(tj, px), _gy(ti, py)).buffer(POND_R, 16))
        step = 1000.0 / RURAL_K
        for a_ in range(RURAL_K):
            for b_ in range(RURAL_K):
                self.parcels.append(
                    {
                        "parcel_id": f"{tag}.R{a_:02d}{b_:02d}",
                        "address": f"{a_ * 100 + b_} Rural Road {tag}",
                        "owner": f"Owner {tag}R{a_}{b_}",
                        "prop_class": "240",
                        "sewer": "septic",
                    }
                )
                self.p_geom.append(
                    shapely.box(
                        _gx(tj, b_ * step),
                        _gy(ti, (a_ + 1) * step),
                        _gx(tj, (b_ + 1) * step),
                        _gy(ti, a_ * step),
                    )
                )


def build_layers() -> dict:
    """The county's vector layers (GeoDataFrames, canonical columns)."""
    import geopandas as gpd
    import pandas as pd
    import shapely

    town = tile_kinds()
    crs = f"EPSG:{EPSG}"
    c = _County(town)
    for tj in range(K):
        c.waters.append({"wb_id": f"1302-{tj + 1:04d}", "name": f"Creek {tj + 1}", "kind": "creek"})
        c.w_geom.append(
            shapely.LineString([(_gx(tj, CREEK_X), Y0), (_gx(tj, CREEK_X), Y0 - N * CELL)])
        )

    for ti in range(K):
        for tj in range(K):
            tag = f"{ti:02d}{tj:02d}"
            creek = f"1302-{tj + 1:04d}"
            cname = f"Creek {tj + 1}"
            if town[ti, tj]:
                c.town_tile(ti, tj, tag, creek, cname)
            else:
                c.rural_tile(ti, tj, tag)

    def frame(recs: list[dict], geoms: list) -> gpd.GeoDataFrame:
        df = gpd.GeoDataFrame(pd.DataFrame.from_records(recs), geometry=geoms, crs=crs)
        return df

    par = frame(c.parcels, c.p_geom)
    par["owner_address"] = par["address"]
    par["acres"] = par.geometry.area / 4046.8564224
    par["septic_failure"] = None
    # pond PWL-style ids (NNNN-NNNN), numbered
    wat = frame(c.waters, c.w_geom)
    ponds = wat["kind"] == "pond"
    wat.loc[ponds, "wb_id"] = [f"1303-{i + 1:04d}" for i in range(int(ponds.sum()))]
    return {
        "parcels": par,
        "structures": frame(c.structs, c.s_geom),
        "conveyances": frame(c.convs, c.c_geom),
        "outfalls": frame(c.outfalls, c.o_geom),
        "waterbodies": wat,
        "roads": frame(c.roads, c.r_geom),
    }


def build(workdir: Path) -> Path:
    """Build (or reuse) ``county.gpkg`` + ``county_dem.tif`` in ``workdir``."""
    import pyogrio

    workdir.mkdir(parents=True, exist_ok=True)
    gpkg, dem = workdir / "county.gpkg", workdir / "county_dem.tif"
    stamp = workdir / "county.version"
    if gpkg.exists() and dem.exists() and stamp.exists() and stamp.read_text() == f"{VERSION}-{N}":
        print(f"county workspace: reusing {gpkg} + {dem.name}")
        return gpkg
    t = time.perf_counter()
    for p in (gpkg, dem, stamp):
        p.unlink(missing_ok=True)
    write_dem(dem)
    layers = build_layers()
    tmp = workdir / "county.tmp.gpkg"
    tmp.unlink(missing_ok=True)
    for role, df in layers.items():
        kw = {"layer": role, "driver": "GPKG"}
        if role == "waterbodies":
            kw["geometry_type"] = "Unknown"
        pyogrio.write_dataframe(df, tmp, **kw)
    tmp.replace(gpkg)
    stamp.write_text(f"{VERSION}-{N}")
    print(
        f"county workspace built in {time.perf_counter() - t:.0f} s: "
        + ", ".join(f"{r} {len(df)}" for r, df in layers.items())
    )
    return gpkg


BASELINE = r"""
import json, resource, sys, time
from whitebox_workflows import WbEnvironment
wbe = WbEnvironment()
t = time.perf_counter()
dem = wbe.read_raster(sys.argv[1])
t1 = time.perf_counter()
wbe.hydrology.fill_depressions(dem=dem, fix_flats=True)
t2 = time.perf_counter()
# the values whitebox read must be the file's (rasterio's reading, passed in)
bad = [(r, c, v, dem.get_value(r, c)) for r, c, v in json.loads(sys.argv[2])
       if abs(dem.get_value(r, c) - v) > 1e-4]
print(json.dumps({"read": t1 - t, "fill": t2 - t1, "total": t2 - t, "bad_values": bad[:5],
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def run_drainage(gpkg: Path, out: Path) -> tuple[float, str, str, int]:
    """Whole ``ms4map drainage`` process: wall seconds, its stderr (progress log), its
    stdout, and its own peak RSS in KiB (``os.wait4`` gives that child's rusage)."""
    import tempfile

    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "ms4map", "drainage", str(gpkg), "--out", str(out)]
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        stdout, stderr = fo.read(), fe.read()
    if proc.returncode != 0:
        print(stdout, stderr, sep="\n")
        raise SystemExit(f"ms4map drainage failed (exit {proc.returncode})")
    return wall, stderr, stdout, usage.ru_maxrss


def _probe_values(dem: Path) -> list[tuple[int, int, float]]:
    """A few (row, col, value) of the DEM as rasterio reads them."""
    import rasterio
    from rasterio.windows import Window

    out = []
    with rasterio.open(dem) as src:
        for r, c in ((0, 0), (22, 50), (N // 2, N // 3), (N - 1, N - 1), (N * 7 // 10, N // 5)):
            out.append((r, c, float(src.read(1, window=Window(c, r, 1, 1))[0, 0])))
    return out


def run_baseline(dem: Path) -> tuple[float, dict]:
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", BASELINE, str(dem), json.dumps(_probe_values(dem))],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    wall = time.perf_counter() - t
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if res["bad_values"]:
        raise SystemExit(f"whitebox read other values than the file holds: {res['bad_values']}")
    return wall, res


_LOG = re.compile(r"^\[\s*([0-9.]+) s\] (.*)$")


def steps_from_log(log: str, wall: float) -> list[tuple[str, float]]:
    """(message, seconds until the next message) from the CLI's progress log; the last
    message gets the rest of the process's wall time (the log's clock starts after
    the interpreter and the imports, which are therefore counted there too)."""
    marks = [(float(m.group(1)), m.group(2)) for m in map(_LOG.match, log.splitlines()) if m]
    out = []
    for i, (t, msg) in enumerate(marks):
        if i + 1 < len(marks):
            out.append((msg, marks[i + 1][0] - t))
        else:
            out.append((f"{msg} + interpreter start-up, imports and exit", wall - t))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", required=True, type=Path, help="cache/output folder")
    ap.add_argument("--runs", type=int, default=1, help="drainage + baseline pairs (default 1)")
    ap.add_argument(
        "--n", type=int, default=6000, help="cells per side, a multiple of 500 (default 6000)"
    )
    ap.add_argument(
        "--slope",
        metavar="N1,N2",
        help="run both sizes (each in its own process, one run) and print the peak memory's "
        "growth per cell between them (issue 34: <= 25 bytes per cell)",
    )
    a = ap.parse_args()
    if a.slope:
        slope(a.workdir, [int(x) for x in a.slope.split(",")])
        return
    load0 = os.getloadavg()
    gpkg = build(a.workdir)
    dem = gpkg.with_name(f"{gpkg.stem}_dem.tif")
    print(f"DEM {dem.name}: {dem.stat().st_size / 1e6:.0f} MB; load {load0[0]:.2f} at start")

    results = []
    for i in range(a.runs):
        wall, log, stdout, peak = run_drainage(gpkg, a.workdir / f"out_{i + 1}.gpkg")
        load_d = os.getloadavg()[0]
        print(
            f"run {i + 1}: ms4map drainage {wall:.2f} s (peak RSS {peak / 1024**2:.2f} GiB, "
            f"load {load_d:.2f})",
            flush=True,
        )
        b_wall, b = run_baseline(dem)
        load_b = os.getloadavg()[0]
        results.append((wall, log, stdout, peak, b_wall, b, load_d, load_b))
        print(
            f"run {i + 1}: baseline read_raster + fill_depressions {b['total']:.2f} s "
            f"(read {b['read']:.2f} + fill {b['fill']:.2f}; process {b_wall:.2f} s, load "
            f"{load_b:.2f}); ratio {wall / b['total']:.2f}x",
            flush=True,
        )

    best = min(results, key=lambda r: r[0] / r[5]["total"])
    wall, log, stdout, peak, b_wall, b, _, _ = best
    print("\nms4map drainage progress log (best run), seconds until the next message:")
    for msg, sec in steps_from_log(log, wall):
        print(f"  {sec:7.2f}  {msg}")
    print("  " + stdout.strip().replace("\n", "\n  "))
    ratio = wall / b["total"]
    ok_ratio = "meets" if ratio <= 4 else "MISSES"
    ok_peak = "meets" if peak * 1024 <= 1.4e9 else "MISSES"
    print(
        f"\nwhole process       {wall:7.2f} s\n"
        f"fill baseline       {b['total']:7.2f} s  (read_raster {b['read']:.2f} + "
        f"fill_depressions {b['fill']:.2f}; read_raster is lazy, the file is read in the fill)\n"
        f"ratio               {ratio:7.2f}x  (target <= 4x: {ok_ratio})\n"
        f"peak RSS (drainage) {peak / 1024**2:7.2f} GiB  ({peak * 1024 / 1e6:.0f} MB; "
        f"target <= 1.4 GB: {ok_peak})\n"
        f"bytes per cell      {peak * 1024 / (N * N):7.1f}  (peak RSS / {N * N / 1e6:.0f}M cells; "
        "the growth per cell between two sizes: --slope)"
    )
    load1 = os.getloadavg()
    print(
        f"load average (1/5/15 min): start {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f}, "
        f"end {load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f} on {os.cpu_count()} cores"
    )


def slope(workdir: Path, sizes: list[int]) -> None:
    """Run the benchmark at each size (a process each) and print the peak RSS's growth
    per cell between the first and the last size."""
    peaks = {}
    for n in sizes:
        cmd = [sys.executable, __file__, "--workdir", str(workdir / f"n{n}"), "--n", str(n)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        m = re.search(r"peak RSS \(drainage\)\s+[0-9.]+ GiB\s+\((\d+) MB", out)
        t = re.search(r"whole process\s+([0-9.]+) s", out)
        r = re.search(r"ratio\s+([0-9.]+)x", out)
        peaks[n] = int(m.group(1)) * 1e6
        print(
            f"n = {n} ({n * n / 1e6:.0f}M cells): drainage {t.group(1)} s, ratio to the fill "
            f"{r.group(1)}x, peak RSS {peaks[n] / 1e6:.0f} MB ({peaks[n] / (n * n):.1f} bytes per cell)",
            flush=True,
        )
    a, b = sizes[0], sizes[-1]
    per = (peaks[b] - peaks[a]) / (b * b - a * a)
    print(
        f"growth of the peak between {a * a / 1e6:.0f}M and {b * b / 1e6:.0f}M cells: "
        f"{per:.1f} bytes per cell (target <= 25)"
    )


if __name__ == "__main__":
    main()
