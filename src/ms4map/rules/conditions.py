"""Condition A, B and C determinations (docs/rules.md sections 2 and 3).

The rules are pure functions over a site's drainage rows (the parcel drainage
table's columns: ``target_kind, target_id, fraction, outfall_id, receiving_water,
pwl_id, method, reason``), a :class:`ms4map.waters.Waters` model, a municipality
profile and the user's inputs, so they can be tested on hand-made rows:

- :func:`determine` -> :class:`Determination` for one site;
- :func:`screen_condition_a` -> "would a development here be Condition A?" for
  every parcel of a drainage table, vectorised.

:func:`evaluate_site` and :func:`screen_all` are the workspace-level entry points:
they resolve a site (parcel id(s) or a polygon with its CRS), take its drainage
from the pipeline result, and call the pure rules.

Each condition is ``True``, ``False`` or ``None`` (undetermined: the part of the site
that would decide it drains somewhere unknown), with reasons an officer can put in a
letter, and the citations of the profile.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import DataError, UsageError
from ..core.nulls import is_blank
from ..core.qa import QAReport, shown_ids
from ..core.schema import PATH_COLUMNS, id_text, normalize_pwl_id
from .profiles import EXEMPTION_CODES, Profile, load_profile
from .waters import (
    SKIPPED_ROWS_FIX,
    Waters,
    missing_layer_reason,
    missing_layer_short,
    pollutant_in,
    skipped_rows_text,
)

if TYPE_CHECKING:
    import geopandas as gpd

    from ..io.workspace import Workspace
    from ..pipeline import PipelineResult

__all__ = [
    "DETERMINATION_SCHEMA",
    "DETERMINATION_VERSION",
    "DRAINAGE_COLUMNS",
    "PROJECT_TYPES",
    "SWPPP_BASIC_ITEMS",
    "acres_text",
    "SWPPP_POST_ITEMS",
    "Determination",
    "SiteInfo",
    "combine_parcel_rows",
    "determine",
    "evaluate_site",
    "four_a_gaps",
    "four_a_links",
    "guess_project_type",
    "guess_site_project_type",
    "EXCLUDING_TYPES",
    "screen_all",
    "screen_condition_a",
    "validate_inputs",
]

DETERMINATION_SCHEMA = "ms4map.determination"
#: Version of the JSON document; bump the minor for added fields, the major for changes.
DETERMINATION_VERSION = "1.2"

PROJECT_TYPES = (
    "single_family",
    "agricultural",
    "residential",
    "commercial",
    "industrial",
    "institutional",
    "road",
    "other",
)
DRAINAGE_COLUMNS = (*PATH_COLUMNS, "method", "reason")
TARGET_KINDS = ("inlet", "conveyance", "water_direct", "depression", "off_dem", "unknown")
_MS4_KINDS = ("inlet", "conveyance")
_REACH_KINDS = ("inlet", "conveyance", "water_direct")
_UNKNOWN_KINDS = ("off_dem", "unknown")
_MAX_ACRES = 100_000.0  # larger than any New York town: certainly a typo
_EPS = 1e-9
ACRE_M2 = 4046.8564224

#: The 17 basic SWPPP items (Kiryas Joel SWPPP contents B(1)-(17), NYSDEC model law).
SWPPP_BASIC_ITEMS = (
    "Background information about the scope of the project, including location, type and size",
    "Site map/construction drawing(s) with a general location map, at a scale no smaller than "
    "1 inch = 100 feet",
    "Description of the soil(s) present at the site",
    "Construction phasing plan; not more than five acres disturbed at any one time unless "
    "pursuant to an approved SWPPP",
    "Pollution prevention measures for litter, construction chemicals and debris",
    "Construction and waste materials stored on site, and controls (storage, spill prevention "
    "and response)",
    "Temporary and permanent structural and vegetative measures for soil stabilization, runoff "
    "and sediment control",
    "Site map/construction drawing(s) of the location, size and length of each erosion and "
    "sediment control practice",
    "Dimensions, material specifications and installation details of erosion and sediment "
    "control practices",
    "Temporary practices that will be converted to permanent control measures",
    "Implementation schedule for staging temporary erosion and sediment control practices",
    "Maintenance schedule for the erosion and sediment control practices",
    "Name(s) of the receiving water(s)",
    "Delineation of SWPPP implementation responsibilities for each part of the site",
    "Structural practices to divert flows from exposed soils, store flows or limit runoff",
    "Any existing data that describes the stormwater runoff at the site",
    "Any additional information requested by the Stormwater Management Officer",
)
#: Post-construction items for Conditions A, B and C (SWPPP contents D(2)-(8) as printed).
SWPPP_POST_ITEMS = (
    "Description of each post-construction stormwater management practice",
    "Site map/construction drawing(s) showing the location and size of each post-construction "
    "practice",
    "Hydrologic and hydraulic analysis of all structural components for the design storms",
    "Comparison of post-development stormwater runoff conditions with pre-development conditions",
    "Dimensions, material specifications and installation details of each post-construction "
    "practice",
    "Maintenance schedule for each post-construction practice",
    "Maintenance easements, recorded on the plan, for inspection and repair access",
)


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------
@dataclass
class SiteInfo:
    """What the rules need to know about the site besides its drainage rows.

    Attributes
    ----------
    label : str
        How the determination names the site (parcel ids, "drawn polygon", or
        "polygon from FILE" for a polygon read from a file).
    kind : {"parcels", "polygon", "rows"}
    parcel_ids : list of str
        Parcels of the site (those the polygon overlaps, for a polygon).
    area_acres : float or None
        Site area (for the absurd-acreage check).
    prop_class : str or None
        NY property class of the (dominant) parcel.
    prop_classes : list of str or None
        Property class of every parcel of the site (for the project-type guess, which
        guesses an excluding type only when every parcel has such a class).
    geometry : shapely geometry or None
        The site in the working CRS (TMDL containment, map).
    crs : str or None
    """

    label: str = "site"
    kind: str = "rows"
    parcel_ids: list[str] = field(default_factory=list)
    area_acres: float | None = None
    prop_class: str | None = None
    geometry: Any = None
    crs: str | None = None
    address: str | None = None
    prop_classes: list[str | None] | None = None


#: How messages name the inputs (plain words); the CLI and the app pass their own
#: (``--acres``, "Disturbed acres") through ``labels=``.
INPUT_LABELS = {
    "disturbed_acres": "the disturbed acres",
    "common_plan_acres": "the common plan of development acres",
    "project_type": "the project type",
    "exemption": "the exemption",
}
#: The CLI's options, for ``labels=``.
CLI_LABELS = {
    "disturbed_acres": "--acres",
    "common_plan_acres": "--common-plan-acres",
    "project_type": "--type",
    "exemption": "--exemption",
}


def _labels(labels: dict[str, str] | None) -> dict[str, str]:
    return {**INPUT_LABELS, **(labels or {})}


def _finite_acres(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise UsageError(f"{name} must be a number of acres, got {value!r}.")
    try:
        acres = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number of acres, got {value!r}.") from None
    if not math.isfinite(acres):
        raise UsageError(f"{name} must be a finite number of acres, got {value!r}.")
    if acres < 0:
        raise UsageError(
            f"{name} is {acres:g} acres, a negative area. Fix: give {name} as 0 or more acres."
        )
    if acres > _MAX_ACRES:
        raise UsageError(
            f"{name} is {acres:g} acres, an absurd area (more than {_MAX_ACRES:,.0f} acres). "
            "Fix: give the area in acres, not square feet or square metres."
        )
    return acres


def validate_inputs(
    *,
    disturbed_acres: Any,
    project_type: Any = None,
    common_plan_acres: Any = None,
    exemption: Any = None,
    site_area_acres: float | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Check the user's inputs; return them normalised.

    ``labels`` names the inputs in messages the way the user gave them
    (:data:`CLI_LABELS` for the command line; default :data:`INPUT_LABELS`).

    Raises
    ------
    UsageError
        Negative, non-numeric or absurd acreage (including disturbance larger than the
        site), unknown project type or exemption code; the message lists the allowed values.
    """
    lab = _labels(labels)
    disturbed = _finite_acres(disturbed_acres, lab["disturbed_acres"])
    plan = (
        None
        if common_plan_acres is None
        else _finite_acres(common_plan_acres, lab["common_plan_acres"])
    )
    if (
        site_area_acres is not None
        and site_area_acres > 0
        and disturbed > site_area_acres * 1.1 + 0.05
    ):
        raise UsageError(
            f"{lab['disturbed_acres'][0].upper()}{lab['disturbed_acres'][1:]} ({disturbed:g} acres) "
            f"is larger than the site itself ({site_area_acres:.2f} acres). Fix: give the "
            "acres disturbed within this site, and the whole project's acreage as "
            f"{lab['common_plan_acres']}."
        )
    ptype = None
    if project_type is not None and not is_blank(project_type):
        ptype = str(project_type).strip().lower().replace("-", "_").replace(" ", "_")
        if ptype not in PROJECT_TYPES:
            raise UsageError(
                f"Unknown project type {project_type!r} ({lab['project_type']}): select "
                f"from {list(PROJECT_TYPES)}"
            )
    code = None
    if exemption is not None and not is_blank(exemption):
        code = str(exemption).strip().lower()
        if code in ("none", "no"):
            code = None
        elif code not in EXEMPTION_CODES:
            raise UsageError(
                f"Unknown exemption code {exemption!r} ({lab['exemption']}): select from "
                f"{list(EXEMPTION_CODES)}"
            )
    return {
        "disturbed_acres": disturbed,
        "project_type": ptype,
        "common_plan_acres": plan,
        "exemption": code,
    }


def guess_project_type(prop_class: Any, profile: Profile) -> tuple[str, str]:
    """Default project type from the NY property class (the user overrides it).

    Returns ``(project_type, reason)``.
    """
    if is_blank(prop_class):
        return "other", "no property class on the parcel: project type 'other' assumed"
    pc = str(prop_class).strip()
    if profile.matches_class(pc, profile.single_family_classes):
        return "single_family", f"property class {pc} is a one-family residence"
    if profile.matches_class(pc, profile.agricultural_classes):
        return "agricultural", f"property class {pc} is an agricultural property"
    first = pc[:1]
    table = {"2": "residential", "4": "commercial", "7": "industrial", "6": "institutional"}
    if first in table:
        return table[first], f"property class {pc} ({first}xx) suggests {table[first]}"
    return "other", f"property class {pc} suggests no specific project type: 'other'"


#: Project types that exclude Condition C (a guess must not assume them lightly).
EXCLUDING_TYPES = ("single_family", "agricultural")


def guess_site_project_type(site: SiteInfo, profile: Profile) -> tuple[str, str]:
    """Conservative project-type guess for a whole site.

    ``single_family`` or ``agricultural`` (which exclude Condition C) is guessed only
    when the site is made of parcels that *all* have such a class; a drawn polygon or
    parcels of mixed classes get ``other`` (unless all parcels suggest the same
    non-excluding type).  Returns ``(project_type, reason)``.
    """
    classes = site.prop_classes if site.prop_classes is not None else [site.prop_class]
    classes = classes or [None]
    guesses = [guess_project_type(cls, profile) for cls in classes]
    types = {guess[0] for guess in guesses}
    shown = ", ".join(sorted({"none" if is_blank(cls) else str(cls) for cls in classes}))
    n_parcels = len(classes)
    if len(types) > 1:
        return "other", (
            f"the site's {n_parcels} parcels have mixed property classes ({shown}): "
            "project type 'other' assumed"
        )
    pt = next(iter(types))
    if site.kind == "polygon" and pt in EXCLUDING_TYPES:
        return "other", (
            f"the site is a polygon over {n_parcels} parcel(s) of class {shown}; a drawn site may "
            f"be a new project, so {pt.replace('_', '-')} (which excludes Condition C) is "
            "not assumed: project type 'other'"
        )
    if n_parcels == 1:
        return pt, guesses[0][1]
    return pt, f"all {n_parcels} parcels of the site have class {shown}: {guesses[0][1]}"


# --------------------------------------------------------------------------------------
# Drainage rows
# --------------------------------------------------------------------------------------
def _as_rows(drainage: pd.DataFrame | Iterable[dict[str, Any]]) -> pd.DataFrame:
    df = (
        pd.DataFrame(drainage).copy() if not isinstance(drainage, pd.DataFrame) else drainage.copy()
    )
    for c in DRAINAGE_COLUMNS:
        if c not in df.columns:
            df[c] = None
    bad_kind = sorted({str(k) for k in df["target_kind"] if k not in TARGET_KINDS})
    if bad_kind:
        raise DataError(
            f"Drainage rows have unknown target_kind {bad_kind}; select from {list(TARGET_KINDS)}."
        )
    df["fraction"] = pd.to_numeric(df["fraction"], errors="coerce").fillna(0.0).astype(float)
    if (df["fraction"] < -_EPS).any():
        raise DataError(
            "Drainage rows have negative fractions; fractions are shares of the site's area (0-1)."
        )
    return df


def combine_parcel_rows(
    drainage: pd.DataFrame, parcel_ids: list[str], weights: dict[str, float] | None = None
) -> pd.DataFrame:
    """The drainage rows of several parcels as one site, fractions weighted by area.

    Parameters
    ----------
    drainage : DataFrame
        The parcel drainage table (with ``parcel_id``).
    parcel_ids : list of str
    weights : dict, optional
        ``parcel_id -> area``; equal weights when omitted.
    """
    sub = drainage[drainage["parcel_id"].astype(str).isin([str(p) for p in parcel_ids])].copy()
    if weights is None:
        weights = {str(p): 1.0 for p in parcel_ids}
    total = sum(weights.get(str(p), 0.0) for p in parcel_ids) or 1.0
    sub["fraction"] = sub["fraction"].astype(float) * sub["parcel_id"].astype(str).map(
        lambda p: weights.get(p, 0.0) / total
    )
    keys = ["target_kind", "target_id", "outfall_id", "receiving_water", "pwl_id"]
    for k in keys:
        sub[k] = sub[k].astype(object).where(sub[k].notna(), None)
    out = (
        sub.groupby(keys, dropna=False, sort=False)
        .agg(
            fraction=("fraction", "sum"),
            method=("method", lambda s: ";".join(sorted({str(x) for x in s if not is_blank(x)}))),
            reason=(
                "reason",
                lambda s: " | ".join(dict.fromkeys(str(x) for x in s if not is_blank(x))),
            ),
        )
        .reset_index()
    )
    out = out[list(DRAINAGE_COLUMNS)]
    have = set(sub["parcel_id"].astype(str))
    out.attrs["parcels_without_rows"] = [str(p) for p in parcel_ids if str(p) not in have]
    return out


def _resolve_wb(row: Any, waters: Waters) -> str | None:
    """The receiving water of one drainage row (a dict or Series): :func:`_water_id`."""
    return _water_id(
        row.get("pwl_id"),
        row.get("target_kind"),
        row.get("target_id"),
        row.get("receiving_water"),
        waters,
    )


def summarize_drainage(rows: pd.DataFrame, waters: Waters) -> dict[str, Any]:
    """The drainage part of the determination: fractions, inlets, outfalls, waters."""
    fr = {
        key: float(rows.loc[rows["target_kind"] == key, "fraction"].sum()) for key in TARGET_KINDS
    }
    paths = []
    for row in rows.to_dict("records"):
        paths.append(
            {
                key: (
                    None
                    if is_blank(row.get(key))
                    else (float(row[key]) if key == "fraction" else str(row[key]))
                )
                for key in DRAINAGE_COLUMNS
            }
        )
    inlets = (
        rows[rows["target_kind"].isin(_MS4_KINDS)]
        .groupby("target_id", dropna=False)["fraction"]
        .sum()
    )
    outfalls = []
    ms4 = rows[rows["target_kind"].isin(_MS4_KINDS)].copy()
    if len(ms4):
        ms4["outfall_id"] = ms4["outfall_id"].astype(object).where(ms4["outfall_id"].notna(), None)
        for outfall, group in ms4.groupby("outfall_id", dropna=False, sort=False):
            first = group.iloc[0]
            wb = _resolve_wb(first, waters)
            outfalls.append(
                {
                    "outfall_id": None if is_blank(outfall) else str(outfall),
                    "fraction": float(group["fraction"].sum()),
                    "receiving_water": None
                    if is_blank(first["receiving_water"])
                    else str(first["receiving_water"]),
                    "pwl_id": wb,
                }
            )
    recv: dict[tuple[str | None, str], dict[str, Any]] = {}
    for row in rows[rows["target_kind"].isin(_REACH_KINDS)].to_dict("records"):
        wb = _resolve_wb(row, waters)
        via = "ms4" if row["target_kind"] in _MS4_KINDS else "direct"
        name = None if is_blank(row.get("receiving_water")) else str(row["receiving_water"])
        if name is None and wb:
            name = waters.name_of(wb)
        key = (wb, via)
        entry = recv.setdefault(
            key, {"name": name, "pwl_id": wb, "via": via, "fraction": 0.0, "outfalls": []}
        )
        entry["fraction"] += float(row["fraction"])
        if (
            via == "ms4"
            and not is_blank(row.get("outfall_id"))
            and str(row["outfall_id"]) not in entry["outfalls"]
        ):
            entry["outfalls"].append(str(row["outfall_id"]))
    return {
        "fractions": fr,
        "ms4_fraction": fr["inlet"] + fr["conveyance"],
        "direct_fraction": fr["water_direct"],
        "internal_fraction": fr["depression"],
        "unknown_fraction": fr["off_dem"] + fr["unknown"],
        "inlets": [
            {"target_id": None if is_blank(key) else str(key), "fraction": float(value)}
            for key, value in inlets.items()
        ],
        "outfalls": outfalls,
        "receiving_waters": list(recv.values()),
        "paths": paths,
    }


# --------------------------------------------------------------------------------------
# Condition A: the physics (where the site's runoff goes and what it meets)
# --------------------------------------------------------------------------------------
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


def _counts(pollutant: str, profile: Profile) -> bool:
    if profile.pollutant_reading == "law":
        return True
    return pollutant_in(pollutant, profile.pollutants_of_concern)


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

    The same engine as the batch (:func:`screen_condition_a`): the drainage rows become
    facts (:func:`condition_a_row_facts`, :func:`condition_a_site_facts`) and
    :func:`decide_condition_a` turns the facts into the value and method; this function
    adds the reasons an officer can put in a letter.

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
    incomplete = _incomplete_rows(rows)
    facts = condition_a_row_facts(rows, waters=waters, profile=profile, reach_hits=reach_hits)
    site = condition_a_site_facts(facts.assign(_site="site"), key="_site")
    site = site.reindex(["site"]).fillna(0.0)
    by_wb, unresolved_outfalls, id_problems = _waters_reached(facts)
    impaired, listed_reasons = _listing_entries(by_wb, waters, profile, reach_hits)
    tmdl_out, tmdl_reasons = _tmdl_entries(tmdl_hits, profile)
    missing = list(getattr(waters, "missing", ()) or ())
    value_arr, method_arr = decide_condition_a(
        listed_fraction=site["listed_fraction"].to_numpy(),
        tmdl_hit=np.array([any(t["counts_for_condition_a"] is True for t in tmdl_out)]),
        tmdl_unknown=np.array([any(t["counts_for_condition_a"] is None for t in tmdl_out)]),
        tmdl_missing=site["tmdl_gap_fraction"].to_numpy() > _EPS,
        listing_skipped=site["skipped_fraction"].to_numpy() > _EPS,
        unknown_fraction=site["unknown_fraction"].to_numpy(),
        internal_fraction=site["internal_fraction"].to_numpy(),
        total_fraction=site["total_fraction"].to_numpy(),
        has_rows=np.array([len(rows) > 0]),
        missing=missing,
        bad_rows=np.array([bool(incomplete)]),
    )
    value, method = value_arr[0], str(method_arr[0])
    fr = {k: float(site[k].iloc[0]) for k in site.columns}
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


def _checked_water_id(text: str, column: str, waters: Waters) -> tuple[str | None, str | None]:
    """``(PWL id, problem)`` of one written water id: a PWL ID ``NNNN-NNNN``, or one with
    the ATTAINS prefix (``NY1101-0012`` -> ``1101-0012``), or an id the impairments
    table lists as written; else no id, and the problem in words (docs/rules.md section
    2: an id that names no water must not give a "no")."""
    pwl = normalize_pwl_id(text)
    if pwl is not None:
        return pwl, None
    if len(waters.listings(text)):
        return text, None
    return None, (
        f"{column} {text!r} is not a NYSDEC PWL ID (NNNN-NNNN) and is not in the 303(d) list"
    )


def _water_id_and_problem(
    pwl_id: Any, target_kind: Any, target_id: Any, receiving_water: Any, waters: Waters
) -> tuple[str | None, str | None]:
    """:func:`_water_id` and, when the row names a water by an id that is no PWL ID, the
    problem in words (``None`` otherwise)."""
    given = id_text(pwl_id)
    if given is not None:
        return _checked_water_id(given, "pwl_id", waters)
    if target_kind == "water_direct":
        tid = id_text(target_id)
        if tid is not None:
            return _checked_water_id(tid, "wb_id", waters)
    by_name = waters.wb_id_for_name(receiving_water)
    if by_name is None:
        return None, None
    return _checked_water_id(by_name, "wb_id", waters)


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


def _water_id(
    pwl_id: Any, target_kind: Any, target_id: Any, receiving_water: Any, waters: Waters
) -> str | None:
    """The receiving water (PWL id) of one drainage row: ``pwl_id`` when given; else
    ``target_id`` for a ``water_direct`` row; else the id of the waterbody its
    ``receiving_water`` names, when the name is unique; else ``None``.

    Ids are read stripped; a blank or a null's text (``"<NA>"``, ``"nan"``, ``"NULL"``)
    is no id; ``NY1101-0012`` is the PWL ID ``1101-0012``; an id that is neither a PWL
    ID nor listed in the impairments table is no id either (the row's water is then
    unknown, never "not listed": see :func:`_water_id_and_problem`).
    """
    return _water_id_and_problem(pwl_id, target_kind, target_id, receiving_water, waters)[0]


_WATER_COLUMNS = ("pwl_id", "target_kind", "target_id", "receiving_water")


def _per_water_combo(rows: pd.DataFrame, func: Any) -> pd.Series:
    """``func(pwl_id, target_kind, target_id, receiving_water)`` for each row, called once
    per distinct combination of the four columns."""
    if not len(rows):
        return pd.Series([], index=rows.index, dtype=object)
    codes = np.column_stack([pd.factorize(rows[c].astype(object))[0] for c in _WATER_COLUMNS])
    _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    values = [func(*(rows[c].iat[i] for c in _WATER_COLUMNS)) for i in first.tolist()]
    out = np.asarray(values + [None], dtype=object)[:-1][np.asarray(inverse).ravel()]
    return pd.Series(out, index=rows.index, dtype=object)


def water_ids(rows: pd.DataFrame, waters: Waters) -> pd.Series:
    """The receiving water of each drainage row (:func:`_water_id`), or ``None``.

    Vectorised over the distinct combinations of the four columns it reads, so a
    county's drainage table costs one call per combination.  Rows that reach no water
    get whatever the rule says too (callers look at reaching rows only).
    """
    return _per_water_combo(rows, lambda *cols: _water_id(*cols, waters))


def water_id_problems(rows: pd.DataFrame, waters: Waters) -> pd.Series:
    """For each drainage row, why its written water id gives no water (an id that is
    neither a PWL ID nor in the 303(d) list, :func:`_water_id_and_problem`), or ``None``."""
    return _per_water_combo(rows, lambda *cols: _water_id_and_problem(*cols, waters)[1])


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
    (for such a row, why its written id is no PWL ID: :func:`water_id_problems`).
    """
    out = rows.copy()
    kind = out["target_kind"]
    if "wb" not in out.columns:
        out["wb"] = water_ids(out, waters)
    out["reach"] = kind.isin(_REACH_KINDS)
    out["ms4"] = kind.isin(_MS4_KINDS)
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
    return out


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


#: The sentence of a part reaching a category 4a water whose TMDL the layer lacks.
_TMDL_GAP_FIX = (
    "the `tmdl_watersheds` layer has no TMDL for it, so whether stormwater is a source is "
    "not known (add the TMDL's watershed, with `stormwater_source`, to the "
    "`tmdl_watersheds` layer; its `tmdl_id` the listing's action id)"
)


def condition_a_site_facts(facts: pd.DataFrame, *, key: str) -> pd.DataFrame:
    """Per site (the groups of column ``key``): the shares of its area that reach a counting
    303(d) water (``listed_fraction``), drain somewhere unknown (``unknown_fraction``: off
    the DEM, unmapped, or to a water without a PWL id; ``no_pwl_fraction`` the last part),
    enter the MS4, reach water directly, drain internally, and in all (``total_fraction``).
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
            "total_fraction": fr,
        }
    )
    return parts.groupby(key, sort=False).sum()


def decide_condition_a(
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
) -> tuple[np.ndarray, np.ndarray]:
    """The Condition A rule on the facts of one or many sites: ``(value, method)`` arrays.

    ``True`` when any part reaches a counting 303(d) water (method ``listed_water``) or
    a counting TMDL watershed (``tmdl_watershed``); else ``None`` when the site has no
    drainage (``no_drainage``), bad drainage rows (``bad_drainage_rows``) or a part that
    drains somewhere unknown (``unknown_drainage``) or reaches a TMDL watershed whose
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


# --------------------------------------------------------------------------------------
# The determination
# --------------------------------------------------------------------------------------
@dataclass
class Determination:
    """A Condition A/B/C determination; :meth:`to_dict` is the versioned JSON document.

    ``map_layers`` holds geometries for the report's static map (not in the JSON).
    """

    doc: dict[str, Any]
    map_layers: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getitem__(self, key: str) -> Any:
        return self.doc[key]

    def __repr__(self) -> str:
        doc = self.doc
        conds = doc.get("conditions", {})

        def word(key: str) -> str:
            return {True: "yes", False: "no", None: "undetermined"}.get(
                conds.get(key, {}).get("value"), "?"
            )

        site = doc.get("site", {}).get("label", "?")
        inputs = doc.get("inputs", {})
        swppp = {True: "yes", False: "no"}.get(doc.get("swppp_required", {}).get("value"), "?")
        return (
            f"<Determination site={site!r} acres={inputs.get('effective_acres', '?')} "
            f"A={word('A')} B={word('B')} C={word('C')} SWPPP={swppp}>"
        )

    @property
    def conditions(self) -> dict[str, dict[str, Any]]:
        return self.doc["conditions"]

    @property
    def swppp_required(self) -> bool:
        return bool(self.doc["swppp_required"]["value"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (see ``docs/screening.md``)."""
        return json.loads(json.dumps(self.doc, default=_json_default))

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.doc, default=_json_default, indent=indent)

    def summary(self) -> str:
        """A few lines for a terminal."""
        doc = self.doc

        def word(x: Any) -> str:
            return {True: "yes", False: "no", None: "undetermined"}[x]

        lines = [
            f"Site: {doc['site']['label']} "
            f"({acres_text(doc['inputs']['disturbed_acres'])} acres disturbed"
            + (
                f", common plan {acres_text(doc['inputs']['common_plan_acres'])} acres"
                if doc["inputs"]["common_plan_acres"] is not None
                else ""
            )
            + ")",
            f"Project type: {doc['project_type']['value']} ({doc['project_type']['source']})"
            + ("; confirm it with --type TYPE" if doc["project_type"]["source"] != "user" else ""),
            f"Land development activity: {word(doc['land_development_activity']['value'])}",
            f"Exemption: {doc['exemption']['code'] or 'none'}"
            + (" (exempt from review)" if doc["exemption"]["exempt"] else ""),
        ]
        for key in ("A", "B", "C"):
            cond = doc["conditions"][key]
            lines.append(f"Condition {key}: {word(cond['value'])}")
            lines += [f"    {reason}" for reason in cond["reasons"]]
        lines.append(
            f"SWPPP required: {word(doc['swppp_required']['value'])}"
            + (
                "; with post-construction controls"
                if doc["swppp_items"]["post_construction_required"]
                else ""
            )
        )
        waters = doc["drainage"]["receiving_waters"]
        if waters:
            lines.append(
                "Receiving waters: "
                + "; ".join(
                    f"{water['name'] or '?'} ({water['pwl_id'] or 'no PWL ID'}, {water['via']}, "
                    f"{_pct(water['fraction'])})"
                    for water in waters
                )
            )
        return "\n".join(lines)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, set):
        return sorted(o)
    if o is pd.NA:
        return None
    return str(o)


def _cites(profile: Profile, *rules: str) -> list[dict[str, Any]]:
    out = []
    for r in rules:
        out += [c.to_dict() for c in profile.cite(r)]
    return out


def determine(
    drainage: pd.DataFrame | Iterable[dict[str, Any]],
    *,
    waters: Waters,
    profile: str | Profile | None = None,
    disturbed_acres: float,
    project_type: str | None = None,
    common_plan_acres: float | None = None,
    exemption: str | None = None,
    site: SiteInfo | None = None,
    tmdl_hits: pd.DataFrame | None = None,
    reach_hits: dict[str, set[str]] | None = None,
    provenance: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> Determination:
    """Apply docs/rules.md section 3 to one site: the pure core of :func:`evaluate_site`.

    Parameters
    ----------
    drainage : DataFrame or list of dict
        The site's drainage rows (columns :data:`DRAINAGE_COLUMNS`; fractions of the
        site's area).
    waters : Waters
    profile : str, Path or Profile
    disturbed_acres : float
    project_type : str, optional
        One of :data:`PROJECT_TYPES`; guessed from ``site.prop_class`` when omitted.
    common_plan_acres : float, optional
    exemption : str, optional
        One of :data:`ms4map.profiles.EXEMPTION_CODES`.
    site : SiteInfo, optional
    tmdl_hits, reach_hits : see :func:`condition_a_physics`.
    provenance : dict, optional
        Extra provenance (workspace inputs and hashes) merged into the document's.

    Returns
    -------
    Determination
    """
    prof = load_profile(profile)
    site = site or SiteInfo()
    inp = validate_inputs(
        disturbed_acres=disturbed_acres,
        project_type=project_type,
        common_plan_acres=common_plan_acres,
        exemption=exemption,
        site_area_acres=site.area_acres,
        labels=labels,
    )
    rows = _as_rows(drainage)
    d_ac, plan = inp["disturbed_acres"], inp["common_plan_acres"]
    eff = max(d_ac, plan or 0.0)
    pt, pt_reason, pt_source = decide_project_type(inp["project_type"], site, prof)
    lda, lda_reasons = decide_land_development(d_ac, plan)
    code = inp["exemption"]
    exempt, ex_reasons, ex_cites = decide_exemption(code, eff, pt, prof, pt_source=pt_source)
    applies = lda and not exempt
    why_not = _why_conditions_do_not_apply(exempt)
    phys = condition_a_physics(
        rows, waters=waters, profile=prof, tmdl_hits=tmdl_hits, reach_hits=reach_hits
    )
    a_val, a_reasons = decide_condition_a_for_activity(phys, applies, why_not, prof)
    size = _size_words(d_ac, plan, eff)
    b_val, b_reasons = decide_condition_b(applies, eff, size, why_not)
    c_val, c_reasons = decide_condition_c(
        applies, eff, size, why_not, pt=pt, pt_reason=pt_reason, pt_source=pt_source
    )
    swppp, sw_reasons = decide_swppp(applies, why_not, prof)
    vals = (a_val, b_val, c_val)
    post = (
        True if any(v is True for v in vals) else (None if any(v is None for v in vals) else False)
    )
    drainage_doc = summarize_drainage(rows, waters)
    basic, post_items = _swppp_items(swppp, post, drainage_doc, prof)
    citations = _determination_citations(prof, swppp, post, pt, code) + ex_cites
    prov = _determination_provenance(site, inp, prof, provenance, waters)
    doc = {
        "schema": DETERMINATION_SCHEMA,
        "schema_version": DETERMINATION_VERSION,
        "municipality": prof.municipality,
        "officer_title": prof.officer_title,
        "workspace": None,
        "application": None,
        "site": _site_doc(site),
        "inputs": {
            "disturbed_acres": d_ac,
            "common_plan_acres": plan,
            "effective_acres": eff,
            "project_type": inp["project_type"],
            "exemption": code,
        },
        "project_type": {"value": pt, "source": pt_source, "reason": pt_reason},
        "land_development_activity": {"value": lda, "reasons": lda_reasons},
        "exemption": {"code": code, "exempt": exempt, "reasons": ex_reasons},
        "pollutant_of_concern": _pollutant_doc(prof),
        "conditions": {
            "A": {"value": a_val, "reasons": a_reasons, "method": phys["method"]},
            "B": {"value": b_val, "reasons": b_reasons},
            "C": {"value": c_val, "reasons": c_reasons},
        },
        "swppp_required": {"value": swppp, "reasons": sw_reasons},
        "drainage": drainage_doc,
        "impaired_waters": phys["impaired_waters"],
        "tmdl_watersheds": phys["tmdl_watersheds"],
        "swppp_items": {
            "basic": basic,
            "post_construction": post_items,
            "post_construction_required": post if swppp else False,
        },
        "citations": citations,
        "provenance": prov,
    }
    return Determination(doc=doc)


def decide_project_type(
    given: str | None, site: SiteInfo, profile: Profile
) -> tuple[str, str, str]:
    """The project type: the user's, else guessed from the site's property classes
    (:func:`guess_site_project_type`).  Returns ``(type, reason, source)``."""
    if given is None:
        pt, reason = guess_site_project_type(site, profile)
        return pt, reason, "guessed from property class"
    return given, "given by the user", "user"


def acres_text(acres: float) -> str:
    """Acres as the reasons print them: ``f"{acres:g}"``, unless that rounding lands on a
    whole acre or across one (the law's thresholds, 1 and 5 acres, are whole acres):
    then every digit (``0.99999999``, never ``1`` beside "less than one acre")."""
    x = float(acres)
    short = f"{x:g}"
    r = float(short)
    if r != x and math.isfinite(x) and (r.is_integer() or math.floor(r) != math.floor(x)):
        return repr(x)
    return short


def decide_land_development(disturbed: float, plan: float | None) -> tuple[bool, list[str]]:
    """Whether the activity is a land development activity: one acre or more disturbed,
    or less within a common plan of development or sale of one acre or more.
    Returns ``(value, reasons)``."""
    if disturbed >= 1.0:
        return True, [f"The activity disturbs {acres_text(disturbed)} acres (one acre or more)."]
    if plan is not None and plan >= 1.0:
        return True, [
            f"The activity disturbs {acres_text(disturbed)} acres, less than one acre, but is "
            f"part of a larger common plan of development or sale of {acres_text(plan)} "
            "acres (one acre or more)."
        ]
    return False, [
        f"The activity disturbs {acres_text(disturbed)} acres, less than one acre, and is "
        "not part of a common plan of development or sale of one acre or "
        "more."
        if plan is None
        else f"The activity disturbs {acres_text(disturbed)} acres and its common plan "
        f"{acres_text(plan)} acres, both less than one acre."
    ]


def decide_exemption(
    code: str | None,
    effective_acres: float,
    project_type: str,
    profile: Profile,
    *,
    pt_source: str = "user",
) -> tuple[bool, list[str], list[dict[str, Any]]]:
    """Whether the claimed exemption holds under the profile's law (and its acreage limit).

    ``agricultural_activity`` never covers a project the user typed ``agricultural``
    (``pt_source`` ``"user"``): that type is construction at an agricultural property,
    and the law's agricultural activity excludes "the construction of new structures
    associated with agricultural activities" (farming itself is exempt; building a barn
    is not), so the activity is not exempt and is reviewed (docs/rules.md section 3).
    A type guessed from a farm's property class says nothing of the activity: the
    exemption then holds, with that note.  Returns ``(exempt, reasons, citations)``.
    """
    if code is None:
        return False, ["No exemption claimed."], []
    exempt = False
    reasons: list[str] = []
    cites: list[dict[str, Any]] = []
    cite = profile.exemption_citation(code)
    if cite is not None:
        cites.append(cite.to_dict())
    limit = profile.exemptions.get(code, {}).get("max_acres")
    farm_building = (
        code == "agricultural_activity" and project_type == "agricultural" and pt_source == "user"
    )
    if cite is None:
        reasons.append(
            f"Exemption '{code}' is not in {profile.municipality}'s law: review is required."
        )
    elif limit is not None and effective_acres >= float(limit):
        reasons.append(
            f"Exemption '{code}' covers less than {float(limit):g} acres; "
            f"this activity is {acres_text(effective_acres)} acres: not exempt."
        )
    elif farm_building:
        reasons.append(
            f"Exemption '{code}' does not cover this activity: the project type "
            "'agricultural' is construction at an agricultural property, and agricultural "
            "activity does not include the construction of new structures associated "
            "with it (farming itself is exempt; building a barn is not): not exempt, "
            "review is required. If the activity is farming itself, claim the exemption "
            "without project type 'agricultural'."
        )
    else:
        exempt = True
        reasons.append(f"Exempt from review as '{code}': \"{cite.quote}\"")
    if code == "agricultural_activity" and not farm_building:
        reasons.append(
            "Note: farming itself is exempt; construction of new structures "
            "at a farm (a barn) is not: use project type 'agricultural' "
            "without this exemption for that."
        )
    return exempt, reasons, cites


def _why_conditions_do_not_apply(exempt: bool) -> str:
    """The reason every condition is false when the activity is exempt or not a land
    development activity."""
    return "Conditions apply only to a land development activity that is not exempt: " + (
        "the activity is exempt from review."
        if exempt
        else "this is not a land development activity."
    )


def decide_condition_a_for_activity(
    phys: dict[str, Any], applies: bool, why_not: str, profile: Profile
) -> tuple[bool | None, list[str]]:
    """Condition A for the activity: the drainage answer (:func:`condition_a_physics`)
    when conditions apply, else ``False`` with the drainage answer "for information".
    Returns ``(value, reasons)``."""
    if applies:
        value, reasons = phys["value"], list(phys["reasons"])
    else:
        value = False
        reasons = [why_not] + [f"(For information: {r})" for r in phys["reasons"]]
    if profile.pollutant_reading == "list":
        reasons.append(
            "Pollutant of concern read as the profile's narrowed list: "
            + ", ".join(profile.pollutants_of_concern)
            + "."
        )
    return value, reasons


def _size_words(disturbed: float, plan: float | None, effective: float) -> str:
    """How the reasons of Conditions B and C state the size (the larger of the
    disturbance and the common plan)."""
    if plan is not None and plan > disturbed:
        return (
            f"The site disturbs {acres_text(disturbed)} acres within a {acres_text(plan)}-acre "
            "common plan of development or sale; Conditions B and C look at the larger, "
            f"{acres_text(effective)} acres"
        )
    return f"The activity disturbs {acres_text(effective)} acres"


def decide_condition_b(
    applies: bool, effective_acres: float, size: str, why_not: str
) -> tuple[bool, list[str]]:
    """Condition B: five acres or more.  Returns ``(value, reasons)``."""
    if not applies:
        return False, [why_not]
    if effective_acres >= 5.0:
        return True, [f"{size} (five or more)."]
    return False, [f"{size}, less than five."]


def decide_condition_c(
    applies: bool,
    effective_acres: float,
    size: str,
    why_not: str,
    *,
    pt: str,
    pt_reason: str,
    pt_source: str,
) -> tuple[bool, list[str]]:
    """Condition C: one to five acres, not single-family or agricultural construction
    (a guessed excluding type is named so the officer confirms it).
    Returns ``(value, reasons)``."""
    if not applies:
        return False, [why_not]
    eff = effective_acres
    if eff < 1.0 or eff >= 5.0:
        return False, [
            f"{size}, not between one and five acres"
            + (" (Condition B applies instead)." if eff >= 5.0 else ".")
        ]
    if pt in EXCLUDING_TYPES:
        reasons = [
            "Construction of a single-family residence is excluded from Condition C."
            if pt == "single_family"
            else "Construction activity at an agricultural property is "
            "excluded from Condition C (it is still reviewed)."
        ]
        if pt_source != "user":
            reasons.append(
                f"The project type '{pt}' was guessed, not given ({pt_reason}); this guess "
                "is what removes Condition C. Confirm the project type (ms4map screen "
                "--type TYPE): for any other type Condition C applies."
            )
        return False, reasons
    return True, [
        f"{size}, between one and five, and is {pt.replace('_', ' ')} construction "
        "(not single-family or agricultural)."
    ]


def decide_swppp(applies: bool, why_not: str, profile: Profile) -> tuple[bool, list[str]]:
    """Whether a SWPPP is required: every land development activity not exempt.
    Returns ``(value, reasons)``."""
    if applies:
        return True, [
            f"A land development activity not exempt from review needs a SWPPP "
            f"approved by the {profile.officer_title}."
        ]
    return False, [why_not]


def _swppp_items(
    swppp: bool, post: bool | None, drainage_doc: dict[str, Any], profile: Profile
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The basic SWPPP items (item 13 names the receiving waters) and, unless no
    condition can require them, the post-construction items."""
    recv_names = (
        "; ".join(
            f"{w['name'] or 'unnamed water'} ({w['pwl_id'] or 'no PWL ID'})"
            for w in drainage_doc["receiving_waters"]
        )
        or "none reached"
    )
    basic = []
    if swppp:
        for i, text in enumerate(SWPPP_BASIC_ITEMS, 1):
            item = {"n": i, "text": text}
            if i == 13:
                item["value"] = recv_names
            if i == 17:
                item["text"] = text.replace("Stormwater Management Officer", profile.officer_title)
            basic.append(item)
    post_items = []
    if swppp and post is not False:
        post_items = [
            {"n": i, "text": t, "required": post} for i, t in enumerate(SWPPP_POST_ITEMS, 2)
        ]
    return basic, post_items


def _determination_citations(
    profile: Profile, swppp: bool, post: bool | None, pt: str, code: str | None
) -> list[dict[str, Any]]:
    """The profile's citations of the rules the determination applied."""
    rules = [
        "land_development_activity",
        "exemptions",
        "pollutant_of_concern",
        "condition_a",
        "condition_b",
        "condition_c",
    ]
    if swppp:
        rules += ["swppp_required", "swppp_basic"]
        if post is not False:
            rules.append("swppp_post_construction")
    if pt == "agricultural" or code == "agricultural_activity":
        rules.append("agricultural_activity")
    return _cites(profile, *rules)


def _determination_provenance(
    site: SiteInfo,
    inp: dict[str, Any],
    profile: Profile,
    provenance: dict[str, Any] | None,
    waters: Waters | None = None,
) -> dict[str, Any]:
    """The document's provenance: tool, schema, time, profile, the inputs and their hash,
    the settings, the 303(d) CSV read instead of the workspace's layer and the legal
    layers missing (from ``waters``), and the workspace's provenance when given.

    ``created`` is the local time with its UTC offset (its date is the town's date, as
    the notices and records use).  The workspace's provenance never replaces the
    determination's own ``settings``, ``created``, ``version`` or ``tool``: its values of
    those are kept under ``workspace_provenance``; its inputs are ``workspace_inputs``.
    """
    inputs = {
        "site": site.label,
        "parcel_ids": list(site.parcel_ids),
        "site_kind": site.kind,
        "disturbed_acres": inp["disturbed_acres"],
        "common_plan_acres": inp["common_plan_acres"],
        "project_type": inp["project_type"],
        "exemption": inp["exemption"],
        "profile": profile.name,
    }
    inputs_hash = hashlib.sha256(
        json.dumps(inputs, sort_keys=True, default=str).encode()
    ).hexdigest()
    from ..core.version import __version__

    prov: dict[str, Any] = {
        "tool": "ms4map",
        "version": __version__,
        "schema": DETERMINATION_SCHEMA,
        "schema_version": DETERMINATION_VERSION,
        "created": _dt.datetime.now(_dt.UTC).astimezone().isoformat(timespec="seconds"),
        "profile": profile.summary(),
        "inputs": inputs,
        "inputs_sha256": inputs_hash,
        "settings": {
            "tributary_reach_km": profile.tributary_reach_km,
            "pollutant_reading": profile.pollutant_reading,
        },
    }
    if waters is not None:
        prov["missing_layers"] = list(getattr(waters, "missing", ()) or ())
        csv = _impairments_csv(waters)
        if csv is not None:
            prov["impairments_csv"] = csv
    if provenance:
        own = {k: v for k, v in provenance.items() if k in prov and k != "inputs"}
        for k, v in provenance.items():
            if k not in prov and k != "inputs":
                prov[k] = v
        if own:
            prov["workspace_provenance"] = own
        if "inputs" in provenance:
            prov["workspace_inputs"] = provenance["inputs"]
    return prov


def _impairments_csv(waters: Waters) -> dict[str, Any] | None:
    """``{"path", "sha256"}`` of the 303(d) CSV the listings were read from (an importer's
    ``attrs["source_file"]``: ``--impairments CSV``), else ``None``."""
    src = getattr(waters.impairments, "attrs", {}).get("source_file")
    if not src:
        return None
    from ..io.workspace import file_sha256

    p = Path(src)
    try:
        digest = file_sha256(p)
    except OSError:
        digest = None
    return {"path": str(p.resolve()), "sha256": digest}


def _site_doc(site: SiteInfo) -> dict[str, Any]:
    """The ``site`` part of the document."""
    return {
        "label": site.label,
        "kind": site.kind,
        "parcel_ids": list(site.parcel_ids),
        "area_acres": site.area_acres,
        "address": site.address,
        "prop_class": site.prop_class,
        "crs": site.crs,
        "bounds": (list(site.geometry.bounds) if site.geometry is not None else None),
    }


def _pollutant_doc(profile: Profile) -> dict[str, Any]:
    """The ``pollutant_of_concern`` part of the document: which reading, which pollutants."""
    return {
        "reading": profile.pollutant_reading,
        "pollutants": (
            ["sediment", "any listed cause of impairment of the receiving water"]
            if profile.pollutant_reading == "law"
            else list(profile.pollutants_of_concern)
        ),
        "description": _reading_text(profile),
    }


# --------------------------------------------------------------------------------------
# Workspace level: one site
# --------------------------------------------------------------------------------------
def _crs_unit_m(crs: Any) -> float:
    from ..core.units import metres_per_unit

    return metres_per_unit(crs, default=1.0)


def _run_pipeline(workspace: Workspace) -> PipelineResult:
    from .. import pipeline

    return pipeline.run(workspace)


def _outfall_points(result: PipelineResult, workspace: Workspace | None) -> dict[str, Any]:
    """Outfall id -> point (:func:`ms4map.pipeline.outfall_points`)."""
    from ..pipeline import outfall_points

    return outfall_points(result, workspace)


def tmdl_hits_for(
    waters: Waters, *, site_geom: Any, rows: pd.DataFrame, outfall_points: dict[str, Any]
) -> pd.DataFrame:
    """TMDL watersheds the site reaches: it lies in one, or an outfall or a direct-to-water
    waterbody it drains to does. Adds a ``how`` column (words for the reasons)."""
    tm = waters.tmdl_watersheds
    if tm is None or not len(tm):
        return pd.DataFrame()
    geoms, hows = [], []
    if site_geom is not None:
        geoms.append(site_geom)
        hows.append("lies in")
    for of in sorted(
        {
            str(o)
            for o in rows.loc[rows["target_kind"].isin(_MS4_KINDS), "outfall_id"]
            if not is_blank(o)
        }
    ):
        if of in outfall_points:
            geoms.append(outfall_points[of])
            hows.append(f"drains through outfall {of} into")
    for r in rows[rows["target_kind"] == "water_direct"].to_dict("records"):
        wb = _resolve_wb(r, waters)
        g = waters.waterbody_geometry(wb)
        if g is not None:
            geoms.append(g)
            hows.append(f"drains directly to {waters.name_of(wb) or wb}, in")
    hits = waters.tmdls_hit(geoms)
    hits = pd.DataFrame(hits.drop(columns="geometry", errors="ignore"))
    hits["how"] = [hows[int(i)] for i in hits["hit"]] if len(hits) else []
    links = four_a_links(waters)
    reached = rows[rows["target_kind"].isin(_REACH_KINDS)]
    extra = []
    for wb in dict.fromkeys(w for w in water_ids(reached, waters) if w is not None):
        for label in links.get(wb, []):
            if label in hits.index or any(label in e.index for e in extra):
                continue
            e = pd.DataFrame(tm.loc[[label]].drop(columns="geometry"))
            e["hit"] = -1
            name = waters.name_of(wb)
            e["how"] = f"drains to {f'{name} ({wb})' if name else wb}, category 4a under"
            extra.append(e)
    if extra:
        hits = pd.concat([hits, *extra]) if len(hits) else pd.concat(extra)
    return hits if len(hits) else pd.DataFrame()


def _classes(sel: pd.DataFrame) -> list[str | None]:
    if "prop_class" not in sel.columns:
        return [None] * len(sel)
    return [None if is_blank(v) else str(v) for v in sel["prop_class"]]


def _latlon_box(bounds: Any, crs: Any) -> tuple[float, float, float, float]:
    """``(south, west, north, east)`` in degrees of a bounding box in ``crs``."""
    from pyproj import Transformer

    t = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    x0, y0, x1, y1 = (float(v) for v in bounds)
    lon0, lat0, lon1, lat1 = t.transform_bounds(x0, y0, x1, y1)
    return lat0, lon0, lat1, lon1


def _fmt_lat(v: float) -> str:
    return f"{abs(v):.4f}° {'N' if v >= 0 else 'S'}"


def _fmt_lon(v: float) -> str:
    return f"{abs(v):.4f}° {'E' if v >= 0 else 'W'}"


def _outside_town_message(geom: Any, parcels: Any, crs: Any, src_geom: Any, src_crs: Any) -> str:
    """A polygon that touches no parcel: where it is and where the town is, in lat/long,
    with a hint when swapping its coordinates (latitude/longitude) puts it in town."""
    import geopandas as gpd
    import shapely

    s, w, n, e = _latlon_box(geom.bounds, crs)
    ps, pw, pn, pe = _latlon_box(parcels.total_bounds, crs)
    msg = (
        f"The site polygon lies outside the town: it touches no parcel. The polygon lies at "
        f"{_fmt_lat((s + n) / 2)}, {_fmt_lon((w + e) / 2)}; the town's parcels lie between "
        f"{_fmt_lat(ps)} and {_fmt_lat(pn)}, {_fmt_lon(pw)} and {_fmt_lon(pe)}."
    )
    try:
        swapped = shapely.transform(src_geom, lambda xy: xy[:, ::-1])
        sw = gpd.GeoSeries([swapped], crs=src_crs).to_crs(crs).iloc[0]
        hit = sw.is_valid and len(parcels.sindex.query(sw, predicate="intersects")) > 0
    except Exception:  # noqa: BLE001 - a hint only: a swap outside the CRS's range
        hit = False
    if hit:
        return msg + (
            " With its two coordinates swapped it lies in the town: the corners look like "
            "longitude, latitude. Fix: give each corner as 'latitude, longitude' (the "
            f"latitude first, e.g. {(ps + pn) / 2:.5f}, {(pw + pe) / 2:.5f} in this town)."
        )
    return msg + " Fix: check the polygon's corners and their coordinate system."


def _resolve_site(
    site: Any, workspace: Workspace, result: PipelineResult, *, site_crs: Any = None
) -> tuple[SiteInfo, pd.DataFrame, Any]:
    import geopandas as gpd
    from shapely.geometry.base import BaseGeometry

    parcels = workspace.layers.get("parcels")
    if parcels is None or not len(parcels):
        raise DataError(
            "The workspace has no parcels layer; a site needs parcels to be "
            "located. Fix: add a 'parcels' layer to the workspace."
        )
    unit = _crs_unit_m(workspace.crs)
    drainage = getattr(result, "drainage", None)
    if isinstance(site, (str, list, tuple)) and not isinstance(site, BaseGeometry):
        ids = (
            [s.strip() for s in site.split(",")]
            if isinstance(site, str)
            else [str(s).strip() for s in site]
        )
        ids = [i for i in ids if i]
        if not ids:
            raise UsageError("No parcel id given for the site.")
        known = set(parcels["parcel_id"].astype(str))
        unknown = [i for i in ids if i not in known]
        if unknown:
            import difflib

            hints = {u: difflib.get_close_matches(u, list(known), n=3) for u in unknown}
            hint = "; ".join(
                f"{u!r} (did you mean {', '.join(h)}?)" if h else repr(u) for u, h in hints.items()
            )
            raise DataError(
                f"Unknown parcel id(s) in layer 'parcels': {hint}. Fix: use the "
                "parcel_id (SBL / print key) as in the parcels layer."
            )
        sel = parcels[parcels["parcel_id"].astype(str).isin(ids)]
        areas = dict(
            zip(sel["parcel_id"].astype(str), sel.geometry.area * unit * unit, strict=True)
        )
        geom = sel.geometry.union_all()
        if drainage is None:
            raise DataError("The pipeline result has no drainage table.")
        rows = combine_parcel_rows(drainage, ids, areas)
        dom = sel.iloc[int(np.argmax(sel.geometry.area.to_numpy()))]
        info = _site_info(
            ", ".join(ids),
            "parcels",
            ids,
            float(sum(areas.values()) / ACRE_M2),
            dom=dom,
            sel=sel,
            geometry=geom,
            workspace=workspace,
        )
        return info, rows, sel
    # polygon
    label = "drawn polygon"
    src = getattr(site, "attrs", {}).get("source_name") if hasattr(site, "attrs") else None
    if src:
        label = f"polygon from {src}"
    if isinstance(site, (gpd.GeoDataFrame, gpd.GeoSeries)):
        if site.crs is None:
            raise DataError(
                "The site polygon has no CRS. Fix: set it (e.g. "
                "gdf.set_crs('EPSG:26918')) or pass site_crs=."
            )
        src_geom, src_crs = (
            (site.geometry.union_all() if isinstance(site, gpd.GeoDataFrame) else site.union_all()),
            site.crs,
        )
        geom = gpd.GeoSeries([src_geom], crs=src_crs).to_crs(workspace.crs).iloc[0]
    elif isinstance(site, BaseGeometry):
        if site_crs is None:
            raise DataError(
                "The site polygon has no CRS. Fix: pass site_crs= (e.g. "
                "'EPSG:26918'), or give a GeoSeries with its CRS."
            )
        src_geom, src_crs = site, site_crs
        geom = gpd.GeoSeries([site], crs=site_crs).to_crs(workspace.crs).iloc[0]
    else:
        raise UsageError(
            f"site must be a parcel id, a list of parcel ids or a polygon with "
            f"its CRS; got {type(site).__name__}."
        )
    if geom is None or geom.is_empty or geom.geom_type not in ("Polygon", "MultiPolygon"):
        raise DataError(f"The site must be a polygon; got {getattr(geom, 'geom_type', geom)}.")
    if not geom.is_valid:
        import shapely

        geom = shapely.make_valid(geom)
    idx = parcels.sindex.query(geom, predicate="intersects")
    if not len(idx):
        raise DataError(_outside_town_message(geom, parcels, workspace.crs, src_geom, src_crs))
    sel, inter = _overlapping_parcels(parcels.iloc[idx], geom, unit)
    from .. import drainage as _drainage

    rows = _as_rows(_drainage.polygon_drainage(result, geom))
    dom = sel.iloc[int(np.argmax(inter))]
    info = _site_info(
        label,
        "polygon",
        [str(p) for p in sel["parcel_id"]],
        float(geom.area * unit * unit / ACRE_M2),
        dom=dom,
        sel=sel,
        geometry=geom,
        workspace=workspace,
    )
    return info, rows, sel


#: A drawn polygon's parcels: overlap of more than this many square metres ...
SITE_OVERLAP_MIN_M2 = 1.0
#: ... and at least this share of the parcel's area or of the polygon's.
SITE_OVERLAP_MIN_SHARE = 0.01


def _overlapping_parcels(cand: Any, geom: Any, unit: float) -> tuple[Any, np.ndarray]:
    """The parcels of ``cand`` (those the polygon ``geom`` intersects) that the polygon
    overlaps by area, and the overlap areas (CRS units).

    A parcel is the site's when the overlap is more than :data:`SITE_OVERLAP_MIN_M2`
    (1 m2) and at least :data:`SITE_OVERLAP_MIN_SHARE` (1 %) of the parcel's area or of
    the polygon's: a neighbour touching it along an edge or at a corner, or under a
    sliver of a boundary drawn a little wide, is not; a small site inside a large farm
    parcel is.  When no parcel passes, those with any overlap are kept, and when none
    has any (a polygon between parcels, touching them), those it touches
    (docs/screening.md).
    """
    area = cand.geometry.area.to_numpy()
    inter = cand.geometry.intersection(geom).area.to_numpy()
    m2 = inter * unit * unit
    share = np.maximum(
        np.divide(inter, area, out=np.zeros_like(inter), where=area > 0),
        inter / geom.area if geom.area > 0 else 0.0,
    )
    keep = (m2 > SITE_OVERLAP_MIN_M2) & (share >= SITE_OVERLAP_MIN_SHARE)
    if not keep.any():
        keep = inter > 0
    if not keep.any():
        keep = np.ones(len(cand), dtype=bool)
    return cand[keep], inter[keep]


def _site_info(
    label: str,
    kind: str,
    parcel_ids: list[str],
    area_acres: float,
    *,
    dom: Any,
    sel: Any,
    geometry: Any,
    workspace: Workspace,
) -> SiteInfo:
    """The :class:`SiteInfo` of a resolved site; ``dom`` is its dominant parcel (class and
    address), ``sel`` all its parcels."""
    return SiteInfo(
        label=label,
        kind=kind,
        parcel_ids=parcel_ids,
        area_acres=area_acres,
        prop_class=None if is_blank(dom.get("prop_class")) else str(dom["prop_class"]),
        geometry=geometry,
        crs=workspace.crs.to_string(),
        address=None if is_blank(dom.get("address")) else str(dom["address"]),
        prop_classes=_classes(sel),
    )


def _reach_hits(
    rows: pd.DataFrame, waters: Waters, profile: Profile, crs: Any
) -> dict[str, set[str]]:
    """``receiving wb_id -> listed wb_ids within tributary_reach_km`` for the waters the
    rows reach (empty when the profile's ``tributary_reach_km`` is 0)."""
    if profile.tributary_reach_km <= 0:
        return {}
    dist = profile.tributary_reach_km * 1000.0 / _crs_unit_m(crs)
    reach = rows["target_kind"].isin(_REACH_KINDS)
    wbs = rows["wb"] if "wb" in rows.columns else water_ids(rows, waters)
    out: dict[str, set[str]] = {}
    for wb in dict.fromkeys(wbs[reach].dropna().tolist()):
        g = waters.waterbody_geometry(wb)
        if wb and g is not None:
            # waters whose 303(d) CSV rows could not be read count as "may be listed"
            near_skipped = waters.waters_within(g, dist, set(waters.skipped) - {""})
            out[wb] = waters.listed_within(g, dist) | near_skipped
    return out


def _map_layers(
    info: SiteInfo,
    rows: pd.DataFrame,
    result: PipelineResult,
    workspace: Workspace,
    *,
    waters: Waters,
    outfall_points: dict[str, Any],
) -> dict[str, Any]:
    """Geometries for the static map: site, inlets, traced paths, outfalls, waters."""
    layers: dict[str, Any] = {"site": info.geometry, "crs": workspace.crs}
    wdd = getattr(result, "where_does_it_drain", None)
    if wdd is not None and info.geometry is not None:
        try:
            layers["surface_path"] = wdd(info.geometry.representative_point()).get("geometry")
        except Exception:  # noqa: BLE001 - the map is a courtesy; a failed path is omitted
            layers["surface_path"] = None
    net = getattr(result, "network", None)
    inlet_pts, paths, inlet_ids = [], [], []
    ms4 = rows[rows["target_kind"].isin(_MS4_KINDS)]
    for tid in dict.fromkeys(str(t) for t in ms4["target_id"] if not is_blank(t)):
        if net is not None:
            try:
                from ..network import trace_downstream

                tr = trace_downstream(net, tid)
                if tr.geometry is not None and not tr.geometry.is_empty:
                    paths.append(tr.geometry)
            except Exception:  # noqa: BLE001 - the map is a courtesy; a failed trace is omitted
                pass
            nodes = getattr(net, "nodes", None)
            if nodes is not None and tid in nodes.index:
                inlet_pts.append(nodes.loc[tid].geometry)
                inlet_ids.append(tid)
    layers["inlets"] = inlet_pts
    layers["inlet_ids"] = inlet_ids
    layers["paths"] = paths
    of_ids = [
        o
        for o in dict.fromkeys(str(x) for x in ms4["outfall_id"] if not is_blank(x))
        if o in outfall_points
    ]
    layers["outfalls"] = [outfall_points[o] for o in of_ids]
    layers["outfall_ids"] = of_ids
    layers["site_label"] = info.label
    wbs = []
    for r in rows[rows["target_kind"].isin(_REACH_KINDS)].to_dict("records"):
        g = waters.waterbody_geometry(_resolve_wb(r, waters))
        if g is not None:
            wbs.append(g)
    layers["waters"] = wbs
    return layers


#: The application fields a planner files with the determination (all optional text;
#: ``date`` is an ISO date ``YYYY-MM-DD``).
APPLICATION_FIELDS = ("applicant", "project_name", "application_number", "date")


def application_info(application: dict[str, Any] | None) -> dict[str, Any] | None:
    """Validate the application fields (:data:`APPLICATION_FIELDS`); ``None`` when empty.

    Raises
    ------
    UsageError
        An unknown field, or a date that is not ``YYYY-MM-DD``.
    """
    if not application:
        return None
    bad = [k for k in application if k not in APPLICATION_FIELDS]
    if bad:
        raise UsageError(
            f"Unknown application field(s) {bad}: select from {list(APPLICATION_FIELDS)}."
        )
    out: dict[str, Any] = {}
    for k in APPLICATION_FIELDS:
        v = application.get(k)
        if isinstance(v, _dt.date):
            v = v.isoformat()
        text = None if v is None else " ".join(str(v).split()) or None
        if k == "date" and text is not None:
            try:
                text = _dt.date.fromisoformat(text).isoformat()
            except ValueError:
                raise UsageError(
                    f"Application date {text!r} is not a date: give it as YYYY-MM-DD "
                    "(e.g. 2026-03-15)."
                ) from None
        out[k] = text
    return out if any(v is not None for v in out.values()) else None


def evaluate_site(
    site: Any,
    *,
    disturbed_acres: float,
    project_type: str | None = None,
    common_plan_acres: float | None = None,
    exemption: str | None = None,
    workspace: Workspace,
    profile: str | Profile | None = "stillwater",
    result: PipelineResult | None = None,
    site_crs: Any = None,
    waters: Waters | None = None,
    labels: dict[str, str] | None = None,
    application: dict[str, Any] | None = None,
) -> Determination:
    """Condition A/B/C determination for one site of a workspace.

    Parameters
    ----------
    site : str, list of str, shapely Polygon, GeoSeries or GeoDataFrame
        A parcel id (``"a,b"`` for several), a list of parcel ids, or a polygon with
        its CRS (a GeoSeries/GeoDataFrame carries it; a bare shapely polygon needs
        ``site_crs``).
    disturbed_acres : float
    project_type : str, optional
        One of :data:`PROJECT_TYPES`; guessed from the parcel's property class if omitted.
    common_plan_acres : float, optional
        Acreage of the larger common plan of development or sale.
    exemption : str, optional
        One of :data:`ms4map.profiles.EXEMPTION_CODES`.
    workspace : Workspace
    profile : str, Path or Profile
        Municipality profile (default ``stillwater``).
    result : PipelineResult, optional
        Reuse a pipeline run (else ``ms4map.pipeline.run(workspace)``, cached).
    site_crs : CRS-like, optional
        CRS of a bare shapely polygon.
    waters : Waters, optional
        Replace the workspace's impaired-waters model (e.g. after a CSV import).
    labels : dict, optional
        How messages name the inputs (:data:`CLI_LABELS` for the command line, the
        app's field names in the app); default plain words (:data:`INPUT_LABELS`).
    application : dict, optional
        Applicant, project name, application number and date for the printed
        determination (:data:`APPLICATION_FIELDS`; see :func:`application_info`).

    Returns
    -------
    Determination

    Raises
    ------
    UsageError
        Bad acreage, project type or exemption code.
    DataError
        Unknown parcel id, polygon outside the town or without a CRS.
    """
    prof = load_profile(profile)
    validate_inputs(
        disturbed_acres=disturbed_acres,
        project_type=project_type,
        common_plan_acres=common_plan_acres,
        exemption=exemption,
        labels=labels,
    )
    app_info = application_info(application)
    if result is None:
        result = _run_pipeline(workspace)
    info, rows, _sel = _resolve_site(site, workspace, result, site_crs=site_crs)
    waters = waters or Waters.from_workspace(workspace)
    of_pts = _outfall_points(result, workspace)
    hits = tmdl_hits_for(waters, site_geom=info.geometry, rows=rows, outfall_points=of_pts)
    det = determine(
        rows,
        waters=waters,
        profile=prof,
        disturbed_acres=disturbed_acres,
        project_type=project_type,
        common_plan_acres=common_plan_acres,
        exemption=exemption,
        site=info,
        tmdl_hits=hits,
        reach_hits=_reach_hits(rows, waters, prof, workspace.crs),
        provenance=workspace.provenance(profile=prof.name),
        labels=labels,
    )
    det.map_layers = _map_layers(
        info, rows, result, workspace, waters=waters, outfall_points=of_pts
    )
    wpath = getattr(workspace, "path", None)
    det.doc["workspace"] = {
        "name": Path(wpath).name if wpath else "in-memory workspace",
        "path": str(wpath) if wpath else None,
    }
    det.doc["application"] = app_info
    return det


# --------------------------------------------------------------------------------------
# Batch: "would a development here be Condition A?" for every parcel
# --------------------------------------------------------------------------------------
SCREENING_COLUMNS = (
    "parcel_id",
    "condition_a",
    "condition_a_text",
    "method",
    "reason",
    "receiving_waters",
    "listed_waters",
    "pollutants",
    "tmdls",
    "ms4_fraction",
    "direct_fraction",
    "internal_fraction",
    "unknown_fraction",
)


def join_unique(keys: pd.Series, values: pd.Series, *, sep: str = ";") -> pd.Series:
    """``sep``-joined distinct values per key, in order of appearance (fast when most keys
    have one value: only the others go through Python)."""
    df = pd.DataFrame({"k": keys.to_numpy(), "v": values.astype(str).to_numpy()})
    df = df.drop_duplicates()
    dup = df["k"].duplicated(keep=False).to_numpy()
    single = df[~dup].set_index("k")["v"]
    joined: dict[Any, str] = {}
    for k, v in zip(
        df["k"].to_numpy(dtype=object)[dup].tolist(),
        df["v"].to_numpy(dtype=object)[dup].tolist(),
        strict=True,
    ):
        joined[k] = joined[k] + sep + v if k in joined else v
    multi = pd.Series(joined, dtype=object)
    return pd.concat([single.astype(object), multi])


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


def screen_condition_a(
    drainage: pd.DataFrame,
    *,
    waters: Waters,
    profile: str | Profile | None = None,
    parcels: Any = None,
    outfall_points: dict[str, Any] | None = None,
    crs: Any = None,
) -> pd.DataFrame:
    """For every parcel: would a land development activity here be Condition A?

    Vectorised over the whole drainage table, and the same engine as one site's
    (:func:`condition_a_physics`): the rows become facts (:func:`condition_a_row_facts`,
    :func:`condition_a_site_facts`) and :func:`decide_condition_a` decides.  A parcel is
    Condition A when any part of it drains to a 303(d) water listed for a pollutant of
    concern (or, with ``tributary_reach_km``, near one), or it lies in or drains to a TMDL
    watershed with stormwater as a source; undetermined when the rest drains somewhere
    unknown.

    Parameters
    ----------
    drainage : DataFrame
        The parcel drainage table.
    waters : Waters
    profile : str, Path or Profile
    parcels : GeoDataFrame, optional
        Parcels (for "lies in a TMDL watershed", and to report parcels with no rows).
    outfall_points : dict, optional
        ``outfall_id -> Point`` (for "drains through an outfall into a TMDL watershed").
    crs : CRS-like, optional
        The working CRS (for ``tributary_reach_km``; default the waterbodies' CRS).

    Returns
    -------
    DataFrame
        :data:`SCREENING_COLUMNS`, one row per parcel; ``condition_a`` is a nullable
        boolean.  Bad drainage rows are QA warnings ``bad_drainage_rows`` in
        ``frame.attrs["qa"]`` (a :class:`ms4map.qa.QAReport`) and their parcels come out
        undetermined; the other parcels are screened.
    """
    prof = load_profile(profile)
    table = _screening_drainage(drainage)
    bad_parcels, qa = _bad_drainage_rows(table)
    good = table[~table["parcel_id"].isin(bad_parcels)].copy()
    good["wb"] = water_ids(good, waters)
    reach_hits = _reach_hits(good, waters, prof, crs if crs is not None else waters.crs)
    facts = condition_a_row_facts(good, waters=waters, profile=prof, reach_hits=reach_hits)
    tmdls = _counting_tmdls(waters, prof)
    links = four_a_links(waters)
    tmdl_names = _tmdl_names_by_row(facts, tmdls, outfall_points, waters, links=links)
    facts["row_reason"] = _batch_row_reasons(facts, tmdl_names, waters, prof)
    in_tmdl = _parcels_in_tmdl(parcels, tmdls)
    site = condition_a_site_facts(facts, key="parcel_id")
    site["tmdl_hit"] = tmdl_names.notna().groupby(facts["parcel_id"], sort=False).any()
    unknown_tmdls = _unknown_tmdls(waters, prof)
    in_unknown: dict[str, str] = {}
    if unknown_tmdls is not None and len(unknown_tmdls):
        unk_names = _tmdl_names_by_row(facts, unknown_tmdls, outfall_points, waters, links=links)
        site["tmdl_unknown"] = unk_names.notna().groupby(facts["parcel_id"], sort=False).any()
        in_unknown = _parcels_in_tmdl(parcels, unknown_tmdls)
    else:
        site["tmdl_unknown"] = False
    for col, text in (("tmdl_gap", "tmdl_gap_text"), ("listing_skipped", "skipped_text")):
        sel = facts[col].notna()
        site[text] = (
            join_unique(facts.loc[sel, "parcel_id"], facts.loc[sel, col], sep="; ")
            if sel.any()
            else None
        )
    all_ids = list(dict.fromkeys([*site.index, *sorted(bad_parcels)]))
    if parcels is not None and len(parcels):
        all_ids = list(dict.fromkeys([*parcels["parcel_id"].astype(str), *all_ids]))
    has_rows = site.index.to_series().reindex(all_ids).notna().to_numpy()
    site = site.reindex(all_ids)
    ids = np.asarray(all_ids, dtype=object)
    tm_in = np.array([p in in_tmdl for p in ids], dtype=bool)
    missing = list(getattr(waters, "missing", ()) or ())
    value, method = decide_condition_a(
        listed_fraction=site["listed_fraction"].fillna(0).to_numpy(),
        tmdl_hit=site["tmdl_hit"].fillna(False).to_numpy(dtype=bool) | tm_in,
        unknown_fraction=site["unknown_fraction"].fillna(0).to_numpy(),
        internal_fraction=site["internal_fraction"].fillna(0).to_numpy(),
        total_fraction=site["total_fraction"].fillna(0).to_numpy(),
        has_rows=has_rows,
        missing=missing,
        bad_rows=np.array([p in bad_parcels for p in ids], dtype=bool),
        tmdl_unknown=site["tmdl_unknown"].fillna(False).to_numpy(dtype=bool)
        | np.array([p in in_unknown for p in ids], dtype=bool),
        tmdl_missing=site["tmdl_gap_fraction"].fillna(0).to_numpy() > _EPS,
        listing_skipped=site["skipped_fraction"].fillna(0).to_numpy() > _EPS,
    )
    out = _screening_columns(facts, site, all_ids, _counting_pollutants(waters, prof))
    out["reason"] = _batch_reasons(
        out, site, value, method, in_tmdl=in_tmdl, has_rows=has_rows, missing=missing
    )
    out["condition_a"] = pd.array(value, dtype="boolean")
    is_true = np.array([v is True for v in value], dtype=bool)
    is_false = np.array([v is False for v in value], dtype=bool)
    out["condition_a_text"] = np.where(is_true, "yes", np.where(is_false, "no", "undetermined"))
    out["method"] = method
    out["tmdls"] = [in_tmdl.get(p) for p in ids]
    out = out.reset_index().rename(columns={"index": "parcel_id"})
    out = out[list(SCREENING_COLUMNS)]
    out.attrs["qa"] = qa
    out.attrs["pollutant_reading"] = prof.pollutant_reading
    out.attrs["missing_layers"] = missing
    return out


def _screening_drainage(drainage: pd.DataFrame) -> pd.DataFrame:
    """The drainage table with every column the screening reads, ids as text and
    fractions as numbers (NaN where not a number)."""
    table = drainage.copy()
    for c in ("parcel_id", *DRAINAGE_COLUMNS):
        if c not in table.columns:
            table[c] = None
    table["parcel_id"] = table["parcel_id"].astype(str)
    table["fraction"] = pd.to_numeric(table["fraction"], errors="coerce")
    return table


def _bad_drainage_rows(table: pd.DataFrame) -> tuple[set[str], QAReport]:
    """Parcels whose drainage rows cannot be screened (unknown ``target_kind``, missing or
    negative fraction, fractions not summing to 1), each reported as a QA warning
    ``bad_drainage_rows`` (layer ``drainage``, the parcel as feature) saying what is
    wrong (the first 200 parcels; one more finding counts the rest)."""
    qa = QAReport()
    bad = (
        (~table["target_kind"].isin(TARGET_KINDS))
        | table["fraction"].isna()
        | (table["fraction"] < -_EPS)
    )
    sums = table.groupby("parcel_id")["fraction"].sum()
    bad_sum = sums[(sums - 1.0).abs() > 0.01].index
    bad_parcels = set(table.loc[bad, "parcel_id"]) | set(bad_sum)
    for pid in sorted(bad_parcels)[:200]:
        sub = table[table["parcel_id"] == pid]
        why = []
        if (~sub["target_kind"].isin(TARGET_KINDS)).any():
            kinds = sorted(set(sub["target_kind"].astype(str)) - set(TARGET_KINDS))
            why.append(f"unknown target_kind {kinds}")
        if sub["fraction"].isna().any() or (sub["fraction"] < -_EPS).any():
            why.append("missing or negative fraction")
        if pid in bad_sum:
            why.append(f"fractions sum to {sums[pid]:.3f}, not 1")
        qa.warning(
            "bad_drainage_rows",
            "drainage",
            f"parcel {pid}: " + "; ".join(why),
            feature_id=pid,
            step="screening",
        )
    if len(bad_parcels) > 200:
        qa.warning(
            "bad_drainage_rows",
            "drainage",
            f"... and {len(bad_parcels) - 200} more parcels with bad rows",
            step="screening",
            count=len(bad_parcels) - 200,
        )
    return bad_parcels, qa


def _tmdl_names_by_row(
    facts: pd.DataFrame,
    tmdls: Any,
    outfall_points: dict[str, Any] | None,
    waters: Waters,
    *,
    links: dict[str, list[Any]] | None = None,
) -> pd.Series:
    """For each row that drains into one of the TMDL watersheds ``tmdls`` (through an
    outfall inside it, directly to a waterbody in it, or to a category 4a water whose
    TMDL it is: ``links``, :func:`four_a_links`): the watershed's name (else its id);
    else NaN."""
    names = pd.Series(np.nan, index=facts.index, dtype=object)
    if tmdls is None or not len(tmdls):
        return names
    label = tmdls["name"].astype(object).where(tmdls["name"].notna(), tmdls["tmdl_id"])
    by_outfall: dict[str, str] = {}
    for of, pt in (outfall_points or {}).items():
        hit = tmdls.intersects(pt)
        if hit.any():
            by_outfall[str(of)] = str(label[hit].iloc[0])
    direct = facts["target_kind"] == "water_direct"
    by_water: dict[str, str] = {}
    for w in set(facts.loc[direct, "wb"].dropna()):
        g = waters.waterbody_geometry(w)
        if g is not None:
            hit = tmdls.intersects(g)
            if hit.any():
                by_water[str(w)] = str(label[hit].iloc[0])
    via_outfall = facts["outfall_id"].astype(str).map(by_outfall).where(facts["ms4"])
    via_water = facts["wb"].astype(str).map(by_water).where(direct)
    found = via_outfall.where(via_outfall.notna(), via_water)
    by_listing = {
        wb: str(label[labels[0]])
        for wb, ls in (links or {}).items()
        if (labels := [x for x in ls if x in tmdls.index])
    }
    if by_listing:
        via_listing = facts["wb"].map(by_listing).where(facts["reach"])
        found = found.where(found.notna(), via_listing)
    return found.astype(object)


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


def _counting_pollutants(waters: Waters, profile: Profile) -> dict[str, str]:
    """``wb_id -> "PCBs, phosphorus"``: the counting 303(d) pollutants of each water."""
    listings = _counting_listings(waters, profile)
    if not len(listings):
        return {}
    return (
        listings.groupby("wb_id")["pollutant"].agg(lambda s: ", ".join(dict.fromkeys(s))).to_dict()
    )


def _parcels_in_tmdl(parcels: Any, tmdls: Any) -> dict[str, str]:
    """``parcel_id -> TMDL name`` for parcels lying in a counting TMDL watershed."""
    in_tmdl: dict[str, str] = {}
    if parcels is None or not len(parcels) or tmdls is None or not len(tmdls):
        return in_tmdl
    pi, ti = tmdls.sindex.query(parcels.geometry.to_numpy(), predicate="intersects")
    if len(pi):
        pids = parcels["parcel_id"].astype(str).to_numpy()[pi]
        names = (
            tmdls["name"]
            .astype(object)
            .where(tmdls["name"].notna(), tmdls["tmdl_id"])
            .astype(str)
            .to_numpy()[ti]
        )
        for p, n in zip(pids, names, strict=True):
            in_tmdl.setdefault(p, n)
    return in_tmdl


def _screening_columns(
    facts: pd.DataFrame, site: pd.DataFrame, all_ids: list[str], pol_by_wb: dict[str, str]
) -> pd.DataFrame:
    """The per-parcel columns of the screening table: fractions, receiving and listed
    waters, pollutants, the first triggering row's reason, the outfalls without a PWL id."""
    out = pd.DataFrame(index=pd.Index(all_ids))
    out["ms4_fraction"] = site["ms4_fraction"]
    out["direct_fraction"] = site["direct_fraction"]
    out["internal_fraction"] = site["internal_fraction"]
    out["unknown_fraction"] = site["unknown_fraction"]
    pid = facts["parcel_id"]
    recv = facts[facts["reach"] & facts["wb"].notna()]
    out["receiving_waters"] = join_unique(recv["parcel_id"], recv["wb"]).reindex(out.index)
    hit = facts.loc[facts["listed_wbs"].notna(), ["parcel_id", "listed_wbs"]]
    hit = hit.assign(listed=hit["listed_wbs"].str.split(";")).explode("listed")
    out["listed_waters"] = join_unique(hit["parcel_id"], hit["listed"]).reindex(out.index)
    pols = hit["listed"].map(pol_by_wb)
    out["pollutants"] = join_unique(hit["parcel_id"], pols, sep="; ").reindex(out.index)
    nopwl = facts[facts["no_pwl"] & facts["ms4"] & facts["outfall_id"].notna()]
    out["no_pwl_outfalls"] = join_unique(nopwl["parcel_id"], nopwl["outfall_id"], sep=", ").reindex(
        out.index
    )
    bad_id = facts[facts["id_problem"].notna()]
    where = (
        bad_id["outfall_id"]
        .astype(object)
        .where(bad_id["outfall_id"].notna(), bad_id["receiving_water"])
    )
    out["id_problems"] = join_unique(
        bad_id["parcel_id"], where.astype(str) + ": " + bad_id["id_problem"].astype(str), sep="; "
    ).reindex(out.index)
    first = facts.dropna(subset=["row_reason"]).groupby(pid, sort=False)["row_reason"].first()
    out["reason"] = first.reindex(out.index)
    return out


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
    if missing:
        # never a confident "no" while a legal layer is missing (as for one site)
        lacks = "; ".join(missing_layer_short(m) for m in missing)
        for i in np.flatnonzero(method == "missing_layer"):
            reason[i] = f"undetermined: {lacks}; with the layers present, {reason[i]}"
        for i in np.flatnonzero(und):
            reason[i] = f"{reason[i]}; also {lacks}"
    return reason


def screen_all(
    result: PipelineResult,
    *,
    profile: str | Profile | None = "stillwater",
    workspace: Workspace | None = None,
    waters: Waters | None = None,
) -> gpd.GeoDataFrame:
    """Batch screening of every parcel (layer ``screening``): a GeoDataFrame.

    Parameters
    ----------
    result : PipelineResult
        Its ``drainage`` table is screened.
    profile : str, Path or Profile
    workspace : Workspace, optional
        Parcels, waters and outfalls (defaults to ``result.workspace``).
    waters : Waters, optional
    """
    import geopandas as gpd

    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    if ws is None:
        raise UsageError("screen_all needs the workspace: pass workspace=.")
    parcels = ws.layers["parcels"]
    waters = waters or Waters.from_workspace(ws)
    tab = screen_condition_a(
        result.drainage,
        waters=waters,
        profile=profile,
        parcels=parcels,
        outfall_points=_outfall_points(result, ws),
        crs=ws.crs,
    )
    keep = [
        c for c in ("parcel_id", "address", "owner", "prop_class", "acres") if c in parcels.columns
    ]
    base = parcels[keep + ["geometry"]].copy()
    base["parcel_id"] = base["parcel_id"].astype(str)
    merged = base.merge(tab, on="parcel_id", how="left")
    gdf = gpd.GeoDataFrame(merged, geometry="geometry", crs=parcels.crs)
    gdf.attrs.update(tab.attrs)
    return gdf
