"""Alias tables and code normalisers: how municipal data names canonical columns and values.

:data:`ALIASES` maps common municipal schemas (Norfolk VA, University of Kentucky, NYC
DEC open data, ...) onto the canonical columns of :mod:`ms4map.core.schema`, and
:mod:`ms4map.io.fieldmap` lets a user add their own.  The normalisers turn structure
and line codes, flow directions, elevations, pipe sizes, outfall statuses, sewer
service and ``stormwater_source`` cells into the canonical closed lists; the vectorised
ones (:func:`map_unique`, :func:`normalize_elevations`, :func:`text_or_na`) do the
Python work once per distinct value of a column.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Container, Iterable
from typing import Any

import numpy as np

from ..core.nulls import is_blank_or_null_marker
from ..core.schema import CONVEYANCE_KINDS, OUTFALL_STATUSES, STRUCTURE_KINDS

__all__ = [
    "ALIASES",
    "LAYER_NAME_KIND_HINTS",
    "ELEVATION_SENTINELS",
    "STORMWATER_SOURCE_FALSE",
    "STORMWATER_SOURCE_TRUE",
    "is_known_structure_code",
    "is_parseable_pipe_size",
    "map_unique",
    "normalize_conveyance_kind",
    "normalize_elevation",
    "normalize_elevations",
    "normalize_flow_dir",
    "normalize_outfall_status",
    "normalize_sewer",
    "normalize_structure_kind",
    "parse_pipe_size",
    "stormwater_source_value",
    "text_or_na",
]

# --------------------------------------------------------------------------------------
# Alias tables: canonical column -> known source names (matched case-insensitively).
# Order matters: the first source column present wins.
# --------------------------------------------------------------------------------------
ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "parcels": {
        "parcel_id": (
            "parcel_id",
            "SBL",
            "PRINT_KEY",
            "PRINTKEY",
            "SWIS_SBL_ID",
            "PIN",
            "PARCELID",
            "PARCEL_ID",
            "LOC_ID",
            "APN",
        ),
        "address": (
            "address",
            "PARCEL_ADDR",
            "LOC_ADDR",
            "SITE_ADDR",
            "ADDR",
            "FULL_ADDR",
            "SITEADDRESS",
        ),
        "owner": ("owner", "PRIMARY_OWNER", "OWNER_NAME", "OWNERNAME", "OWNER1"),
        "owner_address": ("owner_address", "MAIL_ADDR", "MAILING_ADDR", "OWNER_ADDR", "MAILADDR"),
        "prop_class": ("prop_class", "PROP_CLASS", "PROPCLASS", "PROPERTY_CLASS", "CLASS"),
        "acres": ("acres", "CALC_ACRES", "ACREAGE", "ACRES_", "GIS_ACRES"),
        "sewer": ("sewer", "SEWER_TYPE", "SEWER", "SEWER_DESC"),
        "septic_failure": ("septic_failure", "SEPTIC_FAILURE", "SEPTIC_VIOL"),
    },
    "structures": {
        "struct_id": (
            "struct_id",
            "Structure_",
            "Structure_ID",
            "STRUCT_ID",
            "FACILITYID",
            "ASSETID",
            "NODE_ID",
        ),
        "kind": ("kind", "Structure1", "Structure_Type", "StructureType", "STRUCT_TYPE", "TYPE"),
        "rim_elev": ("rim_elev", "Rim_Elevat", "Rim_Elevation", "RIM_ELEV", "RIMELEV"),
        "invert_elev": ("invert_elev", "Invert_Ele", "Invert_Elevation", "INV_ELEV", "INVERTELEV"),
    },
    "conveyances": {
        "conv_id": ("conv_id", "Pipe_ID", "Ditch_ID", "GNL_ID", "LINE_ID", "FACILITYID", "PIPE_ID"),
        "kind": ("kind", "LineType", "LINE_TYPE", "CONV_TYPE", "GNL_TYPE"),
        "from_id": (
            "from_id",
            "Upstream_S",
            "Upstream_Structure",
            "US_NODE",
            "FROM_NODE",
            "UPSTREAMID",
        ),
        "to_id": (
            "to_id",
            "Downstream",
            "Downstream_Structure",
            "DS_NODE",
            "TO_NODE",
            "DOWNSTREAMID",
        ),
        "us_invert": ("us_invert", "Upstream_I", "Upstream_Invert", "US_INVERT", "UPINV"),
        "ds_invert": ("ds_invert", "Downstre_1", "Downstream_Invert", "DS_INVERT", "DNINV"),
        "diameter_in": ("diameter_in", "Pipe_Size", "LineSize", "DIAMETER", "PIPE_DIA", "SIZE"),
        "rise_in": ("rise_in", "RISE"),
        "material": ("material", "Pipe_Mater", "Ditch_Lining", "MATERIAL"),
        "flow_dir": ("flow_dir", "FlowDirection", "FLOW_DIR", "FLOWDIR"),
    },
    "outfalls": {
        "outfall_id": (
            "outfall_id",
            "cso_identification_number",  # unique across permits; outfall_number is not
            "outfall_number",
            "OUTFALL_ID",
            "OUTFALLID",
        ),
        "receiving_water": (
            "receiving_water",
            "receiving_waterbody_name",
            "RECEIVING",
            "RECV_WATER",
        ),
        "pwl_id": ("pwl_id", "PWL_ID", "PWLID"),
        "status": ("status", "STATUS", "OUTFALL_STATUS"),
        "permit_id": ("permit_id", "spdes_permit_number", "SPDES", "PERMIT"),
    },
    "roads": {"name": ("name", "NAME", "STREET", "ROAD_NAME", "FULLNAME")},
    "waterbodies": {
        "wb_id": ("wb_id", "PWL_ID", "PWLID", "WBID"),
        "name": ("name", "NAME", "GNIS_NAME", "WB_NAME"),
        "kind": ("kind", "TYPE", "FTYPE", "WB_TYPE"),
    },
    "impairments": {
        "wb_id": ("wb_id", "PWL_ID", "PWL ID", "assessment_unit_id", "AUID"),
        "pollutant": ("pollutant", "POLLUTANT", "CAUSE", "cause/pollutant", "parameter"),
        "category": ("category", "CATEGORY", "LIST_PART", "list part"),
        "list_year": ("list_year", "LIST_YEAR", "YEAR"),
        "source": ("source", "SOURCE", "suspected source"),
    },
    "tmdl_watersheds": {
        "tmdl_id": ("tmdl_id", "TMDL_ID", "action_id"),
        "name": ("name", "NAME"),
        "pollutant": ("pollutant", "POLLUTANT", "parameter"),
        "stormwater_source": ("stormwater_source", "MS4_WLA", "STORMWATER"),
        "approved": ("approved", "APPROVED"),
    },
    "ms4_area": {"name": ("name", "NAME")},
    "sewer_districts": {"name": ("name", "NAME", "DISTRICT")},
}

# Source layers whose kind is implied by the layer itself when it has no kind column.
LAYER_NAME_KIND_HINTS: dict[str, str] = {
    "ditch": "ditch",
    "swale": "swale",
    "channel": "channel",
    "culvert": "culvert",
    "connector": "connector",
    "link": "connector",
    "pipe": "pipe",
}

# --------------------------------------------------------------------------------------
# Value normalisation
# --------------------------------------------------------------------------------------
_STRUCTURE_CODES: dict[str, str] = {
    # Norfolk VA codes
    "CB": "catch_basin",
    "CBNS": "catch_basin",
    "CBCS": "catch_basin",
    "CBCW": "catch_basin",
    "CBDG": "catch_basin",
    "CBDI": "catch_basin",
    "CBDN": "catch_basin",
    "CBTN": "catch_basin",
    "CBVD": "catch_basin",
    "DI": "inlet",
    "DICS": "inlet",
    "DINS": "inlet",
    "MDI": "inlet",
    "GB": "inlet",
    "GBDN": "inlet",
    "YB": "inlet",
    "YBCW": "inlet",
    "YBDN": "inlet",
    "SCUP": "inlet",
    "RFDR": "inlet",
    "FLDR": "inlet",
    "FLEN": "inlet",
    "BRDR": "inlet",
    "TD": "inlet",
    "MH": "manhole",
    "MHCE": "manhole",
    "MHCG": "manhole",
    "MHCS": "manhole",
    "MHCW": "manhole",
    "MHGT": "manhole",
    "MHNS": "manhole",
    "MHVD": "manhole",
    "NSCW": "manhole",
    "JB": "junction",
    "PICN": "junction",
    "APIP": "junction",
    "DCEN": "junction",
    "DCHX": "junction",
    "STUB": "junction",
    "PLUG": "junction",
    "COST": "cleanout",
    "CO": "cleanout",
    "PE": "inlet",
    "HW": "headwall",
    "EW": "headwall",
    "FES": "headwall",
    "OF": "outfall",
    "OUT": "outfall",
    "WEIR": "bmp",
    "PBPS": "other",
    "PRDS": "other",
    "STNF": "other",
    "UN": "other",
    # words (UKY and others)
    "CATCHBASIN": "catch_basin",
    "CATCH BASIN": "catch_basin",
    "CATCH_BASIN": "catch_basin",
    "MANHOLE-CB": "catch_basin",
    "INLET": "inlet",
    "DROP INLET": "inlet",
    "YARD DRAIN": "inlet",
    "CURB INLET": "inlet",
    "GRATE": "inlet",
    "MANHOLE": "manhole",
    "JUNCTION BOX": "junction",
    "JUNCTION": "junction",
    "HEADWALL": "headwall",
    "END SECTION": "headwall",
    "OUTFALL": "outfall",
    "OUTLET": "outfall",
    "CLEANOUT": "cleanout",
    "WATER QUALITY BMP": "bmp",
    "UNDERGROUND DETENTION": "bmp",
    "BMP": "bmp",
    "CAVE": "other",
    "TBD": "other",
    "OTHER": "other",
}
# Norfolk pipe-end codes beginning with PE/PO are end sections (headwalls) of various kinds.
_STRUCTURE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("PE", "inlet"),
    ("PO", "headwall"),
    ("CB", "catch_basin"),
    ("MH", "manhole"),
    ("DI", "inlet"),
    ("YB", "inlet"),
    ("GB", "inlet"),
)

_CONVEYANCE_WORDS: dict[str, str] = {
    "PIPE": "pipe",
    "STORM PIPE": "pipe",
    "CULVERT": "culvert",
    "BOX CULVERT": "culvert",
    "DITCH": "ditch",
    "SWALE": "swale",
    "VEGETATIVE SWALE": "swale",
    "CHANNEL": "channel",
    "STREAM": "channel",
    "CONNECTOR": "connector",
    "GN_CONNECTION": "connector",
    "BMP": "connector",
    "LINK": "connector",
    "ROOF DRAIN": "pipe",
    "UNDERDRAIN": "pipe",
    "TRENCH DRAIN": "pipe",
    "UNDERGROUND DETENTION": "pipe",
    "RETENTION BASIN": "channel",
    "POND": "channel",
}


def normalize_structure_kind(value: Any) -> str | None:
    """Map a structure type code or word to a canonical kind.

    Returns ``None`` when ``value`` is blank and ``"other"`` for a code that is
    not known (the caller reports those).
    """
    if is_blank_or_null_marker(value):
        return None
    kind = _known_structure_kind(value)
    if kind is not None:
        return kind
    return None if str(value).strip().upper() in ("NONE",) else "other"


def is_known_structure_code(value: Any) -> bool:
    """Whether :func:`normalize_structure_kind` recognises ``value`` (blank counts as known)."""
    return is_blank_or_null_marker(value) or _known_structure_kind(value) is not None


def _coded_kind(
    value: Any,
    kinds: Container[str],
    codes: dict[str, str],
    parts: Iterable[tuple[str, str]],
    has_part: Callable[[str, str], bool],
) -> str | None:
    """The canonical kind of a non-blank code.

    Parameters
    ----------
    value : Any
        The code or word as the data has it.
    kinds : container of str
        The canonical kinds (lower case); ``value`` in any case is its own kind.
    codes : dict
        ``{CODE: kind}`` of known codes (upper case).
    parts : iterable of (str, str)
        ``(part, kind)``, tried in order on any other code ...
    has_part : callable
        ... ``has_part(CODE, part)``: whether the upper-case code holds ``part``.

    Returns
    -------
    str or None
        The kind; ``None`` when no rule knows the code.
    """
    text = str(value).strip()
    low = text.lower()
    if low in kinds:
        return low
    up = text.upper()
    if up in codes:
        return codes[up]
    return next((kind for part, kind in parts if has_part(up, part)), None)


def _short_with_prefix(code: str, prefix: str) -> bool:
    """Whether ``code`` is a short code (5 characters at most) that starts with ``prefix``."""
    return code.startswith(prefix) and len(code) <= 5


def _known_structure_kind(value: Any) -> str | None:
    """The kind of a non-blank structure code: a canonical kind, a known code or a short
    code with a known prefix; ``None`` for any other code."""
    return _coded_kind(
        value, STRUCTURE_KINDS, _STRUCTURE_CODES, _STRUCTURE_PREFIXES, _short_with_prefix
    )


def normalize_conveyance_kind(value: Any, *, default: str | None = None) -> str | None:
    """Map a line type to a canonical conveyance kind (``default`` when blank or unknown)."""
    if is_blank_or_null_marker(value):
        return default
    words = _CONVEYANCE_WORDS
    kind = _coded_kind(value, CONVEYANCE_KINDS, words, words.items(), operator.contains)
    return default if kind is None else kind


def normalize_flow_dir(value: Any) -> str | None:
    """``UNI``/as digitized -> ``"uni"``, ``BI``/two-way -> ``"bi"``, reverse -> ``"reverse"``."""
    if is_blank_or_null_marker(value):
        return None
    up = str(value).strip().upper()
    if up in ("UNI", "U", "WITH", "FORWARD", "DIGITIZED", "1"):
        return "uni"
    if up in ("BI", "B", "BOTH", "TWO-WAY", "TWOWAY", "0"):
        return "bi"
    if up in ("REV", "REVERSE", "AGAINST", "-1"):
        return "reverse"
    return None


#: Elevation values that mean "unknown" in municipal data.
ELEVATION_SENTINELS = frozenset({0.0, -9999.0, -999.0, -99.0, 9999.0, 99999.0, -99999.0})


def normalize_elevation(value: Any) -> float | None:
    """Return an elevation as float, with 0 and sentinel values as missing (``None``)."""
    if is_blank_or_null_marker(value):
        return None
    try:
        v = float(str(value).strip().replace(",", ""))
    except ValueError:
        return None
    if math.isnan(v) or v in ELEVATION_SENTINELS:
        return None
    return v


_SIZE_NUM = r"(\d+(?:\.\d+)?)\s*(?:''|\"|in(?:ch(?:es)?)?|”|′′)?"
_SIZE_RE = re.compile(rf"^\s*{_SIZE_NUM}\s*(?:[xX×]\s*{_SIZE_NUM})?\s*\*?\s*$")


def parse_pipe_size(value: Any) -> tuple[float | None, float | None]:
    """Parse a pipe size into ``(span_in, rise_in)`` inches.

    ``15''`` -> (15, None); ``60''X42''`` -> (60, 42) as span x rise; numbers pass
    through; ``0''``, 0 and blanks are missing.

    Examples
    --------
    >>> parse_pipe_size("60''X42''")
    (60.0, 42.0)
    >>> parse_pipe_size("0''")
    (None, None)
    """
    if is_blank_or_null_marker(value):
        return (None, None)
    if isinstance(value, (int, float)):
        v = float(value)
        return (None, None) if v <= 0 or math.isnan(v) else (v, None)
    m = _SIZE_RE.match(str(value))
    if not m:
        return (None, None)
    span = float(m.group(1))
    rise = float(m.group(2)) if m.group(2) else None
    if span <= 0:
        return (None, None)
    if rise is not None and rise <= 0:
        rise = None
    return (span, rise)


def is_parseable_pipe_size(value: Any) -> bool:
    """Whether ``value`` is blank or a size :func:`parse_pipe_size` understands."""
    if is_blank_or_null_marker(value) or isinstance(value, (int, float)):
        return True
    return bool(_SIZE_RE.match(str(value)))


def normalize_outfall_status(value: Any) -> str:
    """Map an outfall status to the closed list (``"unknown"`` when blank or unrecognised)."""
    if is_blank_or_null_marker(value):
        return "unknown"
    low = str(value).strip().lower().replace(" ", "_").replace("-", "_")
    aliases = {
        "dry": "not_flowing",
        "no_flow": "not_flowing",
        "flow": "flowing",
        "active": "unknown",
        "removed": "eliminated",
    }
    low = aliases.get(low, low)
    return low if low in OUTFALL_STATUSES else "unknown"


def normalize_sewer(value: Any) -> str:
    """Map a sewer attribute to ``public``/``septic``/``unknown``."""
    if is_blank_or_null_marker(value):
        return "unknown"
    low = str(value).strip().lower()
    if low in ("public", "sewer", "municipal", "sewered", "public sewer", "y", "yes", "1"):
        return "public"
    if low in ("septic", "private", "on-site", "onsite", "ists", "none", "n", "no", "0"):
        return "septic"
    return "unknown"


#: Words a ``stormwater_source`` cell may hold for "yes" (an MS4 waste load allocation
#: says stormwater is a source) and for "no"; anything else is not known.
STORMWATER_SOURCE_TRUE = frozenset(
    {"true", "yes", "y", "1", "t", "ms4", "wla", "ms4 wla", "ms4_wla"}
)
STORMWATER_SOURCE_FALSE = frozenset({"false", "no", "n", "0", "f", "none"})


def stormwater_source_value(v: Any) -> bool | None:
    """A TMDL watershed's ``stormwater_source`` cell: ``True``, ``False``, or ``None``
    when blank or unrecognised (not known: Condition A is then undetermined, never a
    "no", docs/screening.md)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if is_blank_or_null_marker(v):
        return None
    if isinstance(v, (int, float, np.integer, np.floating)):
        return bool(v)
    text = str(v).strip().lower()
    if text in STORMWATER_SOURCE_TRUE:
        return True
    if text in STORMWATER_SOURCE_FALSE:
        return False
    return None


# ---- vectorised normalisers (one call per column; Python only per distinct value) -----------
_BLANK_TEXT = ("", "<Null>", "NULL", "None")


def map_unique(values: Any, func: Any) -> Any:
    """``func`` applied to each *distinct* value of a Series (blanks passed as ``None``),
    spread back to every row: the per-value Python work is per distinct value only."""
    import pandas as pd

    s = values if isinstance(values, pd.Series) else pd.Series(values)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    res = [func(u) for u in uniques] + [func(None)]
    arr = np.empty(len(res), dtype=object)
    arr[:] = res
    return pd.Series(arr[codes], index=s.index, dtype=object)


def normalize_elevations(values: Any) -> np.ndarray:
    """:func:`normalize_elevation` for a whole column: float array, NaN for blanks, text
    that is no number, 0 and the sentinels."""
    import pandas as pd

    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        v = s.to_numpy(dtype=float, na_value=np.nan)
    else:
        txt = s.astype(object).where(s.notna(), "").astype(str).str.strip()
        txt = txt.str.replace(",", "", regex=False)
        v = pd.to_numeric(txt, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    v = v.copy()
    v[np.isin(v, list(ELEVATION_SENTINELS))] = np.nan
    return v


def text_or_na(values: Any) -> Any:
    """Text column: stripped strings, NA for blanks; whole-number floats lose ``.0``
    (an id read as 1204.0 is "1204")."""
    import pandas as pd

    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy(dtype=float, na_value=np.nan).copy()
        fin = np.isfinite(v)
        whole = fin & (v == np.floor(v)) & (np.abs(v) < 2**53)
        out = np.full(len(v), pd.NA, dtype=object)
        out[whole] = v[whole].astype(np.int64).astype(str)
        other = fin & ~whole
        out[other] = v[other].astype(str)
        return pd.Series(out, index=s.index, dtype=object)
    kind = pd.api.types.infer_dtype(s, skipna=True)
    if kind in ("string", "empty") or pd.api.types.is_integer_dtype(s.dtype):
        blank = s.isna().to_numpy().copy()
        txt = s.astype(object).where(~blank, "").astype(str).str.strip()
        blank |= txt.isin(_BLANK_TEXT).to_numpy()
        out = txt.to_numpy(dtype=object).copy()
        out[blank] = pd.NA
        return pd.Series(out, index=s.index, dtype=object)

    def conv(v: Any) -> Any:
        if is_blank_or_null_marker(v):
            return pd.NA
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        return str(v).strip()

    return map_unique(s, conv)
