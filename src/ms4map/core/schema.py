"""Canonical layers, columns, closed value lists, legal layers and PWL ids.

Everything downstream of :mod:`ms4map.io` sees only the canonical names defined
here.  Real data arrives with other names: :mod:`ms4map.io.aliases` maps common
municipal schemas (Norfolk VA, University of Kentucky, NYC DEC open data, ...) onto
the canonical columns, and :mod:`ms4map.io.fieldmap` lets a user add their own.

Columns that hold somebody else's answer about where things drain (Norfolk's
``OUTFALL`` and ``Dbasin``) are listed in :data:`ANSWER_COLUMNS`: they are
carried along untouched and never mapped into a canonical column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .nulls import is_blank_or_null_marker

__all__ = [
    "AMBIGUITY_COLUMNS",
    "ANSWER_COLUMNS",
    "LEGAL_LAYERS",
    "CONVEYANCE_KINDS",
    "LAYERS",
    "OPEN_CONVEYANCE_KINDS",
    "OUTFALL_STATUSES",
    "PARCEL_INFO_COLUMNS",
    "PATH_COLUMNS",
    "SEWER_VALUES",
    "STRUCTURE_KINDS",
    "Column",
    "LayerSpec",
    "id_text",
    "is_pwl_id",
    "normalize_pwl_id",
]

STRUCTURE_KINDS = (
    "catch_basin",
    "inlet",
    "manhole",
    "junction",
    "headwall",
    "outfall",
    "cleanout",
    "bmp",
    "other",
)
#: Structure kinds where surface runoff enters the MS4.
INLET_KINDS = ("catch_basin", "inlet")
CONVEYANCE_KINDS = ("pipe", "culvert", "ditch", "swale", "channel", "connector")
OPEN_CONVEYANCE_KINDS = ("ditch", "swale", "channel")
OUTFALL_STATUSES = ("unknown", "not_flowing", "flowing", "suspect", "illicit", "eliminated")
SEWER_VALUES = ("public", "septic", "unknown")
FLOW_DIRS = ("uni", "bi", "reverse")

#: Source columns that record someone's answer about where things drain.  They
#: are kept on the features for checking but never read by tracing.
ANSWER_COLUMNS = frozenset(
    {"OUTFALL", "Dbasin", "DBASIN", "Outfall_Re", "Major_Wate", "Major_Watershed"}
)


@dataclass(frozen=True)
class Column:
    """One canonical column.

    Parameters
    ----------
    name : str
        Canonical column name.
    dtype : str
        One of ``"str"``, ``"float"``, ``"int"``, ``"bool"``.
    required : bool
        Whether the layer is unusable without it.
    values : tuple of str, optional
        Closed value list (after normalisation), if any.
    description : str
        What the column means, for docs and reports.
    """

    name: str
    dtype: str = "str"
    required: bool = False
    values: tuple[str, ...] | None = None
    description: str = ""


@dataclass(frozen=True)
class LayerSpec:
    """One canonical layer: geometry family, id column and columns."""

    name: str
    geometry: str | None  # "Point", "LineString", "Polygon", "Line/Polygon" or None (table)
    id_column: str | None
    columns: tuple[Column, ...] = field(default_factory=tuple)
    description: str = ""
    #: Whether features without an id get a generated one (warning) instead of an error.
    generate_ids: bool = False

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


LAYERS: dict[str, LayerSpec] = {
    spec.name: spec
    for spec in (
        LayerSpec(
            "parcels",
            "Polygon",
            "parcel_id",
            (
                Column("parcel_id", required=True, description="NY SBL / print key"),
                Column("address"),
                Column("owner"),
                Column("owner_address"),
                Column("prop_class", description="3-digit NY RPS property class"),
                Column("acres", "float"),
                Column("sewer", values=SEWER_VALUES),
                Column("septic_failure", description="recorded failure condition code, if any"),
            ),
            "Tax parcels.",
        ),
        LayerSpec(
            "structures",
            "Point",
            "struct_id",
            (
                Column("struct_id"),
                Column("kind", values=STRUCTURE_KINDS),
                Column("rim_elev", "float"),
                Column("invert_elev", "float"),
            ),
            "Storm structures: catch basins, inlets, manholes, headwalls, outfalls.",
            generate_ids=True,
        ),
        LayerSpec(
            "conveyances",
            "LineString",
            "conv_id",
            (
                Column("conv_id"),
                Column("kind", values=CONVEYANCE_KINDS),
                Column("from_id"),
                Column("to_id"),
                Column("us_invert", "float"),
                Column("ds_invert", "float"),
                Column("diameter_in", "float", description="diameter, or span of a box/arch"),
                Column("rise_in", "float"),
                Column("material"),
                Column("flow_dir", values=FLOW_DIRS),
            ),
            "Pipes, culverts, ditches, swales, channels and connector links.",
            generate_ids=True,
        ),
        LayerSpec(
            "outfalls",
            "Point",
            "outfall_id",
            (
                Column("outfall_id"),
                Column("receiving_water"),
                Column("pwl_id"),
                Column("status", values=OUTFALL_STATUSES),
                Column("permit_id"),
            ),
            "MS4 outfalls with their receiving water.",
            generate_ids=True,
        ),
        LayerSpec("roads", "LineString", None, (Column("name"),), "Road centrelines."),
        LayerSpec(
            "waterbodies",
            "Line/Polygon",
            "wb_id",
            (
                Column("wb_id", description="NYSDEC PWL ID NNNN-NNNN"),
                Column("name"),
                Column("kind"),
            ),
            "Streams (lines) and lakes/ponds (polygons).",
        ),
        LayerSpec(
            "impairments",
            None,
            None,
            (
                Column("wb_id", required=True),
                Column("pollutant", required=True),
                Column("category"),
                Column("list_year", "int"),
                Column("source"),
            ),
            "303(d) listings: waterbody + pollutant + category.",
        ),
        LayerSpec(
            "tmdl_watersheds",
            "Polygon",
            "tmdl_id",
            (
                Column("tmdl_id"),
                Column("name"),
                Column("pollutant"),
                Column("stormwater_source", "bool"),
                Column("approved"),
            ),
            "TMDL watersheds.",
        ),
        LayerSpec("ms4_area", "Polygon", None, (Column("name"),), "MS4 regulated area."),
        LayerSpec(
            "sewer_districts", "Polygon", None, (Column("name"),), "Public sanitary sewer service."
        ),
    )
}

#: Layers that may be fed by several source layers at once.
MULTI_SOURCE_ROLES = frozenset({"conveyances", "structures", "waterbodies", "outfalls", "roads"})

#: The parcel attributes that per-parcel outputs (septic flags, candidate sources) carry
#: first, so a row says whose parcel it is.
PARCEL_INFO_COLUMNS = ("parcel_id", "address", "owner", "owner_address", "prop_class", "sewer")

#: Where a share of a parcel's runoff goes: the first target, the share, and the outfall
#: and receiving water it reaches (the drainage table's columns between the parcel id and
#: how it was found).
PATH_COLUMNS = (
    "target_kind",
    "target_id",
    "fraction",
    "outfall_id",
    "receiving_water",
    "pwl_id",
)

#: The drainage table's last two columns, empty except on a row whose storm-network path
#: is ``ambiguous`` (the evidence cannot tell which outfall takes the flow):
#: ``outfall_candidates``, the candidate outfall ids ``;``-joined (sorted), and
#: ``candidate_waters``, each candidate's ``pwl_id`` (else its receiving water's name,
#: else empty) in the same order.
AMBIGUITY_COLUMNS = ("outfall_candidates", "candidate_waters")


PWL_RE = re.compile(r"^\d{4}-\d{4}$")


def is_pwl_id(value: Any) -> bool:
    """Whether ``value`` is a NYSDEC PWL ID such as ``1302-0092``."""
    return not is_blank_or_null_marker(value) and bool(PWL_RE.match(str(value).strip()))


#: A PWL ID as EPA ATTAINS writes it, with the state prefix: ``NY1302-0092``, ``NY-1302-0092``.
_NY_PWL_RE = re.compile(r"^NY[-_ ]?(\d{4}-\d{4})$", re.IGNORECASE)
#: Texts a table cell holds for "no id" once a null went through ``str()``.
NO_ID_TEXTS = frozenset({"", "<na>", "nan", "nat", "<null>", "null", "none"})


def id_text(value: Any) -> str | None:
    """An id cell as stripped text, or ``None`` when it holds no id: blank, a null, or the
    text a null becomes through ``str()`` (``"<NA>"``, ``"nan"``) or a GIS export writes
    (``"<Null>"``, ``"NULL"``, ``"None"``).

    Examples
    --------
    >>> id_text(" 1302-0092 "), id_text("<NA>"), id_text(None)
    ('1302-0092', None, None)
    """
    if is_blank_or_null_marker(value):
        return None
    text = str(value).strip()
    return None if text.lower() in NO_ID_TEXTS else text


def normalize_pwl_id(value: Any) -> str | None:
    """The NYSDEC PWL ID ``NNNN-NNNN`` that ``value`` writes, or ``None``.

    A PWL ID with the ATTAINS state prefix (``NY1302-0092``, ``NY-1302-0092``) is that
    PWL ID; anything else that is not ``NNNN-NNNN`` (and every blank) gives ``None``.

    Examples
    --------
    >>> normalize_pwl_id("NY1101-0012"), normalize_pwl_id("1101-0012"), normalize_pwl_id("W")
    ('1101-0012', '1101-0012', None)
    """
    text = id_text(value)
    if text is None:
        return None
    if PWL_RE.match(text):
        return text
    m = _NY_PWL_RE.match(text)
    return m.group(1) if m else None


#: The legal layers Condition A depends on: ``layer -> (what is missing, what it is needed
#: for, the fix)``.  A workspace without one of them never gets a confident "no": the
#: answer is undetermined and names the layer (see :attr:`ms4map.rules.waters.Waters.missing`).
LEGAL_LAYERS: dict[str, tuple[str, str, str]] = {
    "impairments": (
        "no 303(d) list in the workspace",
        "the 303(d) branch of Condition A (is the receiving water listed for a pollutant "
        "of concern?) and the septic special condition",
        "add the `impairments` layer or pass `--impairments CSV`",
    ),
    "tmdl_watersheds": (
        "no TMDL watersheds in the workspace",
        "the TMDL branch of Condition A (does the site lie in or drain to a TMDL watershed "
        "with stormwater a source?) and the septic special condition",
        "add the `tmdl_watersheds` layer, an empty one when the town has no TMDL watershed",
    ),
    "waterbodies": (
        "no waterbodies in the workspace",
        "runoff that reaches a water directly (not through the MS4), receiving waters "
        "named without a PWL ID, and outfalls at pipe ends that discharge to water",
        "add the `waterbodies` layer",
    ),
}
