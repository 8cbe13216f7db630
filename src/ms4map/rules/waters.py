"""Impaired waters: the Waters model (303(d) listings, TMDL watersheds), pollutant groups, waters_for.

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

The importers of the usual CSV exports (NYSDEC 303(d) list, ATTAINS) and the words of
the lists (:func:`normalize_pollutant`, :func:`normalize_category`) are in
:mod:`ms4map.io.impairments`; their names stay importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import UsageError
from ..core.nulls import is_blank
from ..core.qa import QAReport
from ..core.schema import (
    LEGAL_LAYERS,  # re-exported: io reads it too
    id_text,
    normalize_pwl_id,
)
from ..io.aliases import stormwater_source_value
from ..io.impairments import (  # re-exported: they were defined here before issue 26
    CATEGORIES,
    IMPAIRMENT_COLUMNS,
    KNOWN_POLLUTANTS,
    NY_LIST_PARTS,
    normalize_category,
    normalize_pollutant,
    read_303d_csv,
    read_attains_csv,
    read_impairments,
    read_impairments_csv,
    validate_impairments,
)

if TYPE_CHECKING:
    from ..io import Workspace

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


def missing_layer_reason(layer: str) -> str:
    """One sentence: the legal layer ``layer`` is missing, what it is needed for, the fix."""
    what, needed, fix = LEGAL_LAYERS[layer]
    return f"{what[0].upper()}{what[1:]} (layer `{layer}`), needed for {needed}: {fix}."


def missing_layer_short(layer: str) -> str:
    """The short form for a table cell: ``"no 303(d) list in the workspace (add ...)"``."""
    what, _needed, fix = LEGAL_LAYERS[layer]
    return f"{what} ({fix})"


#: Pollutant groups: a profile list or the septic list may name a group or a member.
POLLUTANT_GROUPS: dict[str, frozenset[str]] = {
    "sediment": frozenset({"silt/sediment", "turbidity"}),
    "silt/sediment": frozenset({"silt/sediment", "turbidity"}),
    "nutrients": frozenset({"phosphorus", "nitrogen", "ammonia", "nutrients"}),
    "pathogens": frozenset({"pathogens"}),
}


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


def waters_for(
    workspace: Workspace,
    impairments: str | Path | None = None,
    *,
    warn: Any = None,
    columns: Mapping[str, str] | None = None,
) -> Waters:
    """The waters a screening reads: the workspace's, with ``impairments`` (a CSV) instead
    of its 303(d) layer when given.

    ``warn`` (a callable) is given one line per row of the CSV that was skipped;
    ``columns`` names the CSV's columns (as :func:`ms4map.io.read_303d`).
    """
    if not impairments:
        return Waters.from_workspace(workspace)
    read = read_impairments(impairments, columns=columns)
    if warn is not None:
        for finding in read.qa.findings:
            warn(f"ms4map: warning: {Path(impairments).name}: skipped {finding.message}")
    # the frame with attrs: Waters reads its skipped rows, the determination's
    # provenance its source file (waters.impairments.attrs["source_file"])
    return Waters.from_workspace(workspace, impairments=read.to_frame())


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
