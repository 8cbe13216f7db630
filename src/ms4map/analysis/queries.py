"""The point and polygon queries on a pipeline result: where a point drains, what drains here.

:func:`where_does_it_drain` follows a point's surface path and then the pipes to the
receiving water (its answer a typed :class:`DrainagePath`; ``to_dict()`` gives the dict
it returned before); :func:`what_drains_here` gives the area that drains to a
point or an outfall; :func:`polygon_drainage` the drainage table of any site polygon.
They read a :class:`ms4map.pipeline.Result` (moved here from ``ms4map.drainage``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..core.errors import DataError, UsageError
from ..drainage import DEFAULT_FALLBACK_M, parcel_drainage
from ..hydrology import OverlandResult, polygonize, surface_path, upstream_mask
from ..network import trace_downstream, trace_upstream

if TYPE_CHECKING:
    from ..pipeline import Result

__all__ = ["DrainagePath", "polygon_drainage", "what_drains_here", "where_does_it_drain"]


@dataclass
class DrainagePath:
    """Where a point drains (:func:`where_does_it_drain`), typed.

    Attributes
    ----------
    geometry : LineString or MultiLineString or None
        The surface path and the pipe trace together (working CRS).
    surface_geometry, pipe_geometry : LineString or MultiLineString or None
        The surface path over the DEM; the trace through the pipes.
    target_kind : str
        What the surface flow reaches first (``inlet``, ``conveyance``,
        ``water_direct``, ``depression``, ``off_dem``, ``unknown``).
    target_id : str or None
    outfall_ids : list of str
        The outfalls the pipes reach, the main one first.
    receiving_water, pwl_id : str or None
    method : str
        ``d8_path``, ``no_dem``, ``off_dem`` or ``dem_nodata``.
    reason : str
        How the path was found, or why it is unknown.

    Notes
    -----
    :func:`where_does_it_drain` returned a dict before; ``path["reason"]``,
    ``path.get("reason")``, ``path.keys()``, ``"reason" in path`` and iterating still
    answer as that dict did, each with a :class:`DeprecationWarning` naming the
    attribute to use (removed in ms4map 0.3).
    """

    geometry: Any = None
    surface_geometry: Any = None
    pipe_geometry: Any = None
    target_kind: str = "unknown"
    target_id: str | None = None
    outfall_ids: list[str] | None = None
    receiving_water: str | None = None
    pwl_id: str | None = None
    method: str = ""
    reason: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DrainagePath:
        """The typed path of a :func:`where_does_it_drain` dict."""
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        """The dict :func:`where_does_it_drain` returned: the same keys, order and values."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    # -- the dict it was: deprecated, removed in 0.3 -------------------------------------
    def __getitem__(self, key: str) -> Any:
        _dict_use(f"path[{key!r}]", f"path.{key}" if key in _FIELD_NAMES else "path.to_dict()")
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated: the attribute (``path.geometry``), as ``dict.get`` answered."""
        _dict_use(f"path.get({key!r})", f"path.{key}" if key in _FIELD_NAMES else "path.to_dict()")
        return self.to_dict().get(key, default)

    def keys(self) -> Any:
        """Deprecated: the field names, as the dict's ``keys()`` answered."""
        _dict_use("path.keys()", "dataclasses.fields(path) or path.to_dict().keys()")
        return self.to_dict().keys()

    def __contains__(self, key: object) -> bool:
        _dict_use(f"{key!r} in path", "the attributes or path.to_dict()")
        return key in self.to_dict()

    def __iter__(self) -> Iterator[str]:
        _dict_use("iterating over path", "dataclasses.fields(path) or path.to_dict()")
        return iter(self.to_dict())


#: The fields of :class:`DrainagePath`, the keys of the dict it was.
_FIELD_NAMES = frozenset(f.name for f in fields(DrainagePath))


def _dict_use(old: str, new: str) -> None:
    """The :class:`DeprecationWarning` of a :class:`DrainagePath` used as the dict
    :func:`where_does_it_drain` returned before."""
    warnings.warn(
        f"where_does_it_drain() returns a DrainagePath, no longer a dict: {old} is "
        f"deprecated and is removed in ms4map 0.3; use {new}.",
        DeprecationWarning,
        stacklevel=3,
    )


def polygon_drainage(result: Result, polygon: Any) -> pd.DataFrame:
    """Drainage of an arbitrary site polygon (working CRS): the parcel table's columns
    without ``parcel_id``.

    ``result`` is a :class:`ms4map.pipeline.Result` (or anything with ``.overland``,
    ``.join``, ``.inlets`` and ``.settings``).
    """
    site = gpd.GeoDataFrame({"parcel_id": ["site"]}, geometry=[polygon], crs=_result_crs(result))
    df = parcel_drainage(
        site,
        result.overland,
        join=result.join,
        inlets=getattr(result, "inlets", None),
        fallback_distance_m=result.settings.get("fallback_distance_m", DEFAULT_FALLBACK_M),
    )
    return df.drop(columns=["parcel_id"])


def _result_crs(result: Result) -> Any:
    if result.overland is not None:
        return result.overland.crs
    return getattr(result, "crs", None)


def where_does_it_drain(result: Result, point: Any) -> DrainagePath:
    """Where a point drains: the surface path, then the pipes, to the receiving water.

    Returns
    -------
    DrainagePath
        ``geometry`` (LineString/MultiLineString: surface path + pipe trace),
        ``surface_geometry``, ``pipe_geometry``, ``target_kind``, ``target_id``,
        ``outfall_ids``, ``receiving_water``, ``pwl_id``, ``method``, ``reason``
        (``to_dict()`` is the dict this function returned before).
    """
    return DrainagePath.from_dict(_drainage_path(result, point))


def _drainage_path(result: Result, point: Any) -> dict[str, Any]:
    """:func:`where_does_it_drain` as the dict of :meth:`DrainagePath.to_dict`."""
    ov = result.overland
    out: dict[str, Any] = {
        "geometry": None,
        "surface_geometry": None,
        "pipe_geometry": None,
        "target_kind": "unknown",
        "target_id": None,
        "outfall_ids": [],
        "receiving_water": None,
        "pwl_id": None,
    }
    if ov is None:
        out.update(method="no_dem", reason="no DEM: the surface path is unknown")
        return out
    line, lab = surface_path(ov, point.x, point.y)
    if line is None:
        out.update(_no_surface(ov, point))
        return out
    row = ov.targets.loc[lab]
    kind, tid = str(row["target_kind"]), str(row["target_id"])
    out.update(
        surface_geometry=line,
        geometry=line,
        target_kind=kind,
        target_id=tid,
        method="d8_path",
        reason=str(row["reason"]),
    )
    if kind == "water_direct":
        out.update(receiving_water=row["name"] if isinstance(row["name"], str) else tid, pwl_id=tid)
    net = result.join.net if result.join is not None else None
    if kind in ("inlet", "conveyance") and net is not None:
        try:
            tr = trace_downstream(net, tid)
        except Exception as exc:  # noqa: BLE001 - report, don't crash a query
            out["reason"] += f"; the pipe trace failed: {exc}"
            return out
        out["pipe_geometry"] = tr.geometry
        out["outfall_ids"] = list(tr.outfall_ids)
        if tr.geometry is not None:
            out["geometry"] = shapely.line_merge(shapely.union(line, tr.geometry))
        if tr.outfall_ids:
            o = result.join.outfalls.reindex([tr.outfall_ids[0]]).iloc[0]
            out.update(receiving_water=o["receiving_water"], pwl_id=o["pwl_id"])
            out["reason"] += f", then the pipes to outfall {tr.outfall_ids[0]}"
    return out


def _no_surface(
    ov: OverlandResult, point: Any, unknown: str = "its surface flow is unknown"
) -> dict[str, str]:
    """``target_kind``, ``method`` and ``reason`` of a point query where the DEM says nothing.

    Off the grid: ``off_dem`` (the point lies outside the DEM); on a nodata cell inside
    it: ``unknown`` / ``dem_nodata``, as the parcel table calls such a part (``unknown``
    ends that reason: what the query cannot tell).
    """
    if ov.cell_index(point.x, point.y) is None:
        return {
            "target_kind": "off_dem",
            "method": "off_dem",
            "reason": "the point lies outside the DEM",
        }
    return {
        "target_kind": "unknown",
        "method": "dem_nodata",
        "reason": f"the DEM has no data at the point (a nodata cell): {unknown}",
    }


def _known_outfalls(result: Result) -> set[str] | None:
    net = getattr(result, "network", None)
    if net is None or getattr(net, "outfalls", None) is None:
        return None
    return {str(i) for i in net.outfalls.index}


def what_drains_here(
    result: Result, point: Any = None, *, outfall_id: str | None = None
) -> gpd.GeoDataFrame:
    """Everything that drains to a point or an outfall, surface and pipes, as one polygon.

    For an outfall: its sewershed.  For a point on the storm network (within one DEM
    cell of a structure): the surface catchments of every inlet and open conveyance
    upstream of it in the pipes, plus the point's own surface catchment.  For any
    other point: its surface catchment (cells reaching it before any MS4 target).

    Returns
    -------
    GeoDataFrame
        One row: ``query``, ``area_m2``, ``inlets``, ``method``, ``reason``, geometry.
    """
    ov = result.overland
    crs = _result_crs(result)
    if ov is None:
        raise DataError("No DEM in the workspace: surface catchments are unknown. Fix: pass --dem.")
    if outfall_id is None and isinstance(point, str):
        outfall_id, point = point, None  # what_drains_here(result, "OF-009")
    if outfall_id is None and point is None:
        raise UsageError("what_drains_here needs a point or outfall_id=.")
    if outfall_id is not None:
        known = _known_outfalls(result)
        if known is not None and str(outfall_id) not in known:
            raise DataError(
                f"Unknown outfall '{outfall_id}'. Known outfalls: {sorted(known)[:30]}"
                + (" ..." if len(known) > 30 else "")
            )
        sw = result.sewersheds
        hit = sw[sw["outfall_id"] == str(outfall_id)]
        if not len(hit):
            return _one(
                None,
                crs,
                query=f"outfall {outfall_id}",
                area=0.0,
                inlets=0,
                method="sewershed",
                reason="no inlet with a surface catchment drains to it",
            )
        r = hit.iloc[0]
        return _one(
            r.geometry,
            crs,
            query=f"outfall {outfall_id}",
            area=float(r["area_m2"]),
            inlets=int(r["inlets"]),
            method="sewershed",
            reason="surface catchments of the inlets and open conveyances upstream",
        )
    mask = upstream_mask(ov, point.x, point.y)
    if mask is None:
        none = _no_surface(ov, point, "what drains to it is unknown")
        return _one(
            None,
            crs,
            query=point.wkt,
            area=0.0,
            inlets=0,
            method=none["method"],
            reason=none["reason"],
        )
    labels: list[int] = []
    n_inlets = 0
    net = result.join.net if result.join is not None else None
    method, reason = "d8_upstream", "cells whose surface flow reaches the point first"
    if net is not None and len(net.nodes):
        d = net.nodes.distance(point)
        if d.min() <= ov.transform.a * 1.5:
            nid = str(d.idxmin())
            up = trace_upstream(net, nid)
            for kind, ids in (("inlet", up.nodes.index.astype(str)), ("conveyance", up.conv_ids)):
                t = ov.targets
                sel = t[(t["target_kind"] == kind) & t["target_id"].isin(list(ids))]
                labels += sel.index.tolist()
                if kind == "inlet":
                    n_inlets = len(sel)
            method = "d8_upstream+pipes"
            reason = (
                f"surface catchments of {n_inlets} inlet(s) upstream of {nid} in the pipes, "
                "plus the point's own surface catchment"
            )
    if labels:
        mask = mask | np.isin(ov.labels, labels)
    lab = np.where(mask, 1, 0).astype(np.int32)
    table = pd.DataFrame({"query": [point.wkt]}, index=pd.Index([1]))
    poly = polygonize(lab, table, ov.transform, ov.crs, columns=["query"])
    geom = poly.geometry.iloc[0] if len(poly) else None
    return _one(
        geom,
        crs,
        query=point.wkt,
        area=float(mask.sum() * ov.cell_area_m2),
        inlets=n_inlets,
        method=method,
        reason=reason,
    )


def _one(geom: Any, crs: Any, **cols: Any) -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {k if k != "area" else "area_m2": [v] for k, v in cols.items()}, geometry=[geom], crs=crs
    )
