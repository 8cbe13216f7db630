"""``ms4map export SRC.gpkg --to FILE [--layer NAME ...]``: results for QGIS and ArcGIS."""

from __future__ import annotations

import argparse

from . import Command, add_debug_option

ABOUT = """copy result layers to a styled GeoPackage, File Geodatabase, zipped shapefiles or
GeoJSON, or write an EPA SWMM model (.inp)

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
        help="output: FILE.gpkg, FILE.gdb, FILE.zip, FILE.geojson or MODEL.inp (replaced if "
        "ms4map wrote it)",
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
    p.add_argument(
        "--storm-depth",
        type=float,
        default=None,
        metavar="MM",
        help=".inp only: 24-hour depth of the design storm (NRCS Type II) in millimetres "
        "(default 25.4, marked as a default in the model)",
    )
    p.add_argument(
        "--impervious",
        default=None,
        metavar="RASTER",
        help=".inp only: percent impervious raster (0-100, e.g. NLCD's percent developed "
        "imperviousness) for the subcatchments, instead of the property-class table",
    )
    p.add_argument(
        "--records",
        default=None,
        metavar="FILE",
        help="IDDE records file (*.records.gpkg, only read): the exported outfalls carry "
        "their one status from it (status, status_reason; the layer's own as layer_status)",
    )
    add_debug_option(p)


def run(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..outputs import export

    is_model = str(args.to).lower().endswith(".inp")
    for opt, val in (("--storm-depth", args.storm_depth), ("--impervious", args.impervious)):
        if not is_model and val is not None:
            raise UsageError(f"{opt} is for a SWMM model: give --to MODEL.inp.")
    if is_model and args.records:
        raise UsageError("--records is not for a SWMM model: leave --records out.")
    if is_model and args.layer:
        raise UsageError(
            "--layer is not for a SWMM model (it is built from the network and "
            "the inlet catchments): leave --layer out."
        )
    res = export(
        args.src,
        args.to,
        args.layer or None,
        storm_depth_mm=args.storm_depth,
        impervious=args.impervious,
        records=args.records,
    )
    if is_model:
        what = ", ".join(f"{k} [{n}]" for n, k in res.layers.items())
        print(f"SWMM model -> {res.path}: {what}")
    else:
        rows = ", ".join(f"{n} ({k} rows)" for n, k in res.layers.items())
        print(f"{len(res.layers)} layer(s) -> {res.path} ({res.format}): {rows}")
    for note in res.notes:
        print(f"  note: {note}")
    return 0


COMMANDS = (Command("export", ABOUT, run, _options),)
