"""Case steps and the deadlines the municipality profile sets for them.

A case runs complaint or finding -> investigation -> source found (a parcel) ->
notice of violation -> appeal -> appeal decided -> corrected / eliminated -> closed.
Each step is dated; :func:`check_step` refuses a step out of order or dated before
the step it follows.  :func:`case_deadlines` computes every deadline a case has
reached from the profile's ``[enforcement]`` table and says whether it is ``due``,
``overdue``, ``met`` or ``late`` on a given day.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.calendar import (
    add_business_days,
    closed_day_name,
    is_business_day,
    last_day,
    ny_public_holidays,
)
from ..core.errors import DataError
from ..rules.profiles import Profile, remedy_deadline, remedy_period_end

__all__ = [
    "DEADLINE_STATUSES",
    "STEPS",
    "check_case_row",
    "add_business_days",
    "is_business_day",
    "last_day",
    "ny_public_holidays",
    "case_deadlines",
    "check_step",
    "remedy_deadline",
]

#: step -> (date column it sets, date columns that must be set first)
STEPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "opened": ("opened_on", ()),
    "investigation": ("investigation_on", ()),
    "source_found": ("source_found_on", ()),
    "notice_sent": ("notice_on", ("source_found_on",)),
    "appeal_filed": ("appeal_filed_on", ("notice_on",)),
    "appeal_decided": ("appeal_decided_on", ("appeal_filed_on",)),
    "decision_filed": ("decision_filed_on", ("appeal_decided_on",)),
    "corrected": ("corrected_on", ("source_found_on",)),
    "eliminated": ("eliminated_on", ()),
    "closed": ("closed_on", ()),
}

#: The investigation's chain: a step of it is never dated after a later one already recorded.
STEP_CHAIN = (
    "investigation",
    "source_found",
    "notice_sent",
    "appeal_filed",
    "appeal_decided",
    "decision_filed",
)

#: What :func:`case_deadlines` reports in ``status``.
DEADLINE_STATUSES = (
    "due",  # not done, the date has not passed
    "overdue",  # not done, the date has passed
    "met",  # done on or before the date
    "late",  # done after the date
    "not_set",  # the law leaves the date to the notice and none was recorded
    "not_stated",  # the profile's law states no such period
    "window_open",  # appeal: the landowner may still appeal
    "window_closed",  # appeal: the period passed without an appeal
    "keep",  # records retention: keep until the date
    "may_discard",  # records retention: the period has ended
    "appealed",  # remedy: a timely appeal replaced the notice's deadline
    "unknown",  # the case's profile is not at hand: its periods are not known
)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


def _d(v: Any) -> dt.date | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, dt.date):
        return v
    text = str(v).strip()
    if not text or text.lower() in ("nan", "none", "<na>", "nat"):
        return None
    return dt.date.fromisoformat(text[:10])


def _add_days(d: dt.date, days: int) -> dt.date:
    return d + dt.timedelta(days=days)


def _add_years(d: dt.date, years: int) -> dt.date:
    try:
        return d.replace(year=d.year + years)
    except ValueError:  # 29 February
        return d.replace(year=d.year + years, day=28)


def check_step(case: Mapping[str, Any] | None, step: str, date: dt.date) -> None:
    """Refuse a step that is unknown, repeated, out of order or dated too early.

    Raises
    ------
    DataError
        With the field and the fix.
    """
    if step not in STEPS:
        raise DataError(f"Unknown case step {step!r}. Fix: select from {list(STEPS)[1:]}.")
    col, needs = STEPS[step]
    if case is None:
        return
    if _d(case.get("closed_on")) is not None:
        raise DataError(
            f"Case {case.get('case_id')} was closed on {case.get('closed_on')}: no step can "
            "follow. Fix: open a new case (or correct the closing with records.correct)."
        )
    if _d(case.get(col)) is not None:
        raise DataError(
            f"Case {case.get('case_id')} already has step '{step}' ({col} = {case.get(col)}). "
            "Fix: to change its date, record a correction (records.correct)."
        )
    for need in needs:
        if _d(case.get(need)) is None:
            first = next(s for s, (c, _) in STEPS.items() if c == need)
            raise DataError(
                f"Case {case.get('case_id')}: step '{step}' needs step '{first}' first "
                f"({need} is empty). Fix: record '{first}' before '{step}'."
            )
    if step in STEP_CHAIN:
        for later in STEP_CHAIN[STEP_CHAIN.index(step) + 1 :]:
            ld = _d(case.get(STEPS[later][0]))
            if ld is not None and date > ld:
                raise DataError(
                    f"Case {case.get('case_id')}: step '{step}' dated {date.isoformat()} is "
                    f"after step '{later}' ({ld.isoformat()}): steps go in the order "
                    f"{' > '.join(STEP_CHAIN)}. Fix: date '{step}' on or before "
                    f"{ld.isoformat()}, or leave it out."
                )
    earlier = [(c, _d(case.get(c))) for c in ("opened_on", *needs)]
    for c, d in earlier:
        if d is not None and date < d:
            raise DataError(
                f"Case {case.get('case_id')}: '{step}' dated {date.isoformat()} is before "
                f"{c} = {d.isoformat()}. Fix: check the date."
            )


def check_case_row(case: Mapping[str, Any]) -> tuple[str, str]:
    """Check a whole case row (a correction merges fields into it) by the rules that
    :func:`check_step` applies step by step; returns its ``(step, step_on)``: the last
    step whose date is set.

    Every step dated is on or after ``opened_on`` and the steps it needs (which must be
    dated), nothing is after ``closed_on``, and ``remedy_deadline`` is not before
    ``notice_on``.

    Raises
    ------
    DataError
        With the field and the fix.
    """
    cid = case.get("case_id")
    dates = {step: _d(case.get(col)) for step, (col, _) in STEPS.items()}
    opened = dates["opened"]
    for step, (col, needs) in STEPS.items():
        d = dates[step]
        if d is None or step == "opened":
            continue
        for need in needs:
            nd = _d(case.get(need))
            if nd is None:
                raise DataError(
                    f"Case {cid}: '{col}' = {d} needs '{need}' first (it is empty). Fix: "
                    f"set '{need}' too, or leave '{col}' empty."
                )
            if d < nd:
                raise DataError(
                    f"Case {cid}: '{col}' = {d} is before '{need}' = {nd}. Fix: check the dates."
                )
        if opened is not None and d < opened:
            raise DataError(
                f"Case {cid}: '{col}' = {d} is before the case opened ({opened}). Fix: check "
                "the date."
            )
    closed = dates["closed"]
    if closed is not None:
        later = [(STEPS[s][0], d) for s, d in dates.items() if d is not None and d > closed]
        if later:
            col, d = later[0]
            raise DataError(
                f"Case {cid}: '{col}' = {d} is after the case closed ({closed}). Fix: check "
                "the dates."
            )
    dl, notice = _d(case.get("remedy_deadline")), dates["notice_sent"]
    if dl is not None and notice is not None and dl < notice:
        raise DataError(
            f"Case {cid}: 'remedy_deadline' = {dl} is before the notice ({notice}). Fix: give "
            "a later deadline."
        )
    dated = [(s, d) for s, d in dates.items() if d is not None]
    step, day = (
        max(dated, key=lambda sd: (sd[1], list(STEPS).index(sd[0])))
        if dated
        else (
            "opened",
            opened,
        )
    )
    return step, "" if day is None else day.isoformat()


def _moved(plain: dt.date, due: dt.date) -> str:
    """What the reason says when a landowner's period ends on a closed day."""
    if due == plain:
        return ""
    return (
        f" The period ends on {plain.isoformat()}, {closed_day_name(plain)}: the act may be "
        f"done on the next business day, {due.isoformat()} (General Construction Law "
        "section 25-a)."
    )


def _row(
    case: Mapping[str, Any],
    deadline: str,
    *,
    due: dt.date | None,
    status: str,
    done: dt.date | None,
    rule: str,
    reason: str,
) -> dict[str, Any]:
    return {
        "case_id": case.get("case_id"),
        "outfall_id": case.get("outfall_id"),
        "deadline": deadline,
        "due": due.isoformat() if due else None,
        "status": status,
        "done_on": done.isoformat() if done else None,
        "rule": rule,
        "reason": reason,
    }


def _progress(due: dt.date, done: dt.date | None, today: dt.date) -> str:
    if done is not None:
        return "met" if done <= due else "late"
    return "overdue" if today > due else "due"


def case_deadlines(
    case: Mapping[str, Any], profile: Profile, *, today: dt.date | None = None
) -> list[dict[str, Any]]:
    """Every deadline a case has reached, with its status on ``today``.

    Parameters
    ----------
    case : mapping
        The current version of a case (columns of :meth:`Records.cases`).
    profile : Profile
        The municipality profile (``[enforcement]`` periods).
    today : date, optional
        Default: today.

    Returns
    -------
    list of dict
        ``case_id, outfall_id, deadline, due, status, done_on, rule, reason``;
        ``deadline`` is ``remedy``, ``appeal_window``, ``appeal_hearing``,
        ``decision_filed``, ``corrective_action`` or ``records_retention``;
        ``status`` one of :data:`DEADLINE_STATUSES`.
    """
    today = today or dt.date.today()
    out: list[dict[str, Any]] = []
    notice = _d(case.get("notice_on"))
    fixed = min(
        (d for d in (_d(case.get("corrected_on")), _d(case.get("eliminated_on"))) if d),
        default=None,
    )
    if notice is not None:
        out.append(_remedy_row(case, profile, notice, fixed, today))
        out.append(_appeal_window_row(case, profile, notice, today))
    filed = _d(case.get("appeal_filed_on"))
    if filed is not None:
        hearing_done = _d(case.get("appeal_decided_on"))
        out.append(_period_row(case, profile, _HEARING, filed, done=hearing_done, today=today))
    decided = _d(case.get("appeal_decided_on"))
    if decided is not None:
        filed_on = _d(case.get("decision_filed_on"))
        out.append(_period_row(case, profile, _DECISION, decided, done=filed_on, today=today))
        if str(case.get("appeal_outcome") or "") == "upheld":
            out.append(_period_row(case, profile, _CORRECTIVE, decided, done=fixed, today=today))
    closed = _d(case.get("closed_on"))
    if closed is not None:
        out.append(
            _period_row(
                case,
                profile,
                _RETENTION,
                closed,
                done=None,
                today=today,
                status=lambda due: "keep" if today <= due else "may_discard",
            )
        )
    return out


def _law(profile: Profile) -> str:
    return f"profile {profile.name}"


def _remedy_row(
    case: Mapping[str, Any],
    profile: Profile,
    notice: dt.date,
    fixed: dt.date | None,
    today: dt.date,
) -> dict[str, Any]:
    """The remedy deadline (recorded with the notice; done = corrected or eliminated).

    A timely appeal replaces it: the law then wants the violation corrected within its
    period after a decision upholding the notice (``corrective_action``), and nothing
    after one overturning it.
    """
    enf = profile.enforcement
    appealed = _appeal_row(case, profile, notice, fixed)
    if appealed is not None:
        return appealed
    due = _d(case.get("remedy_deadline"))
    if due is None:
        return _row(
            case,
            "remedy",
            due=None,
            status="not_set",
            done=fixed,
            rule="remedy_period",
            reason=f"The {profile.law} leaves the remedy period to the notice "
            f"('{enf.get('remedy_period')}') and no deadline was recorded. Fix: "
            "record it (records.correct(..., remedy_deadline=...)).",
        )
    by, moved = "recorded in the notice", ""
    auto = remedy_deadline(profile, notice)
    if auto is not None:
        plain = remedy_period_end(enf, notice)
        if due in (auto, plain):  # the law's own period (recorded before GCL 25-a: plain)
            by = f"{enf.get('remedy_period')} after the notice ({_law(profile)})"
            due, moved = auto, _moved(plain, auto)
    return _row(
        case,
        "remedy",
        due=due,
        status=_progress(due, fixed, today),
        done=fixed,
        rule="remedy_period",
        reason=f"Remedy due {due.isoformat()}, {by}; done = corrected or eliminated." + moved,
    )


def _appeal_row(
    case: Mapping[str, Any], profile: Profile, notice: dt.date, fixed: dt.date | None
) -> dict[str, Any] | None:
    """The remedy row of a case whose notice was appealed in time (``None`` otherwise)."""
    filed = _d(case.get("appeal_filed_on"))
    days = profile.enforcement.get("appeal_days")
    if not _num(profile.enforcement.get("corrective_business_days")):
        return None  # the law says nothing of a correction after an appeal
    if filed is None or (_num(days) and filed > last_day(notice + dt.timedelta(days=int(days)))):
        return None  # no appeal, or one out of time: the notice's deadline stands
    outcome = str(case.get("appeal_outcome") or "")
    decided = _d(case.get("appeal_decided_on"))
    if decided is None:
        then = "until it is decided; after a decision upholding the notice, corrective_action"
    elif outcome == "upheld":
        then = f"the decision of {decided.isoformat()} upheld the notice: see corrective_action"
    else:
        then = f"the decision of {decided.isoformat()} overturned the notice: no remedy is owed"
    return _row(
        case,
        "remedy",
        due=_d(case.get("remedy_deadline")),  # the notice's date, for the record
        status="appealed",
        done=fixed,
        rule="appeal",
        reason=f"The appeal filed on {filed.isoformat()}, within the appeal period, "
        "replaces the notice's remedy deadline: in the event of an appeal the violation "
        "is to be corrected after a decision upholding the notice "
        f"({_law(profile)}: corrective_business_days); {then}.",
    )


def _appeal_window_row(
    case: Mapping[str, Any], profile: Profile, notice: dt.date, today: dt.date
) -> dict[str, Any]:
    """The landowner's appeal window from the notice (``appeal_days``)."""
    enf = profile.enforcement
    law = _law(profile)
    days = enf.get("appeal_days")
    if not _num(days):
        return _row(
            case,
            "appeal_window",
            due=None,
            status="not_stated",
            done=None,
            rule="appeal",
            reason=f"The {profile.law} states no appeal period ({law}: appeal_days = {days!r}).",
        )
    plain = notice + dt.timedelta(days=int(days))
    due = last_day(plain)  # the landowner's act: GCL section 25-a
    filed = _d(case.get("appeal_filed_on"))
    if filed is not None:
        status = "met" if filed <= due else "late"
    else:
        status = "window_closed" if today > due else "window_open"
    body = enf.get("appeal_body") or "the municipality"
    return _row(
        case,
        "appeal_window",
        due=due,
        status=status,
        done=filed,
        rule="appeal",
        reason=f"The landowner may appeal to the {body} within {int(days)} days of the "
        f"notice of {notice.isoformat()} ({law}: appeal_days = {days})." + _moved(plain, due),
    )


@dataclass(frozen=True)
class _Period:
    """A deadline that runs a period of the profile's ``[enforcement]`` from an event."""

    deadline: str  # the row's ``deadline``
    key: str  # the period's key in the profile
    rule: str  # the citation rule
    missing: str  # what the law states no of, when the profile has no period
    note: str = ""  # said after that
    reason: str = ""  # how the row's reason reads ({n}, {start}, {law}, {value})
    after: Callable[[dt.date, int], dt.date] = _add_days  # the deadline n after start


_HEARING = _Period(
    "appeal_hearing",
    "appeal_hearing_days",
    "appeal",
    "hearing period",
    reason="The appeal is heard within {n} days of its filing on {start} ({law}); "
    "done = appeal decided.",
)
_DECISION = _Period(
    "decision_filed",
    "decision_filed_days",
    "appeal",
    "filing period",
    reason="The decision of {start} is filed within {n} days ({law}).",
)
_CORRECTIVE = _Period(
    "corrective_action",
    "corrective_business_days",
    "appeal",
    "period after an upheld appeal",
    reason="The appeal upheld the notice on {start}: corrected within {n} business days "
    "(Mon-Fri; New York's public holidays, General Construction Law section 24, not "
    "counted) ({law}).",
    after=add_business_days,
)
_RETENTION = _Period(
    "records_retention",
    "records_years",
    "records",
    "retention period",
    "; ms4map never deletes records",
    reason="Keep the case records {n} years after it closed on {start} "
    "({law}: records_years = {value}).",
    after=_add_years,
)


def _period_row(
    case: Mapping[str, Any],
    profile: Profile,
    period: _Period,
    start: dt.date,
    *,
    done: dt.date | None,
    today: dt.date,
    status: Callable[[dt.date], str] | None = None,
) -> dict[str, Any]:
    """The row of a deadline that runs ``period`` from the event on ``start``.

    The deadline is ``period.after(start, n)`` for a period of ``n`` (days, business days
    or years) and ``period.reason`` says how it is set; ``status`` defaults to
    met/late/pending/overdue against ``done``.  Without the period in the profile the
    row is ``not_stated``.
    """
    law = _law(profile)
    value = profile.enforcement.get(period.key)
    if not _num(value):
        return _row(
            case,
            period.deadline,
            due=None,
            status="not_stated",
            done=done,
            rule=period.rule,
            reason=f"The {profile.law} states no {period.missing} "
            f"({law}: {period.key} = {value!r}){period.note}.",
        )
    n = int(value)
    when = period.after(start, n)
    state = status(when) if status is not None else _progress(when, done, today)
    reason = period.reason.format(n=n, start=start.isoformat(), law=law, value=value)
    return _row(
        case, period.deadline, due=when, status=state, done=done, rule=period.rule, reason=reason
    )
