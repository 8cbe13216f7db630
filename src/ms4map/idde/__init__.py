"""Illicit discharge detection and elimination (docs/rules.md section 5; Stillwater 174 Art. I).

A flowing, suspect outfall starts an investigation.  This module answers the
Stormwater Management Officer's questions in order:

* :func:`flow_type` -- what is flowing?  The residential flow-type chart of the CWP
  IDDE manual (2004) on detergents, ammonia, potassium and fluoride.
* :func:`candidate_sources` -- who might be the source?  Parcels draining to the
  outfall with a recorded septic failure, a septic flag, an industrial (7xx) or
  commercial (4xx) property class, or an on-site septic system, each with the
  share of the parcel that drains there and the rule that made it a candidate.
* :func:`sampling_plan` -- where to sample?  A bisection of the outfall's upstream
  network: each sample splits what is still suspect roughly in half, so the source
  is isolated in about ``log2(n)`` samples.
* :func:`notice_of_violation` -- a printable written notice of violation for the
  landowner, with the remedy period, appeal rights, penalties, officer title and
  citations taken from the municipality profile.

Examples
--------
>>> from ms4map.idde import flow_type
>>> flow_type(detergents_mg_l=0.5, ammonia_mg_l=2.0, potassium_mg_l=1.0)[0]
'sewage'
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ms4map.core.nulls import is_na, is_truthy

from ..core.calendar import last_day
from ..core.errors import DataError, UsageError
from ..core.qa import shown_ids
from ..core.schema import PARCEL_INFO_COLUMNS
from ..drainage import PATH_COLUMNS
from ..rules.profiles import Profile, load_profile, remedy_deadline

if TYPE_CHECKING:
    from ..io.workspace import Workspace
    from ..network.build import StormNetwork
    from ..pipeline import PipelineResult

__all__ = [
    "AMMONIA_POTASSIUM_RATIO",
    "CANDIDATE_CLASSES",
    "CANDIDATE_COLUMNS",
    "DETERGENTS_MG_L",
    "FLOW_TYPES",
    "FLUORIDE_MG_L",
    "PLAN_COLUMNS",
    "PLAN_WEIGHTS",
    "VIOLATIONS",
    "Notice",
    "candidate_sources",
    "candidates_for_area",
    "flow_type",
    "flow_type_of",
    "notice_of_violation",
    "sampling_plan",
    "suggest_violation",
]

# ======================================================================================
# Flow type (CWP IDDE manual, 2004, residential flow-type chart)
# ======================================================================================
#: Detergents (surfactants, as MBAS) above this (mg/L) mean sewage or wash water.
#: docs/rules.md section 5 takes it from the CWP IDDE manual (Brown, Caraco and Pitt, 2004);
#: verify it against the manual before relying on it.
DETERGENTS_MG_L = 0.25
#: Ammonia / potassium ratio above this means sewage, else wash water (verify as above).
AMMONIA_POTASSIUM_RATIO = 1.0
#: Fluoride above this (mg/L) without detergents means tap water, else natural water
#: (verify as above).
FLUORIDE_MG_L = 0.25

#: Answers of :func:`flow_type`.
FLOW_TYPES = (
    "sewage",
    "wash_water",
    "sewage_or_wash_water",
    "tap_water",
    "natural_water",
    "tap_or_natural_water",
    "undetermined",
)

_CHART = "residential flow-type chart (CWP IDDE manual, 2004)"


def _measure(name: str, value: Any) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} = {value!r}: give a concentration in mg/L or None.") from None
    if math.isnan(v):
        return None
    if v < 0:
        raise UsageError(f"{name} = {v}: a concentration cannot be negative.")
    return v


def flow_type(
    detergents_mg_l: float | None = None,
    ammonia_mg_l: float | None = None,
    potassium_mg_l: float | None = None,
    fluoride_mg_l: float | None = None,
) -> tuple[str, str]:
    """The likely source of a dry-weather flow, from the residential flow-type chart.

    Detergents above :data:`DETERGENTS_MG_L` mean sewage or wash water; then an
    ammonia/potassium ratio above :data:`AMMONIA_POTASSIUM_RATIO` means sewage, else
    wash water.  Without detergents, fluoride above :data:`FLUORIDE_MG_L` means tap
    water, else natural water.  ``None`` (or NaN) means "not measured": the answer
    then stops at the last branch the measurements reach.

    The thresholds are the ones docs/rules.md section 5 gives from the CWP IDDE manual (2004);
    they are to be verified against the manual before a decision rests on them.

    Returns
    -------
    (str, str)
        ``(flow_type, reason)``; ``flow_type`` is one of :data:`FLOW_TYPES`.

    Raises
    ------
    UsageError
        A negative or non-numeric concentration.
    """
    det = _measure("detergents_mg_l", detergents_mg_l)
    nh3 = _measure("ammonia_mg_l", ammonia_mg_l)
    k = _measure("potassium_mg_l", potassium_mg_l)
    fl = _measure("fluoride_mg_l", fluoride_mg_l)
    if det is None:
        return (
            "undetermined",
            f"Detergents were not measured; the {_CHART} starts with detergents "
            f"(> {DETERGENTS_MG_L} mg/L = sewage or wash water).",
        )
    if det > DETERGENTS_MG_L:
        head = f"Detergents {det:g} mg/L > {DETERGENTS_MG_L} mg/L: sewage or wash water"
        if nh3 is None or k is None:
            return (
                "sewage_or_wash_water",
                f"{head}; ammonia and potassium are both needed to tell them apart "
                f"(ammonia/potassium > {AMMONIA_POTASSIUM_RATIO:g} = sewage) ({_CHART}).",
            )
        ratio = "infinite" if k == 0 and nh3 > 0 else f"{(nh3 / k if k else 0.0):.2f}"
        if nh3 > AMMONIA_POTASSIUM_RATIO * k:
            return (
                "sewage",
                f"{head}; ammonia/potassium = {nh3:g}/{k:g} = {ratio} > "
                f"{AMMONIA_POTASSIUM_RATIO:g}: sewage ({_CHART}).",
            )
        return (
            "wash_water",
            f"{head}; ammonia/potassium = {nh3:g}/{k:g} = {ratio} <= "
            f"{AMMONIA_POTASSIUM_RATIO:g}: wash water ({_CHART}).",
        )
    head = f"Detergents {det:g} mg/L <= {DETERGENTS_MG_L} mg/L: no detergents"
    if fl is None:
        return (
            "tap_or_natural_water",
            f"{head}; fluoride was not measured (> {FLUORIDE_MG_L} mg/L = tap water) ({_CHART}).",
        )
    if fl > FLUORIDE_MG_L:
        return (
            "tap_water",
            f"{head}; fluoride {fl:g} mg/L > {FLUORIDE_MG_L} mg/L: tap water ({_CHART}).",
        )
    return (
        "natural_water",
        f"{head}; fluoride {fl:g} mg/L <= {FLUORIDE_MG_L} mg/L: natural water ({_CHART}).",
    )


def flow_type_of(tests: Mapping[str, Any]) -> tuple[str, str]:
    """:func:`flow_type` on the field tests of an inspection or a track-down sample.

    Reads ``detergents``, ``ammonia``, ``potassium`` and ``fluoride`` in mg/L (the
    field names of :mod:`ms4map.records`; ``<name>_mg_l`` works too) from a mapping
    or a row (``pandas.Series``); a missing key, ``None`` or NaN is "not measured".

    Examples
    --------
    >>> flow_type_of({"detergents": 0.1, "fluoride": 0.6})[0]
    'tap_water'
    """

    def get(name: str) -> Any:
        for key in (name, f"{name}_mg_l"):
            if key in tests and not is_na(tests[key]):
                return tests[key]
        return None

    return flow_type(
        detergents_mg_l=get("detergents"),
        ammonia_mg_l=get("ammonia"),
        potassium_mg_l=get("potassium"),
        fluoride_mg_l=get("fluoride"),
    )


# ======================================================================================
# Candidate sources
# ======================================================================================
#: NY RPS property-class families that make a parcel a candidate illicit-discharge source.
CANDIDATE_CLASSES = {"4": "commercial property class", "7": "industrial property class"}

#: Columns of :func:`candidate_sources`.
CANDIDATE_COLUMNS = (
    *PARCEL_INFO_COLUMNS,
    "fraction",
    "outfall_id",
    "priority",
    "method",
    "reason",
)
# priority -> method (the rule that put the parcel on the list; the most serious wins)
_CANDIDATE_METHODS = {
    1: "septic_failure",
    2: "septic_flag",
    3: "industrial_class",
    4: "commercial_class",
    5: "septic_parcel",
}


def _text(v: Any) -> str:
    return "" if v is None or is_na(v) else str(v).strip()


def _failure_text(value: Any) -> str:
    """``surface_discharge`` -> ``surface_discharge: 174-6 B, Discharges of ...``."""
    raw = _text(value)
    if not raw:
        return ""
    try:
        from ..rules.septic import FAILURE_CONDITIONS, parse_failure_codes

        codes = parse_failure_codes(raw)
    except Exception:  # noqa: BLE001 - the recorded text alone is still an answer
        return raw
    named = [
        f"condition {c}: {FAILURE_CONDITIONS[c].rstrip('.')}"
        for c in codes
        if c in FAILURE_CONDITIONS
    ]
    return f"{raw} ({'; '.join(named)})" if named else raw


def candidates_for_area(
    area: Any,
    *,
    septic: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Candidate sources among the parcels of an :class:`ms4map.analysis.outfalls.OutfallArea`.

    See :func:`candidate_sources`; this is the same ranking on an area already
    computed with :func:`ms4map.analysis.outfalls.outfall_area`.
    """
    cols = list(CANDIDATE_COLUMNS)
    p = getattr(area, "parcels", None)
    if p is None or not len(p):
        return pd.DataFrame(columns=cols)
    oid = str(getattr(area, "outfall_id", "") or "")
    flags: dict[str, tuple[int, str]] = {}
    if septic is not None and len(septic) and "parcel_id" in septic.columns:
        for r in septic.to_dict("records"):
            pid = str(r["parcel_id"])
            if is_truthy(r.get("violation")):
                flags[pid] = (2, "septic violation flagged")
            elif is_truthy(r.get("special_condition")):
                flags[pid] = (2, "septic special condition flagged")
    rows = []
    table = p.drop(columns=p.geometry.name) if hasattr(p, "geometry") else p
    for r in table.to_dict("records"):
        pid = str(r.get("parcel_id"))
        frac = float(r.get("fraction") or 0.0)
        why: list[str] = []
        prio = 9
        fail = _failure_text(r.get("septic_failure"))
        if fail:
            why.append(f"recorded septic failure {fail}")
            prio = min(prio, 1)
        if pid in flags:
            why.append(flags[pid][1])
            prio = min(prio, flags[pid][0])
        pc = _text(r.get("prop_class"))
        if pc[:1] in CANDIDATE_CLASSES:
            why.append(f"{CANDIDATE_CLASSES[pc[:1]]} {pc}")
            prio = min(prio, 3 if pc[:1] == "7" else 4)
        if _text(r.get("sewer")) == "septic":
            why.append(
                f"on-site septic system tributary to {'outfall ' + oid if oid else 'this outfall'}"
            )
            prio = min(prio, 5)
        if not why:
            continue
        why.append(f"{frac:.0%} of the parcel drains to {oid or 'this outfall'}")
        rows.append(
            {
                "parcel_id": pid,
                "address": r.get("address"),
                "owner": r.get("owner"),
                "owner_address": r.get("owner_address"),
                "prop_class": pc or None,
                "sewer": r.get("sewer"),
                "fraction": round(frac, 3),
                "outfall_id": oid or None,
                "priority": prio,
                "method": _CANDIDATE_METHODS[prio],
                "reason": "; ".join(why),
            }
        )
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(
        ["priority", "fraction", "parcel_id"], ascending=[True, False, True], kind="stable"
    ).reset_index(drop=True)


def _workspace(result: PipelineResult, workspace: Workspace | None) -> Workspace:
    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    if ws is None:
        raise UsageError("The workspace is needed: pass workspace= (or a pipeline result).")
    return ws


def _check_outfall(result: PipelineResult, ws: Workspace, outfall_id: str) -> None:
    known: list[str] = []
    net = getattr(result, "network", None)
    if net is not None:
        known = [str(o) for o in net.outfalls.index]
    elif ws.layers.get("outfalls") is not None:
        known = ws.layers["outfalls"]["outfall_id"].astype(str).tolist()
    if known and outfall_id not in known:
        shown = shown_ids(sorted(known), 10)
        raise DataError(
            f"Outfall '{outfall_id}' is not in the outfalls layer ({len(known)} outfalls: "
            f"{shown}). Fix: check the id (ids are case-sensitive)."
        )


def candidate_sources(
    result: PipelineResult,
    outfall_id: str,
    *,
    workspace: Workspace | None = None,
    profile: str | Profile | None = "stillwater",
    septic: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Parcels draining to an outfall that could be an illicit-discharge source.

    A parcel is a candidate when it has (priority, ``method``):

    1. a recorded septic failure (``septic_failure`` column; ``septic_failure``),
    2. a septic flag from :func:`ms4map.rules.septic.flag_septic`: violation or special
       condition (``septic_flag``),
    3. an industrial property class 7xx (``industrial_class``),
    4. a commercial property class 4xx (``commercial_class``),
    5. an on-site septic system, the parcel being tributary to this outfall
       (``septic_parcel``).

    Parameters
    ----------
    result : PipelineResult
        From :func:`ms4map.pipeline.run` (drainage table and network).
    outfall_id : str
    workspace : Workspace, optional
        Defaults to ``result.workspace``.
    profile : str or Profile
        Municipality profile used to flag septic parcels when ``septic`` is not given.
    septic : DataFrame, optional
        The ``septic`` layer, when already computed (the app caches it).

    Returns
    -------
    DataFrame
        :data:`CANDIDATE_COLUMNS`: ``fraction`` is the share of the parcel draining to
        this outfall; ``priority`` 1 = look first; ``method`` the most serious rule;
        ``reason`` every rule that applied, in words.  Ordered by priority, then
        fraction (largest first), then parcel id.

    Raises
    ------
    DataError
        Unknown outfall id.
    """
    from ..analysis.outfalls import outfall_area

    ws = _workspace(result, workspace)
    oid = str(outfall_id)
    _check_outfall(result, ws, oid)
    if septic is None and result is not None:
        try:
            from ..rules.septic import flag_septic

            septic = flag_septic(result, profile=profile, workspace=ws)
        except DataError:
            septic = None  # a workspace without the layers septic flagging needs
    return candidates_for_area(outfall_area(ws, result, oid), septic=septic)


def suggest_violation(candidate: dict[str, Any] | pd.Series) -> str:
    """The violation code a notice for this candidate row most likely needs."""
    method = _text(candidate.get("method"))
    if method in ("septic_failure", "septic_flag"):
        return "failing_septic"
    return "illicit_discharge"


# ======================================================================================
# Sampling plan (bisection of the upstream network)
# ======================================================================================
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

    from ..network import trace_upstream

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
    rows = _bisection_rows(
        nodes, reach, root, entries, weight=weight, max_samples=max_samples, oid=oid
    )
    out = pd.DataFrame(rows, columns=list(PLAN_COLUMNS))
    out["after"] = out["after"].astype("Int64")
    return out


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
    geo = parcels.geometry.area.to_numpy() / 4046.8564224 * _unit_m(ws.crs) ** 2
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
) -> list[dict[str, Any]]:
    """The plan's rows, breadth first: each sample splits what is still suspect in two."""
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
    queue: list[tuple[np.ndarray, int, int | None, str | None, frozenset[int]]] = [
        (np.ones(n, dtype=bool), 1, None, None, frozenset({root}))
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


def _unit_m(crs: Any) -> float:
    from ..core.units import metres_per_unit

    return metres_per_unit(crs, default=1.0)


# ======================================================================================
# Notice of violation
# ======================================================================================
#: Violation codes -> (label, citation rule in the profile, default remedial measures).
VIOLATIONS: dict[str, dict[str, Any]] = {
    "failing_septic": {
        "label": "Operating a failing individual sewage treatment system in an area "
        "tributary to the MS4",
        "rules": ("septic_failing",),
        "remedy": [
            "Stop the discharge: have the septic tank pumped and the system inspected by "
            "a licensed professional.",
            "Repair or replace the individual sewage treatment system in accordance with "
            "10 NYCRR Appendix 75-A, with any permit the county health department requires.",
            "Send the officer written proof of the inspection and of the repair.",
        ],
        "extra_rules": ("septic_repair",),
    },
    "illicit_connection": {
        "label": "Illicit connection to the MS4",
        "rules": ("illicit_connection",),
        "remedy": [
            "Disconnect every line that conveys sewage or other non-stormwater to the "
            "storm sewer, and connect it to the sanitary sewer or an approved on-site "
            "system.",
            "Let the officer confirm the disconnection (dye test or inspection).",
            "Clean up any material the connection released and restore the affected property.",
        ],
        "extra_rules": (),
    },
    "illicit_discharge": {
        "label": "Illicit discharge to the MS4 (a discharge that is not entirely stormwater)",
        "rules": ("illicit_discharge",),
        "remedy": [
            "Cease and desist the discharge.",
            "Abate and remediate the pollution and restore the affected property.",
            "Put in place source control or treatment practices so that the discharge "
            "does not recur, and tell the officer in writing what was done.",
        ],
        "extra_rules": (),
    },
}


@dataclass
class Notice:
    """A written notice of violation (see :func:`notice_of_violation`).

    ``to_dict()`` gives every field as JSON-ready values; ``to_html()`` a printable
    one-page letter.
    """

    parcel_id: str
    address: str
    owner: str
    owner_address: str
    violation: str
    violation_label: str
    finding: str
    drainage: list[dict[str, Any]]
    drainage_text: str
    remedial_measures: list[str]
    issued: _dt.date
    deadline: _dt.date | None
    remedy_period: str
    appeal: dict[str, Any]
    appeal_text: str
    penalties: list[dict[str, Any]]
    penalty_text: str
    citations: list[dict[str, Any]]
    officer_title: str
    municipality: str
    law: str
    profile: str
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in self.__dataclass_fields__:
            v = getattr(self, k)
            if isinstance(v, (_dt.date, _dt.datetime)):
                v = v.isoformat()
            out[k] = v
        out["document"] = "ms4map.notice_of_violation"
        out["version"] = 1
        return out

    def deadline_text(self) -> str:
        if self.deadline is None:
            return f"{self.remedy_period} (deadline: ______________________)"
        when = self.deadline.strftime("%B %d, %Y").replace(" 0", " ")
        return f"{when} ({self.remedy_period})"

    def to_html(self) -> str:
        """A printable one-page notice (US Letter, inline CSS, no external files)."""
        e = html.escape
        issued = self.issued.strftime("%B %d, %Y").replace(" 0", " ")
        measures = "".join(f"<li>{e(m)}</li>" for m in self.remedial_measures)
        cites = "".join(f"<li>{e(c['text'])}</li>" for c in self.citations)
        warn = ""
        if self.warnings:
            warn = (
                '<div class="warn"><b>Before sending (not part of the notice):</b><ul>'
                + "".join(f"<li>{e(w)}</li>" for w in self.warnings)
                + "</ul></div>"
            )
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Notice of violation - {e(self.parcel_id)}</title>
<style>
@page {{ size: letter; margin: 0.6in; }}
body {{ font-family: Georgia, 'Times New Roman', serif; font-size: 10pt; line-height: 1.3;
       max-width: 7.3in; margin: 0 auto; color: #000; }}
h1 {{ font-size: 14pt; text-align: center; margin: 0 0 2pt 0; }}
h2 {{ font-size: 10.5pt; margin: 8pt 0 2pt 0; }}
p, ul {{ margin: 2pt 0; }}
ul {{ padding-left: 16pt; }}
.head {{ text-align: center; margin-bottom: 6pt; }}
.cols {{ display: flex; justify-content: space-between; }}
.cite {{ font-size: 8.5pt; }}
.sig {{ margin-top: 14pt; }}
.warn {{ border: 1px dashed #a00; padding: 4pt; font-size: 8.5pt; color: #a00; }}
@media print {{ .warn {{ display: none; }} }}
</style></head><body>
{warn}
<div class="head"><b>{e(self.municipality)}</b><br>{e(self.law)}</div>
<h1>NOTICE OF VIOLATION</h1>
<div class="cols"><div><b>To:</b> {e(self.owner)}<br>{e(self.owner_address)}</div>
<div><b>Date issued:</b> {e(issued)}</div></div>
<h2>Property</h2>
<p>Parcel {e(self.parcel_id)}, {e(self.address)}</p>
<h2>Nature of the violation</h2>
<p>{e(self.violation_label)}. {e(self.finding)}</p>
<h2>Drainage path</h2>
<p>{e(self.drainage_text)}</p>
<h2>Required remedial measures and schedule</h2>
<ul>{measures}</ul>
<p><b>Complete by:</b> {e(self.deadline_text())}. Should the work not be done by then, it
may be done by the municipality or its contractor at your expense.</p>
<h2>Appeal</h2>
<p>{e(self.appeal_text)}</p>
<h2>Penalties</h2>
<p>{e(self.penalty_text)}</p>
<h2>Authority</h2>
<ul class="cite">{cites}</ul>
<div class="sig">
<p>______________________________________</p>
<p>{e(self.officer_title)}, {e(self.municipality)}</p>
<p>Name: ______________________ &nbsp; Telephone: ________________ &nbsp; Date: {e(issued)}</p>
</div>
</body></html>
"""


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _appeal_text(prof: Profile, issued: _dt.date) -> tuple[dict[str, Any], str]:
    enf = prof.enforcement
    keys = (
        "appeal_days",
        "appeal_body",
        "appeal_hearing_days",
        "decision_filed_days",
        "corrective_business_days",
    )
    appeal = {k: enf.get(k) for k in keys}
    days, body = enf.get("appeal_days"), enf.get("appeal_body")
    if not _num(days):
        return appeal, (
            f"The {prof.law} states no appeal period for this notice "
            f"(profile setting appeal_days: {days!r}). Ask the {prof.officer_title} how "
            "to contest it."
        )
    parts = [
        f"You may appeal this determination of the {prof.officer_title} to the "
        f"{body if isinstance(body, str) and 'not stated' not in body else 'municipality'} "
        f"within {int(days)} days of its issuance, that is by "
        f"{_long_date(last_day(issued + _dt.timedelta(days=int(days))))}."
    ]
    if _num(enf.get("appeal_hearing_days")):
        parts.append(
            f"The appeal is heard within {int(enf['appeal_hearing_days'])} days of its filing"
            + (
                f", and the decision is filed within {int(enf['decision_filed_days'])} days "
                "of being made."
                if _num(enf.get("decision_filed_days"))
                else "."
            )
        )
    if _num(enf.get("corrective_business_days")):
        parts.append(
            "If the appeal upholds this notice, the violation must be corrected within "
            f"{int(enf['corrective_business_days'])} business days of that decision."
        )
    return appeal, " ".join(parts)


def _penalty_text(prof: Profile) -> tuple[list[dict[str, Any]], str]:
    enf = prof.enforcement
    pens = [dict(p) for p in enf.get("penalties", [])]
    ords = {1: "First offence", 2: "Second offence", 3: "Third or later offence"}
    bits = []
    for p in sorted(pens, key=lambda p: int(p.get("offence", 0))):
        lo, hi = p.get("min_usd", 0) or 0, p.get("max_usd")
        money = f"a fine of ${lo:,.0f} to ${hi:,.0f}" if lo else f"a fine of up to ${hi:,.0f}"
        bits.append(
            f"{ords.get(int(p.get('offence', 0)), 'Offence ' + str(p.get('offence')))}: {money}"
        )
    text = "; ".join(bits) + "."
    imp = enf.get("imprisonment")
    if isinstance(imp, str) and imp and "not stated" not in imp:
        text += f" Each offence may instead or also be punished by imprisonment of up to {imp}."
    per = enf.get("penalty_period")
    if isinstance(per, str) and per:
        text += f" Each {per}'s continued violation is a separate additional violation."
    return pens, text


def _drainage_path(
    result: PipelineResult | None, pid: str
) -> tuple[list[dict[str, Any]], str, list[str]]:
    d = getattr(result, "drainage", None) if result is not None else None
    if d is None:
        return (
            [],
            "Not determined: the drainage analysis was not run.",
            ["No drainage path: pass result= (ms4map.pipeline.run) to state it."],
        )
    rows = d[d["parcel_id"].astype(str) == pid]
    recs: list[dict[str, Any]] = []
    texts: list[str] = []
    for r in rows.sort_values("fraction", ascending=False).to_dict("records"):
        rec = {k: (None if is_na(r.get(k)) else r.get(k)) for k in PATH_COLUMNS}
        recs.append(rec)
        share = f"{float(rec['fraction'] or 0):.0%} of the property's runoff"
        water = _text(rec["receiving_water"])
        pwl = _text(rec["pwl_id"])
        wtxt = f"{water} (NYSDEC PWL {pwl})" if pwl else (water or "an unnamed water")
        kind = rec["target_kind"]
        if kind in ("inlet", "conveyance") and rec["outfall_id"]:
            via = "storm inlet" if kind == "inlet" else "MS4 conveyance"
            texts.append(
                f"{share} enters {via} {rec['target_id']}, then the municipal separate storm "
                f"sewer system (MS4) to outfall {rec['outfall_id']}, which discharges to {wtxt}"
            )
        elif kind in ("inlet", "conveyance"):
            texts.append(f"{share} enters the MS4 at {rec['target_id']} (outfall not traced)")
        elif kind == "water_direct":
            texts.append(f"{share} runs directly to {wtxt}, outside the MS4")
        elif kind == "depression":
            texts.append(f"{share} collects in a closed depression (internally drained)")
        else:
            texts.append(f"{share}: drainage not determined ({kind})")
    warns = []
    if not recs:
        warns.append("The drainage table has no row for this parcel.")
        return recs, "Not determined: the parcel has no row in the drainage table.", warns
    if not any(r["target_kind"] in ("inlet", "conveyance") for r in recs):
        warns.append(
            "None of this parcel's runoff reaches the MS4 in the drainage analysis: check "
            "that the law applies (areas tributary to the MS4) before sending."
        )
    return recs, "; ".join(texts) + ".", warns


def notice_of_violation(
    parcel_id: str,
    *,
    violation: str,
    result: PipelineResult | None = None,
    workspace: Workspace,
    profile: str | Profile | None = "stillwater",
    remedy: list[str] | str | None = None,
    issued: _dt.date | str | None = None,
    deadline: _dt.date | str | None = None,
    finding: str | None = None,
) -> Notice:
    """Draft a written notice of violation to a parcel's landowner.

    The notice names the landowner and mailing address, the property, the nature of
    the violation (for ``failing_septic`` the recorded failure condition), the
    drainage path to the MS4 outfall and receiving water (from ``result.drainage``),
    the remedial measures and the deadline, appeal rights and the penalty schedule,
    all from the municipality profile, with its citations (law name, section only
    where the text prints one, quote), the officer's title and a signature block.

    Parameters
    ----------
    parcel_id : str
    violation : {"failing_septic", "illicit_connection", "illicit_discharge"}
    result : PipelineResult, optional
        For the drainage path (without it the notice says the path was not determined).
    workspace : Workspace
        Parcels with ``owner``, ``owner_address``, ``address``, ``septic_failure``.
    profile : str or Profile
        Municipality profile (officer, periods, penalties, citations).
    remedy : list of str or str, optional
        Remedial measures; default: those of :data:`VIOLATIONS` for the code.
    issued : date or ISO string, optional
        Date of issue; default today.
    deadline : date or ISO string, optional
        Deadline for the remedy.  Default: ``issued`` plus the profile's remedy
        period when it is given in hours or days (Kingsbury: 48 hours), else left
        blank for the officer to fill in (Stillwater: "the deadline set in the notice
        of violation").
    finding : str, optional
        What the officer found (added to the nature of the violation).

    Returns
    -------
    Notice

    Raises
    ------
    UsageError
        Unknown violation code or malformed date.
    DataError
        Parcel id not in the parcels layer, or no parcels layer; a ``deadline`` before
        ``issued`` (as the records refuse a ``remedy_deadline`` before the notice).
    """
    if violation not in VIOLATIONS:
        raise UsageError(f"Unknown violation {violation!r}: select from {list(VIOLATIONS)}.")
    prof = load_profile(profile)
    pid, rec = _notice_parcel(workspace, result, str(parcel_id))
    warnings: list[str] = []
    owner, owner_address, address = _owner_and_address(rec, warnings)
    issued_d = _as_date(issued, "issued") or _dt.date.today()
    spec = VIOLATIONS[violation]
    nature = _nature_of_violation(violation, rec, finding, warnings)
    drainage, drainage_text, dwarn = _drainage_path(result, pid)
    warnings += dwarn
    measures = [remedy] if isinstance(remedy, str) else list(remedy or spec["remedy"])
    dl, remedy_period = _remedy_deadline(prof, issued_d, deadline, warnings)
    appeal, appeal_text = _appeal_text(prof, issued_d)
    penalties, penalty_text = _penalty_text(prof)
    return Notice(
        parcel_id=pid,
        address=address,
        owner=owner,
        owner_address=owner_address,
        violation=violation,
        violation_label=spec["label"],
        finding=nature,
        drainage=drainage,
        drainage_text=drainage_text,
        remedial_measures=measures,
        issued=issued_d,
        deadline=dl,
        remedy_period=remedy_period,
        appeal=appeal,
        appeal_text=appeal_text,
        penalties=penalties,
        penalty_text=penalty_text,
        citations=_notice_citations(prof, spec, warnings),
        officer_title=prof.officer_title,
        municipality=prof.municipality,
        law=prof.law,
        profile=prof.name,
        warnings=warnings,
    )


def _notice_parcel(
    workspace: Workspace | None, result: PipelineResult | None, pid: str
) -> tuple[str, pd.Series]:
    """The parcel's row in the parcels layer (of ``workspace``, else of the result's)."""
    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    parcels = None if ws is None else ws.layers.get("parcels")
    if parcels is None:
        raise DataError("A notice needs the parcels layer (owner and address): pass workspace=.")
    hit = parcels[parcels["parcel_id"].astype(str) == pid]
    if not len(hit):
        sample = ", ".join(parcels["parcel_id"].astype(str).head(3))
        raise DataError(
            f"Parcel '{pid}' is not in the parcels layer ({len(parcels)} parcels, e.g. "
            f"{sample}). Fix: check the parcel_id (ids are case-sensitive)."
        )
    return pid, hit.iloc[0]


def _owner_and_address(rec: pd.Series, warnings: list[str]) -> tuple[str, str, str]:
    """Owner, owner's mailing address (a blank line to fill in, with a warning, when
    missing) and the property's street address."""

    def need(col: str, what: str) -> str:
        v = _text(rec.get(col))
        if not v:
            warnings.append(f"The parcel has no {what} (column '{col}'): fill it in by hand.")
            return "______________________"
        return v

    owner = need("owner", "owner name")
    owner_address = need("owner_address", "owner mailing address")
    address = _text(rec.get("address")) or "(no street address recorded)"
    return owner, owner_address, address


def _nature_of_violation(
    violation: str, rec: pd.Series, finding: str | None, warnings: list[str]
) -> str:
    """What was found: the recorded septic failure (for ``failing_septic``) and the
    officer's ``finding``."""
    bits: list[str] = []
    if violation == "failing_septic":
        fail = _failure_text(rec.get("septic_failure"))
        if fail:
            bits.append(f"Recorded failure condition: {fail}.")
        elif not finding:
            warnings.append(
                "No failure condition is recorded for this parcel (column 'septic_failure'): "
                "state what was found (finding=)."
            )
        if _text(rec.get("sewer")) and _text(rec.get("sewer")) != "septic":
            warnings.append(f"The parcels layer says sewer = '{_text(rec.get('sewer'))}'.")
    if finding:
        bits.append(finding.strip())
    return " ".join(bits)


def _remedy_deadline(
    prof: Profile, issued: _dt.date, deadline: Any, warnings: list[str]
) -> tuple[_dt.date | None, str]:
    """The deadline (given, else ``issued`` plus the profile's remedy period when it is in
    hours or days, moved past a Saturday, Sunday or public holiday as General
    Construction Law section 25-a allows: the date the case records keep too) and the
    profile's remedy period as written."""
    enf = prof.enforcement
    # else the profile's own period, from service, which the officer dates
    given = _as_date(deadline, "deadline")
    if given is not None and given < issued:
        raise DataError(
            f"deadline = {given.isoformat()} is before the notice's issue date "
            f"({issued.isoformat()}): the owner could never meet it. Fix: give a deadline on "
            "or after the issue date (or leave deadline out for the profile's remedy period)."
        )
    dl = given or remedy_deadline(prof, issued)
    remedy_period = str(enf.get("remedy_period", ""))
    if dl is None:
        warnings.append(
            f"The profile's remedy period is '{remedy_period}': set the deadline (deadline=)."
        )
    return dl, remedy_period


def _notice_citations(
    prof: Profile, spec: dict[str, Any], warnings: list[str]
) -> list[dict[str, Any]]:
    """The citations of the violation's rules, then of the notice, remedy period, appeal
    and penalty provisions (each with its text)."""
    rules = list(spec["rules"])
    found = [c for r in rules for c in prof.cite(r)]
    if not found:
        warnings.append(
            f"The profile '{prof.name}' has no citation for rule(s) {rules}: the notice "
            "cites only the notice-of-violation provision."
        )
    for law in dict.fromkeys(str(c.law) for c in found if _borrowed(prof, str(c.law))):
        warnings.append(
            f"The notice cites {law} for the violation: not {prof.municipality}'s own law. "
            f"Check {prof.municipality}'s own section (and its profile's citations) before "
            "serving it."
        )
    cites: list[dict[str, Any]] = []
    notice_rules = ["notice_of_violation", "remedy_period", "appeal", "penalties"]
    for rule in rules + list(spec["extra_rules"]) + notice_rules:
        for c in prof.cite(rule):
            d = c.to_dict()
            d["text"] = c.text()
            cites.append(d)
    return cites


def _borrowed(prof: Profile, law: str) -> bool:
    """Whether a citation's ``law`` is another municipality's (a profile may borrow model
    wording where the town's own text is not at hand): its name is not in the law's."""
    name = re.sub(r"^(town|village|city|county) of\s+", "", prof.municipality.strip(), flags=re.I)
    return bool(name) and name.lower() not in law.lower()


def _long_date(d: _dt.date) -> str:
    """``Monday, June 23, 2025``: a date as a letter writes it."""
    return f"{d.strftime('%A, %B')} {d.day}, {d.year}"


def _as_date(value: Any, name: str) -> _dt.date | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value))
    except ValueError:
        raise UsageError(f"{name} = {value!r}: give a date as YYYY-MM-DD.") from None
