"""Spreadsheet-safe CSV text: every CSV ms4map writes or offers for download goes here.

A cell of text that begins with ``=``, ``+``, ``-``, ``@``, a TAB or a carriage return
is read by Excel, LibreOffice and Google Sheets as a formula (OWASP "CSV injection"): an
owner's name ``=HYPERLINK(...)`` in a mailing list would run when the clerk opens it.
Such a cell is written with a leading apostrophe (OWASP's rule), which spreadsheets show
as plain text; numbers (a negative invert is a number, not text) are left as they are.
The files ms4map reads back (GeoPackages, JSON) keep the values unchanged.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: The first characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """``value``, with a leading ``'`` when it is text a spreadsheet would run."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells (and column names) no spreadsheet runs."""
    out = pd.DataFrame(frame).copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(safe_cell)
    out.columns = [safe_cell(c) for c in out.columns]
    return out


def csv_text(frame: pd.DataFrame, **kwargs: Any) -> str:
    """``frame.to_csv(index=False, **kwargs)`` made spreadsheet-safe (:func:`safe_frame`);
    a ``geometry`` column is left out."""
    kwargs.setdefault("index", False)
    plain = pd.DataFrame(frame).drop(columns=["geometry"], errors="ignore")
    return safe_frame(plain).to_csv(**kwargs)
