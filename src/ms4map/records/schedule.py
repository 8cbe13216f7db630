"""Outfall priority and the five-year screening schedule, from the upstream traces and the records.

Each outfall's priority is a weighted sum of what its upstream trace and its records
hold (:data:`COMPONENTS`; the weights are the profile's ``[records.priority]``, shown
beside each component).  The schedule screens every outfall at least once in the
years planned, in **one documented order**: outfalls never screened first, then
priority from high to low, then the oldest last screening first (then the outfall id);
further visits, when the crew has time left, follow the same order again.  A crew too
small for the inventory is reported: the outfalls it cannot reach are rows of the
schedule without a year, flagged, never dropped.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..core.errors import UsageError
from ..core.nulls import is_blank

__all__ = [
    "COMPONENTS",
    "DEFAULT_WEIGHTS",
    "priority_scores",
    "priority_weights",
    "screening_schedule",
    "upstream_counts",
]

#: Priority components: key -> words (per unit).
COMPONENTS = {
    "septic_parcels": "septic parcels tributary",
    "illicit_class_parcels": "parcels of classes associated with illicit discharges",
    "flowing_findings": "past dry-weather flow findings",
    "suspect_findings": "past suspect or obvious findings",
    "cases": "open or past cases",
    "complaints": "complaints",
    "impaired_water": "receiving water on the 303(d) list or in a TMDL watershed",
}
#: Weights when the profile sets none (each component's points per unit).
DEFAULT_WEIGHTS = {
    "septic_parcels": 1.0,
    "illicit_class_parcels": 1.0,
    "flowing_findings": 2.0,
    "suspect_findings": 4.0,
    "cases": 3.0,
    "complaints": 3.0,
    "impaired_water": 5.0,
}
#: Property classes associated with illicit discharges (4xx commercial, 7xx industrial).
DEFAULT_CLASSES = ("4*", "7*")


def priority_weights(raw: Mapping[str, Any] | None) -> tuple[dict[str, float], tuple[str, ...]]:
    """The weights and the illicit-discharge property classes of a profile's
    ``[records.priority]`` (``weights = {...}``, ``illicit_classes = [...]``)."""
    pr = dict(((raw or {}).get("priority")) or {})
    weights = dict(DEFAULT_WEIGHTS)
    for k, v in dict(pr.get("weights") or {}).items():
        if k not in COMPONENTS:
            raise UsageError(
                f"[records.priority] weights: {k!r} is not a component; select from "
                f"{list(COMPONENTS)}."
            )
        try:
            weights[k] = float(v)
            if weights[k] < 0 or not math.isfinite(weights[k]):
                raise ValueError
        except (TypeError, ValueError):
            raise UsageError(
                f"[records.priority] weights.{k} = {v!r}: give a number >= 0."
            ) from None
    classes = tuple(str(c) for c in pr.get("illicit_classes", DEFAULT_CLASSES))
    return weights, classes


def upstream_counts(
    drainage: pd.DataFrame, parcels: pd.DataFrame | None, *, classes: tuple[str, ...]
) -> pd.DataFrame:
    """``outfall_id, septic_parcels, illicit_class_parcels``: parcels tributary to each
    outfall (the pipeline's drainage table) whose ``sewer`` is septic, or whose
    ``prop_class`` matches ``classes``."""
    cols = ["outfall_id", "septic_parcels", "illicit_class_parcels"]
    if drainage is None or not len(drainage) or parcels is None or not len(parcels):
        return pd.DataFrame(columns=cols)
    d = drainage[drainage["outfall_id"].notna()][["outfall_id", "parcel_id"]].astype(str)
    p = pd.DataFrame({"parcel_id": parcels["parcel_id"].astype(str)})
    sewer = parcels["sewer"] if "sewer" in parcels else pd.Series("", index=parcels.index)
    p["septic"] = sewer.astype(str).str.strip().str.lower().eq("septic").to_numpy()
    pc = parcels["prop_class"] if "prop_class" in parcels else pd.Series("", index=parcels.index)
    p["illicit"] = [
        not is_blank(v) and any(fnmatch.fnmatch(str(v).strip(), c) for c in classes) for v in pc
    ]
    j = d.drop_duplicates().merge(p.drop_duplicates("parcel_id"), on="parcel_id", how="left")
    g = j.groupby("outfall_id")
    out = pd.DataFrame(
        {
            "septic_parcels": g["septic"].sum().astype(int),
            "illicit_class_parcels": g["illicit"].sum().astype(int),
        }
    ).reset_index()
    return out[cols]


def priority_scores(
    outfalls: pd.DataFrame,
    inspections: pd.DataFrame,
    cases: pd.DataFrame,
    *,
    upstream: pd.DataFrame | None,
    impaired: set[str],
    weights: Mapping[str, float],
) -> pd.DataFrame:
    """One row per outfall: every component's value, ``priority`` (the weighted sum),
    ``why`` (the components that count, each with its weight), ``last_screened``.

    Parameters
    ----------
    upstream : DataFrame or None
        :func:`upstream_counts` (``None``: the upstream components count 0 and ``why``
        says they are not known).
    impaired : set of str
        Outfalls whose receiving water is impaired or in a TMDL watershed.
    """
    ins = inspections.to_dict("records") if len(inspections) else []
    cs = cases.to_dict("records") if len(cases) else []
    up = (
        upstream.set_index(upstream["outfall_id"].astype(str)).to_dict("index")
        if upstream is not None and len(upstream)
        else {}
    )
    rows = []
    for oid in outfalls["outfall_id"].astype(str):
        mine = [r for r in ins if str(r["outfall_id"]) == oid]
        flow = sum(
            1 for r in mine if not is_blank(r.get("flow_present")) and bool(r["flow_present"])
        )
        susp = sum(1 for r in mine if r.get("characterization") in ("suspect", "obvious"))
        mcs = [c for c in cs if str(c["outfall_id"]) == oid]
        u = up.get(oid, {})
        v = {
            "septic_parcels": int(u.get("septic_parcels", 0) or 0),
            "illicit_class_parcels": int(u.get("illicit_class_parcels", 0) or 0),
            "flowing_findings": flow,
            "suspect_findings": susp,
            "cases": len(mcs),
            "complaints": sum(1 for c in mcs if c.get("origin") == "complaint"),
            "impaired_water": int(oid in impaired),
        }
        score = sum(weights[k] * v[k] for k in COMPONENTS)
        why = [f"{COMPONENTS[k]} {v[k]} x {weights[k]:g}" for k in COMPONENTS if v[k]]
        if upstream is None:
            why.append("upstream trace not known (no network result)")
        dates = [str(r["date"]) for r in mine if not is_blank(r.get("date"))]
        rows.append(
            {
                "outfall_id": oid,
                **v,
                "priority": round(float(score), 3),
                "why": "; ".join(why) or "nothing found upstream or in the records",
                "last_screened": max(dates) if dates else None,
            }
        )
    return pd.DataFrame(rows)


def _order(scores: pd.DataFrame) -> list[str]:
    """Never screened first, then priority high to low, then the oldest last screening,
    then the outfall id."""
    keyed = [
        (
            0 if is_blank(r["last_screened"]) else 1,
            -float(r["priority"]),
            "" if is_blank(r["last_screened"]) else str(r["last_screened"]),
            str(r["outfall_id"]),
        )
        for r in scores.to_dict("records")
    ]
    return [k[3] for k in sorted(keyed)]


def screening_schedule(
    scores: pd.DataFrame, *, start: int, years: int = 5, per_year: int
) -> tuple[pd.DataFrame, list[str]]:
    """The screening calendar: one row per outfall visit.

    Returns
    -------
    (DataFrame, list of str)
        ``order, outfall_id, year, visit, priority, last_screened, why`` (``year`` empty
        and ``why`` starting ``NOT COVERED`` for an outfall the crew cannot reach in the
        years planned), and the warnings (the crew too small, visits capped).
    """
    if int(years) < 1 or int(per_year) < 1:
        raise UsageError(
            f"--years {years} --per-year {per_year}: give at least one year and one visit a year."
        )
    order = _order(scores)
    n = len(order)
    by = scores.set_index(scores["outfall_id"].astype(str)).to_dict("index")
    warnings: list[str] = []
    slots = min(int(per_year), n)
    if int(per_year) > n:
        warnings.append(
            f"{per_year} visits a year for {n} outfalls: each outfall at most once a year, "
            f"so {n} visits a year are planned."
        )
    rows: list[dict[str, Any]] = []
    visits: dict[str, int] = {}
    k = 0
    for y in range(int(start), int(start) + int(years)):
        for _ in range(slots):
            oid = order[k % n]
            k += 1
            visits[oid] = visits.get(oid, 0) + 1
            r = by[oid]
            rows.append(
                {
                    "order": len(rows) + 1,
                    "outfall_id": oid,
                    "year": y,
                    "visit": visits[oid],
                    "priority": r["priority"],
                    "last_screened": r["last_screened"],
                    "why": ("never screened; " if is_blank(r["last_screened"]) else "")
                    + str(r["why"]),
                }
            )
    left = [o for o in order if o not in visits]
    if left:
        need = math.ceil(n / int(years))
        warnings.append(
            f"The crew cannot screen every outfall: {per_year} visits a year for {years} "
            f"year(s) reach {len(visits)} of {n} outfalls; {len(left)} are not covered "
            f"(listed without a year). Fix: --per-year {need} or more."
        )
        for oid in left:
            r = by[oid]
            rows.append(
                {
                    "order": len(rows) + 1,
                    "outfall_id": oid,
                    "year": None,
                    "visit": 0,
                    "priority": r["priority"],
                    "last_screened": r["last_screened"],
                    "why": f"NOT COVERED: crew too small ({per_year} a year); {r['why']}",
                }
            )
    out = pd.DataFrame(
        rows, columns=["order", "outfall_id", "year", "visit", "priority", "last_screened", "why"]
    )
    out["year"] = out["year"].astype("Int64")
    return out, warnings
