"""The steps of the septic layer: septic parcels, tributary test, special conditions, setbacks.

Every parcel with an on-site system is listed in the ``septic`` layer: from the
``sewer`` attribute, or inferred (an improved parcel, property class not 3xx,
outside every sewer district) when the attribute is missing
(:func:`_septic_parcels`).  A septic parcel is **flagged** when the drainage table
sends some of its runoff into the MS4 (an inlet or a conveyance,
:func:`_septic_drainage`); a septic parcel whose runoff reaches water without entering
the MS4 is listed but not flagged, and ``reason`` says so.

For flagged parcels the layer gives the outfall and receiving water, whether the
special conditions apply (the MS4 discharges to a 303(d) water or a TMDL watershed
with stormwater as a source, :func:`_special_conditions`), whether the listed
pollutant is one septic systems produce (pathogens, phosphorus, nitrogen, nutrients:
raised priority), the 10 NYCRR Appendix 75-A setback check (any part of the parcel
within the profile's ``setback_ft``, 100 ft, of water or an MS4 open conveyance:
raised priority, :func:`_setback_features`), and recorded failure conditions (the six
of Stillwater 174-6, :mod:`.failures`), which make a violation (:func:`_assess_parcel`).

Priority: ``violation`` (5) > ``high`` (3-4) > ``medium`` (2) > ``low`` (1); one point
for being tributary, one for a special condition, one for a septic pollutant, one
for the setback.  :mod:`.flags` runs these steps in order; :mod:`.reasons` writes
each parcel's reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...core.nulls import is_blank
from ...core.qa import QAReport
from ...core.schema import PARCEL_INFO_COLUMNS
from ...io.aliases import normalize_sewer, stormwater_source_value
from ..conditions.condition_a import candidates_text, four_a_gaps, four_a_links
from ..conditions.reasons import tmdl_watershed_label
from ..conditions.screening import join_unique
from ..conditions.summary import (
    _bad_drainage_rows,
    _screening_drainage,
    ambiguous_mask,
    candidate_rows,
    water_ids,
)
from ..profiles import Profile
from ..waters import Waters, pollutant_in, skipped_rows_text
from .failures import FAILURE_CONDITIONS, parse_failure_codes
from .reasons import (
    _OPEN_CAUSES,
    _not_tributary_reason,
    _open_special_words,
    _tributary_method,
    _tributary_reason,
)

__all__ = ["SEPTIC_COLUMNS"]

#: The columns :func:`_assess_parcel` decides for each septic parcel.
_ASSESSED_COLUMNS = (
    "special_condition",
    "listed_pollutants",
    "septic_pollutant",
    "within_setback",
    "setback_feature",
    "failure_codes",
    "failure_conditions",
    "violation",
    "priority",
    "priority_label",
    "method",
    "reason",
)
SEPTIC_COLUMNS = (
    *PARCEL_INFO_COLUMNS,
    "septic_source",
    "tributary",
    "flagged",
    "ms4_fraction",
    "direct_fraction",
    "outfall_id",
    "outfalls",
    "receiving_water",
    "pwl_id",
    *_ASSESSED_COLUMNS,
)
MS4_KINDS = ("inlet", "conveyance")
#: How a TMDL watershed whose ``pollutant`` is blank is named in reasons and letters.
_NO_POLLUTANT = "pollutant not given"


_PRIORITY_LABELS = {0: "none", 1: "low", 2: "medium", 3: "high", 4: "high", 5: "violation"}


def _septic_parcels(parcels: Any, sewer_districts: Any) -> tuple[Any, QAReport]:
    """The parcels with an on-site system, with ``septic_source`` (``sewer_attribute`` or
    ``inferred_outside_sewer_district``: an improved parcel, class not 3xx, whose
    representative point lies in no sewer district) and the normalised ``sewer``; a QA
    warning ``septic_not_inferred`` when parcels lack the attribute and there is no
    sewer-district layer to infer it from."""
    qa = QAReport()
    table = parcels.copy()
    table["parcel_id"] = table["parcel_id"].astype(str)
    for c in ("address", "owner", "owner_address", "prop_class", "sewer", "septic_failure"):
        if c not in table.columns:
            table[c] = None
    sewer_raw = table["sewer"].astype(object)
    sewer_map = {v: normalize_sewer(v) for v in pd.unique(sewer_raw.dropna())}
    sewer = sewer_raw.map(sewer_map).fillna("unknown")
    source = np.where(sewer == "septic", "sewer_attribute", None).astype(object)
    unknown = (sewer == "unknown").to_numpy()
    improved = np.array(
        [(not is_blank(v)) and not str(v).strip().startswith("3") for v in table["prop_class"]],
        dtype=bool,
    )
    if sewer_districts is not None and len(sewer_districts):
        pts = table.geometry.representative_point()
        pi, _ti = sewer_districts.sindex.query(pts.to_numpy(), predicate="intersects")
        in_district = np.zeros(len(table), dtype=bool)
        in_district[np.unique(pi)] = True
        inferred = unknown & improved & ~in_district
        source[inferred] = "inferred_outside_sewer_district"
    elif unknown.any():
        qa.warning(
            "septic_not_inferred",
            "parcels",
            f"{int(unknown.sum())} parcel(s) have no sewer attribute and there is no "
            "sewer_districts layer to infer it: they are not listed.",
            column="sewer",
            fix="fill parcels.sewer or add a sewer_districts layer.",
            step="septic",
            count=int(unknown.sum()),
        )
    has_system = pd.notna(source)
    sep = table[has_system].copy()
    sep["septic_source"] = source[has_system]
    sep["sewer"] = sewer[has_system]
    return sep, qa


def _septic_drainage(drainage: pd.DataFrame, sep: Any, waters: Waters) -> dict[str, Any]:
    """Where the septic parcels drain: per parcel the MS4, direct, internal and unknown
    shares (``shares``), the MS4 rows (``ms4_rows``), the main outfall row (``main``),
    every outfall (``outfalls``), the waters reached directly (``direct_names``) and the
    parcels whose rows do not cover them (``bad_rows``: ``parcel_id -> what is wrong``,
    :func:`conditions._bad_drainage_rows`)."""
    rows = drainage[drainage["parcel_id"].astype(str).isin(set(sep["parcel_id"]))].copy()
    rows["parcel_id"] = rows["parcel_id"].astype(str)
    # the parcels whose rows do not cover them, by Condition A's own check (unknown
    # target_kind, missing or negative fraction, fractions not summing to 1)
    _bad, bad_qa = _bad_drainage_rows(_screening_drainage(rows))
    bad_rows = {
        f.feature_id: f.message.removeprefix(f"parcel {f.feature_id}: ")
        for f in bad_qa.findings
        if f.feature_id
    }
    bad_rows.update({pid: "bad drainage rows" for pid in _bad if pid not in bad_rows})
    rows["fraction"] = pd.to_numeric(rows["fraction"], errors="coerce").fillna(0.0)
    ms4 = rows["target_kind"].isin(MS4_KINDS)
    rows["_ms4"] = ms4 * rows["fraction"]
    rows["_dir"] = (rows["target_kind"] == "water_direct") * rows["fraction"]
    rows["_int"] = (rows["target_kind"] == "depression") * rows["fraction"]
    rows["_unk"] = rows["target_kind"].isin(("off_dem", "unknown")) * rows["fraction"]
    shares = rows.groupby("parcel_id").agg(
        ms4=("_ms4", "sum"), dir=("_dir", "sum"), int_=("_int", "sum"), unk=("_unk", "sum")
    )
    ms4_rows = rows[ms4].copy().reset_index(drop=True)
    ms4_rows["outfall_id"] = (
        ms4_rows["outfall_id"].astype(object).where(ms4_rows["outfall_id"].notna(), None)
    )
    main = (
        (
            ms4_rows.sort_values("fraction", ascending=False)
            .drop_duplicates("parcel_id")
            .set_index("parcel_id")
        )
        if len(ms4_rows)
        else pd.DataFrame(columns=["outfall_id", "receiving_water", "pwl_id"])
    )
    with_outfall = ms4_rows.dropna(subset=["outfall_id"])
    outfalls = join_unique(with_outfall["parcel_id"], with_outfall["outfall_id"])
    direct = rows[rows["target_kind"] == "water_direct"]
    if len(direct):
        # the water each row reaches, by Condition A's rule (docs/rules.md section 2)
        dwb = water_ids(direct, waters)
        dname = direct["receiving_water"].astype(object)
        dname = dname.where(dname.notna(), dwb.map(lambda w: waters.name_of(w) or w))
        direct_names = join_unique(
            direct["parcel_id"], dname.astype(str) + " (" + dwb.astype(str) + ")", sep="; "
        )
    else:
        direct_names = pd.Series(dtype=object)
    # the receiving water of each MS4 row by Condition A's own rule (conditions.water_ids:
    # pwl_id read stripped, else the waterbody the name gives; None when not known), so
    # the special condition and Condition A agree on every parcel and outfall
    ms4_rows["_wb"] = water_ids(ms4_rows, waters)
    amb = ambiguous_mask(ms4_rows)
    return {
        "candidates": candidate_rows(ms4_rows[amb], waters) if amb.any() else None,
        "shares": shares,
        "ms4_rows": ms4_rows,
        "main": main,
        "outfalls": outfalls,
        "direct_names": direct_names.to_dict() if len(direct_names) else {},
        "bad_rows": bad_rows,
    }


def _special_conditions(
    flow: dict[str, Any], sep: Any, waters: Waters, outfall_points: dict[str, Any] | None
) -> dict[str, dict[str, list[str]]]:
    """Per septic parcel (``parcel_id -> list`` under each key): ``pols``, the listed
    pollutants of the special conditions; ``why``, why they apply (an outfall it drains
    through discharges to a category 5 water, or into a TMDL watershed with stormwater a
    source, or to a category 4a water under such a TMDL; or an MS4-tributary parcel lies
    in one); ``unknown_outfalls``, the outfalls it drains through whose receiving water
    is not known (no PWL ID and no name of exactly one waterbody, as for Condition A:
    ``"?"`` for a row without an outfall id); ``unknown_tmdls``, the TMDL watersheds it
    drains into or lies in whose layer does not record whether stormwater is a source
    (blank or unrecognised ``stormwater_source``: not known, as for Condition A, never
    "not a source"); ``missing_tmdls``, the category 4a waters it drains to whose TMDL
    the ``tmdl_watersheds`` layer lacks (:func:`conditions.four_a_gaps`);
    ``skipped_listings``, the outfalls it drains through whose receiving water has rows
    of the 303(d) CSV that could not be read (:meth:`Waters.skipped_for`);
    ``ambiguous``, its ambiguous network paths whose candidate outfalls do not all give
    the same answer, and ``held``, those on none of whose candidates the special condition
    applies (:func:`_candidates_special`)."""
    imp = waters.impairments
    cat5 = imp[imp["category"].astype(str) == "5"]
    listed_pols = cat5.groupby("wb_id")["pollutant"].agg(list).to_dict() if len(cat5) else {}
    tm = waters.tmdl_watersheds
    sw = (
        [stormwater_source_value(v) for v in tm["stormwater_source"]]
        if tm is not None and len(tm)
        else []
    )
    of_tmdl, parcel_tmdl = _tmdl_hits(
        tm, [v is True for v in sw], sep, outfall_points, label="pollutant"
    )
    of_unk, parcel_unk = _tmdl_hits(tm, [v is None for v in sw], sep, outfall_points, label="name")
    labels = list(tm.index) if tm is not None and len(tm) else []
    by_water = _four_a_special(waters, dict(zip(labels, sw, strict=True)))
    gaps = four_a_gaps(waters)
    out: dict[str, dict[str, list[str]]] = {k: {} for k in _ROW_KEYS}
    ms4_rows = flow["ms4_rows"]
    ctx = {
        "listed_pols": listed_pols,
        "of_tmdl": of_tmdl,
        "of_unk": of_unk,
        "by_water": by_water,
        "gaps": gaps,
        "waters": waters,
    }
    cands = flow.get("candidates")
    for label, pid, wb, of in zip(
        ms4_rows.index, ms4_rows["parcel_id"], ms4_rows["_wb"], ms4_rows["outfall_id"], strict=True
    ):
        out["pols"].setdefault(pid, [])
        out["why"].setdefault(pid, [])
        group = cands[cands["_src"] == label] if cands is not None and len(cands) else None
        if group is not None and len(group):
            _merge(out, pid, _candidates_special(group, ctx))
        else:
            _merge(out, pid, _row_special(wb, of, ctx))
    shares = flow["shares"]
    for hits, into in ((parcel_tmdl, None), (parcel_unk, out["unknown_tmdls"])):
        for pid, tpols in hits.items():
            if not (pid in shares.index and shares.loc[pid, "ms4"] > 0):
                continue
            if into is not None:
                into.setdefault(pid, []).extend(tpols)
                continue
            out["pols"].setdefault(pid, []).extend(tpols)
            out["why"].setdefault(pid, []).append(
                f"the parcel lies in a TMDL watershed ({', '.join(tpols)}; stormwater a source)"
            )
    return out


#: The keys of one row's special-condition findings (:func:`_row_special`).
_ROW_KEYS = (
    "pols",
    "why",
    "unknown_outfalls",
    "unknown_tmdls",
    "missing_tmdls",
    "skipped_listings",
    "ambiguous",
    "held",
    "candidate_pols",
)
#: The findings of a row that leave its special condition open.
_OPEN_KEYS = ("unknown_outfalls", "unknown_tmdls", "missing_tmdls", "skipped_listings")


def _merge(out: dict[str, dict[str, list[str]]], pid: str, found: dict[str, list[str]]) -> None:
    """Add one row's findings to the parcel's (``unknown_outfalls`` without repeats)."""
    for key, items in found.items():
        if not items:
            continue
        into = out.setdefault(key, {}).setdefault(pid, [])
        for item in items:
            if key != "unknown_outfalls" or item not in into:
                into.append(item)


def _row_special(wb: str | None, of: Any, ctx: dict[str, Any]) -> dict[str, list[str]]:
    """The special-condition findings of one MS4 row that reaches water ``wb`` (PWL id or
    ``None``) through outfall ``of`` (:func:`_special_conditions`' keys)."""
    found: dict[str, list[str]] = {k: [] for k in _ROW_KEYS}
    waters = ctx["waters"]
    listed_pols, of_tmdl, of_unk = ctx["listed_pols"], ctx["of_tmdl"], ctx["of_unk"]
    if wb is None:
        found["unknown_outfalls"].append("?" if is_blank(of) else str(of))
    if wb is not None and wb in listed_pols:
        found["pols"] += listed_pols[wb]
        found["why"].append(
            f"outfall {of} discharges to {waters.name_of(wb) or wb} ({wb}), 303(d)-"
            f"listed for {', '.join(listed_pols[wb])}"
        )
    if of is not None and str(of) in of_tmdl:
        found["pols"] += of_tmdl[str(of)]
        found["why"].append(
            f"outfall {of} discharges into a TMDL watershed "
            f"({', '.join(of_tmdl[str(of)])}; stormwater a source)"
        )
    if of is not None and str(of) in of_unk:
        found["unknown_tmdls"] += of_unk[str(of)]
    if wb is not None and wb in ctx["by_water"]:
        w_pols, w_why, w_unknown = ctx["by_water"][wb]
        found["pols"] += w_pols
        found["why"] += [f"outfall {of} discharges to {x}" for x in w_why]
        found["unknown_tmdls"] += w_unknown
    if wb is not None and wb in ctx["gaps"]:
        found["missing_tmdls"].append(ctx["gaps"][wb])
    skipped = waters.skipped_for(wb) if wb is not None else []
    if skipped:
        name = waters.name_of(wb)
        found["skipped_listings"].append(
            f"outfall {of} discharges to {f'{name} ({wb})' if name else wb}, "
            f"whose 303(d) CSV row(s) could not be read ({skipped_rows_text(skipped)})"
        )
    return found


def _candidates_special(group: pd.DataFrame, ctx: dict[str, Any]) -> dict[str, list[str]]:
    """The special-condition findings of an MS4 row whose network path is ambiguous, from
    its candidate outfalls (``group``: rows of :func:`conditions.candidate_rows`): every
    candidate applies it -> it applies (the reasons say so); none applies it and nothing
    is open on any -> it does not; else it is open (``ambiguous``: the candidates, what
    each gives and the fix), never a confident "no"."""
    per = [_row_special(c["wb"], c["outfall_id"], ctx) for c in group.to_dict("records")]
    ids = [str(x) for x in group["outfall_id"]]
    head = candidates_text(ids)
    applies = [bool(f["pols"]) for f in per]
    open_ = [any(f[k] for k in _OPEN_KEYS) for f in per]
    found: dict[str, list[str]] = {k: [] for k in _ROW_KEYS}
    if all(applies):
        for f in per:
            found["pols"] += f["pols"]
        found["candidate_pols"] += [";".join(f["pols"]) for f in per]
        found["why"].append(
            f"{head}, but every candidate applies it ("
            + "; ".join(dict.fromkeys(w for f in per for w in f["why"]))
            + ")"
        )
    elif any(applies) or any(open_):
        words = []
        for of, ok, unk in zip(ids, applies, open_, strict=True):
            words.append(f"{of}: {'applies' if ok else 'not known' if unk else 'does not apply'}")
        found["ambiguous"].append(f"{head} ({'; '.join(words)})")
    else:
        found["held"].append(f"{head}; the special condition applies on none of them")
    return found


def _four_a_special(
    waters: Waters, sw_by_label: dict[Any, bool | None]
) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """``wb_id -> (pollutants, why, unknown)`` of the category 4a waters whose TMDL the
    layer has (:func:`conditions.four_a_links`): the TMDLs with stormwater a source
    (their pollutants, and "Round Lake (1302-0004), category 4a under the ... TMDL
    watershed (phosphorus; stormwater a source)"), and those whose layer does not say
    (their names as TMDL watersheds)."""
    tm = waters.tmdl_watersheds
    out: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for wb, labels in four_a_links(waters).items():
        pols: list[str] = []
        why: list[str] = []
        unknown: list[str] = []
        name = waters.name_of(wb)
        water = f"{name} ({wb})" if name else wb
        for label in labels:
            t_name = tm.at[label, "name"]
            t_label = tmdl_watershed_label(
                t_name if not is_blank(t_name) else tm.at[label, "tmdl_id"]
            )
            pol = tm.at[label, "pollutant"]
            if sw_by_label.get(label) is True:
                pols.append("" if is_blank(pol) else str(pol))
                why.append(
                    f"{water}, category 4a under the {t_label} "
                    f"({'' if is_blank(pol) else str(pol) + '; '}stormwater a source)"
                )
            elif sw_by_label.get(label) is None:
                unknown.append(t_label)
        out[wb] = ([p for p in pols if p], why, unknown)
    return out


def _tmdl_hits(
    tm: Any,
    keep: list[bool],
    sep: Any,
    outfall_points: dict[str, Any] | None,
    *,
    label: str,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(outfall_id -> labels, parcel_id -> labels)`` of the TMDL watersheds of ``tm``
    selected by ``keep`` that each outfall point or septic parcel intersects; a label is
    the watershed's ``pollutant`` (``"pollutant not given"`` when blank) or, with
    ``label="name"``, its name as a TMDL watershed (its ``tmdl_id`` when it has no
    name)."""
    of_hits: dict[str, list[str]] = {}
    parcel_hits: dict[str, list[str]] = {}
    if tm is None or not any(keep):
        return of_hits, parcel_hits
    sel = tm[np.asarray(keep, dtype=bool)]
    if label == "name":
        names = sel["name"] if "name" in sel.columns else pd.Series([None] * len(sel))
        ids = sel["tmdl_id"] if "tmdl_id" in sel.columns else pd.Series([None] * len(sel))
        labels = np.array(
            [
                tmdl_watershed_label(
                    n if not is_blank(n) else (i if not is_blank(i) else "unnamed")
                )
                for n, i in zip(names, ids, strict=True)
            ],
            dtype=object,
        )
    else:
        # a blank pollutant is said plainly, never as "nan" or "None" (letters read it)
        labels = np.array(
            [_NO_POLLUTANT if is_blank(v) else str(v).strip() for v in sel["pollutant"]],
            dtype=object,
        )
    for of, pt in (outfall_points or {}).items():
        hit = np.flatnonzero(sel.intersects(pt).to_numpy())
        if len(hit):
            of_hits[str(of)] = [str(x) for x in labels[hit]]
    if len(sep):
        pi, ti = sel.sindex.query(sep.geometry.to_numpy(), predicate="intersects")
        pids = sep["parcel_id"].to_numpy()
        for parcel_i, tmdl_i in zip(pi, ti, strict=True):
            parcel_hits.setdefault(pids[parcel_i], []).append(str(labels[tmdl_i]))
    return of_hits, parcel_hits


def _setback_features(
    sep: Any, waters: Waters, conveyances: Any, distance: float
) -> dict[str, str]:
    """``parcel_id -> the first waterbody or open conveyance (ditch, swale, channel)``
    within ``distance`` (CRS units) of any part of the parcel (the 75-A setback)."""
    import geopandas as gpd

    feats = []
    wb = waters.waterbodies
    if "geometry" in getattr(wb, "columns", []) and len(wb):
        feats.append(
            gpd.GeoDataFrame(
                {"fid": ["water " + str(x) for x in wb["wb_id"]]},
                geometry=wb.geometry.to_numpy(),
                crs=wb.crs,
            )
        )
    if conveyances is not None and len(conveyances):
        op = conveyances[conveyances["kind"].isin(("ditch", "swale", "channel"))]
        if len(op):
            feats.append(
                gpd.GeoDataFrame(
                    {"fid": [f"{k} {c}" for k, c in zip(op["kind"], op["conv_id"], strict=True)]},
                    geometry=op.geometry.to_numpy(),
                    crs=op.crs,
                )
            )
    setback: dict[str, str] = {}
    if feats and len(sep):
        allf = pd.concat(feats, ignore_index=True)
        allf = gpd.GeoDataFrame(allf, geometry="geometry", crs=feats[0].crs)
        pi, ti = allf.sindex.query(sep.geometry.to_numpy(), predicate="dwithin", distance=distance)
        pids = sep["parcel_id"].to_numpy()
        fids = allf["fid"].to_numpy()
        for parcel_i, feat_i in zip(pi, ti, strict=True):
            setback.setdefault(pids[parcel_i], fids[feat_i])
    return setback


def _septic_frame(sep: Any, flow: dict[str, Any]) -> Any:
    """The septic parcels' identity and drainage columns: shares, tributary/flagged, the
    main outfall and its receiving water, every outfall, whether the parcel has rows."""
    ids = sep["parcel_id"].to_numpy()
    shares = flow["shares"]
    main, outs = flow["main"], flow["outfalls"]
    out = sep[
        [
            "parcel_id",
            "address",
            "owner",
            "owner_address",
            "prop_class",
            "sewer",
            "septic_source",
            "septic_failure",
            "geometry",
        ]
    ].copy()
    ms4_fr = shares["ms4"].reindex(ids).fillna(0.0).to_numpy()
    unk_fr = shares["unk"].reindex(ids).fillna(0.0).to_numpy()
    has_rows = shares.reindex(ids)["ms4"].notna().to_numpy()
    bad = np.array([pid in flow["bad_rows"] for pid in ids], dtype=bool)
    # tributary: True / False, or not known (<NA>) where none of the runoff is known to
    # enter the MS4 but some of it drains somewhere unknown, the parcel has no rows, or
    # its rows do not cover it (docs/rules.md section 2: unknown data never gives a "no")
    known = (ms4_fr > 1e-9) | (has_rows & (unk_fr <= 1e-9) & ~bad)
    out["tributary"] = pd.array(
        [bool(t) if k else None for t, k in zip(ms4_fr > 1e-9, known, strict=True)],
        dtype="boolean",
    )
    out["flagged"] = ms4_fr > 1e-9
    out["ms4_fraction"] = ms4_fr
    out["direct_fraction"] = shares["dir"].reindex(ids).fillna(0.0).to_numpy()
    out["_internal_fraction"] = shares["int_"].reindex(ids).fillna(0.0).to_numpy()
    out["_unknown_fraction"] = unk_fr
    out["_has_rows"] = has_rows
    out["outfall_id"] = main["outfall_id"].reindex(ids).to_numpy() if len(main) else None
    out["outfalls"] = outs.reindex(ids).to_numpy() if len(outs) else None
    out["receiving_water"] = main["receiving_water"].reindex(ids).to_numpy() if len(main) else None
    out["pwl_id"] = main["pwl_id"].reindex(ids).to_numpy() if len(main) else None
    return out


def _assess_parcel(
    rec: dict[str, Any],
    *,
    pols: list[str],
    why: list[str],
    setback_feature: str | None,
    direct_name: str,
    profile: Profile,
    open_causes: dict[str, list[str]] | None = None,
    candidate_pols: list[str] | None = None,
) -> dict[str, Any]:
    """One septic parcel's special condition, septic pollutant, setback, recorded
    failures, violation, priority, method and reason (:data:`_ASSESSED_COLUMNS`).

    The special condition is ``None`` (not known), never a confident ``False``, for a
    tributary parcel none of whose waters is listed while one of ``open_causes``
    (:func:`_open_causes`, each key the method it gives) holds: a legal layer (the
    303(d) listings or the TMDL watersheds) is missing (``missing_layer``), its drainage
    rows do not cover it (``bad_drainage_rows``: the rest may reach a listed water), an
    outfall it drains through has a receiving water Condition A cannot identify
    (``unknown_receiving_water``), it drains into or lies in a TMDL watershed whose
    layer does not record whether stormwater is a source (``tmdl_unknown``), it drains
    to a category 4a water whose TMDL the layer lacks (``tmdl_missing``) or to a water
    whose 303(d) CSV rows could not be read (``listing_skipped``), or its runoff takes
    an ambiguous network path whose candidate outfalls disagree (``ambiguous_outfall``).
    On an ambiguous path the priority rises for a septic pollutant only when every
    candidate outfall's listed pollutants (``candidate_pols``, ``;``-joined) hold one.
    """
    trib = bool(rec["flagged"])  # the runoff known to enter the MS4 (tributary true)
    pols = list(dict.fromkeys(pols)) if trib else []
    special: bool | None = bool(pols)
    open_causes = {m: list((open_causes or {}).get(m, ())) for m in _OPEN_CAUSES}
    bad_rows = next(iter(open_causes["bad_drainage_rows"]), None)
    if trib and not special and any(open_causes.values()):
        special = None
    septic_pol = bool(special) and any(_is_septic_pollutant(x, profile) for x in pols)
    if septic_pol and candidate_pols:  # an ambiguous path: a septic pollutant on every candidate
        septic_pol = all(
            any(_is_septic_pollutant(x, profile) for x in c.split(";") if x) for c in candidate_pols
        )
    within = setback_feature is not None
    failure = rec["septic_failure"]
    codes = parse_failure_codes(failure)
    violation = bool(trib and codes)
    src = (
        "the sewer attribute says septic"
        if rec["septic_source"] == "sewer_attribute"
        else "improved parcel outside every sewer district (inferred on-site system)"
    )
    if trib:
        score = 5 if violation else 1 + int(bool(special)) + int(septic_pol) + int(within)
        words = _tributary_reason(
            rec,
            src,
            why,
            special=special,
            septic_pol=septic_pol,
            setback_feature=setback_feature,
            codes=codes,
            violation=violation,
            profile=profile,
        )
        if special is None:
            words += _open_special_words(open_causes)
        method = "violation" if violation else _tributary_method(special, open_causes=open_causes)
    else:
        score = 0
        method, words = _not_tributary_reason(rec, src, direct_name, codes, bad_rows)
    return {
        "special_condition": special,
        "listed_pollutants": ", ".join(pols) if pols else None,
        "septic_pollutant": septic_pol,
        "within_setback": within,
        "setback_feature": setback_feature,
        "failure_codes": ";".join(codes) if codes else None,
        "failure_conditions": " ".join(
            FAILURE_CONDITIONS.get(
                c, "Recorded failure of unrecognised kind: " + str(failure) + "."
            )
            for c in codes
        )
        if codes
        else None,
        "violation": violation,
        "priority": score,
        "priority_label": _PRIORITY_LABELS[score],
        "method": method,
        "reason": " ".join(words),
    }


def _is_septic_pollutant(pollutant: str, profile: Profile) -> bool:
    """Whether a listed pollutant is one septic systems produce (the profile's
    ``septic_pollutants``)."""
    key = (pollutant, tuple(profile.septic_pollutants))
    if key not in _SEPTIC_MEMO:
        _SEPTIC_MEMO[key] = pollutant_in(pollutant, profile.septic_pollutants)
    return _SEPTIC_MEMO[key]


_SEPTIC_MEMO: dict[tuple[str, tuple[str, ...]], bool] = {}
