"""Sewersheds: the surface catchments of an outfall's inlets and conveyances, one polygon each.

Built from the overland routing's catchment labels (:mod:`ms4map.hydrology.overland`)
and the network join (:mod:`.join`).
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..hydrology import OverlandResult
from .join import NetworkJoin

__all__ = ["sewersheds"]


def sewersheds(ov: OverlandResult, join: NetworkJoin) -> gpd.GeoDataFrame:
    """One polygon per outfall: surface catchments of its inlets and open conveyances.

    Built from the one catchment label raster, so sewersheds never overlap.  An
    inlet whose flow splits counts for its main outfall only (the ``reason`` says so).

    Returns
    -------
    GeoDataFrame
        ``outfall_id``, ``receiving_water``, ``pwl_id``, ``inlets`` (count),
        ``area_m2``, ``method``, ``reason``, geometry.
    """
    t = ov.targets
    tab = t[t["target_kind"].isin(["inlet", "conveyance"])].copy()
    tab["outfall_id"] = None
    for kind, table in (("inlet", join.inlet_outfall), ("conveyance", join.conv_outfall)):
        m = tab["target_kind"] == kind
        if m.any() and len(table):
            tab.loc[m, "outfall_id"] = table.reindex(tab.loc[m, "target_id"])[
                "outfall_id"
            ].to_numpy()
    tab = tab[tab["outfall_id"].notna() & (tab["cells"] > 0)]
    cols = [
        "outfall_id",
        "receiving_water",
        "pwl_id",
        "inlets",
        "cells",
        "area_m2",
        "method",
        "reason",
    ]
    if len(tab) == 0:
        return gpd.GeoDataFrame(
            {c: pd.Series([], dtype=object) for c in cols},
            geometry=gpd.GeoSeries([], crs=ov.crs),
            crs=ov.crs,
        )
    outs = pd.Index(sorted(tab["outfall_id"].astype(str).unique()))
    oc = outs.get_indexer(tab["outfall_id"].astype(str)) + 1
    stats = (
        tab.assign(_oc=oc)
        .groupby("_oc")
        .agg(inlets=("target_kind", lambda s: int((s == "inlet").sum())), cells=("cells", "sum"))
    )
    table = pd.DataFrame({"outfall_id": outs}, index=pd.RangeIndex(1, len(outs) + 1))
    table["inlets"] = stats["inlets"].reindex(table.index).fillna(0).astype(int)
    table["cells"] = stats["cells"].reindex(table.index).fillna(0).astype(int)
    table["area_m2"] = table["cells"] * ov.cell_area_m2
    rw = join.outfalls.reindex(outs)
    table["receiving_water"] = rw["receiving_water"].to_numpy()
    table["pwl_id"] = rw["pwl_id"].to_numpy()
    table["method"] = "d8_catchment"
    table["reason"] = (
        "surface catchments of the inlets and open conveyances that drain to the outfall"
    )
    # the union of the outfall's catchment polygons (one polygonization of the label
    # raster serves the inlet catchments and the sewersheds): the region of the cells
    # whose label drains to the outfall, collinear vertices removed, as polygonizing
    # those cells would give it (the tests check that)
    polys = ov.catchments(("inlet", "conveyance"))
    key = pd.MultiIndex.from_frame(polys[["target_kind", "target_id"]].astype(str))
    code_of = pd.Series(oc, index=pd.MultiIndex.from_frame(tab[["target_kind", "target_id"]]))
    pcode = code_of.reindex(key).to_numpy()
    have = ~pd.isna(pcode)
    geoms = polys.geometry.to_numpy()[have]
    groups = pd.Series(np.arange(len(geoms))).groupby(pcode[have].astype(int))
    shapes = {
        int(k): shapely.simplify(shapely.union_all(geoms[ix.to_numpy()]), 0.0) for k, ix in groups
    }
    table = table[table.index.isin(list(shapes))]
    out = table[cols].reset_index(drop=True)
    return gpd.GeoDataFrame(out, geometry=[shapes[k] for k in table.index], crs=ov.crs)
