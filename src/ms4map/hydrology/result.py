"""The routing's answer: OverlandResult and its catchment polygons, the target kinds, the defaults.

:func:`ms4map.hydrology.routing.route` builds an :class:`OverlandResult`; :data:`DEFAULTS`
are its settings' defaults (metres and square metres), :data:`TARGET_KINDS` the kinds of
target a cell can reach first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..core.qa import QAReport
from .cells import polygonize, to_colrow

__all__ = ["DEFAULTS", "ROUTING_STEP", "TARGET_KINDS", "OverlandResult", "catchment_polygons"]


#: Default settings (metres and square metres; converted to DEM units internally).
DEFAULTS: dict[str, float] = {
    "min_depth_m": 0.3,
    "min_area_m2": 500.0,
    "burn_depth_m": 2.0,
    "inlet_depth_m": 1.0,
}

#: Kinds of routing targets (the parcel table adds ``unknown`` for nodata and no-DEM parts).
TARGET_KINDS = ("inlet", "conveyance", "water_direct", "depression", "off_dem", "unknown")


#: pyflwdir's nodata code of a D8 pointer (:attr:`OverlandResult.d8`).
_PYFLWDIR_NODATA = np.uint8(247)

ProgressFn = Callable[[str], None]

#: The progress message :func:`~ms4map.hydrology.route` gives when the D8 grid is made
#: and the conditioned DEM freed: from there on the routing holds the least memory, so
#: :func:`ms4map.pipeline.run` starts its parcel raster (a second thread) then.
ROUTING_STEP = "overland: routing every cell to its first target"


@dataclass
class OverlandResult:
    """Routing of every DEM cell to its first target.

    Attributes
    ----------
    labels : numpy.ndarray
        int32 raster: the target label (row of :attr:`targets`) each cell reaches
        first; 0 on nodata cells.
    targets : pandas.DataFrame
        Index ``label`` (1..n); columns ``target_kind``, ``target_id``, ``name``,
        ``cells`` (catchment size in cells), ``area_m2``, ``method``, ``reason``.
    target_mask : numpy.ndarray
        bool raster of the cells that are targets themselves (inlet, conveyance,
        water, depression cells).
    d8 : numpy.ndarray or None
        Steepest-descent D8 pointer on the conditioned DEM (uint8, ESRI/pyflwdir
        codes, with the DEM-edge rule); ``None`` for a DEM under 3 x 3 cells (each
        cell is its own outlet).  :attr:`flwdir` is its pyflwdir flow graph.
    conditioned : numpy.ndarray or None
        The conditioned DEM (burned, filled, targets as sinks), float64 with NaN nodata;
        ``None`` when :func:`~ms4map.hydrology.route` was asked not to keep it
        (``keep_conditioned=False``, as :func:`ms4map.pipeline.run` does).
    transform, crs
        Grid georeferencing (the DEM's).
    cell_area_m2 : float
    depression_table : pandas.DataFrame
        Real closed depressions: ``label``, ``target_id``, ``cells``, ``area_m2``,
        ``max_depth_m`` (polygons: :attr:`depressions`).
    qa : QAReport
        Findings of the ``overland`` step.
    settings : dict
    timings : dict
        Seconds per step.
    """

    labels: np.ndarray
    targets: pd.DataFrame
    target_mask: np.ndarray
    d8: np.ndarray | None
    conditioned: np.ndarray | None
    transform: Any
    crs: Any
    cell_area_m2: float
    depression_table: pd.DataFrame
    qa: QAReport = field(default_factory=QAReport)
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _polygons: dict[str, gpd.GeoDataFrame] = field(default_factory=dict, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)  # flow graph, idxs_ds

    @property
    def shape(self) -> tuple[int, int]:
        return self.labels.shape  # type: ignore[return-value]

    @property
    def flwdir(self) -> Any:
        """The D8 pointer as a pyflwdir ``FlwdirRaster`` (built on first use; ``None`` without D8).

        Routing itself does not need it (``ms4map.hydrology._kernels``); paths, upstream areas
        and accumulation do, so it is built when one of them is first asked for.
        """
        if self.d8 is None:
            return None
        if "flwdir" not in self._cache:
            import pyflwdir

            self._cache["flwdir"] = pyflwdir.from_array(
                self.d8, ftype="d8", check_ftype=False, transform=self.transform
            )
        return self._cache["flwdir"]

    @property
    def idxs_ds(self) -> np.ndarray | None:
        """Downstream linear index of every cell (itself on a pit, -1 on nodata; cached)."""
        if self.d8 is None:
            return None
        if "idxs_ds" not in self._cache:
            from ._kernels import downstream_index

            self._cache["idxs_ds"] = downstream_index(self.d8)
        return self._cache["idxs_ds"]

    def __getstate__(self) -> dict[str, Any]:
        # pyflwdir's FlwdirRaster holds a module reference: it is rebuilt from ``d8``
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    @property
    def valid(self) -> np.ndarray:
        """bool raster of the cells with data (from the D8 grid when the conditioned
        DEM is not kept: its nodata code marks the same cells)."""
        if self.conditioned is None:
            return self.d8 != _PYFLWDIR_NODATA
        return np.isfinite(self.conditioned)

    @property
    def depressions(self) -> gpd.GeoDataFrame:
        """Polygons of the real closed depressions (the filled region of each; cached)."""
        if "_depressions" not in self._polygons:
            t = self.depression_table.set_index("label")
            lab = np.where(self.target_mask, self.labels, 0)
            self._polygons["_depressions"] = polygonize(
                lab, t, self.transform, self.crs, columns=["target_id", "area_m2", "max_depth_m"]
            )
        return self._polygons["_depressions"]

    def label_of(self, kind: str, target_id: str) -> int | None:
        """The label of a target, or ``None`` when it is not on the DEM."""
        t = self.targets
        hit = t.index[(t["target_kind"] == kind) & (t["target_id"] == str(target_id))]
        return int(hit[0]) if len(hit) else None

    def cell_index(self, x: float, y: float) -> int | None:
        """Linear index of the cell holding ``(x, y)``, or ``None`` off the DEM."""
        col, row = to_colrow(self.transform, x, y)
        r, c = int(np.floor(row)), int(np.floor(col))
        h, w = self.shape
        if not (0 <= r < h and 0 <= c < w):
            return None
        return r * w + c

    def catchments(self, kinds: tuple[str, ...] | None = ("inlet",)) -> gpd.GeoDataFrame:
        """Catchment polygons of the targets of ``kinds`` (cached); see :func:`catchment_polygons`.

        Kinds that are part of an earlier call are taken from its polygons (a label's
        polygon depends only on its own cells), not polygonized again.
        """
        key = ",".join(kinds) if kinds else "*"
        if key not in self._polygons and kinds:
            for have, polys in self._polygons.items():
                if have == "*" or set(kinds) <= set(have.split(",")):
                    sub = polys[polys["target_kind"].isin(kinds)]
                    self._polygons[key] = sub.reset_index(drop=True)
                    break
        if key not in self._polygons:
            self._polygons[key] = catchment_polygons(self, kinds=kinds)
        return self._polygons[key]


def catchment_polygons(
    result: OverlandResult, *, kinds: tuple[str, ...] | None = ("inlet",)
) -> gpd.GeoDataFrame:
    """Polygons of the cells that reach each target first.

    Parameters
    ----------
    result : OverlandResult
    kinds : tuple of str, optional
        Target kinds to polygonize (``None``: all).

    Returns
    -------
    GeoDataFrame
        ``target_kind``, ``target_id``, ``cells``, ``area_m2``, geometry (Polygon or
        MultiPolygon); targets with no cell on the DEM are left out.
    """
    t = result.targets
    sel = t if kinds is None else t[t["target_kind"].isin(kinds)]
    sel = sel[sel["cells"] > 0]
    return polygonize(
        result.labels,
        sel,
        result.transform,
        result.crs,
        columns=["target_kind", "target_id", "cells", "area_m2"],
    )
