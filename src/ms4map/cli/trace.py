"""``ms4map trace PATH``: outfall of every structure, or one downstream/upstream trace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import Command, workspace_from_args

CSV_COLUMNS = [
    "struct_id",
    "outfall_id",
    "outfall_x",
    "outfall_y",
    "method",
    "reason",
    "other_outfalls",
]


ABOUT = """trace the storm network: outfall of every structure, or one trace

Build the storm network and trace it. --all writes one row per structure (struct_id,
outfall_id, outfall_x, outfall_y in the source data's CRS, method, reason,
other_outfalls); --from ID prints the downstream path; --upstream-of ID the upstream
subtree. Methods are listed in docs/network.md.
"""


def _options(p: argparse.ArgumentParser) -> None:
    from ..network import DEFAULT_LATERAL_M, DEFAULT_SNAP_M

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
    p.add_argument(
        "--out",
        metavar="FILE.csv",
        help="table of --all: FILE.csv (plus FILE.csv.provenance.json) or FILE.gpkg "
        "(layer structure_outfalls); never one of the input files",
    )
    p.add_argument(
        "--qa",
        metavar="FILE",
        help="also write the network QA report (.md, .json, .csv, or .gpkg with a "
        "point layer and a table); never one of the input files",
    )
    p.add_argument(
        "--field-check",
        metavar="FILE.gpkg",
        help="also write a point layer 'field_check' for a field check: the loose line "
        "ends and terminals taken as outfall candidates, and every structure without an "
        "outfall with its cause; never one of the input files",
    )


def run(args: argparse.Namespace) -> int:
    from ..core.errors import UsageError
    from ..network import build_network

    if not (args.all or args.from_id or args.upstream_of):
        raise UsageError(
            "Say what to trace: --all (with --out FILE.csv), --from ID or --upstream-of ID."
        )
    if args.all and not args.out:
        raise UsageError("--all writes a table: give --out FILE.csv (or FILE.gpkg).")
    if args.out and not args.all:
        raise UsageError("--out is the table of --all; add --all or leave out --out.")
    ws = workspace_from_args(args)
    prot = _protected(args, ws)
    outputs = _check_outputs(args, prot)  # every output path, before anything is written
    settings = {
        "snap_tolerance_m": args.snap_tolerance,
        "lateral_tolerance_m": args.lateral_tolerance,
    }
    net = build_network(ws, **settings)
    prov = ws.provenance(command="trace", **settings)
    if args.all:
        table = outfall_table(net, ws)
        out = _write_table(table, net, outputs, prov, prot)
        counts = table["method"].value_counts()
        print(
            f"{len(table)} structures -> {out}; "
            + ", ".join(f"{k} {v}" for k, v in counts.items()),
            file=sys.stderr,
        )
    if args.qa:
        _write_qa(net, outputs, prov, prot)
    if getattr(args, "field_check", None):
        from ..io import write_outputs
        from ..network import field_check_points

        pts = field_check_points(net)
        write_outputs(outputs["field_check"], {"field_check": pts}, provenance=prov, inputs=prot)
        print(f"{len(pts)} points to check -> {outputs['field_check']}", file=sys.stderr)
    if args.from_id:
        _print_downstream(net, args.from_id)
    if args.upstream_of:
        _print_upstream(net, args.upstream_of)
    return 0


COMMANDS = (Command("trace", ABOUT, run, _options, workspace=True),)


def provenance_path(out: str | Path) -> Path:
    """The JSON provenance sidecar of a CSV output: ``<out>.provenance.json``."""
    out = Path(out)
    return out.with_name(out.name + ".provenance.json")


def _protected(args: argparse.Namespace, ws) -> list[str]:
    """Files no output may replace: every file the options name and the workspace read."""
    from . import input_paths

    return [str(p) for p in ws.inputs] + [str(p) for p in input_paths(args)]


def _check_outputs(args: argparse.Namespace, prot: list[str]) -> dict[str, Path]:
    """Resolve and check every output path (never an input, never twice) before writing.

    Returns ``{"out": ..., "out_prov": ..., "qa": ..., "qa_prov": ...}`` for the
    outputs asked for.
    """
    from ..core.errors import UsageError
    from ..io import check_output_path

    want: list[tuple[str, str, str | Path, tuple[str, ...]]] = []
    if args.all:
        want.append(("out", "--out", args.out, (".csv", ".gpkg")))
        if Path(args.out).suffix.lower() == ".csv":
            want.append(("out_prov", "--out", provenance_path(args.out), (".json",)))
    if args.qa:
        want.append(("qa", "--qa", args.qa, QA_SUFFIXES))
        if Path(args.qa).suffix.lower() == ".csv":
            want.append(("qa_prov", "--qa", provenance_path(args.qa), (".json",)))
    if getattr(args, "field_check", None):
        want.append(("field_check", "--field-check", args.field_check, (".gpkg",)))
    seen: dict[Path, str] = {}
    got: dict[str, Path] = {}
    for key, option, path, suffixes in want:
        resolved = check_output_path(path, protected=prot, suffixes=suffixes, option=option)
        if resolved in seen:
            raise UsageError(
                f"{option} and {seen[resolved]} would write the same file "
                f"'{resolved.name}'. Fix: give each output its own path."
            )
        seen[resolved] = option
        got[key] = resolved
    return got


def _write_csv(df, path: Path, prov_path: Path, prov: dict, *, option: str, prot) -> None:
    """A CSV plus its JSON provenance sidecar (plain CSV: no comment lines).

    An earlier run's sidecar first says a table is being written, and the sidecar last
    records the table (with its SHA-256): a run stopped between the two never leaves a
    new table beside the old run's provenance.
    """
    import json

    from ..core.tables import csv_text
    from ..io import write_text_output
    from ..outputs.export import WRITING, finished_sidecar

    text = csv_text(df)
    if prov_path.exists():  # an earlier run's provenance: marked as not this table's
        write_text_output(
            prov_path,
            json.dumps(WRITING, indent=1),
            protected=prot,
            option=option,
            suffixes=(".json",),
        )
    write_text_output(path, text, protected=prot, option=option, suffixes=(".csv",))
    write_text_output(
        prov_path,
        finished_sidecar({**prov, "output": path.name}, path),
        protected=prot,
        option=option,
        suffixes=(".json",),
    )


def _write_table(table, net, outputs: dict[str, Path], prov: dict, prot: list[str]) -> Path:
    out = outputs["out"]
    if out.suffix.lower() == ".csv":
        _write_csv(table, out, outputs["out_prov"], prov, option="--out", prot=prot)
        return out
    import geopandas as gpd

    from ..io import write_outputs

    # a real GeoPackage layer: the table on the structures' points (working CRS)
    sn = net.structure_nodes
    geom = net.nodes.geometry.reindex(sn["node_id"].astype(object).where(sn["node_id"].notna()))
    layer = gpd.GeoDataFrame(table.reset_index(drop=True), geometry=geom.to_numpy(), crs=net.crs)
    return write_outputs(out, {"structure_outfalls": layer}, provenance=prov, inputs=prot)


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


QA_SUFFIXES = (".md", ".json", ".csv", ".gpkg")


def _write_qa(net, outputs: dict[str, Path], prov: dict, prot: list[str]) -> None:
    from ..io import write_outputs, write_text_output

    path = outputs["qa"]
    suffix = path.suffix.lower()
    if suffix == ".json":
        text = net.qa.to_json(extra={"provenance": prov})
        write_text_output(path, text, protected=prot, option="--qa", suffixes=(".json",))
    elif suffix == ".csv":
        _write_csv(net.qa.to_frame(), path, outputs["qa_prov"], prov, option="--qa", prot=prot)
    elif suffix == ".gpkg":
        import geopandas as gpd

        pts = net.qa.to_geodataframe(net.crs)
        tab = net.qa.to_frame()
        write_outputs(
            path,
            {
                "network_qa": pts,
                "network_qa_table": gpd.GeoDataFrame(tab, geometry=[None] * len(tab), crs=net.crs),
            },
            provenance=prov,
            inputs=prot,
        )
    else:
        text = net.qa.to_markdown(title="ms4map network QA report")
        text += (
            f"\n\nms4map {prov.get('version', '')}, {prov.get('created', '')}; inputs: "
            + ", ".join(f"{Path(p).name} (sha256 {h[:12]})" for p, h in prov["inputs"].items())
            + "\n"
        )
        write_text_output(path, text, protected=prot, option="--qa", suffixes=(".md",))


def _print_downstream(net, start: str) -> None:
    from ..network import describe_nodes, trace_downstream

    t = trace_downstream(net, start)
    print(f"Downstream of {t.start}: {t.method}")
    print(f"  {t.reason}")
    waters = ", ".join(t.receiving_waters)
    if getattr(t, "ambiguous", False):  # the evidence cannot tell the outfalls apart
        print(
            "  ambiguous: the evidence cannot tell which outfall takes the flow; candidates "
            f"{', '.join(t.outfall_ids) or 'none'}"
            + (f" (receiving water(s): {waters})" if waters else "")
            + "; no outfall is named (survey the pipes where the flow divides, or add "
            "inverts or from/to ids: docs/network.md)"
        )
    else:
        print(
            f"  outfall(s): {', '.join(t.outfall_ids) or 'none'}"
            + (f"; receiving water(s): {waters}" if waters else "")
        )
    n_conv = int(t.edges["conv_id"].nunique()) if len(t.edges) else 0
    parts = f" in {len(t.edges)} parts" if len(t.edges) != n_conv else ""
    branches = " on all branches" if len(t.outfall_ids) > 1 else ""  # or candidates
    print(f"  {n_conv} conveyance(s){parts}{branches}, {t.length_m:.0f} m, in flow order:")
    ids = set(t.edges["from_node"].astype(str)) | set(t.edges["to_node"].astype(str))
    words = describe_nodes(net, sorted(ids))
    for _, e in t.edges.iterrows():
        print(
            f"  {words[str(e['from_node'])]} -> {words[str(e['to_node'])]}  via {e['conv_id']}"
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
