"""The result of the drainage chain for one workspace: :class:`Result` (``PipelineResult``).

Made by :func:`ms4map.pipeline.run`; the questions asked of it (where a point drains,
what drains to an outfall, a feature's path) are in :mod:`ms4map.analysis`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd

from ..core.qa import QAReport
from ..drainage import NetworkJoin

if TYPE_CHECKING:
    from ..hydrology import OverlandResult
    from ..io import Workspace
    from ..network import StormNetwork

__all__ = ["PipelineResult", "Result", "outfall_points", "parcel_drainage_map"]


@dataclass
class Result:
    """Everything the chain produced for one workspace and one set of settings.

    Made by :func:`ms4map.pipeline.run`.  The questions asked of it are functions of
    :mod:`ms4map.analysis`, a layer above this one: ``where_does_it_drain(result,
    point)``, ``what_drains_here(result, point)``, ``polygon_drainage(result,
    polygon)`` (before ms4map 0.2 also methods of this class).

    Attributes
    ----------
    network : StormNetwork or None
        ``None`` when the workspace has no conveyances.
    overland : OverlandResult or None
        ``None`` when the workspace has no DEM (the drainage table then uses the
        documented nearest-inlet fallback).
    drainage : DataFrame
        The parcel drainage table (:data:`ms4map.drainage.COLUMNS`).
    inlet_catchments : GeoDataFrame
        One polygon per inlet with a surface catchment: ``target_id`` (node id),
        ``outfall_id``, ``cells``, ``area_m2``.
    sewersheds : GeoDataFrame
        One non-overlapping polygon per outfall (:func:`ms4map.drainage.sewersheds`).
    qa : QAReport
        Findings of every step (validation warnings included).
    join : NetworkJoin
        Inlet/conveyance -> outfall -> receiving water.
    inlets : GeoDataFrame
        Inlet points used for routing (``node_id``).
    settings : dict
    workspace : Workspace
        The workspace the result was computed from (parcels, waters, outfalls for the
        screening steps).
    timings : dict
        Seconds per step (0 for a cached step).
    """

    network: StormNetwork | None
    overland: OverlandResult | None
    drainage: pd.DataFrame
    inlet_catchments: gpd.GeoDataFrame
    sewersheds: gpd.GeoDataFrame
    qa: QAReport
    join: NetworkJoin
    inlets: gpd.GeoDataFrame
    crs: Any
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    workspace: Workspace | None = None

    def layers(self) -> dict[str, Any]:
        """The output layers of ``ms4map drainage``: parcel_drainage (a table, one row per
        parcel and target), parcel_drainage_map (the parcels with their answer, to draw:
        :func:`parcel_drainage_map`; when the workspace has parcels), inlet_catchments,
        sewersheds, qa."""
        qa_frame = self.qa.to_frame()
        for c in qa_frame.columns:
            if qa_frame[c].dtype == object:
                qa_frame[c] = qa_frame[c].map(lambda v: None if v is None else str(v))
        out: dict[str, Any] = {"parcel_drainage": self.drainage}
        parcels = self.workspace.layers.get("parcels") if self.workspace is not None else None
        if parcels is not None:
            out["parcel_drainage_map"] = parcel_drainage_map(self.drainage, parcels)
        out.update(
            {
                "inlet_catchments": self.inlet_catchments,
                "sewersheds": self.sewersheds,
                "qa": qa_frame,
            }
        )
        return out

    def __repr__(self) -> str:
        path = getattr(self.workspace, "path", None)
        name = "in-memory" if path is None else path.name
        net = "no network" if self.network is None else f"{len(self.network.outfalls)} outfalls"
        dem = "no DEM" if self.overland is None else f"{len(self.overland.targets)} targets"
        n = self.drainage["parcel_id"].nunique() if "parcel_id" in self.drainage else 0
        return (
            f"<Result {name}: {n} parcels, {len(self.drainage)} drainage rows; {net}; {dem}; "
            f"{len(self.sewersheds)} sewersheds; {len(self.qa.warnings)} warning(s)>"
        )


#: The name of :class:`Result` before ms4map 0.2 (kept).
PipelineResult = Result


def outfall_points(result: Result, workspace: Workspace | None) -> dict[str, Any]:
    """Outfall id -> point: the built network's outfalls, else the workspace's
    ``outfalls`` layer (empty when there is neither)."""
    net = getattr(result, "network", None)
    of = getattr(net, "outfalls", None) if net is not None else None
    pts: dict[str, Any] = {}
    if of is not None and len(of):
        ids = of.index if "outfall_id" not in of.columns else of["outfall_id"]
        for i, g in zip(ids, of.geometry, strict=True):
            pts[str(i)] = g
    elif workspace is not None and workspace.layers.get("outfalls") is not None:
        o = workspace.layers["outfalls"]
        for i, g in zip(o["outfall_id"], o.geometry, strict=True):
            pts[str(i)] = g
    return pts


#: Target kinds of ``parcel_drainage`` by where the runoff goes.
_MS4_KINDS = ("inlet", "conveyance")
_PARTS = {
    "ms4_fraction": _MS4_KINDS,
    "direct_fraction": ("water_direct",),
    "internal_fraction": ("depression",),
    "off_dem_fraction": ("off_dem",),
}


def parcel_drainage_map(drainage: pd.DataFrame, parcels: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """The parcels with their drainage answer, one row each (``parcel_drainage`` has no
    geometry: one row per parcel and target).

    Columns: ``parcel_id``; ``target_kind``, ``outfall_id``, ``receiving_water``,
    ``pwl_id``, ``method`` of the target of the parcel's largest share (what the map
    colours by: the QGIS style of ``ms4map.io.styles``); the shares of its runoff
    reaching the MS4 (``ms4_fraction``), water directly, a depression and the DEM's
    edge; ``outfall_ids`` every outfall it reaches (``;``-separated); ``targets`` the
    number of its targets; the parcel's geometry.  A parcel without a drainage row has
    ``target_kind`` ``not computed``.
    """
    d = drainage.copy()
    d["parcel_id"] = d["parcel_id"].astype(str)
    d["fraction"] = pd.to_numeric(d["fraction"], errors="coerce").fillna(0.0)
    kind = d["target_kind"].astype(str)
    main = d.sort_values("fraction", ascending=False, kind="stable").drop_duplicates("parcel_id")
    main = main.set_index("parcel_id")
    ids = parcels["parcel_id"].astype(str)
    out = pd.DataFrame({"parcel_id": ids.to_numpy()})
    for col in ("target_kind", "outfall_id", "receiving_water", "pwl_id", "method"):
        if col in main.columns:
            vals = ids.map(main[col].astype(object).where(main[col].notna(), None))
            out[col] = vals.to_numpy()
    out["target_kind"] = out["target_kind"].where(ids.isin(main.index).to_numpy(), "not computed")
    for name, kinds in _PARTS.items():
        share = d.loc[kind.isin(kinds)].groupby("parcel_id")["fraction"].sum()
        out[name] = ids.map(share).fillna(0.0).round(4).to_numpy()
    outs = d.dropna(subset=["outfall_id"])
    # each parcel's outfalls in the order first met, without repeats (a per-group
    # lambda took 2 s on the 64,000 parcels of the county benchmark)
    pairs = pd.DataFrame(
        {"parcel_id": outs["parcel_id"], "outfall_id": outs["outfall_id"].astype(str)}
    ).drop_duplicates()
    many = pairs["parcel_id"].duplicated(keep=False)  # joined only where there are several
    every = pd.concat(
        [
            pairs.loc[~many].set_index("parcel_id")["outfall_id"],
            pairs.loc[many].groupby("parcel_id", sort=False)["outfall_id"].agg(";".join),
        ]
    )
    out["outfall_ids"] = ids.map(every).to_numpy()
    out["targets"] = ids.map(d.groupby("parcel_id").size()).fillna(0).astype("int64").to_numpy()
    for col in out.columns:
        if out[col].dtype == object:
            out[col] = pd.array(out[col].where(out[col].notna(), None), dtype="str")
    return gpd.GeoDataFrame(out, geometry=parcels.geometry.to_numpy(), crs=parcels.crs)
