"""``ms4map trace PATH``: outfall of every structure, or one downstream/upstream trace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import add_workspace_options, workspace_from_args

CSV_COLUMNS = [
    "struct_id",
    "outfall_id",
    "outfall_x",
    "outfall_y",
    "method",
    "reason",
    "other_outfalls",
]


def register(sub: argparse._SubParsersAction) -> None:
    from ..network import DEFAULT_LATERAL_M, DEFAULT_SNAP_M

    p = sub.add_parser(
        "trace",
        help="trace the storm network: outfall of every structure, or one trace",
        description="Build the storm network and trace it. --all writes one row per "
        "structure (struct_id, outfall_id, outfall_x, outfall_y in the source data's CRS, "
        "method, reason, other_outfalls); --from ID prints the downstream path; "
        "--upstream-of ID the upstream subtree. Methods are listed in docs/network.md.",
    )
    add_workspace_options(p)
    what = p.add_argument_group("what to trace (one or more)")
    what.add_argument("--all", action="store_true", help="outfall of every structure (needs --out)")
    what.add_argument(
        "--from",
        dest="from_id",
        metavar="ID",
        help="print the downstream path from a structure or conveyance id",
    )
    what.add_argument(
        "--upstream-of",
        metavar="ID",
        help="print everything upstream of an outfall, structure or conveyance",
    )
    p.add_argument(
        "--snap-tolerance",
        type=float,
        default=DEFAULT_SNAP_M,
        metavar="METRES",
        help=f"snap tolerance in metres (default {DEFAULT_SNAP_M}, i.e. 5 ft)",
    )
    p.add_argument(
        "--lateral-tolerance",
        type=float,
        default=DEFAULT_LATERAL_M,
        metavar="METRES",
        help="link structures no conveyance reaches to the nearest conveyance within "
        f"this distance (default {DEFAULT_LATERAL_M}; 0 = off)",
    )
    p.add_argument("--out", metavar="FILE.csv", help="CSV for --all")
    p.add_argument(
        "--qa",
        metavar="FILE",
        help="also write the network QA report (.md, .json, .csv, or .gpkg with a "
        "point layer and a table)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..network import build_network

    if not (args.all or args.from_id or args.upstream_of):
        raise UsageError(
            "Say what to trace: --all (with --out FILE.csv), --from ID or --upstream-of ID."
        )
    if args.all and not args.out:
        raise UsageError("--all writes a CSV: give --out FILE.csv.")
    ws = workspace_from_args(args)
    net = build_network(
        ws, snap_tolerance_m=args.snap_tolerance, lateral_tolerance_m=args.lateral_tolerance
    )
    if args.qa:
        _write_qa(net, Path(args.qa))
    if args.all:
        table = outfall_table(net, ws)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False)
        counts = table["method"].value_counts()
        print(
            f"{len(table)} structures -> {args.out}; "
            + ", ".join(f"{k} {v}" for k, v in counts.items()),
            file=sys.stderr,
        )
    if args.from_id:
        _print_downstream(net, args.from_id)
    if args.upstream_of:
        _print_upstream(net, args.upstream_of)
    return 0


def outfall_table(net, ws):  # -> pandas.DataFrame
    """The --all table: assign_outfalls plus outfall coordinates in the source CRS."""
    import numpy as np
    import pandas as pd
    import shapely

    from ..network import assign_outfalls

    table = assign_outfalls(net)
    of = net.outfalls
    geoms = of.geometry
    src = getattr(ws, "source_crs", None)
    if src is not None and net.crs is not None and not _same_crs(src, net.crs):
        geoms = geoms.to_crs(src)
    xy = shapely.get_coordinates(geoms.values) if len(geoms) else np.zeros((0, 2))
    x = pd.Series(xy[:, 0], index=of.index.astype(str))
    y = pd.Series(xy[:, 1], index=of.index.astype(str))
    oid = table["outfall_id"]
    table["outfall_x"] = oid.map(x).astype(float)
    table["outfall_y"] = oid.map(y).astype(float)
    return table[CSV_COLUMNS]


def _same_crs(a, b) -> bool:
    from pyproj import CRS

    return CRS.from_user_input(a) == CRS.from_user_input(b)


def _write_qa(net, path: Path) -> None:
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".json":
        path.write_text(net.qa.to_json(), encoding="utf-8")
    elif suffix == ".csv":
        net.qa.to_frame().to_csv(path, index=False)
    elif suffix == ".gpkg":
        pts = net.qa.to_geodataframe(net.crs)
        pts.to_file(path, layer="network_qa", driver="GPKG")
        tab = net.qa.to_frame()
        import geopandas as gpd

        gpd.GeoDataFrame(tab, geometry=[None] * len(tab), crs=net.crs).to_file(
            path, layer="network_qa_table", driver="GPKG"
        )
    else:
        path.write_text(net.qa.to_markdown(title="ms4map network QA report"), encoding="utf-8")


def _print_downstream(net, start: str) -> None:
    from ..network import trace_downstream

    t = trace_downstream(net, start)
    print(f"Downstream of {t.start}: {t.method}")
    print(f"  {t.reason}")
    print(
        f"  outfall(s): {', '.join(t.outfall_ids) or 'none'}"
        + (f"; receiving water(s): {', '.join(t.receiving_waters)}" if t.receiving_waters else "")
    )
    print(f"  {len(t.edges)} conveyance part(s), {t.length_m:.1f} m")
    for _, e in t.edges.iterrows():
        print(
            f"  {e['from_node']} -> {e['to_node']}  via {e['conv_id']}"
            f" ({e['kind']}, {e['length_m']:.1f} m, {e['orient_method']})"
        )


def _print_upstream(net, start: str) -> None:
    from ..network import trace_upstream

    u = trace_upstream(net, start)
    sids = u.struct_ids
    print(f"Upstream of {u.start}: {len(sids)} structure(s), {len(u.conv_ids)} conveyance(s)")
    inlets = int(u.nodes["is_inlet"].sum())
    print(f"  inlets (catch basins, inlets): {inlets}")
    for sid in sids:
        print(f"  {sid}")
