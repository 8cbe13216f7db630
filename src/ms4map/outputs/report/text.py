"""The report's wording: what the HTML and PDF reports say about a determination, and which items they print first.

Both reports read the determination's JSON document (``Determination.to_dict()``);
the waters, listings, outfalls and TMDL watersheds that count for Condition A are
printed first and never left out.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.schema import LEGAL_LAYERS
from ...rules.conditions import acres_text
from ...rules.conditions.reasons import tmdl_watershed_label
from ...rules.waters import missing_layer_reason

if TYPE_CHECKING:
    from ...rules.conditions import Determination

    #: A determination, or its JSON document (``Determination.to_dict()``).
    DeterminationLike = Determination | Mapping[str, Any]

__all__ = ["model_law_note"]


_YN = {True: "Yes", False: "No", None: "Undetermined"}


def _doc(det: DeterminationLike) -> dict[str, Any]:
    return det.to_dict() if hasattr(det, "to_dict") else dict(det)


def _short(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters at a word boundary, with an ellipsis."""
    if len(text) <= n:
        return text
    cut = text[: n - 1]
    if " " in cut and not text[n - 1].isspace():
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-(") + "…"


#: The drainage fractions in words.
_FRACTION_WORDS = {
    "inlet": "enters storm sewer inlets",
    "conveyance": "enters MS4 ditches or pipes directly",
    "water_direct": "reaches a water directly",
    "depression": "ends in closed depressions (internally drained)",
    "off_dem": "lies or flows outside the elevation model (unknown)",
    "unknown": "drains somewhere unmapped (unknown)",
}


def _fraction_text(fr: dict[str, float]) -> str:
    """``"100% of the site enters storm sewer inlets"`` (largest first)."""
    parts = [
        f"{v * 100:.0f}% {_FRACTION_WORDS.get(k, k.replace('_', ' '))}"
        for k, v in sorted(fr.items(), key=lambda kv: -kv[1])
        if v > 0
    ]
    if not parts:
        return "no drainage known"
    return "Of the site's area, " + "; ".join(parts) + "."


_RULE_WORDS = {
    "land_development_activity": "the definition of a land development activity",
    "pollutant_of_concern": "the definition of a pollutant of concern",
    "condition_a": "Condition A",
    "condition_b": "Condition B",
    "condition_c": "Condition C",
    "swppp_required": "the SWPPP requirement",
    "swppp_basic": "the SWPPP contents",
    "swppp_post_construction": "the post-construction SWPPP contents",
}


def model_law_note(d: dict[str, Any]) -> str | None:
    """One plain sentence when rules are quoted from the model law printed in another
    town's chapter (because the town's own text on file lacks them); else ``None``."""
    borrowed = [
        c
        for c in d.get("citations", [])
        if "model local law" in str(c.get("law", "")) and "as printed in" in str(c.get("law", ""))
    ]
    if not borrowed:
        return None
    m = re.search(r"as printed in the ([^,)]+)", str(borrowed[0]["law"]))
    source = f", as printed in the {m.group(1).strip()}" if m else ""
    rules = list(
        dict.fromkeys(_RULE_WORDS.get(c.get("rule"), str(c.get("rule"))) for c in borrowed)
    )
    listed = rules[0] if len(rules) == 1 else ", ".join(rules[:-1]) + " and " + rules[-1]
    return (
        f"The copy of {d.get('municipality') or 'the town'}'s law on file does not print "
        f"{listed}, so those are quoted from the NYSDEC model local law{source}."
    )


def _application_line(d: dict[str, Any]) -> list[tuple[str, str | None]]:
    app = d.get("application") or {}
    return [
        ("Applicant", app.get("applicant")),
        ("Project", app.get("project_name")),
        ("Application no.", app.get("application_number")),
        ("Application date", app.get("date")),
    ]


def _screened_on(prov: dict[str, Any]) -> str:
    """The local date of the screening (``YYYY-MM-DD``), as the notices and records date.

    ``created`` carries the local UTC offset; a document that recorded UTC (``+00:00``,
    as before) is turned into this machine's local date."""
    text = str(prov.get("created") or "")
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return text[:10]
    if t.tzinfo is not None and t.utcoffset() == dt.timedelta(0):
        t = t.astimezone()
    return t.date().isoformat()


def _impairments_csv_name(prov: dict[str, Any]) -> str | None:
    """The file name of the 303(d) CSV read instead of the workspace's layer, if any."""
    csv = prov.get("impairments_csv") or {}
    return Path(str(csv["path"])).name if csv.get("path") else None


def _prepared_line(d: dict[str, Any]) -> str:
    prov = d["provenance"]
    csv = _impairments_csv_name(prov)
    return (
        f"Screened on {_screened_on(prov)} from the GIS data in {_workspace_name(d)}"
        + (f" and the 303(d) list in {csv}" if csv else "")
        + f", under the {prov['profile']['name']} rules."
    )


def _sources_text(prov: dict[str, Any]) -> str:
    """``"; 303(d) list out.csv sha256 0123456789abcdef…"`` for the provenance line."""
    csv = prov.get("impairments_csv") or {}
    if not csv.get("path"):
        return ""
    digest = csv.get("sha256")
    return f"; 303(d) list {csv['path']} sha256 " + (
        f"{digest[:16]}…" if digest else "not recorded (file unreadable)"
    )


def _workspace_name(d: dict[str, Any]) -> str:
    ws = d.get("workspace") or {}
    if ws.get("name"):
        return str(ws["name"])
    inputs = (d.get("provenance") or {}).get("workspace_inputs") or {}
    names = [Path(p).name for p in inputs]
    return names[0] if names else "not recorded"


#: How many of the items that do not count for Condition A the PDF prints (every item
#: that counts is printed): receiving waters, listings, TMDL watersheds, reasons.
_PDF_LIMITS = {"waters": 6, "listings": 6, "tmdls": 3, "reasons": 4, "ids": 12}


def _more(n: int, what: str = "") -> str:
    """What the page says where it leaves ``n`` items out."""
    return f"and {n} more{' ' + what if what else ''} (see the JSON document)"


def _a_open(d: dict[str, Any]) -> bool:
    """Condition A is yes or undetermined: some waters count for it."""
    return d["conditions"]["A"]["value"] is not False


def _counting_ids(d: dict[str, Any]) -> set[str]:
    """PWL ids of the receiving waters whose own listing, or a listed water within the
    profile's tributary reach of them, counts for Condition A."""
    ids: set[str] = set()
    for i in d.get("impaired_waters", []):
        if i.get("counts_for_condition_a"):
            m = re.search(r" of (\S+) \(profile tributary_reach_km\)$", str(i.get("relation")))
            ids.add(m.group(1) if m else str(i.get("pwl_id")))
    return ids


def _water_counts(d: dict[str, Any], pwl_id: Any, ids: set[str]) -> bool:
    """Does the water ``pwl_id`` make Condition A yes or undetermined?  A listed water
    that counts, a water without a PWL ID, one Condition A's reasons name, or any water
    while the 303(d) list is missing."""
    if not _a_open(d):
        return False
    if not pwl_id or str(pwl_id) in ids or "impairments" in _missing_layers(d):
        return True
    return f"({pwl_id})" in " ".join(d["conditions"]["A"]["reasons"])


def _counting_first(items: list[Any], counts: Any) -> tuple[list[Any], list[Any]]:
    """``items`` split into those that ``counts(item)`` and the rest (order kept)."""
    yes = [i for i in items if counts(i)]
    return yes, [i for i in items if not counts(i)]


def _shown(items: list[Any], counts: Any, limit: int | None) -> tuple[list[Any], int]:
    """The items to print, those that count first and never cut, then the others up to
    ``limit`` items in all (``None``: all); and how many are left out."""
    yes, no = _counting_first(items, counts)
    if limit is None:
        return yes + no, 0
    rest = no[: max(0, limit - len(yes))]
    return yes + rest, len(no) - len(rest)


def _receiving_waters(d: dict[str, Any], limit: int | None = None) -> tuple[list[dict], int]:
    """The receiving waters to print (those that count for Condition A first, never
    left out) and how many others are left out."""
    ids = _counting_ids(d)
    return _shown(
        d["drainage"]["receiving_waters"], lambda w: _water_counts(d, w.get("pwl_id"), ids), limit
    )


def _listings(d: dict[str, Any], limit: int | None = None) -> tuple[list[dict], int]:
    """The 303(d) listings to print (those that count first, never left out)."""
    return _shown(d["impaired_waters"], lambda i: bool(i.get("counts_for_condition_a")), limit)


def _tmdl_watersheds(d: dict[str, Any], limit: int | None = None) -> tuple[list[dict], int]:
    """The TMDL watersheds to print (those that count or may count first, never left out)."""
    return _shown(
        d["tmdl_watersheds"], lambda t: t.get("counts_for_condition_a") is not False, limit
    )


def _missing_layers(d: dict[str, Any]) -> list[str]:
    """The legal layers the determination was made without (``provenance.missing_layers``;
    for an older document, those Condition A's reasons name as missing)."""
    prov = d.get("provenance") or {}
    if "missing_layers" in prov:
        return list(prov["missing_layers"] or [])
    reasons = d["conditions"]["A"]["reasons"]
    return [m for m in LEGAL_LAYERS if missing_layer_reason(m) in reasons]


def _missing_layer_notes(d: dict[str, Any]) -> list[str]:
    """One sentence per missing 303(d) or TMDL layer: what is therefore not known."""
    notes = {
        "impairments": "The 303(d) list (layer `impairments`) is missing, so whether the "
        "waters reached are impaired is not known (add the `impairments` layer or pass "
        "--impairments CSV).",
        "tmdl_watersheds": "The TMDL watersheds (layer `tmdl_watersheds`) are missing, so "
        "whether the site lies in or drains to a TMDL watershed is not known (add the "
        "`tmdl_watersheds` layer, an empty one when the town has none).",
    }
    return [notes[m] for m in _missing_layers(d) if m in notes]


def _id_list(items: list[dict[str, Any]], key: str, limit: int = 12) -> str:
    parts = [f"{i[key]} ({i['fraction'] * 100:.0f}%)" for i in items[:limit]]
    if len(items) > limit:
        parts.append(_more(len(items) - limit))
    return ", ".join(parts)


def _drainage_lines(d: dict[str, Any]) -> list[str]:
    """Inlet and outfall ids with the share of the site that reaches each (the outfalls
    to waters that count for Condition A first, never left out)."""
    dr = d["drainage"]
    out = []
    if dr.get("inlets"):
        out.append("Inlets: " + _id_list(dr["inlets"], "target_id"))
    if dr.get("outfalls"):
        ids = _counting_ids(d)
        ofs, more = _shown(
            dr["outfalls"], lambda o: _water_counts(d, o.get("pwl_id"), ids), _PDF_LIMITS["ids"]
        )
        out.append(
            "Outfalls: "
            + ", ".join(_outfall_words(o) for o in ofs)
            + (", " + _more(more) if more else "")
        )
    return out


def _outfall_words(o: dict[str, Any]) -> str:
    """One outfall of the drainage summary in words: ``OF-1 (60%) to Mill Creek
    (1302-0001)``; an ambiguous path (no outfall named) ``ambiguous, OF-1 or OF-2
    (40%): outfall undetermined`` (with the water when every candidate has the same)."""
    share = f"({o['fraction'] * 100:.0f}%)"
    water = f" to {o.get('receiving_water') or 'unnamed water'} ({o.get('pwl_id') or 'no PWL ID'})"
    cands = o.get("candidates") or []
    if not cands:
        return f"{o['outfall_id']} {share}{water}"
    same = water if o.get("receiving_water") or o.get("pwl_id") else ""
    return (
        f"ambiguous, {' or '.join(cands)} {share}: the evidence cannot tell which takes the "
        f"flow, outfall undetermined" + (f"; every candidate{same}" if same else "")
    )


def _tmdl_name(t: dict[str, Any]) -> str:
    return tmdl_watershed_label(t.get("name") or t.get("tmdl_id"))


def _acres(x: float) -> str:
    """Acres as the reasons print them (never rounded onto or across a whole acre)."""
    return acres_text(x)


def _counts_word(value: bool | None) -> str:
    """Whether an impairment or TMDL watershed counts for Condition A, in words."""
    return {True: "counts", False: "does not count", None: "not known whether it counts"}[
        None if value is None else bool(value)
    ]
