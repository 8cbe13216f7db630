"""The determination of one site: determine, with B, C, exemption, SWPPP, citations, provenance.

:func:`determine` applies docs/rules.md section 3 to one site's drainage rows and the
user's inputs; Condition A comes from the one engine (:mod:`.condition_a`) with its
reasons (:mod:`.reasons`); the answer is a :class:`.document.Determination`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ...core.version import __version__
from ...io import file_sha256
from ..profiles import Profile, load_profile
from ..waters import Waters
from .document import DETERMINATION_SCHEMA, DETERMINATION_VERSION, Determination
from .inputs import (
    EXCLUDING_TYPES,
    SWPPP_BASIC_ITEMS,
    SWPPP_POST_ITEMS,
    Inputs,
    SiteInfo,
    acres_text,
    guess_site_project_type,
    validate_inputs,
)
from .reasons import _reading_text, condition_a_physics
from .summary import _as_rows, summarize_drainage


def _cites(profile: Profile, *rules: str) -> list[dict[str, Any]]:
    out = []
    for r in rules:
        out += [c.to_dict() for c in profile.cite(r)]
    return out


def determine(  # noqa: PLR0913 - a public entry point's inputs
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
    d_ac, plan = inp.disturbed_acres, inp.common_plan_acres
    eff = max(d_ac, plan or 0.0)
    pt, pt_reason, pt_source = decide_project_type(inp.project_type, site, prof)
    lda, lda_reasons = decide_land_development(d_ac, plan)
    code = inp.exemption
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
            "project_type": inp.project_type,
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
    inp: Inputs,
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
        "disturbed_acres": inp.disturbed_acres,
        "common_plan_acres": inp.common_plan_acres,
        "project_type": inp.project_type,
        "exemption": inp.exemption,
        "profile": profile.name,
    }
    inputs_hash = hashlib.sha256(
        json.dumps(inputs, sort_keys=True, default=str).encode()
    ).hexdigest()
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
