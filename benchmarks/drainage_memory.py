"""Where ``ms4map drainage``'s memory goes: its resident memory (RSS) step by step.

    python benchmarks/drainage_memory.py WORKSPACE.gpkg [--out OUT.gpkg]

Runs ``ms4map drainage`` as its own process, samples its RSS every 20 ms
(``/proc/PID/status``, Linux) and prints, for each step of its progress log, the
highest RSS during the step and the RSS when the next step starts.  The highest is the
kernel's high-water mark (``VmHWM``) when it rose during the step, so a spike shorter
than the sampling interval is not missed; the whole process's peak is its
``ru_maxrss``, the figure ``drainage_county.py`` prints.  Use it on the
county of ``benchmarks/drainage_county.py`` (``--workdir W --n 6000`` builds
``W/county.gpkg``); docs/hydrology.md "Memory per cell" holds its figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def rss_bytes(pid: int, key: str = "VmRSS") -> int:
    """Resident memory of process ``pid`` (0 once it is gone); ``key="VmHWM"``: its
    peak so far (the kernel's high-water mark: no spike is missed between samples)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workspace", type=Path)
    ap.add_argument("--out", type=Path, help="output GeoPackage (default: a temporary one)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as td:
        out = a.out or Path(td) / "out.gpkg"
        cmd = [sys.executable, "-m", "ms4map", "drainage", str(a.workspace), "--out", str(out)]
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        cur = {"max": 0, "label": "interpreter start-up and imports"}
        overall = {"max": 0}

        def sample() -> None:
            while p.poll() is None:
                r = rss_bytes(p.pid)
                cur["max"] = max(cur["max"], r)
                overall["max"] = max(overall["max"], r)
                time.sleep(0.02)

        threading.Thread(target=sample, daemon=True).start()
        rows = []
        t0 = time.perf_counter()
        hwm = 0
        for line in p.stderr:
            now, top = rss_bytes(p.pid), rss_bytes(p.pid, "VmHWM")
            # the high-water mark rose during the step: that is the step's true peak
            peak = top if top > hwm else cur["max"]
            hwm = max(hwm, top)
            rows.append((cur["label"], max(peak, cur["max"]), now))
            cur["label"], cur["max"] = line.strip()[:100], now
        _, status, usage = os.wait4(p.pid, 0)
        ended = usage.ru_maxrss * 1024  # the whole process's peak (the kernel's)
        p.returncode = os.waitstatus_to_exitcode(status)
        rows.append((cur["label"] + " (and exit)", max(cur["max"], ended if ended > hwm else 0), 0))
        overall["max"] = max(overall["max"], ended)
        wall = time.perf_counter() - t0
    print(f"{'peak in step':>14} {'at its end':>11}  step (progress log)")
    for label, peak, end in rows:
        tail = f"{end / 1e6:9.0f} MB" if end else f"{'':>12}"
        print(f"{peak / 1e6:11.0f} MB {tail}  {label}")
    print(
        f"whole process: {wall:.1f} s, peak RSS {overall['max'] / 1e6:.0f} MB (exit {p.returncode})"
    )


if __name__ == "__main__":
    main()
