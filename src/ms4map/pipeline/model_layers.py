"""The traced network and the catchments' slope and flow length as layers, for a model (``ms4map export --to model.inp``).

:func:`model_layers` turns a :class:`~ms4map.pipeline.Result` into the layers
``ms4map drainage`` writes beside its own so that the results GeoPackage holds everything
an EPA SWMM model needs (docs/exports.md, "SWMM models"):

- ``structures``: every node of the traced network (junctions made where conveyances meet
  included) with ``outfall_id`` (the outfall its flow reaches, :func:`ms4map.network.
  assign_outfalls`) and ``ground_elev`` (the DEM under it);
- ``conveyances``: every edge as oriented (geometry in flow order) with its ``material``;
- ``outfalls``: the network's outfalls with their receiving water and PWL id;
- ``inlet_catchments`` with ``slope_pct`` (mean DEM slope of its cells) and
  ``flow_length_m`` (the longest D8 flow path to its inlet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd

from ..hydrology import mean_slopes
from ..network import assign_outfalls, crs_unit_factor

if TYPE_CHECKING:
    from .result import Result

__all__ = ["catchment_hydrology", "model_layers"]

#: Columns of the ``structures`` and ``conveyances`` layers (and geometry).
STRUCTURE_COLUMNS = (
    "node_id",
    "struct_id",
    "kind",
    "is_inlet",
    "invert_elev",
    "rim_elev",
    "ground_elev",
    "outfall_id",
    "assign_method",
)
CONVEYANCE_COLUMNS = (
    "link_id",
    "conv_id",
    "part",
    "from_node",
    "to_node",
    "kind",
    "is_open",
    "orient_method",
    "length_m",
    "diameter_in",
    "rise_in",
    "material",
    "us_invert",
    "ds_invert",
)
OUTFALL_COLUMNS = ("outfall_id", "node_id", "receiving_water", "pwl_id", "status", "method")


def model_layers(result: Result) -> dict[str, Any]:
    """The layers a model is built from (empty without a network).

    Parameters
    ----------
    result : Result
        Of :func:`ms4map.pipeline.run`.

    Returns
    -------
    dict
        ``structures``, ``conveyances``, ``outfalls`` (when the result has a network) and
        ``inlet_catchments`` with ``slope_pct`` and ``flow_length_m`` (when it has a DEM).
    """
    out: dict[str, Any] = {}
    net = result.network
    ws = result.workspace
    if net is not None:
        out["structures"] = _structures(net, ws)
        out["conveyances"] = _conveyances(net, ws)
        out["outfalls"] = _outfalls(net)
    if result.overland is not None and ws is not None and ws.dem is not None:
        hyd = catchment_hydrology(result)
        inlets = hyd[hyd["target_kind"] == "inlet"].set_index("target_id")
        ic = result.inlet_catchments.copy()
        ids = ic["node_id"].astype(str)
        for col in ("slope_pct", "flow_length_m"):
            ic[col] = ids.map(inlets[col]).astype(float).to_numpy()
        out["inlet_catchments"] = ic
        out["surface_catchments"] = _surface_catchments(result, hyd, net)
    parcels = ws.get("parcels") if ws is not None else None
    for name in ("inlet_catchments", "surface_catchments"):
        if name in out and parcels is not None and len(out[name]):
            out[name]["parcel_classes"] = _text(_class_areas(out[name], result.drainage, parcels))
    return out


def _surface_catchments(result: Result, hyd: pd.DataFrame, net: Any) -> gpd.GeoDataFrame:
    """The catchments of open conveyances and of waters reached directly: ``target_kind``,
    ``target_id``, ``name``, ``area_m2``, ``slope_pct``, ``flow_length_m``, ``outlet_node``
    (a conveyance's downstream node in the traced network), ``low_x``, ``low_y``,
    ``low_elev`` (a water's lowest cell)."""
    ov = result.overland
    polys = ov.catchments(("conveyance", "water_direct"))  # from the pipeline's polygons
    # a target may hold several labels (a water's parts): its lowest cell, longest path
    by = hyd.sort_values("low_elev", kind="stable").groupby(["target_kind", "target_id"])
    key = by.first()
    key["slope_pct"] = by["slope_pct"].mean()
    key["flow_length_m"] = by["flow_length_m"].max()
    keys = list(zip(polys["target_kind"].astype(str), polys["target_id"].astype(str), strict=True))
    h = key.reindex(pd.MultiIndex.from_tuples(keys)) if keys else key.iloc[:0]
    names = ov.targets.drop_duplicates(["target_kind", "target_id"]).set_index(
        ["target_kind", "target_id"]
    )["name"]
    outlet = [None] * len(polys)
    if net is not None and len(polys):
        e = net.edges.sort_values("part")
        last = e.drop_duplicates("conv_id", keep="last").set_index(e["conv_id"].astype(str))
        last = last[~last.index.duplicated()]
        for i, (kind, tid) in enumerate(keys):
            if kind == "conveyance" and tid in last.index:
                outlet[i] = str(last.at[tid, "to_node"])
    frame = pd.DataFrame(
        {
            "target_kind": _text([k for k, _ in keys]),
            "target_id": _text([t for _, t in keys]),
            "name": _text([names.get(k) for k in keys]),
            "area_m2": pd.to_numeric(polys["area_m2"], errors="coerce").to_numpy(float),
            "slope_pct": h["slope_pct"].to_numpy(float),
            "flow_length_m": h["flow_length_m"].to_numpy(float),
            "outlet_node": _text(outlet),
            "low_x": h["low_x"].to_numpy(float),
            "low_y": h["low_y"].to_numpy(float),
            "low_elev": h["low_elev"].to_numpy(float),
        }
    )
    return gpd.GeoDataFrame(frame, geometry=polys.geometry.to_numpy(), crs=ov.crs)


def _text(values: Any) -> pd.arrays.StringArray:
    s = pd.Series(values, dtype=object)
    return pd.array(s.where(s.notna(), None).map(lambda v: None if v is None else str(v)), "str")


def _ground(ws: Any, geoms: gpd.GeoSeries) -> np.ndarray:
    """The DEM's elevation under each point (NaN off the DEM or without one)."""
    dem = getattr(ws, "dem", None)
    out = np.full(len(geoms), np.nan)
    if dem is None or not len(geoms):
        return out
    inv = ~dem.transform
    h, w = dem.array.shape
    # the DEM's elevations in the unit of the working CRS (as the layers' elevations)
    zk = float(getattr(dem, "z_to_m", 1.0) or 1.0) / (crs_unit_factor(dem.crs) if dem.crs else 1.0)
    for i, g in enumerate(geoms):
        if g is None or g.is_empty:
            continue
        col, row = inv @ (g.x, g.y)
        r, c = int(np.floor(row)), int(np.floor(col))
        if 0 <= r < h and 0 <= c < w:
            out[i] = float(dem.array[r, c]) * zk  # float64 on a float32 DEM too
    return out


def _structures(net: Any, ws: Any) -> gpd.GeoDataFrame:
    nodes = net.nodes
    table = assign_outfalls(net).dropna(subset=["node_id"]).drop_duplicates("node_id")
    by_node = table.set_index(table["node_id"].astype(str))
    ids = nodes.index.astype(str)
    frame = pd.DataFrame(
        {
            "node_id": _text(ids),
            "struct_id": _text(nodes["struct_id"].to_numpy()),
            "kind": _text(nodes["kind"].to_numpy()),
            "is_inlet": nodes["is_inlet"].fillna(False).astype(bool).to_numpy(),
            "invert_elev": pd.to_numeric(nodes["invert_elev"], errors="coerce").to_numpy(float),
            "rim_elev": pd.to_numeric(nodes["rim_elev"], errors="coerce").to_numpy(float),
            "ground_elev": _ground(ws, nodes.geometry),
            "outfall_id": _text(pd.Series(ids).map(by_node["outfall_id"]).to_numpy()),
            "assign_method": _text(pd.Series(ids).map(by_node["method"]).to_numpy()),
        }
    )
    return gpd.GeoDataFrame(frame, geometry=nodes.geometry.to_numpy(), crs=net.crs)


def _conveyances(net: Any, ws: Any) -> gpd.GeoDataFrame:
    e = net.edges
    conv = e["conv_id"].astype(str)
    parts = conv.map(conv.value_counts())
    part = pd.to_numeric(e["part"], errors="coerce").fillna(0).astype(int)
    link = np.where(parts.to_numpy() > 1, conv + "~" + part.astype(str), conv)
    src = ws.layers.get("conveyances") if ws is not None else None
    material = pd.Series(None, index=e.index, dtype=object)
    rise = pd.Series(np.nan, index=e.index)
    if src is not None:
        s = src.drop_duplicates("conv_id").set_index(src["conv_id"].astype(str))
        if "material" in s.columns:
            material = conv.map(s["material"].astype(object))
        if "rise_in" in s.columns:
            rise = conv.map(pd.to_numeric(s["rise_in"], errors="coerce"))
    frame = pd.DataFrame(
        {
            "link_id": _text(link),
            "conv_id": _text(conv.to_numpy()),
            "part": part.to_numpy(),
            "from_node": _text(e["from_node"].to_numpy()),
            "to_node": _text(e["to_node"].to_numpy()),
            "kind": _text(e["kind"].to_numpy()),
            "is_open": e["is_open"].fillna(False).astype(bool).to_numpy(),
            "orient_method": _text(e["orient_method"].to_numpy()),
            "length_m": pd.to_numeric(e["length_m"], errors="coerce").to_numpy(float),
            "diameter_in": pd.to_numeric(e["diameter_in"], errors="coerce").to_numpy(float),
            "rise_in": rise.to_numpy(float),
            "material": _text(material.to_numpy()),
            "us_invert": pd.to_numeric(e["us_invert"], errors="coerce").to_numpy(float),
            "ds_invert": pd.to_numeric(e["ds_invert"], errors="coerce").to_numpy(float),
        }
    )
    return gpd.GeoDataFrame(frame, geometry=e.geometry.to_numpy(), crs=net.crs)


def _outfalls(net: Any) -> gpd.GeoDataFrame:
    of = net.outfalls
    frame = pd.DataFrame({"outfall_id": _text(of.index.astype(str))})
    for col in OUTFALL_COLUMNS[1:]:
        frame[col] = _text(of[col].to_numpy() if col in of.columns else [None] * len(of))
    return gpd.GeoDataFrame(frame, geometry=of.geometry.to_numpy(), crs=net.crs)


def _class_areas(
    catchments: gpd.GeoDataFrame, drainage: pd.DataFrame, parcels: gpd.GeoDataFrame
) -> list[str]:
    """Per catchment: square metres of each parcel property class draining to it, as
    ``"210:1234.5;311:20.0"`` (``?`` for a parcel without a class); the rest of the
    catchment is outside every parcel (streets, rights of way).

    A parcel's area in a catchment is its share of cells draining to the catchment's
    target (``fraction`` of the parcel drainage table) times its area: the table's own
    answer, counted instead of intersecting polygons (8 s on the 64,000 parcels and
    5,000 catchments of the county benchmark).
    """
    out = [""] * len(catchments)
    if not len(drainage) or "parcel_id" not in parcels.columns:
        return out
    cls = parcels["prop_class"] if "prop_class" in parcels.columns else None
    p = pd.DataFrame(
        {
            "parcel_id": parcels["parcel_id"].astype(str).to_numpy(),
            "cls": "?" if cls is None else cls.astype(object).where(cls.notna(), "?").astype(str),
            "area": parcels.geometry.area.to_numpy(),
        }
    ).drop_duplicates("parcel_id")
    d = drainage[["parcel_id", "target_kind", "target_id", "fraction"]].copy()
    d["parcel_id"] = d["parcel_id"].astype(str)
    d = d.merge(p, on="parcel_id", how="inner")
    d["a"] = d["fraction"].astype(float) * d["area"]
    keys = d["target_kind"].astype(str) + "\x1f" + d["target_id"].astype(str)
    t = d[d["a"] > 0].groupby([keys, d["cls"]], sort=True)["a"].sum()
    text: dict[str, str] = {}
    for (key, cl), v in t.items():
        text[key] = text.get(key, "") + ("" if key not in text else ";") + f"{cl}:{v:.1f}"
    kind = catchments["target_kind"].astype(str).to_numpy()
    tid = catchments["target_id" if "target_id" in catchments.columns else "node_id"]
    for i, key in enumerate(kind + "\x1f" + tid.astype(str).to_numpy()):
        out[i] = text.get(key, "")
    return out


def catchment_hydrology(result: Result) -> pd.DataFrame:
    """Mean slope, longest flow path and lowest target cell of each routing target's
    catchment, from the DEM.

    Parameters
    ----------
    result : Result
        With an overland result and a DEM.

    Returns
    -------
    DataFrame
        Index the target's ``label`` (:attr:`~ms4map.hydrology.OverlandResult.targets`);
        ``target_kind``, ``target_id``; ``slope_pct`` (mean over the catchment's cells of
        the DEM's steepest-gradient slope, by central differences, in percent),
        ``flow_length_m`` (the longest D8 path of a cell to the target, in metres; at
        least one cell), ``low_x``, ``low_y``, ``low_elev`` (the centre and elevation of
        the target's lowest cell: where a water's model outfall goes).
    """
    ov = result.overland
    dem = result.workspace.dem
    t = ov.targets
    m = crs_unit_factor(dem.crs) if dem.crs is not None else 1.0
    zf = float(getattr(dem, "z_to_m", 1.0) or 1.0)
    cx, cy = abs(dem.transform.a) * m, abs(dem.transform.e) * m
    n = int(t.index.max()) + 1 if len(t) else 1
    mean_slope, sloped = mean_slopes(dem.array, ov.labels, n, spacing=(cy, cx, zf))
    lab = ov.labels.ravel()
    dist = _flow_distance(ov, cx, cy)
    longest = np.zeros(n)
    lengths = sloped == 0  # else, without distances: a grid too large for the D8 lengths
    if dist is not None:
        okd = np.isfinite(dist) & (lab > 0)
        np.maximum.at(longest, lab[okd], dist[okd])
        lengths = lengths or bool(okd.any())
        del dist, okd
    labels = t.index.to_numpy(int)
    low = _lowest_target_cells(ov, dem.array, n)
    w = ov.shape[1]
    tr = dem.transform
    col, row = low % w + 0.5, low // w + 0.5
    xs, ys = tr.a * col + tr.b * row + tr.c, tr.d * col + tr.e * row + tr.f
    z_low = np.asarray(dem.array).ravel()[np.maximum(low, 0)].astype(float) * zf
    zl = np.where(low >= 0, z_low / m, np.nan)  # CRS units
    return pd.DataFrame(
        {
            "target_kind": t["target_kind"].astype(str).to_numpy(),
            "target_id": t["target_id"].astype(str).to_numpy(),
            "slope_pct": mean_slope[labels],
            "flow_length_m": (
                np.maximum(longest[labels], max(cx, cy))
                if lengths
                else np.full(len(labels), np.nan)
            ),
            "low_x": np.where(low[labels] >= 0, np.asarray(xs)[labels], np.nan),
            "low_y": np.where(low[labels] >= 0, np.asarray(ys)[labels], np.nan),
            "low_elev": zl[labels],
        },
        index=pd.Index(labels, name="label"),
    )


def _lowest_target_cells(ov: Any, z: np.ndarray, n: int) -> np.ndarray:
    """Per label, the linear index of its lowest target cell (-1 when it has none)."""
    idx = np.flatnonzero(ov.target_mask.ravel() & (ov.labels.ravel() > 0))
    out = np.full(n, -1, dtype=np.int64)
    if not len(idx):
        return out
    zz = np.nan_to_num(z.ravel()[idx], nan=np.inf)
    lab = ov.labels.ravel()[idx]
    order = np.lexsort((zz, lab))  # by label, then lowest first
    first = np.unique(lab[order], return_index=True)[1]
    out[lab[order][first]] = idx[order][first]
    return out


#: Grids larger than this many cells get no D8 flow length (its arrays would hold several
#: bytes per cell more); the model's width then falls back to the square root of the area.
MAX_FLOW_CELLS = 25_000_000


def _flow_distance(ov: Any, cx: float, cy: float) -> np.ndarray | None:
    """Metres along the D8 path from each cell to its target (pointer jumping; targets
    and pits are 0; ``None`` on a grid over :data:`MAX_FLOW_CELLS`, before the
    downstream index is built)."""
    h, w = ov.shape
    size = h * w
    if size > MAX_FLOW_CELLS:
        return None
    ds = ov.idxs_ds
    if ds is None:
        return np.zeros(size, dtype=np.float32)
    idx = np.arange(size, dtype=np.int32)
    ptr = np.asarray(ds).astype(np.int32)
    stop = (ptr < 0) | ov.target_mask.ravel()
    ptr[stop] = idx[stop]
    diag = ((ptr // w) != (idx // w)) & ((ptr % w) != (idx % w))
    along_row = (ptr // w) == (idx // w)
    dist = np.where(diag, np.hypot(cx, cy), np.where(along_row, cx, cy)).astype(np.float32)
    dist[ptr == idx] = 0.0
    del diag, along_row, stop
    for _ in range(int(np.ceil(np.log2(max(size, 2)))) + 1):
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        dist += dist[ptr]
        ptr = nxt
    return dist
