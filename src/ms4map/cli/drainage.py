"""``ms4map drainage PATH``: where every parcel drains (overland + pipes), as a GeoPackage."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import Command, input_paths, workspace_from_args

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = ["COMMANDS", "run"]


ABOUT = """parcel drainage table, inlet catchments and sewersheds

Route runoff over the DEM to the first inlet, open conveyance, water, closed depression or
DEM edge, then through the pipes to the outfall and receiving water. Writes the layers
parcel_drainage, parcel_drainage_map (the parcels with their answer, styled for QGIS),
inlet_catchments, sewersheds and qa, and the traced network (structures, conveyances,
outfalls: what `ms4map export --to model.inp` builds an EPA SWMM model from) to --out
(default: the sidecar <stem>.ms4map.gpkg beside PATH). Input files are never modified. Methods and settings are
described in docs/hydrology.md.
"""


#: The settings ``ms4map drainage`` has an option for, in the order of its help; each
#: option's name, metavar, help and default come from the field of
#: :class:`ms4map.pipeline.Settings` (``min_depth_m`` -> ``--min-depth M``).
OPTION_SETTINGS = (
    "min_depth_m",
    "min_area_m2",
    "burn_depth_m",
    "inlet_depth_m",
    "fallback_distance_m",
    "snap_tolerance_m",
)


def _option_fields() -> list[tuple[str, str, Any]]:
    """``(field name, option, field)`` of each setting in :data:`OPTION_SETTINGS`."""
    from ..pipeline import Settings

    by_name = {f.name: f for f in fields(Settings)}
    out = []
    for name in OPTION_SETTINGS:
        f = by_name[name]
        option = "--" + name.removesuffix("_" + f.metadata["unit"]).replace("_", "-")
        out.append((name, option, f))
    return out


def _options(p: argparse.ArgumentParser) -> None:
    from ..pipeline import command_settings

    defaults = command_settings()  # also what `ms4map batch` runs each town with
    p.add_argument("--out", metavar="FILE.gpkg", help="output GeoPackage (default: the sidecar)")
    settings = p.add_argument_group("settings (metres)")
    for name, option, f in _option_fields():
        default = defaults.get(name)  # None: the network module's own default
        settings.add_argument(
            option,
            type=float,
            default=default,
            metavar=f.metadata["unit"].upper(),
            help=f.metadata["help"] + ("" if default is None else " (default %(default)s)"),
        )
    p.add_argument("--cache-dir", metavar="DIR", help="keep step results here between runs")
    p.add_argument("--quiet", action="store_true", help="no progress messages")


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the options give (a setting whose default is the network's is left
    out unless its option is given)."""
    out: dict[str, Any] = {}
    for name, option, _f in _option_fields():
        value = getattr(args, option[2:].replace("-", "_"))
        if value is not None:
            out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    from .. import pipeline

    t0 = time.perf_counter()

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - t0:6.1f} s] {msg}", file=sys.stderr, flush=True)

    from ..io import check_output_path

    if args.out:  # refuse an input file before any work (as the other commands do)
        check_output_path(args.out, protected=input_paths(args), suffixes=(".gpkg",))
    progress("opening the workspace")
    ws = workspace_from_args(args)
    out = Path(args.out) if args.out else ws.sidecar_path
    check_output_path(out, protected=[*input_paths(args), *ws.inputs], suffixes=(".gpkg",))
    settings = _settings(args)
    res = pipeline.run(ws, settings=settings, progress=progress, cache_dir=args.cache_dir)
    progress(f"writing {out}")
    layers = {**res.layers(), **pipeline.model_layers(res)}  # the network too: for a model
    path = write_layers(out, layers, ws=ws, settings=settings)
    d = res.drainage
    n = d["parcel_id"].nunique()
    print(
        f"{n} parcels -> {path} (layers parcel_drainage, parcel_drainage_map, "
        "inlet_catchments, sewersheds, qa; the traced network: structures, conveyances, "
        "outfalls)"
    )
    if len(d):
        # weighted by each parcel's area (a mean of per-parcel fractions is no area share)
        share, label = pipeline.drainage_shares(d, ws.get("parcels"))
        print(f"  {label}: " + ", ".join(f"{k} {v:.1%}" for k, v in share.items()))
    print(
        f"  {len(res.inlet_catchments)} inlet catchments, {len(res.sewersheds)} sewersheds, "
        f"{len(res.qa.warnings)} QA warning(s)"
    )
    return 0


COMMANDS = (Command("drainage", ABOUT, run, _options, workspace=True),)


def write_layers(
    out: Path, layers: dict[str, Any], *, ws: Workspace, settings: dict[str, Any]
) -> Path:
    """Write the result layers with provenance (never over an input file)."""
    from ..io import write_outputs

    return write_outputs(out, layers, provenance=ws.provenance(**settings), inputs=list(ws.inputs))
