"""`ms4map batch` speed: 8 synthetic 1 km towns, in this process vs a local Dask cluster.

Builds ``--towns`` synthetic towns (default 8) of ``--size`` metres square (default
1000) on a ``--cell`` metre DEM (default 1 m: 1M cells per town, the resolution of New
York's LiDAR DEMs), then runs :func:`ms4map.batch.run_batch` on them twice in the same
run: ``--scheduler none`` (one process, no Dask) and ``--scheduler local:N`` (default 2
workers; cluster start-up included in its wall time).  Checks that every layer of every
town is identical between the two runs, and prints both wall times, their ratio (target
<= 0.65 on 2 cores), the peak memory per worker and the machine's load.

Each town: a terrain sloping south to a creek (with random swells), a street grid
(N-S streets every 200 m, E-W every 200 m) with curbed troughs, a catch basin every 50
m, pipes down each N-S street to an outfall on the creek, E-W streets piped to the
junctions, about 900 lots (25 x 40 m) cut back from the streets, the east third on
septic; odd towns' creek is listed for phosphorus.

    python benchmarks/batch_speed.py                  # 8 towns, none vs local:2
    python benchmarks/batch_speed.py --towns 2 --size 400 --workers 1   # a quick check

Then (``--cli-pairs``, default 3) the ``ms4map batch`` command itself is timed the same
way, a new process per run, none and local alternated: the in-process figures start from
a process that already imported geopandas and GDAL (to build the towns), which a user's
``--scheduler none`` run pays too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import rasterio
import shapely
from affine import Affine

CRS = "EPSG:26918"
STREET_SPACING = 200.0
CB_SPACING = 50.0
CREEK_V = 40.0


def build_town(folder: Path, seed: int, *, size: float = 1000.0, cell: float = 1.0) -> Path:
    """One synthetic town as ``folder/town.gpkg`` + ``folder/town_dem.tif``."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    x0, y0 = 560_000.0 + 3_000.0 * seed, 4_700_000.0
    n = int(round(size / cell))
    # -- terrain: south slope to the creek, random swells, street troughs ----------------
    vv, uu = np.mgrid[0:n, 0:n].astype(float)
    u = (uu + 0.5) * cell
    v = size - (vv + 0.5) * cell  # rows grow southwards; v is northing from the edge
    z = 100.0 + 0.02 * v
    for _ in range(6):
        k = rng.uniform(1 / 400, 1 / 120, size=2)
        ph = rng.uniform(0, 2 * np.pi, size=2)
        z += rng.uniform(0.1, 0.4) * np.sin(k[0] * u + ph[0]) * np.cos(k[1] * v + ph[1])
    z -= 1.5 * np.exp(-(((v - CREEK_V) / 8.0) ** 2))
    ns = np.arange(STREET_SPACING / 2, size, STREET_SPACING)  # N-S streets (u)
    ew = np.arange(STREET_SPACING, size - 1, STREET_SPACING)  # E-W streets (v)
    ns_top = size - 20.0
    for su in ns:
        z -= 0.15 * ((np.abs(u - su) < 3.0) & (v > CREEK_V + 40) & (v < ns_top))
    for sv in ew:
        z -= 0.15 * ((np.abs(v - sv) < 3.0) & (u > 20) & (u < size - 20))
    z = np.round(z, 3)
    with rasterio.open(
        folder / "town_dem.tif",
        "w",
        driver="GTiff",
        height=n,
        width=n,
        count=1,
        dtype="float32",
        crs=CRS,
        transform=Affine(cell, 0, x0, 0, -cell, y0 + size),
        tiled=True,
        compress="deflate",
    ) as dst:
        dst.write(z.astype("float32"), 1)

    def pt(pu: float, pv: float) -> shapely.Point:
        return shapely.Point(x0 + pu, y0 + pv)

    # -- structures and pipes -------------------------------------------------------------
    structs: list[tuple[str, str, float, float]] = []
    pipes: list[tuple[str, str, str]] = []
    where: dict[str, tuple[float, float]] = {}

    def add(sid: str, kind: str, pu: float, pv: float) -> str:
        structs.append((sid, kind, pu, pv))
        where[sid] = (pu, pv)
        return sid

    outfalls = []
    junction: dict[tuple[int, int], str] = {}
    for i, su in enumerate(ns):
        vs = np.arange(CREEK_V + 60, ns_top - 10, CB_SPACING)
        chain = [add(f"CB-{i}-{j}", "catch_basin", su, sv) for j, sv in enumerate(vs)]
        for j, sv in enumerate(vs):
            junction[(i, int(sv))] = chain[j]
        of = add(f"OF-{i}", "outfall", su, CREEK_V + 8)
        outfalls.append(of)
        seq = [*chain[::-1], of]
        pipes += [(f"P-{a}", a, b) for a, b in zip(seq[:-1], seq[1:], strict=True)]
    for k, sv in enumerate(ew):
        # each E-W CB drains to the nearest N-S street's CB on its row (or the closest)
        for m, cu in enumerate(np.arange(CB_SPACING, size - 20, CB_SPACING)):
            if np.min(np.abs(ns - cu)) < 10:
                continue
            i = int(np.argmin(np.abs(ns - cu)))
            vs = np.array([where[junction[key]][1] for key in junction if key[0] == i])
            jv = int(vs[np.argmin(np.abs(vs - sv))])
            cb = add(f"EW-{k}-{m}", "catch_basin", cu, sv)
            pipes.append((f"P-{cb}", cb, junction[(i, jv)]))
    structures = gpd.GeoDataFrame(
        {
            "struct_id": [s[0] for s in structs],
            "kind": [s[1] for s in structs],
            "rim_elev": np.nan,
            "invert_elev": np.nan,
        },
        geometry=[pt(s[2], s[3]) for s in structs],
        crs=CRS,
    )
    conveyances = gpd.GeoDataFrame(
        {
            "conv_id": [p[0] for p in pipes],
            "kind": "pipe",
            "from_id": [p[1] for p in pipes],
            "to_id": [p[2] for p in pipes],
            "diameter_in": 15.0,
            "material": "RCP",
        },
        geometry=[shapely.LineString([pt(*where[a]), pt(*where[b])]) for _, a, b in pipes],
        crs=CRS,
    )
    pwl = f"1302-{seed:04d}"
    creek = f"Synthetic Creek {seed}"
    outfall_layer = gpd.GeoDataFrame(
        {
            "outfall_id": outfalls,
            "receiving_water": creek,
            "pwl_id": pwl,
            "status": "active",
        },
        geometry=[pt(*where[o]) for o in outfalls],
        crs=CRS,
    )
    waterbodies = gpd.GeoDataFrame(
        {"wb_id": [pwl], "name": [creek], "kind": ["creek"]},
        geometry=[shapely.LineString([pt(0, CREEK_V), pt(size, CREEK_V)])],
        crs=CRS,
    )
    # -- parcels: a lot grid cut back from the streets -------------------------------------
    streets = shapely.union_all(
        [shapely.box(x0 + su - 6, y0 + CREEK_V + 40, x0 + su + 6, y0 + ns_top) for su in ns]
        + [shapely.box(x0 + 20, y0 + sv - 6, x0 + size - 20, y0 + sv + 6) for sv in ew]
    )
    lots, ids = [], []
    for a in np.arange(0, size - 1, 25.0):
        for b in np.arange(CREEK_V + 30, size - 1, 40.0):
            g = shapely.box(x0 + a, y0 + b, x0 + min(a + 25, size), y0 + min(b + 40, size))
            g = g.difference(streets)
            if g.area >= 200 and g.geom_type == "Polygon":
                lots.append(g)
                ids.append(f"{seed}.{int(a):04d}-{int(b):04d}")
    cx = np.array([g.centroid.x - x0 for g in lots])
    parcels = gpd.GeoDataFrame(
        {
            "parcel_id": ids,
            "address": [f"{i + 1} Synthetic St" for i in range(len(ids))],
            "owner": [f"Owner {i}" for i in range(len(ids))],
            "owner_address": [f"{i + 1} Synthetic St" for i in range(len(ids))],
            "prop_class": np.where(np.arange(len(ids)) % 7 == 0, "484", "210"),
            "acres": [g.area / 4046.8564224 for g in lots],
            "sewer": np.where(cx > size * 2 / 3, "septic", "public"),
        },
        geometry=lots,
        crs=CRS,
    )
    path = folder / "town.gpkg"
    for name, gdf in (
        ("parcels", parcels),
        ("structures", structures),
        ("conveyances", conveyances),
        ("outfalls", outfall_layer),
        ("waterbodies", waterbodies),
    ):
        pyogrio.write_dataframe(gdf, path, layer=name, driver="GPKG")
    listed = seed % 2 == 1
    imp = gpd.GeoDataFrame(
        {
            "wb_id": [pwl] if listed else [],
            "pollutant": ["Phosphorus"] if listed else [],
            "category": ["5"] if listed else [],
        },
        geometry=gpd.GeoSeries([None] if listed else [], crs=CRS),
        crs=CRS,
    )
    pyogrio.write_dataframe(imp, path, layer="impairments", driver="GPKG", geometry_type="Point")
    tmdl = gpd.GeoDataFrame(
        {"tmdl_id": pd.Series([], dtype=str), "pollutant": pd.Series([], dtype=str)},
        geometry=gpd.GeoSeries([], crs=CRS),
        crs=CRS,
    )
    pyogrio.write_dataframe(
        tmdl, path, layer="tmdl_watersheds", driver="GPKG", geometry_type="Polygon"
    )
    return path


def compare(a: Path, b: Path) -> list[str]:
    """Layers that differ between two towns' outputs (empty: identical)."""
    from ms4map.batch import LAYERS

    bad = []
    for layer in LAYERS:
        x = pyogrio.read_dataframe(a, layer=layer)
        y = pyogrio.read_dataframe(b, layer=layer)
        try:
            if isinstance(x, gpd.GeoDataFrame):
                from geopandas.testing import assert_geodataframe_equal

                assert_geodataframe_equal(x, y)
            else:
                pd.testing.assert_frame_equal(x, y)
        except AssertionError:
            bad.append(f"{a.stem}:{layer}")
    return bad


_PLAIN_WORKER = """
import json, sys
from ms4map.batch import WORKER_PRELOAD, read_manifest, run_town
import importlib
for m in WORKER_PRELOAD:
    importlib.import_module(m)
towns = {t.name: t for t in read_manifest(sys.argv[1])}
print("ready", flush=True)
names = sys.stdin.readline().split()
rows = [run_town(towns[n], sys.argv[2], force=True) for n in names]
print(json.dumps(rows), flush=True)
"""


def plain_processes(manifest: Path, names: list[str], out: Path, workers: int) -> float:
    """Wall time of ``workers`` plain processes running the towns, started beforehand.

    Each process imports what a worker imports and reads the manifest, then waits; the
    clock runs from handing out the towns (round robin) to the last process done.  No
    Dask and no start-up: the best any scheduler could do with this many processes on
    this machine, against which the cluster's start and its scheduling are measured.
    """
    import json
    import subprocess

    out.mkdir(parents=True, exist_ok=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PLAIN_WORKER, str(manifest), str(out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        )
        for _ in range(workers)
    ]
    for pr in procs:
        assert pr.stdout is not None and pr.stdout.readline().strip() == "ready"
    t = time.perf_counter()
    for i, pr in enumerate(procs):
        assert pr.stdin is not None
        pr.stdin.write(" ".join(names[i::workers]) + "\n")
        pr.stdin.flush()
    rows = []
    for pr in procs:
        assert pr.stdout is not None
        rows += json.loads(pr.stdout.readline())
        pr.wait()
    wall = time.perf_counter() - t
    bad = [r["name"] for r in rows if r["status"] != "ok"]
    if bad:
        raise RuntimeError(f"plain processes: towns failed: {bad}")
    return wall


def cli_pairs(manifest: Path, root: Path, workers: int, pairs: int) -> list[tuple[float, float]]:
    """Wall times of ``ms4map batch MANIFEST --scheduler none`` and ``local:N``, each a new
    process from its start to its exit (interpreter, imports, cluster start and close
    included): what a user timing the command sees.  Alternated ``pairs`` times, as the
    machine's speed drifts over a minute.

    Python's bytecode is cached as in any installed copy (``PYTHONPYCACHEPREFIX`` in
    ``root``, and without ``PYTHONDONTWRITEBYTECODE``, which a sandbox may set: every
    process would then compile ms4map's 36,000 lines again, 0.13 s of its imports), and
    one untimed pair fills that cache first."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    walls = []
    for i in range(pairs + 1):
        pair = []
        for sched in ("none", f"local:{workers}"):
            out = root / f"cli-{sched.replace(':', '')}"
            cmd = [sys.executable, "-m", "ms4map", "batch", str(manifest), "--out", str(out)]
            t = time.perf_counter()
            subprocess.run(
                [*cmd, "--scheduler", sched, "--force", "--quiet"],
                check=True,
                capture_output=True,
                env=env,
            )
            pair.append(time.perf_counter() - t)
        if i:  # the first pair only filled the bytecode cache
            walls.append((pair[0], pair[1]))
    return walls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--towns", type=int, default=8)
    ap.add_argument("--size", type=float, default=1000.0, help="town side, metres")
    ap.add_argument("--cell", type=float, default=1.0, help="DEM cell, metres")
    ap.add_argument("--workers", type=int, default=2, help="local Dask workers")
    ap.add_argument("--keep", metavar="DIR", help="build and keep the towns here")
    ap.add_argument(
        "--no-floor",
        dest="floor",
        action="store_false",
        help="skip the third run: --workers plain processes started beforehand (no Dask)",
    )
    ap.add_argument(
        "--cli-pairs",
        type=int,
        default=3,
        metavar="N",
        help="then time the `ms4map batch` command itself, none and local:N alternated N "
        "times, each a new process (0: skip)",
    )
    args = ap.parse_args(argv)

    from ms4map.batch import read_manifest, run_batch

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ms4map-batch-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        lines = []
        for i in range(1, args.towns + 1):
            build_town(root / f"town{i}", i, size=args.size, cell=args.cell)
            lines += ["[[town]]", f'name = "town{i}"', f'workspace = "town{i}/town.gpkg"', ""]
        (root / "batch.toml").write_text("\n".join(lines), encoding="utf-8")
        towns = read_manifest(root / "batch.toml")
        n_cells = int(round(args.size / args.cell)) ** 2
        print(
            f"{args.towns} towns of {args.size:g} m x {args.size:g} m, {args.cell:g} m DEM "
            f"({n_cells / 1e6:.2f}M cells each), built in {time.perf_counter() - t:.1f} s "
            f"in {root}"
        )
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        print(f"cores: {cores}; load average before: {os.getloadavg()}")

        runs = {}
        for sched in ("none", f"local:{args.workers}"):
            out = root / f"out-{sched.replace(':', '')}"
            c0 = os.times()
            res = run_batch(towns, out, scheduler=sched, force=True)
            c1 = os.times()
            runs[sched] = (res, out)
            c = res.counts()
            # CPU of this process (for none: all the work; for a cluster: the scheduler
            # and nannies) and of the towns' own processes during each town
            own_cpu = (c1.user - c0.user) + (c1.system - c0.system)
            town_cpu = [r["cpu_seconds"] for r in res.rows]
            print(
                f"--scheduler {sched:8s} wall {res.wall_seconds:6.1f} s  "
                f"({c['ok']} ok, {c['failed']} failed); per town "
                f"median {np.median([r['seconds'] for r in res.rows]):.1f} s, "
                f"sum {sum(r['seconds'] for r in res.rows):.1f} s"
                + (
                    f"; cluster start {res.startup_seconds:.1f} s, close "
                    f"{res.shutdown_seconds:.1f} s"
                    if sched != "none"
                    else ""
                )
            )
            print(
                "  per town (s): " + ", ".join(f"{r['name']} {r['seconds']:.1f}" for r in res.rows)
            )
            print(
                f"  CPU: towns {sum(town_cpu):.1f} s (median {np.median(town_cpu):.2f} s per "
                f"town), this process {own_cpu:.1f} s"
                + (
                    f" = {own_cpu / res.wall_seconds:.2f} of the wall time"
                    if sched == "none"
                    else ""
                )
                + f"; load average now {os.getloadavg()[0]:.1f}"
            )
            for r in res.failed:
                print(f"  failed {r['name']}: {r['error']}")
        (r0, o0), (r1, o1) = runs.values()
        if r0.failed or r1.failed:
            print("some towns failed: no comparison")
            return 1
        bad = [d for t in towns for d in compare(o0 / f"{t.name}.gpkg", o1 / f"{t.name}.gpkg")]
        s0 = pd.read_csv(o0 / "summary.csv").drop(columns=["seconds", "status"])
        s1 = pd.read_csv(o1 / "summary.csv").drop(columns=["seconds", "status"])
        same_summary = s0.equals(s1)
        print(
            f"identical tables: {'yes' if not bad and same_summary else 'NO'} "
            f"({len(towns)} towns x 6 layers, and summary.csv counts)"
            + (f"; differ: {bad}" if bad else "")
        )
        print(s1.to_string(index=False))
        ratio = r1.wall_seconds / r0.wall_seconds
        print(
            f"wall: none {r0.wall_seconds:.1f} s, local:{args.workers} {r1.wall_seconds:.1f} s "
            f"(cluster start-up included); ratio {ratio:.2f} "
            f"({'meets' if ratio <= 0.65 else 'misses'} the <= 0.65 target)"
        )
        # Under other jobs' load the wall times say more about the machine than about
        # the code: the same figures from CPU time, as if every process had its core
        per_worker: dict[int, float] = {}
        for r in r1.rows:
            per_worker[r["pid"]] = per_worker.get(r["pid"], 0.0) + r["cpu_seconds"]
        cpu0 = sum(r["cpu_seconds"] for r in r0.rows)
        cpu1 = r1.startup_seconds + max(per_worker.values()) + r1.shutdown_seconds
        print(
            f"CPU-bound estimate (each process on a core of its own): none {cpu0:.1f} s, "
            f"local:{args.workers} {cpu1:.1f} s (measured start and close + the busiest "
            f"worker's CPU, {'/'.join(f'{v:.1f}' for v in per_worker.values())} s); ratio "
            f"{cpu1 / cpu0:.2f}"
        )
        peaks: dict[int, float] = {}
        for r in r1.rows:
            peaks[r["pid"]] = max(peaks.get(r["pid"], 0.0), r["peak_rss_mb"])
        print(
            "peak memory per worker (MB, resident): "
            + ", ".join(f"{v:.0f}" for v in sorted(peaks.values(), reverse=True))
            + f"; one process (none): {max(r['peak_rss_mb'] for r in r0.rows):.0f}"
        )
        if args.floor:
            floor = plain_processes(
                root / "batch.toml", [t.name for t in towns], root / "out-plain", args.workers
            )
            print(
                f"floor: {args.workers} plain processes, started and imported beforehand, "
                f"no Dask: {floor:.1f} s for the towns, ratio {floor / r0.wall_seconds:.2f} "
                f"against none; the cluster run spent {r1.wall_seconds - floor:.1f} s more "
                "(its start, scheduling and close)"
            )
        same_cli = True
        if args.cli_pairs > 0:
            walls = cli_pairs(root / "batch.toml", root, args.workers, args.cli_pairs)
            ratios = [b / a for a, b in walls]
            print(
                f"the command, a new process each (start to exit, interpreter and imports "
                f"included; bytecode cached after one untimed pair), none / "
                f"local:{args.workers}: "
                + ", ".join(f"{a:.1f} / {b:.1f} s ({b / a:.2f})" for a, b in walls)
                + f"; median ratio {float(np.median(ratios)):.2f} "
                f"({'meets' if np.median(ratios) <= 0.65 else 'misses'} the <= 0.65 target)"
            )
            cli_bad = [
                d
                for t in towns
                for d in compare(
                    root / "cli-none" / f"{t.name}.gpkg",
                    root / f"cli-local{args.workers}" / f"{t.name}.gpkg",
                )
            ]
            same_cli = not cli_bad
            print(
                f"  the command's outputs, none against local: identical {'yes' if same_cli else 'NO'}"
            )
        print(f"load average after: {os.getloadavg()}")
        return 0 if not bad and same_summary and same_cli else 1
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
