"""Give every structure and conveyance its outfall, with the method and a reason a user can look up.

:func:`assign_outfalls` (per structure) and :func:`edge_outfalls` (per conveyance)
read the solved graph (:func:`ms4map.network.solve.solve_network`) through
:func:`node_results`, the answer for every node, cached on the network; the reasons
name structures by id and junctions in words (:func:`describe_nodes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import shapely

from .ambiguity import ambiguous_candidates
from .model import StormNetwork
from .solve import SPLIT_RULES, SolvedNetwork, first_node_of_comp, solve_network

__all__ = [
    "ASSIGN_METHODS",
    "OUTFALL_WHY",
    "ambiguous_reason",
    "assign_outfalls",
    "describe_nodes",
    "edge_outfalls",
    "node_results",
    "reached_reason",
]


#: Closed list of ``method`` values of :func:`assign_outfalls` (see docs/network.md).
ASSIGN_METHODS = (
    "outfalls_layer",  # drains to an outfall of the outfalls layer
    "outfall_structure",  # ... to a structure of kind outfall
    "terminal_at_water",  # ... to a terminal node within the water tolerance of a waterbody
    "headwall_at_end",  # ... to a headwall at an open end (a real outlet)
    "terminal_at_structure",  # ... to a terminal at another structure (no water layer)
    "terminal_loose_end",  # ... to a bare line end (no water layer): the weakest guess
    "split",  # flow splits and reaches several outfalls (main one given)
    "ambiguous",  # the evidence cannot tell which outfall: none named, candidates listed
    "terminal_not_at_water",  # ends at a terminal node away from every waterbody: no outfall
    "cycle",  # ends in a loop of conveyances with no way out: no outfall
    "assumed_lateral",  # no conveyance reaches it; nearest conveyance (lateral_tolerance_m)
    "unconnected",  # no conveyance reaches the structure
    "no_geometry",  # the structure has no usable location
)


def _dead_end_reasons(
    net: StormNetwork,
    s: SolvedNetwork,
    dead_end: set[int],
    label: dict[str, str],
    *,
    conflicts: dict[str, str],
) -> dict[int, str]:
    """Dead-end node -> why flow stops there: away from water (or unchecked), naming the
    conveyances into its component whose direction the inverts overruled."""
    node_names = s.node_index.to_numpy()
    not_at_water = set(net.terminals_not_at_water)
    comp_size = np.bincount(s.comp, minlength=s.ncomp)
    in_order = np.argsort(s.arc_to, kind="stable")
    v_sorted = s.arc_to[in_order]
    conv_of_edge = net.edges["conv_id"].astype(str).to_numpy()
    water_m = net.settings.get("water_tolerance_m", 0.0)
    dead_why: dict[int, str] = {}
    for t in dead_end:
        members = np.where(s.comp == s.comp[t])[0] if comp_size[s.comp[t]] > 1 else [t]
        hit: list[str] = []
        for nd in members:
            lo, hi = np.searchsorted(v_sorted, nd), np.searchsorted(v_sorted, nd, "right")
            for a in in_order[lo:hi]:
                cid = conv_of_edge[s.arc_edge[a]]
                if cid in conflicts and cid not in hit:
                    hit.append(cid)
        dead_why[t] = _dead_end_reason(
            label.get(str(node_names[t]), str(node_names[t])),
            at_water_checked=str(node_names[t]) in not_at_water,
            water_m=water_m,
            unchecked=bool(getattr(net, "terminals_unchecked", False)),
            conflicts=[(c, conflicts[c]) for c in hit],
        )
    return dead_why


def node_results(net: StormNetwork) -> pd.DataFrame:
    """Outfall, method and reason for every network node (cached)."""
    cached = net._cache.get("node_results")
    if cached is not None:
        return cached
    s = solve_network(net)
    n = len(s.node_index)
    sink = s.sink[s.comp]
    main = s.comp_outfall[sink].copy()
    outf = net.outfalls
    ometh = dict(zip(outf.index.astype(str), outf["method"].astype(str), strict=False))
    others = np.full(n, "", dtype=object)
    method = np.full(n, None, dtype=object)
    reason = np.full(n, "", dtype=object)
    hops = s.hops[s.comp] + (s.node_hops if s.node_hops is not None else 0)
    dist = s.dist_m[s.comp] + (s.node_dist_m if s.node_dist_m is not None else 0.0)
    lat = net.edges[net.edges["orient_method"] == "assumed_lateral"]
    lateral_of = dict(zip(lat["from_node"].astype(str), lat["length_m"], strict=True))
    node_names = s.node_index.to_numpy()
    snap_m = net.settings.get("snap_tolerance_m", 0.0)
    lat_tol = net.settings.get("lateral_tolerance_m", 0.0)
    conflicts = getattr(net, "orientation_conflicts", {}) or {}
    first_node = first_node_of_comp(s)
    gr = getattr(net, "_graph", None) or {}
    amb = ambiguous_candidates(s, main, alt=gr.get("alt"), free_comp=_free_exit_comps(net, s))
    # words for the nodes users see in reasons: junctions by place and conveyances
    no_out = (main == None) & s.touched & ~s.comp_cycle[sink]  # noqa: E711
    dead_end = {int(first_node[c]) for c in np.unique(sink[no_out])}
    # sinks without an outfall that a branch ends in, below a flow split
    branch_sinks = sorted({d for ds, _ in s.dead_ends.values() for d in ds})
    named = (
        {str(node_names[i]) for i in dead_end}
        | {str(v) for v in outf["node_id"].dropna()}
        | {str(node_names[first_node[d]]) for d in branch_sinks}
    )
    label = describe_nodes(net, sorted(named))
    out_node = dict(zip(outf.index.astype(str), outf["node_id"], strict=False))
    dead_why = _dead_end_reasons(net, s, dead_end, label, conflicts=conflicts)
    note = np.full(n, "", dtype=object)
    note_of: dict[tuple[int, int], str] = {}
    for i in range(n):
        c = s.comp[i]
        dead = s.dead_ends.get(int(c))
        if dead:
            key = (int(c), int(sink[i]) if main[i] is None else -1)
            if key not in note_of:
                where = [
                    (
                        label.get(str(node_names[first_node[d]]), str(node_names[first_node[d]])),
                        bool(s.comp_cycle[d]),
                    )
                    for d in dead[0]
                    if d != key[1]  # a dead main path is described on its own
                ]
                note_of[key] = _dead_branch_note(where, more=dead[1])
            note[i] = note_of[key]
        cands = amb.get(i)
        if cands:
            main[i] = None
            others[i] = ";".join(cands)
            method[i] = "ambiguous"
            reason[i] = ambiguous_reason(cands) + note[i]
            continue
        allo = s.all_outfalls.get(int(c))
        m = main[i]
        if allo and len(allo) > 1:
            if m is None:
                m = allo[0]
            main[i] = m
            others[i] = ";".join(o for o in allo if o != m)
            method[i] = "split"
            reason[i] = _split_reason(len(allo), m, int(s.split_bits[c])) + note[i]
            continue
        if s.is_outfall[i]:
            method[i] = ometh.get(m)
            reason[i] = f"the structure is outfall {m} ({ometh.get(m)})"
            continue
        if not s.touched[i]:
            method[i] = "unconnected"
            reason[i] = (
                f"no conveyance lies within the snap tolerance ({snap_m:g} m) or the "
                f"lateral tolerance ({lat_tol:g} m) of the structure"
            )
            continue
        if m is not None:
            method[i] = ometh.get(m)
            reason[i] = reached_reason(
                int(hops[i]), float(dist[i]), m, ometh.get(m), label.get(str(out_node.get(m)))
            )
            lat_m = lateral_of.get(node_names[i])
            if lat_m is not None:
                method[i] = "assumed_lateral"
                reason[i] = (
                    f"no conveyance reaches the structure; assumed to drain through an "
                    f"unmapped lateral to the nearest conveyance ({lat_m:.0f} m), then " + reason[i]
                )
            reason[i] += note[i]
            continue
        t = int(first_node[sink[i]])
        if s.comp_cycle[sink[i]]:
            method[i] = "cycle"
            reason[i] = "flow ends in a loop of conveyances with no way out (see QA 'cycle')"
        else:
            method[i] = "terminal_not_at_water"
            reason[i] = dead_why[t]
        reason[i] += note[i]
    res = pd.DataFrame(
        {
            "node_id": s.node_index,
            "outfall_id": main,
            "method": method,
            "reason": reason,
            "other_outfalls": others,
            "hops": hops,
            "dist_m": dist,
            "dead_branches": note,
        }
    )
    res = res.set_index("node_id")
    net._cache["node_results"] = res
    return res


#: orient_method values of conveyances no evidence orients
_FREE_METHODS = ("outlet_path", "digitized", "flow_dir_uni")


def _free_exit_comps(net: StormNetwork, s: SolvedNetwork) -> np.ndarray:
    """Per component: one of its exits is a conveyance no evidence orients."""
    out = np.zeros(s.ncomp, dtype=bool)
    if not len(s.arc_edge):
        return out
    meth = net.edges["orient_method"].to_numpy(dtype=object)[s.arc_edge]
    over = net.edges["orient_overruled"].to_numpy(dtype=object)[s.arc_edge]
    free = np.isin(meth, _FREE_METHODS) & (over == "")
    gr = getattr(net, "_graph", None) or {}
    src, uni_ok = gr.get("src"), gr.get("uni_ok")
    if src is not None and uni_ok is not None and len(uni_ok):
        line = np.asarray(src)[s.arc_edge]
        # a "uni" value that agrees: the data says flow leaves this way
        free &= ~((line >= 0) & uni_ok[np.maximum(line, 0)])
    cu, cv = s.comp[s.arc_from], s.comp[s.arc_to]
    out[cu[free & (cu != cv)]] = True
    return out


def ambiguous_reason(candidates: list[str]) -> str:
    """Reason text of an ``ambiguous`` answer (shared by the table and traces)."""
    names = ", ".join(candidates[:-1]) + " or " + candidates[-1]
    return (
        f"the evidence cannot tell which way flow leaves: it may reach outfall {names} "
        "(no ids, inverts or elevations orient the conveyances that decide, or only "
        'the input order chose at a flow split; docs/network.md "The ambiguous '
        'answer"); no outfall is named. Fix: survey the pipes or add from/to ids or '
        "inverts"
    )


def _split_reason(n_out: int, main: str, bits: int) -> str:
    rules = [text for bit, text in SPLIT_RULES if bits & bit]
    how = " or ".join(rules) if rules else "the largest pipe (then the lowest invert)"
    return (
        f"flow splits and reaches {n_out} outfalls; main outfall {main}: at each split "
        f"on the way the main branch is {how}"
    )


def _dead_branch_note(where: list[tuple[str, bool]], *, more: bool = False) -> str:
    """Reason suffix naming the branches below a flow split that reach no outfall.

    ``where`` holds (words for the dead end, whether it is a loop with no way out);
    ``more``: further dead ends exist beyond those named.
    """
    if not where:
        return ""
    places = [
        f"{w} (a loop of conveyances with no way out, QA 'cycle')" if cyc else w for w, cyc in where
    ]
    if len(places) == 1 and not more:
        return f"; where flow splits, a branch dead-ends at {places[0]}"
    shown = [f"at {p}" for p in places]
    if more:
        shown.append("elsewhere")
        return f"; where flow splits, branches dead-end {', '.join(shown[:-1])} and elsewhere"
    return (
        f"; where flow splits, {len(places)} branches dead-end: "
        f"{', '.join(shown[:-1])} and {shown[-1]}"
    )


def reached_reason(
    n_conv: int, metres: float, outfall: str, method: str | None, where: str | None = None
) -> str:
    """Reason text for flow that reaches ``outfall`` (shared by the table and traces)."""
    why = OUTFALL_WHY.get(method or "", method)
    if where and where != outfall:
        why = f"{why}: {where}"
    return f"{n_conv} conveyance(s), {metres:.0f} m downstream to outfall {outfall} ({why})"


_CONFLICT_WORDS = {"ids": "from/to ids", "flow_dir": "flow-direction attribute"}


def _dead_end_reason(
    where: str,
    *,
    at_water_checked: bool,
    water_m: float,
    conflicts: list[tuple[str, str]],
    unchecked: bool = False,
) -> str:
    """Why flow stops at a terminal that is not an outfall (naming the cause if known)."""
    tail = "is not an outfall"
    if at_water_checked and unchecked:
        tail += (
            " (the outfalls are mapped and do not include it, and without a `waterbodies` "
            "layer nothing shows it discharges to water; add the `waterbodies` layer)"
        )
    elif at_water_checked:
        tail += f" and lies more than {water_m:g} m (the water tolerance) from every waterbody"
    if where.startswith("the downstream end of "):
        tail += (
            "; the end touches no structure or other conveyance within the snap "
            "tolerance (QA unsnapped_end)"
        )
    if conflicts:
        causes = "; ".join(
            f"{c}'s inverts contradict its {_CONFLICT_WORDS.get(k, k)} (orientation_conflict)"
            for c, k in conflicts
        )
        names = ", ".join(c for c, _ in conflicts)
        return (
            f"the network ends at {where} because {causes}: the inverts win, so {names} "
            f"flows into {where}, which has no other way out and {tail}"
        )
    return f"flow ends at {where}, which {tail}"


def _fmt_xy(x: float, y: float) -> str:
    return f"({x:.1f}, {y:.1f})"


def _conv_words(cid: str) -> str:
    return f"the assumed lateral of {cid[8:]}" if cid.startswith("lateral:") else cid


def describe_nodes(net: StormNetwork, node_ids: list[str]) -> dict[str, str]:
    """Words a user can look up for network nodes.

    A structure is its ``struct_id``; a junction (``J<n>``, made where conveyance
    ends meet without a structure) is described by the conveyances that meet
    there and its coordinates in the working CRS, e.g. ``the downstream end of
    D-004 at (605049.5, 4765652.5)``.
    """
    nodes = net.nodes
    out: dict[str, str] = {}
    junc: list[str] = []
    for nid in node_ids:
        nid = str(nid)
        if nid in nodes.index and pd.isna(nodes.at[nid, "struct_id"]):
            junc.append(nid)
        else:
            out[nid] = nid
    if not junc:
        return out
    e = net.edges
    fn = e["from_node"].astype(str).to_numpy()
    tn = e["to_node"].astype(str).to_numpy()
    conv = e["conv_id"].astype(str).to_numpy()
    flows_in: dict[str, list[str]] = {}
    flows_out: dict[str, list[str]] = {}
    for rows, side, book in ((np.isin(tn, junc), tn, flows_in), (np.isin(fn, junc), fn, flows_out)):
        for r in np.where(rows)[0]:
            book.setdefault(side[r], []).append(conv[r])
    xy = shapely.get_coordinates(nodes.geometry.loc[junc].values)
    for k, nid in enumerate(junc):
        at = _fmt_xy(*xy[k])
        ins = list(dict.fromkeys(flows_in.get(nid, [])))
        outs = list(dict.fromkeys(flows_out.get(nid, [])))
        through = [c for c in ins if c in outs]
        others = [c for c in dict.fromkeys(ins + outs) if c not in through]
        if through:
            text = f"a point on {_conv_words(through[0])} at {at}"
            if others:
                text += f" where {', '.join(map(_conv_words, others))} meet(s) it"
        elif len(others) == 1:
            end = "downstream end" if ins else "upstream end"
            text = f"the {end} of {_conv_words(others[0])} at {at}"
        elif others:
            names = list(map(_conv_words, others))
            text = f"the junction of {', '.join(names[:-1])} and {names[-1]} at {at}"
        else:
            text = f"a junction at {at}"
        out[nid] = text
    return out


OUTFALL_WHY = {
    "outfalls_layer": "in the outfalls layer",
    "outfall_structure": "a structure of kind outfall",
    "terminal_at_water": "terminal node at a waterbody",
    "headwall_at_end": "a headwall at an open end",
    "terminal_at_structure": "the mapped system stops at this structure; no waterbody layer "
    "to check against",
    "terminal_loose_end": "a line end that touches nothing; no waterbody layer to check "
    "against (QA unsnapped_end)",
}


def assign_outfalls(net: StormNetwork) -> pd.DataFrame:
    """The outfall of every structure at once (linear in network size).

    Parameters
    ----------
    net : StormNetwork

    Returns
    -------
    DataFrame
        One row per input structure, in input order: ``struct_id``, ``node_id``,
        ``outfall_id`` (NA when there is none), ``method`` (:data:`ASSIGN_METHODS`),
        ``reason``, ``other_outfalls`` (``;``-joined ids of further outfalls reached
        where the flow splits, else ``""``).
    """
    res = node_results(net)
    sn = net.structure_nodes
    out = pd.DataFrame({"struct_id": sn["struct_id"].astype(str), "node_id": sn["node_id"]})
    have = out["node_id"].notna()
    j = res.reindex(out.loc[have, "node_id"].astype(str))
    for col in ("outfall_id", "method", "reason", "other_outfalls"):
        vals = np.full(len(out), None if col != "other_outfalls" else "", dtype=object)
        vals[have.to_numpy()] = j[col].to_numpy()
        out[col] = vals
    out.loc[~have, "method"] = "no_geometry"
    out.loc[~have, "reason"] = "the structure has no usable point geometry"
    for col in ("struct_id", "node_id", "outfall_id", "method", "reason", "other_outfalls"):
        out[col] = pd.array(out[col].astype(object).where(out[col].notna(), None), dtype="str")
    return out[["struct_id", "outfall_id", "method", "reason", "other_outfalls", "node_id"]]


def edge_outfalls(net: StormNetwork) -> pd.DataFrame:
    """The outfall(s) of every conveyance: ``conv_id, outfall_id, method, reason, other_outfalls``.

    A conveyance drains where its downstream node drains (both ends for a two-way
    link); the parts of a split conveyance are combined.
    """
    res = node_results(net)
    e = net.edges
    if len(e) == 0:
        return pd.DataFrame(columns=["conv_id", "outfall_id", "method", "reason", "other_outfalls"])
    down = res.reindex(e["to_node"].astype(str))
    df = pd.DataFrame(
        {
            "conv_id": e["conv_id"].astype(str).to_numpy(),
            "outfall_id": down["outfall_id"].to_numpy(),
            "method": down["method"].to_numpy(),
            "reason": down["reason"].to_numpy(),
            "other_outfalls": down["other_outfalls"].to_numpy(),
            "bi": e["bidirectional"].to_numpy(),
            "up_out": res.reindex(e["from_node"].astype(str))["outfall_id"].to_numpy(),
        }
    )
    # one pass over plain tuples (a groupby + iterrows took 2-3 s on 5,000 conveyances)
    groups: dict[str, list[Any]] = {}  # conv_id -> [outfalls in order, last row]
    cols = ("conv_id", "outfall_id", "method", "reason", "other_outfalls", "bi", "up_out")
    columns = [df[c].tolist() for c in cols]
    ambiguous: dict[str, tuple[str, str]] = {}  # conv_id -> (candidates, reason)
    for cid, outfall, meth, reason, other, bi, up in zip(*columns, strict=True):
        if meth == "ambiguous":
            ambiguous.setdefault(cid, (str(other), str(reason)))
        g = groups.setdefault(cid, [[], None])
        outs = g[0]
        for o in [outfall, *str(other or "").split(";"), up if bi else None]:
            if isinstance(o, str) and o and o not in outs:
                outs.append(o)
        g[1] = (outfall, meth, reason)
    rows = []
    for cid, (outs, (outfall, meth, reason)) in groups.items():
        if cid in ambiguous:
            cands, why = ambiguous[cid]
            rows.append(
                {
                    "conv_id": cid,
                    "outfall_id": None,
                    "method": "ambiguous",
                    "reason": why,
                    "other_outfalls": cands,
                }
            )
            continue
        main = outfall if isinstance(outfall, str) else (outs[0] if outs else None)
        rows.append(
            {
                "conv_id": cid,
                "outfall_id": main,
                "method": meth if len(outs) <= 1 else "split",
                "reason": reason,
                "other_outfalls": ";".join(o for o in outs if o != main),
            }
        )
    out = pd.DataFrame(rows)
    for col in out.columns:
        out[col] = pd.array(out[col].astype(object).where(out[col].notna(), None), dtype="str")
    return out
