"""The sampling plan: where to sample upstream of a flowing outfall, by bisection of its network.

:func:`sampling_plan` splits what is still suspect roughly in half with each sample
(by contributing acres, candidate parcels of :mod:`.candidates`, or structures), so
the source is isolated in about ``log2(n)`` samples; :meth:`ms4map.records.Records.next_sample`
walks the plan along the results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import DataError, UsageError
from ..core.units import metres_per_unit
from ..network import trace_upstream
from ._shared import _check_outfall, _workspace
from .candidates import candidate_sources

if TYPE_CHECKING:
    from ..io import Workspace
    from ..network import StormNetwork
    from ..pipeline import PipelineResult

__all__ = ["PLAN_COLUMNS", "PLAN_WEIGHTS", "sampling_plan"]

#: What the bisection splits in half.
PLAN_WEIGHTS = ("area", "candidates", "structures")
#: Columns of :func:`sampling_plan`.
PLAN_COLUMNS = (
    "order",
    "struct_id",
    "kind",
    "sample",
    "after",
    "if_result",
    "suspect_structures",
    "upstream_structures",
    "upstream_parcels",
    "upstream_candidates",
    "upstream_acres",
    "upstream_share",
    "method",
    "reason",
)
# Structures one can open and sample, best first on a tie.
_SAMPLE_KINDS = {"manhole": 0, "junction": 1, "inlet": 2, "catch_basin": 2, "cleanout": 3}


def _upstream_graph(net: StormNetwork, outfall_id: str) -> tuple[Any, Any, np.ndarray, int]:
    """Nodes above the outfall, their reachability (row i: what drains to i), root row."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    if outfall_id not in net.outfalls.index:
        raise DataError(f"Outfall '{outfall_id}' is not in the storm network.")
    up = trace_upstream(net, outfall_id)
    nodes = up.nodes
    idx = pd.Index(nodes.index.astype(str))
    e = up.edges
    u = idx.get_indexer(e["from_node"].astype(str))
    v = idx.get_indexer(e["to_node"].astype(str))
    ok = (u >= 0) & (v >= 0)
    src, dst = list(u[ok]), list(v[ok])
    if "bidirectional" in e.columns:
        bi = e["bidirectional"].fillna(False).astype(bool).to_numpy()[ok]
        src += list(v[ok][bi])
        dst += list(u[ok][bi])
    n = len(idx)
    # reversed graph: an arc to -> from, so a BFS from i finds everything draining to i
    g = csr_matrix((np.ones(len(src)), (dst, src)), shape=(n, n))
    rows, cols = [], []
    for i in range(n):
        order = breadth_first_order(g, i, directed=True, return_predecessors=False)
        rows.append(np.full(len(order), i))
        cols.append(order)
    reach = csr_matrix(
        (
            np.ones(sum(len(c) for c in cols), dtype=bool),
            (np.concatenate(rows), np.concatenate(cols)),
        ),
        shape=(n, n),
    )
    root = int(idx.get_loc(str(net.outfalls.loc[outfall_id, "node_id"])))
    return nodes, e, reach, root


def sampling_plan(
    result: PipelineResult,
    outfall_id: str,
    *,
    max_samples: int = 4,
    weight: str = "area",
    workspace: Workspace | None = None,
    candidates: pd.DataFrame | None = None,
    known: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Where to sample upstream of a flowing outfall to isolate the source.

    A bisection over the outfall's upstream network.  Everything above the outfall
    is suspect.  The first sample goes to the structure whose upstream part holds
    closest to half of the suspect ``weight``: flow (or the pollutant) found there
    means the source is above it; a clean sample means it is in the rest.  Each next
    sample splits what is still suspect in the same way, so ``max_samples`` samples
    on any branch of the plan narrow ``n`` suspect structures down to about
    ``n / 2**max_samples``.  The plan is a decision tree: row ``after`` says which
    earlier sample leads to it and ``if_result`` on which result.

    Parameters
    ----------
    result : PipelineResult
    outfall_id : str
    max_samples : int
        Samples along any branch of the plan (depth of the decision tree); the plan
        has at most ``2**max_samples - 1`` rows.
    weight : {"area", "candidates", "structures"}
        What is split in half: the parcel acres whose runoff enters the network at
        each structure (from the drainage table), the candidate parcels
        (:func:`candidate_sources`, weighted by the share draining there), or the
        structures themselves.  When the suspect part has none of the chosen weight
        (no drainage mapped, no candidate), structures are counted instead and
        ``method`` says so.
    workspace : Workspace, optional
        Defaults to ``result.workspace``.
    candidates : DataFrame, optional
        From :func:`candidate_sources` (computed when needed and not given).
    known : mapping, optional
        Samples already taken, ``struct_id -> "flow" | "clean"``, wherever they were
        taken (off a plan too): the plan starts from what they leave suspect (flow at a
        structure: only what is above it; clean: only what is not), and never proposes
        a structure sampled already.  Structures not above the outfall are ignored.

    Returns
    -------
    DataFrame
        :data:`PLAN_COLUMNS`, one row per sample in the plan: ``order`` (1 = first
        sample), ``struct_id``, ``kind``, ``sample`` (how many samples deep in the
        plan), ``after`` (order of the sample that leads here, NA for the first),
        ``if_result`` (``"flow"`` = sample when ``after`` found the flow or
        pollutant, ``"clean"`` = when it was clean), counts of what is still suspect
        and what of it lies upstream of this structure, ``upstream_share`` (share of
        the suspect weight above it), ``method`` and ``reason``.

    Raises
    ------
    UsageError
        Bad ``weight`` or ``max_samples``.
    DataError
        Unknown outfall, or no network in the result.
    """
    _check_plan_settings(weight, max_samples)
    net = getattr(result, "network", None)
    if net is None:
        raise DataError(
            "A sampling plan needs the storm network: the workspace has no structures "
            "and conveyances, or the pipeline was not run."
        )
    oid = str(outfall_id)
    ws = _workspace(result, workspace)
    _check_outfall(result, ws, oid)
    nodes, edges, reach, root = _upstream_graph(net, oid)
    if weight == "candidates" and candidates is None and _has_drainage(result):
        candidates = candidate_sources(result, oid, workspace=ws)
    entries = _entries_at_nodes(result, ws, nodes, edges, candidates)
    start = _known_suspect(nodes, reach, root, known)
    rows = _bisection_rows(
        nodes, reach, root, entries, weight=weight, max_samples=max_samples, oid=oid, start=start
    )
    out = pd.DataFrame(rows, columns=list(PLAN_COLUMNS))
    out["after"] = out["after"].astype("Int64")
    return out


def _known_suspect(
    nodes: pd.DataFrame, reach: Any, root: int, known: Mapping[str, str] | None
) -> tuple[np.ndarray, frozenset[int]]:
    """What the samples ``known`` leave suspect, and the rows they sampled."""
    n = len(nodes)
    suspect = np.ones(n, dtype=bool)
    sampled = {root}
    if not known:
        return suspect, frozenset(sampled)
    sid = nodes["struct_id"].astype(str).to_numpy()
    for struct, res in known.items():
        hit = np.where(sid == str(struct))[0]
        if not len(hit):
            continue
        x = int(hit[0])
        up = np.zeros(n, dtype=bool)
        up[reach[x].indices] = True
        suspect &= up if str(res) == "flow" else ~up
        sampled.add(x)
    return suspect, frozenset(sampled)


def _check_plan_settings(weight: str, max_samples: Any) -> None:
    """Refuse an unknown ``weight`` or a ``max_samples`` that is not a whole number >= 1."""
    if weight not in PLAN_WEIGHTS:
        raise UsageError(f"Unknown weight {weight!r}: select from {list(PLAN_WEIGHTS)}.")
    if isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples < 1:
        raise UsageError(f"max_samples = {max_samples!r}: give a whole number >= 1.")


def _has_drainage(result: PipelineResult) -> bool:
    d = getattr(result, "drainage", None)
    return d is not None and len(d) > 0


@dataclass
class _Entries:
    """What enters the upstream network at each node (row order of the nodes)."""

    acres: np.ndarray  # parcel acres whose runoff enters there (times the fraction)
    candidates: np.ndarray  # candidate parcels' fractions entering there
    parcels: list[set[str]]  # parcel ids entering there
    candidate_parcels: list[set[str]]  # candidate parcel ids entering there


def _parcel_acres(ws: Workspace) -> dict[str, float]:
    """Parcel id -> acres (the ``acres`` column where given, else the polygon's area)."""
    parcels = ws.layers.get("parcels")
    if parcels is None or not len(parcels):
        return {}
    a = pd.to_numeric(parcels["acres"], errors="coerce") if "acres" in parcels else None
    geo = (
        parcels.geometry.area.to_numpy() / 4046.8564224 * metres_per_unit(ws.crs, default=1.0) ** 2
    )
    vals = np.where(a.notna().to_numpy(), a.to_numpy(dtype=float), geo) if a is not None else geo
    return dict(zip(parcels["parcel_id"].astype(str), vals, strict=True))


def _entries_at_nodes(
    result: PipelineResult,
    ws: Workspace,
    nodes: pd.DataFrame,
    edges: pd.DataFrame,
    candidates: Any,
) -> _Entries:
    """Parcel runoff entering at each node: inlets at their node, conveyances at their
    lowest end; the candidate parcels among them."""
    n = len(nodes)
    pos = {nid: i for i, nid in enumerate(nodes.index.astype(str))}
    entries = _Entries(
        np.zeros(n), np.zeros(n), [set() for _ in range(n)], [set() for _ in range(n)]
    )
    if not _has_drainage(result):
        return entries
    d = result.drainage
    conv_node: dict[str, int] = {}
    for conv, to in zip(edges["conv_id"].astype(str), edges["to_node"].astype(str), strict=True):
        if to in pos:
            conv_node[conv] = pos[to]  # the last part listed is the lowest in flow order
    sn = result.network.structure_nodes
    struct_node = dict(zip(sn["struct_id"].astype(str), sn["node_id"], strict=True))
    acres = _parcel_acres(ws)
    cset = set() if candidates is None else set(candidates["parcel_id"].astype(str))
    sel = d[d["target_kind"].isin(["inlet", "conveyance"])]
    for pid, kind, tid, frac in zip(
        sel["parcel_id"].astype(str),
        sel["target_kind"],
        sel["target_id"].astype(str),
        pd.to_numeric(sel["fraction"], errors="coerce").fillna(0.0),
        strict=True,
    ):
        if kind == "inlet":
            nid = struct_node.get(tid)
            i = pos.get(nid) if isinstance(nid, str) else None
        else:
            i = conv_node.get(tid)
        if i is None:
            continue
        entries.acres[i] += acres.get(pid, 0.0) * float(frac)
        entries.parcels[i].add(pid)
        if pid in cset:
            entries.candidates[i] += float(frac)
            entries.candidate_parcels[i].add(pid)
    return entries


def _bisection_rows(
    nodes: pd.DataFrame,
    reach: Any,
    root: int,
    entries: _Entries,
    *,
    weight: str,
    max_samples: int,
    oid: str,
    start: tuple[np.ndarray, frozenset[int]] | None = None,
) -> list[dict[str, Any]]:
    """The plan's rows, breadth first: each sample splits what is still suspect in two
    (from ``start``: the suspect mask and the rows sampled already)."""
    n = len(nodes)
    node_ids = nodes.index.astype(str)
    is_struct = nodes["struct_id"].map(lambda s: isinstance(s, str) and bool(s)).to_numpy()
    kinds = nodes["kind"].astype(str).to_numpy()
    structs = is_struct.astype(float)
    w_main = {"area": entries.acres, "candidates": entries.candidates, "structures": structs}[
        weight
    ]
    sampleable = is_struct & np.array([k != "outfall" for k in kinds])
    sampleable[root] = False
    kind_rank = np.array([_SAMPLE_KINDS.get(k, 4) for k in kinds])

    rows: list[dict[str, Any]] = []
    # queue of (suspect mask, depth, after order, if_result, sampled set)
    first, done0 = start if start is not None else (np.ones(n, dtype=bool), frozenset({root}))
    queue: list[tuple[np.ndarray, int, int | None, str | None, frozenset[int]]] = [
        (first, 1, None, None, done0)
    ]
    while queue:
        suspect, depth, after, if_result, sampled = queue.pop(0)
        if depth > max_samples:
            continue
        w, method = w_main, f"bisection_{weight}"
        total = float(w[suspect].sum())
        if total <= 0:
            w, method = structs, f"bisection_structures (no {weight} in the suspect part)"
            total = float(w[suspect].sum())
        options = suspect & sampleable
        for s in sampled:
            options[s] = False
        if total <= 0 or not options.any():
            continue
        above = reach @ (w * suspect)  # weight of the suspect part above each node
        cand = np.where(options)[0]
        a = above[cand]
        informative = (a > 0) & (a < total)
        if not informative.any():
            continue
        cand, a = cand[informative], a[informative]
        score = np.maximum(a, total - a)
        best = np.lexsort((np.array(node_ids)[cand], kind_rank[cand], score))[0]
        x, ax = int(cand[best]), float(a[best])
        up_mask = np.zeros(n, dtype=bool)
        up_mask[reach[x].indices] = True
        up_mask &= suspect
        order = len(rows) + 1
        rows.append(
            _plan_row(
                nodes,
                x,
                entries,
                suspect_structs=suspect & is_struct,
                up_mask=up_mask,
                is_struct=is_struct,
                order=order,
                depth=depth,
                after=after,
                if_result=if_result,
                share=ax / total,
                method=method,
                oid=oid,
            )
        )
        done = sampled | {x}
        queue.append((up_mask, depth + 1, order, "flow", done))
        queue.append((suspect & ~up_mask, depth + 1, order, "clean", done))
    return rows


def _plan_row(
    nodes: pd.DataFrame,
    x: int,
    entries: _Entries,
    *,
    suspect_structs: np.ndarray,
    up_mask: np.ndarray,
    is_struct: np.ndarray,
    **step: Any,
) -> dict[str, Any]:
    """The plan's row for a sample at node row ``x``, with its reason in words.

    ``step`` holds ``order``, ``depth``, ``after``, ``if_result``, ``share`` (of the
    suspect weight above ``x``), ``method`` and the outfall id ``oid``.
    """
    after, if_result, share, method = (step[k] for k in ("after", "if_result", "share", "method"))
    kind = nodes["kind"].astype(str).to_numpy()[x]
    n_susp = int(suspect_structs.sum())
    n_up = int((up_mask & is_struct).sum())
    up_rows = np.where(up_mask)[0]
    up_parcels = set().union(*[entries.parcels[i] for i in up_rows])
    up_cands = set().union(*[entries.candidate_parcels[i] for i in up_rows])
    if after is None:
        when = f"First sample above outfall {step['oid']}"
    elif if_result == "flow":
        when = f"If sample {after} found the flow"
    else:
        when = f"If sample {after} was clean"
    unit = {"area": "contributing acres", "candidates": "candidate parcels"}.get(
        method.split("_", 1)[1].split(" ")[0], "structures"
    )
    reason = (
        f"{when}: sample {nodes.index.astype(str)[x]} ({kind}). {n_up} of the {n_susp} "
        f"structures still suspect lie at or above it, with {share:.0%} of the suspect "
        f"{unit}; flow there puts the source above it, a clean sample puts it in the rest."
    )
    return {
        "order": step["order"],
        "struct_id": str(nodes["struct_id"].iat[x]),
        "kind": kind,
        "sample": step["depth"],
        "after": after,
        "if_result": if_result,
        "suspect_structures": n_susp,
        "upstream_structures": n_up,
        "upstream_parcels": len(up_parcels),
        "upstream_candidates": len(up_cands),
        "upstream_acres": round(float(entries.acres[up_mask].sum()), 2),
        "upstream_share": round(share, 3),
        "method": method,
        "reason": reason,
    }
