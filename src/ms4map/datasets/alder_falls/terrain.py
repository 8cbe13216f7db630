"""The demo town's DEM: base terrain, river, creek, kettle, and the roads and ditches burnt in."""

from __future__ import annotations

from typing import Any

import numpy as np

from .grid import _box_dist, _chainage_field, _grid, _line_cells, _rc, _seg_dist
from .roads import _curbed_lines
from .spec import (
    BROOK_LINE,
    CELL,
    COMMERCIAL_LOT,
    CREEK_BED,
    CREEK_LINE,
    CREST_U,
    HC1_PAD,
    HC2_CB_V,
    HC2_CREST,
    HC2_PAD,
    HC3_CB_V,
    HILL_U,
    KETTLE_C,
    LAKE_AB,
    LAKE_C,
    LAKE_LEVEL,
    NCOLS,
    NROWS,
    RIVER_E,
    RIVER_RD_U,
    RIVER_W,
)


# ======================================================================================
# Terrain
# ======================================================================================
def _river_level(V):
    return 58.0 + 0.0008 * V


def _base_terrain(U, V):
    W = _river_level(V)
    ns = 0.010 * np.abs(V - 1750.0)  # the land falls 1 % towards the creek
    taper = np.clip((RIVER_RD_U - U) / 150.0, 0.0, 1.0)
    z = W + 5.15 + 0.022 * np.clip(RIVER_RD_U - U, 0, None) + ns * taper
    zc = W + 6.5
    m = (U > RIVER_RD_U) & (U < CREST_U)
    z[m] = (zc - 0.02 * (CREST_U - U))[m]
    m = (U >= CREST_U) & (U < 3725.0)
    z[m] = (zc - (4.0 / 105.0) * (U - CREST_U))[m]
    m = (U >= 3725.0) & (U < RIVER_W)
    z[m] = (W + 2.5 - 0.5 * (U - 3725.0))[m]
    m = (U >= RIVER_W) & (U < RIVER_E)
    z[m] = (W - 0.3 - 1.2 * (1 - ((U - 3760.0) / 30.0) ** 2))[m]
    m = U >= RIVER_E
    z[m] = (W + 1.0 + 0.03 * (U - RIVER_E))[m]
    return z


def _terrain(rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
    """Natural terrain (before roads and ditches) and channel fields for re-burning."""
    from scipy import ndimage

    U, V = _grid()
    z = _base_terrain(U, V)
    # ridges: Stony Hill (south) and Pine Ridge (north)
    z += 10.0 * np.exp(-((_seg_dist(U, V, (2000, 150), (2800, 450)) / 120.0) ** 2))
    z += 12.0 * np.exp(-((_seg_dist(U, V, (1900, 3150), (3300, 3350)) / 130.0) ** 2))
    # gentle hills, masked out where the design must be exact
    noise = ndimage.gaussian_filter(rng.standard_normal((NROWS, NCOLS)), sigma=50, mode="reflect")
    noise *= 1.6 / noise.std()
    w = np.clip((3400.0 - U) / 150.0, 0.0, 1.0)
    for box in (HC1_PAD, HC2_PAD, COMMERCIAL_LOT):
        w *= np.clip(_box_dist(U, V, box) / 80.0, 0.0, 1.0)
    w *= np.clip((np.hypot(U - KETTLE_C[0], V - KETTLE_C[1]) - 90.0) / 80.0, 0.0, 1.0)
    z += noise * w

    # pads for the hand-check parcels
    r0, c_h = _rc(HILL_U, 1000.0)
    zh_col = z[:, c_h].copy()  # natural profile of Hill St
    pad1 = zh_col[:, None] + 0.04 * (HILL_U - U)
    wt = np.clip(1.0 - _box_dist(U, V, HC1_PAD) / 30.0, 0.0, 1.0)
    z = z + wt * (pad1 - z)

    rh, ch = _rc(HILL_U, 880.0)
    _, cr = _rc(RIVER_RD_U, 880.0)
    zh, zr = float(z[rh, ch]), float(z[rh, cr])
    crest = zh + 0.03 * (HC2_CREST - HILL_U)
    s_e = (crest - 0.225 - zr) / (RIVER_RD_U - (HC2_CREST + 7.5))
    ridge = np.where(
        U < HC2_CREST,
        crest - 0.03 * (HC2_CREST - U),
        np.where(
            U < HC2_CREST + 7.5,
            crest - 0.03 * (U - HC2_CREST),
            crest - 0.225 - s_e * (U - HC2_CREST - 7.5),
        ),
    )
    pad2 = ridge + 0.01 * np.abs(V - HC2_CB_V)  # a V-swale leads each half to its inlet
    wt = np.clip(1.0 - _box_dist(U, V, HC2_PAD) / 30.0, 0.0, 1.0)
    wt[U > HC2_PAD[2]] = 0.0  # leave the river terrace alone
    z = z + wt * (pad2 - z)

    # HC3: a V-swale across the river terrace, level with the River Rd inlet
    swale = 0.01 * np.maximum(0.0, 45.0 - np.abs(V - HC3_CB_V))
    m3 = (U > RIVER_RD_U) & (U < 3725.0)
    z = np.where(m3, z - swale, z)

    # glacial kettle: a closed depression about 2.5 m deep
    r = np.hypot(U - KETTLE_C[0], V - KETTLE_C[1])
    zk = float(z[_rc(*KETTLE_C)]) - 4.0
    z = np.minimum(z, np.where(r < 25.0, zk + 0.01 * r, zk + 0.25 + 0.07 * (r - 25.0)))

    # lake basin (flat water surface) and its bowl
    a, b = LAKE_AB
    lake = ((U - LAKE_C[0]) / a) ** 2 + ((V - LAKE_C[1]) / b) ** 2 <= 1.0
    d_lake = ndimage.distance_transform_edt(~lake) * CELL
    z = np.minimum(z, LAKE_LEVEL + 0.5 + 0.025 * d_lake)
    z[lake] = LAKE_LEVEL

    # creek and brook valleys
    d_c, bed_c = _chainage_field(U, V, CREEK_LINE, list(CREEK_BED))
    creek_prof = np.where(
        d_c < 3.0, 0.0, np.where(d_c < 8.0, 1.8 * (d_c - 3.0) / 5.0, 1.8 + 0.05 * (d_c - 8.0))
    )
    brook_end_bed = (
        float(np.interp(_creek_chainage(BROOK_LINE[-1]), [0, _creek_len()], list(CREEK_BED))) + 0.2
    )
    d_b, bed_b = _chainage_field(U, V, BROOK_LINE, [LAKE_LEVEL - 0.3, brook_end_bed])
    brook_prof = np.where(
        d_b < 2.5, 0.0, np.where(d_b < 6.0, 1.2 * (d_b - 2.5) / 3.5, 1.2 + 0.06 * (d_b - 6.0))
    )
    zb = bed_b + brook_prof
    zb[lake] = LAKE_LEVEL
    z = np.minimum(z, zb)
    z = np.minimum(z, bed_c + creek_prof)
    z[lake] = LAKE_LEVEL
    fields = {
        "d_creek": d_c,
        "bed_creek": bed_c,
        "creek_prof": creek_prof,
        "d_brook": d_b,
        "bed_brook": bed_b,
        "brook_prof": brook_prof,
        "lake": lake,
        "U": U,
        "V": V,
    }
    return z, fields


def _creek_len() -> float:
    import shapely

    return shapely.LineString(CREEK_LINE).length


def _creek_chainage(p: tuple[float, float]) -> float:
    import shapely

    return float(shapely.LineString(CREEK_LINE).project(shapely.Point(p)))


# ======================================================================================
# DEM assembly
# ======================================================================================
def _burn_roads(z, nat, roads, cb_points):
    """Curbed streets: 1-cell trough, raised shoulders, a sag at each catch basin."""
    from scipy import ndimage

    mask = np.zeros(z.shape, bool)
    for _, g in _curbed_lines(roads):
        for r, c in _line_cells(list(g.coords)):
            mask[r, c] = True
    cbm = np.zeros(z.shape, bool)
    for p in cb_points:
        cbm[_rc(*p)] = True
    d_cb = ndimage.distance_transform_edt(~cbm) * CELL
    zr = nat - 0.3 - 0.3 * np.clip(1.0 - d_cb / 40.0, 0.0, 1.0)
    d, (ri, ci) = ndimage.distance_transform_edt(~mask, return_indices=True)
    d = d * CELL
    zr_near = np.where(mask, zr, 0.0)[ri, ci]
    shoulder = (d > 0) & (d <= 10.0 + 1e-6)
    out = z.copy()
    out[mask] = zr[mask]
    out[shoulder] = np.maximum(z, zr_near + 0.15 + 0.02 * d)[shoulder]
    return out


def _burn_ditches(z, nat, ditch_lines):
    """Ditches 0.6 m deep, falling at least 1 cm per cell along the digitised (flow)
    direction, and culverts breached through the road (as in a hydro-conditioned DEM)."""
    prof_by_line: list[Any] = []
    level: dict[str, float] = {}  # water level at headwalls, carried through culverts
    for ln in ditch_lines:
        cells = _line_cells(ln["coords"], step=0.5)
        if ln["kind"] == "culvert":
            top = level.get(ln["from_id"], nat[cells[0]] - 0.6)
            for k, (r, c) in enumerate(cells):
                z[r, c] = min(z[r, c], top - 0.01 * (k + 1))
            end = top - 0.01 * (len(cells) + 1)
            level[ln["to_id"]] = min(level.get(ln["to_id"], end), end)
            prof_by_line.append(None)
            continue
        prof = np.array([nat[r, c] - 0.6 for r, c in cells])
        if ln["from_id"] in level:
            prof[0] = min(prof[0], level[ln["from_id"]] - 0.01)
        for k in range(1, len(prof)):
            prof[k] = min(prof[k], prof[k - 1] - 0.01)
        for (r, c), p in zip(cells, prof, strict=True):
            z[r, c] = min(z[r, c], p)
        prof_by_line.append(((cells[0], float(prof[0])), (cells[-1], float(prof[-1]))))
        if ln["to_id"]:
            level[ln["to_id"]] = min(level.get(ln["to_id"], float(prof[-1])), float(prof[-1]))
    return z, prof_by_line


def _quantise(z: np.ndarray) -> np.ndarray:
    return (np.round(z * 256.0) / 256.0).astype(np.float32)
