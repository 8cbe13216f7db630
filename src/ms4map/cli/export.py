"""``ms4map export SRC.gpkg --to FILE [--layer NAME ...]``: results for QGIS and ArcGIS."""

from __future__ import annotations

import argparse

from . import Command, add_debug_option

ABOUT = """copy result layers to a styled GeoPackage, File Geodatabase, zipped shapefiles or
GeoJSON

Copy layers of an ms4map GeoPackage to another format, chosen by the suffix of --to:
{formats}. SRC is only read. Details: docs/exports.md.
"""


def _options(p: argparse.ArgumentParser) -> None:
    from ..outputs.export import FORMATS  # here: only `ms4map export` imports its libraries

    p.description = (p.description or "").format(
        formats="; ".join(f"{k} {v}" for k, v in FORMATS.items())
    )
    p.add_argument("src", metavar="SRC.gpkg", help="GeoPackage to export (ms4map's results)")
    p.add_argument(
        "--to",
        required=True,
        metavar="FILE",
        help="output: FILE.gpkg, FILE.gdb, FILE.zip or FILE.geojson (replaced if it exists)",
    )
    p.add_argument(
        "--layer",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME",
        help="layer(s) to export: --layer a b, or --layer a --layer b (default every "
        "layer; one for .geojson)",
    )
    add_debug_option(p)


def run(args: argparse.Namespace) -> int:
    from ..outputs import export

    res = export(args.src, args.to, args.layer or None)
    rows = ", ".join(f"{n} ({k} rows)" for n, k in res.layers.items())
    print(f"{len(res.layers)} layer(s) -> {res.path} ({res.format}): {rows}")
    for note in res.notes:
        print(f"  note: {note}")
    return 0


COMMANDS = (Command("export", ABOUT, run, _options),)
