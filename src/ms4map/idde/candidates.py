"""Candidate sources: the parcels upstream of an outfall that could be an illicit-discharge source.

:func:`candidate_sources` ranks the parcels draining to an outfall (a recorded septic
failure, a septic flag of :mod:`ms4map.rules.septic`, an industrial or commercial
property class, an on-site septic system); :func:`candidates_for_area` does the same on
an outfall area already computed; :func:`suggest_violation` names the violation a
notice to a candidate most likely needs (:mod:`.notice`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis import outfall_area
from ..core.errors import DataError
from ..core.nulls import is_truthy
from ..core.schema import PARCEL_INFO_COLUMNS
from ..rules.profiles import Profile
from ..rules.septic import flag_septic
from ._shared import _check_outfall, _failure_text, _text, _workspace

if TYPE_CHECKING:
    from ..io import Workspace
    from ..pipeline import PipelineResult

__all__ = [
    "CANDIDATE_CLASSES",
    "CANDIDATE_COLUMNS",
    "candidate_sources",
    "candidates_for_area",
    "suggest_violation",
]

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
        maybe = _text(r.get("may_drain"))  # an ambiguous path: this outfall a candidate
        if _text(r.get("sewer")) == "septic":
            why.append(
                f"on-site septic system {'that may be ' if maybe else ''}tributary to "
                f"{'outfall ' + oid if oid else 'this outfall'}"
            )
            prio = min(prio, 5)
        if not why:
            continue
        why.append(
            f"{frac:.0%} of the parcel "
            + (
                f"may drain to {oid or 'this outfall'} (the network cannot tell whether it "
                f"reaches {maybe})"
                if maybe
                else f"drains to {oid or 'this outfall'}"
            )
        )
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
    ws = _workspace(result, workspace)
    oid = str(outfall_id)
    _check_outfall(result, ws, oid)
    if septic is None and result is not None:
        try:
            septic = flag_septic(result, profile=profile, workspace=ws)
        except DataError:
            septic = None  # a workspace without the layers septic flagging needs
    if getattr(result, "workspace", None) is not ws:  # the workspace given is the one read
        result = dataclasses.replace(result, workspace=ws)
    return candidates_for_area(outfall_area(result, oid), septic=septic)


def suggest_violation(candidate: dict[str, Any] | pd.Series) -> str:
    """The violation code a notice for this candidate row most likely needs."""
    method = _text(candidate.get("method"))
    if method in ("septic_failure", "septic_flag"):
        return "failing_septic"
    return "illicit_discharge"
