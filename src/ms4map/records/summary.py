"""Outfall status and the reporting-year figures, as pure functions of the tables.

Every figure counts outfalls or cases, never rows: two inspections of one outfall in
a year screen one outfall; a correction (a new version of a row) is not a new event.
The functions take the *current* versions the read methods of
:class:`~ms4map.records.Records` return.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pandas as pd

from ..core.errors import UsageError
from ..idde import flow_type_of
from .periods import Period, PeriodSettings

__all__ = [
    "STATUS_ORDER",
    "SUMMARY_KEYS",
    "SUSPECT_FLOW_TYPES",
    "annual_report",
    "layer_status",
    "outfall_status",
    "parse_year_start",
    "reporting_period",
    "reporting_year",
    "summary",
]

#: Keys of :func:`summary` (after ``year``, ``period``, ``period_start``, ``period_end``).
SUMMARY_KEYS = (
    "outfalls",
    "outfalls_screened",
    "screened_last_5_years",
    "flowing",
    "suspect_or_obvious",
    "cases_opened",
    "track_downs",
    "samples_taken",
    "illicit_found",
    "notices_sent",
    "illicit_eliminated",
    "cases_open",
)


def parse_year_start(text: str | None) -> tuple[int, int]:
    """``"01-03"`` -> ``(1, 3)``: month and day the reporting year starts on."""
    if text is None or str(text).strip() == "":
        return (1, 1)
    m = re.fullmatch(r"\s*(\d{1,2})-(\d{1,2})\s*", str(text))
    try:
        if not m:
            raise ValueError
        month, day = int(m.group(1)), int(m.group(2))
        dt.date(2001, month, day)  # not 29 February: every year must have the day
    except ValueError:
        raise UsageError(
            f"reporting_year_start = {text!r}: give the first day of the reporting year as "
            'MM-DD, e.g. "01-01" (calendar year) or "01-03".'
        ) from None
    return month, day


def reporting_period(year: int, start: tuple[int, int] = (1, 1)) -> tuple[dt.date, dt.date]:
    """``[first day, first day of the next year)`` of reporting year ``year``."""
    return dt.date(year, *start), dt.date(year + 1, *start)


def reporting_year(day: dt.date, start: tuple[int, int] = (1, 1)) -> int:
    """The reporting year a day falls in."""
    return day.year if day >= dt.date(day.year, *start) else day.year - 1


def _dates(s: pd.Series) -> pd.Series:
    return pd.to_datetime(s, errors="coerce").dt.date


def _in(s: pd.Series, lo: dt.date, hi: dt.date) -> pd.Series:
    d = _dates(s)
    return d.map(lambda x: x is not None and not pd.isna(x) and lo <= x < hi).astype(bool)


def _true(s: pd.Series) -> pd.Series:
    return s.map(lambda v: bool(v) if v is not None and not pd.isna(v) else False).astype(bool)


#: Order of the statuses an inspection or a case can give (``eliminated`` aside: only
#: a case that eliminated the discharge gives it).
STATUS_ORDER = ("unknown", "not_flowing", "flowing", "suspect", "illicit")
#: Flow types (of :func:`ms4map.idde.flow_type`) that make an outfall at least suspect.
SUSPECT_FLOW_TYPES = ("sewage", "wash_water", "sewage_or_wash_water")


def _rank(status: str | None) -> int:
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else -1


def _inspection_status(r: dict[str, Any]) -> tuple[str, str]:
    """What one inspection shows: ``(status, reason)`` (its flow type counted)."""
    char = r.get("characterization")
    char = None if char is None or pd.isna(char) else str(char)
    flow = r.get("flow_present")
    flow = None if flow is None or pd.isna(flow) else bool(flow)
    ftype = r.get("flow_type")
    if ftype is None or (not isinstance(ftype, str) and pd.isna(ftype)):
        ftype = flow_type_of(r)[0]
    when = f"inspection {r['inspection_id']} on {r['date']}"
    if char == "obvious":
        return "illicit", f"{when} characterised the discharge as obvious"
    if char in ("suspect", "potential"):
        return "suspect", f"{when} characterised the discharge as {char}"
    if flow is not False and str(ftype) in SUSPECT_FLOW_TYPES:
        words = str(ftype).replace("_", " ")
        return "suspect", f"{when}: its field tests point to {words} (flow-type chart)"
    if flow is True:
        return "flowing", f"{when} found dry-weather flow"
    if flow is False:
        return "not_flowing", f"{when} found no flow"
    return "unknown", f"{when} recorded neither flow nor a characterization"


def _walk(inspections: list[dict[str, Any]], *, cap: str | None = None) -> tuple[str, str] | None:
    """The status of a run of inspections in date order: a later inspection replaces an
    earlier flow finding (flowing / not flowing), but never lowers ``suspect`` or
    ``illicit`` (only a case clears those); ``cap`` limits what the run can reach."""
    cur: tuple[str, str] | None = None
    for r in inspections:
        s, why = _inspection_status(r)
        if cap is not None and _rank(s) > _rank(cap):
            s = cap
        if s == "unknown" and cur is not None:
            continue
        if cur is None or _rank(s) >= _rank(cur[0]) or cur[0] in ("unknown", "not_flowing"):
            cur = (s, why)
        elif cur[0] == "flowing" and s == "not_flowing":
            cur = (s, why)
        elif s != "unknown":  # suspect/illicit stay; say that the later one does not clear
            cur = (cur[0], f"{cur[1]}; {why}, which does not clear it")
    return cur


def layer_status(value: Any) -> str | None:
    """A status of the outfalls layer as a status code (``None``: blank or not one)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    code = str(value).strip().lower().replace(" ", "_").replace("-", "_")
    return code if code in (*STATUS_ORDER[1:], "eliminated") else None


def _with_layer(
    value: Any, got: tuple[str, str], method: str, *, ended: bool
) -> tuple[tuple[str, str], str]:
    """Rule 5 of :func:`outfall_status`: the layer's status as the first evidence."""
    lay = layer_status(value)
    if lay is None or ended:
        return got, method
    said = f"the outfalls layer says {lay.replace('_', ' ')}"
    if method == "never_inspected":
        return (lay, f"{said}; no inspection or case recorded"), "outfalls_layer"
    if lay in ("suspect", "illicit") and _rank(lay) > _rank(got[0]):
        return (lay, f"{said}; {got[1]}, which does not clear it"), "outfalls_layer"
    return got, method


def outfall_status(
    outfalls: pd.DataFrame, inspections: pd.DataFrame, cases: pd.DataFrame
) -> pd.DataFrame:
    """The status of every outfall, from its inspections and its cases.

    Statuses are ordered ``not_flowing`` < ``flowing`` < ``suspect`` < ``illicit``
    (:data:`STATUS_ORDER`); ``eliminated`` comes only from a case that eliminated the
    discharge.  Rules:

    1. each inspection shows a status: characterization ``obvious`` -> ``illicit``;
       ``suspect`` or ``potential``, or field tests whose flow type is sewage or wash
       water (:data:`SUSPECT_FLOW_TYPES`, the tool's own chart) -> ``suspect``; else flow
       present -> ``flowing``, no flow -> ``not_flowing``;
    2. inspections are taken in date order; a later one replaces a flow finding
       (``flowing`` / ``not_flowing``) but never lowers ``suspect`` or ``illicit``: no
       inspection clears the evidence of another, only a case does;
    3. an active case (neither eliminated nor closed) with a source found or a notice
       sent makes the outfall ``illicit``, one still being investigated at least
       ``suspect``; the higher of the case and the inspections holds;
    4. a case eliminated or closed clears the evidence up to its date: a case eliminated
       gives ``eliminated`` while no later inspection finds more than no flow; a case
       closed without elimination leaves what the inspections showed, capped at
       ``flowing``, then the inspections after it count in full;
    5. the outfalls layer's own ``status`` (when ``outfalls`` has one) is the first
       evidence: alone (no inspection, no case) it is the status; a ``suspect`` or
       ``illicit`` there is not lowered by an inspection, only by a case that ended;
       a flow finding there is replaced by an inspection's;
    6. never inspected, no case, no layer status: ``unknown``.

    This is the one status of an outfall: the app's map, panels, counts, selectors,
    the printable outfall map and the exports all read it.

    Returns
    -------
    DataFrame
        ``outfall_id, status, method, reason, last_inspection_id,
        last_inspection_date, active_cases`` in the order of ``outfalls``.
    """
    rows = []
    ins = inspections.sort_values(["date", "inspection_id"]) if len(inspections) else inspections
    by_ins: dict[str, list[dict[str, Any]]] = {}  # outfall -> its inspections in order
    for r in ins.to_dict("records") if len(ins) else []:
        by_ins.setdefault(str(r["outfall_id"]), []).append(r)
    by_outfall: dict[str, list[dict[str, Any]]] = {}
    for r in cases.to_dict("records") if len(cases) else []:
        by_outfall.setdefault(str(r["outfall_id"]), []).append(r)

    def blank(v: Any) -> bool:
        return v is None or pd.isna(v) or str(v) == ""

    layer = (
        dict(zip(outfalls["outfall_id"].astype(str), outfalls["status"], strict=True))
        if "status" in outfalls
        else None
    )
    for oid in outfalls["outfall_id"].astype(str):
        mine = by_ins.get(oid, [])
        lr = mine[-1] if mine else None
        cs = by_outfall.get(oid, [])
        active = [c for c in cs if blank(c.get("eliminated_on")) and blank(c.get("closed_on"))]
        found = [
            c
            for c in active
            if not blank(c.get("source_found_on")) or not blank(c.get("notice_on"))
        ]
        # the latest case that ended (eliminated, else closed): it clears what came before
        ended = [
            (str(c["eliminated_on"] if not blank(c.get("eliminated_on")) else c["closed_on"]), c)
            for c in cs
            if c not in active
        ]
        end_on, end_case = max(ended, key=lambda t: t[0]) if ended else (None, None)
        before = [i for i in mine if end_on is not None and str(i["date"]) <= end_on]
        since = [i for i in mine if end_on is None or str(i["date"]) > end_on]
        got = _walk(since)
        method = "latest_inspection"
        if end_case is not None:
            cid = end_case["case_id"]
            if not blank(end_case.get("eliminated_on")):
                if all(_inspection_status(i)[0] in ("not_flowing", "unknown") for i in since):
                    after = f"; {got[1]} since" if got is not None else ""
                    got = ("eliminated", f"case {cid} eliminated the discharge on {end_on}{after}")
                    method = "case_eliminated"
            else:
                earlier = _walk(before, cap="flowing")
                closed = f"case {cid} closed on {end_on}"
                if got is None and earlier is not None:
                    got = (earlier[0], f"{earlier[1]}; {closed}")
                elif got is None:
                    got = ("unknown", f"{closed}; no inspection since")
                    method = "case_closed"
        if found:
            c = found[0]
            src = c.get("source_parcel_id")
            on = c["notice_on"] if blank(c.get("source_found_on")) else c["source_found_on"]
            who = "the source" if blank(src) else f"source parcel {src}"
            case_got = ("illicit", f"case {c['case_id']} is active; {who} found (by {on})")
            case_method = "active_case_source_found"
        elif active:
            c = active[0]
            case_got = (
                "suspect",
                f"case {c['case_id']} is active since {c['opened_on']} (source not yet found)",
            )
            case_method = "active_case"
        else:
            case_got, case_method = None, ""
        if case_got is not None and (got is None or _rank(case_got[0]) >= _rank(got[0])):
            got, method = case_got, case_method
        if got is None:
            got, method = ("unknown", "no inspection and no case"), "never_inspected"
        if layer is not None:
            got, method = _with_layer(layer.get(oid), got, method, ended=bool(ended))
        rows.append(
            {
                "outfall_id": oid,
                "status": got[0],
                "method": method,
                "reason": got[1],
                "last_inspection_id": None if lr is None else int(lr["inspection_id"]),
                "last_inspection_date": None if lr is None else str(lr["date"]),
                "active_cases": len(active),
            }
        )
    out = pd.DataFrame(rows)
    out["last_inspection_id"] = out["last_inspection_id"].astype("Int64")
    return out


def summary(
    outfalls: pd.DataFrame,
    inspections: pd.DataFrame,
    samples: pd.DataFrame,
    cases: pd.DataFrame,
    year: int,
    *,
    start: tuple[int, int] = (1, 1),
    period: Period | None = None,
) -> dict[str, Any]:
    """Figures of one reporting period (counts of outfalls or cases, not of rows).

    Parameters
    ----------
    outfalls : DataFrame
        The workspace's outfalls (``outfall_id``).
    inspections, samples, cases : DataFrame
        Current versions (see :class:`~ms4map.records.Records`).
    year : int
        The reporting year, which starts on ``start`` (month, day) of ``year``.
    period : Period, optional
        The period counted instead (:mod:`ms4map.records.periods`: the permit year, the
        interim period, ...); its ``year`` replaces ``year``.

    Returns
    -------
    dict
        ``year, period, period_start, period_end`` (``period``: its words, e.g.
        ``"permit year"``) and :data:`SUMMARY_KEYS`:
        ``outfalls`` (in the workspace), ``outfalls_screened`` (with an inspection in
        the year), ``screened_last_5_years`` (share of the workspace's outfalls
        inspected in the five reporting years ending with this one), ``flowing``
        (outfalls found flowing at an inspection in the year), ``suspect_or_obvious``
        (outfalls characterised suspect or obvious in the year), ``cases_opened``,
        ``track_downs`` (cases with a sample in the year), ``samples_taken``,
        ``illicit_found`` (cases whose source was found in the year),
        ``notices_sent``, ``illicit_eliminated`` (cases eliminated in the year),
        ``cases_open`` (cases opened before the year ended and not closed by then).
    """
    if period is None:
        lo, hi = reporting_period(year, start)
        words = "calendar year" if tuple(start) == (1, 1) else "reporting year"
    else:
        year, lo, hi, words = period.year, period.start, period.stop, period.words
    lo5 = dt.date(year - 4, lo.month, lo.day)
    known = set(outfalls["outfall_id"].astype(str))
    n = len(known)
    out: dict[str, Any] = {
        "year": int(year),
        "period": words,
        "period_start": lo.isoformat(),
        "period_end": (hi - dt.timedelta(days=1)).isoformat(),
        "outfalls": n,
    }
    if len(inspections):
        oid = inspections["outfall_id"].astype(str)
        now = _in(inspections["date"], lo, hi)
        five = _in(inspections["date"], lo5, hi)
        out["outfalls_screened"] = int(oid[now].nunique())
        out["screened_last_5_years"] = round(len(set(oid[five]) & known) / n, 4) if n else 0.0
        out["flowing"] = int(oid[now & _true(inspections["flow_present"])].nunique())
        char = inspections["characterization"].astype(object)
        susp = char.isin(["suspect", "obvious"]).astype(bool)
        out["suspect_or_obvious"] = int(oid[now & susp].nunique())
    else:
        out.update(outfalls_screened=0, screened_last_5_years=0.0, flowing=0, suspect_or_obvious=0)
    if len(samples):
        now = _in(samples["date"], lo, hi)
        out["track_downs"] = int(samples.loc[now, "case_id"].nunique())
        out["samples_taken"] = int(samples.loc[now, "sample_id"].nunique())
    else:
        out.update(track_downs=0, samples_taken=0)
    if len(cases):
        cid = cases["case_id"]

        def count(col: str) -> int:
            return int(cid[_in(cases[col], lo, hi)].nunique())

        out["cases_opened"] = count("opened_on")
        out["illicit_found"] = count("source_found_on")
        out["notices_sent"] = count("notice_on")
        out["illicit_eliminated"] = count("eliminated_on")
        opened = _dates(cases["opened_on"]).map(lambda d: d is not None and d < hi)
        closed = _dates(cases["closed_on"]).map(
            lambda d: d is not None and not pd.isna(d) and d < hi
        )
        out["cases_open"] = int(cid[opened.astype(bool) & ~closed.astype(bool)].nunique())
    else:
        out.update(
            cases_opened=0, illicit_found=0, notices_sent=0, illicit_eliminated=0, cases_open=0
        )
    return {k: out[k] for k in ("year", "period", "period_start", "period_end", *SUMMARY_KEYS)}


def annual_report(
    outfalls: pd.DataFrame,
    inspections: pd.DataFrame,
    samples: pd.DataFrame,
    cases: pd.DataFrame,
    *,
    last_year: int,
    first_year: int | None = None,
    start: tuple[int, int] = (1, 1),
    periods: PeriodSettings | None = None,
    kind: str | None = None,
) -> pd.DataFrame:
    """One :func:`summary` row per reporting year, from the first year with a record.

    ``first_year`` defaults to the reporting year of the earliest inspection, sample
    or case step (``last_year`` when there is none).  With ``periods`` (a profile's
    :class:`~ms4map.records.periods.PeriodSettings`) each row is the period of ``kind``
    (default: the profile's) that starts in its year.
    """
    if first_year is None:
        days: list[dt.date] = []
        for df, cols in (
            (inspections, ("date",)),
            (samples, ("date",)),
            (cases, ("opened_on",)),
        ):
            for c in cols:
                if len(df) and c in df:
                    days += [d for d in _dates(df[c]) if d is not None and not pd.isna(d)]
        if periods is not None:
            first_year = min((periods.year_of(d, kind) for d in days), default=last_year)
        else:
            first_year = min((reporting_year(d, start) for d in days), default=last_year)
    first_year = min(first_year, last_year)
    rows = [
        summary(
            outfalls,
            inspections,
            samples,
            cases,
            y,
            start=start,
            period=None if periods is None else periods.period(y, kind),
        )
        for y in range(first_year, last_year + 1)
    ]
    return pd.DataFrame(rows)
