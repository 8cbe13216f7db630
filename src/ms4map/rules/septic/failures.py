"""The six failure conditions of Stillwater 174-6 and the reader of recorded failures.

:func:`parse_failure_codes` turns what a parcels layer records (``"B; C"``, ``"174-6B"``,
``"surface"``) into the letters of :data:`FAILURE_CONDITIONS`; the septic layer
(:mod:`.assess`) and the IDDE candidate sources (:mod:`ms4map.idde`) read it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FAILURE_CONDITIONS", "parse_failure_codes"]

#: The six failure conditions of Stillwater 174-6 (letters as printed).
FAILURE_CONDITIONS: dict[str, str] = {
    "A": "The backup of sewage into a structure.",
    "B": "Discharges of treated or untreated sewage onto the ground surface.",
    "C": "A connection or connections to a separate stormwater sewer system.",
    "D": "Liquid level in the septic tank above the outlet invert.",
    "E": "Structural failure of any component of the individual sewage treatment system "
    "that could lead to any of the other failure conditions as noted in this section.",
    "F": "Contamination of off-site groundwater.",
}
# Words a failure record may use (first match wins; groundwater before "ground surface").
_FAILURE_WORDS = (
    ("A", r"backup|back-up|back up"),
    ("F", r"groundwater|ground water|well|contaminat"),
    ("B", r"surface|ground|breakout|ponding"),
    ("C", r"storm|connection|connected"),
    ("D", r"liquid|level|invert|high"),
    ("E", r"structur|collapse|crack|broken"),
)


def parse_failure_codes(value: Any) -> list[str]:
    """Recorded failure condition -> 174-6 letters (``"B; C"``, ``"174-6B"``, ``"surface"``).

    Unrecognised non-blank text returns ``["?"]`` (reported as a recorded failure of
    unknown kind).
    """
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return []
    text = str(value).strip()
    if not text or text.lower() in ("none", "no", "0", "false", "n"):
        return []
    codes: list[str] = []
    for part in re.split(r"[;,/|]+|\s+and\s+", text):
        piece = part.strip()
        if not piece:
            continue
        match = re.fullmatch(r"(?:§\s*)?(?:174-6\s*)?\(?([A-Fa-f])\)?\.?", piece)
        if match:
            codes.append(match.group(1).upper())
            continue
        for letter, pat in _FAILURE_WORDS:
            if re.search(pat, piece, re.IGNORECASE):
                codes.append(letter)
                break
        else:
            codes.append("?")
    return list(dict.fromkeys(codes))
