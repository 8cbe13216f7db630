"""The Determination: the versioned JSON document of one site, with typed read-only views.

:func:`ms4map.rules.conditions.determination.determine` builds it; ``to_dict()`` /
``to_json()`` are the document (``docs/screening.md``), ``det.condition_a`` and the
other properties read it as typed, frozen objects (:class:`Condition`, ...), and
:meth:`Determination.with_application` returns a copy with the application filed.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .inputs import Inputs, SiteInfo, acres_text, application_info
from .reasons import _pct

DETERMINATION_SCHEMA = "ms4map.determination"


#: Version of the JSON document; bump the minor for added fields, the major for changes.
DETERMINATION_VERSION = "1.2"


@dataclass(frozen=True)
class Condition:
    """One condition (A, B or C) or the land development test: its value and reasons.

    Attributes
    ----------
    value : bool or None
        ``True``, ``False`` or ``None`` (undetermined).
    reasons : tuple of str
        Why, in words an officer can put in a letter.
    method : str or None
        How Condition A was decided (``listed_water``, ``not_listed``, ...); ``None``
        for the others.
    """

    value: bool | None
    reasons: tuple[str, ...]
    method: str | None = None


@dataclass(frozen=True)
class ProjectType:
    """The project type of the determination: ``value``, its ``source`` (``"user"`` or
    ``"guessed from property class"``) and the ``reason``."""

    value: str
    source: str
    reason: str


@dataclass(frozen=True)
class Exemption:
    """The exemption claimed (``code``, ``None`` when none), whether it holds and why."""

    code: str | None
    exempt: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Swppp:
    """Whether a SWPPP is required, why, and the items it must contain.

    ``basic`` and ``post_construction`` are the items as read-only mappings (``n``,
    ``text``, and ``value`` / ``required``); ``post_construction_required`` is ``True``,
    ``False`` or ``None`` (a condition is undetermined).
    """

    required: bool
    reasons: tuple[str, ...]
    basic: tuple[MappingProxyType, ...]
    post_construction: tuple[MappingProxyType, ...]
    post_construction_required: bool | None


@dataclass(frozen=True)
class WatersReached:
    """The waters the site's runoff reaches (``drainage.receiving_waters``), every
    impairment listing of them (``impaired_waters``, each saying whether it counts for
    Condition A) and the TMDL watersheds reached, as read-only mappings."""

    receiving: tuple[MappingProxyType, ...]
    impaired: tuple[MappingProxyType, ...]
    tmdl_watersheds: tuple[MappingProxyType, ...]


def _frozen(value: Any) -> Any:
    """A read-only view of a part of the document: dicts as mapping proxies, lists as
    tuples, all the way down."""
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class SiteEvidence:
    """What a site's determination was made from (not in the JSON document).

    The site, its drainage rows (which path), and the pipeline result, workspace, waters
    and outfall points they come from (which data).  The rules record it; the report
    draws its map from it (:func:`ms4map.outputs.report.site_map_layers`).
    """

    site: SiteInfo
    rows: pd.DataFrame
    result: Any
    workspace: Any
    waters: Any
    outfall_points: dict[str, Any]


@dataclass
class Determination:
    """A Condition A/B/C determination; :meth:`to_dict` is the versioned JSON document.

    ``evidence`` is what a site's determination was made from (:class:`SiteEvidence`,
    not in the JSON); ``map_layers`` the geometries of the report's static map, drawn by
    :func:`ms4map.outputs.report.site_map_layers` from the evidence (or given by hand).
    The properties read the document as typed, read-only objects
    (``det.condition_a.value``, ``det.inputs.effective_acres``, ``det.swppp.required``,
    ...); ``doc``, ``det["key"]`` and :meth:`to_dict` stay the document itself.
    """

    doc: dict[str, Any]
    map_layers: dict[str, Any] = field(default_factory=dict, repr=False)
    evidence: SiteEvidence | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return self.doc[key]

    def __repr__(self) -> str:
        doc = self.doc
        conds = doc.get("conditions", {})

        def word(key: str) -> str:
            return {True: "yes", False: "no", None: "undetermined"}.get(
                conds.get(key, {}).get("value"), "?"
            )

        site = doc.get("site", {}).get("label", "?")
        inputs = doc.get("inputs", {})
        swppp = {True: "yes", False: "no"}.get(doc.get("swppp_required", {}).get("value"), "?")
        return (
            f"<Determination site={site!r} acres={inputs.get('effective_acres', '?')} "
            f"A={word('A')} B={word('B')} C={word('C')} SWPPP={swppp}>"
        )

    @property
    def conditions(self) -> dict[str, dict[str, Any]]:
        return self.doc["conditions"]

    @property
    def swppp_required(self) -> bool:
        return bool(self.doc["swppp_required"]["value"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (see ``docs/screening.md``)."""
        return json.loads(json.dumps(self.doc, default=_json_default))

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.doc, default=_json_default, indent=indent)

    def summary(self) -> str:
        """A few lines for a terminal."""
        doc = self.doc

        def word(x: Any) -> str:
            return {True: "yes", False: "no", None: "undetermined"}[x]

        lines = [
            f"Site: {doc['site']['label']} "
            f"({acres_text(doc['inputs']['disturbed_acres'])} acres disturbed"
            + (
                f", common plan {acres_text(doc['inputs']['common_plan_acres'])} acres"
                if doc["inputs"]["common_plan_acres"] is not None
                else ""
            )
            + ")",
            f"Project type: {doc['project_type']['value']} ({doc['project_type']['source']})"
            + ("; confirm it with --type TYPE" if doc["project_type"]["source"] != "user" else ""),
            f"Land development activity: {word(doc['land_development_activity']['value'])}",
            f"Exemption: {doc['exemption']['code'] or 'none'}"
            + (" (exempt from review)" if doc["exemption"]["exempt"] else ""),
        ]
        for key in ("A", "B", "C"):
            cond = doc["conditions"][key]
            lines.append(f"Condition {key}: {word(cond['value'])}")
            lines += [f"    {reason}" for reason in cond["reasons"]]
        lines.append(
            f"SWPPP required: {word(doc['swppp_required']['value'])}"
            + (
                "; with post-construction controls"
                if doc["swppp_items"]["post_construction_required"]
                else ""
            )
        )
        waters = doc["drainage"]["receiving_waters"]
        if waters:
            lines.append(
                "Receiving waters: "
                + "; ".join(
                    f"{water['name'] or '?'} ({water['pwl_id'] or 'no PWL ID'}, "
                    f"{'through the MS4' if water['via'] == 'ms4' else 'directly'}, "
                    f"{_pct(water['fraction'])})"
                    for water in waters
                )
            )
        return "\n".join(lines)

    # -- typed, read-only views of the document -----------------------------------------
    def _condition(self, key: str) -> Condition:
        cond = self.doc["conditions"][key]
        return Condition(cond["value"], tuple(cond["reasons"]), cond.get("method"))

    @property
    def condition_a(self) -> Condition:
        """Condition A: a 303(d) water or TMDL watershed reached (with its ``method``)."""
        return self._condition("A")

    @property
    def condition_b(self) -> Condition:
        """Condition B: five acres or more."""
        return self._condition("B")

    @property
    def condition_c(self) -> Condition:
        """Condition C: one to five acres, not single-family or agricultural."""
        return self._condition("C")

    @property
    def land_development(self) -> Condition:
        """Whether the activity is a land development activity, and why."""
        lda = self.doc["land_development_activity"]
        return Condition(lda["value"], tuple(lda["reasons"]))

    @property
    def project_type(self) -> ProjectType:
        """The project type: the user's, or guessed from the property class."""
        pt = self.doc["project_type"]
        return ProjectType(pt["value"], pt["source"], pt["reason"])

    @property
    def exemption(self) -> Exemption:
        """The exemption claimed and whether it holds."""
        ex = self.doc["exemption"]
        return Exemption(ex["code"], ex["exempt"], tuple(ex["reasons"]))

    @property
    def swppp(self) -> Swppp:
        """Whether a SWPPP is required, and its items."""
        items = self.doc["swppp_items"]
        return Swppp(
            required=self.doc["swppp_required"]["value"],
            reasons=tuple(self.doc["swppp_required"]["reasons"]),
            basic=_frozen(items["basic"]),
            post_construction=_frozen(items["post_construction"]),
            post_construction_required=items["post_construction_required"],
        )

    @property
    def site(self) -> SiteInfo:
        """The site as the document records it (its geometry from the evidence, when the
        determination was made on a workspace)."""
        s = self.doc["site"]
        return SiteInfo(
            label=s["label"],
            kind=s["kind"],
            parcel_ids=list(s["parcel_ids"]),
            area_acres=s["area_acres"],
            prop_class=s["prop_class"],
            geometry=(
                self.evidence.site.geometry
                if self.evidence is not None
                else self.map_layers.get("site")
            ),
            crs=s["crs"],
            address=s["address"],
        )

    @property
    def inputs(self) -> Inputs:
        """The user's inputs, checked (``effective_acres`` the larger of the two acreages)."""
        i = self.doc["inputs"]
        return Inputs(
            disturbed_acres=i["disturbed_acres"],
            project_type=i["project_type"],
            common_plan_acres=i["common_plan_acres"],
            exemption=i["exemption"],
        )

    @property
    def drainage(self) -> MappingProxyType:
        """Where the site drains: fractions, inlets, outfalls, receiving waters, paths."""
        return _frozen(self.doc["drainage"])

    @property
    def waters(self) -> WatersReached:
        """The waters reached, their listings and the TMDL watersheds reached."""
        return WatersReached(
            receiving=_frozen(self.doc["drainage"]["receiving_waters"]),
            impaired=_frozen(self.doc["impaired_waters"]),
            tmdl_watersheds=_frozen(self.doc["tmdl_watersheds"]),
        )

    @property
    def citations(self) -> tuple[MappingProxyType, ...]:
        """The profile's citations of the rules applied (``rule``, ``quote``, ...)."""
        return _frozen(self.doc["citations"])

    @property
    def provenance(self) -> MappingProxyType:
        """Tool, version, time, profile, inputs and their hash, settings, workspace."""
        return _frozen(self.doc["provenance"])

    @property
    def application(self) -> MappingProxyType | None:
        """The application fields filed with the determination, or ``None``."""
        app = self.doc["application"]
        return None if app is None else _frozen(app)

    @property
    def workspace(self) -> MappingProxyType | None:
        """The workspace's ``name`` and ``path``; ``None`` for a determination on rows."""
        ws = self.doc["workspace"]
        return None if ws is None else _frozen(ws)

    def with_application(self, application: dict[str, Any] | None) -> Determination:
        """A copy with the application fields set (checked by
        :func:`ms4map.rules.conditions.inputs.application_info`); this one is unchanged.

        Raises
        ------
        UsageError
            An unknown field, or a date that is not ``YYYY-MM-DD``.
        """
        doc = {**self.doc, "application": application_info(application)}
        return dataclasses.replace(self, doc=doc, map_layers=dict(self.map_layers))


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, set):
        return sorted(o)
    if o is pd.NA:
        return None
    return str(o)
