"""What drains to an outfall: its sewershed, upstream network and parcels
(:func:`outfall_area`), and the permit's outfall inventory (:func:`outfall_inventory`,
:func:`inventory_totals`).  IDDE and the maps use them (:mod:`ms4map.outputs.maps`
re-exports these names)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..core.nulls import is_na
from ..core.units import metres_per_unit
from ..io import Workspace
from ..network import assign_outfalls, trace_upstream
from .frames import WGS84, result_workspace
from .frames import column_or_none as _col
from .frames import feature_ids as _ids

if TYPE_CHECKING:
    from ..pipeline import Result

__all__ = ["OutfallArea", "inventory_totals", "outfall_area", "outfall_inventory"]


@dataclass
class OutfallArea:
    """What drains to one outfall.

    Attributes
    ----------
    outfall_id : str
    sewershed : GeoSeries
        The outfall's sewershed polygon(s) (working CRS), possibly empty.
    nodes, edges : GeoDataFrame or None
        Upstream structures/junctions and conveyances (None without a network).
    parcels : GeoDataFrame
        Contributing parcels with ``fraction`` (share of the parcel draining here).
        Where some parcel's network path is ambiguous with this outfall one of its
        candidates, that share counts too and a ``may_drain`` column names the
        candidates (``"OF-1 or OF-2"``; empty for the parcels that surely drain here):
        an investigation must not miss a source that may drain here.
    reason : str
        How the upstream area was found, or why it is empty.
    """

    outfall_id: str
    sewershed: gpd.GeoSeries
    nodes: Any
    edges: Any
    parcels: gpd.GeoDataFrame
    reason: str = ""


def outfall_area(result: Result, outfall_id: str, *old: Any) -> OutfallArea:
    """The sewershed, upstream network and contributing parcels of an outfall.

    Parcels come from the drainage table (rows whose ``outfall_id`` is this
    outfall, fractions summed per parcel); the network from
    :func:`ms4map.network.trace_upstream`.  The workspace is ``result.workspace``.

    Parameters
    ----------
    result : Result
        From :func:`ms4map.pipeline.run`.
    outfall_id : str
    *old
        The deprecated form ``outfall_area(ws, result, outfall_id)`` (recognised by its
        :class:`~ms4map.io.workspace.Workspace` first; ``result`` may then be ``None``)
        is answered the same, with a :class:`DeprecationWarning`.
    """
    if isinstance(result, Workspace):
        warnings.warn(
            "outfall_area(ws, result, outfall_id) is deprecated and is removed in ms4map "
            "0.3; use outfall_area(result, outfall_id) (the workspace is result.workspace).",
            DeprecationWarning,
            stacklevel=2,
        )
        if len(old) != 1:
            raise TypeError("outfall_area(ws, result, outfall_id) takes three arguments.")
        return _outfall_area(result, outfall_id, old[0])
    if old:
        raise TypeError("outfall_area(result, outfall_id) takes two arguments.")
    return _outfall_area(result_workspace(result, "outfall_area"), result, outfall_id)


def _outfall_area(ws: Workspace, result: Result | None, outfall_id: str) -> OutfallArea:
    """:func:`outfall_area` on the workspace ``ws`` (``result`` ``None``: not run)."""
    oid = str(outfall_id)
    crs = ws.crs
    parcels = ws.layers.get("parcels")
    empty_p = gpd.GeoDataFrame({"parcel_id": [], "fraction": []}, geometry=[], crs=crs)
    if result is None:
        return OutfallArea(
            oid,
            gpd.GeoSeries([], crs=crs),
            None,
            None,
            empty_p,
            "The drainage analysis has not been run.",
        )
    sheds = getattr(result, "sewersheds", None)
    shed = gpd.GeoSeries([], crs=crs)
    if sheds is not None and len(sheds):
        ids = _ids(sheds, "outfall_id")
        shed = gpd.GeoSeries(sheds.geometry[ids.to_numpy() == oid].to_numpy(), crs=sheds.crs)
    nodes = edges = None
    reasons = []
    net = getattr(result, "network", None)
    try:
        if net is not None:
            up = trace_upstream(net, oid)
            nodes, edges = up.nodes, up.edges
            reasons.append(f"{len(edges)} conveyance part(s) upstream in the storm network")
    except Exception as exc:  # noqa: BLE001 - reported as the reason
        reasons.append(f"network trace failed: {exc}")
    d = getattr(result, "drainage", None)
    out_p = empty_p
    if d is not None and len(d) and parcels is not None:
        rows = d[d["outfall_id"].astype(str) == oid]
        frac = rows.groupby(rows["parcel_id"].astype(str))["fraction"].sum()
        maybe = _may_drain(d, oid)  # ambiguous paths with this outfall a candidate
        pid = parcels["parcel_id"].astype(str)
        sel = parcels[pid.isin(frac.index) | pid.isin(maybe.index)].copy()
        spid = sel["parcel_id"].astype(str)
        sel["fraction"] = spid.map(frac).fillna(0.0).astype(float)
        if len(maybe):
            sel["fraction"] += spid.map(maybe).fillna(0.0).astype(float)
            sel["may_drain"] = spid.map(_candidates_text(d, oid)).fillna("")
        out_p = sel
        reasons.append(f"{len(sel)} parcel(s) drain (at least partly) to it")
        if len(maybe):
            reasons.append(
                f"{len(maybe)} of them only may: the network cannot tell whether their "
                "runoff reaches this outfall or another (an ambiguous path)"
            )
    return OutfallArea(oid, shed, nodes, edges, out_p, "; ".join(reasons))


def _ambiguous_rows(d: pd.DataFrame, oid: str) -> pd.DataFrame:
    """The drainage rows whose ambiguous network path has outfall ``oid`` a candidate."""
    if "outfall_candidates" not in d.columns:
        return d.iloc[:0]
    cands = d["outfall_candidates"].astype(object)
    hit = [not is_na(c) and oid in str(c).split(";") for c in cands]
    return d[np.asarray(hit, dtype=bool)] if len(d) else d


def _may_drain(d: pd.DataFrame, oid: str) -> pd.Series:
    """``parcel_id -> fraction`` of the parcels that may drain to ``oid`` (an ambiguous
    path with it a candidate)."""
    rows = _ambiguous_rows(d, oid)
    return rows.groupby(rows["parcel_id"].astype(str))["fraction"].sum()


def _candidates_text(d: pd.DataFrame, oid: str) -> pd.Series:
    """``parcel_id -> "OF-1 or OF-2"``: the candidates of its ambiguous paths to ``oid``."""
    rows = _ambiguous_rows(d, oid)
    words = rows["outfall_candidates"].astype(str).str.replace(";", " or ", regex=False)
    return words.groupby(rows["parcel_id"].astype(str)).agg(lambda s: "; ".join(dict.fromkeys(s)))


#: How an outfall was found, in words (``method`` of the network's outfalls).
_FOUND_BY = {
    "outfalls_layer": "outfalls layer",
    "outfall_structure": "outfall structure",
    "terminal_at_water": "guessed: a pipe end at a water",
    "headwall_at_end": "guessed: a headwall at a pipe end",
    "terminal_at_structure": "guessed: a pipe end at a structure",
    "terminal_loose_end": "guessed: a loose pipe end",
}


def outfall_found_by(method: Any) -> tuple[bool, str]:
    """``(guessed, words)`` of an outfall's ``method``: guessed unless it comes from the
    outfalls layer or an outfall structure (an outfall inferred at a line end)."""
    m = "" if method is None or is_na(method) else str(method)
    if m in ("outfalls_layer", "outfall_structure"):
        return False, _FOUND_BY[m]
    return True, _FOUND_BY.get(m, "guessed: where the lines end")


def outfall_inventory(
    ws: Workspace, result: Result | None, *, septic: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The outfall inventory the MS4 permit asks for, one row per outfall.

    Parameters
    ----------
    ws : Workspace
    result : PipelineResult or None
    septic : DataFrame, optional
        The ``septic`` layer (:func:`ms4map.rules.septic.flag_septic`): the septic parcels
        counted are then its *flagged* parcels (those the Septic page lists); without
        it, parcels whose ``sewer`` is ``septic``.

    Returns
    -------
    DataFrame
        ``outfall_id, receiving_water, pwl_id, status, latitude, longitude,
        sewershed_acres, structures_upstream, parcels_upstream,
        septic_parcels_upstream, x, y, guessed, found_by`` (latitude/longitude in WGS
        84, x, y in the working CRS; ``guessed``: the outfall was inferred from where
        the lines end, not taken from the outfalls layer or an outfall structure,
        ``found_by`` says how in words); counts are NA without a pipeline result.  A parcel draining to
        several outfalls is counted in each of their rows (see
        :func:`inventory_totals` for the town's totals, each parcel once).
    """
    cols = [
        "outfall_id",
        "receiving_water",
        "pwl_id",
        "status",
        "latitude",
        "longitude",
        "sewershed_acres",
        "structures_upstream",
        "parcels_upstream",
        "septic_parcels_upstream",
        "x",
        "y",
        "guessed",
        "found_by",
    ]
    net = getattr(result, "network", None) if result is not None else None
    outs = getattr(net, "outfalls", None)
    if outs is not None and len(outs):
        base = outs.reset_index()
        if "outfall_id" not in base.columns:
            base = base.rename(columns={base.columns[0]: "outfall_id"})
    else:
        base = ws.layers.get("outfalls")
        if base is None or not len(base):
            return pd.DataFrame(columns=cols)
        base = base.copy()
    base["outfall_id"] = base["outfall_id"].astype(str)
    inv = pd.DataFrame(
        {
            "outfall_id": base["outfall_id"].to_numpy(),
            "receiving_water": _col(base, "receiving_water").to_numpy(),
            "pwl_id": _col(base, "pwl_id").to_numpy(),
            "status": _col(base, "status").to_numpy(),
            "x": base.geometry.x.to_numpy(),
            "y": base.geometry.y.to_numpy(),
        }
    )
    if len(inv):
        from pyproj import Transformer

        lon, lat = Transformer.from_crs(ws.crs, WGS84, always_xy=True).transform(
            inv["x"].to_numpy(dtype=float), inv["y"].to_numpy(dtype=float)
        )
        inv["latitude"], inv["longitude"] = np.round(lat, 6), np.round(lon, 6)
    else:
        inv["latitude"], inv["longitude"] = [], []
    unit = metres_per_unit(ws.crs, default=1.0)
    acres = pd.Series(np.nan, index=inv.index)
    n_struct = pd.Series(pd.NA, index=inv.index, dtype="Int64")
    n_parc = pd.Series(pd.NA, index=inv.index, dtype="Int64")
    n_sept = pd.Series(pd.NA, index=inv.index, dtype="Int64")
    if result is not None:
        sheds = getattr(result, "sewersheds", None)
        if sheds is not None and len(sheds):
            a = sheds.geometry.area * unit * unit / 4046.8564224
            per = a.groupby(_ids(sheds, "outfall_id").to_numpy()).sum()
            acres = inv["outfall_id"].map(per)
        if net is not None:
            try:
                asg = assign_outfalls(net)
                cnt = asg["outfall_id"].dropna().astype(str).value_counts()
                n_struct = inv["outfall_id"].map(cnt).fillna(0).astype("Int64")
            except Exception:  # noqa: BLE001 - counts stay NA
                pass
        d = getattr(result, "drainage", None)
        if d is not None and len(d):
            dd = d[d["outfall_id"].notna()].copy()
            dd["outfall_id"] = dd["outfall_id"].astype(str)
            dd["parcel_id"] = dd["parcel_id"].astype(str)
            n_parc = inv["outfall_id"].map(dd.groupby("outfall_id")["parcel_id"].nunique())
            n_parc = n_parc.fillna(0).astype("Int64")
            septic_ids = _septic_ids(ws, septic)
            if septic_ids is not None:
                ds = dd[dd["parcel_id"].isin(septic_ids)]
                n_sept = inv["outfall_id"].map(ds.groupby("outfall_id")["parcel_id"].nunique())
                n_sept = n_sept.fillna(0).astype("Int64")
    inv["sewershed_acres"] = np.round(acres.astype(float), 2)
    inv["structures_upstream"] = n_struct
    inv["parcels_upstream"] = n_parc
    inv["septic_parcels_upstream"] = n_sept
    # an outfall inferred from where the lines end is a guess (issue 28 item 16)
    if "method" in base.columns:
        found = [outfall_found_by(m) for m in base["method"]]
    else:  # the workspace's outfalls layer
        found = [(False, "outfalls layer")] * len(base)
    inv["guessed"] = [g for g, _w in found]
    inv["found_by"] = [w for _g, w in found]
    return inv[cols].sort_values("outfall_id", kind="stable").reset_index(drop=True)


def _septic_ids(ws: Workspace, septic: pd.DataFrame | None) -> set[str] | None:
    """The septic parcels the inventory counts: the septic layer's flagged parcels, else
    the parcels whose ``sewer`` is ``septic``; None when neither is known."""
    if septic is not None and "parcel_id" in septic.columns:
        keep = septic["flagged"].fillna(False).astype(bool) if "flagged" in septic.columns else True
        return set(septic.loc[keep, "parcel_id"].astype(str))
    parcels = ws.layers.get("parcels")
    if parcels is not None and "sewer" in parcels.columns:
        return set(parcels.loc[parcels["sewer"].astype(str) == "septic", "parcel_id"].astype(str))
    return None


def inventory_totals(
    ws: Workspace, result: Result | None, *, septic: pd.DataFrame | None = None
) -> dict:
    """The town's totals behind the inventory, each parcel counted once.

    Returns
    -------
    dict
        ``parcels`` / ``septic_parcels``: parcels (septic parcels, as
        :func:`outfall_inventory` counts them) draining at least partly to an
        outfall, each once; ``parcels_in_rows`` / ``septic_in_rows``: the sums of the
        inventory's per-outfall columns (a parcel draining to several outfalls is in
        each of their rows); ``multi_outfall_parcels``: parcels draining to more than
        one outfall; ``septic_basis``: ``"flagged"`` (the Septic page's parcels) or
        ``"sewer attribute"``.  Counts are None without a drainage table.
    """
    out: dict[str, Any] = {
        "parcels": None,
        "septic_parcels": None,
        "parcels_in_rows": None,
        "septic_in_rows": None,
        "multi_outfall_parcels": None,
        "septic_basis": "flagged" if septic is not None else "sewer attribute",
    }
    d = getattr(result, "drainage", None) if result is not None else None
    if d is None or not len(d):
        return out
    dd = d[d["outfall_id"].notna()]
    pid, oid = dd["parcel_id"].astype(str), dd["outfall_id"].astype(str)
    pairs = pd.DataFrame({"p": pid.to_numpy(), "o": oid.to_numpy()}).drop_duplicates()
    per = pairs.groupby("p")["o"].nunique()
    out["parcels"] = int(len(per))
    out["parcels_in_rows"] = int(len(pairs))
    out["multi_outfall_parcels"] = int((per > 1).sum())
    ids = _septic_ids(ws, septic)
    if ids is not None:
        sp = pairs[pairs["p"].isin(ids)]
        out["septic_parcels"] = int(sp["p"].nunique())
        out["septic_in_rows"] = int(len(sp))
    return out
