"""``ms4map demo [--out DIR]``: (re)build the bundled demo town."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import Command, add_debug_option


def _checkout_layers() -> Path | None:
    """``data/layers`` of the source checkout ms4map runs from, if any."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "data" / "layers").is_dir():
        return root / "data" / "layers"
    return None


ABOUT = """build the demo town (demo.gpkg + demo_dem.tif)

Build the fictional demo town of Alder Falls, NY: demo.gpkg (canonical layers) and
demo_dem.tif. Deterministic: the same seed gives the same layers and DEM. In a source
checkout the default output is its data/layers folder; elsewhere give --out.
"""


def _options(p: argparse.ArgumentParser) -> None:
    from ..datasets.alder_falls import DEFAULT_SEED

    p.add_argument("--out", metavar="DIR", help="folder to write into (created if missing)")
    p.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"random seed (default {DEFAULT_SEED}, the bundled files)",
    )
    add_debug_option(p)


def run(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..datasets.alder_falls import build_demo

    out = Path(args.out) if args.out else _checkout_layers()
    if out is None:
        raise UsageError("Not in a source checkout: say where to write the demo with --out DIR.")
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a folder; give a folder.")
    gpkg, dem = build_demo(out, seed=args.seed)
    print(f"wrote {gpkg}")
    print(f"wrote {dem}")
    return 0


COMMANDS = (Command("demo", ABOUT, run, _options),)
