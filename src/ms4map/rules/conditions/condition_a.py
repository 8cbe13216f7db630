"""The one Condition A engine: row facts -> site facts -> decide_condition_a -> ConditionAFacts.

The single site (:func:`site_condition_a`, with its reasons written by
:func:`ms4map.rules.conditions.reasons.condition_a_physics`) and the batch
(:func:`ms4map.rules.conditions.screening.screen_condition_a`, every parcel at once)
compute the same facts (:func:`condition_a_row_facts`, :func:`condition_a_site_facts`)
and decide with the same rule (:func:`decide_condition_a`).  A share whose network
path is ambiguous is decided on every candidate outfall (:func:`_ambiguous_facts`): the
answer stands when they all give the same one, else it is open (``ambiguous_outfall``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...core.nulls import is_blank
from ...core.qa import shown_ids
from ..profiles import Profile
from ..waters import (
    Waters,
    pollutant_in,
    skipped_rows_text,
)
from .summary import (
    _EPS,
    _UNKNOWN_KINDS,
    MS4_KINDS,
    REACH_KINDS,
    _bad_drainage_rows,
    _screening_drainage,
    ambiguous_mask,
    candidate_ids,
    candidate_rows,
    water_id_problems,
    water_ids,
)

#: The fix named wherever an ambiguous network path leaves an answer open.
AMBIGUOUS_FIX = (
    "survey the pipes where the flow divides, or add inverts or from/to structure ids to "
    "the conveyances, so the network can tell which way the flow leaves "
    "(docs/network.md, the `ambiguous` answer)"
)


def _counts(pollutant: str, profile: Profile) -> bool:
    if profile.pollutant_reading == "law":
        return True
    return pollutant_in(pollutant, profile.pollutants_of_concern)


def _incomplete_rows(rows: pd.DataFrame) -> str | None:
    """What is wrong with one site's drainage rows as a whole, or ``None``: the batch's
    check (:func:`_bad_drainage_rows`: fractions not summing to 1, so part of the site
    drains somewhere not known), and the site's parcels without rows (named by
    :func:`combine_parcel_rows` in ``rows.attrs["parcels_without_rows"]``)."""
    if not len(rows):
        return None
    bad, qa = _bad_drainage_rows(_screening_drainage(rows.assign(parcel_id="site")))
    if "site" not in bad:
        return None
    what = [f.message.removeprefix("parcel site: ") for f in qa.findings]
    without = list(rows.attrs.get("parcels_without_rows", ()) or ())
    if without:
        what.append(
            f"parcel(s) {shown_ids(without, 10)} of the site have no rows in the drainage "
            "table (run the drainage step for them)"
        )
    return "drainage rows are incomplete (" + "; ".join(what) + ")"


def _listing_counts(category: Any, pollutant: Any, profile: Profile) -> bool:
    """Whether one impairment listing counts for Condition A: a 303(d) listing (category 5)
    of a pollutant of concern."""
    return str(category) == "5" and _counts(pollutant, profile)


def _tmdl_counts(stormwater_source: Any, pollutant: Any, profile: Profile) -> bool | None:
    """Whether a TMDL watershed counts for Condition A: stormwater a source of the
    impairment, for a pollutant of concern; ``None`` when the layer does not say (no
    ``stormwater_source``, or no ``pollutant`` while only some pollutants count):
    missing data never gives a "no" (docs/rules.md, section 2)."""
    if is_blank(stormwater_source):
        sw = None
    else:
        sw = bool(stormwater_source)
    if sw is False:
        return False
    if is_blank(pollutant):
        pol = True if profile.pollutant_reading == "law" else None
    else:
        pol = _counts(str(pollutant), profile)
    if pol is False:
        return False
    return True if (sw and pol) else None


def condition_a_row_facts(
    rows: pd.DataFrame,
    *,
    waters: Waters,
    profile: Profile,
    reach_hits: dict[str, set[str]] | None = None,
) -> pd.DataFrame:
    """The Condition A facts of each drainage row (vectorised; one site or every parcel).

    Adds the columns ``wb`` (receiving water, :func:`water_ids`), ``reach`` (the row
    reaches a water: inlet, conveyance or direct), ``ms4``, ``listed_wbs`` (the counting
    303(d) waters the row reaches, ``;``-joined: its receiving water, then the listed
    waters within ``tributary_reach_km`` of it; ``None`` when none), ``listed_wb`` (the
    first of them), ``no_pwl`` (it reaches a water without a PWL id) and ``id_problem``
    (for such a row, why its written id is no PWL ID: :func:`water_id_problems`);
    for a row whose network path is ambiguous, ``ambiguous`` (the candidates and what
    each gives, in words) and ``ambiguous_open`` (they give different answers:
    :func:`_ambiguous_facts`).
    """
    out = rows.copy()
    kind = out["target_kind"]
    if "wb" not in out.columns:
        out["wb"] = water_ids(out, waters)
    out["reach"] = kind.isin(REACH_KINDS)
    out["ms4"] = kind.isin(MS4_KINDS)
    counting = set(_counting_listings(waters, profile)["wb_id"].astype(str))
    targets: dict[str, str] = {}
    for wb in dict.fromkeys(out.loc[out["reach"], "wb"].dropna().tolist()):
        near = sorted(set((reach_hits or {}).get(wb, set())) - {wb})
        hit = [t for t in [wb, *near] if t in counting]
        if hit:
            targets[wb] = ";".join(hit)
    listed_all = out["wb"].map(targets).where(out["reach"])
    out["listed_wbs"] = listed_all.astype(object).where(listed_all.notna(), None)
    out["listed_wb"] = out["listed_wbs"].str.split(";").str[0].astype(object)
    out["listed_wb"] = out["listed_wb"].where(out["listed_wb"].notna(), None)
    out["no_pwl"] = out["reach"] & out["wb"].isna()
    problems = water_id_problems(out, waters)
    out["id_problem"] = problems.where(out["no_pwl"] & problems.notna(), None).astype(object)
    gaps = four_a_gaps(waters, profile)
    gap = out["wb"].map(gaps).where(out["reach"]) if gaps else pd.Series(None, index=out.index)
    out["tmdl_gap"] = gap.astype(object).where(gap.notna(), None)
    out["listing_skipped"] = _skipped_listings(out, waters, reach_hits)
    out["ambiguous"] = pd.Series(None, index=out.index, dtype=object)
    out["ambiguous_open"] = False
    amb = ambiguous_mask(out) & out["reach"].to_numpy(dtype=bool)
    if amb.any():
        _ambiguous_facts(out, amb, waters=waters, profile=profile, reach_hits=reach_hits)
    return out


def candidates_text(ids: list[str]) -> str:
    """``"the network cannot tell whether flow reaches OF-1 or OF-2"``."""
    which = " or ".join(ids) if len(ids) <= 2 else ", ".join(ids[:-1]) + " or " + ids[-1]
    return f"the network cannot tell whether flow reaches {which}"


def _ambiguous_facts(
    out: pd.DataFrame,
    amb: np.ndarray,
    *,
    waters: Waters,
    profile: Profile,
    reach_hits: dict[str, set[str]] | None,
) -> None:
    """Decide the ambiguous rows of ``out`` (in place) on each candidate outfall.

    A row whose candidates all discharge to one water (the join filled it) keeps its
    facts: the answer holds for every candidate.  Otherwise each candidate's water is
    judged as a row of its own: all of them counting 303(d) waters (or near one) -> the
    row is listed; all of them known waters that are not listed (no category 4a
    listing, no skipped CSV rows) -> not listed; else the candidates give different
    answers and ``ambiguous_open`` is set (never a confident "no")."""
    pos = np.flatnonzero(amb)  # by position: the table's index may repeat labels
    sub = out.iloc[pos].reset_index(drop=True)
    cand = candidate_rows(sub, waters)
    cf = condition_a_row_facts(cand, waters=waters, profile=profile, reach_hits=reach_hits)
    links = four_a_links(waters)
    cols = ("ambiguous", "ambiguous_open", "no_pwl", "id_problem", "listed_wbs", "listed_wb")
    at = {c: out.columns.get_loc(c) for c in cols}
    for src, group in cf.groupby("_src", sort=False):
        p, row = int(pos[int(src)]), sub.iloc[int(src)]
        head = candidates_text(candidate_ids(row["outfall_candidates"]))
        if row["wb"] is not None or not is_blank(row.get("receiving_water")):
            wb = row["wb"]
            name = (waters.name_of(wb) if wb else None) or row.get("receiving_water")
            water = f"{name} ({wb})" if name and wb else (name or wb)
            out.iat[p, at["ambiguous"]] = f"{head}; every candidate discharges to {water}"
            continue
        states, words = [], []
        for c in group.to_dict("records"):
            wb = c["wb"]
            name = waters.name_of(wb) if wb else None
            water = f"{name} ({wb})" if name and wb else (wb or c["receiving_water"] or "a water")
            if not is_blank(c["listed_wbs"]):
                states.append("listed")
                words.append(f"{c['outfall_id']}: {water}, 303(d)-listed")
            elif (
                wb is not None
                and is_blank(c["tmdl_gap"])
                and is_blank(c["listing_skipped"])
                and wb not in links
            ):
                states.append("not")
                words.append(f"{c['outfall_id']}: {water}, not listed")
            else:
                states.append("open")
                words.append(f"{c['outfall_id']}: {water}, not known")
        every = set(states)
        out.iat[p, at["no_pwl"]] = False
        out.iat[p, at["id_problem"]] = None
        if every == {"listed"}:
            hits = [w for x in group["listed_wbs"] for w in str(x).split(";")]
            out.iat[p, at["listed_wbs"]] = ";".join(dict.fromkeys(hits))
            out.iat[p, at["listed_wb"]] = hits[0]
            verdict = "every candidate reaches a listed water"
        elif every == {"not"}:
            verdict = "no candidate reaches a listed water"
        else:
            out.iat[p, at["ambiguous_open"]] = True
            verdict = "the candidates give different answers"
        out.iat[p, at["ambiguous"]] = f"{head} ({'; '.join(words)}): {verdict}"


def _skipped_listings(
    facts: pd.DataFrame, waters: Waters, reach_hits: dict[str, set[str]] | None
) -> pd.Series:
    """For each row reaching a water (or, with ``tributary_reach_km``, one near it) that
    has rows of the 303(d) CSV which could not be read (:meth:`Waters.skipped_for`): the
    water and those rows in words (``"Test Creek (1302-0001): line 2 of list.csv
    (1302-0001, Phosphorus): list part/category '4' is unknown; ..."``); else ``None``.
    Whether such a water is listed is not known: never a "no" (docs/rules.md section 2).
    """
    none = pd.Series(None, index=facts.index, dtype=object)
    if not getattr(waters, "skipped", None):
        return none
    texts: dict[str, str] = {}
    for wb in dict.fromkeys(facts.loc[facts["reach"], "wb"].dropna().tolist()):
        parts = []
        for target in [wb, *sorted(set((reach_hits or {}).get(wb, set())) - {wb})]:
            rows = waters.skipped_for(target)
            if rows:
                name = waters.name_of(target)
                parts.append(
                    f"{f'{name} ({target})' if name else target}: {skipped_rows_text(rows)}"
                )
        if parts:
            texts[wb] = "; ".join(parts)
    if not texts:
        return none
    hit = facts["wb"].map(texts).where(facts["reach"])
    return hit.astype(object).where(hit.notna(), None)


def four_a_gaps(waters: Waters, profile: Profile | None = None) -> dict[str, str]:
    """``wb_id -> "Round Lake (1302-0004), category 4a (TMDL approved) for phosphorus
    (TMDL action 12345)"``: the waters with a category 4a listing of a pollutant of
    concern (or of a pollutant not recorded) whose TMDL the ``tmdl_watersheds`` layer
    does not have (:meth:`Waters.four_a_listings`; without ``profile`` every pollutant
    counts, as for the septic special condition).  Runoff reaching one reaches a TMDL
    watershed whose stormwater source is not known: never a "no".  None while the TMDL
    or the waterbodies layer is missing (the place of a TMDL is then not known):
    ``missing_layer`` says so then."""
    gaps: dict[str, str] = {}
    if {"tmdl_watersheds", "waterbodies"} & set(getattr(waters, "missing", ()) or ()):
        return gaps
    for wb, listings in waters.four_a_listings().items():
        open_ = [
            x
            for x in listings
            if not x["tmdls"]
            and (profile is None or x["pollutant"] is None or _counts(x["pollutant"], profile))
        ]
        if not open_:
            continue
        what = ", ".join(
            (x["pollutant"] or "a pollutant not recorded")
            + (f" (TMDL action {x['action_id']})" if x["action_id"] else "")
            for x in open_
        )
        name = waters.name_of(wb)
        gaps[wb] = f"{f'{name} ({wb})' if name else wb}, category 4a (TMDL approved) for {what}"
    return gaps


def four_a_links(waters: Waters) -> dict[str, list[Any]]:
    """``wb_id -> index labels of the TMDL watersheds its category 4a listings name``:
    runoff reaching the water reaches them (:meth:`Waters.four_a_listings`)."""
    links: dict[str, list[Any]] = {}
    for wb, listings in waters.four_a_listings().items():
        for x in listings:
            for label in x["tmdls"]:
                if label not in links.setdefault(wb, []):
                    links[wb].append(label)
    return links


def condition_a_site_facts(facts: pd.DataFrame, *, key: str) -> pd.DataFrame:
    """Per site (the groups of column ``key``): the shares of its area that reach a counting
    303(d) water (``listed_fraction``), drain somewhere unknown (``unknown_fraction``: off
    the DEM, unmapped, or to a water without a PWL id; ``no_pwl_fraction`` the last part),
    enter the MS4, reach water directly, drain internally, whose ambiguous network path
    gives different answers on its candidate outfalls (``ambiguous_fraction``), and in all
    (``total_fraction``).
    """
    fr = facts["fraction"].astype(float)
    kind = facts["target_kind"]
    parts = pd.DataFrame(
        {
            key: facts[key],
            "listed_fraction": fr * facts["listed_wb"].notna(),
            "unknown_fraction": fr * (kind.isin(_UNKNOWN_KINDS) | facts["no_pwl"]),
            "no_pwl_fraction": fr * facts["no_pwl"],
            "ms4_fraction": fr * facts["ms4"],
            "direct_fraction": fr * (kind == "water_direct"),
            "internal_fraction": fr * (kind == "depression"),
            "tmdl_gap_fraction": fr * facts["tmdl_gap"].notna(),
            "skipped_fraction": fr * facts["listing_skipped"].notna(),
            "ambiguous_fraction": fr * facts["ambiguous_open"].astype(bool)
            if "ambiguous_open" in facts.columns
            else 0.0 * fr,
            "total_fraction": fr,
        }
    )
    return parts.groupby(key, sort=False).sum()


def decide_condition_a(  # noqa: PLR0913 - a public entry point's inputs
    *,
    listed_fraction: np.ndarray,
    tmdl_hit: np.ndarray,
    unknown_fraction: np.ndarray,
    internal_fraction: np.ndarray,
    total_fraction: np.ndarray,
    has_rows: np.ndarray,
    missing: list[str],
    bad_rows: np.ndarray | None = None,
    tmdl_unknown: np.ndarray | None = None,
    tmdl_missing: np.ndarray | None = None,
    listing_skipped: np.ndarray | None = None,
    ambiguous: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The Condition A rule on the facts of one or many sites: ``(value, method)`` arrays.

    ``True`` when any part reaches a counting 303(d) water (method ``listed_water``) or
    a counting TMDL watershed (``tmdl_watershed``); else ``None`` when the site has no
    drainage (``no_drainage``), bad drainage rows (``bad_drainage_rows``) or a part that
    drains somewhere unknown (``unknown_drainage``) or whose network path is ambiguous
    with candidate outfalls that give different answers (``ambiguous_outfall``) or reaches a TMDL watershed whose
    stormwater source or pollutant the layer does not record (``tmdl_unknown``) or a
    category 4a water whose TMDL the layer does not have (``tmdl_missing``) or a water
    with rows of the 303(d) CSV that could not be read (``listing_skipped``); else
    ``False`` (``internally_drained``
    when all of it ends in closed depressions, else ``not_listed``), which becomes ``None``
    (``missing_layer``) while a legal layer is missing.
    """
    n = len(listed_fraction)
    bad = np.zeros(n, dtype=bool) if bad_rows is None else np.asarray(bad_rows, dtype=bool)
    value = np.full(n, None, dtype=object)
    method = np.full(n, "no_drainage", dtype=object)
    listed = np.asarray(listed_fraction, dtype=float) > 0
    true = listed | np.asarray(tmdl_hit, dtype=bool)
    value[true] = True
    method[true & listed] = "listed_water"
    method[true & ~listed] = "tmdl_watershed"
    drained = np.asarray(has_rows, dtype=bool) & (np.asarray(total_fraction, float) > _EPS)
    method[~true & bad] = "bad_drainage_rows"
    rest = ~true & ~bad & drained
    unknown = rest & (np.asarray(unknown_fraction, dtype=float) > _EPS)
    method[unknown] = "unknown_drainage"
    if ambiguous is not None:
        amb = rest & ~unknown & np.asarray(ambiguous, dtype=bool)
        method[amb] = "ambiguous_outfall"
        unknown = unknown | amb
    if tmdl_unknown is not None:
        tm_unknown = rest & ~unknown & np.asarray(tmdl_unknown, dtype=bool)
        method[tm_unknown] = "tmdl_unknown"
        unknown = unknown | tm_unknown
    if tmdl_missing is not None:
        tm_missing = rest & ~unknown & np.asarray(tmdl_missing, dtype=bool)
        method[tm_missing] = "tmdl_missing"
        unknown = unknown | tm_missing
    if listing_skipped is not None:
        skipped = rest & ~unknown & np.asarray(listing_skipped, dtype=bool)
        method[skipped] = "listing_skipped"
        unknown = unknown | skipped
    no = rest & ~unknown
    value[no] = False
    inside = np.asarray(internal_fraction, dtype=float) >= 1 - _EPS
    method[no & inside] = "internally_drained"
    method[no & ~inside] = "not_listed"
    if missing:
        # never a confident "no" while a legal layer is missing
        value[no] = None
        method[no] = "missing_layer"
    return value, method


def _waters_reached(
    facts: pd.DataFrame,
) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    """The waters a site reaches (``wb -> fraction, via, outfalls, name, listed_wb``), the
    outfalls of its parts that reach a water without a PWL id, and what is wrong with
    those parts' water ids (``"outfall OF-1: pwl_id 'X' is not ..."``, ``"Pine Creek
    (runoff reaching it directly): the waterbody has no wb_id"``)."""
    by_wb: dict[str, dict[str, Any]] = {}
    unresolved_outfalls: list[str] = []
    problems: list[str] = []
    for row in facts[facts["reach"]].to_dict("records"):
        outfall = row.get("outfall_id")
        if row["wb"] is None:
            if not is_blank(outfall) and str(outfall) not in unresolved_outfalls:
                unresolved_outfalls.append(str(outfall))
            what = (
                f"outfall {outfall}"
                if not is_blank(outfall)
                else str(row.get("receiving_water") or "a water") + " (runoff reaching it directly)"
            )
            problem = row.get("id_problem")
            if not is_blank(problem):
                text = f"{what}: {problem}"
            elif is_blank(outfall) and row.get("target_kind") == "water_direct":
                text = f"{what}: the waterbody has no wb_id (PWL ID)"
            else:
                text = None
            if text and text not in problems:
                problems.append(text)
            continue
        entry = by_wb.setdefault(
            row["wb"],
            {"fraction": 0.0, "via": set(), "outfalls": [], "name": row.get("receiving_water")},
        )
        entry["fraction"] += float(row["fraction"])
        entry["via"].add("ms4" if row["ms4"] else "direct")
        if not is_blank(outfall) and str(outfall) not in entry["outfalls"]:
            entry["outfalls"].append(str(outfall))
    return by_wb, unresolved_outfalls, problems


def _counting_listings(waters: Waters, profile: Profile) -> pd.DataFrame:
    """The listings that count for Condition A (:func:`_listing_counts`)."""
    imp = waters.impairments
    if not len(imp):
        return imp
    keep = [
        _listing_counts(c, p, profile)
        for c, p in zip(imp["category"], imp["pollutant"], strict=True)
    ]
    return imp[np.asarray(keep, dtype=bool)]


def _counting_tmdls(waters: Waters, profile: Profile) -> Any:
    """The TMDL watersheds that count for Condition A (:func:`_tmdl_counts`)."""
    return _tmdl_where(waters, profile, True)


def _unknown_tmdls(waters: Waters, profile: Profile) -> Any:
    """The TMDL watersheds whose stormwater source or pollutant the layer does not
    record (:func:`_tmdl_counts` is ``None``): a parcel in or draining to one is
    undetermined, not a "no"."""
    return _tmdl_where(waters, profile, None)


def _tmdl_where(waters: Waters, profile: Profile, answer: bool | None) -> Any:
    """The TMDL watersheds for which :func:`_tmdl_counts` is ``answer``."""
    tm = waters.tmdl_watersheds
    if tm is None or not len(tm):
        return tm
    keep = [
        _tmdl_counts(sw, p, profile) is answer
        for sw, p in zip(tm["stormwater_source"], tm["pollutant"], strict=True)
    ]
    return tm[np.asarray(keep, dtype=bool)]


def _counting_pollutants(waters: Waters, profile: Profile) -> dict[str, str]:
    """``wb_id -> "PCBs, phosphorus"``: the counting 303(d) pollutants of each water."""
    listings = _counting_listings(waters, profile)
    if not len(listings):
        return {}
    return (
        listings.groupby("wb_id")["pollutant"].agg(lambda s: ", ".join(dict.fromkeys(s))).to_dict()
    )


@dataclass(frozen=True)
class ConditionAFacts:
    """The Condition A facts of one site and the engine's answer on them
    (:func:`site_condition_a`).

    Attributes
    ----------
    value : bool or None
        Condition A on the drainage alone (``None``: undetermined).
    method : str
        How it was decided (:func:`decide_condition_a`: ``listed_water``,
        ``tmdl_watershed``, ``unknown_drainage``, ``not_listed``, ...).
    fractions : dict
        The site's shares (:func:`condition_a_site_facts`' columns: ``listed_fraction``,
        ``unknown_fraction``, ``no_pwl_fraction``, ``ms4_fraction``, ...).
    facts : DataFrame
        The facts of each drainage row (:func:`condition_a_row_facts`).
    waters_reached : dict
        ``wb -> fraction, via, outfalls, name`` of the waters the site reaches.
    unresolved_outfalls : list of str
        Outfalls of the parts that reach a water without a PWL id.
    id_problems : list of str
        What is wrong with those parts' water ids.
    incomplete : str or None
        What is wrong with the drainage rows as a whole (:func:`_incomplete_rows`).
    missing : list of str
        The legal layers the workspace lacks.
    ambiguous : list of str
        The site's ambiguous network paths in words (the candidates and what each
        gives), and the TMDL watersheds only a candidate outfall lies in.
    """

    value: bool | None
    method: str
    fractions: dict[str, float]
    facts: pd.DataFrame
    waters_reached: dict[str, dict[str, Any]]
    unresolved_outfalls: list[str]
    id_problems: list[str]
    incomplete: str | None
    missing: list[str]
    ambiguous: list[str] = field(default_factory=list)


def site_condition_a(
    rows: pd.DataFrame,
    *,
    waters: Waters,
    profile: Profile,
    tmdl_hits: pd.DataFrame | None = None,
    reach_hits: dict[str, set[str]] | None = None,
) -> ConditionAFacts:
    """The Condition A facts of one site's drainage rows and the engine's answer.

    Parameters
    ----------
    rows : DataFrame
        The site's drainage rows (checked: :func:`ms4map.rules.conditions.summary._as_rows`).
    waters : Waters
    profile : Profile
    tmdl_hits : DataFrame, optional
        TMDL watersheds the site reaches (:func:`ms4map.rules.conditions.site.tmdl_hits_for`).
    reach_hits : dict, optional
        ``receiving wb_id -> listed wb_ids within tributary_reach_km`` (profile setting).

    Returns
    -------
    ConditionAFacts
    """
    incomplete = _incomplete_rows(rows)
    facts = condition_a_row_facts(rows, waters=waters, profile=profile, reach_hits=reach_hits)
    site = condition_a_site_facts(facts.assign(_site="site"), key="_site")
    site = site.reindex(["site"]).fillna(0.0)
    by_wb, unresolved_outfalls, id_problems = _waters_reached(facts)
    tmdl_counts = []
    ambiguous = list(dict.fromkeys(facts["ambiguous"].dropna()))
    amb_tmdl = False
    if tmdl_hits is not None and len(tmdl_hits):
        for tmdl in tmdl_hits.to_dict("records"):
            sw_raw = tmdl.get("stormwater_source")
            sw = None if is_blank(sw_raw) else bool(sw_raw)
            counts = _tmdl_counts(sw, tmdl.get("pollutant"), profile)
            if tmdl.get("candidate") is True:  # only a candidate outfall lies in it
                if counts is not False:
                    amb_tmdl = True
                    name = tmdl.get("name") if not is_blank(tmdl.get("name")) else None
                    ambiguous.append(
                        f"{tmdl.get('how')} the {name or tmdl.get('tmdl_id')} TMDL watershed, "
                        "which may count: the network cannot tell whether the flow goes there"
                    )
                continue
            tmdl_counts.append(counts)
    missing = list(getattr(waters, "missing", ()) or ())
    value_arr, method_arr = decide_condition_a(
        listed_fraction=site["listed_fraction"].to_numpy(),
        tmdl_hit=np.array([any(c is True for c in tmdl_counts)]),
        tmdl_unknown=np.array([any(c is None for c in tmdl_counts)]),
        tmdl_missing=site["tmdl_gap_fraction"].to_numpy() > _EPS,
        listing_skipped=site["skipped_fraction"].to_numpy() > _EPS,
        ambiguous=(site["ambiguous_fraction"].to_numpy() > _EPS) | amb_tmdl,
        unknown_fraction=site["unknown_fraction"].to_numpy(),
        internal_fraction=site["internal_fraction"].to_numpy(),
        total_fraction=site["total_fraction"].to_numpy(),
        has_rows=np.array([len(rows) > 0]),
        missing=missing,
        bad_rows=np.array([bool(incomplete)]),
    )
    return ConditionAFacts(
        value=value_arr[0],
        method=str(method_arr[0]),
        fractions={k: float(site[k].iloc[0]) for k in site.columns},
        facts=facts,
        waters_reached=by_wb,
        unresolved_outfalls=unresolved_outfalls,
        id_problems=id_problems,
        incomplete=incomplete,
        missing=missing,
        ambiguous=ambiguous,
    )
