"""Overland flow on the DEM: route (the recipe) every cell to its first MS4 target, D8 directions.

Every DEM cell is routed downslope until it first reaches

- an MS4 inlet (catch basin or inlet structure of the storm network),
- an open MS4 conveyance (ditch, swale, channel),
- a waterbody (stream line or lake/pond polygon),
- a real closed depression (at least ``min_depth_m`` deep and ``min_area_m2`` large),
- the edge of the DEM (or a nodata hole in it).

The libraries (see ``docs/hydrology.md`` for the measurements behind the choice):

- the fill is ms4map's compiled kernel (``._fill``) of whitebox-workflows'
  ``fill_depressions(fix_flats=True)`` algorithm, checked against it in the tests
  (whitebox held 29 bytes per cell of its own); the D8 pointer and the first-target
  labels are ms4map's kernels too (``._kernels``), each checked against the library
  call it replaced;
- **pyflwdir** holds that D8 pointer as an in-memory flow graph for the questions
  asked later: downstream paths, upstream areas, accumulation.

Water that reaches an inlet, an open MS4 conveyance or a water leaves the surface
there, so those cells are outlets of the terrain, like the DEM edge.  :func:`route`
is the chain of these steps (all on copies; the user's DEM is never changed):

1. :func:`rasterize_targets`: waters, open conveyances and inlets on the DEM grid;
2. :func:`fill_with_outlets`: the fill starts from the DEM edge, every target cell and
   every nodata cell, so a sag that holds a target drains to it and is never raised;
   only depressions without one are filled (flats get a small gradient);
3. :func:`find_depressions`: a filled depression at least ``min_depth_m`` deep and
   ``min_area_m2`` large is a *real* closed depression (kind ``depression``); smaller
   ones are noise and are routed through;
4. :func:`sink_targets`: target cells sit at their burned elevation (waters and open
   conveyances ``burn_depth_m`` down, inlets ``inlet_depth_m``), below every
   non-target neighbour, so they are sinks;
5. :func:`flow_directions`: steepest-descent D8 on this conditioned DEM, with the
   boundary condition that flow reaching the edge of the DEM's data (the grid's
   border, nodata beyond the data, an interior hole) leaves it there (an edge cell
   whose library pointer runs along that edge is an outlet);
6. :func:`first_target`: each cell is labelled by the first target cell on its
   downstream path.
"""

from __future__ import annotations

import time
from typing import Any

import geopandas as gpd
import numpy as np

from ..core.errors import DataError
from ..core.qa import QAReport
from ..core.units import metres_per_unit
from ..io import Dem
from .cells import _label_downstream, _label_downstream_d8, _pit_cells_d8
from .conditioning import (
    _edge_outlets,
    _neighbours,
    _next_to,
    _outside_nodata,
    fill_with_outlets,
    find_depressions,
    sink_targets,
)
from .result import _PYFLWDIR_NODATA, DEFAULTS, ROUTING_STEP, OverlandResult, ProgressFn
from .targets import TargetGrid, _target_findings, _target_table, rasterize_targets

__all__ = [
    "check_layer_crs",
    "d8_pointer",
    "d8_steepest",
    "first_target",
    "flow_directions",
    "route",
]


#: How far (metres) a target cell lies at least below its lowest non-target neighbour on
#: the conditioned DEM (:func:`sink_targets`).
_SINK_STEP_M = 1e-3


_TARGET_LAYERS = ("inlets", "conveyances", "waterbodies")


def route(
    dem: Dem,
    *,
    inlets: gpd.GeoDataFrame | None = None,
    conveyances: gpd.GeoDataFrame | None = None,
    waterbodies: gpd.GeoDataFrame | None = None,
    min_depth_m: float = DEFAULTS["min_depth_m"],
    min_area_m2: float = DEFAULTS["min_area_m2"],
    burn_depth_m: float = DEFAULTS["burn_depth_m"],
    inlet_depth_m: float = DEFAULTS["inlet_depth_m"],
    progress: ProgressFn | None = None,
    keep_conditioned: bool = True,
) -> OverlandResult:
    """Route every DEM cell to the first inlet, open conveyance, water, depression or edge.

    The chain of steps (``docs/hydrology.md``): :func:`rasterize_targets`,
    :func:`fill_with_outlets` (targets, nodata and the DEM edge are outlets of the
    fill), :func:`find_depressions`, :func:`sink_targets`, :func:`flow_directions`,
    :func:`first_target`.

    Parameters
    ----------
    dem : Dem
        DEM in a projected CRS (array float32 or float64 with NaN nodata; the fill's
        result is float64 either way).
    inlets : GeoDataFrame, optional
        Points with a ``node_id`` column (the storm network's inlet nodes).
    conveyances : GeoDataFrame, optional
        Open MS4 conveyances (lines) with a ``conv_id`` column.
    waterbodies : GeoDataFrame, optional
        Lines or polygons with ``wb_id`` (and optionally ``name``).
    min_depth_m, min_area_m2 : float
        A depression that drains to no target, at least this deep and this large, is
        a real closed depression (internally drained); smaller ones are noise (filled).
    burn_depth_m, inlet_depth_m : float
        How far waterbodies/open conveyances and inlet cells lie below the DEM on the
        conditioned DEM, so that the cells next to them drain into them.
    progress : callable, optional
        Called with a short message at the start of each long step.
    keep_conditioned : bool, default True
        Keep the conditioned DEM (float64, 8 bytes per cell) as
        :attr:`OverlandResult.conditioned`; ``False`` frees it once the D8 pointer is
        made (``conditioned`` is ``None``; :attr:`OverlandResult.valid` comes from the
        D8 grid).  :func:`ms4map.pipeline.run` passes ``False``: nothing after the
        routing reads it.

    Returns
    -------
    OverlandResult

    Raises
    ------
    DataError
        The DEM is in a geographic CRS, rotated, or has no valid cell; a layer is in
        another CRS than the DEM.
    """
    say = progress or (lambda _msg: None)
    qa = QAReport()
    timings: dict[str, float] = {}
    _check_dem(dem)
    for layer, frame in zip(_TARGET_LAYERS, (inlets, conveyances, waterbodies), strict=True):
        check_layer_crs(frame, dem.crs, layer)
    z = np.asarray(dem.array)
    if z.dtype not in (np.float32, np.float64):  # a float32 DEM is not widened (4 B per cell)
        z = z.astype(np.float64)
    h, w = z.shape
    transform, crs = dem.transform, dem.crs
    cell_area_m2 = abs(transform.a * transform.e) * _crs_unit_m(crs) ** 2
    z_to_m = float(dem.z_to_m or 1.0)
    valid = np.isfinite(z)
    settings = {
        "min_depth_m": float(min_depth_m),
        "min_area_m2": float(min_area_m2),
        "burn_depth_m": float(burn_depth_m),
        "inlet_depth_m": float(inlet_depth_m),
    }
    _warn_if_flat(z, qa)

    t0 = time.perf_counter()
    say("overland: rasterizing targets")
    targets = rasterize_targets(
        (h, w), transform, valid, inlets=inlets, conveyances=conveyances, waterbodies=waterbodies
    )
    _target_findings(targets, qa)
    timings["rasterize_targets"] = time.perf_counter() - t0

    tiny = _warn_if_tiny((h, w), qa)
    t0 = time.perf_counter()
    say("overland: conditioning the DEM (targets and the DEM edge are outlets of the fill)")
    filled = _filled(z, targets, valid, transform, tiny=tiny, timings=timings)
    timings["condition"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say("overland: finding closed depressions")
    dep_table = find_depressions(
        z,
        filled,
        targets,
        min_depth=min_depth_m / z_to_m,
        min_cells=min_area_m2 / cell_area_m2,
        z_to_m=z_to_m,
        cell_area_m2=cell_area_m2,
    )
    timings["depressions"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say("overland: D8 flow directions")
    cond = filled
    del filled
    sink_targets(
        z,
        cond,
        targets,
        valid,
        burn_depth=burn_depth_m / z_to_m,
        inlet_depth=inlet_depth_m / z_to_m,
        step=_SINK_STEP_M / z_to_m,
    )
    d8 = None if tiny else flow_directions(cond, valid, transform, timings=timings)
    if d8 is not None and not keep_conditioned:
        cond = None  # the D8 grid holds what the routing needs (and which cells are valid)
    timings["d8"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    say(ROUTING_STEP)
    target_mask = targets.mask
    labels = first_target(None, targets, valid, d8=d8)  # walks the D8 grid itself
    timings["route"] = time.perf_counter() - t0
    tdf = _target_table(targets, labels, cell_area_m2)
    qa.note(
        f"overland: {h} x {w} cells ({cell_area_m2:g} m2 each), {valid.size - np.count_nonzero(valid)} nodata; "
        f"{(tdf['target_kind'] == 'inlet').sum()} inlet targets, {len(dep_table)} closed depression(s)."
    )
    result = OverlandResult(
        labels=labels,
        targets=tdf,
        target_mask=target_mask,
        d8=d8,
        conditioned=cond,
        transform=transform,
        crs=crs,
        cell_area_m2=cell_area_m2,
        depression_table=dep_table,
        qa=qa,
        settings=settings,
        timings=timings,
    )
    # the downstream index is not kept (4 bytes per cell): OverlandResult.idxs_ds
    # computes it from the D8 grid when a question needs it
    return result


def _filled(
    z: np.ndarray,
    targets: TargetGrid,
    valid: np.ndarray,
    transform: Any,
    *,
    tiny: bool,
    timings: dict[str, float],
) -> np.ndarray:
    """Step 2: the fill, its outlets the targets and the nodata cells (and the grid's
    border); a float64 copy of ``z`` for a DEM too small to route."""
    if tiny:
        return z.astype(np.float64)  # a copy, float64 as the fill's
    outlets = np.logical_not(valid)
    outlets |= targets.seed > 0
    # the fill keeps its flags in ``outlets`` (1 byte per cell less)
    return fill_with_outlets(z, outlets, transform, timings=timings, overwrite_outlets=True)


def flow_directions(
    cond: np.ndarray,
    valid: np.ndarray,
    transform: Any,
    *,
    timings: dict[str, float] | None = None,
) -> np.ndarray:
    """Steepest-descent D8 pointer on the conditioned DEM, with the DEM-edge rule (step 5).

    The pointer is :func:`d8_steepest` (the rule of whitebox-workflows' ``d8_pointer``,
    checked equal to it in the tests; about 1 s on 36M cells against 3.2 s for
    whitebox, which needed the changed cells set through a pinned view and its pointer
    file read back), then the boundary condition at the edge of the DEM's data, the
    grid's border and every nodata cell (:func:`_edge_outlets`).

    Returns
    -------
    numpy.ndarray
        uint8 ESRI/pyflwdir codes (0 pit, 247 nodata).
    """
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    d8 = d8_steepest(cond, transform)
    if not valid.all():
        d8[~valid] = _PYFLWDIR_NODATA
    _edge_outlets(d8)
    timings["d8.pointer"] = time.perf_counter() - t0
    return d8


def d8_steepest(z: np.ndarray, transform: Any) -> np.ndarray:
    """Steepest-descent D8 pointer of ``z`` (uint8, ESRI/pyflwdir codes; 0 pit, 247 nodata).

    The neighbour with the largest drop per distance (the cell width or height, or
    the diagonal), strictly downhill; among equal slopes the first of NE, E, SE, S,
    SW, W, NW, N: the rule and order of whitebox-workflows' ``d8_pointer``.  NaN
    cells are nodata; cells beyond the grid are no neighbours (no edge rule here).
    A compiled kernel (``ms4map.hydrology._kernels``, numba); the upper and the
    lower half of the rows in two threads on grids of
    :data:`~ms4map.hydrology._fill.TWO_THREADS_CELLS` or more, as the fill's scans.
    """
    from ._fill import in_two_threads
    from ._kernels import d8_rows

    z = np.asarray(z, dtype="float64")
    out = np.empty(z.shape, dtype=np.uint8)
    cell = (abs(float(transform.a)), abs(float(transform.e)))
    in_two_threads(lambda rows: d8_rows(z, cell, out, rows), z.shape[0], z.size)
    return out


def first_target(
    idxs_ds: np.ndarray | None,
    targets: TargetGrid,
    valid: np.ndarray,
    *,
    d8: np.ndarray | None = None,
) -> np.ndarray:
    """Label every cell with the first target on its downstream path (step 6).

    Pits that are no target get one of three (:func:`_pit_labels`):
    ``off_dem``/``dem_edge`` at the DEM's edge: on the grid's outermost row or column,
    or next to nodata connected to the grid's border (one target per side, its reason
    naming the side: north, south, west, east; the grid's rows are taken as north-up);
    ``off_dem``/``dem_nodata`` next to an interior nodata hole; else
    ``unknown``/``dem_pit``.  ``idxs_ds`` is the downstream index of each cell
    (:attr:`OverlandResult.idxs_ds`); ``None`` (a DEM under 3 x 3 cells): every cell is
    its own outlet.  With ``d8`` (the D8 grid) the walk follows it directly and
    ``idxs_ds`` is not used (no index grid: 4 bytes per cell less; the same labels).

    Returns
    -------
    numpy.ndarray
        int32 labels (rows of ``targets``), 0 on nodata cells: ``targets.seed`` itself,
        labelled in place (no copy of the grid).
    """
    h, w = valid.shape
    seed = targets.seed
    if d8 is not None:
        pits = _pit_cells_d8(d8)
    elif idxs_ds is None:
        pits = np.flatnonzero(valid)
    else:
        pits = _pit_cells(idxs_ds)
    free = pits[seed.ravel()[pits] == 0]
    if free.size:
        seed.ravel()[free] = _pit_labels(free, targets, valid)
    # the seed is the targets' own grid: labelled in place (no copy of the grid); the
    # target grid is not read after the routing
    if d8 is not None:
        labels = _label_downstream_d8(d8, seed.ravel(), in_place=True).reshape(h, w)
    elif idxs_ds is None:
        labels = seed.astype(np.int32, copy=True)
    else:
        labels = _label_downstream(idxs_ds, seed.ravel(), in_place=True).reshape(h, w)
    if not valid.all():
        labels[~valid] = 0
    return labels


def _pit_cells(idxs_ds: np.ndarray) -> np.ndarray:
    """Linear indices of the cells that are their own downstream cell (pits), found in
    blocks (no full-grid index or mask temporaries)."""
    step = 1 << 22
    parts = [
        np.flatnonzero(idxs_ds[a : a + step] == np.arange(a, min(a + step, idxs_ds.size))) + a
        for a in range(0, idxs_ds.size, step)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _pit_labels(free: np.ndarray, targets: TargetGrid, valid: np.ndarray) -> np.ndarray:
    """Labels of the pits ``free`` (linear indices) that are no target (added to ``targets``).

    A pit on the grid's outermost row or column leaves the DEM by that side; one next
    to nodata connected to the grid's border leaves it by the side that nodata lies on
    (:func:`_side_beyond`): both ``off_dem``/``dem_edge``.  A pit next to an interior
    nodata hole is ``off_dem``/``dem_nodata``; any other ``unknown``/``dem_pit``.
    """
    h, w = valid.shape
    rr, cc = np.divmod(free, w)
    on_edge = (rr == 0) | (rr == h - 1) | (cc == 0) | (cc == w - 1)
    # a corner cell counts for its row's side
    side = np.where(rr == 0, 0, np.where(rr == h - 1, 1, np.where(cc == 0, 2, 3)))
    at_hole = np.zeros(free.size, dtype=bool)
    if not valid.all():
        near = _next_to(~valid, free) & ~on_edge
        if near.any():
            beyond, near_side = _side_beyond(_outside_nodata(valid), free[near])
            ix = np.flatnonzero(near)
            on_edge[ix[beyond]] = True
            side[ix[beyond]] = near_side[beyond]
            at_hole[ix[~beyond]] = True
    lab_side = np.zeros(4, dtype=np.int32)
    for k, name in enumerate(("north", "south", "west", "east")):
        if (on_edge & (side == k)).any():
            lab_side[k] = targets.add(
                "off_dem",
                "dem_edge",
                method="d8_catchment",
                reason=f"flows off the {name} edge of the DEM",
            )
    lab_hole = targets.add(
        "off_dem",
        "dem_nodata",
        method="d8_catchment",
        reason="flows into a nodata hole of the DEM",
    )
    lab_pit = targets.add(
        "unknown",
        "dem_pit",
        method="no_target",
        reason="flow stops in a DEM pit left after conditioning",
    )
    return np.where(on_edge, lab_side[side], np.where(at_hole, lab_hole, lab_pit))


def _side_beyond(outside: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For cells ``idx`` (linear), whether nodata beyond the DEM's edge (``outside``) is
    among their 8 neighbours, and the side of the DEM it lies on (0 north, 1 south,
    2 west, 3 east).

    The side is that of the mean step to those neighbours (rows win a tie, as a
    corner cell of the grid counts for its row's side); where the steps cancel out (a
    strip of data between two nodata regions), the nearest side of the grid.
    """
    h, w = outside.shape
    r, c = np.divmod(idx, w)
    sdr = np.zeros(idx.size, dtype=np.int64)
    sdc = np.zeros(idx.size, dtype=np.int64)
    any_ = np.zeros(idx.size, dtype=bool)
    for dr, dc, rr, cc, ok in _neighbours(r, c, h, w):
        hit = np.zeros(idx.size, dtype=bool)
        hit[ok] = outside[rr[ok], cc[ok]]
        any_ |= hit
        sdr += dr * hit
        sdc += dc * hit
    nearest = np.argmin(np.stack([r, h - 1 - r, c, w - 1 - c]), axis=0)
    side = np.where(
        (sdr == 0) & (sdc == 0),
        nearest,
        np.where(
            np.abs(sdr) >= np.abs(sdc),
            np.where(sdr < 0, 0, 1),
            np.where(sdc < 0, 2, 3),
        ),
    )
    return any_, side


def d8_pointer(
    array: np.ndarray,
    transform: Any,
    crs: Any,
    *,
    edge_outlets: bool = True,
) -> np.ndarray:
    """Steepest-descent D8 pointer of a (conditioned) DEM (:func:`d8_steepest`).

    Parameters
    ----------
    array : numpy.ndarray
        Elevations (float, NaN nodata), normally the conditioned DEM.
    transform, crs
        Georeferencing of the grid.
    edge_outlets : bool, default True
        Apply ms4map's boundary condition (:func:`_edge_outlets`): a cell at the edge
        of the data (the grid's border or next to nodata) whose pointer runs along that
        edge is an outlet (flow that reaches the DEM edge leaves it); ``False`` gives
        the plain steepest-descent pointer (whitebox-workflows' ``d8_pointer``).

    Returns
    -------
    numpy.ndarray
        uint8 pointer in ESRI/pyflwdir encoding (1=E, 2=SE, 4=S, ... 128=NE), 0 for
        cells without a lower neighbour (and outlets on the edge), 247 for nodata.
    """
    d8 = d8_steepest(array, transform)
    if edge_outlets:
        _edge_outlets(d8)
    return d8


def _warn_if_flat(z: np.ndarray, qa: QAReport) -> None:
    """Warn when the DEM has (almost) no relief."""
    if np.nanmax(z) - np.nanmin(z) < 1e-6:
        qa.warning(
            "dem_flat",
            "dem",
            "The DEM is flat: flow directions follow only the gradient imposed on flats "
            "(towards the DEM edge and the MS4 features).",
            fix="Check that the DEM is an elevation raster (not a mask or a constant).",
            step="overland",
        )


def _warn_if_tiny(shape: tuple[int, int], qa: QAReport) -> bool:
    """Whether the DEM is too small to route flow (fewer than 3 cells a side), with a warning."""
    h, w = shape
    tiny = min(h, w) < 3
    if tiny:
        qa.warning(
            "dem_too_small",
            "dem",
            f"The DEM has {h} x {w} cells: too small to route flow; every cell drains to "
            "itself (a target in it, else off the DEM).",
            fix="Use a DEM that covers the area with a margin.",
            step="overland",
        )
    return tiny


def check_layer_crs(frame: Any, crs: Any, layer: str) -> None:
    """Raise :class:`DataError` when ``frame`` (a layer) is in another CRS than the DEM.

    :func:`route` and :func:`ms4map.drainage.parcel_drainage` compare coordinates with
    the DEM's grid: a layer in another CRS would fall off the grid (its inlets on no
    cell, its parcels 100 % ``off_dem``) without any other sign.  A frame or DEM
    without a CRS is not checked (it is taken to be in the DEM's).
    """
    if frame is None or getattr(frame, "crs", None) is None or crs is None:
        return
    from pyproj import CRS

    theirs, ours = CRS.from_user_input(frame.crs), CRS.from_user_input(crs)
    if not theirs.equals(ours, ignore_axis_order=True):
        raise DataError(
            f"Layer '{layer}' is in {theirs.to_string()} but the DEM is in "
            f"{ours.to_string()}: its features would fall off the DEM's grid. Fix: "
            f"reproject it first ({layer}.to_crs(dem.crs)), or run the workspace through "
            "ms4map.pipeline.run, which reprojects every layer to the working CRS."
        )


def _check_dem(dem: Dem) -> None:
    if not isinstance(dem, Dem):
        raise TypeError(f"'dem' must be an ms4map.workspace.Dem, got {type(dem).__name__}")
    arr = np.asarray(dem.array)
    if arr.ndim != 2 or arr.size == 0:
        raise DataError("The DEM has no cells. Fix: provide a DEM GeoTIFF with data.")
    step = max(1, (1 << 20) // arr.shape[1])  # in blocks of rows, the first valid one ends it
    if not any(np.isfinite(arr[r : r + step]).any() for r in range(0, arr.shape[0], step)):
        raise DataError("The DEM has only nodata cells. Fix: provide a DEM with elevations.")
    crs = dem.crs
    if crs is None:
        raise DataError("The DEM has no CRS. Fix: assign one (gdal_edit.py -a_srs EPSG:...).")
    from pyproj import CRS

    c = CRS.from_user_input(crs)
    if c.is_geographic:
        raise DataError(
            f"The DEM is in a geographic CRS ({c.name}); flow routing needs square cells in "
            "metres or feet. Fix: open the workspace with a projected --crs (e.g. EPSG:26918) "
            "so the DEM is warped, or reproject the DEM (gdalwarp -t_srs EPSG:26918)."
        )
    t = dem.transform
    if t.b != 0 or t.d != 0:
        raise DataError("The DEM grid is rotated. Fix: warp it to a north-up grid (gdalwarp).")


def _crs_unit_m(crs: Any) -> float:
    return metres_per_unit(crs)
