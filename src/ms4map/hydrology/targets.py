"""The routing targets on the DEM grid: inlets, open conveyances and waters from the layers.

:func:`network_targets` reads the inlets and open conveyances of a storm network (or of
the workspace's layers); :func:`rasterize_targets` puts them and the waters on the grid
(step 1 of :func:`ms4map.hydrology.routing.route`) as a :class:`TargetGrid`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..core.nulls import is_blank, none_if_na
from ..core.qa import QAReport
from ..core.schema import INLET_KINDS, OPEN_CONVEYANCE_KINDS
from ..io import Workspace
from .cells import _count_labels, to_colrow

__all__ = ["TargetGrid", "geojson_shapes", "network_targets", "rasterize_targets"]


@dataclass
class TargetGrid:
    """The routing targets on the DEM grid (step 1 of :func:`route`).

    Attributes
    ----------
    seed : numpy.ndarray
        int32 raster: the label of the target each cell *is* (0: not a target).
    rows : list of dict
        One row per label (label = position + 1): ``target_kind``, ``target_id``,
        ``name``, ``method``, ``reason``.
    burned_inlets : list of int
        Linear indices of the inlet cells that lie on a water or open conveyance cell
        (lowered by both depths).  Which other target cells are lowered follows from
        their kind (:meth:`lowered`): no burn/sink grid is held (2 bytes per cell).
    off_inlets, shared : list of str
        Inlets outside the DEM (or on nodata cells), and inlets sharing a cell with an
        earlier inlet (that one takes the cell).
    """

    seed: np.ndarray
    rows: list[dict[str, Any]] = field(default_factory=list)
    burned_inlets: list[int] = field(default_factory=list)
    off_inlets: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)

    def add(
        self,
        kind: str,
        tid: str | None,
        name: Any = None,
        method: str = "d8_catchment",
        reason: str = "",
    ) -> int:
        """Append a target row; returns its label."""
        self.rows.append(
            {
                "target_kind": kind,
                "target_id": tid,
                "name": name,
                "method": method,
                "reason": reason,
            }
        )
        return len(self.rows)

    @property
    def mask(self) -> np.ndarray:
        """bool raster of the target cells."""
        return self.seed > 0

    def lowered(self, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether the cells ``(rows, cols)`` are burned and whether they are sunk.

        Burned (``burn_depth_m`` below the DEM): the cells of waters and open
        conveyances, and an inlet's cell on one of them (:attr:`burned_inlets`); sunk
        (``inlet_depth_m`` below): the inlets' cells.  From the cells' labels and their
        kinds, with no grid of its own.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            bool per cell: burned, sunk.
        """
        code = np.zeros(len(self.rows) + 1, np.uint8)  # per label: 1 burned, 2 sunk
        for label, row in enumerate(self.rows, start=1):
            kind = row["target_kind"]
            code[label] = 1 if kind in ("water_direct", "conveyance") else 2 * (kind == "inlet")
        of_cell = code[self.seed[rows, cols]]
        burned, sunk = of_cell == 1, of_cell == 2
        if self.burned_inlets:
            idx = np.asarray(rows, np.int64) * self.seed.shape[1] + cols
            burned |= np.isin(idx, np.asarray(self.burned_inlets, np.int64))
        return burned, sunk


def rasterize_targets(
    shape: tuple[int, int],
    transform: Any,
    valid: np.ndarray,
    *,
    inlets: gpd.GeoDataFrame | None = None,
    conveyances: gpd.GeoDataFrame | None = None,
    waterbodies: gpd.GeoDataFrame | None = None,
) -> TargetGrid:
    """Put the waters, open conveyances and inlets on the DEM grid (step 1).

    Waters take the cells their lines touch and the cells of their polygons (centre
    inside or outline touching); open conveyances every cell they touch; an inlet the
    cell under its point.  A later kind overwrites an earlier one in a shared cell
    (waters, then conveyances, then inlets).

    Parameters
    ----------
    shape : (int, int)
        DEM rows and columns.
    transform : affine.Affine
        The DEM's transform.
    valid : numpy.ndarray
        bool raster of the DEM cells with data (an inlet on a nodata cell is off the DEM).
    inlets, conveyances, waterbodies : GeoDataFrame, optional
        As for :func:`route`.

    Returns
    -------
    TargetGrid
    """
    h, w = shape
    grid = TargetGrid(seed=np.zeros((h, w), dtype=np.int32))
    seed = grid.seed
    if waterbodies is not None and len(waterbodies):
        wb = _clean_geoms(waterbodies)
        labs = [
            grid.add(
                "water_direct",
                None if is_blank(r.wb_id) else str(r.wb_id).strip(),
                none_if_na(getattr(r, "name", None)),
                reason="reaches the waterbody overland, outside the MS4"
                + ("" if not is_blank(r.wb_id) else " (the waterbody has no wb_id)"),
            )
            for r in wb.itertuples()
        ]
        _rasterize(wb.geometry.values, labs, seed, transform)
    if conveyances is not None and len(conveyances):
        cv = _clean_geoms(conveyances)
        labs = [
            grid.add("conveyance", str(r.conv_id), reason="reaches an open MS4 conveyance overland")
            for r in cv.itertuples()
        ]
        _rasterize(cv.geometry.values, labs, seed, transform, all_touched=True)
    # waters and open conveyances are burned, and so is an inlet's cell on one of them
    # (TargetGrid.lowered: from the kinds, no grid)
    if inlets is not None and len(inlets):
        pts = inlets[~inlets.geometry.is_empty & inlets.geometry.notna()]
        cols, rows = to_colrow(transform, pts.geometry.x.to_numpy(), pts.geometry.y.to_numpy())
        rows, cols = np.floor(rows).astype(np.int64), np.floor(cols).astype(np.int64)
        inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        inside[inside] &= valid[rows[inside], cols[inside]]
        for nid, r, c, ok in zip(pts["node_id"].astype(str), rows, cols, inside, strict=True):
            if not ok:
                grid.off_inlets.append(nid)
                continue
            prev = seed[r, c]
            if prev and grid.rows[prev - 1]["target_kind"] == "inlet":
                grid.shared.append(nid)
                grid.add(
                    "inlet",
                    nid,
                    method="shared_cell",
                    reason=f"shares its DEM cell with inlet {grid.rows[prev - 1]['target_id']}, "
                    "which takes the cell's runoff",
                )
                continue
            if prev:  # a water or open conveyance cell: burned as well
                grid.burned_inlets.append(int(r) * w + int(c))
            seed[r, c] = grid.add("inlet", nid, reason="reaches the inlet overland")
    return grid


def _target_findings(targets: TargetGrid, qa: QAReport) -> None:
    """QA on the inlets put on the grid: those off the DEM, those sharing a cell."""
    findings = (
        (
            targets.off_inlets,
            qa.warning,
            "inlet_off_dem",
            "lie outside the DEM or on nodata cells; they get no surface catchment.",
            {"fix": "Use a DEM that covers the whole storm network."},
        ),
        (
            targets.shared,
            qa.info,
            "inlets_share_cell",
            "share a DEM cell with another inlet; the first one takes that cell's runoff.",
            {},
        ),
    )
    for ids, add, code, what, fix in findings:
        if ids:
            add(
                code,
                "structures",
                f"{len(ids)} inlet(s) {what}",
                feature_id=", ".join(ids[:50]),
                count=len(ids),
                step="overland",
                **fix,
            )


def _target_table(targets: TargetGrid, labels: np.ndarray, cell_area_m2: float) -> pd.DataFrame:
    """The targets table of :class:`OverlandResult` (index ``label``), with cell counts."""
    cols = ["target_kind", "target_id", "name", "method", "reason"]
    tdf = pd.DataFrame(targets.rows, columns=cols)
    tdf.index = pd.RangeIndex(1, len(tdf) + 1, name="label")
    counts = _count_labels(labels, len(tdf) + 1)  # in blocks: no 64-bit copy of the grid
    tdf["cells"] = counts[1 : len(tdf) + 1].astype(np.int64)
    tdf["area_m2"] = tdf["cells"] * cell_area_m2
    for col in ("target_kind", "target_id", "method", "reason"):
        tdf[col] = tdf[col].astype(str)
    special = tdf["target_kind"].isin(["off_dem", "unknown"])
    tdf = tdf[~special | (tdf["cells"] > 0)]
    if targets.off_inlets:
        n = len(targets.rows)
        extra = pd.DataFrame(
            {
                "target_kind": "inlet",
                "target_id": targets.off_inlets,
                "name": None,
                "method": "off_dem",
                "reason": "the inlet lies outside the DEM",
                "cells": 0,
                "area_m2": 0.0,
            }
        )
        extra.index = pd.RangeIndex(n + 1, n + 1 + len(extra), name="label")
        tdf = pd.concat([tdf, extra])
    return tdf


def network_targets(ws: Workspace, net: Any = None) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """Inlet points (``node_id``) and open conveyances (``conv_id``) for routing.

    This is the one place that reads the storm network's attributes (``nodes`` with
    ``is_inlet``, ``edges`` with ``is_open``), per ``docs/CONTRACTS.md``.

    Parameters
    ----------
    ws : Workspace
        The workspace: its CRS, and its ``structures`` and ``conveyances`` layers when
        ``net`` is ``None``.
    net : object, optional
        A storm network: in practice a :class:`ms4map.network.build.StormNetwork`, which
        hydrology does not import (network is its sibling layer in ``ms4map._layout``).
        Two of its attributes are read: ``nodes``, a GeoDataFrame indexed by node id
        with an ``is_inlet`` column, and ``edges``, a GeoDataFrame with ``conv_id`` and
        ``is_open`` columns (missing flags count as ``False``).  ``None``: the inlets and
        open conveyances are read from the workspace's layers by their ``kind``.

    Returns
    -------
    (GeoDataFrame, GeoDataFrame)
        The inlet points (``node_id``) and the open conveyances (``conv_id``).
    """
    crs = ws.crs
    if net is not None:
        nodes = net.nodes
        inl = nodes[nodes["is_inlet"].fillna(False).astype(bool)]
        inlets = gpd.GeoDataFrame(
            {"node_id": inl.index.astype(str)}, geometry=inl.geometry.values, crs=nodes.crs
        )
        edges = net.edges
        op = edges[edges["is_open"].fillna(False).astype(bool)]
        conv = gpd.GeoDataFrame(
            {"conv_id": op["conv_id"].astype(str).values},
            geometry=op.geometry.values,
            crs=edges.crs,
        )
        return inlets, conv
    inlets = _kind_layer(ws.get("structures"), INLET_KINDS, "struct_id", "node_id", crs)
    conv = _kind_layer(ws.get("conveyances"), OPEN_CONVEYANCE_KINDS, "conv_id", "conv_id", crs)
    return inlets, conv


def _kind_layer(
    df: gpd.GeoDataFrame | None, kinds: Any, id_col: str, out_col: str, crs: Any
) -> gpd.GeoDataFrame:
    """The features of ``df`` whose ``kind`` is in ``kinds``: column ``out_col`` (ids) + geometry."""
    if df is not None and len(df):
        sel = df[df["kind"].isin(kinds)]
        return gpd.GeoDataFrame(
            {out_col: sel[id_col].astype(str).values}, geometry=sel.geometry.values, crs=crs
        )
    return gpd.GeoDataFrame(
        {out_col: pd.Series([], dtype=str)}, geometry=gpd.GeoSeries([], crs=crs), crs=crs
    )


def _clean_geoms(gdf: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    return gdf[gdf.geometry.notna() & ~gdf.geometry.is_empty]


def geojson_shapes(geoms: Any, values: Any) -> Any:
    """``(GeoJSON dict, value)`` pairs for :func:`rasterio.features.rasterize`.

    Going through ``shapely.to_geojson`` is about twice as fast as letting rasterio
    read each shapely geometry's ``__geo_interface__``.
    """
    import json

    texts = shapely.to_geojson(np.asarray(geoms, dtype=object))
    return ((json.loads(t), v) for t, v in zip(texts, values, strict=True))


def _rasterize(
    geoms: Any,
    values: list[int],
    out: np.ndarray,
    transform: Any,
    *,
    all_touched: bool = False,
) -> None:
    """Burn ``values`` for ``geoms`` into ``out`` (later geometries win); lines touch their cells.

    Polygons take the cells whose centre they hold, plus the cells their outline
    touches (so narrow water polygons stay connected); where a polygon's cells and a
    line's touched cells meet, the polygon (and the lines drawn without ``all_touched``)
    win.  Cells no geometry covers keep their value in ``out``.
    """
    from rasterio import features

    shapes = []
    for g, v in zip(geoms, values, strict=True):
        if g.geom_type in ("Polygon", "MultiPolygon"):
            shapes.append((g, v))
            shapes.append((g.boundary, v))
        else:
            shapes.append((g, v))
    lines = [(g, v) for g, v in shapes if g.geom_type not in ("Polygon", "MultiPolygon")]
    if lines and not all_touched:  # the touched cells first: the shapes below win over them
        features.rasterize(lines, out=out, transform=transform, all_touched=True)
    features.rasterize(shapes, out=out, transform=transform, all_touched=all_touched)
