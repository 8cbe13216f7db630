"""The parcel drainage table: where each parcel drains, with area fractions.

Parcel -> inlet(s) / open conveyance / water / depression -> outfall -> water.

The parcel drainage table (``docs/CONTRACTS.md``) has one row per (parcel, target):

``parcel_id, target_kind, target_id, fraction, outfall_id, receiving_water, pwl_id,
method, reason, outfall_candidates, candidate_waters``

(the last two are empty except where the storm network cannot tell which outfall takes
the flow: :data:`ms4map.core.schema.AMBIGUITY_COLUMNS`)

with ``target_kind`` in :data:`TARGET_KINDS` and fractions summing to 1 per parcel.

``method`` is one of :data:`METHODS`:

- ``d8_catchment``: share of the parcel's DEM cells whose surface flow reaches the
  target first (steepest-descent D8 on the conditioned DEM, see :mod:`ms4map.hydrology.overland`);
- ``representative_point``: the parcel is smaller than a DEM cell (no cell centre in
  it): the cell under its representative point decides;
- ``shared_cell``: an inlet that shares its DEM cell with another inlet (no own row
  is produced; used in the overland targets table);
- ``off_dem``: the part of the parcel that lies outside the DEM;
- ``dem_nodata``: the part of the parcel over nodata cells of the DEM (kind ``unknown``);
- ``no_target``: flow stops in a DEM pit left after conditioning (kind ``unknown``);
- ``nearest_inlet``: no DEM in the workspace: the nearest inlet within
  ``fallback_distance_m`` of the parcel takes all of it (a documented fallback);
- ``no_dem``: no DEM and no inlet within ``fallback_distance_m`` (kind ``unknown``).
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from ..core.errors import DataError
from ..core.schema import AMBIGUITY_COLUMNS, PATH_COLUMNS
from ..hydrology import OverlandResult, check_layer_crs, to_colrow
from ..io import metres_to_crs_units
from .join import NetworkJoin, join_rows, network_join

__all__ = [
    "COLUMNS",
    "DEFAULT_FALLBACK_M",
    "METHODS",
    "ParcelCells",
    "parcel_cells",
    "parcel_drainage",
]

COLUMNS = ["parcel_id", *PATH_COLUMNS, "method", "reason", *AMBIGUITY_COLUMNS]
METHODS = (
    "d8_catchment",
    "representative_point",
    "shared_cell",
    "off_dem",
    "dem_nodata",
    "no_target",
    "nearest_inlet",
    "no_dem",
)
DEFAULT_FALLBACK_M = 100.0

ProgressFn = Callable[[str], None]


def parcel_drainage(
    parcels: gpd.GeoDataFrame,
    overland: OverlandResult | None,
    *,
    join: NetworkJoin | None = None,
    inlets: gpd.GeoDataFrame | None = None,
    fallback_distance_m: float = DEFAULT_FALLBACK_M,
    progress: ProgressFn | None = None,
    cells: ParcelCells | None = None,
) -> pd.DataFrame:
    """Where each parcel drains, with area fractions.

    Parameters
    ----------
    parcels : GeoDataFrame
        Parcel polygons with ``parcel_id``, in the DEM's CRS.
    overland : OverlandResult or None
        Routing result; ``None`` (no DEM) uses the nearest-inlet fallback.
    join : NetworkJoin, optional
        Inlet/conveyance -> outfall -> receiving water (see :func:`network_join`).
    inlets : GeoDataFrame, optional
        Inlet points with ``node_id``, for the no-DEM fallback.
    fallback_distance_m : float
        No DEM: an inlet within this distance (metres) of the parcel takes it.
    progress : callable, optional
    cells : ParcelCells, optional
        ``parcel_cells(parcels.geometry.values, ...)`` on the DEM grid, when already
        computed (the pipeline does it during the fill); computed here otherwise.

    Returns
    -------
    DataFrame
        Columns :data:`COLUMNS`, one row per (parcel, target), fractions summing to 1
        per parcel, parcels in input order.
    """
    say = progress or (lambda _m: None)
    if "parcel_id" not in parcels.columns:
        raise DataError(
            "Layer 'parcels' has no column 'parcel_id'. Fix: map it with "
            "--field parcels.parcel_id=COLUMN."
        )
    join = join if join is not None else network_join(None)
    par = parcels[["parcel_id", parcels.geometry.name]].copy()
    par["parcel_id"] = par["parcel_id"].astype(str)
    if overland is None:
        say("drainage: no DEM, nearest-inlet fallback")
        rows = _fallback(par, inlets, fallback_distance_m)
    else:
        check_layer_crs(parcels, overland.crs, "parcels")
        say("drainage: overlaying parcels on the catchments")
        rows = _overlay(par, overland, cells)
    rows = join_rows(rows, join)
    # exact sums
    tot = rows.groupby("parcel_id", sort=False)["fraction"].transform("sum")
    rows["fraction"] = rows["fraction"] / tot.where(tot > 0, 1.0)
    order = pd.Series(np.arange(len(par)), index=par["parcel_id"].to_numpy())
    order = order[~order.index.duplicated()]
    rows["_o"] = order.reindex(rows["parcel_id"]).to_numpy()
    rows = rows.sort_values(["_o", "fraction"], ascending=[True, False], kind="stable")
    out = rows[COLUMNS].reset_index(drop=True)
    for c in (
        "parcel_id",
        "target_kind",
        "target_id",
        "outfall_id",
        "receiving_water",
        "pwl_id",
        "method",
        "reason",
        *AMBIGUITY_COLUMNS,
    ):
        out[c] = pd.array(out[c].astype(object).where(out[c].notna(), None), dtype="str")
    out["fraction"] = out["fraction"].astype(float)
    return out


@dataclass
class ParcelCells:
    """Parcels rasterized on a DEM grid: what the overlay needs besides the labels.

    Attributes
    ----------
    raster : numpy.ndarray
        uint16 grid (int32 from 65,535 parcels): 1 + the parcel's row under each cell
        centre, 0 for none.
    frac_in : numpy.ndarray
        Share of each parcel's area inside the grid's extent (0..1).
    ok : numpy.ndarray
        Parcels with a usable geometry.
    sel : numpy.ndarray
        Parcels that were rasterized (usable and partly inside).
    shape, transform
        The grid.
    overlapping : numpy.ndarray
        Rows of the parcels that overlap another parcel (condominium stacks, a lot
        inside a larger one, slivers).  In ``raster`` a cell holds one parcel only, so
        these are also rasterized one by one, each in its own window of the grid:
    windows : list of (int, int, int, int, numpy.ndarray)
        ``(row0, col0, rows, cols, bits)`` of each of them: the window of the grid its
        bounds cover and the cells of it the parcel holds (``numpy.packbits`` of the
        window's bool mask, a bit per cell: a large parcel's window stays small).
    """

    raster: np.ndarray
    frac_in: np.ndarray
    ok: np.ndarray
    sel: np.ndarray
    shape: tuple[int, int]
    transform: Any
    overlapping: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    windows: list[tuple[int, int, int, int, np.ndarray]] = field(default_factory=list)


#: Below this many parcels their raster is 16-bit.
U16_PARCELS = int(np.iinfo(np.uint16).max)


def parcel_cells(geoms: Any, shape: tuple[int, int], transform: Any) -> ParcelCells:
    """Rasterize parcel polygons on a grid (the half of the overlay that needs no routing).

    Needs only the parcels and the DEM grid, so :func:`ms4map.pipeline.run` computes
    it in a background thread while the DEM is routed (the routing's kernels
    release the GIL).

    Parameters
    ----------
    geoms : array of shapely geometries
        The parcels, in the grid's CRS, in table order.
    shape : (int, int)
        Rows and columns of the grid.
    transform : affine.Affine
        The grid's transform.
    """
    from rasterio import features

    h, w = shape
    geoms = np.asarray(geoms, dtype=object)
    ok = ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    n = len(geoms)
    # share outside the DEM's extent, from the geometry
    x0, y0, x1, y1 = _grid_bounds(shape, transform)
    box = shapely.box(x0, y0, x1, y1)
    area = np.where(ok, shapely.area(geoms), 0.0)
    inside = np.zeros(n, dtype=bool)
    inside[ok] = shapely.contains_properly(box, geoms[ok])
    frac_in = np.where(inside, 1.0, 0.0)
    part = ok & ~inside
    if part.any():
        inter = shapely.area(shapely.intersection(geoms[part], box))
        frac_in[part] = np.where(
            area[part] > 0, inter / np.where(area[part] > 0, area[part], 1), 0.0
        )
    frac_in = np.clip(frac_in, 0.0, 1.0)

    codes = np.arange(1, n + 1, dtype=np.int32)
    sel = ok & (frac_in > 0)
    # a town's parcels fit 16 bits (2 bytes per cell, not 4); the codes are widened
    # before any arithmetic (_pair_counts)
    dtype = "uint16" if n < U16_PARCELS else "int32"
    if sel.any():
        with _gc_paused():
            raster = features.rasterize(
                _geojson_pairs(geoms[sel], codes[sel]),
                out_shape=(h, w),
                transform=transform,
                fill=0,
                dtype=dtype,
            )
    else:
        raster = np.zeros((h, w), dtype)
    overlapping = _overlapping(geoms, sel, (h, w), transform)
    windows = [_window_cells(geoms[i], (h, w), transform) for i in overlapping]
    return ParcelCells(raster, frac_in, ok, sel, (h, w), transform, overlapping, windows)


def _overlapping(
    geoms: np.ndarray, sel: np.ndarray, shape: tuple[int, int], transform: Any
) -> np.ndarray:
    """Rows (of ``geoms``, among ``sel``) of the parcels that share a cell centre with
    another parcel: condominium stacks, a lot inside a larger one, slivers.

    Found on the grid, not by comparing polygons (``overlaps`` / ``contains`` on 13,000
    real parcels took 4 s; this 1.6 s on a 45M-cell grid): the parcels are burned once
    more, adding 1 per parcel, and the parcels holding a cell centre counted twice or
    more are those.  Neighbours that only share a boundary are not.
    """
    from rasterio import features
    from rasterio.enums import MergeAlg

    idx = np.flatnonzero(sel)
    if idx.size < 2:
        return np.zeros(0, dtype=np.int64)
    h, w = shape
    with _gc_paused():
        # 8 bits: GDAL's sum saturates at 255 (it does not wrap), and only "> 1" is read
        cover = features.rasterize(
            _geojson_pairs(geoms[idx], np.ones(idx.size, dtype=np.int32)),
            out_shape=(h, w),
            transform=transform,
            fill=0,
            dtype="uint8",
            merge_alg=MergeAlg.add,
        )
    flat = cover.reshape(-1)
    step = 1 << 22  # in blocks: no grid-sized mask
    multi = np.concatenate(
        [np.flatnonzero(flat[a : a + step] > 1) + a for a in range(0, flat.size, step)]
    )
    del cover, flat
    if multi.size == 0:
        return np.zeros(0, dtype=np.int64)
    r, c = np.divmod(multi, w)
    r, c = r + 0.5, c + 0.5
    t = transform
    centres = shapely.points(t.a * c + t.b * r + t.c, t.d * c + t.e * r + t.f)
    _, hit = shapely.STRtree(geoms[idx]).query(centres, predicate="intersects")
    return idx[np.unique(hit)]


def _window_cells(
    geom: Any, shape: tuple[int, int], transform: Any
) -> tuple[int, int, int, int, np.ndarray]:
    """One parcel rasterized alone in the window of the grid its bounds cover:
    ``(row0, col0, rows, cols, bits)``, ``bits`` the packed bool mask of its cells."""
    from affine import Affine
    from rasterio import features

    h, w = shape
    x0, y0, x1, y1 = shapely.bounds(geom)
    xs, ys = np.array([x0, x1, x0, x1]), np.array([y0, y0, y1, y1])
    inv = ~transform
    cols = inv.a * xs + inv.b * ys + inv.c
    rows = inv.d * xs + inv.e * ys + inv.f
    r0 = int(np.clip(np.floor(rows.min()), 0, h))
    r1 = int(np.clip(np.ceil(rows.max()), 0, h))
    c0 = int(np.clip(np.floor(cols.min()), 0, w))
    c1 = int(np.clip(np.ceil(cols.max()), 0, w))
    if r1 <= r0 or c1 <= c0:
        return r0, c0, 0, 0, np.zeros(0, np.uint8)
    mask = features.rasterize(
        _geojson_pairs(np.array([geom], dtype=object), [1]),
        out_shape=(r1 - r0, c1 - c0),
        transform=Affine(  # the window's: its corner is cell (r0, c0) of the grid
            transform.a,
            transform.b,
            transform.c + transform.a * c0 + transform.b * r0,
            transform.d,
            transform.e,
            transform.f + transform.d * c0 + transform.e * r0,
        ),
        fill=0,
        dtype="uint8",
    )
    return r0, c0, r1 - r0, c1 - c0, np.packbits(mask.reshape(-1).astype(bool))


def _overlay(
    par: gpd.GeoDataFrame, ov: OverlandResult, cells: ParcelCells | None = None
) -> pd.DataFrame:
    """Count (parcel, label) cell pairs: the parcels' shares of each target's catchment."""
    h, w = ov.shape
    geoms = par.geometry.values
    n = len(par)
    pid = par["parcel_id"].to_numpy()
    if cells is None or cells.shape != (h, w) or cells.transform != ov.transform:
        cells = parcel_cells(geoms, (h, w), ov.transform)
    raster, ok, sel = cells.raster, cells.ok, cells.sel
    frac_in = cells.frac_in.copy()  # changed below for tiny parcels off the grid
    nl = int(max(ov.labels.max(), ov.targets.index.max() if len(ov.targets) else 0)) + 1
    key, cnt = _pair_counts(raster, ov.labels, nl)
    del raster
    if len(cells.overlapping):  # their cells one by one, not what the shared raster kept
        keep = ~np.isin(key // nl - 1, cells.overlapping)
        keys, cnts = [key[keep]], [cnt[keep]]
        for i, (r0, c0, hh, ww, bits) in zip(cells.overlapping, cells.windows, strict=True):
            mask = np.unpackbits(bits, count=hh * ww).reshape(hh, ww)
            codes = np.where(mask > 0, np.int32(i + 1), np.int32(0))
            k, c = _pair_counts(codes, ov.labels[r0 : r0 + hh, c0 : c0 + ww], nl)
            keys.append(k)
            cnts.append(c)
        key, cnt = np.concatenate(keys), np.concatenate(cnts)
    kp, kl = np.divmod(key, nl)
    total = np.bincount(kp, weights=cnt, minlength=n + 1)
    rows = pd.DataFrame({"_p": kp - 1, "label": kl, "fraction": cnt / total[kp]})
    rows["method"] = "d8_catchment"
    # parcels with no cell centre inside: the cell under the representative point
    covered = np.zeros(n, dtype=bool)
    covered[kp - 1] = True
    small = np.flatnonzero(sel & ~covered)
    if small.size:
        on_grid = geoms[small].copy()  # of a parcel across the DEM's edge, its part on it
        edge = frac_in[small] < 1.0
        if edge.any():
            on_grid[edge] = shapely.intersection(
                on_grid[edge], shapely.box(*_grid_bounds((h, w), ov.transform))
            )
        rp = shapely.point_on_surface(on_grid)
        cols, rws = to_colrow(ov.transform, shapely.get_x(rp), shapely.get_y(rp))
        r = np.floor(rws).astype(np.int64)
        c = np.floor(cols).astype(np.int64)
        on = (r >= 0) & (r < h) & (c >= 0) & (c < w)
        lab_s = np.full(small.size, -1, dtype=np.int64)
        lab_s[on] = ov.labels[r[on], c[on]]
        srows = pd.DataFrame(
            {"_p": small, "label": lab_s, "fraction": 1.0, "method": "representative_point"}
        )
        rows = pd.concat([rows, srows[srows["label"] >= 0]], ignore_index=True)
        off_small = small[~on]
        if off_small.size:  # representative point off the grid: all of it is off the DEM
            frac_in[off_small] = 0.0
    rows["fraction"] = rows["fraction"] * frac_in[rows["_p"].to_numpy()]

    t = ov.targets
    lab_arr = rows["label"].to_numpy()
    known = lab_arr > 0
    tk = np.full(len(rows), "unknown", dtype=object)
    tid = np.full(len(rows), None, dtype=object)
    reason = np.full(len(rows), "the DEM has no data under this part of the parcel", dtype=object)
    meth = rows["method"].to_numpy().astype(object)
    meth[~known] = "dem_nodata"
    rw = np.full(len(rows), None, dtype=object)
    pw = np.full(len(rows), None, dtype=object)
    kidx = np.flatnonzero(known)
    if kidx.size:
        tt = t.reindex(lab_arr[kidx])
        tk[kidx] = tt["target_kind"].to_numpy()
        tid[kidx] = tt["target_id"].to_numpy()
        reason[kidx] = tt["reason"].to_numpy()
        meth[kidx[tt["method"].to_numpy() == "no_target"]] = "no_target"
        wat = kidx[tt["target_kind"].to_numpy() == "water_direct"]
        names = t["name"].reindex(lab_arr[wat]).to_numpy()
        rw[wat] = [nm if isinstance(nm, str) else i for nm, i in zip(names, tid[wat], strict=True)]
        pw[wat] = tid[wat]
    # off_dem edge/hole targets carry no id
    offk = tk == "off_dem"
    tid[offk] = None
    unk = tk == "unknown"
    tid[unk] = None
    small_note = meth == "representative_point"
    reason = np.where(
        small_note,
        "smaller than a DEM cell: the cell under its representative point " + reason.astype(str),
        reason,
    )
    out = pd.DataFrame(
        {
            "parcel_id": pid[rows["_p"].to_numpy()],
            "target_kind": tk,
            "target_id": tid,
            "fraction": rows["fraction"].to_numpy(),
            "method": meth,
            "reason": reason,
            "receiving_water": rw,
            "pwl_id": pw,
        }
    )
    out = out.groupby(
        ["parcel_id", "target_kind", "target_id", "method", "reason"],
        dropna=False,
        sort=False,
        as_index=False,
    ).agg(
        fraction=("fraction", "sum"),
        receiving_water=("receiving_water", "first"),
        pwl_id=("pwl_id", "first"),
    )
    # the part outside the DEM
    off = np.flatnonzero(frac_in < 1.0 - 1e-9)
    if off.size:
        miss = ok[off]
        reasons = np.where(
            miss, "this part of the parcel lies outside the DEM", "the parcel has no geometry"
        )
        kinds = np.where(miss, "off_dem", "unknown")
        extra = pd.DataFrame(
            {
                "parcel_id": pid[off],
                "target_kind": kinds,
                "target_id": None,
                "fraction": 1.0 - frac_in[off],
                "method": np.where(miss, "off_dem", "no_target"),
                "reason": reasons,
                "receiving_water": None,
                "pwl_id": None,
            }
        )
        out = pd.concat([out, extra], ignore_index=True)
    out = out[out["fraction"] > 0]
    return out


def _geojson_pairs(geoms: Any, values: Any) -> list[tuple[dict, Any]]:
    """``(GeoJSON dict, value)`` pairs for :func:`rasterio.features.rasterize`.

    The same dicts as :func:`ms4map.hydrology.overland.geojson_shapes` (``shapely.to_geojson``
    writes coordinates at full precision, so the round trip is exact), but polygons
    are built straight from their coordinate arrays (``shapely.get_rings`` /
    ``get_coordinates`` and one ``tolist``): parsing 64k parcels' GeoJSON text costs
    about 1.5 s, this about 0.1 s.  Other geometry types, empty polygons and 3-D ones
    (their dicts keep the z) still go through GeoJSON.  Call it with the garbage
    collector paused (:func:`_gc_paused`): hundreds of thousands of new lists otherwise
    set off collections that scan the whole heap again and again (0.45 s instead of
    0.04 s for the ``tolist`` alone on the county benchmark).
    """
    geoms = np.asarray(geoms, dtype=object)
    values = list(values)
    out: list[Any] = [None] * len(geoms)
    fast = (shapely.get_type_id(geoms) == 3) & ~shapely.is_empty(geoms) & ~shapely.has_z(geoms)
    poly = np.flatnonzero(fast)
    if poly.size:
        rings, ring_of = shapely.get_rings(geoms[poly], return_index=True)
        xy, coord_ring = shapely.get_coordinates(rings, return_index=True)
        cuts = np.searchsorted(coord_ring, np.arange(len(rings) + 1)).tolist()
        pts = xy.tolist()
        ring_coords = [pts[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        rcuts = np.searchsorted(ring_of, np.arange(poly.size + 1)).tolist()
        for j, i in enumerate(poly.tolist()):
            out[i] = {"type": "Polygon", "coordinates": ring_coords[rcuts[j] : rcuts[j + 1]]}
    rest = np.flatnonzero(~fast)
    if rest.size:
        for i, t in zip(rest.tolist(), shapely.to_geojson(geoms[rest]), strict=True):
            out[i] = json.loads(t)
    return list(zip(out, values, strict=True))


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while many small objects are built
    (nothing built there forms a cycle); restores the previous state."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _pair_counts(
    codes: np.ndarray, labels: np.ndarray, nl: int, *, block_rows: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``code * nl + label`` keys of the cells with ``code > 0`` and their cell
    counts (what ``np.unique(..., return_counts=True)`` on those cells gives).

    Counted over runs of equal (code, label) along the rows: a parcel spans many cells
    of one label in a row, so the sort works on runs (about 2M on a 36M-cell county)
    instead of every cell.  The runs are found in blocks of ``block_rows`` rows (small
    temporary arrays that stay in the cache); a run cut by a block edge is two runs of
    the same key, which the final sum per key joins again.
    """
    h = codes.shape[0] if codes.ndim == 2 else 1
    c2 = codes.reshape(h, -1)
    l2 = labels.reshape(h, -1)
    keys, lengths = [], []
    for r0 in range(0, h, block_rows):
        c = np.ascontiguousarray(c2[r0 : r0 + block_rows]).reshape(-1)
        lab = np.ascontiguousarray(l2[r0 : r0 + block_rows]).reshape(-1)
        if c.size == 0:
            continue
        change = np.empty(c.size, dtype=bool)
        change[0] = True
        np.not_equal(c[1:], c[:-1], out=change[1:])
        change[1:] |= lab[1:] != lab[:-1]
        starts = np.flatnonzero(change)
        length = np.diff(starts, append=c.size)
        rc = c[starts]
        keep = rc > 0
        keys.append(rc[keep].astype(np.int64) * nl + lab[starts[keep]])
        lengths.append(length[keep])
    if not keys:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    runs = np.concatenate(keys)
    key, inv = np.unique(runs, return_inverse=True)
    cnt = np.bincount(inv, weights=np.concatenate(lengths), minlength=key.size)
    return key, cnt.astype(np.int64)


def _grid_bounds(shape: tuple[int, int], t: Any) -> tuple[float, float, float, float]:
    """``(minx, miny, maxx, maxy)`` of a grid of ``shape`` cells with transform ``t``."""
    h, w = shape
    xs = (t.c, t.c + t.a * w)
    ys = (t.f, t.f + t.e * h)
    return min(xs), min(ys), max(xs), max(ys)


def _fallback(par: gpd.GeoDataFrame, inlets: gpd.GeoDataFrame | None, max_m: float) -> pd.DataFrame:
    """No DEM: the nearest inlet within ``max_m`` takes the whole parcel."""
    n = len(par)
    base = pd.DataFrame(
        {
            "parcel_id": par["parcel_id"].to_numpy(),
            "target_kind": "unknown",
            "target_id": None,
            "fraction": 1.0,
            "method": "no_dem",
            "reason": f"no DEM, and no inlet within {max_m:g} m",
            "receiving_water": None,
            "pwl_id": None,
        }
    )
    if inlets is None or len(inlets) == 0 or n == 0 or par.crs is None:
        return base
    dist = metres_to_crs_units(par.crs, max_m)
    left = gpd.GeoDataFrame({"_p": np.arange(n)}, geometry=par.geometry.values, crs=par.crs)
    right = gpd.GeoDataFrame(
        {"node_id": inlets["node_id"].astype(str).to_numpy()},
        geometry=inlets.geometry.values,
        crs=inlets.crs,
    ).to_crs(par.crs)
    j = gpd.sjoin_nearest(left, right, how="left", max_distance=dist, distance_col="_d")
    j = j[j["node_id"].notna()].drop_duplicates("_p")
    if len(j):
        idx = j["_p"].to_numpy()
        unit = dist / max_m if max_m else 1.0
        base.loc[idx, "target_kind"] = "inlet"
        base.loc[idx, "target_id"] = j["node_id"].to_numpy()
        base.loc[idx, "method"] = "nearest_inlet"
        base.loc[idx, "reason"] = [
            f"no DEM: nearest inlet, {d / unit:.0f} m away (within {max_m:g} m)"
            for d in j["_d"].to_numpy()
        ]
    return base
