"""The 303(d) / ATTAINS CSV importers: read a list of impaired waters into the impairments table.

Two importers read the usual exports, validate every row and name each bad row by
line number: :func:`read_303d` (the columns of the NYSDEC 303(d) list's table) and
:func:`read_attains` (an ATTAINS-style export); :func:`read_impairments` tells them
apart by the header.  Each answers an :class:`ImpairmentsRead`: the table
(:data:`IMPAIRMENT_COLUMNS`), the rows that could not be read and the file.
:func:`read_303d_csv`, :func:`read_attains_csv` and :func:`read_impairments_csv` give
the same as a frame with ``attrs`` (``qa``, ``source_file``, ``skipped_rows``).
:func:`validate_impairments` checks a workspace's ``impairments`` layer the same way.

The words of the lists (:func:`normalize_pollutant`, :func:`normalize_category`) are
here too; the model of the waters (:class:`ms4map.rules.waters.Waters`) and the
pollutant groups are in :mod:`ms4map.rules.waters`.  The accepted layouts are
documented in ``docs/screening.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import DataError, InputOpenError
from ..core.nulls import is_blank
from ..core.qa import QAReport
from .listcsv import apply_column_map, read_text_csv

__all__ = [
    "CATEGORIES",
    "IMPAIRMENT_COLUMNS",
    "KNOWN_POLLUTANTS",
    "NY_LIST_PARTS",
    "ImpairmentsRead",
    "normalize_category",
    "normalize_pollutant",
    "read_303d",
    "read_303d_csv",
    "read_attains",
    "read_attains_csv",
    "read_impairments",
    "read_impairments_csv",
    "validate_impairments",
]

#: EPA integrated-report categories accepted (``5`` = 303(d) list, ``4a`` = TMDL approved).
CATEGORIES = ("1", "2", "3", "4a", "4b", "4c", "5", "5alt")
#: NYSDEC 303(d) list parts; every part of the list is an EPA category 5 listing.
NY_LIST_PARTS = ("1", "2a", "2b", "2c", "2d", "3a", "3b", "3c")

IMPAIRMENT_COLUMNS = (
    "wb_id",
    "name",
    "wb_type",
    "pollutant",
    "pollutant_norm",
    "category",
    "list_part",
    "list_year",
    "source",
    "action_id",
    "origin",
    "line",
)


_PWL_RE = re.compile(r"^\d{4}-\d{4}$")
_AU_RE = re.compile(r"^(?:NY[-_ ]?)?(\d{4}-\d{4})$", re.IGNORECASE)

# Canonical pollutant names and the words that mean them (matched on a lower-cased,
# punctuation-stripped cause).  Order matters: the first match wins.
_POLLUTANT_PATTERNS: tuple[tuple[str, str], ...] = (
    ("pcbs", r"pcb|polychlorinated"),
    # before sediment: "sediment oxygen demand" is an oxygen demand
    ("oxygen demand", r"oxygen|\bdo\b|\bd\.o\.|\bbod\b"),
    ("silt/sediment", r"silt|sediment|siltation|suspended solids|\btss\b|erosion"),
    ("turbidity", r"turbid"),
    ("phosphorus", r"phosph"),
    ("nitrogen", r"nitrogen|nitrate|nitrite"),
    ("ammonia", r"ammonia"),
    # before pathogens: cyanobacteria are algae (a nutrient response), not pathogens
    ("nutrients", r"nutrient|eutroph|algal|algae|cyanobact"),
    (
        "pathogens",
        r"pathogen|coliform|\be\.? ?coli\b|escherichia|enterococ|streptococ|bacteria",
    ),
    ("mercury", r"mercury"),
    ("floatables", r"floatable|trash|garbage"),
    ("ph", r"\bph\b|acidity|acid ?/ ?base|\bacid (?:rain|deposition|mine)"),
    (
        "metals",
        r"\bmetals?\b|cadmium|copper|\blead\b|zinc|\biron\b|aluminum|arsenic|nickel|chromium",
    ),
    ("pesticides", r"pesticide|chlordane|\bddt\b|dioxin"),
    ("chloride", r"chloride|\bsalts?\b|road salt"),
    ("thermal", r"thermal|temperature"),
    ("oil and grease", r"\boils?\b|grease|petroleum"),
)

#: Pollutant names a profile list or ``--pollutants`` may use (plus the group names).
KNOWN_POLLUTANTS: tuple[str, ...] = tuple(c for c, _ in _POLLUTANT_PATTERNS)


def normalize_pollutant(value: Any) -> str:
    """Map a cause/pollutant as written in a list to a canonical name.

    Unknown causes come back lower-cased and trimmed (they still count as a
    listed cause of impairment under the law's definition).

    Examples
    --------
    >>> normalize_pollutant("Phosphorus (Total)")
    'phosphorus'
    >>> normalize_pollutant("Polychlorinated biphenyls")
    'pcbs'
    >>> normalize_pollutant("Silt/Sediment")
    'silt/sediment'
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    text = " ".join(str(value).strip().lower().split())
    for canon, pat in _POLLUTANT_PATTERNS:
        if re.search(pat, text):
            return canon
    return text


def normalize_category(value: Any, *, list_part: bool = False) -> str | None:
    """``"5"``, ``"4A"``, ``"Category 4a"``, NYSDEC ``"Part 1"``/``"2a"`` -> EPA category.

    Returns ``None`` for an unknown value.  NYSDEC list parts (1, 2a-2d, 3a-3c) are
    all 303(d) listings, EPA category 5.  A bare ``"1"`` is list part 1 when
    ``list_part`` is true (a NYSDEC "List Part" column) or prefixed ``Part``, else
    EPA category 1.
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    text = str(value).strip().lower()
    if text.startswith("part"):
        list_part = True
    text = re.sub(r"^(category|cat\.?|part)\s*", "", text).strip()
    if text.endswith(".0"):
        text = text[:-2]
    if list_part and text in NY_LIST_PARTS:
        return "5"
    if text in CATEGORIES:
        return text
    if text in NY_LIST_PARTS:
        return "5"
    return None


# --------------------------------------------------------------------------------------
# CSV importers
# --------------------------------------------------------------------------------------
_NYSDEC_COLUMNS: dict[str, tuple[str, ...]] = {
    "wb_id": (
        "pwl_id", "pwl", "pwlid", "waterbody_id", "wbid", "wb_id", "pwl_number", "pwl_no",
        "pwl_segment", "pwl_segment_id", "water_body_id", "segment_id", "wi_pwl_id",
    ),
    "name": ("waterbody_name", "waterbody", "water_body_name", "name", "water_name", "water"),
    "wb_type": ("type", "waterbody_type", "water_type", "water_body_type"),
    "pollutant": (
        "cause_pollutant", "cause", "pollutant", "causes_pollutants", "pollutant_cause",
        "pollutants", "causes", "impairment", "impairments", "cause_of_impairment",
        "impairment_cause", "known_pollutant", "parameter",
    ),
    "source": (
        "suspected_source", "suspected_sources", "source", "sources", "source_of_impairment",
        "pollutant_source", "probable_source",
    ),
    "list_part": (
        "list_part", "part", "category", "list_category", "listing_part", "303d_part",
        "303_d_part", "section_303d_part", "ir_category", "listing_category",
    ),
    "list_year": ("list_year", "year", "cycle", "listing_year", "year_listed", "list_cycle"),
}  # fmt: skip
_ATTAINS_COLUMNS: dict[str, tuple[str, ...]] = {
    "au_id": (
        "assessment_unit_id",
        "assessmentunitidentifier",
        "assessment_unit_identifier",
        "au_id",
        "auid",
    ),
    "name": ("assessment_unit_name", "assessmentunitname", "waterbody_name", "name"),
    "pollutant": ("parameter", "parameter_name", "parametername", "cause"),
    "category": (
        "category",
        "epa_ir_category",
        "parameter_ir_category",
        "ir_category",
        "epairCategory".lower(),
        "parameteriRcategory".lower(),
    ),
    "action_id": (
        "action_id",
        "associated_action_identifier",
        "actionidentifier",
        "associatedactionidentifier",
        "tmdl_id",
    ),
    "list_year": ("cycle", "reporting_cycle", "reportingcycle", "list_year", "year"),
    "source": ("source", "sources", "suspected_source"),
}


def _norm_header(h: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", str(h).strip().lower()).strip("_")


def _map_headers(cols: list[str], spec: dict[str, tuple[str, ...]]) -> dict[str, str]:
    norm = {_norm_header(c): c for c in cols}
    out: dict[str, str] = {}
    for canon, names in spec.items():
        for n in names:
            if n in norm:
                out[canon] = norm[n]
                break
    return out


def _read_csv(path: str | Path) -> pd.DataFrame:
    """The CSV as text; comma, semicolon or tab separated (sniffed)."""
    return read_text_csv(path)


def _finish(
    rows: list[dict[str, Any]], problems: list[str], *, path: Path, kind: str, on_error: str
) -> tuple[pd.DataFrame, QAReport]:
    """The table of the rows read and a QA warning ``impairment_row_skipped`` per bad row
    (with ``on_error="raise"``, one :class:`DataError` naming them instead)."""
    if problems and on_error == "raise":
        lines = [f"{kind} {str(path)!r}: {len(problems)} bad row(s):"]
        lines += [f"  - {p}" for p in problems[:50]]
        if len(problems) > 50:
            lines.append(f"  ... and {len(problems) - 50} more")
        lines.append(
            "Fix the rows named above, or import with on_error='skip' to keep the "
            "good rows and report the bad ones."
        )
        raise DataError("\n".join(lines))
    df = pd.DataFrame(rows, columns=list(IMPAIRMENT_COLUMNS))
    df["list_year"] = pd.array(df["list_year"], dtype="Int64")
    df["line"] = df["line"].astype("int64")
    qa = QAReport()
    for text in problems:
        qa.warning(
            "impairment_row_skipped",
            "impairments",
            text,
            feature_id=text.split(":", 1)[0],
            step="import",
        )
    return df, qa


def _first_listing(
    seen: dict[tuple[str, str], int],
    key: tuple[str, str],
    line: int,
    pollutant: str,
    problems: list[str],
) -> bool:
    """Whether ``key`` (water, normalised pollutant) is listed for the first time; a
    repeat is a problem naming the line that listed it first."""
    if key in seen:
        problems.append(
            f"line {line}: duplicate listing of {key[0]} for {pollutant!r} "
            f"(already on line {seen[key]})"
        )
        return False
    seen[key] = line
    return True


def _list_year(text: str, column: str, bad: list[str]) -> int | None:
    """The listing year of a CSV row (``None`` when blank; a problem in ``bad`` when it is
    not a year)."""
    if not text:
        return None
    try:
        return int(float(text))
    except ValueError:
        bad.append(f"{column} {text!r} is not a year")
        return None


def _read_list_csv(
    path: str | Path,
    on_error: str,
    spec: dict[str, tuple[str, ...]],
    required: dict[str, str],
    *,
    what: str,
    fix: str,
    columns: Mapping[str, str] | None = None,
    translate: Mapping[str, str] | None = None,
) -> tuple[Path, pd.DataFrame, dict[str, str]]:
    """Read a list CSV and map its headers (``spec``, then the user's ``columns``); refuse
    a bad ``on_error`` and a file that lacks a ``required`` column (canonical name -> the
    name its users know)."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"Unknown on_error: {on_error!r}, select from ['raise', 'skip']")
    p = Path(path)
    raw = _read_csv(p)
    headers = list(raw.columns)
    cols = _map_headers(headers, spec)
    cols = apply_column_map(cols, columns, headers, translate=translate, what=f"{what} {p.name}")
    missing = [c for c in required if c not in cols]
    if missing:
        back = {v: k for k, v in (translate or {}).items()}
        mapping = " ".join(f"--field impairments.{back.get(m, m)}=COLUMN" for m in missing)
        if cols:  # a list with other names: its headers help to map them
            shown = [h if len(h) <= 40 else h[:37] + "..." for h in headers[:12]]
            more = f" and {len(headers) - 12} more" if len(headers) > 12 else ""
            has = f"it has {shown}{more}"
        else:  # not such a list at all: its first line is not repeated (it may be anything)
            has = f"none of its {len(headers)} column(s) is a column of such a list"
        raise DataError(
            f"{what} {str(p)!r} lacks the column(s) {[required[m] for m in missing]}; {has}. "
            f"Fix: {fix} Or say which column holds each with {mapping}."
        )
    return p, raw, cols


#: A listing parser: ``parse(get, cols, bad)`` reads one CSV record through ``get`` (a
#: canonical column's stripped text, ``""`` when absent; ``cols`` maps the canonical
#: names to the headers found) and appends what is wrong to ``bad``; it returns the PWL
#: ID, the pollutants listed and the other listing fields.
_ListingParser = Callable[
    [Callable[[str], str], dict[str, str], list[str]], tuple[str, list[str], dict[str, Any]]
]


def _nysdec_listing(
    get: Callable[[str], str], cols: dict[str, str], bad: list[str]
) -> tuple[str, list[str], dict[str, Any]]:
    """One record of the NYSDEC 303(d) CSV (see :func:`read_303d_csv`).

    Parameters
    ----------
    get : callable
        A canonical column's stripped text of the record (``""`` when absent).
    cols : dict
        ``{canonical: header}`` of the columns found; a list part column headed
        ``Category`` holds EPA categories.
    bad : list of str
        What is wrong with the record is appended here.

    Returns
    -------
    tuple
        The PWL ID, the causes (several in one cell separated by ``;``) and the other
        listing fields (``wb_type``, ``category``, ``list_part``, ``list_year``,
        ``action_id``).
    """
    wb = get("wb_id")
    if not _PWL_RE.match(wb):
        bad.append(f"PWL ID {wb!r} is not in the NYSDEC format NNNN-NNNN (e.g. 1302-0092)")
    part = get("list_part")
    cat = normalize_category(part, list_part=_norm_header(cols["list_part"]) != "category")
    if cat is None:
        bad.append(
            f"list part/category {part!r} is unknown; select from NYSDEC parts "
            f"{list(NY_LIST_PARTS)} or EPA categories {list(CATEGORIES)}"
        )
    causes = [c.strip() for c in get("pollutant").split(";") if c.strip()]
    if not causes:
        bad.append("Cause/Pollutant is empty")
    year = _list_year(get("list_year"), "List Year", bad)
    return (
        wb,
        causes,
        {
            "wb_type": get("wb_type") or None,
            "category": cat,
            "list_part": part.lower().replace("part", "").strip() or None,
            "list_year": year,
            "action_id": None,
        },
    )


def _attains_listing(
    get: Callable[[str], str], cols: dict[str, str], bad: list[str]
) -> tuple[str, list[str], dict[str, Any]]:
    """One record of an ATTAINS-style CSV (see :func:`read_attains_csv`).

    Parameters and return value as :func:`_nysdec_listing`; the one pollutant is the
    ``parameter`` and ``action_id`` is filled.
    """
    au = get("au_id")
    m = _AU_RE.match(au)
    if not m:
        bad.append(
            f"assessment unit id {au!r} does not hold a PWL ID NNNN-NNNN "
            "(accepted: NY1302-0092, NY-1302-0092, 1302-0092)"
        )
    cat_txt = get("category")
    cat = normalize_category(cat_txt)
    if cat is None or cat_txt.lower().startswith("part"):
        bad.append(f"category {cat_txt!r} is unknown; select from {list(CATEGORIES)}")
    pol = get("pollutant")
    if not pol:
        bad.append("parameter is empty")
    action = get("action_id") or None
    if cat == "4a" and not action:
        bad.append("category 4a (TMDL approved) needs the TMDL's action id")
    year = _list_year(get("list_year"), "cycle", bad)
    listing = {
        "wb_type": None,
        "category": cat,
        "list_part": None,
        "list_year": year,
        "action_id": action,
    }
    return (m.group(1) if m else au), [pol], listing


def _csv_listings(
    raw: pd.DataFrame, cols: dict[str, str], parse: _ListingParser, *, origin: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """The impairment rows of a listing CSV, and its bad rows.

    Parameters
    ----------
    raw : DataFrame
        The CSV as read.
    cols : dict
        ``{canonical: header}`` of the columns found.
    parse : callable
        Reads one record (:data:`_ListingParser`).
    origin : str
        The rows' ``origin``.

    Returns
    -------
    rows : list of dict
        One row per listing (first listing of a PWL ID + pollutant only).
    problems : list of str
        ``"line N: ..."`` for every bad or duplicate row.
    skipped : list of dict
        The rows that could not be read (not the duplicates, whose listing an earlier
        line holds): ``line``, ``wb_id`` (as written), ``name``, ``pollutant``,
        ``problem``.  :class:`ms4map.rules.waters.Waters` reads them
        (:attr:`ImpairmentsRead.skipped_rows`): a water
        with such a row is never a confident "not listed".
    """
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    skipped: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, rec in enumerate(raw.to_dict("records")):
        line = i + 2  # header is line 1

        def get(k: str, rec: dict[str, Any] = rec) -> str:
            return str(rec[cols[k]]).strip() if k in cols else ""

        bad: list[str] = []
        wb, pollutants, listing = parse(get, cols, bad)
        if bad:
            problems.append(f"line {line}: " + "; ".join(bad))
            skipped.append(
                {
                    "line": line,
                    "wb_id": wb,
                    "name": get("name") or None,
                    "pollutant": "; ".join(pollutants) or None,
                    "problem": "; ".join(bad),
                }
            )
            continue
        for pol in pollutants:
            key = (wb, normalize_pollutant(pol))
            if not _first_listing(seen, key, line, pol, problems):
                continue
            rows.append(
                {
                    "wb_id": wb,
                    "name": get("name") or None,
                    "wb_type": listing["wb_type"],
                    "pollutant": pol,
                    "pollutant_norm": key[1],
                    "category": listing["category"],
                    "list_part": listing["list_part"],
                    "list_year": listing["list_year"],
                    "source": get("source") or None,
                    "action_id": listing["action_id"],
                    "origin": origin,
                    "line": line,
                }
            )
    return rows, problems, skipped


@dataclass(frozen=True)
class _ListFormat:
    """A kind of listing CSV: its headers, the columns it must have, how a record reads."""

    what: str  # its name in messages
    spec: dict[str, tuple[str, ...]]  # canonical column -> accepted headers
    required: dict[str, str]  # canonical column -> the name its users know
    fix: str  # what to do when a required column is missing
    parse: _ListingParser
    origin: str  # the rows' ``origin``
    #: the impairments layer's column names (``--field impairments.COLUMN=``) -> its own
    translate: dict[str, str] = field(default_factory=dict)


_NYSDEC_CSV = _ListFormat(
    what="303(d) CSV",
    spec=_NYSDEC_COLUMNS,
    required={"wb_id": "PWL ID", "pollutant": "Cause/Pollutant", "list_part": "List Part"},
    fix="name the columns as in the NYSDEC list (PWL ID, Waterbody Name, Type, "
    "Cause/Pollutant, Suspected Source, List Part).",
    parse=_nysdec_listing,
    origin="nysdec_303d_csv",
    translate={"category": "list_part"},
)
_ATTAINS_CSV = _ListFormat(
    what="ATTAINS CSV",
    spec=_ATTAINS_COLUMNS,
    required={"au_id": "assessment unit id", "pollutant": "parameter", "category": "category"},
    fix="export assessment unit id, parameter, category and action id columns.",
    parse=_attains_listing,
    origin="attains_csv",
    translate={"wb_id": "au_id"},
)


@dataclass(frozen=True, eq=False)
class ImpairmentsRead:
    """A list of impaired waters as read from a CSV (see :func:`read_303d`).

    Attributes
    ----------
    table : DataFrame
        Columns :data:`IMPAIRMENT_COLUMNS`, one row per listing (no ``attrs``).
    skipped_rows : tuple of dict
        The rows that could not be read (not the duplicates, whose listing an earlier
        line holds), each with ``line``, ``wb_id`` (as written), ``name``,
        ``pollutant``, ``problem`` and ``file`` (the file's name):
        :class:`ms4map.rules.waters.Waters` keeps them in ``skipped`` (their waters are
        never "not listed").
    source_file : str
        The path read.
    qa : QAReport
        A warning ``impairment_row_skipped`` per bad or duplicate row.
    """

    table: pd.DataFrame
    skipped_rows: tuple[dict[str, Any], ...] = ()
    source_file: str = ""
    qa: QAReport = field(default_factory=QAReport)

    def __repr__(self) -> str:
        return (
            f"ImpairmentsRead({len(self.table)} listings, {len(self.skipped_rows)} rows "
            f"skipped, source_file={self.source_file!r})"
        )

    def to_frame(self) -> pd.DataFrame:
        """The table as :func:`read_303d_csv` gives it: a (shallow) copy with
        ``attrs["qa"]``, ``attrs["source_file"]`` and ``attrs["skipped_rows"]``."""
        out = self.table.copy(deep=False)
        out.attrs["qa"] = self.qa
        out.attrs["source_file"] = self.source_file
        out.attrs["skipped_rows"] = [dict(x) for x in self.skipped_rows]
        return out


def _read_listings(
    path: str | Path,
    on_error: str,
    fmt: _ListFormat,
    columns: Mapping[str, str] | None = None,
) -> ImpairmentsRead:
    """Read a listing CSV of kind ``fmt`` (see :func:`read_303d`).

    Parameters
    ----------
    path : str or Path
    on_error : {"raise", "skip"}
    fmt : _ListFormat
    columns : mapping, optional
        The impairments layer's column (``wb_id``, ``pollutant``, ``category``,
        ``list_year``, ``source``) -> the CSV's header holding it.

    Returns
    -------
    ImpairmentsRead
        The table (columns :data:`IMPAIRMENT_COLUMNS`, one row per listing), the rows
        skipped, the file and the QA findings.
    """
    p, raw, cols = _read_list_csv(
        path,
        on_error,
        fmt.spec,
        fmt.required,
        what=fmt.what,
        fix=fmt.fix,
        columns=columns,
        translate=fmt.translate,
    )
    rows, problems, skipped = _csv_listings(raw, cols, fmt.parse, origin=fmt.origin)
    df, qa = _finish(rows, problems, path=p, kind=fmt.what, on_error=on_error)
    return ImpairmentsRead(
        table=df,
        skipped_rows=tuple({**x, "file": p.name} for x in skipped),
        source_file=str(p),
        qa=qa,
    )


def read_303d(
    path: str | Path, *, on_error: str = "raise", columns: Mapping[str, str] | None = None
) -> ImpairmentsRead:
    """Read a CSV with the columns of the NYSDEC 303(d) list's table.

    Columns (header names are matched case- and punctuation-insensitively):
    ``PWL ID`` (required), ``Waterbody Name``, ``Type``, ``Cause/Pollutant``
    (required; several causes in one cell separated by ``;``), ``Suspected Source``,
    ``List Part`` (required: NYSDEC part ``1``, ``2a``-``2d``, ``3a``-``3c``, or an
    EPA category ``5``, ``4a``, ...) and optionally ``List Year``.  Comma, semicolon
    and tab separated files are read alike (the delimiter is sniffed).

    Parameters
    ----------
    path : str or Path
    on_error : {"raise", "skip"}
        ``"raise"`` (default): one :class:`DataError` listing every bad row.
        ``"skip"``: keep the good rows; each bad one is a QA warning
        ``impairment_row_skipped`` in :attr:`ImpairmentsRead.qa`, and the unreadable
        ones (not the duplicates) are in :attr:`ImpairmentsRead.skipped_rows`, which
        :class:`ms4map.rules.waters.Waters` keeps in ``Waters.skipped`` (their waters
        are never "not listed").
    columns : mapping, optional
        Columns named otherwise than the aliases know: the impairments layer's column
        (``wb_id``, ``pollutant``, ``category`` (the list part), ``list_year``,
        ``source``) -> the CSV's header (``--field impairments.wb_id=Water ID``).

    Returns
    -------
    ImpairmentsRead
        The table (columns :data:`IMPAIRMENT_COLUMNS`, one row per listing), the rows
        skipped, the file and the QA findings.

    Raises
    ------
    DataError
        Missing required columns; with ``on_error="raise"``, any bad row (PWL ID not
        ``NNNN-NNNN``, unknown list part/category, missing pollutant, duplicate
        PWL ID + pollutant).
    """
    return _read_listings(path, on_error, _NYSDEC_CSV, columns)


def read_303d_csv(path: str | Path, *, on_error: str = "raise") -> pd.DataFrame:
    """:func:`read_303d` as a frame: the table with ``attrs["qa"]``,
    ``attrs["source_file"]`` and ``attrs["skipped_rows"]`` (:meth:`ImpairmentsRead.to_frame`).
    """
    return read_303d(path, on_error=on_error).to_frame()


def read_attains(
    path: str | Path, *, on_error: str = "raise", columns: Mapping[str, str] | None = None
) -> ImpairmentsRead:
    """Read an ATTAINS-style CSV export of assessment-unit parameters.

    Columns (matched case- and punctuation-insensitively): assessment unit id
    (``assessmentUnitIdentifier``/``assessment_unit_id``; ``NY1302-0092``,
    ``NY-1302-0092`` or ``1302-0092``), ``parameter`` (the cause), ``category``
    (EPA IR category: ``5``, ``4a``, ...), ``action id`` (the TMDL action, expected
    for category 4a); optional assessment unit name, cycle, source.

    Parameters and return value as :func:`read_303d`; ``origin`` is
    ``"attains_csv"`` and ``action_id`` is filled.
    """
    return _read_listings(path, on_error, _ATTAINS_CSV, columns)


def read_attains_csv(path: str | Path, *, on_error: str = "raise") -> pd.DataFrame:
    """:func:`read_attains` as a frame with ``attrs`` (see :func:`read_303d_csv`)."""
    return read_attains(path, on_error=on_error).to_frame()


def validate_impairments(df: pd.DataFrame, *, layer: str = "impairments") -> pd.DataFrame:
    """Check and normalise an impairments table (the workspace layer or an import).

    Returns a new frame with :data:`IMPAIRMENT_COLUMNS`; raises :class:`DataError`
    listing every bad row (PWL ID format, unknown category, missing pollutant,
    duplicates).
    """
    problems: list[str] = []
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for i, rec in enumerate(df.to_dict("records")):
        wb = "" if is_blank(rec.get("wb_id")) else str(rec["wb_id"]).strip()
        pol = "" if is_blank(rec.get("pollutant")) else str(rec["pollutant"]).strip()
        cat_raw = rec.get("category")
        cat = "5" if is_blank(cat_raw) else normalize_category(cat_raw)
        bad = []
        if not _PWL_RE.match(wb):
            bad.append(f"wb_id {wb!r} is not a PWL ID NNNN-NNNN")
        if not pol:
            bad.append("pollutant is empty")
        if cat is None:
            bad.append(f"category {cat_raw!r} is unknown; select from {list(CATEGORIES)}")
        if bad:
            problems.append(f"row {i + 1}: " + "; ".join(bad))
            continue
        key = (wb, normalize_pollutant(pol), cat)
        if key in seen:
            problems.append(f"row {i + 1}: duplicate of row {seen[key]} ({wb}, {pol})")
            continue
        seen[key] = i + 1
        year = rec.get("list_year")
        rows.append(
            {
                "wb_id": wb,
                "name": None if is_blank(rec.get("name")) else rec.get("name"),
                "wb_type": None,
                "pollutant": pol,
                "pollutant_norm": key[1],
                "category": cat,
                "list_part": None if is_blank(rec.get("list_part")) else rec.get("list_part"),
                "list_year": None if is_blank(year) else int(float(year)),
                "source": None if is_blank(rec.get("source")) else str(rec.get("source")),
                "action_id": None if is_blank(rec.get("action_id")) else rec.get("action_id"),
                "origin": rec.get("origin") if not is_blank(rec.get("origin")) else layer,
                "line": i + 1,
            }
        )
    if problems:
        raise DataError(
            f"Layer '{layer}' has {len(problems)} bad row(s):\n"
            + "\n".join(f"  - {p}" for p in problems[:50])
            + "\nFix: give wb_id as NNNN-NNNN, a pollutant, and a category "
            f"from {list(CATEGORIES)}."
        )
    out = pd.DataFrame(rows, columns=list(IMPAIRMENT_COLUMNS))
    out["list_year"] = pd.array(out["list_year"], dtype="Int64")
    return out


def read_impairments(
    path: str | Path, *, columns: Mapping[str, str] | None = None
) -> ImpairmentsRead:
    """An impaired-waters CSV, NYSDEC 303(d) or EPA ATTAINS (told apart by its header).

    Rows that cannot be read are skipped and reported as QA findings in
    :attr:`ImpairmentsRead.qa` (``impairment_row_skipped``).  Used by ``ms4map screen
    --impairments`` and by ``ms4map batch`` for a town's ``impairments``
    (:func:`ms4map.rules.waters.waters_for`).  ``columns``: as for :func:`read_303d`.

    Raises
    ------
    InputOpenError
        The file does not exist or is empty.
    """
    path = Path(path)
    head = path.read_text(encoding="utf-8-sig").splitlines()[:1] if path.is_file() else []
    if not head:
        raise InputOpenError(f"--impairments {str(path)!r} does not exist or is empty.")
    low = head[0].lower()
    reader = read_attains if "assessment" in low or "parameter" in low else read_303d
    return reader(path, on_error="skip", columns=columns)


def read_impairments_csv(path: str | Path) -> pd.DataFrame:
    """:func:`read_impairments` as a frame with ``attrs`` (see :func:`read_303d_csv`)."""
    return read_impairments(path).to_frame()
