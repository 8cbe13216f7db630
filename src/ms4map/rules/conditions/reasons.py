"""The Condition A reasons an officer can put in a letter, for one site and for the batch.

One site gets long reasons (:func:`condition_a_physics`: every water reached, each
listing and why it counts or not, what is unknown and how to fix it); a parcel of the
batch gets one short reason (:func:`_batch_row_reasons`, :func:`_batch_reasons`).  Both
write from the same facts and the same decision (:mod:`.condition_a`), but their texts
differ (the screening table's ``reason`` column is one line per parcel), so they are two
writers; the batch-equals-single-site test checks that they agree on the answer.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ...core.nulls import is_blank
from ...core.qa import shown_ids
from ..profiles import Profile
from ..waters import (
    SKIPPED_ROWS_FIX,
    Waters,
    missing_layer_reason,
    missing_layer_short,
)
from .condition_a import (
    AMBIGUOUS_FIX,
    _counting_pollutants,
    _counts,
    _listing_counts,
    _tmdl_counts,
    site_condition_a,
)
from .summary import _EPS, _as_rows


def _reading_text(profile: Profile) -> str:
    if profile.pollutant_reading == "law":
        return (
            "the law's definition: sediment plus every pollutant identified as a cause of "
            "impairment of the receiving water (any 303(d) listing counts)"
        )
    text = "the profile's narrowed list: " + ", ".join(profile.pollutants_of_concern)
    if getattr(profile, "include_sediment", True):
        text += " (sediment always counts: the law's definition starts with it)"
    return text


def tmdl_watershed_label(name: Any) -> str:
    """``"Round Lake phosphorus"`` -> ``"Round Lake phosphorus TMDL watershed"``; a name
    that already says TMDL is not doubled (``"Tamarack Lake Phosphorus TMDL watershed"``).
    """
    text = "" if is_blank(name) else str(name).strip()
    low = text.lower()
    if "watershed" in low:
        return text
    return f"{text} watershed" if re.search(r"\btmdl\b", low) else f"{text} TMDL watershed"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.01 or x == 0 else f"{100 * x:.1f}%"


def condition_a_physics(
    rows: pd.DataFrame,
    *,
    waters: Waters,
    profile: Profile,
    tmdl_hits: pd.DataFrame | None = None,
    reach_hits: dict[str, set[str]] | None = None,
) -> dict[str, Any]:
    """Whether runoff from the site discharges a pollutant of concern to a 303(d) water or a
    TMDL watershed with stormwater identified as a source.

    The same engine as the batch (:func:`ms4map.rules.conditions.screening.screen_condition_a`):
    :func:`ms4map.rules.conditions.condition_a.site_condition_a` turns the drainage rows
    into facts and decides the value and method (``ConditionAFacts``); this function
    adds the waters' listings, the TMDL watersheds and the reasons an officer can put in a
    letter.

    Parameters
    ----------
    rows : DataFrame
        The site's drainage rows.
    waters : Waters
    profile : Profile
    tmdl_hits : DataFrame, optional
        TMDL watersheds the site reaches (rows of ``waters.tmdl_watersheds`` plus a
        ``how`` column); computed by :func:`evaluate_site` from the site polygon and
        its outfall and direct-to-water points.
    reach_hits : dict, optional
        ``receiving wb_id -> listed wb_ids within tributary_reach_km`` (profile setting).

    Returns
    -------
    dict
        ``value`` (True/False/None), ``reasons``, ``impaired_waters``,
        ``tmdl_watersheds``, ``method``, ``unknown_fraction``.
    """
    rows = _as_rows(rows)
    a = site_condition_a(
        rows, waters=waters, profile=profile, tmdl_hits=tmdl_hits, reach_hits=reach_hits
    )
    value, method, fr, facts = a.value, a.method, a.fractions, a.facts
    incomplete, missing, by_wb = a.incomplete, a.missing, a.waters_reached
    unresolved_outfalls, id_problems = a.unresolved_outfalls, a.id_problems
    impaired, listed_reasons = _listing_entries(by_wb, waters, profile, reach_hits)
    if tmdl_hits is not None and "candidate" in tmdl_hits.columns:  # only via a candidate
        tmdl_hits = tmdl_hits[~tmdl_hits["candidate"].fillna(False).astype(bool)]
    tmdl_out, tmdl_reasons = _tmdl_entries(tmdl_hits, profile)
    reasons = listed_reasons + tmdl_reasons
    if method in ("listed_water", "tmdl_watershed"):
        if fr["unknown_fraction"] > _EPS:
            reasons.append(
                f"({_pct(fr['unknown_fraction'])} of the site drains somewhere unknown; the "
                "known part already decides Condition A.)"
            )
        if incomplete:
            reasons.append(f"(The site's {incomplete}; the known part already decides it.)")
    elif method == "bad_drainage_rows":
        reasons.append(
            f"The site's {incomplete}: Condition A is undetermined, since the known part "
            "does not trigger it and the rest of the site's drainage is not known."
        )
    elif method == "no_drainage":
        reasons.append(
            "No drainage is known for the site (no rows in the drainage table): "
            "Condition A cannot be decided."
        )
    elif method == "unknown_drainage":
        reasons.append(_unknown_drainage_reason(rows, fr, unresolved_outfalls, id_problems))
    elif method == "ambiguous_outfall":
        reasons.append(_ambiguous_reason(fr, a.ambiguous))
    elif method == "tmdl_unknown":
        pass  # the TMDL's own reason says what is not recorded
    elif method == "tmdl_missing":
        gaps = list(dict.fromkeys(facts["tmdl_gap"].dropna()))
        reasons.append(
            f"{_pct(fr['tmdl_gap_fraction'])} of the site drains to {'; '.join(gaps)}, but "
            f"{_TMDL_GAP_FIX}: Condition A is undetermined."
        )
    elif method == "listing_skipped":
        skipped = list(dict.fromkeys(facts["listing_skipped"].dropna()))
        reasons.append(
            f"{_pct(fr['skipped_fraction'])} of the site drains to a water with rows of the "
            f"303(d) CSV that could not be read and were skipped ({'; '.join(skipped)}), so "
            f"whether it is listed is not known: Condition A is undetermined; "
            f"{SKIPPED_ROWS_FIX}."
        )
    else:
        reasons += _not_reached_reasons(method, fr, by_wb, impaired, waters)
    if a.ambiguous and method != "ambiguous_outfall":
        reasons.append(
            "(Ambiguous network path: "
            + "; ".join(a.ambiguous)
            + "."
            + ("" if value is None else " The answer above holds for every candidate outfall.")
            + ")"
        )
    reasons = _missing_layer_reasons(
        value, method, reasons, missing=missing, by_wb=by_wb, waters=waters
    )
    return {
        "value": value,
        "reasons": reasons,
        "impaired_waters": impaired,
        "tmdl_watersheds": tmdl_out,
        "method": method,
        "unknown_fraction": fr["unknown_fraction"],
    }


#: The sentence of a part reaching a category 4a water whose TMDL the layer lacks.
_TMDL_GAP_FIX = (
    "the `tmdl_watersheds` layer has no TMDL for it, so whether stormwater is a source is "
    "not known (add the TMDL's watershed, with `stormwater_source`, to the "
    "`tmdl_watersheds` layer; its `tmdl_id` the listing's action id)"
)


def _listing_why(category: str, pollutant: Any, profile: Profile) -> str:
    """Why one impairment listing counts for Condition A or not (words for the document)."""
    if category == "5" and not _counts(pollutant, profile):
        return f"{pollutant} is not a pollutant of concern under {_reading_text(profile)}"
    if category == "4a":
        return (
            "category 4a (TMDL approved): counts through its TMDL watershed, not the 303(d) branch"
        )
    if category != "5":
        return f"category {category} is not a 303(d) listing (category 5)"
    return "303(d) listing (category 5) of a pollutant of concern"


def _listing_entries(
    by_wb: dict[str, dict[str, Any]],
    waters: Waters,
    profile: Profile,
    reach_hits: dict[str, set[str]] | None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every listing of the waters reached (``impaired_waters`` of the document, each
    saying whether and why it counts) and one reason per water that triggers Condition A.
    """
    impaired: list[dict[str, Any]] = []
    reasons: list[str] = []
    for wb, entry in by_wb.items():
        targets = [(wb, "receiving water")]
        for other in sorted((reach_hits or {}).get(wb, set()) - {wb}):
            targets.append(
                (
                    other,
                    f"listed water within {profile.tributary_reach_km:g} km (straight line) "
                    f"of {wb} (profile tributary_reach_km)",
                )
            )
        wb_pols: dict[str, list[str]] = {}
        for target, relation in targets:
            for listing in waters.listings(target).to_dict("records"):
                cat = str(listing["category"])
                counts = _listing_counts(cat, listing["pollutant"], profile)
                impaired.append(
                    {
                        "pwl_id": target,
                        "name": listing.get("name")
                        or waters.name_of(target)
                        or (None if is_blank(entry["name"]) else str(entry["name"])),
                        "pollutant": listing["pollutant"],
                        "category": cat,
                        "list_year": None
                        if is_blank(listing.get("list_year"))
                        else int(listing["list_year"]),
                        "source": None
                        if is_blank(listing.get("source"))
                        else str(listing["source"]),
                        "relation": relation,
                        "fraction": entry["fraction"],
                        "via": sorted(entry["via"]),
                        "outfalls": list(entry["outfalls"]),
                        "counts_for_condition_a": bool(counts),
                        "why": _listing_why(cat, listing["pollutant"], profile),
                    }
                )
                if counts and listing["pollutant"] not in wb_pols.get(target, []):
                    wb_pols.setdefault(target, []).append(listing["pollutant"])
        if wb_pols:
            reasons.append(_listed_reason(wb, entry, wb_pols, waters, profile))
    return impaired, reasons


def _listed_reason(
    wb: str,
    entry: dict[str, Any],
    pollutants: dict[str, list[str]],
    waters: Waters,
    profile: Profile,
) -> str:
    """ "70% of the site drains through MS4 outfall(s) OF1 to River (1101-0012), on the
    303(d) list for PCBs." ``pollutants`` maps each counting water (the receiving water
    ``wb``, or a listed water within ``tributary_reach_km`` of it) to its counting
    pollutants; a water near ``wb`` is named as such, with the setting, and ``wb`` is
    said to be listed only when it is."""
    wname = waters.name_of(wb) or (None if is_blank(entry["name"]) else str(entry["name"])) or wb
    path = (
        "through MS4 outfall(s) " + ", ".join(entry["outfalls"])
        if "ms4" in entry["via"] and entry["outfalls"]
        else ""
    )
    if "direct" in entry["via"]:
        path = (path + " and " if path else "") + "directly (not through the MS4)"
    own = f", on the 303(d) list for {', '.join(pollutants[wb])}" if pollutants.get(wb) else ""
    near = []
    for other, pols in pollutants.items():
        if other != wb:
            oname = waters.name_of(other)
            near.append(
                f"{f'{oname} ({other})' if oname else other}, on the 303(d) list for "
                f"{', '.join(pols)}"
            )
    if near:
        km = f"{profile.tributary_reach_km:g}"
        own += (
            f"{'; and' if own else ','} within {km} km (straight line; profile "
            f"tributary_reach_km = {km}) of " + "; and of ".join(near)
        )
    return f"{_pct(entry['fraction'])} of the site drains {path} to {wname} ({wb}){own}."


def _tmdl_entries(
    tmdl_hits: pd.DataFrame | None, profile: Profile
) -> tuple[list[dict[str, Any]], list[str]]:
    """The TMDL watersheds the site reaches (``tmdl_watersheds`` of the document, each
    saying whether and why it counts) and one reason per counting watershed."""
    out: list[dict[str, Any]] = []
    reasons: list[str] = []
    if tmdl_hits is None or not len(tmdl_hits):
        return out, reasons
    for tmdl in tmdl_hits.to_dict("records"):
        sw_raw = tmdl.get("stormwater_source")
        sw = None if is_blank(sw_raw) else bool(sw_raw)
        counts = _tmdl_counts(sw, tmdl.get("pollutant"), profile)
        if sw is False:
            why = "stormwater is not identified as a source in this TMDL"
        elif counts is None:
            why = (
                "the layer does not record "
                + ("whether stormwater is a source" if sw is None else "its pollutant")
                + " (fill `stormwater_source` and `pollutant` in the `tmdl_watersheds` layer)"
            )
        elif not counts:
            why = f"{tmdl.get('pollutant')} is not a pollutant of concern under {_reading_text(profile)}"
        else:
            why = "TMDL watershed with stormwater identified as a source"
        out.append(
            {
                "tmdl_id": None if is_blank(tmdl.get("tmdl_id")) else str(tmdl["tmdl_id"]),
                "name": None if is_blank(tmdl.get("name")) else str(tmdl["name"]),
                "pollutant": None if is_blank(tmdl.get("pollutant")) else str(tmdl["pollutant"]),
                "stormwater_source": sw,
                "approved": None if is_blank(tmdl.get("approved")) else str(tmdl["approved"]),
                "how": tmdl.get("how"),
                "counts_for_condition_a": counts,
                "why": why,
            }
        )
        if counts is None:
            reasons.append(
                f"The site {tmdl.get('how') or 'reaches'} the "
                f"{tmdl_watershed_label(tmdl.get('name') or tmdl.get('tmdl_id'))}, but "
                f"{why}: whether it counts for Condition A is not known."
            )
        elif counts:
            pol = tmdl.get("pollutant")
            pollutant = "pollutant not given" if is_blank(pol) else str(pol)
            reasons.append(
                f"The site {tmdl.get('how') or 'reaches'} the "
                f"{tmdl_watershed_label(tmdl.get('name') or tmdl.get('tmdl_id'))} "
                f"({pollutant}), where stormwater is identified as a source of the "
                "impairment."
            )
    return out, reasons


def _unknown_drainage_reason(
    rows: pd.DataFrame,
    fr: dict[str, float],
    unresolved_outfalls: list[str],
    id_problems: list[str] | None = None,
) -> str:
    """Why Condition A is undetermined: which shares drain where (off the DEM, unmapped,
    to a water without a PWL id, naming the outfalls and the waters to fix and what is
    wrong with their ids)."""
    parts = []
    off = float(rows.loc[rows["target_kind"] == "off_dem", "fraction"].sum())
    if off > _EPS:
        parts.append(f"{_pct(off)} lies off the DEM")
    unk = float(rows.loc[rows["target_kind"] == "unknown", "fraction"].sum())
    if unk > _EPS:
        parts.append(f"{_pct(unk)} drains somewhere unmapped")
    unresolved = fr["no_pwl_fraction"]
    if unresolved > _EPS:
        via = (
            " through outfall(s) "
            + shown_ids(unresolved_outfalls, 10)
            + " (fill their `pwl_id` or `receiving_water` in the `outfalls` layer)"
            if unresolved_outfalls
            else ""
        )
        parts.append(f"{_pct(unresolved)} reaches a receiving water without a PWL ID{via}")
    fix = ""
    if id_problems:
        fix = (
            " (" + "; ".join(id_problems) + ": write the PWL ID as NNNN-NNNN in `pwl_id` "
            "of the `outfalls` layer or `wb_id` of the `waterbodies` layer)"
        )
    if fr["unknown_fraction"] >= fr["total_fraction"] - _EPS:
        return (
            "The site's drainage is unknown ("
            + " and ".join(parts)
            + fix
            + "): Condition A is undetermined until it is known."
        )
    return (
        "The known part of the site reaches no 303(d) water or TMDL watershed, "
        "but " + " and ".join(parts) + fix + ": Condition A is undetermined until that "
        "part's drainage is known."
    )


def _ambiguous_reason(fr: dict[str, float], ambiguous: list[str]) -> str:
    """Why Condition A is undetermined on an ambiguous network path: the share, the
    candidates and what each gives, the fix."""
    share = fr.get("ambiguous_fraction", 0.0)
    where = (
        f"{_pct(share)} of the site enters the storm network where the evidence cannot tell "
        "which outfall takes the flow"
        if share > _EPS
        else "The evidence cannot tell which outfall takes the site's runoff"
    )
    return (
        f"{where}: {'; '.join(ambiguous)}. Condition A is undetermined (a wrong outfall "
        f"is worse than none); to decide it, {AMBIGUOUS_FIX}."
    )


def _not_reached_reasons(
    method: str,
    fr: dict[str, float],
    by_wb: dict[str, dict[str, Any]],
    impaired: list[dict[str, Any]],
    waters: Waters,
) -> list[str]:
    """Why Condition A is false (before the missing-layer check): internally drained, or
    the waters reached and why each of their listings does not count."""
    if method == "internally_drained":
        return [
            "The whole site drains to closed depressions (internally drained): "
            "no runoff reaches a water."
        ]
    names = [
        f"{waters.name_of(wb_id) or entry['name'] or wb_id} ({wb_id})"
        for wb_id, entry in by_wb.items()
    ]
    reasons = [
        "Runoff reaches "
        + (", ".join(names) if names else "no water")
        + ": no 303(d) listing of a pollutant of concern and no TMDL "
        "watershed with stormwater as a source."
    ]
    for item in impaired:
        reasons.append(
            f"{item['name'] or item['pwl_id']} ({item['pwl_id']}) is listed for "
            f"{item['pollutant']} (category {item['category']}), which does not "
            f"count: {item['why']}."
        )
    if fr["internal_fraction"] > _EPS:
        reasons.append(f"{_pct(fr['internal_fraction'])} of the site is internally drained.")
    return reasons


def _missing_layer_reasons(
    value: bool | None,
    method: str,
    reasons: list[str],
    *,
    missing: list[str],
    by_wb: dict[str, dict[str, Any]],
    waters: Waters,
) -> list[str]:
    """The reasons with the missing legal layers named: a ``missing_layer`` answer says
    why it cannot say no; an undetermined one adds the layers; a ``True`` one notes them."""
    if not missing:
        return reasons
    why_missing = [missing_layer_reason(layer) for layer in missing]
    if method == "missing_layer":
        reached = [
            f"{waters.name_of(wb_id) or entry['name'] or wb_id} ({wb_id})"
            for wb_id, entry in by_wb.items()
        ]
        return [
            "Condition A is undetermined: nothing in this workspace triggers it"
            + (f" (runoff reaches {', '.join(reached)})" if reached else "")
            + ", but it lacks a layer the answer depends on, so it cannot say no."
        ] + why_missing
    if value is None:
        return reasons + why_missing
    return reasons + [
        "(The workspace also lacks "
        + ", ".join(f"the `{layer}` layer" for layer in missing)
        + "; the part that is known already decides Condition A.)"
    ]


def _batch_row_reasons(
    facts: pd.DataFrame, tmdl_names: pd.Series, waters: Waters, profile: Profile
) -> pd.Series:
    """The short reason of each row that triggers Condition A ("drains via outfall OF1 to
    River (1101-0012), on the 303(d) list for PCBs"); NaN for the others."""
    pol_by_wb = _counting_pollutants(waters, profile)
    wb_names: dict[str, str] = {}
    if len(waters.waterbodies) and "name" in waters.waterbodies:
        for w_id, w_name in zip(
            waters.waterbodies["wb_id"], waters.waterbodies["name"], strict=True
        ):
            if not is_blank(w_id) and not is_blank(w_name):
                wb_names.setdefault(str(w_id), f"{w_name} ({w_id})")
    reasons = pd.Series(None, index=facts.index, dtype=object)
    via = pd.Series(
        np.where(facts["ms4"], "via outfall " + facts["outfall_id"].astype(str), "directly"),
        index=facts.index,
    ).astype(object)
    listed = facts["listed_wb"].notna()
    if listed.any():
        lw = facts["wb"].astype(str).map(lambda w: wb_names.get(w, w)).astype(object)
        near = listed & (facts["listed_wb"] != facts["wb"])
        lw[near] = (
            lw[near]
            + f", within {profile.tributary_reach_km:g} km of "
            + facts.loc[near, "listed_wb"].map(lambda w: wb_names.get(w, w)).astype(object)
        )
        reasons[listed] = (
            "drains "
            + via[listed]
            + " to "
            + lw[listed]
            + ", on the 303(d) list for "
            + facts.loc[listed, "listed_wb"].map(pol_by_wb).astype(object)
        )
    if "ambiguous" in facts.columns:  # listed on every candidate of an ambiguous path
        amb = listed & facts["ambiguous"].notna() & facts["wb"].isna()
        reasons[amb] = "enters the MS4, and " + facts.loc[amb, "ambiguous"].astype(object)
    sel = tmdl_names.notna() & ~listed
    if sel.any():
        reasons[sel] = (
            "drains "
            + via[sel]
            + " into the "
            + tmdl_names[sel].astype(str).map(tmdl_watershed_label).astype(object)
            + " (stormwater a source)"
        )
    return reasons


def _ambiguous_batch_reasons(reason: np.ndarray, site: pd.DataFrame, method: np.ndarray) -> None:
    """The parcels' reasons (in place) where a network path is ambiguous: an open one
    (``ambiguous_outfall``) names the candidates and the fix; a determined one adds that
    the answer holds for every candidate."""
    if "ambiguous_text" not in site.columns:
        return
    text = site["ambiguous_text"].to_numpy(dtype=object)
    for i in np.flatnonzero(np.array([isinstance(t, str) for t in text], dtype=bool)):
        if method[i] == "ambiguous_outfall":
            reason[i] = f"ambiguous network path: {text[i]}; {AMBIGUOUS_FIX}"
        elif isinstance(reason[i], str) and text[i] not in reason[i]:
            reason[i] = (
                f"{reason[i]} (ambiguous network path: {text[i]}; the answer holds for every candidate)"
            )


def _batch_reasons(
    out: pd.DataFrame,
    site: pd.DataFrame,
    value: np.ndarray,
    method: np.ndarray,
    *,
    in_tmdl: dict[str, str],
    has_rows: np.ndarray,
    missing: list[str],
) -> np.ndarray:
    """The short reason of each parcel of the screening table, by its method: the first
    triggering row's reason, "lies in the ... TMDL watershed", what is unknown, where it
    drains, or why it could not be screened; the missing legal layers named."""
    ids = out.index.to_numpy()
    reason = out["reason"].to_numpy(dtype=object).copy()
    # a row's own reason (303(d) water, TMDL through an outfall or a water) comes first
    row_hit = (site["listed_fraction"].fillna(0).to_numpy() > 0) | site["tmdl_hit"].fillna(
        False
    ).to_numpy(dtype=bool)
    tm_in = np.array([p in in_tmdl for p in ids], dtype=bool)
    for i in np.flatnonzero(tm_in & ~row_hit):
        reason[i] = f"lies in the {tmdl_watershed_label(in_tmdl[ids[i]])} (stormwater a source)"
    unk_fr = site["unknown_fraction"].fillna(0).to_numpy()
    nopwl_fr = site["no_pwl_fraction"].fillna(0).to_numpy()
    tot_fr = site["total_fraction"].fillna(0).to_numpy()
    nopwl_ofs = out["no_pwl_outfalls"].to_numpy(dtype=object)
    id_problems = out["id_problems"].to_numpy(dtype=object)
    for i in np.flatnonzero(method == "tmdl_unknown"):
        reason[i] = (
            "in or draining to a TMDL watershed whose stormwater source or pollutant is not "
            "recorded (fill `stormwater_source` and `pollutant` in the `tmdl_watersheds` layer)"
        )
    gap_text = (
        site["tmdl_gap_text"].to_numpy(dtype=object)
        if "tmdl_gap_text" in site.columns
        else np.full(len(ids), None, dtype=object)
    )
    for i in np.flatnonzero(method == "tmdl_missing"):
        reason[i] = f"drains to {gap_text[i]}, but {_TMDL_GAP_FIX}"
    skipped_text = (
        site["skipped_text"].to_numpy(dtype=object)
        if "skipped_text" in site.columns
        else np.full(len(ids), None, dtype=object)
    )
    for i in np.flatnonzero(method == "listing_skipped"):
        reason[i] = (
            f"drains to a water with 303(d) CSV rows that could not be read and were "
            f"skipped ({skipped_text[i]}): whether it is listed is not known; "
            f"{SKIPPED_ROWS_FIX}"
        )
    und = method == "unknown_drainage"
    for i in np.flatnonzero(und):
        parts = []
        if unk_fr[i] - nopwl_fr[i] > _EPS:
            parts.append(
                f"{_pct(unk_fr[i] - nopwl_fr[i])} drains somewhere unknown (off the DEM or unmapped)"
            )
        if nopwl_fr[i] > _EPS:
            ofs = nopwl_ofs[i] if isinstance(nopwl_ofs[i], str) else ""
            parts.append(
                f"{_pct(nopwl_fr[i])} reaches a receiving water without a PWL ID"
                + (
                    f" through outfall(s) {ofs} (fill their `pwl_id` or `receiving_water` "
                    "in the `outfalls` layer)"
                    if ofs
                    else ""
                )
                + (
                    f" ({id_problems[i]}: write the PWL ID as NNNN-NNNN)"
                    if isinstance(id_problems[i], str)
                    else ""
                )
            )
        whole = unk_fr[i] >= tot_fr[i] - _EPS
        reason[i] = " and ".join(parts) + ("" if whole else "; the rest reaches no listed water")
    recv_s = out["receiving_waters"].to_numpy(dtype=object)
    intl = site["internal_fraction"].fillna(0).to_numpy()
    no = np.isin(method, ("internally_drained", "not_listed", "missing_layer"))
    for i in np.flatnonzero(no):
        reason[i] = (
            "internally drained: no runoff reaches a water"
            if intl[i] >= 1 - _EPS
            else f"drains to {recv_s[i] if isinstance(recv_s[i], str) else 'no water'}"
            ": not 303(d)-listed for a pollutant of concern, no TMDL watershed"
        )
    for i in np.flatnonzero(~has_rows & ~tm_in):
        reason[i] = (
            "bad drainage rows (see the QA findings)"
            if method[i] == "bad_drainage_rows"
            else "no rows in the drainage table"
        )
    _ambiguous_batch_reasons(reason, site, method)
    if missing:
        # never a confident "no" while a legal layer is missing (as for one site)
        lacks = "; ".join(missing_layer_short(m) for m in missing)
        for i in np.flatnonzero(method == "missing_layer"):
            reason[i] = f"undetermined: {lacks}; with the layers present, {reason[i]}"
        for i in np.flatnonzero(und):
            reason[i] = f"{reason[i]}; also {lacks}"
    return reason
