"""The fields and rules of land development projects and their construction oversight.

Pure data and checks, no file access: the project statuses and the order the law lets a
project move through them (:data:`STATUSES`), the columns of the ``projects`` and
``construction`` tables of the records file, and a profile's ``[construction]`` rules
(:func:`construction_rules`: the stages the applicant notifies, the hours of notice, the
guarantee kinds the law names, whether a recorded maintenance easement must come before
approval).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import DataError
from .fields import Field

__all__ = [
    "CONSTRUCTION_FIELDS",
    "CONSTRUCTION_KINDS",
    "GUARANTEE_KINDS",
    "PROJECT_FIELDS",
    "STATUSES",
    "STEP_DATE",
    "ConstructionRules",
    "as_moment",
    "construction_rules",
    "next_status",
]

#: A project's statuses in the only order it may move through them.
STATUSES = (
    "screened",
    "swppp_submitted",
    "approved",
    "under_construction",
    "as_built_received",
    "one_year_inspected",
    "guarantee_released",
    "maintained",
)
#: The project column holding the date of each step.
STEP_DATE = {
    "screened": "saved_on",
    "swppp_submitted": "swppp_submitted_on",
    "approved": "approved_on",
    "under_construction": "construction_started_on",
    "as_built_received": "as_built_on",
    "one_year_inspected": "one_year_inspection_on",
    "guarantee_released": "guarantee_released_on",
    "maintained": "maintained_on",
}
#: Performance guarantees the laws name ("a performance bond, cash escrow, or
#: irrevocable letter of credit"; Kiryas Joel: cash escrow or letter of credit).
GUARANTEE_KINDS = ("performance_bond", "cash_escrow", "letter_of_credit")
#: Rows of the ``construction`` table.
CONSTRUCTION_KINDS = ("notice", "inspection", "violation", "stop_work")

#: Project columns besides the fixed ones (set by save, advance and update).
PROJECT_FIELDS: tuple[Field, ...] = (
    Field("applicant", "text"),
    Field("site_label", "text"),
    Field("parcel_ids", "text"),
    Field("swppp_required", "bool"),
    Field("facility_required", "bool"),
    Field("swppp_submitted_on", "date"),
    Field("approved_on", "date"),
    Field("approved_by", "text"),
    Field("construction_started_on", "date"),
    Field("as_built_on", "date"),
    Field("as_built_engineer", "text"),
    Field("one_year_inspection_on", "date"),
    Field("one_year_acceptable", "bool"),
    Field("guarantee_released_on", "date"),
    Field("maintained_on", "date"),
    Field("guarantee_kind", "choice", choices=GUARANTEE_KINDS),
    Field("guarantee_amount", "number", "USD", lo=0.0),
    Field("guarantee_posted_on", "date"),
    Field("guarantee_expires_on", "date"),
    Field("guarantee_drawn_on", "date"),
    Field("guarantee_drawn_amount", "number", "USD", lo=0.0),
    Field("easement_recorded", "bool"),
    Field("easement_recorded_on", "date"),
    Field("easement_where", "text"),
    Field("co_hold", "bool"),
    Field("co_hold_reason", "text"),
    Field("notes", "text"),
)

#: Fields a project update may change (the step dates move only by advancing).
UPDATE_FIELDS = (
    "applicant",
    "guarantee_kind",
    "guarantee_amount",
    "guarantee_posted_on",
    "guarantee_expires_on",
    "guarantee_drawn_on",
    "guarantee_drawn_amount",
    "easement_recorded",
    "easement_recorded_on",
    "easement_where",
    "co_hold",
    "co_hold_reason",
    "notes",
)
#: Date fields that may lie ahead (a guarantee's expiry).
FUTURE_DATES = ("guarantee_expires_on",)

#: Construction columns besides ``project_id``, ``kind`` and ``date``.
CONSTRUCTION_FIELDS: tuple[Field, ...] = (
    Field("stage", "text"),
    Field("notified_at", "text", "YYYY-MM-DDTHH:MM"),
    Field("stage_at", "text", "YYYY-MM-DDTHH:MM"),
    Field("hours_ahead", "number", "hours"),
    Field("late", "bool"),
    Field("inspector", "text"),
    Field("findings", "text"),
    Field("result", "choice", choices=("approved", "violations")),
    Field("inspection_id", "int", lo=1.0),
    Field("nature", "text"),
    Field("corrective_actions", "text"),
    Field("remedy_deadline", "date"),
    Field("corrected_on", "date"),
    Field("corrected_approved_by", "text"),
    Field("reason", "text"),
    Field("lifted_on", "date"),
    Field("lifted_by", "text"),
    Field("notes", "text"),
)


def next_status(status: str) -> str | None:
    """The one step after ``status`` (``None`` after ``maintained``)."""
    i = STATUSES.index(status)
    return STATUSES[i + 1] if i + 1 < len(STATUSES) else None


@dataclass(frozen=True)
class ConstructionRules:
    """A profile's ``[construction]`` table, checked.

    Attributes
    ----------
    stages : tuple of str
        The stages the applicant notifies the officer of, in the law's order.
    stabilization_stage : str
        The one kind of work the law lets go on while a violation is open or a stop-work
        order is in force ("except for site stabilization"); a notice of it is accepted.
    notice_hours : float
        How long before a stage its notice must come (the laws: 48 hours).
    guarantee_kinds : tuple of str
        The performance guarantees the law names.
    easement_before_approval : bool
        Whether a maintenance easement must be recorded before a project that needs a
        stormwater management facility is approved.
    guarantee_min_years : int
        The performance guarantee stays in force at least this long after final
        acceptance (the as-built), and the one-year inspection comes that long after it.
    """

    stages: tuple[str, ...]
    stabilization_stage: str
    notice_hours: float
    guarantee_kinds: tuple[str, ...]
    easement_before_approval: bool
    guarantee_min_years: int

    @property
    def notice_stages(self) -> tuple[str, ...]:
        """Every stage a notice may name: the law's and the stabilization work."""
        return (*self.stages, self.stabilization_stage)


def construction_rules(profile: Any) -> ConstructionRules:
    """The ``[construction]`` rules of ``profile`` (a :class:`~ms4map.rules.profiles.Profile`).

    Raises
    ------
    DataError
        The profile has no ``[construction]`` table or a value of it is wrong.
    """
    raw = getattr(profile, "raw", {}) or {}
    table = raw.get("construction")
    name = getattr(profile, "name", "?")
    if not isinstance(table, Mapping):
        raise DataError(
            f"Profile '{name}' has no [construction] table (the stages the applicant "
            "notifies, notice_hours, guarantee_kinds). Fix: copy it from the stillwater "
            "profile (src/ms4map/rules/profiles/stillwater.toml) into the town's profile."
        )
    stages = table.get("stages")
    hours = table.get("notice_hours")
    kinds = table.get("guarantee_kinds", list(GUARANTEE_KINDS))
    problems = []
    if not isinstance(stages, list) or not stages or not all(isinstance(s, str) for s in stages):
        problems.append("construction.stages must be a list of stage names")
    if isinstance(hours, bool) or not isinstance(hours, int | float) or hours < 0:
        problems.append("construction.notice_hours must be a number of hours >= 0")
    if not isinstance(kinds, list) or not set(kinds) <= set(GUARANTEE_KINDS):
        problems.append(f"construction.guarantee_kinds must be a list from {list(GUARANTEE_KINDS)}")
    if problems:
        raise DataError(f"Profile '{name}': " + "; ".join(problems) + ".")
    return ConstructionRules(
        stages=tuple(stages),
        stabilization_stage=str(table.get("stabilization_stage", "site_stabilization")),
        notice_hours=float(hours),
        guarantee_kinds=tuple(kinds),
        easement_before_approval=bool(table.get("easement_before_approval", False)),
        guarantee_min_years=int(table.get("guarantee_min_years", 1)),
    )


def as_moment(value: Any, name: str, *, allow_future: bool = False) -> dt.datetime:
    """A day and time from ``YYYY-MM-DDTHH:MM`` (or ``YYYY-MM-DD HH:MM``; a day alone is
    its midnight), the town's local time.

    Raises
    ------
    DataError
        Malformed, in the future (unless ``allow_future``), or before 1972.
    """
    if isinstance(value, dt.datetime):
        moment = value.replace(tzinfo=None, second=0, microsecond=0)
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    else:
        text = str(value).strip().replace(" ", "T")
        try:
            moment = dt.datetime.fromisoformat(text).replace(tzinfo=None)
        except ValueError:
            raise DataError(
                f"{name} = {value!r} is not a day and time. Fix: give it as "
                "YYYY-MM-DDTHH:MM (24 h, the town's time), e.g. 2026-06-01T08:00."
            ) from None
    now = dt.datetime.now()
    if not allow_future and moment > now:
        raise DataError(
            f"{name} = {moment:%Y-%m-%dT%H:%M} is in the future. Fix: give the time it happened."
        )
    if moment.year < 1972 or moment > now + dt.timedelta(days=3660):
        raise DataError(f"{name} = {moment:%Y-%m-%dT%H:%M}: check the year.")
    return moment


def add_years(day: dt.date, years: int) -> dt.date:
    """``day`` plus whole years (29 February becomes 28 February)."""
    try:
        return day.replace(year=day.year + years)
    except ValueError:
        return day.replace(year=day.year + years, day=28)
