"""The drainage area of an SMP from ms4map's own catchments: the surface draining to it, or the catchment of the inlet it discharges to.

Two methods (recorded with the area as ``drainage_method``):

- ``surface_upstream``: the DEM cells whose overland flow (the pipeline's D8 routing,
  :mod:`ms4map.hydrology`) reaches the practice before any other target -- for a
  point, :func:`ms4map.hydrology.upstream_mask` of its cell; for a polygon, its own
  cells and every cell whose path enters it first;
- ``inlet_catchment``: the practice discharges to a storm structure
  (``discharges_to``): the area of that inlet's catchment (``inlet_catchments`` of the
  pipeline, the layer ``ms4map drainage`` writes).
"""

from __future__ import annotations

from typing import Any

from ..core.errors import DataError
from ..hydrology import upstream_mask_of

__all__ = ["drainage_area", "inlet_area", "surface_area"]


def surface_area(overland: Any, geom: Any) -> float | None:
    """Area (square units of the CRS) of the surface draining to ``geom`` on an
    :class:`~ms4map.hydrology.OverlandResult` (:func:`ms4map.hydrology.upstream_mask_of`);
    ``None`` off the DEM."""
    t = overland.transform
    mask = upstream_mask_of(overland, geom)
    return None if mask is None else float(mask.sum()) * abs(t.a * t.e)


def inlet_area(result: Any, struct_id: str) -> float | None:
    """Area of the inlet catchment of structure ``struct_id`` (``node_id`` or
    ``struct_id`` of the pipeline's inlet catchments); ``None`` when it has none."""
    ic = getattr(result, "inlet_catchments", None)
    if ic is None or not len(ic):
        return None
    sid = str(struct_id)
    hit = ic[ic["node_id"].astype(str) == sid]
    if not len(hit) and "struct_id" in ic.columns:
        hit = ic[ic["struct_id"].astype(str) == sid]
    if not len(hit):
        return None
    if "area_m2" in hit.columns:
        return float(hit["area_m2"].astype(float).sum())
    return float(hit.geometry.area.sum())


def drainage_area(result: Any, geom: Any, *, discharges_to: str | None = None) -> tuple[float, str]:
    """``(area, method)`` of a practice from a pipeline result.

    The inlet's catchment when the practice discharges to a structure that has one
    (``inlet_catchment``), else the surface draining to its location
    (``surface_upstream``).

    Raises
    ------
    DataError
        The workspace has no DEM (no overland routing), or the practice lies off it.
    """
    if discharges_to:
        area = inlet_area(result, discharges_to)
        if area is not None:
            return area, "inlet_catchment"
    overland = getattr(result, "overland", None)
    if overland is None:
        raise DataError(
            "The drainage area needs the workspace's DEM (the overland routing of ms4map "
            "drainage). Fix: add a DEM to the workspace, or give the area "
            "(drainage_area_m2=..., --drainage-area)."
        )
    area = surface_area(overland, geom)
    if area is None:
        raise DataError(
            "The SMP lies off the DEM: no drainage area can be computed. Fix: check its "
            "location, or give the area (drainage_area_m2=..., --drainage-area)."
        )
    return area, "surface_upstream"
