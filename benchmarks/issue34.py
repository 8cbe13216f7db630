"""Issue 34's figures side by side in one run: memory, speed, batch, app.

    python benchmarks/issue34.py --workdir /tmp/ms4map_county [--runs 3] [--sizes 3000,6000]

Runs, one after another, each in its own process:

1. ``drainage_county.py --slope``: the whole ``ms4map drainage`` process's peak memory at
   two sizes of the county and its growth per cell (target <= 25 B; the larger county
   <= 1.4 GB);
2. ``drainage_county.py --runs``: ``ms4map drainage`` against one whitebox-workflows fill
   of the same DEM in the same run (target <= 4x);
3. ``batch_speed.py --size 2000``: 8 towns of 2 x 2 km, ``--scheduler local:2`` against
   ``none``, the cluster's start included (target <= 0.65);
4. ``county_app.py``: the app's first county map with the analysis cached and a site
   screening to its PDF (targets < 10 s each).

and prints each one's result lines, then the four together.  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Per benchmark: the lines of its output that carry the figures.
KEEP = {
    "memory": r"^n = |^growth of the peak",
    "speed": r"^run \d+: |^ratio |^peak RSS",
    "batch": r"^identical tables|^wall: ",
    "app": r"^map, new session|^site screening",
}


def _run(name: str, args: list[str]) -> list[str]:
    """Run one benchmark script; its figure lines (all its output when it fails)."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    took = time.perf_counter() - t
    lines = [ln for ln in p.stdout.splitlines() if re.search(KEEP[name], ln)]
    if p.returncode != 0 or not lines:
        lines = [f"{name} FAILED (exit {p.returncode})", *p.stdout.splitlines()[-20:]]
        lines += p.stderr.splitlines()[-20:]
    print(f"\n== {name} ({took:.0f} s): {' '.join(args[:1])}", flush=True)
    for ln in lines:
        print("  " + ln, flush=True)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", required=True, type=Path, help="where the counties are built")
    ap.add_argument("--runs", type=int, default=3, help="drainage / fill runs (default 3)")
    ap.add_argument("--sizes", default="3000,6000", help="the two county sizes, in cells")
    a = ap.parse_args()
    small, large = (int(v) for v in a.sizes.split(","))
    big = a.workdir / f"n{large}"
    out = {
        "memory": _run(
            "memory",
            [str(HERE / "drainage_county.py"), "--workdir", str(a.workdir), "--slope", a.sizes],
        ),
        "speed": _run(
            "speed",
            [str(HERE / "drainage_county.py"), "--workdir", str(big), "--n", str(large)]
            + ["--runs", str(a.runs)],
        ),
        "batch": _run("batch", [str(HERE / "batch_speed.py"), "--size", "2000"]),
        "app": _run("app", [str(HERE / "county_app.py"), "--workdir", str(big), "--n", str(large)]),
    }
    print(f"\n== issue 34, side by side (counties {small} and {large} cells a side)")
    for name in ("memory", "speed", "batch", "app"):
        picked = [ln for ln in out[name] if not ln.startswith("run ")] or out[name]
        for ln in picked:
            print(f"  {name:7s} {ln}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
