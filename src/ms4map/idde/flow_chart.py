"""The CWP flow-type chart: what is flowing from an outfall, from four field tests.

:func:`flow_type` is the residential flow-type chart of the CWP IDDE manual (2004) on
detergents, ammonia, potassium and fluoride; :func:`flow_type_of` reads the tests of
an inspection or a track-down sample (:mod:`ms4map.records`).

Examples
--------
>>> from ms4map.idde import flow_type
>>> flow_type(detergents_mg_l=0.5, ammonia_mg_l=2.0, potassium_mg_l=1.0)[0]
'sewage'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..core.errors import UsageError
from ..core.nulls import is_na

__all__ = [
    "AMMONIA_POTASSIUM_RATIO",
    "DETERGENTS_MG_L",
    "FLOW_TYPES",
    "FLUORIDE_MG_L",
    "flow_type",
    "flow_type_of",
]

#: Detergents (surfactants, as MBAS) above this (mg/L) mean sewage or wash water.
#: docs/rules.md section 5 takes it from the CWP IDDE manual (Brown, Caraco and Pitt, 2004);
#: verify it against the manual before relying on it.
DETERGENTS_MG_L = 0.25
#: Ammonia / potassium ratio above this means sewage, else wash water (verify as above).
AMMONIA_POTASSIUM_RATIO = 1.0
#: Fluoride above this (mg/L) without detergents means tap water, else natural water
#: (verify as above).
FLUORIDE_MG_L = 0.25

#: Answers of :func:`flow_type`.
FLOW_TYPES = (
    "sewage",
    "wash_water",
    "sewage_or_wash_water",
    "tap_water",
    "natural_water",
    "tap_or_natural_water",
    "undetermined",
)

_CHART = "residential flow-type chart (CWP IDDE manual, 2004)"


def _measure(name: str, value: Any) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} = {value!r}: give a concentration in mg/L or None.") from None
    if math.isnan(v):
        return None
    if v < 0:
        raise UsageError(f"{name} = {v}: a concentration cannot be negative.")
    return v


def flow_type(
    detergents_mg_l: float | None = None,
    ammonia_mg_l: float | None = None,
    potassium_mg_l: float | None = None,
    fluoride_mg_l: float | None = None,
) -> tuple[str, str]:
    """The likely source of a dry-weather flow, from the residential flow-type chart.

    Detergents above :data:`DETERGENTS_MG_L` mean sewage or wash water; then an
    ammonia/potassium ratio above :data:`AMMONIA_POTASSIUM_RATIO` means sewage, else
    wash water.  Without detergents, fluoride above :data:`FLUORIDE_MG_L` means tap
    water, else natural water.  ``None`` (or NaN) means "not measured": the answer
    then stops at the last branch the measurements reach.

    The thresholds are the ones docs/rules.md section 5 gives from the CWP IDDE manual (2004);
    they are to be verified against the manual before a decision rests on them.

    Returns
    -------
    (str, str)
        ``(flow_type, reason)``; ``flow_type`` is one of :data:`FLOW_TYPES`.

    Raises
    ------
    UsageError
        A negative or non-numeric concentration.
    """
    det = _measure("detergents_mg_l", detergents_mg_l)
    nh3 = _measure("ammonia_mg_l", ammonia_mg_l)
    k = _measure("potassium_mg_l", potassium_mg_l)
    fl = _measure("fluoride_mg_l", fluoride_mg_l)
    if det is None:
        return (
            "undetermined",
            f"Detergents were not measured; the {_CHART} starts with detergents "
            f"(> {DETERGENTS_MG_L} mg/L = sewage or wash water).",
        )
    if det > DETERGENTS_MG_L:
        head = f"Detergents {det:g} mg/L > {DETERGENTS_MG_L} mg/L: sewage or wash water"
        if nh3 is None or k is None:
            return (
                "sewage_or_wash_water",
                f"{head}; ammonia and potassium are both needed to tell them apart "
                f"(ammonia/potassium > {AMMONIA_POTASSIUM_RATIO:g} = sewage) ({_CHART}).",
            )
        ratio = "infinite" if k == 0 and nh3 > 0 else f"{(nh3 / k if k else 0.0):.2f}"
        if nh3 > AMMONIA_POTASSIUM_RATIO * k:
            return (
                "sewage",
                f"{head}; ammonia/potassium = {nh3:g}/{k:g} = {ratio} > "
                f"{AMMONIA_POTASSIUM_RATIO:g}: sewage ({_CHART}).",
            )
        return (
            "wash_water",
            f"{head}; ammonia/potassium = {nh3:g}/{k:g} = {ratio} <= "
            f"{AMMONIA_POTASSIUM_RATIO:g}: wash water ({_CHART}).",
        )
    head = f"Detergents {det:g} mg/L <= {DETERGENTS_MG_L} mg/L: no detergents"
    if fl is None:
        return (
            "tap_or_natural_water",
            f"{head}; fluoride was not measured (> {FLUORIDE_MG_L} mg/L = tap water) ({_CHART}).",
        )
    if fl > FLUORIDE_MG_L:
        return (
            "tap_water",
            f"{head}; fluoride {fl:g} mg/L > {FLUORIDE_MG_L} mg/L: tap water ({_CHART}).",
        )
    return (
        "natural_water",
        f"{head}; fluoride {fl:g} mg/L <= {FLUORIDE_MG_L} mg/L: natural water ({_CHART}).",
    )


def flow_type_of(tests: Mapping[str, Any]) -> tuple[str, str]:
    """:func:`flow_type` on the field tests of an inspection or a track-down sample.

    Reads ``detergents``, ``ammonia``, ``potassium`` and ``fluoride`` in mg/L (the
    field names of :mod:`ms4map.records`; ``<name>_mg_l`` works too) from a mapping
    or a row (``pandas.Series``); a missing key, ``None`` or NaN is "not measured".

    Examples
    --------
    >>> flow_type_of({"detergents": 0.1, "fluoride": 0.6})[0]
    'tap_water'
    """

    def get(name: str) -> Any:
        for key in (name, f"{name}_mg_l"):
            if key in tests and not is_na(tests[key]):
                return tests[key]
        return None

    return flow_type(
        detergents_mg_l=get("detergents"),
        ammonia_mg_l=get("ammonia"),
        potassium_mg_l=get("potassium"),
        fluoride_mg_l=get("fluoride"),
    )
