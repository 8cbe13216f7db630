"""Which municipality profile a case is judged by, in any later session.

A case records the name of the profile it was opened under (``cases.profile``).  Its
deadlines are computed from that profile's ``[enforcement]`` periods, whatever profile a
later session opens the records with.  A bundled profile is found by its name; a town's
own profile (a TOML file) may not be at hand later, so the records file keeps a copy of
it (``records_meta`` key ``profile:<name>``, the last copy written with a case wins).

Resolution, first that applies: the session's profile when it has the case's name; the
copy the records file keeps; the bundled profile of that name; else the profile is not
known and the case's deadlines say so (``status`` ``unknown``) instead of being judged by
another town's law.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..core.errors import DataError
from ..rules.profiles import (
    BUILTIN_PROFILES,
    Profile,
    builtin_profile_path,
    load_profile,
    profile_from_raw,
)

__all__ = ["case_profile", "keep_profile", "kept_profiles", "profile_not_known"]

_KEY = "profile:"


def _bundled(profile: Profile) -> bool:
    return profile.name in BUILTIN_PROFILES and str(profile.source) == str(
        builtin_profile_path(profile.name)
    )


def keep_profile(con: sqlite3.Connection, profile: Profile) -> None:
    """Keep a copy of ``profile`` in the records file (the caller's write transaction).

    A bundled profile is not copied (it is found by name, with any later fix to it).
    """
    if _bundled(profile):
        return
    value = json.dumps({"source": str(profile.source), "raw": profile.raw}, default=str)
    con.execute(
        "INSERT OR REPLACE INTO records_meta (key, value) VALUES (?, ?)",
        (_KEY + profile.name, value),
    )


def kept_profiles(con: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """The profile copies the records file keeps: name -> ``{"source", "raw"}``."""
    rows = con.execute(
        "SELECT key, value FROM records_meta WHERE substr(key, 1, ?) = ?", (len(_KEY), _KEY)
    ).fetchall()
    out = {}
    for key, value in rows:
        try:
            out[key[len(_KEY) :]] = json.loads(value)
        except ValueError:  # a damaged copy: as if none were kept
            continue
    return out


def case_profile(name: Any, session: Profile, kept: dict[str, dict[str, Any]]) -> Profile | None:
    """The profile a case recorded under ``name`` is judged by (``None``: not known)."""
    if name is None or str(name) in ("", session.name):
        return session
    name = str(name)
    copy = kept.get(name)
    if copy is not None:
        try:
            return profile_from_raw(
                copy.get("raw") or {},
                source=f"{copy.get('source')} (the copy kept in the records file)",
            )
        except DataError:
            pass
    if name in BUILTIN_PROFILES:
        return load_profile(name)
    return None


def profile_not_known(name: Any) -> str:
    """Why a case's deadlines are not known, with the fix."""
    return (
        f"The case was recorded under profile '{name}', which is not at hand (not "
        "bundled with ms4map, and the records file keeps no copy of it), so its periods "
        f"are not known. Fix: open the records with --profile <the '{name}' profile file>."
    )
