"""The user's inputs to a determination, checked: project type, acres, exemption, site.

Also the project types (:data:`PROJECT_TYPES`), the SWPPP items the determination lists,
:class:`SiteInfo`, the project-type guess from property classes and the application
fields a planner files with the determination (:func:`application_info`).
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import UsageError
from ...core.nulls import is_blank
from ..profiles import EXEMPTION_CODES, Profile

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


_MAX_ACRES = 100_000.0  # larger than any New York town: certainly a typo


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


@dataclass(frozen=True)
class Inputs:
    """The user's inputs to a determination, checked and normalised (:func:`validate_inputs`).

    Attributes
    ----------
    disturbed_acres : float
        Acres disturbed within the site.
    project_type : str or None
        One of :data:`PROJECT_TYPES` as the user gave it; ``None`` when not given (the
        determination then guesses it from the property class).
    common_plan_acres : float or None
        Acres of the larger common plan of development or sale, when there is one.
    exemption : str or None
        The exemption code claimed (:data:`ms4map.rules.profiles.EXEMPTION_CODES`).
    """

    disturbed_acres: float
    project_type: str | None = None
    common_plan_acres: float | None = None
    exemption: str | None = None

    @property
    def effective_acres(self) -> float:
        """The larger of the disturbed acres and the common plan's (Conditions B and C)."""
        return max(self.disturbed_acres, self.common_plan_acres or 0.0)

    def __getitem__(self, key: str) -> Any:
        """``inputs["disturbed_acres"]``: the field, as when this was a dict."""
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def to_dict(self) -> dict[str, Any]:
        """The four inputs as a dict (the order of the dict this was before)."""
        return {
            "disturbed_acres": self.disturbed_acres,
            "project_type": self.project_type,
            "common_plan_acres": self.common_plan_acres,
            "exemption": self.exemption,
        }


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
) -> Inputs:
    """Check the user's inputs; return them normalised (:class:`Inputs`).

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
    return Inputs(
        disturbed_acres=disturbed,
        project_type=ptype,
        common_plan_acres=plan,
        exemption=code,
    )


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
