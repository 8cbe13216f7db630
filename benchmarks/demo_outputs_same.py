"""Are the demo town's outputs the same at two revisions?  (A refactor's check.)

Runs the README's commands on ``data/layers/demo.gpkg`` with the code of ``--base`` (a git
revision, checked out in a temporary worktree) and with the code of this checkout, then
compares what they wrote: every layer of every GeoPackage (geometry and attributes), the
CSVs, the JSON determination (without its provenance) and the printed messages (without
elapsed times and output paths).  GeoPackage style timestamps and provenance files, which
record when and where a run happened, are left out.

    python benchmarks/demo_outputs_same.py --base dfd3755

Prints one line per output and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyogrio

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "layers" / "demo.gpkg"

#: (output name, arguments after ``ms4map``; OUT is the run's output folder)
COMMANDS = [
    ("trace.txt", ["trace", str(DEMO), "--all", "--out", "OUT/outfalls.csv"]),
    ("trace_from.txt", ["trace", str(DEMO), "--from", "CB-0170"]),
    ("trace_up.txt", ["trace", str(DEMO), "--upstream-of", "OF-009"]),
    ("drainage.txt", ["drainage", str(DEMO), "--out", "OUT/results.gpkg"]),
    (
        "site.json",
        ["screen", str(DEMO), "--site", "107.12-2-11", "--acres", "2", "--type", "commercial"]
        + ["--json"],
    ),
    (
        "screen.txt",
        ["screen", str(DEMO), "--all", "--out", "OUT/screening.gpkg", "--csv"]
        + ["OUT/screening.csv"],
    ),
    ("validate.txt", ["validate", str(DEMO)]),
]
_ELAPSED = re.compile(r"^\[\s*[\d.]+ s\] ")


def run_all(src: Path, out: Path) -> None:
    """Every command with the package at ``src`` on the path; stdout+stderr to files."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(src)}
    for name, args in COMMANDS:
        argv = [a.replace("OUT", str(out)) for a in args]
        res = subprocess.run(
            [sys.executable, "-m", "ms4map", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=False,
        )
        text = f"exit {res.returncode}\n{res.stdout}{res.stderr}"
        (out / name).write_text(text.replace(str(out), "OUT"), encoding="utf-8")


#: A third-party library's warning (and its source line, next): rasterio's
#: NotGeoreferencedWarning comes on the first run of a fresh checkout only (numba's cache
#: is cold), and the base always runs in a fresh worktree.  Not ms4map's messages.
_LIBRARY_WARNING = re.compile(r"^\S*site-packages/\S+:\d+: \w+Warning: ")


def _text_lines(path: Path) -> list[str]:
    out, skip = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _LIBRARY_WARNING.match(line):
            skip = True  # its source line follows, indented
            continue
        if skip and line.startswith("  "):
            skip = False
            continue
        skip = False
        out.append(_ELAPSED.sub("", line))
    return out


def _json(path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text[text.index("{") :])  # after the "exit N" line
    doc.pop("provenance", None)
    return doc


def _plain(frame: pd.DataFrame, layer: str) -> pd.DataFrame:
    """A layer as a plain frame (geometry as WKB), without when the run happened."""
    out = pd.DataFrame(frame)
    if "geometry" in out:
        out["geometry"] = frame.geometry.to_wkb()
    if layer == "provenance":
        out = out.drop(columns=[c for c in ("created",) if c in out])
        if "value" in out:
            out["value"] = out["value"].map(_without_created)
    return out


def _without_created(text: object) -> object:
    try:
        doc = json.loads(str(text))
    except ValueError:
        return text
    if isinstance(doc, dict):
        doc.pop("created", None)
    return json.dumps(doc, sort_keys=True)


def compare_file(a: Path, b: Path) -> list[str]:
    """What differs between two outputs of the same name (empty: the same)."""
    if not b.exists():
        return [f"{b.name}: missing"]
    if a.suffix == ".gpkg":
        bad = []
        for layer, _ in pyogrio.list_layers(a):
            if layer == "layer_styles":  # update_time: when the run happened
                continue
            x, y = (_plain(pyogrio.read_dataframe(f, layer=layer), layer) for f in (a, b))
            try:
                pd.testing.assert_frame_equal(x, y)
            except AssertionError as exc:
                bad.append(f"{a.name}:{layer}: {str(exc).splitlines()[0]}")
                if x.shape == y.shape and list(x.columns) == list(y.columns):
                    ne = ~((x == y) | (x.isna() & y.isna()))
                    for i in list(ne.index[ne.any(axis=1)])[:2]:
                        for c in list(ne.columns[ne.loc[i]])[:2]:
                            was, now = str(x.at[i, c])[:160], str(y.at[i, c])[:160]
                            bad.append(f"    row {i} {c}: {was!r} -> {now!r}")
        return bad
    if a.name.endswith(".json") and not a.name.endswith("provenance.json"):
        return [] if _json(a) == _json(b) else [f"{a.name}: the determination differs"]
    if a.suffix == ".csv":
        same = pd.read_csv(a).equals(pd.read_csv(b))
        return [] if same else [f"{a.name}: rows differ"]
    if a.suffix == ".txt":
        was, now = _text_lines(a), _text_lines(b)
        if was == now:
            return []
        lines = difflib.unified_diff(list(was), list(now), "base", "here", lineterm="", n=0)
        return [f"{a.name}: messages differ", *(f"    {d}" for d in list(lines)[2:12])]
    return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git revision to compare this checkout with")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ms4map-demo-same-") as tmp:
        tmp_path = Path(tmp)
        wt = tmp_path / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(wt), args.base],
            check=True,
        )
        try:
            run_all(wt / "src", tmp_path / "out-base")
            run_all(ROOT / "src", tmp_path / "out-here")
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], check=False
            )
        diffs: list[str] = []
        outputs = sorted((tmp_path / "out-base").iterdir())
        for a in outputs:
            if a.name.endswith("provenance.json"):
                continue
            found = compare_file(a, tmp_path / "out-here" / a.name)
            diffs += found
            print(f"{a.name:32s} {'same' if not found else 'DIFFERS'}")
        for d in diffs:
            print(f"  {d}")
        print(
            f"{len(outputs)} outputs of the demo town at {args.base} and here: "
            + ("the same" if not diffs else f"{len(diffs)} difference(s)")
        )
        return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
