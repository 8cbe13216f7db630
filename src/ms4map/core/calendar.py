"""New York's calendar for legal periods: public holidays, business days and the last day
of a period that ends on a day offices are closed.

General Construction Law section 24 (public holidays) and section 25-a (a period that ends
on a Saturday, Sunday or public holiday), as docs/records.md explains.
"""

from __future__ import annotations

import datetime as dt

__all__ = [
    "add_business_days",
    "closed_day_name",
    "is_business_day",
    "last_day",
    "ny_public_holidays",
]


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> dt.date:
    """The ``n``-th ``weekday`` (Monday 0) of a month; ``n = -1``: the last one."""
    if n > 0:
        first = dt.date(year, month, 1)
        return first + dt.timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    nxt = dt.date(year + month // 12, month % 12 + 1, 1)
    last = nxt - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


def ny_public_holidays(year: int) -> dict[dt.date, str]:
    """New York's public holidays of ``year`` (General Construction Law section 24).

    New Year's day, Dr. Martin Luther King, Jr. day (third Monday of January), Lincoln's
    birthday (February 12), Washington's birthday (third Monday of February), Memorial
    day (last Monday of May), Juneteenth (June 19, from 2020), Independence day,
    Labor day (first Monday of September), Columbus day (second Monday of October),
    Veterans' day (November 11), Thanksgiving day (fourth Thursday of November) and
    Christmas day; any of these falling on a Sunday moves to the Monday after. General
    election day (the Tuesday after the first Monday of November) too. Flag day (the
    second Sunday of June) is a Sunday anyway; days the president or the governor
    appoints are not known here.
    """
    fixed = {
        dt.date(year, 1, 1): "New Year's day",
        dt.date(year, 2, 12): "Lincoln's birthday",
        dt.date(year, 7, 4): "Independence day",
        dt.date(year, 11, 11): "Veterans' day",
        dt.date(year, 12, 25): "Christmas day",
    }
    if year >= 2020:  # chapter 249 of the laws of 2020
        fixed[dt.date(year, 6, 19)] = "Juneteenth"
    days = {
        (d + dt.timedelta(days=1) if d.weekday() == 6 else d): name for d, name in fixed.items()
    }
    days[_nth_weekday(year, 1, 0, 3)] = "Dr. Martin Luther King, Jr. day"
    days[_nth_weekday(year, 2, 0, 3)] = "Washington's birthday"
    days[_nth_weekday(year, 5, 0, -1)] = "Memorial day"
    days[_nth_weekday(year, 9, 0, 1)] = "Labor day"
    days[_nth_weekday(year, 10, 0, 2)] = "Columbus day"
    days[_nth_weekday(year, 11, 3, 4)] = "Thanksgiving day"
    days[_nth_weekday(year, 11, 0, 1) + dt.timedelta(days=1)] = "General election day"
    return days


def is_business_day(d: dt.date) -> bool:
    """Monday to Friday and not a New York public holiday (:func:`ny_public_holidays`)."""
    return d.weekday() < 5 and d not in ny_public_holidays(d.year)


def add_business_days(start: dt.date, days: int) -> dt.date:
    """``start`` plus ``days`` business days (:func:`is_business_day`: Monday to Friday,
    New York's public holidays not counted)."""
    d = start
    left = int(days)
    while left > 0:
        d += dt.timedelta(days=1)
        if is_business_day(d):
            left -= 1
    return d


def last_day(end: dt.date) -> dt.date:
    """The day an act may still be done when its period ends on ``end``.

    ``end`` itself, or when it is a Saturday, Sunday or public holiday the next business
    day: "When any period of time, computed from a certain day, within which ... an act is
    authorized or required to be done, ends on a Saturday, Sunday or a public holiday,
    such act may be done on the next succeeding business day" (General Construction Law
    section 25-a).
    """
    d = end
    while not is_business_day(d):
        d += dt.timedelta(days=1)
    return d


def closed_day_name(d: dt.date) -> str | None:
    """Why ``d`` is not a business day ("a Saturday", "Labor day"), or ``None`` if it is."""
    if is_business_day(d):
        return None
    return ny_public_holidays(d.year).get(d) or f"a {d.strftime('%A')}"
