"""Condition A for every parcel of a drainage table: screen_condition_a, screen_parcels.

:func:`screen_condition_a` is the pure, vectorised screening of a drainage table;
:func:`screen_parcels` screens a pipeline result's parcels into a :class:`Screening`,
and :func:`screen_all` returns its table with the rest in ``frame.attrs`` (as before).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...core.errors import UsageError
from ...core.qa import QAReport
from ..profiles import Profile, load_profile
from ..waters import Waters
from .condition_a import (
    _counting_pollutants,
    _counting_tmdls,
    _unknown_tmdls,
    condition_a_row_facts,
    condition_a_site_facts,
    decide_condition_a,
    four_a_links,
)
from .reasons import _batch_reasons, _batch_row_reasons
from .site import _outfall_points, _reach_hits
from .summary import _EPS, _bad_drainage_rows, _screening_drainage, candidate_ids, water_ids

if TYPE_CHECKING:
    import geopandas as gpd

    from ...io import Workspace
    from ...pipeline import PipelineResult


SCREENING_COLUMNS = (
    "parcel_id",
    "condition_a",
    "condition_a_text",
    "method",
    "reason",
    "receiving_waters",
    "listed_waters",
    "pollutants",
    "tmdls",
    "ms4_fraction",
    "direct_fraction",
    "internal_fraction",
    "unknown_fraction",
)


def join_unique(keys: pd.Series, values: pd.Series, *, sep: str = ";") -> pd.Series:
    """``sep``-joined distinct values per key, in order of appearance (fast when most keys
    have one value: only the others go through Python)."""
    df = pd.DataFrame({"k": keys.to_numpy(), "v": values.astype(str).to_numpy()})
    df = df.drop_duplicates()
    dup = df["k"].duplicated(keep=False).to_numpy()
    single = df[~dup].set_index("k")["v"]
    joined: dict[Any, str] = {}
    for k, v in zip(
        df["k"].to_numpy(dtype=object)[dup].tolist(),
        df["v"].to_numpy(dtype=object)[dup].tolist(),
        strict=True,
    ):
        joined[k] = joined[k] + sep + v if k in joined else v
    multi = pd.Series(joined, dtype=object)
    return pd.concat([single.astype(object), multi])


def screen_condition_a(
    drainage: pd.DataFrame,
    *,
    waters: Waters,
    profile: str | Profile | None = None,
    parcels: Any = None,
    outfall_points: dict[str, Any] | None = None,
    crs: Any = None,
) -> pd.DataFrame:
    """For every parcel: would a land development activity here be Condition A?

    Vectorised over the whole drainage table, and the same engine as one site's
    (:func:`condition_a_physics`): the rows become facts (:func:`condition_a_row_facts`,
    :func:`condition_a_site_facts`) and :func:`decide_condition_a` decides.  A parcel is
    Condition A when any part of it drains to a 303(d) water listed for a pollutant of
    concern (or, with ``tributary_reach_km``, near one), or it lies in or drains to a TMDL
    watershed with stormwater as a source; undetermined when the rest drains somewhere
    unknown.

    Parameters
    ----------
    drainage : DataFrame
        The parcel drainage table.
    waters : Waters
    profile : str, Path or Profile
    parcels : GeoDataFrame, optional
        Parcels (for "lies in a TMDL watershed", and to report parcels with no rows).
    outfall_points : dict, optional
        ``outfall_id -> Point`` (for "drains through an outfall into a TMDL watershed").
    crs : CRS-like, optional
        The working CRS (for ``tributary_reach_km``; default the waterbodies' CRS).

    Returns
    -------
    DataFrame
        :data:`SCREENING_COLUMNS`, one row per parcel; ``condition_a`` is a nullable
        boolean.  Bad drainage rows are QA warnings ``bad_drainage_rows`` in
        ``frame.attrs["qa"]`` (a :class:`ms4map.qa.QAReport`) and their parcels come out
        undetermined; the other parcels are screened.
    """
    prof = load_profile(profile)
    table = _screening_drainage(drainage)
    bad_parcels, qa = _bad_drainage_rows(table)
    good = table[~table["parcel_id"].isin(bad_parcels)].copy()
    good["wb"] = water_ids(good, waters)
    reach_hits = _reach_hits(good, waters, prof, crs if crs is not None else waters.crs)
    facts = condition_a_row_facts(good, waters=waters, profile=prof, reach_hits=reach_hits)
    tmdls = _counting_tmdls(waters, prof)
    links = four_a_links(waters)
    tmdl_names = _tmdl_names_by_row(facts, tmdls, outfall_points, waters, links=links)
    facts["row_reason"] = _batch_row_reasons(facts, tmdl_names, waters, prof)
    in_tmdl = _parcels_in_tmdl(parcels, tmdls)
    unknown_tmdls = _unknown_tmdls(waters, prof)
    _candidate_tmdls(facts, [tmdls, unknown_tmdls], outfall_points)
    site = condition_a_site_facts(facts, key="parcel_id")
    site["tmdl_hit"] = tmdl_names.notna().groupby(facts["parcel_id"], sort=False).any()
    amb = facts["ambiguous"].notna()
    site["ambiguous_text"] = (
        join_unique(facts.loc[amb, "parcel_id"], facts.loc[amb, "ambiguous"], sep="; ")
        if amb.any()
        else None
    )
    in_unknown: dict[str, str] = {}
    if unknown_tmdls is not None and len(unknown_tmdls):
        unk_names = _tmdl_names_by_row(facts, unknown_tmdls, outfall_points, waters, links=links)
        site["tmdl_unknown"] = unk_names.notna().groupby(facts["parcel_id"], sort=False).any()
        in_unknown = _parcels_in_tmdl(parcels, unknown_tmdls)
    else:
        site["tmdl_unknown"] = False
    for col, text in (("tmdl_gap", "tmdl_gap_text"), ("listing_skipped", "skipped_text")):
        sel = facts[col].notna()
        site[text] = (
            join_unique(facts.loc[sel, "parcel_id"], facts.loc[sel, col], sep="; ")
            if sel.any()
            else None
        )
    all_ids = list(dict.fromkeys([*site.index, *sorted(bad_parcels)]))
    if parcels is not None and len(parcels):
        all_ids = list(dict.fromkeys([*parcels["parcel_id"].astype(str), *all_ids]))
    has_rows = site.index.to_series().reindex(all_ids).notna().to_numpy()
    site = site.reindex(all_ids)
    ids = np.asarray(all_ids, dtype=object)
    tm_in = np.array([p in in_tmdl for p in ids], dtype=bool)
    missing = list(getattr(waters, "missing", ()) or ())
    value, method = decide_condition_a(
        listed_fraction=site["listed_fraction"].fillna(0).to_numpy(),
        tmdl_hit=site["tmdl_hit"].fillna(False).to_numpy(dtype=bool) | tm_in,
        unknown_fraction=site["unknown_fraction"].fillna(0).to_numpy(),
        internal_fraction=site["internal_fraction"].fillna(0).to_numpy(),
        total_fraction=site["total_fraction"].fillna(0).to_numpy(),
        has_rows=has_rows,
        missing=missing,
        bad_rows=np.array([p in bad_parcels for p in ids], dtype=bool),
        tmdl_unknown=site["tmdl_unknown"].fillna(False).to_numpy(dtype=bool)
        | np.array([p in in_unknown for p in ids], dtype=bool),
        tmdl_missing=site["tmdl_gap_fraction"].fillna(0).to_numpy() > _EPS,
        listing_skipped=site["skipped_fraction"].fillna(0).to_numpy() > _EPS,
        ambiguous=site["ambiguous_fraction"].fillna(0).to_numpy() > _EPS,
    )
    out = _screening_columns(facts, site, all_ids, _counting_pollutants(waters, prof))
    out["reason"] = _batch_reasons(
        out, site, value, method, in_tmdl=in_tmdl, has_rows=has_rows, missing=missing
    )
    out["condition_a"] = pd.array(value, dtype="boolean")
    is_true = np.array([v is True for v in value], dtype=bool)
    is_false = np.array([v is False for v in value], dtype=bool)
    out["condition_a_text"] = np.where(is_true, "yes", np.where(is_false, "no", "undetermined"))
    out["method"] = method
    out["tmdls"] = [in_tmdl.get(p) for p in ids]
    out = out.reset_index().rename(columns={"index": "parcel_id"})
    out = out[list(SCREENING_COLUMNS)]
    out.attrs["qa"] = qa
    out.attrs["pollutant_reading"] = prof.pollutant_reading
    out.attrs["missing_layers"] = missing
    return out


def _tmdl_names_by_row(
    facts: pd.DataFrame,
    tmdls: Any,
    outfall_points: dict[str, Any] | None,
    waters: Waters,
    *,
    links: dict[str, list[Any]] | None = None,
) -> pd.Series:
    """For each row that drains into one of the TMDL watersheds ``tmdls`` (through an
    outfall inside it, directly to a waterbody in it, or to a category 4a water whose
    TMDL it is: ``links``, :func:`four_a_links`): the watershed's name (else its id);
    else NaN."""
    names = pd.Series(np.nan, index=facts.index, dtype=object)
    if tmdls is None or not len(tmdls):
        return names
    label = tmdls["name"].astype(object).where(tmdls["name"].notna(), tmdls["tmdl_id"])
    by_outfall: dict[str, str] = {}
    for of, pt in (outfall_points or {}).items():
        hit = tmdls.intersects(pt)
        if hit.any():
            by_outfall[str(of)] = str(label[hit].iloc[0])
    direct = facts["target_kind"] == "water_direct"
    by_water: dict[str, str] = {}
    for w in set(facts.loc[direct, "wb"].dropna()):
        g = waters.waterbody_geometry(w)
        if g is not None:
            hit = tmdls.intersects(g)
            if hit.any():
                by_water[str(w)] = str(label[hit].iloc[0])
    via_outfall = facts["outfall_id"].astype(str).map(by_outfall).where(facts["ms4"])
    via_water = facts["wb"].astype(str).map(by_water).where(direct)
    found = via_outfall.where(via_outfall.notna(), via_water)
    by_listing = {
        wb: str(label[labels[0]])
        for wb, ls in (links or {}).items()
        if (labels := [x for x in ls if x in tmdls.index])
    }
    if by_listing:
        via_listing = facts["wb"].map(by_listing).where(facts["reach"])
        found = found.where(found.notna(), via_listing)
    return found.astype(object)


def _candidate_tmdls(
    facts: pd.DataFrame, tables: list[Any], outfall_points: dict[str, Any] | None
) -> None:
    """Mark open (``ambiguous_open``, in place) the ambiguous rows one of whose candidate
    outfalls lies in a TMDL watershed of ``tables`` (counting, or not known to count):
    the network cannot tell whether the flow goes there, so it can give neither a "yes"
    nor a "no"; ``ambiguous`` then names it."""
    tms = [t for t in tables if t is not None and len(t)]
    if not tms or not outfall_points:
        return
    amb = facts["ambiguous"].notna() & facts["ms4"]
    if not amb.any():
        return
    inside: dict[str, str] = {}
    for of in {o for c in facts.loc[amb, "outfall_candidates"] for o in candidate_ids(c)}:
        pt = outfall_points.get(of)
        for tm in tms if pt is not None else []:
            hit = tm.intersects(pt)
            if hit.any():
                label = tm["name"].astype(object).where(tm["name"].notna(), tm["tmdl_id"])
                inside[of] = str(label[hit].iloc[0])
                break
    at = {c: facts.columns.get_loc(c) for c in ("outfall_candidates", "ambiguous")}
    at["open"] = facts.columns.get_loc("ambiguous_open")
    for i in np.flatnonzero(amb.to_numpy()):  # by position: labels may repeat
        hits = [
            f"outfall {of} lies in the {inside[of]} TMDL watershed"
            for of in candidate_ids(facts.iat[i, at["outfall_candidates"]])
            if of in inside
        ]
        if hits:
            facts.iat[i, at["open"]] = True
            facts.iat[i, at["ambiguous"]] = (
                f"{facts.iat[i, at['ambiguous']]}; {', '.join(hits)}, where the flow may or "
                "may not go"
            )


def _parcels_in_tmdl(parcels: Any, tmdls: Any) -> dict[str, str]:
    """``parcel_id -> TMDL name`` for parcels lying in a counting TMDL watershed."""
    in_tmdl: dict[str, str] = {}
    if parcels is None or not len(parcels) or tmdls is None or not len(tmdls):
        return in_tmdl
    pi, ti = tmdls.sindex.query(parcels.geometry.to_numpy(), predicate="intersects")
    if len(pi):
        pids = parcels["parcel_id"].astype(str).to_numpy()[pi]
        names = (
            tmdls["name"]
            .astype(object)
            .where(tmdls["name"].notna(), tmdls["tmdl_id"])
            .astype(str)
            .to_numpy()[ti]
        )
        for p, n in zip(pids, names, strict=True):
            in_tmdl.setdefault(p, n)
    return in_tmdl


def _screening_columns(
    facts: pd.DataFrame, site: pd.DataFrame, all_ids: list[str], pol_by_wb: dict[str, str]
) -> pd.DataFrame:
    """The per-parcel columns of the screening table: fractions, receiving and listed
    waters, pollutants, the first triggering row's reason, the outfalls without a PWL id."""
    out = pd.DataFrame(index=pd.Index(all_ids))
    out["ms4_fraction"] = site["ms4_fraction"]
    out["direct_fraction"] = site["direct_fraction"]
    out["internal_fraction"] = site["internal_fraction"]
    out["unknown_fraction"] = site["unknown_fraction"]
    pid = facts["parcel_id"]
    recv = facts[facts["reach"] & facts["wb"].notna()]
    out["receiving_waters"] = join_unique(recv["parcel_id"], recv["wb"]).reindex(out.index)
    hit = facts.loc[facts["listed_wbs"].notna(), ["parcel_id", "listed_wbs"]]
    hit = hit.assign(listed=hit["listed_wbs"].str.split(";")).explode("listed")
    out["listed_waters"] = join_unique(hit["parcel_id"], hit["listed"]).reindex(out.index)
    pols = hit["listed"].map(pol_by_wb)
    out["pollutants"] = join_unique(hit["parcel_id"], pols, sep="; ").reindex(out.index)
    nopwl = facts[facts["no_pwl"] & facts["ms4"] & facts["outfall_id"].notna()]
    out["no_pwl_outfalls"] = join_unique(nopwl["parcel_id"], nopwl["outfall_id"], sep=", ").reindex(
        out.index
    )
    bad_id = facts[facts["id_problem"].notna()]
    where = (
        bad_id["outfall_id"]
        .astype(object)
        .where(bad_id["outfall_id"].notna(), bad_id["receiving_water"])
    )
    out["id_problems"] = join_unique(
        bad_id["parcel_id"], where.astype(str) + ": " + bad_id["id_problem"].astype(str), sep="; "
    ).reindex(out.index)
    first = facts.dropna(subset=["row_reason"]).groupby(pid, sort=False)["row_reason"].first()
    out["reason"] = first.reindex(out.index)
    return out


@dataclass(frozen=True)
class Screening:
    """The batch screening of every parcel (:func:`screen_parcels`).

    Attributes
    ----------
    table : GeoDataFrame
        One row per parcel: the parcel's ``parcel_id``, ``address``, ``owner``,
        ``prop_class``, ``acres`` (those the layer has), its geometry, and
        :data:`SCREENING_COLUMNS` (layer ``screening`` of the outputs).
    qa : QAReport
        Bad drainage rows (``bad_drainage_rows`` warnings; their parcels come out
        undetermined).
    missing_layers : list of str
        The legal layers the workspace lacks (no parcel is then a confident "no").
    pollutant_reading : str
        How the profile reads "pollutant of concern" (``"law"`` or ``"list"``).
    """

    table: gpd.GeoDataFrame
    qa: QAReport
    missing_layers: list[str]
    pollutant_reading: str


def screen_parcels(
    result: PipelineResult,
    *,
    profile: str | Profile | None = "stillwater",
    waters: Waters | None = None,
    workspace: Workspace | None = None,
) -> Screening:
    """Batch screening of every parcel of a pipeline result: :class:`Screening`.

    Parameters
    ----------
    result : PipelineResult
        Its ``drainage`` table is screened; parcels, waters and outfalls are its
        workspace's (``result.workspace``).
    profile : str, Path or Profile
        Municipality profile (default ``stillwater``).
    waters : Waters, optional
        Replace the workspace's impaired-waters model (e.g. after a CSV import).
    workspace : Workspace, optional
        For a result without its workspace.

    Returns
    -------
    Screening
    """
    return _screening(result, profile, workspace, waters, who="screen_parcels")


def _screening(
    result: PipelineResult,
    profile: str | Profile | None,
    workspace: Workspace | None,
    waters: Waters | None,
    *,
    who: str,
) -> Screening:
    """The screening of :func:`screen_parcels` and :func:`screen_all` (``who`` names the
    caller in the message of a result without its workspace)."""
    import geopandas as gpd

    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    if ws is None:
        raise UsageError(f"{who} needs the workspace: pass workspace=.")
    parcels = ws.layers["parcels"]
    waters = waters or Waters.from_workspace(ws)
    tab = screen_condition_a(
        result.drainage,
        waters=waters,
        profile=profile,
        parcels=parcels,
        outfall_points=_outfall_points(result, ws),
        crs=ws.crs,
    )
    keep = [
        c for c in ("parcel_id", "address", "owner", "prop_class", "acres") if c in parcels.columns
    ]
    base = parcels[keep + ["geometry"]].copy()
    base["parcel_id"] = base["parcel_id"].astype(str)
    merged = base.merge(tab, on="parcel_id", how="left")
    gdf = gpd.GeoDataFrame(merged, geometry="geometry", crs=parcels.crs)
    return Screening(
        table=gdf,
        qa=tab.attrs["qa"],
        missing_layers=tab.attrs["missing_layers"],
        pollutant_reading=tab.attrs["pollutant_reading"],
    )


def screen_all(
    result: PipelineResult,
    *,
    profile: str | Profile | None = "stillwater",
    workspace: Workspace | None = None,
    waters: Waters | None = None,
) -> gpd.GeoDataFrame:
    """Batch screening of every parcel (layer ``screening``): a GeoDataFrame.

    The table of :func:`screen_parcels`, with the rest of the :class:`Screening` in
    ``frame.attrs`` (``qa``, ``pollutant_reading``, ``missing_layers``) as before.

    Parameters
    ----------
    result : PipelineResult
        Its ``drainage`` table is screened.
    profile : str, Path or Profile
    workspace : Workspace, optional
        Parcels, waters and outfalls (defaults to ``result.workspace``).
    waters : Waters, optional
    """
    scr = _screening(result, profile, workspace, waters, who="screen_all")
    gdf = scr.table
    gdf.attrs.update(
        {
            "qa": scr.qa,
            "pollutant_reading": scr.pollutant_reading,
            "missing_layers": scr.missing_layers,
        }
    )
    return gdf
