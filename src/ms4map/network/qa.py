"""Check the built graph: unsnapped and dangling ends, orphans, duplicates, one-way loops, pieces with no outfall.

:func:`graph_qa` runs on the step tables; :func:`sink_pools_and_graph_qa`, the last
build step, on the solved graph (QA ``cycle`` and ``no_outfall_subnetwork``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import shapely
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from ..core.qa import QAReport, shown_ids
from ..core.schema import OPEN_CONVEYANCE_KINDS
from .model import StormNetwork
from .solve import SolvedNetwork, edge_node_positions, solve_network
from .tables import (
    BuildConfig,
    ConveyanceTable,
    EdgeTable,
    EndTable,
    Orientation,
    OutfallTable,
    SplitTable,
    StructureTable,
    add_finding,
)
from .termini import sink_pool_outfalls

__all__ = ["graph_qa", "sink_pools_and_graph_qa"]


def graph_qa(
    st: StructureTable,
    cv: ConveyanceTable,
    ends: EndTable,
    sp: SplitTable,
    ori: Orientation,
    *,
    ed: EdgeTable,
    of: OutfallTable,
    cfg: BuildConfig,
    qa: QAReport,
) -> None:
    """QA on the assembled graph: unsnapped and dangling ends, orphans, lines on structures, duplicates."""
    n_nodes = len(ed.node_ids)
    n_st = ends.n_structures
    L = cv.count
    # unsnapped ends / dangling conveyances
    split_nodes = set(sp.split_kind)
    deg = np.bincount(ends.node, minlength=n_nodes)
    lonely = (ends.node >= n_st) & (deg[ends.node] == 1) & ~np.isin(ends.node, list(split_nodes))
    la, lb = lonely[:L], lonely[L:]
    for j in np.where(la & lb)[0]:
        add_finding(
            qa,
            "dangling_conveyance",
            "conveyances",
            "Neither end of the conveyance touches a structure or another "
            "conveyance within the snap tolerance.",
            fid=cv.ids[j],
            xy=cv.mid(j),
            fix="Snap its ends to the structures it joins, or delete it.",
        )
    for e in np.where(lonely)[0]:
        j = e % L
        if la[j] and lb[j]:
            continue
        node = ends.node[e]
        is_out = of.outfall_id[node] is not None
        upstream_end = (e < L) == (ori.direction[j] != -1)
        if upstream_end and cv.kind[j] in OPEN_CONVEYANCE_KINDS and not is_out:
            # a ditch or swale naturally begins where surface runoff gathers
            add_finding(
                qa,
                "open_conveyance_head",
                "conveyances",
                "The open conveyance begins here without a structure (its head).",
                fid=cv.ids[j],
                xy=ends.xy[e],
                level="info",
                fix="Nothing to do unless it should connect to something upstream.",
            )
            continue
        add_finding(
            qa,
            "unsnapped_end",
            "conveyances",
            ("The downstream" if is_out else "A")
            + " end of the conveyance touches no structure or other conveyance "
            "within the snap tolerance"
            + (
                (
                    f"; it is treated as outfall '{of.outfall_id[node]}'."
                    if node < n_st
                    else "; the end itself is treated as an outfall (a terminal)."
                )
                if is_out
                else "."
            ),
            fid=cv.ids[j],
            xy=ends.xy[e],
            fix="Snap the end to its structure, or add the missing structure.",
        )
    # orphan structures
    touched = np.zeros(n_nodes, dtype=bool)
    real = ed.source_line >= 0  # assumed laterals do not count as a connection
    touched[ed.from_node[real]] = True
    touched[ed.to_node[real]] = True
    for i in np.where(st.has_point)[0]:
        p = st.primary[i]
        if not touched[p]:
            add_finding(
                qa,
                "orphan_structure",
                "structures",
                "No conveyance reaches this structure within the snap tolerance.",
                fid=st.ids[i],
                xy=st.xy[i],
                fix="Draw the pipe that serves it, or snap the pipe end to it.",
            )
    for node, kind in sp.split_kind.items():
        if kind == "structure" and touched[node]:
            add_finding(
                qa,
                "structure_on_conveyance",
                "structures",
                "The structure lies on the middle of a conveyance, which is split there.",
                fid=ed.node_ids[node],
                xy=st.xy[node],
                level="info",
                fix="Split the line at the structure in the source data.",
            )
    # duplicate conveyances: same node pair and about the same length
    key = pd.DataFrame(
        {
            "a": np.minimum(ed.from_node, ed.to_node),
            "b": np.maximum(ed.from_node, ed.to_node),
            "len": np.round(
                shapely.length(np.array(ed.rows["geometry"])) / max(cfg.snap_tol, 1e-9)
            ),
            "cid": ed.rows["conv_id"],
        }
    )
    dup = key.duplicated(["a", "b", "len"], keep="first")
    for i in np.where(dup.to_numpy())[0]:
        g = ed.rows["geometry"][i]
        add_finding(
            qa,
            "duplicate_feature",
            "conveyances",
            "Conveyance joins the same two nodes as another of the same length (drawn twice?).",
            fid=key["cid"].iat[i],
            xy=shapely.get_coordinates(g.interpolate(0.5, normalized=True))[0],
            fix="Delete the duplicate line if it is not a parallel pipe.",
        )


def sink_pools_and_graph_qa(
    net: StormNetwork,
    *,
    has_water: bool = False,
    at_water: Callable[[np.ndarray], bool] | None = None,
    terminals_are_outfalls: bool = True,
) -> None:
    """The last build step, on the solved graph: a pool of two-way links with no way out
    becomes one terminal (ranked like any other), then QA ``cycle`` and
    ``no_outfall_subnetwork``."""
    sink_pool_outfalls(
        net,
        has_water=has_water,
        at_water=at_water,
        terminals_are_outfalls=terminals_are_outfalls,
    )
    s = solve_network(net)  # the cached solve, or solved again with the pools' outfalls
    _cycle_qa(net, s)
    _subnetwork_qa(net, s)


def _cycle_qa(net: StormNetwork, s: SolvedNetwork) -> None:
    """QA ``cycle``: one warning per loop of one-way conveyances (saying when water in it
    has no way out)."""
    if not len(s.arc_from):
        return
    edges = net.edges
    conv = edges["conv_id"].astype(str).to_numpy()
    cyc_nodes = np.zeros(len(s.node_index), dtype=bool)
    cyc_nodes[np.isin(s.comp, np.where(s.comp_cycle)[0])] = True
    arcs_in = cyc_nodes[s.arc_from] & cyc_nodes[s.arc_to] & (s.comp[s.arc_from] == s.comp[s.arc_to])
    by_comp: dict[int, list[int]] = {}
    for a in np.where(arcs_in)[0]:
        if not edges["bidirectional"].iat[s.arc_edge[a]]:
            by_comp.setdefault(int(s.comp[s.arc_from[a]]), []).append(int(s.arc_edge[a]))
    for c, eds in by_comp.items():
        ids = sorted({conv[e] for e in eds})
        trapped = s.comp_outfall[s.sink[c]] is None and s.sink[c] == c
        g = edges.geometry.iloc[eds[0]]
        add_finding(
            net.qa,
            "cycle",
            "conveyances",
            f"Conveyances {shown_ids(ids, 10)} form a loop of one-way flow"
            + ("; water in it has no way out." if trapped else "."),
            fid=ids[0],
            xy=shapely.get_coordinates(g.interpolate(0.5, normalized=True))[0],
            fix="Check the inverts/direction of the conveyances in the loop.",
        )


def _subnetwork_qa(net: StormNetwork, s: SolvedNetwork) -> None:
    """QA ``no_outfall_subnetwork``: one warning per connected piece (weakly connected,
    with conveyances) that reaches no outfall."""
    edges = net.edges
    if not len(edges):
        return
    n = len(s.node_index)
    conv = edges["conv_id"].astype(str).to_numpy()
    eu, ev = edge_node_positions(s, edges)
    g = csr_matrix((np.ones(len(eu)), (eu, ev)), shape=(n, n))
    nw, lab = connected_components(g, directed=False)
    has_out = np.zeros(nw, dtype=bool)
    has_out[lab[s.is_outfall]] = True
    has_edge = np.zeros(nw, dtype=bool)
    has_edge[lab[eu]] = True
    for w in np.where(has_edge & ~has_out)[0]:
        members = np.where(lab == w)[0]
        ne = int(np.isin(eu, members).sum())
        ids = sorted(set(conv[np.isin(eu, members)]))
        add_finding(
            net.qa,
            "no_outfall_subnetwork",
            "conveyances",
            f"A connected piece of {ne} conveyance(s) ({shown_ids(ids, 5)}) reaches no outfall.",
            fid=ids[0],
            xy=shapely.get_coordinates(net.nodes.geometry.iloc[members[0]])[0],
            fix="Connect it to the rest of the system, or add its outfall.",
        )
