"""Reporting periods of a profile: the permit year, the interim period, calendar and fiscal years.

New York's SPDES general permit for MS4s (GP-0-24-001) has the MS4's reporting year run
from 3 January to 2 January (the annual report is due 1 April) and a six-monthly interim
period from 3 January to 30 June.  A profile names its periods in ``[records]``::

    [records]
    reporting_period = "permit_year"          # what --year YYYY means
    periods = ["permit_year", "interim"]      # what else it reports on
    fiscal_year_start = "06-01"               # only for "fiscal"

``--year 2025`` is always the period that **starts** in 2025: the permit year 2025 runs
3 January 2025 to 2 January 2026.  A profile without ``[records]`` reports on the
calendar year (and an older ``reporting_year_start = "MM-DD"`` still sets a reporting
year starting that day).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import UsageError

__all__ = [
    "PERIOD_KINDS",
    "Period",
    "PeriodSettings",
    "first_record_day",
    "period_settings",
]

#: The periods ms4map knows, with their words for people.
PERIOD_KINDS = {
    "permit_year": "permit year",
    "interim": "interim period",
    "calendar": "calendar year",
    "fiscal": "fiscal year",
    "reporting_year": "reporting year",
}

#: Where the permit's periods come from (printed with them).
PERMIT_SOURCE = "NYSDEC SPDES general permit for MS4s GP-0-24-001"


def _long(d: dt.date) -> str:
    return f"{d.day} {d.strftime('%B')} {d.year}"


@dataclass(frozen=True)
class Period:
    """One reporting period: ``kind`` (a key of :data:`PERIOD_KINDS`), the ``year`` it
    starts in, its first and last day (``end`` included) and where the rule comes from."""

    kind: str
    year: int
    start: dt.date
    end: dt.date
    source: str = ""

    @property
    def stop(self) -> dt.date:
        """The day after the period (``[start, stop)``)."""
        return self.end + dt.timedelta(days=1)

    @property
    def words(self) -> str:
        """``"permit year"``."""
        return PERIOD_KINDS[self.kind]

    @property
    def name(self) -> str:
        """``"permit year 2025"``."""
        return f"{self.words} {self.year}"

    def text(self) -> str:
        """``"permit year 2025 (3 January 2025 to 2 January 2026)"``, with its source."""
        src = f"; {self.source}" if self.source else ""
        return f"{self.name} ({_long(self.start)} to {_long(self.end)}{src})"

    def contains(self, day: dt.date) -> bool:
        """Whether ``day`` falls in the period."""
        return self.start <= day <= self.end


def _month_day(text: Any, key: str) -> tuple[int, int]:
    """``"01-03"`` -> ``(1, 3)`` (29 February refused: every year must have the day)."""
    import re

    m = re.fullmatch(r"\s*(\d{1,2})-(\d{1,2})\s*", str(text))
    try:
        if not m:
            raise ValueError
        md = (int(m.group(1)), int(m.group(2)))
        dt.date(2001, *md)
    except ValueError:
        raise UsageError(
            f'{key} = {text!r}: give the first day as MM-DD, e.g. "01-01" (calendar year) '
            'or "01-03" (the permit year).'
        ) from None
    return md


@dataclass(frozen=True)
class PeriodSettings:
    """The periods of a profile: the default one (``--year``), the others it offers, and
    the first day of the fiscal / reporting year when it sets one."""

    default: str = "calendar"
    offered: tuple[str, ...] = ("calendar",)
    fiscal_start: tuple[int, int] | None = None
    reporting_start: tuple[int, int] = (1, 1)

    def period(self, year: int, kind: str | None = None) -> Period:
        """The period of ``kind`` (default :attr:`default`) that starts in ``year``.

        Raises
        ------
        UsageError
            An unknown kind (the message lists the known ones), or ``fiscal`` under a
            profile that sets no ``fiscal_year_start``.
        """
        kind = self.default if kind is None else str(kind).strip().lower().replace("-", "_")
        if kind not in PERIOD_KINDS:
            raise UsageError(
                f"period = {kind!r} is not a reporting period: select from "
                f"{list(PERIOD_KINDS)} (this profile reports on {list(self.offered)})."
            )
        y = int(year)
        if kind == "permit_year":
            start, end = dt.date(y, 1, 3), dt.date(y + 1, 1, 2)
            return Period(kind, y, start, end, f"{PERMIT_SOURCE}, reporting year")
        if kind == "interim":
            return Period(
                kind, y, dt.date(y, 1, 3), dt.date(y, 6, 30), f"{PERMIT_SOURCE}, interim period"
            )
        if kind == "calendar":
            return Period(kind, y, dt.date(y, 1, 1), dt.date(y, 12, 31))
        if kind == "fiscal" and self.fiscal_start is None:
            raise UsageError(
                "period = 'fiscal': this profile sets no fiscal year. Fix: add "
                '[records] fiscal_year_start = "MM-DD" to the profile.'
            )
        md = self.fiscal_start if kind == "fiscal" else self.reporting_start
        assert md is not None
        start = dt.date(y, *md)
        return Period(kind, y, start, dt.date(y + 1, *md) - dt.timedelta(days=1))

    def year_of(self, day: dt.date, kind: str | None = None) -> int:
        """The year (the one it starts in) of the yearly period of ``kind`` that holds
        ``day``; for ``interim``, of the permit year that holds it."""
        kind = self.default if kind is None else kind
        annual = "permit_year" if kind == "interim" else kind
        p = self.period(day.year, annual)
        return day.year if day >= p.start else day.year - 1

    @property
    def annual(self) -> str:
        """The yearly period behind the default (``interim`` -> ``permit_year``)."""
        return "permit_year" if self.default == "interim" else self.default


def period_settings(
    raw: Mapping[str, Any] | None, *, year_start: str | None = None
) -> PeriodSettings:
    """The :class:`PeriodSettings` of a profile's ``[records]`` table.

    ``year_start`` (``open_records(year_start=...)``) overrides the profile: a reporting
    year starting that day (``"01-01"``: the calendar year).

    Raises
    ------
    UsageError
        An unknown period name, a default period the profile does not offer, a day not
        ``MM-DD``.
    """
    rec = dict(raw or {})
    fiscal = rec.get("fiscal_year_start")
    fiscal_md = None if fiscal is None else _month_day(fiscal, "fiscal_year_start")
    if year_start is not None:
        md = _month_day(year_start, "reporting_year_start") if str(year_start).strip() else (1, 1)
        kind = "calendar" if md == (1, 1) else "reporting_year"
        return PeriodSettings(kind, (kind,), fiscal_md, md)
    legacy = rec.get("reporting_year_start")
    md = (1, 1) if legacy in (None, "") else _month_day(legacy, "reporting_year_start")
    default = rec.get("reporting_period")
    if default is None:
        default = "calendar" if md == (1, 1) else "reporting_year"
    offered = rec.get("periods", [default])
    if isinstance(offered, str) or not isinstance(offered, list | tuple):
        offered = [offered]
    names = [str(default), *(str(k) for k in offered)]
    for k in names:
        if k not in PERIOD_KINDS:
            raise UsageError(
                f"[records] period {k!r} is not a reporting period: select from "
                f"{list(PERIOD_KINDS)}."
            )
    if "fiscal" in names and fiscal_md is None:
        raise UsageError('[records] names the fiscal year but sets no fiscal_year_start = "MM-DD".')
    return PeriodSettings(str(default), tuple(dict.fromkeys(names)), fiscal_md, md)


def first_record_day(*tables: tuple[Any, tuple[str, ...]]) -> dt.date | None:
    """The earliest day in the given ``(DataFrame, columns)`` (``None``: no record)."""
    import pandas as pd

    days: list[dt.date] = []
    for df, cols in tables:
        for c in cols:
            if len(df) and c in df:
                for d in pd.to_datetime(df[c], errors="coerce").dt.date:
                    if d is not None and not pd.isna(d):
                        days.append(d)
    return min(days, default=None)
