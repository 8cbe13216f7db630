"""The words of the septic layer: why a parcel is (not) flagged and why its special condition is open.

:func:`undetermined_causes` counts the open special conditions of a septic layer by
cause (for ``ms4map screen --all`` and the app's Septic page); the other functions
write each parcel's ``method`` and ``reason`` for :func:`.assess._assess_parcel`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...core.nulls import is_blank
from ..conditions.condition_a import AMBIGUOUS_FIX
from ..profiles import Profile
from ..waters import SKIPPED_ROWS_FIX, missing_layer_reason

__all__ = ["undetermined_causes"]


def undetermined_causes(
    septic: Any, *, missing_layers: Iterable[str] | None = None
) -> list[tuple[int, str]]:
    """Why the special condition of flagged parcels of a septic layer is not determined:
    ``(parcels, cause)`` per ``method`` (``missing_layer``, ``unknown_receiving_water``,
    ``tmdl_unknown``, ``tmdl_missing``, ``bad_drainage_rows``,
    ``drainage_partly_unknown``, ``ambiguous_outfall``, ``listing_skipped``), in that order, for the summaries of ``ms4map screen --all`` and
    the app's Septic page (each parcel's ``reason`` names its layer, outfalls or TMDL
    watersheds, and the fix).

    ``missing_layers`` are the legal layers the workspace lacks
    (:attr:`.SepticFlags.missing_layers`); by default the layer's
    ``attrs["missing_layers"]`` (the frame of :func:`.flag_septic`)."""
    if not len(septic) or "special_condition" not in septic.columns:
        return []
    open_ = septic["special_condition"].isna().to_numpy(dtype=bool, copy=True)
    if "flagged" in septic.columns:
        open_ &= septic["flagged"].fillna(False).to_numpy(dtype=bool)
    methods = septic["method"].to_numpy(dtype=object)[open_]
    if missing_layers is None:
        missing_layers = getattr(septic, "attrs", {}).get("missing_layers", []) or []
    missing = list(missing_layers)
    causes = {
        "missing_layer": "the workspace has no "
        + (" or ".join(f"`{m}`" for m in missing) or "legal")
        + " layer (303(d) listings or TMDL watersheds)",
        "unknown_receiving_water": "an outfall they drain through has no PWL ID and no "
        "`receiving_water` naming one waterbody",
        "tmdl_unknown": "a TMDL watershed they drain into or lie in does not record "
        "whether stormwater is a source",
        "tmdl_missing": "a category 4a water they drain to has no TMDL in the "
        "`tmdl_watersheds` layer",
        "bad_drainage_rows": "their drainage rows are incomplete",
        "drainage_partly_unknown": "part of their runoff drains off the DEM or over DEM nodata",
        "ambiguous_outfall": "the storm network cannot tell which of several outfalls takes "
        "their runoff, and the candidates give different answers",
        "listing_skipped": "a water they drain to has 303(d) CSV rows that could not be read",
    }
    out = []
    for method, cause in causes.items():
        n = int((methods == method).sum())
        if n:
            out.append((n, cause))
    return out


#: Why a tributary parcel's special condition may be open: each key is the method it
#: gives, in the order the method names the first (:func:`_tributary_method`).
_OPEN_CAUSES = (
    "missing_layer",
    "bad_drainage_rows",
    "drainage_partly_unknown",
    "ambiguous_outfall",
    "unknown_receiving_water",
    "tmdl_unknown",
    "tmdl_missing",
    "listing_skipped",
)


def _open_causes(
    pid: str,
    missing: list[str],
    special: dict[str, dict[str, list[str]]],
    bad_rows: dict[str, str],
    *,
    unknown_share: float = 0.0,
) -> dict[str, list[str]]:
    """The open causes of parcel ``pid`` (:data:`_OPEN_CAUSES`): the missing legal
    layers, what is wrong with its drainage rows (``bad_rows``), the share of its runoff
    whose way is not known (off the DEM, DEM nodata: ``unknown_share``; as for
    Condition A, that part may reach a listed water), and its unknown outfalls, unknown
    and missing TMDLs and skipped 303(d) rows (``special``, from
    :func:`_special_conditions`)."""
    return {
        "missing_layer": list(missing),
        "bad_drainage_rows": [bad_rows[pid]] if pid in bad_rows else [],
        "drainage_partly_unknown": [f"{unknown_share:.0%}"] if unknown_share > 1e-9 else [],
        "ambiguous_outfall": list(dict.fromkeys(special.get("ambiguous", {}).get(pid, []))),
        "unknown_receiving_water": list(special["unknown_outfalls"].get(pid, [])),
        "tmdl_unknown": list(dict.fromkeys(special["unknown_tmdls"].get(pid, []))),
        "tmdl_missing": list(dict.fromkeys(special["missing_tmdls"].get(pid, []))),
        "listing_skipped": list(dict.fromkeys(special["skipped_listings"].get(pid, []))),
    }


def _tributary_method(special: bool | None, *, open_causes: dict[str, list[str]]) -> str:
    """The method of a tributary parcel: ``special_condition``, ``tributary``, or for a
    special condition not known the first cause of ``open_causes`` that holds
    (``missing_layer``, ``bad_drainage_rows``, ``drainage_partly_unknown``,
    ``ambiguous_outfall``, ``unknown_receiving_water``,
    ``tmdl_unknown``, ``tmdl_missing``, ``listing_skipped``: see :func:`_assess_parcel`).
    """
    if special is None:
        # never a confident "no" while a legal layer, the parcel's drainage, a receiving
        # water, a TMDL's stormwater source or a 303(d) listing is not known
        return next((m for m, what in open_causes.items() if what), "tmdl_missing")
    return "special_condition" if special else "tributary"


def _open_special_words(open_causes: dict[str, list[str]]) -> list[str]:
    """The sentences of a special condition not determined: each open cause of
    :func:`_assess_parcel`, with its fix."""
    words = ["Special condition not determined:"]
    words += [missing_layer_reason(layer) for layer in open_causes["missing_layer"]]
    for what in open_causes["bad_drainage_rows"]:
        words.append(
            f"the parcel's drainage rows are incomplete ({what}), so the rest of its runoff "
            "may reach a listed water (run the drainage step again for it)."
        )
    for share in open_causes["drainage_partly_unknown"]:
        words.append(
            f"{share} of its runoff drains off the DEM or where the DEM has no data, so it "
            "may reach a listed water (cut the town's DEM with a wider margin, or fill its "
            "holes)."
        )
    for what in open_causes.get("ambiguous_outfall", []):
        words.append(
            f"{what}: the candidate outfalls give different answers, so the special "
            f"condition is not known (a wrong outfall is worse than none; {AMBIGUOUS_FIX})."
        )
    unknown_outfalls = open_causes["unknown_receiving_water"]
    if unknown_outfalls:
        named = [o for o in unknown_outfalls if o != "?"]
        words.append(
            "the receiving water of "
            + (f"outfall(s) {', '.join(named)}" if named else "the parcel's outfall")
            + " has no PWL ID and no `receiving_water` naming exactly one waterbody "
            "(fill `pwl_id` or `receiving_water` in the `outfalls` layer)."
        )
    if open_causes["tmdl_unknown"]:
        words.append(
            f"the {' and the '.join(open_causes['tmdl_unknown'])} it drains into or lies in "
            "does not record whether stormwater is a source (fill "
            "`stormwater_source` in the `tmdl_watersheds` layer)."
        )
    if open_causes["tmdl_missing"]:
        words.append(
            f"it drains to {'; '.join(open_causes['tmdl_missing'])}, but the "
            "`tmdl_watersheds` layer has no TMDL for it (add the TMDL's watershed, with "
            "`stormwater_source`, to the `tmdl_watersheds` layer; its `tmdl_id` the "
            "listing's action id)."
        )
    if open_causes["listing_skipped"]:
        words.append(
            f"{'; '.join(open_causes['listing_skipped'])}, so whether that water is "
            f"303(d)-listed is not known ({SKIPPED_ROWS_FIX})."
        )
    return words


def _tributary_reason(
    rec: dict[str, Any],
    src: str,
    why: list[str],
    *,
    special: bool | None,
    septic_pol: bool,
    setback_feature: str | None,
    codes: list[str],
    violation: bool,
    profile: Profile,
) -> list[str]:
    """The reason of a parcel whose runoff enters the MS4: the share and outfall, the
    special condition, what raised its priority, the violation."""
    of = rec["outfall_id"]
    words = [
        f"On-site system ({src}); {rec['ms4_fraction'] * 100:.0f}% of the parcel's runoff "
        f"enters the MS4" + (f" and leaves through outfall {of}" if not is_blank(of) else "") + "."
    ]
    if special:
        words.append("Special condition: " + "; ".join(dict.fromkeys(why)) + ".")
    if septic_pol:
        words.append("Priority raised: the listed pollutant is one septic systems produce.")
    if setback_feature is not None:
        words.append(
            f"Priority raised: within {profile.setback_ft:g} ft of "
            f"{setback_feature} (10 NYCRR Appendix 75-A separation)."
        )
    if violation:
        words.append(f"Violation: recorded failure condition(s) {', '.join(codes)} of 174-6.")
    return words


def _not_tributary_reason(
    rec: dict[str, Any], src: str, direct_name: str, codes: list[str], bad_rows: str | None = None
) -> tuple[str, list[str]]:
    """``(method, reason words)`` of a parcel none of whose runoff is known to enter the
    MS4: no drainage rows, rows that do not cover it (``bad_rows``, what is wrong with
    them) or a share draining somewhere unknown (whether it is tributary is then not
    known: ``tributary`` <NA>), else direct to water or internally drained (not
    tributary)."""
    unknown = rec["_unknown_fraction"]
    if rec["_has_rows"] and bad_rows:
        method = "bad_drainage_rows"
        words = [
            f"On-site system ({src}), but the parcel's drainage rows are incomplete "
            f"({bad_rows}) and none of the runoff they give enters the MS4: whether it is "
            "tributary to the MS4 is not known (run the drainage step again for it); "
            "not flagged."
        ]
    elif not rec["_has_rows"]:
        method = "no_drainage"
        words = [
            f"On-site system ({src}), but the parcel has no rows in the drainage "
            "table: whether it is tributary to the MS4 is not known; not flagged."
        ]
    elif unknown > 1e-9:
        method = "unknown_drainage"
        direct = rec["direct_fraction"]
        words = [
            f"On-site system ({src}); {unknown * 100:.0f}% of its runoff drains somewhere "
            "unknown (off the DEM or unmapped)"
            + (f" and {direct * 100:.0f}% reaches {direct_name} directly" if direct > 1e-9 else "")
            + ", and none is known to enter the MS4: whether it is tributary to the MS4 "
            "is not known; not flagged."
        ]
    elif rec["direct_fraction"] > 1e-9:
        method = "direct_to_water"
        words = [
            f"On-site system ({src}); its runoff reaches "
            f"{direct_name} directly without entering the MS4: not "
            "tributary to the MS4, not flagged."
        ]
    else:
        method = "internally_drained"
        words = [
            f"On-site system ({src}); the parcel is internally drained: not "
            "tributary to the MS4, not flagged."
        ]
    if codes:
        words.append(
            "A failure condition is recorded, but 174-6 covers areas tributary "
            "to the MS4 only: refer it to the county health department."
        )
    return method, words
