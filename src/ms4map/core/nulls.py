"""The one place that says what "no value" means (private; import the functions).

Tables read from GIS files carry missing values in many forms: ``None``, ``numpy.nan``,
``pandas.NA``, ``pandas.NaT``, empty or blank strings, and the words some exports write
for an empty field (``<Null>``, ``NULL``, ``None``).  The modules used to carry their own
copies of these tests (``_blank``, ``_is_blank``, ``_isna``, ``_truthy``); they differ in
meaning in a few places, and each meaning is kept here as its own function:

- :func:`is_blank` -- no value, or only whitespace (the rules' test for a field);
- :func:`is_blank_or_null_marker` -- :func:`is_blank`, ``NaT``, or a null word written by
  a GIS export (the reader's test for raw source values);
- :func:`is_na` -- :func:`pandas.isna` for one value, ``False`` for what it cannot decide
  (lists, arrays), so it is safe on any cell;
- :func:`is_na_or_empty` -- :func:`is_na` for non-strings, or exactly ``""`` (a blank
  string of spaces is a value: the records' dates and ids);
- :func:`none_if_na` -- the value, or ``None`` when :func:`is_na_or_empty`'s non-string
  part says it is missing (strings are kept as they are);
- :func:`is_truthy` -- a yes/no cell read as a bool (missing is ``False``; the strings
  ``true``, ``yes``, ``1`` and ``y`` are ``True``).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

__all__ = [
    "NULL_MARKERS",
    "is_blank",
    "is_blank_or_null_marker",
    "is_na",
    "is_na_or_empty",
    "is_truthy",
    "none_if_na",
]

#: Words GIS exports write for an empty field (compared after stripping, case-sensitive).
NULL_MARKERS = ("", "<Null>", "NULL", "None")
_TRUE_WORDS = ("true", "yes", "1", "y")


def is_blank(value: Any) -> bool:
    """Whether a cell holds no value: ``None``, ``pandas.NA``, a float NaN or a string of
    whitespace only.

    Parameters
    ----------
    value : Any
        One cell.

    Returns
    -------
    bool
        ``True`` for a missing or blank value.  ``pandas.NaT`` and the words of
        :data:`NULL_MARKERS` are values here (see :func:`is_blank_or_null_marker`).

    Examples
    --------
    >>> is_blank(None), is_blank(float("nan")), is_blank("  "), is_blank("0"), is_blank(0)
    (True, True, True, False, False)
    """
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def is_blank_or_null_marker(value: Any) -> bool:
    """Whether a raw source value is empty: :func:`is_blank`, ``pandas.NaT``, or one of the
    words GIS exports write for an empty field (:data:`NULL_MARKERS`).

    Parameters
    ----------
    value : Any
        One cell as read from a user's file.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_blank_or_null_marker("<Null>"), is_blank_or_null_marker("null")
    (True, False)
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() in NULL_MARKERS


def is_na(value: Any) -> bool:
    """:func:`pandas.isna` for one value, never raising.

    Parameters
    ----------
    value : Any
        One cell (any type).

    Returns
    -------
    bool
        ``True`` for ``None``, NaN of any float type, ``pandas.NA`` and ``NaT``; ``False``
        for strings (even empty ones) and for values :func:`pandas.isna` cannot answer with
        one bool (lists and arrays of several items).
    """
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def is_na_or_empty(value: Any) -> bool:
    """Whether a cell is missing: :func:`pandas.isna` for a non-string, or exactly ``""``.

    Parameters
    ----------
    value : Any
        One scalar cell (a record's field).

    Returns
    -------
    bool
        A string of spaces is not empty here (unlike :func:`is_blank`).
    """
    return value is None or (not isinstance(value, str) and pd.isna(value)) or value == ""


def none_if_na(value: Any) -> Any:
    """The value, or ``None`` when it is a missing non-string scalar.

    Parameters
    ----------
    value : Any
        One scalar cell.

    Returns
    -------
    Any
        ``None`` for ``None``, NaN, ``pandas.NA`` and ``NaT``; anything else unchanged
        (strings included, even empty ones).
    """
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else value


def is_truthy(value: Any) -> bool:
    """A yes/no cell as a bool.

    Parameters
    ----------
    value : Any
        One cell: a bool, a number, a word or a missing value.

    Returns
    -------
    bool
        ``False`` for a missing value (:func:`is_na`); for a string, whether it is one of
        ``true``, ``yes``, ``1``, ``y`` (case- and space-insensitive); else ``bool(value)``.

    Examples
    --------
    >>> is_truthy("Yes"), is_truthy("no"), is_truthy(float("nan")), is_truthy(1)
    (True, False, False, True)
    """
    if value is None or is_na(value):
        return False
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_WORDS
    return bool(value)
