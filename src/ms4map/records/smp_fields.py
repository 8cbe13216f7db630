"""The SMP inventory's data: the practice kinds of the NYS Stormwater Management Design Manual and the fields of the SMP tables.

The kinds are the practices the New York State Stormwater Management Design Manual
(NYSDEC, January 2015) accepts: the runoff-reduction (green infrastructure) practices of
its Chapter 5 and the standard SMPs of its Chapter 6, in their five families (ponds
P-1 to P-5, wetlands W-1 to W-4, infiltration I-1 to I-4, filtering F-1 to F-6 and open
channels O-1 and O-2).  A kind is written as its code (``P-2``, ``F-5``) or, for a
runoff-reduction practice, its word (``rain_garden``); :func:`check_kind` accepts the
code in any case and the practice's name.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import DataError
from .fields import Field

__all__ = [
    "DRAINAGE_METHODS",
    "INSPECTION_KINDS",
    "MANUAL_CITATION",
    "SMP_CONDITIONS",
    "SMP_FIELDS",
    "SMP_INSPECTION_FIELDS",
    "SMP_KINDS",
    "SMP_MAINTENANCE_FIELDS",
    "check_kind",
    "kind_label",
]

#: Where the kinds come from.
MANUAL_CITATION = (
    "New York State Stormwater Management Design Manual (NYSDEC, January 2015): Chapter 5 "
    "(runoff reduction practices) and Chapter 6 (standard SMPs: ponds P, wetlands W, "
    "infiltration I, filtering F, open channels O)"
)

#: kind code -> (family, practice name).
SMP_KINDS: dict[str, tuple[str, str]] = {
    "P-1": ("pond", "Micropool extended detention pond"),
    "P-2": ("pond", "Wet pond"),
    "P-3": ("pond", "Wet extended detention pond"),
    "P-4": ("pond", "Multiple pond system"),
    "P-5": ("pond", "Pocket pond"),
    "W-1": ("wetland", "Shallow wetland"),
    "W-2": ("wetland", "Extended detention wetland"),
    "W-3": ("wetland", "Pond/wetland system"),
    "W-4": ("wetland", "Pocket wetland"),
    "I-1": ("infiltration", "Infiltration trench"),
    "I-2": ("infiltration", "Infiltration basin"),
    "I-3": ("infiltration", "Dry well"),
    "I-4": ("infiltration", "Underground infiltration system"),
    "F-1": ("filtering", "Surface sand filter"),
    "F-2": ("filtering", "Underground sand filter"),
    "F-3": ("filtering", "Perimeter sand filter"),
    "F-4": ("filtering", "Organic filter"),
    "F-5": ("filtering", "Bioretention"),
    "F-6": ("filtering", "Filtering practice F-6"),
    "O-1": ("open_channel", "Dry swale"),
    "O-2": ("open_channel", "Wet swale"),
    "conservation_of_natural_areas": ("runoff_reduction", "Conservation of natural areas"),
    "riparian_buffer": ("runoff_reduction", "Sheetflow to riparian buffers or filter strips"),
    "tree_planting": ("runoff_reduction", "Tree planting / tree pit"),
    "rooftop_disconnection": ("runoff_reduction", "Disconnection of rooftop runoff"),
    "stream_daylighting": ("runoff_reduction", "Stream daylighting"),
    "vegetated_swale": ("runoff_reduction", "Vegetated open swale"),
    "rain_garden": ("runoff_reduction", "Rain garden"),
    "green_roof": ("runoff_reduction", "Green roof"),
    "stormwater_planter": ("runoff_reduction", "Stormwater planter"),
    "rain_tank": ("runoff_reduction", "Rain tank / cistern"),
    "porous_pavement": ("runoff_reduction", "Porous pavement"),
}

#: What prompted an SMP inspection (the laws' inspection programmes; ``one_year``: the
#: inspection that releases the performance guarantee).
INSPECTION_KINDS = ("routine", "random", "complaint", "one_year")
#: The condition an inspection finds.
SMP_CONDITIONS = ("good", "fair", "poor", "failing")
#: How an SMP's drainage area was found (records/smp_drainage.py).
DRAINAGE_METHODS = ("given", "surface_upstream", "inlet_catchment")

#: Keyword fields of an SMP (beyond ``name`` and ``kind``).
SMP_FIELDS: tuple[Field, ...] = (
    Field("owner", "text"),
    Field("project_id", "int", lo=1.0),
    Field("address", "text"),
    Field("discharges_to", "text"),  # the storm structure (inlet) it discharges to
    Field("drainage_area_m2", "number", "m2", lo=0.0, hi=1e9),
    Field("drainage_method", "choice", choices=DRAINAGE_METHODS),
    Field("design_documents", "text"),
    Field("as_built_on", "date"),
    Field("as_built_engineer", "text"),  # the professional engineer who certified it
    Field("as_built_pe_license", "text"),
    Field("built_on", "date"),
    Field("inspection_months", "int", "months", lo=1.0, hi=120.0),
    Field("maintenance_months", "int", "months", lo=1.0, hi=120.0),
    Field("source_key", "text"),  # the id of the row an import came from
    Field("notes", "text"),
)

#: Keyword fields of an SMP inspection.
SMP_INSPECTION_FIELDS: tuple[Field, ...] = (
    Field("inspection_kind", "choice", choices=INSPECTION_KINDS),
    Field("inspector", "text"),
    Field("condition", "choice", choices=SMP_CONDITIONS),
    Field("findings", "text"),
    Field("actions_required", "text"),
    Field("acceptable", "bool"),
    Field("notes", "text"),
)

#: Keyword fields of a maintenance record.
SMP_MAINTENANCE_FIELDS: tuple[Field, ...] = (
    Field("performed_by", "text"),
    Field("actions", "text"),
    Field("notes", "text"),
)


def check_kind(value: Any) -> str:
    """The kind code of ``value`` (a code in any case, or a practice's name).

    Raises
    ------
    DataError
        Naming the kinds allowed.
    """
    text = "" if value is None else str(value).strip()
    by_code = {k.lower(): k for k in SMP_KINDS}
    by_name = {name.lower(): k for k, (_f, name) in SMP_KINDS.items()}
    key = text.lower().replace(" ", "_") if text.lower() not in by_code else text.lower()
    if text.lower() in by_code:
        return by_code[text.lower()]
    if key in by_code:
        return by_code[key]
    if text.lower() in by_name:
        return by_name[text.lower()]
    raise DataError(
        f"SMP field 'kind' = {value!r} is not a practice of the NYS Stormwater Management "
        f"Design Manual. Fix: select from {list(SMP_KINDS)} (the manual's codes, e.g. P-2 "
        "wet pond, F-5 bioretention; or a runoff-reduction practice such as rain_garden)."
    )


def kind_label(code: Any) -> str:
    """``"F-5 Bioretention"`` for ``"F-5"``; the practice's name for a word code."""
    fam_name = SMP_KINDS.get(str(code))
    if fam_name is None:
        return str(code)
    return fam_name[1] if "_" in str(code) else f"{code} {fam_name[1]}"
