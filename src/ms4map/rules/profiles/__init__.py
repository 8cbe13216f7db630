"""Municipality profiles: the settings of the rules that vary from town to town.

A profile is a TOML file.  Three ship with ms4map (``stillwater``, the default,
``kingsbury`` and ``kiryas_joel``); a town can write its own and pass its path.
A profile holds the officer's title, the law's citations per rule (law name, the
section only where the text prints one, and a short quote), the penalty schedule,
the remedy and appeal periods, the pollutant-of-concern reading, the property
classes that suggest single-family and agricultural projects, and
``tributary_reach_km``.  :func:`load_profile` validates every field and names
each problem with its fix.

Examples
--------
>>> from ms4map.rules.profiles import load_profile
>>> p = load_profile("stillwater")
>>> p.pollutant_reading
'law'
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...core.calendar import last_day
from ...core.errors import DataError, InputOpenError, UsageError
from ..waters import canonical_pollutants

__all__ = [
    "BUILTIN_PROFILES",
    "DEFAULT_PROFILE",
    "EXEMPTION_CODES",
    "REQUIRED_CITATIONS",
    "Citation",
    "Profile",
    "builtin_profile_path",
    "load_profile",
    "profile_from_raw",
    "profile_with",
    "remedy_deadline",
    "remedy_period_end",
    "remedy_period_hours",
]

DEFAULT_PROFILE = "stillwater"
BUILTIN_PROFILES = ("stillwater", "kingsbury", "kiryas_joel")

#: Exemption codes of docs/rules.md (Stillwater Art. II list).
EXEMPTION_CODES = (
    "agricultural_activity",
    "silviculture",
    "routine_maintenance",
    "smp_repair",
    "prior_approval",
    "cemetery",
    "posts_poles",
    "emergency",
    "home_gardening",
    "landscaping",
)

#: Rules every profile must cite.
REQUIRED_CITATIONS = (
    "land_development_activity",
    "pollutant_of_concern",
    "condition_a",
    "condition_b",
    "condition_c",
    "swppp_required",
    "swppp_basic",
    "swppp_post_construction",
    "exemptions",
    "septic_failing",
    "septic_special_condition",
    "notice_of_violation",
    "penalties",
)

_READINGS = ("law", "list")
_TOP_REQUIRED = (
    "name",
    "municipality",
    "law",
    "officer_title",
    "screening",
    "septic",
    "enforcement",
    "citations",
    "exemptions",
)
_SCREENING_REQUIRED = (
    "pollutant_reading",
    "pollutants_of_concern",
    "tributary_reach_km",
    "single_family_classes",
    "agricultural_classes",
)
_SEPTIC_REQUIRED = ("septic_pollutants", "setback_ft")
_ENFORCEMENT_REQUIRED = ("remedy_period", "appeal_days", "penalty_period", "penalties")


@dataclass(frozen=True)
class Citation:
    """One citation: the law by name, the section only where its text prints one, a quote.

    Attributes
    ----------
    rule : str
        The rule it supports (``condition_a``, ``septic_failing``, ...).
    law : str
        The law's name as a reader would write it.
    quote : str
        A short quote, verbatim from the law's text (whitespace aside).
    section : str or None
        The section number (``"174-6"``), only where the text prints ``§ 174-6``.
    file : str or None
        The reference text (in ``shared/laws/``) the quote comes from.
    """

    rule: str
    law: str
    quote: str
    section: str | None = None
    file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "law": self.law, "section": self.section, "quote": self.quote}

    def text(self) -> str:
        """One line for a letter: law, section (if printed), quote."""
        where = self.law + (f", § {self.section}" if self.section else "")
        return f'{where}: "{self.quote}"'


@dataclass(frozen=True)
class Profile:
    """A validated municipality profile (see the module docstring).

    Use :func:`load_profile` to build one; :meth:`with_pollutants` returns a copy
    narrowed to a list of pollutants of concern.
    """

    name: str
    municipality: str
    law: str
    officer_title: str
    officer_abbrev: str
    pollutant_reading: str
    pollutants_of_concern: tuple[str, ...]
    tributary_reach_km: float
    single_family_classes: tuple[str, ...]
    agricultural_classes: tuple[str, ...]
    septic_pollutants: tuple[str, ...]
    setback_ft: float
    enforcement: dict[str, Any]
    citations: dict[str, tuple[Citation, ...]]
    exemptions: dict[str, dict[str, Any]]
    source: str
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    #: A narrowed list always counts sediment (the law's definition starts with it)
    #: unless the profile sets ``screening.narrowed_includes_sediment = false``.
    include_sediment: bool = True

    # ---------------------------------------------------------------- helpers
    def cite(self, rule: str) -> list[Citation]:
        """The citations for ``rule`` (empty list when the profile has none)."""
        return list(self.citations.get(rule, ()))

    def exemption_citation(self, code: str) -> Citation | None:
        e = self.exemptions.get(code)
        if not e:
            return None
        return Citation(
            rule=f"exemption:{code}",
            law=e["law"],
            quote=e["quote"],
            section=e.get("section"),
            file=e.get("file"),
        )

    def matches_class(self, prop_class: Any, patterns: tuple[str, ...]) -> bool:
        """Whether a 3-digit property class matches one of ``patterns`` (``1*`` globs)."""
        if prop_class is None:
            return False
        text = str(prop_class).strip()
        if not text or text.lower() in ("nan", "none", "<na>"):
            return False
        return any(fnmatch.fnmatchcase(text, p) for p in patterns)

    def with_pollutants(
        self,
        pollutants: list[str] | tuple[str, ...],
        *,
        include_sediment: bool | None = None,
    ) -> Profile:
        """A copy that reads "pollutant of concern" as the given list only.

        Parameters
        ----------
        pollutants : list of str
            Names or groups (see :func:`ms4map.rules.waters.canonical_pollutants`).
        include_sediment : bool, optional
            Add ``silt/sediment`` when the list lacks it (default: the profile's
            ``include_sediment``, true unless the profile says otherwise): the law's
            definition of pollutant of concern always includes sediment.

        Raises
        ------
        UsageError
            An empty list or an unknown pollutant name (the message lists the known ones).
        """
        if not pollutants:
            raise UsageError(
                "with_pollutants() needs at least one pollutant; "
                "use the profile as is for the law's own definition."
            )
        inc = self.include_sediment if include_sediment is None else bool(include_sediment)
        pocs = _with_sediment(canonical_pollutants(pollutants), inc)
        return replace(
            self,
            pollutant_reading="list",
            pollutants_of_concern=pocs,
            include_sediment=inc,
            name=f"{self.name}+narrowed",
        )

    def screening_settings(self) -> dict[str, Any]:
        """The profile's settings a screening output's provenance records.

        ``profile`` (its name), ``pollutant_reading``, ``pollutants_of_concern`` and
        ``tributary_reach_km``: the keywords ``ms4map screen --all`` and ``ms4map batch``
        give :meth:`ms4map.io.workspace.Workspace.provenance`.
        """
        return {
            "profile": self.name,
            "pollutant_reading": self.pollutant_reading,
            "pollutants_of_concern": list(self.pollutants_of_concern),
            "tributary_reach_km": self.tributary_reach_km,
        }

    def summary(self) -> dict[str, Any]:
        """The settings that shape a determination, for provenance."""
        return {
            "name": self.name,
            "source": self.source,
            "municipality": self.municipality,
            "pollutant_reading": self.pollutant_reading,
            "pollutants_of_concern": list(self.pollutants_of_concern),
            "narrowed_includes_sediment": self.include_sediment,
            "tributary_reach_km": self.tributary_reach_km,
            "single_family_classes": list(self.single_family_classes),
            "agricultural_classes": list(self.agricultural_classes),
            "septic_pollutants": list(self.septic_pollutants),
            "setback_ft": self.setback_ft,
        }


def _with_sediment(pocs: tuple[str, ...], include: bool) -> tuple[str, ...]:
    """Put ``silt/sediment`` first in a narrowed list unless it is there or excluded.

    Only the group itself (``sediment`` or ``silt/sediment``, which counts every member:
    silt/sediment, turbidity, TSS) makes it there: a list naming only a member such as
    ``turbidity`` would not count a Silt/Sediment listing, so the group is added.

    Examples
    --------
    >>> _with_sediment(("turbidity",), True)
    ('silt/sediment', 'turbidity')
    >>> _with_sediment(("sediment", "nutrients"), True)
    ('sediment', 'nutrients')
    """
    if not include or any(p in ("sediment", "silt/sediment") for p in pocs):
        return pocs
    return ("silt/sediment", *pocs)


def remedy_period_hours(enf: Mapping[str, Any]) -> float | None:
    """The remedy period in hours when a profile's ``enforcement`` table gives one.

    From ``remedy_hours``, else ``remedy_days``, else a ``remedy_period`` text of the form
    ``"48 hours"`` / ``"30 days"``; ``None`` when the period is left to the notice (the
    notice of violation and the case deadlines both read it here).
    """
    h = enf.get("remedy_hours")
    if isinstance(h, (int, float)) and not isinstance(h, bool) and h > 0:
        return float(h)
    d = enf.get("remedy_days")
    if isinstance(d, (int, float)) and not isinstance(d, bool) and d > 0:
        return float(d) * 24
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(hours?|days?)\s*", str(enf.get("remedy_period", "")))
    if m:
        return float(m.group(1)) * (1 if m.group(2).startswith("hour") else 24)
    return None


def remedy_period_end(enf: Mapping[str, Any], start: dt.date) -> dt.date | None:
    """The day the profile's own remedy period (:func:`remedy_period_hours`) ends when it
    runs from ``start``: a date, not a time of day (``ceil(hours / 24)`` days), before any
    move past a closed day; ``None`` when the period is left to the notice."""
    hours = remedy_period_hours(enf)
    if hours is None:
        return None
    return start + dt.timedelta(days=math.ceil(hours / 24))


def remedy_deadline(profile: Profile, notice_on: dt.date) -> dt.date | None:
    """The remedy deadline the profile itself sets from the notice date, if it sets one.

    Kingsbury: 48 hours (the date two days after the notice), moved to the next business
    day when that is a Saturday, Sunday or public holiday (General Construction Law
    section 25-a, :func:`~ms4map.core.calendar.last_day`).  Stillwater and Kiryas Joel
    leave it to the notice (``None``: record it when the notice is sent).  The notice of
    violation prints it and the case records keep it.
    """
    end = remedy_period_end(profile.enforcement, notice_on)
    return None if end is None else last_day(end)


def builtin_profile_path(name: str) -> Path:
    """Path of a bundled profile TOML."""
    return Path(__file__).with_name(f"{name}.toml")


def profile_with(
    profile: str | Path | Profile | None, pollutants: Iterable[str] | None = None
) -> Profile:
    """:func:`load_profile`, narrowed to ``pollutants`` when given (``--pollutants``).

    Names are stripped and blank ones dropped.  The one place ``ms4map screen`` and
    ``ms4map batch`` turn their options into a profile.
    """
    prof = load_profile(profile)
    if not pollutants:
        return prof
    return prof.with_pollutants([str(x).strip() for x in pollutants if str(x).strip()])


def profile_from_raw(raw: dict[str, Any], *, source: str) -> Profile:
    """A profile from its parsed TOML tables (:attr:`Profile.raw`), validated as
    :func:`load_profile` validates a file; ``source`` names where the tables came from.

    Raises
    ------
    DataError
        Fields missing or wrong (every problem listed, with the fix).
    """
    return _build(dict(raw), source=source)


def load_profile(profile: str | Path | Profile | None = None) -> Profile:
    """Load and validate a municipality profile.

    Parameters
    ----------
    profile : str, Path, Profile or None
        A bundled name (``stillwater``, ``kingsbury``, ``kiryas_joel``), a path to a
        TOML file, an already loaded :class:`Profile` (returned as is), or ``None``
        for the default (``stillwater``).

    Returns
    -------
    Profile

    Raises
    ------
    UsageError
        Unknown profile name.
    InputOpenError
        The file cannot be read.
    DataError
        The file is not valid TOML, or fields are missing or wrong (every problem
        is listed, with the fix).
    """
    if isinstance(profile, Profile):
        return profile
    if profile is None:
        profile = DEFAULT_PROFILE
    text = str(profile)
    if isinstance(profile, str) and text in BUILTIN_PROFILES:
        path = builtin_profile_path(text)
    else:
        path = Path(text)
        if not path.suffix and not path.exists():
            raise UsageError(
                f"Unknown profile {text!r}: select from {list(BUILTIN_PROFILES)} "
                "or give the path of a profile TOML file."
            )
    if not path.is_file():
        raise InputOpenError(f"Profile file {str(path)!r} does not exist or is not a file.")
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise DataError(
            f"Profile {str(path)!r} is not valid TOML: {exc}. Fix the syntax "
            "(compare with the bundled stillwater.toml)."
        ) from exc
    except OSError as exc:
        raise InputOpenError(f"Cannot read profile {str(path)!r}: {exc}") from exc
    return _build(raw, source=str(path))


def _build(raw: dict[str, Any], *, source: str) -> Profile:
    """The profile of the parsed TOML ``raw``; every problem is collected, then raised."""
    problems: list[str] = []
    scr, sep, enf = (_table(raw, key) for key in ("screening", "septic", "enforcement"))
    _check_required(raw, scr, sep, enf, problems)
    reading, pocs, inc_sed = _read_pollutants(scr, problems)
    reach = _read_reach_and_classes(scr, problems)
    setback = _read_setback(sep, problems)
    _check_penalties(enf, problems)
    citations = _read_citations(raw, problems)
    exemptions = _read_exemptions(raw, problems)
    _raise_problems(source, problems)
    return Profile(
        name=str(raw["name"]),
        municipality=str(raw["municipality"]),
        law=str(raw["law"]),
        officer_title=str(raw["officer_title"]),
        officer_abbrev=str(raw.get("officer_abbrev", "")),
        pollutant_reading=reading,
        pollutants_of_concern=tuple(pocs),
        tributary_reach_km=float(reach),
        single_family_classes=tuple(scr["single_family_classes"]),
        agricultural_classes=tuple(scr["agricultural_classes"]),
        septic_pollutants=tuple(sep["septic_pollutants"]),
        setback_ft=float(setback),
        enforcement=dict(enf),
        citations=citations,
        exemptions={k: dict(v) for k, v in exemptions.items()},
        source=source,
        raw=raw,
        include_sediment=inc_sed,
    )


def _table(raw: dict[str, Any], key: str) -> dict[str, Any]:
    """``raw[key]`` when it is a table, else an empty one (its absence is reported apart)."""
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


def _check_required(
    raw: dict[str, Any],
    scr: dict[str, Any],
    sep: dict[str, Any],
    enf: dict[str, Any],
    problems: list[str],
) -> None:
    """Report each required field missing at the top and in the tables that are present."""

    def need(table: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
        problems.extend(f"missing field '{where}{key}'" for key in keys if key not in table)

    need(raw, _TOP_REQUIRED, "")
    if "screening" in raw:
        need(scr, _SCREENING_REQUIRED, "screening.")
    if "septic" in raw:
        need(sep, _SEPTIC_REQUIRED, "septic.")
    if "enforcement" in raw:
        need(enf, _ENFORCEMENT_REQUIRED, "enforcement.")


def _read_pollutants(scr: dict[str, Any], problems: list[str]) -> tuple[str, list[str], bool]:
    """The pollutant reading, the canonical pollutants of concern (sediment added unless
    the profile says not) and whether a narrowed list includes sediment."""
    reading = scr.get("pollutant_reading", "law")
    if reading not in _READINGS:
        problems.append(f"screening.pollutant_reading = {reading!r}: select from {list(_READINGS)}")
    pocs = scr.get("pollutants_of_concern", [])
    if not isinstance(pocs, list) or not all(isinstance(p, str) for p in pocs):
        problems.append("screening.pollutants_of_concern must be a list of pollutant names")
        pocs = []
    else:
        try:
            pocs = list(canonical_pollutants(pocs, where="screening.pollutants_of_concern"))
        except UsageError as exc:
            problems.append(str(exc))
            pocs = []
    inc_sed = scr.get("narrowed_includes_sediment", True)
    if not isinstance(inc_sed, bool):
        problems.append(f"screening.narrowed_includes_sediment = {inc_sed!r}: give true or false")
        inc_sed = True
    if pocs:
        pocs = list(_with_sediment(tuple(pocs), inc_sed))
    if reading == "list" and not pocs:
        problems.append(
            "screening.pollutant_reading = 'list' needs a non-empty "
            'screening.pollutants_of_concern, e.g. ["silt/sediment", "phosphorus"]'
        )
    return reading, pocs, inc_sed


def _non_negative(value: Any) -> bool:
    """``value`` is a number (not a bool) >= 0."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _read_reach_and_classes(scr: dict[str, Any], problems: list[str]) -> float:
    """The tributary reach in km (0 when wrong); checks the property-class lists."""
    reach = scr.get("tributary_reach_km", 0.0)
    if not _non_negative(reach):
        problems.append(
            f"screening.tributary_reach_km = {reach!r}: give a number >= 0 "
            "(0 = only the receiving segment)"
        )
        reach = 0.0
    for key in ("single_family_classes", "agricultural_classes"):
        v = scr.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            problems.append(
                f"screening.{key} must be a list of 3-digit class codes or globs "
                'as strings, e.g. ["210", "215"]'
            )
    return reach


def _read_setback(sep: dict[str, Any], problems: list[str]) -> float:
    """The septic setback in feet (100 when wrong)."""
    setback = sep.get("setback_ft", 100.0)
    if not _non_negative(setback):
        problems.append(f"septic.setback_ft = {setback!r}: give a distance in feet >= 0")
        setback = 100.0
    return setback


def _check_penalties(enf: dict[str, Any], problems: list[str]) -> None:
    """The penalties, when given, are a non-empty list of tables with offence and maximum."""
    if "penalties" not in enf:
        return
    pens = enf["penalties"]
    if not isinstance(pens, list) or not pens:
        problems.append(
            "enforcement.penalties must be a non-empty list of "
            "{ offence = 1, min_usd = 0, max_usd = 350 } tables"
        )
        return
    for i, p in enumerate(pens, 1):
        if not isinstance(p, dict) or not {"offence", "max_usd"} <= set(p):
            problems.append(f"enforcement.penalties[{i}] needs 'offence' and 'max_usd'")


def _read_citations(raw: dict[str, Any], problems: list[str]) -> dict[str, tuple[Citation, ...]]:
    """The citations per rule; every rule of :data:`REQUIRED_CITATIONS` must have one."""
    citations: dict[str, tuple[Citation, ...]] = {}
    cits = raw.get("citations", {})
    if "citations" in raw and not isinstance(cits, dict):
        problems.append("citations must be a table of rule -> [[citations.<rule>]] entries")
        cits = {}
    for rule, entries in cits.items():
        if isinstance(entries, dict):
            entries = [entries]
        citations[rule] = tuple(
            c
            for i, e in enumerate(entries, 1)
            if (c := _read_citation(rule, i, e, problems)) is not None
        )
    if "citations" in raw:
        for rule in REQUIRED_CITATIONS:
            if rule not in citations:
                problems.append(f"missing citation '[[citations.{rule}]]' (law, quote)")
    return citations


def _read_citation(rule: str, i: int, e: Any, problems: list[str]) -> Citation | None:
    """Citation ``i`` (from 1) of ``rule``; ``None`` when it is not a table."""
    if not isinstance(e, dict):
        problems.append(f"citations.{rule}[{i}] must be a table")
        return None
    for key in ("law", "quote"):
        if not isinstance(e.get(key), str) or not e.get(key, "").strip():
            problems.append(f"missing field 'citations.{rule}[{i}].{key}'")
    sec = e.get("section")
    if sec is not None and not isinstance(sec, str):
        problems.append(
            f"citations.{rule}[{i}].section must be a string such as "
            '"174-6" (or left out when the text prints no section)'
        )
    return Citation(
        rule=rule,
        law=str(e.get("law", "")),
        quote=str(e.get("quote", "")),
        section=sec if isinstance(sec, str) else None,
        file=e.get("file"),
    )


def _read_exemptions(raw: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """The exemptions table: known codes, each with a law and a quote."""
    exemptions = raw.get("exemptions", {})
    if "exemptions" not in raw:
        return exemptions
    if not isinstance(exemptions, dict):
        problems.append("exemptions must be a table of code -> {law, quote}")
        return {}
    for code, e in exemptions.items():
        if code not in EXEMPTION_CODES:
            problems.append(
                f"exemptions.{code}: unknown exemption code; select from {list(EXEMPTION_CODES)}"
            )
        elif not isinstance(e, dict) or not e.get("law") or not e.get("quote"):
            problems.append(f"exemptions.{code} needs 'law' and 'quote'")
    return exemptions


def _raise_problems(source: str, problems: list[str]) -> None:
    """One :class:`DataError` listing every problem of the profile, if it has any."""
    if not problems:
        return
    lines = [f"Profile {source!r} has {len(problems)} problem(s):"]
    lines += [f"  - {p}" for p in problems]
    lines.append(
        "Fix: add or correct these fields (compare with the bundled "
        "src/ms4map/rules/profiles/stillwater.toml)."
    )
    raise DataError("\n".join(lines))
