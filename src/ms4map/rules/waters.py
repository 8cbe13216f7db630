"""Impaired waters: the 303(d) list, TMDL watersheds, and importers for their CSV exports.

The model is a :class:`Waters` bundle of three frames:

- ``waterbodies``: ``wb_id`` (NYSDEC PWL ID ``NNNN-NNNN``), ``name``, ``kind``
  (and geometry when the workspace has it);
- ``impairments``: one row per listing, ``wb_id``, ``pollutant`` (as written),
  ``pollutant_norm`` (see :func:`normalize_pollutant`), ``category`` (EPA
  integrated-report category: ``5`` = TMDL needed, ``4a`` = TMDL approved, ...),
  ``list_part`` (NYSDEC list part when imported from the list), ``list_year``,
  ``source`` (suspected source), ``action_id`` (ATTAINS action), ``origin``;
- ``tmdl_watersheds``: ``tmdl_id``, ``name``, ``pollutant``, ``stormwater_source``
  (bool), ``approved``, geometry.

Two importers read the usual exports, validate every row and name each bad row
by line number: :func:`read_303d_csv` (the columns of the NYSDEC 303(d) list's
table) and :func:`read_attains_csv` (an ATTAINS-style export).  The accepted
layouts are documented in ``docs/screening.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ms4map.core.nulls import is_blank

from ..core.errors import DataError, InputOpenError, UsageError
from ..core.qa import QAReport
from ..core.schema import (
    LEGAL_LAYERS,  # re-exported: io reads it too
    id_text,
    normalize_pwl_id,
)
from ..io.aliases import stormwater_source_value

if TYPE_CHECKING:
    from ..io.workspace import Workspace

__all__ = [
    "CATEGORIES",
    "IMPAIRMENT_COLUMNS",
    "NY_LIST_PARTS",
    "KNOWN_POLLUTANTS",
    "LEGAL_LAYERS",
    "missing_layer_reason",
    "missing_layer_short",
    "POLLUTANT_GROUPS",
    "SKIPPED_ROWS_FIX",
    "Waters",
    "canonical_pollutants",
    "normalize_category",
    "normalize_pollutant",
    "pollutant_in",
    "read_303d_csv",
    "read_attains_csv",
    "read_impairments_csv",
    "skipped_rows_text",
    "validate_impairments",
    "waters_for",
    "workspace_qa",
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


def missing_layer_reason(layer: str) -> str:
    """One sentence: the legal layer ``layer`` is missing, what it is needed for, the fix."""
    what, needed, fix = LEGAL_LAYERS[layer]
    return f"{what[0].upper()}{what[1:]} (layer `{layer}`), needed for {needed}: {fix}."


def missing_layer_short(layer: str) -> str:
    """The short form for a table cell: ``"no 303(d) list in the workspace (add ...)"``."""
    what, _needed, fix = LEGAL_LAYERS[layer]
    return f"{what} ({fix})"


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

#: Pollutant groups: a profile list or the septic list may name a group or a member.
POLLUTANT_GROUPS: dict[str, frozenset[str]] = {
    "sediment": frozenset({"silt/sediment", "turbidity"}),
    "silt/sediment": frozenset({"silt/sediment", "turbidity"}),
    "nutrients": frozenset({"phosphorus", "nitrogen", "ammonia", "nutrients"}),
    "pathogens": frozenset({"pathogens"}),
}


#: Pollutant names a profile list or ``--pollutants`` may use (plus the group names).
KNOWN_POLLUTANTS: tuple[str, ...] = tuple(c for c, _ in _POLLUTANT_PATTERNS)


def canonical_pollutants(names: Iterable[Any], *, where: str = "--pollutants") -> tuple[str, ...]:
    """Validate a list of pollutants of concern; return canonical names and groups.

    Each entry is a group (``sediment``, ``silt/sediment``, ``nutrients``,
    ``pathogens``) or a name :func:`normalize_pollutant` recognises (so
    ``"Total Phosphorus"`` or the misspelling ``"phosphorous"`` become ``phosphorus``).

    Raises
    ------
    UsageError
        An empty or unknown name; the message lists the known names and groups.

    Examples
    --------
    >>> canonical_pollutants(["Phosphorous", "TSS", "nutrients"])
    ('phosphorus', 'silt/sediment', 'nutrients')
    """
    out: list[str] = []
    bad: list[str] = []
    for raw in names:
        text = "" if raw is None else " ".join(str(raw).strip().lower().split())
        if text in POLLUTANT_GROUPS:
            canon = text
        else:
            canon = normalize_pollutant(text)
            if canon not in KNOWN_POLLUTANTS:
                bad.append(repr(raw))
                continue
        if canon not in out:
            out.append(canon)
    if bad:
        raise UsageError(
            f"Unknown pollutant(s) in {where}: {', '.join(bad)}. Select from the groups "
            f"{sorted(POLLUTANT_GROUPS)} or the names {list(KNOWN_POLLUTANTS)}."
        )
    return tuple(out)


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


def pollutant_in(pollutant: str, wanted: Iterable[str]) -> bool:
    """Whether ``pollutant`` (any spelling) is one of ``wanted`` (names or groups)."""
    p = normalize_pollutant(pollutant)
    for w in wanted:
        wn = str(w).strip().lower()
        members = POLLUTANT_GROUPS.get(wn)
        if members is None:
            members = POLLUTANT_GROUPS.get(
                normalize_pollutant(wn), frozenset({normalize_pollutant(wn)})
            )
        if p in members or p == normalize_pollutant(wn):
            return True
    return False


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
    "wb_id": ("pwl_id", "pwl", "pwlid", "waterbody_id", "wbid", "wb_id"),
    "name": ("waterbody_name", "waterbody", "water_body_name", "name"),
    "wb_type": ("type", "waterbody_type", "water_type"),
    "pollutant": ("cause_pollutant", "cause", "pollutant", "causes_pollutants", "pollutant_cause"),
    "source": ("suspected_source", "suspected_sources", "source", "sources"),
    "list_part": ("list_part", "part", "category", "list_category"),
    "list_year": ("list_year", "year", "cycle"),
}
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
    p = Path(path)
    if not p.is_file():
        raise InputOpenError(f"CSV file {str(p)!r} does not exist or is not a file.")
    try:
        return pd.read_csv(p, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(
            f"Cannot parse {str(p)!r} as CSV: {exc}. Fix: save it as a "
            "comma-separated UTF-8 file with one header row."
        ) from exc


def _finish(
    rows: list[dict[str, Any]], problems: list[str], *, path: Path, kind: str, on_error: str
) -> pd.DataFrame:
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
    df.attrs["qa"] = qa
    df.attrs["source_file"] = str(path)
    return df


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
) -> tuple[Path, pd.DataFrame, dict[str, str]]:
    """Read a list CSV and map its headers (``spec``); refuse a bad ``on_error`` and a file
    that lacks a ``required`` column (canonical name -> the name its users know)."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"Unknown on_error: {on_error!r}, select from ['raise', 'skip']")
    p = Path(path)
    raw = _read_csv(p)
    cols = _map_headers(list(raw.columns), spec)
    missing = [c for c in required if c not in cols]
    if missing:
        raise DataError(
            f"{what} {str(p)!r} lacks the column(s) {[required[m] for m in missing]}; it has "
            f"{list(raw.columns)}. Fix: {fix}"
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
        ``problem``.  :class:`Waters` reads them (``attrs["skipped_rows"]``): a water
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


_NYSDEC_CSV = _ListFormat(
    what="303(d) CSV",
    spec=_NYSDEC_COLUMNS,
    required={"wb_id": "PWL ID", "pollutant": "Cause/Pollutant", "list_part": "List Part"},
    fix="name the columns as in the NYSDEC list (PWL ID, Waterbody Name, Type, "
    "Cause/Pollutant, Suspected Source, List Part).",
    parse=_nysdec_listing,
    origin="nysdec_303d_csv",
)
_ATTAINS_CSV = _ListFormat(
    what="ATTAINS CSV",
    spec=_ATTAINS_COLUMNS,
    required={"au_id": "assessment unit id", "pollutant": "parameter", "category": "category"},
    fix="export assessment unit id, parameter, category and action id columns.",
    parse=_attains_listing,
    origin="attains_csv",
)


def _read_listings(path: str | Path, on_error: str, fmt: _ListFormat) -> pd.DataFrame:
    """Read a listing CSV of kind ``fmt`` (see :func:`read_303d_csv`).

    Parameters
    ----------
    path : str or Path
    on_error : {"raise", "skip"}
    fmt : _ListFormat

    Returns
    -------
    DataFrame
        Columns :data:`IMPAIRMENT_COLUMNS`, one row per listing.
    """
    p, raw, cols = _read_list_csv(
        path, on_error, fmt.spec, fmt.required, what=fmt.what, fix=fmt.fix
    )
    rows, problems, skipped = _csv_listings(raw, cols, fmt.parse, origin=fmt.origin)
    df = _finish(rows, problems, path=p, kind=fmt.what, on_error=on_error)
    df.attrs["skipped_rows"] = [{**x, "file": p.name} for x in skipped]
    return df


def read_303d_csv(path: str | Path, *, on_error: str = "raise") -> pd.DataFrame:
    """Read a CSV with the columns of the NYSDEC 303(d) list's table.

    Columns (header names are matched case- and punctuation-insensitively):
    ``PWL ID`` (required), ``Waterbody Name``, ``Type``, ``Cause/Pollutant``
    (required; several causes in one cell separated by ``;``), ``Suspected Source``,
    ``List Part`` (required: NYSDEC part ``1``, ``2a``-``2d``, ``3a``-``3c``, or an
    EPA category ``5``, ``4a``, ...) and optionally ``List Year``.

    Parameters
    ----------
    path : str or Path
    on_error : {"raise", "skip"}
        ``"raise"`` (default): one :class:`DataError` listing every bad row.
        ``"skip"``: keep the good rows; each bad one is a QA warning
        ``impairment_row_skipped`` in ``frame.attrs["qa"]`` (a
        :class:`ms4map.qa.QAReport`), and the unreadable ones (not the duplicates) are
        in ``frame.attrs["skipped_rows"]``, which :class:`Waters` keeps in
        :attr:`Waters.skipped` (their waters are never "not listed").

    Returns
    -------
    DataFrame
        Columns :data:`IMPAIRMENT_COLUMNS`, one row per listing.

    Raises
    ------
    DataError
        Missing required columns; with ``on_error="raise"``, any bad row (PWL ID not
        ``NNNN-NNNN``, unknown list part/category, missing pollutant, duplicate
        PWL ID + pollutant).
    """
    return _read_listings(path, on_error, _NYSDEC_CSV)


def read_attains_csv(path: str | Path, *, on_error: str = "raise") -> pd.DataFrame:
    """Read an ATTAINS-style CSV export of assessment-unit parameters.

    Columns (matched case- and punctuation-insensitively): assessment unit id
    (``assessmentUnitIdentifier``/``assessment_unit_id``; ``NY1302-0092``,
    ``NY-1302-0092`` or ``1302-0092``), ``parameter`` (the cause), ``category``
    (EPA IR category: ``5``, ``4a``, ...), ``action id`` (the TMDL action, expected
    for category 4a); optional assessment unit name, cycle, source.

    Parameters and return value as :func:`read_303d_csv`; ``origin`` is
    ``"attains_csv"`` and ``action_id`` is filled.
    """
    return _read_listings(path, on_error, _ATTAINS_CSV)


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


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------
@dataclass
class Waters:
    """Waterbodies, 303(d) listings and TMDL watersheds, in the working CRS.

    Build it with :meth:`from_workspace` or :meth:`from_frames`.
    """

    waterbodies: pd.DataFrame
    impairments: pd.DataFrame
    tmdl_watersheds: Any  # GeoDataFrame (may be empty)
    crs: Any = None
    #: Legal layers the workspace lacks (keys of :data:`LEGAL_LAYERS`, in that order).
    #: Set by :meth:`from_workspace`; with any of them Condition A is never ``false``.
    missing: tuple[str, ...] = ()
    #: ``wb_id -> the rows of the 303(d) CSV for that water that could not be read``
    #: (each ``"line 2 of list.csv (Phosphorus): list part/category '4' is unknown"``);
    #: key ``""`` holds rows whose water itself could not be read (they may be any
    #: water).  Filled from the importers' ``attrs["skipped_rows"]``; runoff reaching
    #: such a water is never a confident "not listed" (:meth:`skipped_for`).
    skipped: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _by_wb: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _names: dict[str, str] = field(default_factory=dict, repr=False)
    _four_a: dict[str, list[dict[str, Any]]] | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_frames(
        cls,
        *,
        waterbodies: pd.DataFrame | None = None,
        impairments: pd.DataFrame | None = None,
        tmdl_watersheds: Any = None,
        crs: Any = None,
        missing: Iterable[str] = (),
        skipped_rows: Iterable[dict[str, Any]] | None = None,
    ) -> Waters:
        """Build from canonical frames (any may be ``None``).

        ``missing`` names the legal layers (:data:`LEGAL_LAYERS`) the caller knows are
        absent (a ``None`` frame here means "none", as in a test fixture);
        :meth:`from_workspace` fills it from the workspace.  ``skipped_rows`` (default:
        ``impairments.attrs["skipped_rows"]``, what :func:`read_303d_csv` and
        :func:`read_attains_csv` could not read with ``on_error="skip"``) fills
        :attr:`skipped`.
        """
        bad = [m for m in missing if m not in LEGAL_LAYERS]
        if bad:
            raise UsageError(f"Unknown legal layer(s) {bad}: select from {list(LEGAL_LAYERS)}.")
        missing = tuple(m for m in LEGAL_LAYERS if m in set(missing))
        import geopandas as gpd

        wb = (
            pd.DataFrame(columns=["wb_id", "name", "kind"])
            if waterbodies is None
            else waterbodies.copy()
        )
        if "wb_id" in wb.columns:
            # a PWL ID as written with the ATTAINS prefix is the PWL ID; a blank or a
            # null's text ("<NA>") is no id, never an id of its own
            wb["wb_id"] = pd.Series(
                [normalize_pwl_id(v) or id_text(v) for v in wb["wb_id"]],
                index=wb.index,
                dtype=object,
            )
        imp = pd.DataFrame(columns=list(IMPAIRMENT_COLUMNS)) if impairments is None else impairments
        if skipped_rows is None:
            skipped_rows = getattr(imp, "attrs", {}).get("skipped_rows") or ()
        skipped_rows = list(skipped_rows)
        if "pollutant_norm" not in imp.columns or "origin" not in imp.columns:
            imp = validate_impairments(imp)
        if tmdl_watersheds is None:
            tm = gpd.GeoDataFrame(
                {
                    "tmdl_id": [],
                    "name": [],
                    "pollutant": [],
                    "stormwater_source": [],
                    "approved": [],
                },
                geometry=[],
                crs=crs,
            )
        else:
            tm = tmdl_watersheds.copy()
            for c in ("tmdl_id", "name", "pollutant", "approved"):
                if c not in tm.columns:
                    tm[c] = None
            tm["stormwater_source"] = [
                stormwater_source_value(v)
                for v in tm.get("stormwater_source", pd.Series([None] * len(tm), index=tm.index))
            ]
        if crs is None:
            crs = getattr(wb, "crs", None) or getattr(tm, "crs", None)
        by_wb = {k: g for k, g in imp.groupby("wb_id", sort=False)} if len(imp) else {}
        names: dict[str, str] = {}
        if len(wb) and {"wb_id", "name"} <= set(wb.columns):
            for k, v in zip(wb["wb_id"], wb["name"], strict=True):
                if not is_blank(k) and not is_blank(v):
                    names.setdefault(str(k), str(v))
        if len(imp) and "name" in imp.columns:
            for k, v in zip(imp["wb_id"], imp["name"], strict=True):
                if not is_blank(k) and not is_blank(v):
                    names.setdefault(str(k), str(v))
        out = cls(
            waterbodies=wb,
            impairments=imp,
            tmdl_watersheds=tm,
            crs=crs,
            missing=missing,
            _by_wb=by_wb,
            _names=names,
        )
        out.skipped = _skipped_by_water(skipped_rows, out)
        return out

    @classmethod
    def from_workspace(cls, ws: Workspace, *, impairments: pd.DataFrame | None = None) -> Waters:
        """Build from a workspace's ``waterbodies``, ``impairments`` and ``tmdl_watersheds``.

        ``impairments`` (e.g. from :func:`read_303d_csv`) replaces the workspace's layer.
        Legal layers the workspace does not have are recorded in :attr:`missing` (an
        empty layer is present: it says there is none).
        """
        imp = impairments if impairments is not None else ws.layers.get("impairments")
        have = {
            "impairments": imp is not None,
            "tmdl_watersheds": ws.layers.get("tmdl_watersheds") is not None,
            "waterbodies": ws.layers.get("waterbodies") is not None,
        }
        return cls.from_frames(
            waterbodies=ws.layers.get("waterbodies"),
            impairments=imp,
            tmdl_watersheds=ws.layers.get("tmdl_watersheds"),
            crs=ws.crs,
            missing=[k for k, ok in have.items() if not ok],
        )

    def skipped_for(self, wb_id: Any) -> list[str]:
        """The unreadable 303(d) CSV rows that may list water ``wb_id``: its own, then
        those whose water could not be read (:attr:`skipped`); empty when none."""
        if not self.skipped or is_blank(wb_id):
            return []
        return [*self.skipped.get(str(wb_id).strip(), ()), *self.skipped.get("", ())]

    def missing_reasons(self) -> list[str]:
        """One sentence per missing legal layer (see :func:`missing_layer_reason`)."""
        return [missing_layer_reason(m) for m in self.missing]

    # ------------------------------------------------------------------ queries
    def listings(self, wb_id: Any) -> pd.DataFrame:
        """Every listing (any category) of waterbody ``wb_id``."""
        if is_blank(wb_id):
            return self.impairments.iloc[0:0]
        return self._by_wb.get(str(wb_id).strip(), self.impairments.iloc[0:0])

    def name_of(self, wb_id: Any) -> str | None:
        """The waterbody's name, from the waterbodies layer or the listings."""
        if is_blank(wb_id):
            return None
        return self._names.get(str(wb_id).strip())

    def wb_id_for_name(self, name: Any) -> str | None:
        """The PWL ID of a waterbody by (case-insensitive) name, when unique.

        Waterbodies of that name without an id (blank, or a null's text such as
        ``"<NA>"``) are not counted; ``None`` when no id or several ids remain.
        """
        if is_blank(name) or not len(self.waterbodies) or "name" not in self.waterbodies:
            return None
        low = str(name).strip().lower()
        hit = self.waterbodies[self.waterbodies["name"].astype(str).str.strip().str.lower() == low]
        if "wb_id" not in hit.columns:
            return None
        ids = {normalize_pwl_id(v) or id_text(v) for v in hit["wb_id"]} - {None}
        return ids.pop() if len(ids) == 1 else None

    def listed_wb_ids(self, *, category: str = "5") -> set[str]:
        """Waterbodies with at least one listing of ``category``."""
        imp = self.impairments
        return set(imp.loc[imp["category"] == category, "wb_id"].astype(str))

    def waterbody_geometry(self, wb_id: Any) -> Any:
        """Union of the geometries of waterbody ``wb_id`` (``None`` when unknown)."""
        wb = self.waterbodies
        if is_blank(wb_id) or "geometry" not in getattr(wb, "columns", []):
            return None
        g = wb.loc[wb["wb_id"] == str(wb_id)].geometry
        if not len(g):
            return None
        return g.union_all() if len(g) > 1 else g.iloc[0]

    def four_a_listings(self) -> dict[str, list[dict[str, Any]]]:
        """``wb_id -> its category 4a (TMDL approved) listings``, each a dict of
        ``pollutant``, ``action_id`` and ``tmdls``: the index labels of the rows of
        :attr:`tmdl_watersheds` that are its TMDL, by id (``tmdl_id`` equal to the
        listing's ``action_id``, compared stripped and case-insensitively) or by place
        (a watershed intersecting the water's geometry whose pollutant is the listing's,
        or blank).  Runoff that reaches such a water reaches its TMDL's watershed; a
        listing with no ``tmdls`` is a TMDL the layer lacks (Condition A then cannot be
        a "no", docs/screening.md)."""
        if self._four_a is not None:
            return self._four_a
        imp = self.impairments
        out: dict[str, list[dict[str, Any]]] = {}
        if not len(imp) or "category" not in imp.columns:
            self._four_a = out
            return out
        tm = self.tmdl_watersheds
        has_tm = tm is not None and len(tm) > 0
        ids: dict[str, list[Any]] = {}
        if has_tm:
            for label, tid in zip(tm.index, tm["tmdl_id"], strict=True):
                if not is_blank(tid):
                    ids.setdefault(str(tid).strip().upper(), []).append(label)
        four_a = imp[imp["category"].astype(str) == "4a"]
        actions = four_a["action_id"] if "action_id" in four_a.columns else [None] * len(four_a)
        for wb, pol, action in zip(four_a["wb_id"], four_a["pollutant"], actions, strict=True):
            if is_blank(wb):
                continue
            found = list(ids.get(str(action).strip().upper(), [])) if not is_blank(action) else []
            geom = self.waterbody_geometry(wb) if has_tm else None
            if geom is not None:
                for label, tpol, tgeom in zip(tm.index, tm["pollutant"], tm.geometry, strict=True):
                    same = is_blank(tpol) or pollutant_in(str(tpol), [str(pol)])
                    if label not in found and same and tgeom is not None and tgeom.intersects(geom):
                        found.append(label)
            out.setdefault(str(wb), []).append(
                {
                    "pollutant": None if is_blank(pol) else str(pol),
                    "action_id": None if is_blank(action) else str(action),
                    "tmdls": found,
                }
            )
        self._four_a = out
        return out

    def tmdls_hit(self, geoms: Any) -> pd.DataFrame:
        """TMDL watersheds intersecting any of ``geoms`` (an iterable of shapely geometries).

        Returns the matching rows of ``tmdl_watersheds`` with an extra column ``hit``:
        the position (in ``geoms``) of the first geometry that touches each watershed.
        """
        tm = self.tmdl_watersheds
        geoms = [g for g in geoms if g is not None and not g.is_empty]
        if tm is None or not len(tm) or not geoms:
            return pd.DataFrame(columns=[*getattr(tm, "columns", []), "hit"])
        arr = np.asarray(geoms, dtype=object)
        q_idx, tree_idx = tm.sindex.query(arr, predicate="intersects")
        if not len(q_idx):
            return pd.DataFrame(columns=[*tm.columns, "hit"])
        first: dict[int, int] = {}
        for qi, ti in sorted(zip(q_idx.tolist(), tree_idx.tolist(), strict=True)):
            first.setdefault(ti, qi)
        out = tm.iloc[sorted(first)].copy()
        out["hit"] = [first[i] for i in sorted(first)]
        return out

    def listed_within(self, geom: Any, distance: float) -> set[str]:
        """Listed (category 5) waterbodies within ``distance`` CRS units of ``geom``."""
        return self.waters_within(geom, distance, self.listed_wb_ids())

    def waters_within(self, geom: Any, distance: float, ids: Iterable[str]) -> set[str]:
        """The waterbodies of ``ids`` within ``distance`` CRS units of ``geom``."""
        wb = self.waterbodies
        if geom is None or "geometry" not in getattr(wb, "columns", []) or not len(wb):
            return set()
        cand = wb[wb["wb_id"].isin(set(ids))]
        if not len(cand):
            return set()
        near = cand[cand.geometry.distance(geom) <= distance]
        return set(near["wb_id"].astype(str))


def _skipped_by_water(rows: Iterable[dict[str, Any]], waters: Waters) -> dict[str, tuple[str, ...]]:
    """:attr:`Waters.skipped` from the importers' skipped rows: each row under the PWL ID
    it writes (the ATTAINS prefix removed), else under the id of the one waterbody its
    name gives, else under ``""`` (its water is not known)."""
    out: dict[str, list[str]] = {}
    for x in rows:
        wb = normalize_pwl_id(x.get("wb_id")) or waters.wb_id_for_name(x.get("name")) or ""
        where = f"line {x.get('line')}" + (f" of {x['file']}" if x.get("file") else "")
        what = ", ".join(
            str(v) for v in (x.get("wb_id") or None, x.get("pollutant")) if not is_blank(v)
        )
        text = f"{where}" + (f" ({what})" if what else "") + f": {x.get('problem')}"
        out.setdefault(wb, []).append(text)
    return {k: tuple(v) for k, v in out.items()}


def skipped_rows_text(texts: list[str], *, limit: int = 3) -> str:
    """``"line 2 of list.csv (1302-0001, Phosphorus): ...; and 2 more"``: the unreadable
    303(d) CSV rows of :meth:`Waters.skipped_for`, the first ``limit`` in full."""
    shown = "; ".join(texts[:limit])
    return shown + (f"; and {len(texts) - limit} more" if len(texts) > limit else "")


#: The fix of a site reaching a water whose 303(d) CSV rows could not be read.
SKIPPED_ROWS_FIX = (
    "correct those rows of the 303(d) CSV (see the warnings of `--impairments`) and screen again"
)


def read_impairments_csv(path: str | Path) -> pd.DataFrame:
    """An impaired-waters CSV, NYSDEC 303(d) or EPA ATTAINS (told apart by its header).

    Rows that cannot be read are skipped and reported as QA findings in the table's
    ``attrs["qa"]`` (``impairment_row_skipped``).  Used by ``ms4map screen
    --impairments`` and by ``ms4map batch`` for a town's ``impairments``.

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
    reader = read_attains_csv if "assessment" in low or "parameter" in low else read_303d_csv
    return reader(path, on_error="skip")


def waters_for(
    workspace: Workspace, impairments: str | Path | None = None, *, warn: Any = None
) -> Waters:
    """The waters a screening reads: the workspace's, with ``impairments`` (a CSV) instead
    of its 303(d) layer when given.

    ``warn`` (a callable) is given one line per row of the CSV that was skipped.
    """
    if not impairments:
        return Waters.from_workspace(workspace)
    imp = read_impairments_csv(impairments)
    qa = imp.attrs.get("qa")
    if warn is not None and qa is not None:
        for finding in qa.findings:
            warn(f"ms4map: warning: {Path(impairments).name}: skipped {finding.message}")
    return Waters.from_workspace(workspace, impairments=imp)


def workspace_qa(ws: Workspace) -> QAReport:
    """The workspace's QA report (``ws.qa``, a copy) plus what only the rules can check:
    category 4a listings whose TMDL the ``tmdl_watersheds`` layer does not have
    (:func:`tmdl_gap_findings`).  What ``ms4map validate`` and the app's Data page show.
    """
    out = QAReport()
    out.extend(ws.qa)
    if "impairments" in ws.layers:
        out.extend(tmdl_gap_findings(Waters.from_workspace(ws)))
    return out


def tmdl_gap_findings(waters: Waters) -> QAReport:
    """A warning ``impairment_4a_no_tmdl`` (layer ``tmdl_watersheds``) naming the category
    4a listings (TMDL approved) whose TMDL the layer does not have, by action id or by
    place (:meth:`Waters.four_a_listings`): Condition A and the septic special
    condition for runoff reaching those waters are undetermined (docs/screening.md).
    Nothing while the TMDL or waterbodies layer is missing (``missing_legal_layer``
    says so)."""
    qa = QAReport()
    if {"tmdl_watersheds", "waterbodies"} & set(waters.missing):
        return qa
    gaps = [
        (wb, x)
        for wb, listings in waters.four_a_listings().items()
        for x in listings
        if not x["tmdls"]
    ]
    if not gaps:
        return qa
    shown = []
    for wb, x in gaps:
        name = waters.name_of(wb)
        action = f", TMDL action {x['action_id']}" if x["action_id"] else ", no action id"
        shown.append(f"{f'{name} ({wb})' if name else wb}: {x['pollutant'] or '?'}{action}")
    qa.warning(
        "impairment_4a_no_tmdl",
        "tmdl_watersheds",
        f"{len(gaps)} category 4a listing(s) (TMDL approved) have no TMDL in the layer, by "
        f"id or by place: {'; '.join(shown[:10])}"
        + (f"; and {len(gaps) - 10} more" if len(gaps) > 10 else "")
        + ". Condition A and the septic special condition for runoff reaching these "
        "waters are undetermined (whether stormwater is a source is not known).",
        feature_id=", ".join(dict.fromkeys(wb for wb, _ in gaps[:50])),
        count=len(gaps),
        fix="Add each TMDL's watershed to the `tmdl_watersheds` layer, with "
        "`stormwater_source` and its `tmdl_id` the listing's action id (or correct the "
        "`action_id` of the listing in the `impairments` layer).",
    )
    return qa
