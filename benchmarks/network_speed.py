"""Time the storm network on a synthetic tree of 100,000 conveyances draining to 200 outfalls.

Run:  python benchmarks/network_speed.py [--n 100000] [--outfalls 200]

Prints build + QA, all-structures assignment, and next to them the baselines of the
issue in the same run: a networkx graph build plus a per-structure BFS to the
outfalls (on a sample, extrapolated), and a rustworkx build.
Targets (issue 3): build + QA <= 5 s, all-structures assignment <= 0.1 s.

Whole processes (issue 12, skip with --no-whole): the network is written to a
GeoPackage, then ``ms4map trace FILE --all --out CSV`` and a naive tracer (read the same
file with geopandas, snap ends to the nearest structure, orient by inverts, networkx BFS
from every structure to the first outfall, write a CSV) run as separate processes;
both times (imports included) and the ratio are printed. Target: ratio <= 1.2.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import geopandas as gpd
import numpy as np
import shapely
from pyproj import CRS

from ms4map.io.workspace import Workspace
from ms4map.network import assign_outfalls, build_network
from ms4map.network.solve import solve_network as _solve


def _tree_template(n_nodes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random spanning tree of lattice cells grown from the corner: (cells, parent)."""
    side = int(np.ceil(np.sqrt(n_nodes))) + 1
    seen = {(0, 0): -1}
    cells = [(0, 0)]
    parent = [-1]
    frontier = [0]
    while len(cells) < n_nodes and frontier:
        k = frontier.pop(int(rng.integers(len(frontier))))
        x, y = cells[k]
        for dx, dy in rng.permutation([(1, 0), (0, 1), (-1, 0), (0, -1)]):
            c = (x + int(dx), y + int(dy))
            if c in seen or not (0 <= c[0] < side and 0 <= c[1] < side):
                continue
            seen[c] = len(cells)
            cells.append(c)
            parent.append(k)
            frontier.append(len(cells) - 1)
            if len(cells) == n_nodes:
                break
    return np.array(cells, dtype=float), np.array(parent)


def synthetic(n_conv: int, n_out: int, seed: int = 0, spacing: float = 30.0):
    """``n_out`` tree-like systems of ``n_conv / n_out`` pipes each, on separate lattice blocks.

    Inverts fall towards each outfall; 30% of the pipes are digitised against the
    flow (their inverts tell the way).  Returns the workspace and the true outfall
    (structure index) of every structure.
    """
    rng = np.random.default_rng(seed)
    per = n_conv // n_out
    templates = [_tree_template(per + 1, rng) for _ in range(4)]
    xy, parent, root = [], [], []
    block = (int(np.ceil(np.sqrt(per + 1))) + 3) * spacing
    side = int(np.ceil(np.sqrt(n_out)))
    for t in range(n_out):
        cells, par = templates[t % 4]
        off = len(xy) and sum(len(a) for a in xy)
        origin = np.array([t % side, t // side]) * block
        xy.append(origin + cells * spacing + rng.uniform(-2, 2, cells.shape))
        parent.append(np.where(par >= 0, par + off, -1))
        root.append(np.full(len(par), off))
    xy = np.vstack(xy)
    parent = np.concatenate(parent)
    root = np.concatenate(root)
    n_st = len(xy)
    depth = np.zeros(n_st)
    for i in range(n_st):  # parents come first within each block
        if parent[i] >= 0:
            depth[i] = depth[parent[i]] + 1
    inv = 0.3 * depth
    kinds = np.where(parent < 0, "outfall", "catch_basin")
    st = gpd.GeoDataFrame(
        {
            "struct_id": [f"S{i}" for i in range(n_st)],
            "kind": kinds,
            "invert_elev": inv,
            "rim_elev": inv + 6,
        },
        geometry=shapely.points(xy),
        crs=26918,
    )
    child = np.where(parent >= 0)[0]
    lines = shapely.linestrings(np.stack([xy[child], xy[parent[child]]], axis=1))
    flip = rng.random(len(child)) < 0.3  # 30% digitised against the flow
    lines[flip] = shapely.reverse(lines[flip])
    us, ds = inv[child] - 0.05, inv[parent[child]] + 0.05
    cv = gpd.GeoDataFrame(
        {
            "conv_id": [f"C{i}" for i in range(len(child))],
            "kind": "pipe",
            "us_invert": np.where(flip, ds, us),
            "ds_invert": np.where(flip, us, ds),
            "diameter_in": 15.0,
        },
        geometry=lines,
        crs=26918,
    )
    ws = Workspace(
        path=None, crs=CRS.from_epsg(26918), layers={"structures": st, "conveyances": cv}
    )
    return ws, root


NAIVE = r"""
import sys, time
import geopandas as gpd, networkx as nx, numpy as np, shapely
from scipy.spatial import cKDTree
gpkg, out = sys.argv[1], sys.argv[2]
st = gpd.read_file(gpkg, layer="structures")
cv = gpd.read_file(gpkg, layer="conveyances")
sxy = shapely.get_coordinates(st.geometry.values)
ids = st["struct_id"].astype(str).to_numpy()
g = cv.geometry.values
a = shapely.get_coordinates(shapely.get_point(g, 0))
b = shapely.get_coordinates(shapely.get_point(g, -1))
tree = cKDTree(sxy)
_, ia = tree.query(a)
_, ib = tree.query(b)
ui, di = cv["us_invert"].to_numpy(float), cv["ds_invert"].to_numpy(float)
rev = di > ui
fr, to = np.where(rev, ib, ia), np.where(rev, ia, ib)
G = nx.DiGraph()
G.add_nodes_from(range(len(ids)))
G.add_edges_from(zip(fr.tolist(), to.tolist()))
outs = set(np.where(st["kind"].astype(str).to_numpy() == "outfall")[0].tolist())
res = []
for s in range(len(ids)):
    o = next((n for n in nx.bfs_tree(G, s) if n in outs), None)
    res.append(ids[o] if o is not None else "")
with open(out, "w") as f:
    f.write("struct_id,outfall_id\n")
    f.writelines(f"{i},{o}\n" for i, o in zip(ids, res))
"""


def whole_process(ws, tmp: Path) -> None:
    """Time ``ms4map trace --all`` and the naive networkx tracer as whole processes."""
    gpkg = tmp / "synthetic.gpkg"
    ws.structures.to_file(gpkg, layer="structures", driver="GPKG")
    ws.conveyances.to_file(gpkg, layer="conveyances", driver="GPKG")
    import resource

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    exe = [sys.executable, "-m", "ms4map"]
    c0, t0 = cpu(), time.perf_counter()
    subprocess.run(
        [*exe, "trace", str(gpkg), "--all", "--out", str(tmp / "ms4map.csv")],
        check=True,
        capture_output=True,
    )
    c1, t1 = cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", NAIVE, str(gpkg), str(tmp / "naive.csv")], check=True)
    c2, t2 = cpu(), time.perf_counter()
    import pandas as pd

    a = pd.read_csv(tmp / "ms4map.csv", usecols=["struct_id", "outfall_id"], dtype=str)
    b = pd.read_csv(tmp / "naive.csv", dtype=str)
    same = (
        a.set_index("struct_id")["outfall_id"].fillna("")
        == b.set_index("struct_id")["outfall_id"].fillna("").reindex(a["struct_id"])
    ).mean()
    ms, nv = t1 - t0, t2 - t1
    cm, cn = c1 - c0, c2 - c1
    print(
        f"whole process (wall): ms4map trace --all {ms:7.2f} s | naive networkx BFS "
        f"{nv:7.2f} s | ratio {ms / nv:.2f} (target <= 1.2)"
    )
    print(
        f"whole process (CPU, user+sys; steadier on a shared machine): ms4map {cm:7.2f} s | "
        f"naive {cn:7.2f} s | ratio {cm / cn:.2f}; same outfall for {same * 100:.2f}% of "
        "structures"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--outfalls", type=int, default=200)
    ap.add_argument("--bfs-sample", type=int, default=2000)
    ap.add_argument("--no-whole", action="store_true", help="skip the whole-process timing")
    ap.add_argument("--only-whole", action="store_true", help="only the whole-process timing")
    args = ap.parse_args()
    ws, true_root = synthetic(args.n, args.outfalls)
    print(
        f"synthetic network: {len(ws.conveyances)} conveyances, {len(ws.structures)} "
        f"structures, {args.outfalls} outfalls"
    )
    if not args.no_whole:
        with tempfile.TemporaryDirectory() as tmp:
            whole_process(ws, Path(tmp))
        if args.only_whole:
            return
    t0 = time.perf_counter()
    net = build_network(ws)
    t1 = time.perf_counter()
    _solve(net)  # graph arrays, components, pointer jumping
    t2 = time.perf_counter()
    table = assign_outfalls(net)
    t3 = time.perf_counter()
    net._cache.clear()
    t4 = time.perf_counter()
    _solve(net)
    t5 = time.perf_counter()
    print(f"ms4map build + QA            {t1 - t0:7.3f} s   (target <= 5 s)")
    print(
        f"ms4map all-structure outfall {t5 - t4:7.3f} s   core solve (components + pointer "
        "jumping; target <= 0.1 s)"
    )
    print(f"ms4map assign_outfalls table {t3 - t1:7.3f} s   incl. per-structure reason text")
    # correctness against the known trees
    want = np.array([f"S{r}" for r in true_root])
    got = table["outfall_id"].astype(str).to_numpy()
    print(
        f"  outfalls correct: {(got == want).mean() * 100:.2f}%  methods: "
        f"{dict(table['method'].value_counts())}"
    )
    print(f"  QA: {dict(net.qa.codes())}")
    # baselines
    import networkx as nx
    import rustworkx as rx

    e = net.edges
    t0 = time.perf_counter()
    g = nx.DiGraph()
    g.add_edges_from(zip(e["from_node"], e["to_node"], strict=True))
    t1 = time.perf_counter()
    outs = set(net.outfalls["node_id"])
    sample = [s for s in table["node_id"].sample(args.bfs_sample, random_state=0) if s in g]
    t2 = time.perf_counter()
    for s in sample:
        next(o for o in nx.bfs_tree(g, s) if o in outs)
    t3 = time.perf_counter()
    per = (t3 - t2) / len(sample)
    print(f"networkx build               {t1 - t0:7.3f} s")
    print(
        f"networkx per-structure BFS   {per * len(table):7.3f} s   (extrapolated from "
        f"{len(sample)} structures, {per * 1e3:.3f} ms each)"
    )
    t0 = time.perf_counter()
    idx = {n: i for i, n in enumerate(net.nodes.index)}
    rg = rx.PyDiGraph()
    rg.add_nodes_from(range(len(idx)))
    rg.add_edges_from_no_data(
        [(idx[a], idx[b]) for a, b in zip(e["from_node"], e["to_node"], strict=True)]
    )
    t1 = time.perf_counter()
    print(f"rustworkx build              {t1 - t0:7.3f} s")


if __name__ == "__main__":
    main()
