"""CSV tables as people save them: the delimiter sniffed, columns named by a field map.

A 303(d) list saved by a spreadsheet in a European locale is separated by semicolons,
one exported from a database by tabs; :func:`read_text_csv` reads either (and commas)
as text.  :func:`apply_column_map` puts the columns a user names (``--field
impairments.wb_id=Water ID``, the app's boxes) over those the aliases found.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ..core.errors import DataError, InputOpenError

__all__ = ["DELIMITERS", "apply_column_map", "read_text_csv", "sniff_delimiter"]

#: The delimiters a list CSV may use, by name (for messages).
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}


def sniff_delimiter(text: str) -> str:
    """The delimiter of a CSV's text: ``csv.Sniffer`` on its first lines, checked
    against the header (the delimiter must split the header); a comma when unsure.

    Only the header decides between candidates the sniffer leaves open: a comma CSV
    whose cells list causes separated by ``;`` stays a comma CSV.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()][:20]
    if not lines:
        return ","
    header = lines[0]
    counts = {d: _unquoted_count(header, d) for d in DELIMITERS}
    try:
        sniffed = csv.Sniffer().sniff("\n".join(lines), delimiters="".join(DELIMITERS))
        if counts.get(sniffed.delimiter, 0) > 0 and counts[sniffed.delimiter] >= max(
            counts.values()
        ):
            return sniffed.delimiter
    except csv.Error:
        pass
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] > 0 else ","


def _unquoted_count(line: str, delim: str) -> int:
    n, quoted = 0, False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif ch == delim and not quoted:
            n += 1
    return n


def read_text_csv(path: str | Path) -> pd.DataFrame:
    """A CSV file as text cells (no NA guessing), its delimiter sniffed
    (:func:`sniff_delimiter`); ``attrs["delimiter"]`` says which.

    Raises
    ------
    InputOpenError
        The file does not exist.
    DataError
        It cannot be parsed.
    """
    p = Path(path)
    if not p.is_file():
        raise InputOpenError(f"CSV file {str(p)!r} does not exist or is not a file.")
    try:
        with open(p, encoding="utf-8-sig", newline="") as fh:
            sample = fh.read(64 * 1024)
        encoding = "utf-8-sig"
    except UnicodeDecodeError:
        with open(p, encoding="latin-1", newline="") as fh:
            sample = fh.read(64 * 1024)
        encoding = "latin-1"
    sep = sniff_delimiter(sample)
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False, encoding=encoding, sep=sep)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(
            f"Cannot parse {str(p)!r} as CSV ({DELIMITERS[sep]}-separated): {exc}. Fix: save "
            "it as a CSV file with one header row."
        ) from exc
    df.columns = [str(c).strip() for c in df.columns]
    df.attrs["delimiter"] = sep
    return df


def apply_column_map(
    found: dict[str, str],
    columns: Mapping[str, str] | None,
    headers: list[str],
    *,
    translate: Mapping[str, str] | None = None,
    what: str = "CSV",
) -> dict[str, str]:
    """``found`` (canonical -> header, from the aliases) with the user's ``columns``
    (canonical -> header) over it.

    ``translate`` renames a user's canonical name to the reader's own (the
    impairments layer's ``category`` is the NYSDEC list's ``list_part``).  A header is
    matched exactly, else ignoring case and spaces.

    Raises
    ------
    DataError
        A named header that the file does not have (the message lists those it has).
    """
    out = dict(found)
    norm = {h.strip().lower(): h for h in headers}
    for canon, header in (columns or {}).items():
        key = (translate or {}).get(canon, canon)
        got = header if header in headers else norm.get(str(header).strip().lower())
        if got is None:
            raise DataError(
                f"{what}: the field map names column {header!r} for {canon}, but the file "
                f"has no such column; it has {headers}. Fix: name one of these."
            )
        out[key] = got
    return out
