"""The fields of the records tables and their checks.

Every value a user gives passes through :func:`check_fields` before a row is written:
an unknown keyword, a value outside its list, a severity outside 0-3, a negative
concentration or a date in the future is a :class:`~ms4map.core.errors.DataError` naming
the field and the fix, and nothing is written.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import DataError

__all__ = [
    "CASE_FIELDS",
    "CHARACTERIZATIONS",
    "FLOW_ESTIMATES",
    "INSPECTION_FIELDS",
    "ORIGINS",
    "SAMPLE_FIELDS",
    "SAMPLE_RESULTS",
    "Field",
    "as_date",
    "check_fields",
]

FLOW_ESTIMATES = ("none", "trickle", "moderate", "substantial")
CHARACTERIZATIONS = ("unlikely", "potential", "suspect", "obvious")
ORIGINS = ("complaint", "finding")
SAMPLE_RESULTS = ("flow", "clean")
APPEAL_OUTCOMES = ("upheld", "overturned")


@dataclass(frozen=True)
class Field:
    """One user field: its kind and the rule its values follow.

    Attributes
    ----------
    name : str
    kind : {"text", "time", "bool", "severity", "choice", "number", "int", "date"}
    unit : str
        For messages and the docs (``mg/L``, ``uS/cm``, ...).
    choices : tuple of str
        Allowed values of a ``choice`` field.
    lo, hi : float or None
        Bounds of a ``number`` field (inclusive).
    """

    name: str
    kind: str
    unit: str = ""
    choices: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None

    @property
    def sql_type(self) -> str:
        return {
            "bool": "BOOLEAN",
            "severity": "INTEGER",
            "number": "REAL",
            "int": "INTEGER",
            "date": "DATE",
        }.get(self.kind, "TEXT")


def _sev(name: str) -> Field:
    return Field(name, "severity", "0-3, 0 = not present")


def _conc(name: str, hi: float) -> Field:
    return Field(name, "number", "mg/L", lo=0.0, hi=hi)


# The field tests shared by an outfall inspection and a track-down sample.
_TESTS = (
    Field("time", "time", "HH:MM"),
    Field("flow_present", "bool"),
    Field("flow_estimate", "choice", choices=FLOW_ESTIMATES),
    _sev("odor"),
    _sev("color"),
    _sev("turbidity"),
    _sev("floatables"),
    # upper bounds: far above raw sewage (ammonia 20 - 60, MBAS detergents 5 - 15,
    # potassium 10 - 40 mg/L) and any tap water (fluoride 0.7 - 4 mg/L): a reading beyond
    # is a typo (a misplaced decimal point, another unit), not a field test
    _conc("ammonia", 1000.0),
    _conc("detergents", 1000.0),
    _conc("fluoride", 100.0),
    _conc("potassium", 1000.0),
    Field("ph", "number", "pH units", lo=0.0, hi=14.0),
    Field("temperature_c", "number", "deg C", lo=-10.0, hi=60.0),
    Field("conductivity", "number", "uS/cm", lo=0.0, hi=100_000.0),  # sea water ~50,000
)
_T = {f.name: f for f in _TESTS}

#: Keyword fields of an inspection (outfall reconnaissance inventory), in ORI order.
INSPECTION_FIELDS: tuple[Field, ...] = (
    Field("inspector", "text"),
    _T["time"],
    Field("hours_since_rain", "number", "hours", lo=0.0, hi=24.0 * 366),
    _T["flow_present"],
    _T["flow_estimate"],
    _T["odor"],
    _T["color"],
    _T["turbidity"],
    _T["floatables"],
    Field("deposits", "bool"),
    Field("vegetation", "bool"),
    Field("pool_quality", "bool"),
    Field("benthic_growth", "bool"),
    Field("damage", "bool"),
    _T["ammonia"],
    _T["detergents"],
    _T["fluoride"],
    _T["potassium"],
    _T["ph"],
    _T["temperature_c"],
    _T["conductivity"],
    Field("characterization", "choice", choices=CHARACTERIZATIONS),
    Field("sample_taken", "bool"),
    Field("notes", "text"),
    # the position found in the field (a phone's GPS): the outfall is then verified
    Field("found_lat", "number", "degrees WGS 84", lo=-90.0, hi=90.0),
    Field("found_lon", "number", "degrees WGS 84", lo=-180.0, hi=180.0),
)

#: Keyword fields of a track-down sample at a structure.
SAMPLE_FIELDS: tuple[Field, ...] = (
    Field("sampler", "text"),
    *_TESTS,
    Field("result", "choice", choices=SAMPLE_RESULTS),
    Field("notes", "text"),
)

#: Case columns set by :meth:`Records.open_case` and :meth:`Records.advance_case`.
CASE_FIELDS: tuple[Field, ...] = (
    Field("origin", "choice", choices=ORIGINS),
    Field("opened_on", "date"),
    Field("description", "text"),
    Field("inspection_id", "int", lo=1.0),
    Field("investigation_on", "date"),
    Field("source_parcel_id", "text"),
    Field("source_found_on", "date"),
    Field("notice_on", "date"),
    Field("remedy_deadline", "date"),
    Field("appeal_filed_on", "date"),
    Field("appeal_decided_on", "date"),
    Field("appeal_outcome", "choice", choices=APPEAL_OUTCOMES),
    Field("decision_filed_on", "date"),
    Field("corrected_on", "date"),
    Field("eliminated_on", "date"),
    Field("closed_on", "date"),
    Field("closed_reason", "text"),
    Field("notes", "text"),
)

_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_TRUE = ("true", "yes", "y", "1")
_FALSE = ("false", "no", "n", "0")


def as_date(value: Any, name: str, *, allow_future: bool = False) -> dt.date:
    """A ``datetime.date`` from a date or a ``"YYYY-MM-DD"`` string.

    Raises
    ------
    DataError
        Malformed, or in the future (unless ``allow_future``).
    """
    if isinstance(value, dt.datetime):
        d = value.date()
    elif isinstance(value, dt.date):
        d = value
    else:
        try:
            d = dt.date.fromisoformat(str(value).strip())
        except ValueError:
            raise DataError(
                f"{name} = {value!r} is not a date. Fix: give it as YYYY-MM-DD, e.g. 2025-06-01."
            ) from None
    if not allow_future and d > dt.date.today():
        raise DataError(
            f"{name} = {d.isoformat()} is in the future (today is "
            f"{dt.date.today().isoformat()}). Fix: give the date it happened."
        )
    if d < EARLIEST_DATE:
        raise DataError(
            f"{name} = {d.isoformat()} is before {EARLIEST_DATE.year}: no MS4 record is older "
            "than the Clean Water Act (1972). Fix: check the year."
        )
    latest = dt.date.today() + dt.timedelta(days=366 * 10)
    if allow_future and d > latest:
        raise DataError(
            f"{name} = {d.isoformat()} is more than ten years ahead. Fix: check the year."
        )
    return d


#: No IDDE record is dated before this day (the Clean Water Act, 18 October 1972).
EARLIEST_DATE = dt.date(1972, 10, 18)


def _coerce(f: Field, value: Any, where: str) -> Any:
    """``value`` as field ``f`` keeps it (``None`` when blank or NaN); a value that breaks
    the field's rule raises :class:`DataError` naming the field of ``where``."""
    label = f"{where} field '{f.name}'"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return _COERCE_KIND.get(f.kind, _as_number)(f, value, label)


def _as_text(f: Field, value: Any, label: str) -> str | None:
    """Text without surrounding blanks; ``None`` when nothing is left."""
    text = str(value).strip()
    return text or None


def _as_time(f: Field, value: Any, label: str) -> str:
    """A time of day as ``HH:MM`` (24 h)."""
    text = str(value).strip()
    m = _TIME.match(text)
    if not m:
        raise DataError(f"{label} = {value!r}: give a time of day as HH:MM (24 h), e.g. 14:30.")
    return f"{int(m.group(1)):02d}:{m.group(2)}"


def _as_bool(f: Field, value: Any, label: str) -> bool:
    """Yes or no: a bool, 0/1 or one of the words of :data:`_TRUE` / :data:`_FALSE`."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise DataError(f"{label} = {value!r}: give yes or no (true/false).")


def _as_severity(f: Field, value: Any, label: str) -> int:
    """A whole number of the severity scale, 0 to 3."""
    try:
        n = float(value)
    except (TypeError, ValueError):
        n = math.nan
    if isinstance(value, bool) or math.isnan(n) or n != int(n) or not 0 <= n <= 3:
        raise DataError(
            f"{label} = {value!r} is outside the severity scale. Fix: give 0 (not "
            "present), 1 (faint), 2 (clearly present) or 3 (severe)."
        )
    return int(n)


def _as_choice(f: Field, value: Any, label: str) -> str:
    """One of the field's choices (lower case)."""
    text = str(value).strip().lower()
    if text not in f.choices:
        raise DataError(f"{label} = {value!r} is not allowed. Fix: select from {list(f.choices)}.")
    return text


def _as_iso_date(f: Field, value: Any, label: str) -> str:
    """A date as ``YYYY-MM-DD`` (:func:`as_date`)."""
    return as_date(value, label).isoformat()


def _as_number(f: Field, value: Any, label: str) -> float | int:
    """A finite number (whole for kind ``int``) within the field's range."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or math.isnan(x) or math.isinf(x):
        raise DataError(f"{label} = {value!r}: give a number{_unit(f)}.")
    if f.kind == "int" and x != int(x):
        raise DataError(f"{label} = {value!r}: give a whole number.")
    if f.lo is not None and x < f.lo or f.hi is not None and x > f.hi:
        rng = f"{f.lo:g} to {f.hi:g}" if f.hi is not None else f">= {f.lo:g}"
        raise DataError(f"{label} = {x:g} is outside {rng}{_unit(f)}. Fix: check the reading.")
    return int(x) if f.kind == "int" else x


#: Field kind -> its coercion ``(field, value, label)``; any other kind is a number.
_COERCE_KIND: dict[str, Callable[[Field, Any, str], Any]] = {
    "text": _as_text,
    "time": _as_time,
    "bool": _as_bool,
    "severity": _as_severity,
    "choice": _as_choice,
    "date": _as_iso_date,
}


def _unit(f: Field) -> str:
    return f" ({f.unit})" if f.unit else ""


def check_fields(
    fields: Mapping[str, Any], spec: tuple[Field, ...], *, where: str
) -> dict[str, Any]:
    """Check and normalise keyword fields against ``spec``.

    Parameters
    ----------
    fields : mapping
        Field name -> value as the user gave it (``None`` = not recorded).
    spec : tuple of Field
    where : str
        ``"inspection"``, ``"sample"``, ``"case"`` (for messages).

    Returns
    -------
    dict
        Field name -> normalised value, only for the fields given.

    Raises
    ------
    DataError
        An unknown keyword (listing the allowed ones) or a value that breaks its rule.
    """
    by_name = {f.name: f for f in spec}
    unknown = sorted(set(fields) - set(by_name))
    if unknown:
        raise DataError(
            f"Unknown {where} field(s) {unknown}. Fix: use only {[f.name for f in spec]}."
        )
    return {k: _coerce(by_name[k], v, where) for k, v in fields.items()}
