"""Terrains designed for the overland tests, each with its answer worked out by hand.

No tests here: builders for ``test_hydrology_overland_terrains.py``.  Grids are 2 m cells in
UTM 18N (``test_hydrology_overland_fixtures``); rows grow southwards, columns eastwards.  Slopes
are given per cell: 0.06 m per 2 m cell is 3 %, 0.02 is 1 %.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from test_hydrology_overland_fixtures import CRS18, cell_box, xy

from ms4map.io.workspace import Workspace

LOT = 0.06  # lots fall 3 % towards the street
GUTTER = 0.02  # gutters fall 1 % towards their inlet
CURB = 0.15  # curb height: the lot's edge stands this far above the gutter
CROWN = 0.15  # the street's crown stands this far above its gutters


@dataclass
class Terrain:
    """A designed DEM with its targets and lots (parcels as cell boxes)."""

    z: np.ndarray
    inlets: dict[str, tuple[int, int]] = field(default_factory=dict)
    waters: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    lots: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)

    def inlet_gdf(self) -> gpd.GeoDataFrame:
        return gpd.GeoDataFrame(
            {"node_id": list(self.inlets)},
            geometry=[shapely.Point(xy(*rc)) for rc in self.inlets.values()],
            crs=CRS18,
        )

    def water_gdf(self) -> gpd.GeoDataFrame | None:
        if not self.waters:
            return None
        return gpd.GeoDataFrame(
            {"wb_id": list(self.waters), "name": [f"{k} Creek" for k in self.waters]},
            geometry=[shapely.LineString([xy(*p) for p in pts]) for pts in self.waters.values()],
            crs=CRS18,
        )

    def lot_cells(self, lot: str) -> tuple[slice, slice]:
        r0, c0, r1, c1 = self.lots[lot]
        return slice(r0, r1), slice(c0, c1)


def _gutter_profile(cols: np.ndarray, inlet_cols: list[int]) -> np.ndarray:
    """Gutter elevation above its inlets: 1 % up from the nearest inlet column."""
    d = np.min([np.abs(cols - c) for c in inlet_cols], axis=0)
    return GUTTER * d


def curbed_street() -> Terrain:
    """A curbed street closed at both ends by crowned intersections, lots both sides.

    160 x 61 cells plus a creek.  The street runs east-west on rows 26-34: gutters on
    rows 26 (north) and 34 (south), crown on row 30 (``CROWN`` above the gutters,
    falling linearly to each).  Along the street (columns 10-149) each gutter rises
    1 % from its inlets at columns 45 and 114, so its high point lies between
    columns 79 and 80.  The intersections (columns 0-9 and 150-159) stand 0.3 m above
    the street's ends, so the street is a closed trough: before this rule it was
    filled up to the intersections (101.0 m) and spilled east down to the creek
    on column 166.  Lots on rows 0-25 and 35-60 rise 3 % away from the street from a
    curb ``CURB`` above the gutter.

    Worked out by hand: a lot cell's steepest drop is straight towards the street
    (0.06 per 2 m against (0.06 + 0.02) / 2.83 m diagonally), so it reaches the gutter
    in its own column, then runs along the gutter to the inlet on its side of the high
    point (columns <= 79: the inlet at 45; >= 80: the one at 114).  So a lot of
    columns c0..c1-1 sends the share of its columns <= 79 to the west inlet and the
    rest to the east one, all to the inlets of its own side of the street.
    """
    h, w = 61, 170
    r, c = np.mgrid[0:h, 0:w].astype(float)
    street_c = np.clip(c, 10, 149)
    z_gutter = 100.0 + _gutter_profile(street_c, [45, 114])
    # intersections: 0.3 m above the street end they close
    z_gutter = np.where((c < 10) | (c >= 150), z_gutter + 0.3, z_gutter)
    dist_n = 26 - r  # cells north of the north gutter
    dist_s = r - 34  # cells south of the south gutter
    z = np.where(
        dist_n > 0,
        z_gutter + CURB + LOT * dist_n,
        np.where(
            dist_s > 0, z_gutter + CURB + LOT * dist_s, z_gutter + CROWN * (1 - np.abs(r - 30) / 4)
        ),
    )
    # east of the intersection the ground falls 2.5 % to the creek (column 166)
    east = c >= 160
    z = np.where(east, z - 0.05 * (np.minimum(c, 166) - 159) + 0.05 * np.maximum(c - 166, 0), z)
    lots = {}
    for side, (r0, r1) in {"N": (0, 26), "S": (35, 61)}.items():
        for k, c0 in enumerate(range(10, 150, 20)):
            lots[f"{side}{k + 1}"] = (r0, c0, r1, c0 + 20)
        lots[f"{side}R"] = (r0, 72, r1, 92)  # over the gutter's high point: 8 / 12 columns
    return Terrain(
        z=z,
        inlets={"IN1": (26, 45), "IN2": (26, 114), "IS1": (34, 45), "IS2": (34, 114)},
        waters={"EAST": [(0, 166), (60, 166)]},
        lots=lots,
    )


def street_share(lot: tuple[int, int, int, int]) -> float:
    """Share of a :func:`curbed_street` lot's columns west of the gutter's high point."""
    _, c0, _, c1 = lot
    cols = np.arange(c0, c1)
    return float((cols <= 79).mean())


def parking_sag(*, inlets: bool = True) -> Terrain:
    """A parking lot (rows 5-34, cols 5-44) sunk below a curb, draining to two catch basins.

    The pavement falls 1.5 % (0.03 per cell) in straight lines towards the nearer of
    two basins at (20, 14) and (20, 35) (a cone around each), so the ridge between
    them lies between columns 24 and 25.  The curb around it stands 0.3 m above the
    pavement's highest corner; outside, the ground falls away to the DEM edge.

    Worked out by hand: every pavement cell of columns <= 24 is nearer the west basin
    and descends its own cone to it; columns >= 25 go to the east one: 50 % / 50 %.
    Without the basins the pavement is a closed depression about 0.8 m deep and
    1,200 cells (4,800 m2) large: all of it internally drained (``depression``).
    """
    h, w = 40, 50
    r, c = np.mgrid[0:h, 0:w].astype(float)
    d = np.minimum(np.hypot(r - 20, c - 14), np.hypot(r - 20, c - 35))
    pave = 100.0 + 0.03 * d
    inside = (r >= 5) & (r < 35) & (c >= 5) & (c < 45)
    top = pave[inside].max()
    ring = np.maximum(np.maximum(5 - r, r - 34), np.maximum(5 - c, c - 44))  # cells outside
    z = np.where(inside, pave, top + 0.3 - 0.05 * (ring - 1))
    return Terrain(
        z=z,
        inlets={"CB1": (20, 14), "CB2": (20, 35)} if inlets else {},
        lots={"LOT": (5, 5, 35, 45)},
    )


def off_low_point_sag() -> Terrain:
    """A paved sag (rows 5-34, cols 5-34) whose low point (20, 20) holds no inlet; the
    one inlet sits 5 cells east of it, at (20, 25), 0.15 m higher.

    Worked out by hand: water collects at the low point, which fills (0.12 m, a noise
    pit) until it spills into the inlet through its neighbour (20, 24), the lowest
    cell next to the inlet (0.12 m above the low point); everything else descends the
    cone to the pool or to the inlet directly.  So 100 % of the lot reaches the inlet,
    none of it a depression or a pit.
    """
    h, w = 40, 40
    r, c = np.mgrid[0:h, 0:w].astype(float)
    pave = 100.0 + 0.03 * np.hypot(r - 20, c - 20)
    inside = (r >= 5) & (r < 35) & (c >= 5) & (c < 35)
    top = pave[inside].max()
    ring = np.maximum(np.maximum(5 - r, r - 34), np.maximum(5 - c, c - 34))
    z = np.where(inside, pave, top + 0.3 - 0.05 * (ring - 1))
    return Terrain(z=z, inlets={"CB": (20, 25)}, lots={"LOT": (5, 5, 35, 35)})


def stream_hollow() -> Terrain:
    """A valley whose stream is dammed by a road embankment without a culvert in the DEM.

    The valley (60 x 41 cells) falls 1 % north along column 20 and rises 4 % to each
    side; across rows 4-5 an embankment stands 3 m above the valley.  The mapped
    stream runs down the valley floor from row 55 to row 8.  Without the stream the
    hollow behind the embankment would be a real closed depression (about 1.5 m deep
    and far over 500 m2).

    Worked out by hand: the stream is an outlet, so the hollow is not filled; every
    cell of the valley sides south of the embankment descends (4 % sideways, against
    1 % along the valley) to the floor, where the stream is: lots on both sides drain
    100 % straight to the stream.
    """
    h, w = 60, 41
    r, c = np.mgrid[0:h, 0:w].astype(float)
    z = 100.0 + 0.02 * r + 0.08 * np.abs(c - 20)
    z = np.where((r >= 4) & (r <= 5), 103.0 + 0.08 * np.abs(c - 20), z)
    return Terrain(
        z=z,
        waters={"HOLLOW": [(55, 20), (8, 20)]},
        lots={"WEST": (10, 2, 50, 18), "EAST": (10, 23, 50, 39)},
    )


def ridge_lot() -> Terrain:
    """A lot on the ridge between two streets, each with one inlet.

    Gutters on rows 3 (north) and 36 (south) rise 1 % both ways from their inlets on
    column 15.  Between them the ground rises 3 % from a curb ``CURB`` above each
    gutter to a crest on rows 19 and 20 (the same height); north of row 3 and south
    of row 36 it rises again (the lots across the streets).

    Worked out by hand: a cell between the gutters falls straight towards the nearer
    gutter (3 % against (3 % + 1 %) / 1.41 diagonally): rows 4-19 to the north gutter,
    rows 20-35 to the south one (row 19's neighbours on row 20 are no lower), then
    along the gutter to its inlet.  The lot on rows 12-31, cols 5-24 sends rows 12-19
    (8 of 20) north: 40 % to ``N``, 60 % to ``S``.
    """
    h, w = 40, 30
    r, c = np.mgrid[0:h, 0:w].astype(float)
    zg = 100.0 + GUTTER * np.abs(c - 15)
    dist = np.where(r < 20, np.abs(r - 3), np.abs(r - 36))
    z = np.where(dist == 0, zg, zg + CURB + LOT * dist)
    return Terrain(z=z, inlets={"N": (3, 15), "S": (36, 15)}, lots={"RIDGE": (12, 5, 32, 25)})


def lots_gdf(t: Terrain, *, skip: tuple[str, ...] = ()) -> gpd.GeoDataFrame:
    """The lots of ``t`` (but ``skip``) as a canonical parcels layer."""
    ids = [k for k in t.lots if k not in skip]
    return gpd.GeoDataFrame(
        {
            "parcel_id": pd.array(ids, dtype="str"),
            "address": pd.array([None] * len(ids), dtype="str"),
            "owner": pd.array([None] * len(ids), dtype="str"),
            "owner_address": pd.array([None] * len(ids), dtype="str"),
            "prop_class": pd.array(["210"] * len(ids), dtype="str"),
            "acres": 0.1,
            "sewer": pd.array(["public"] * len(ids), dtype="str"),
            "septic_failure": pd.array([None] * len(ids), dtype="str"),
            "src_layer": pd.array(["parcels"] * len(ids), dtype="str"),
            "src_fid": range(1, len(ids) + 1),
        },
        geometry=[cell_box(*t.lots[k]) for k in ids],
        crs=CRS18,
    )


def street_workspace() -> Workspace:
    """:func:`curbed_street` as a workspace: each inlet piped east to outfall OF1 at the creek.

    The parcels are the 14 lots that do not overlap (not ``NR``/``SR``).
    """
    from test_hydrology_overland_fixtures import dem

    t = curbed_street()
    of = (30, 165)
    pts = {**t.inlets, "OF1": of}
    st = gpd.GeoDataFrame(
        {
            "struct_id": pd.array(list(pts), dtype="str"),
            "kind": pd.array(["catch_basin"] * 4 + ["outfall"], dtype="str"),
            "rim_elev": np.nan,
            "invert_elev": np.nan,
            "src_layer": pd.array(["structures"] * 5, dtype="str"),
            "src_fid": range(1, 6),
        },
        geometry=[shapely.Point(xy(*v)) for v in pts.values()],
        crs=CRS18,
    )
    links = [("C1", "IN1", "IN2"), ("C2", "IS1", "IS2"), ("C3", "IS2", "IN2"), ("C4", "IN2", "OF1")]
    n = len(links)
    cv = gpd.GeoDataFrame(
        {
            "conv_id": pd.array([a for a, _, _ in links], dtype="str"),
            "kind": pd.array(["pipe"] * n, dtype="str"),
            "from_id": pd.array([b for _, b, _ in links], dtype="str"),
            "to_id": pd.array([e for _, _, e in links], dtype="str"),
            "us_invert": np.nan,
            "ds_invert": np.nan,
            "diameter_in": 15.0,
            "rise_in": np.nan,
            "material": pd.array(["RCP"] * n, dtype="str"),
            "flow_dir": pd.array([None] * n, dtype="str"),
            "src_layer": pd.array(["conveyances"] * n, dtype="str"),
            "src_fid": range(1, n + 1),
        },
        geometry=[shapely.LineString([xy(*pts[b]), xy(*pts[e])]) for _, b, e in links],
        crs=CRS18,
    )
    outfalls = gpd.GeoDataFrame(
        {
            "outfall_id": pd.array(["OF1"], dtype="str"),
            "receiving_water": pd.array(["EAST Creek"], dtype="str"),
            "pwl_id": pd.array(["EAST"], dtype="str"),
            "status": pd.array(["unknown"], dtype="str"),
            "permit_id": pd.array([None], dtype="str"),
            "src_layer": pd.array(["outfalls"], dtype="str"),
            "src_fid": [1],
        },
        geometry=[shapely.Point(xy(*of))],
        crs=CRS18,
    )
    wb = t.water_gdf()
    wb["kind"] = pd.array(["creek"], dtype="str")
    wb["src_layer"] = pd.array(["waterbodies"], dtype="str")
    wb["src_fid"] = [1]
    wb["wb_id"] = wb["wb_id"].astype("str")
    wb["name"] = wb["name"].astype("str")
    layers = {
        "structures": st,
        "conveyances": cv,
        "outfalls": outfalls,
        "waterbodies": wb,
        "parcels": lots_gdf(t, skip=("NR", "SR")),
    }
    return Workspace(path=None, crs=CRS18, layers=layers, dem=dem(t.z))


def three_inlet_street() -> Terrain:
    """A street with one gutter and three inlets, lots on both sides (40 x 150 cells).

    The gutter runs along row 20 and rises 1 % (``GUTTER`` per cell) from the nearest of
    its inlets at columns 25, 70 and 121, so its high points lie between columns 47 and
    48 and between 95 and 96.  The street (rows 21-26) rises 0.0375 m per row away from
    the gutter; the north lots (rows 0-19) rise 3 % from a curb ``CURB`` above the gutter,
    the south lots (rows 27-39) 3 % from a curb above the street's south edge.

    Worked out by hand: a lot cell falls straight to the street (0.06 per 2 m against
    (0.06 + 0.02) / 2.83 m diagonally), a street cell diagonally towards the gutter's
    low side, and the gutter runs to the inlet on its side of the high point; no cell
    is lower than all its neighbours but the inlets, and every DEM edge cell has a lower
    neighbour inside.  So inlet ``A`` (column 25) drains columns 0-47 of every row,
    ``B`` (70) columns 48-95 and ``C`` (121) columns 96-149: boxes of 48, 48 and 54 by
    40 cells (7,680, 7,680 and 8,640 m2).
    """
    h, w = 40, 150
    r, c = np.mgrid[0:h, 0:w].astype(float)
    zg = 100.0 + _gutter_profile(c, [25, 70, 121])
    cross = 0.0375  # the street's cross slope per row
    z = np.where(
        r < 20,
        zg + CURB + LOT * (20 - r),
        np.where(r <= 26, zg + cross * (r - 20), zg + cross * 6 + CURB + LOT * (r - 26)),
    )
    return Terrain(
        z=z,
        inlets={"A": (20, 25), "B": (20, 70), "C": (20, 121)},
        lots={"NORTH": (0, 0, 20, 150), "SOUTH": (27, 0, 40, 150)},
    )


#: The hand-worked catchment of each inlet of :func:`three_inlet_street`: (r0, c0, r1, c1).
THREE_INLET_CATCHMENTS = {"A": (0, 0, 40, 48), "B": (0, 48, 40, 96), "C": (0, 96, 40, 150)}


def three_inlet_workspace() -> Workspace:
    """:func:`three_inlet_street` as a workspace: A -> B -> C piped on to outfall OF1 at
    (20, 140); the north lot is a one-family residence (class 210), the south one a
    commercial building (484)."""
    from test_hydrology_overland_fixtures import dem

    t = three_inlet_street()
    pts = {**t.inlets, "OF1": (20, 140)}
    st = gpd.GeoDataFrame(
        {
            "struct_id": pd.array(list(pts), dtype="str"),
            "kind": pd.array(["catch_basin"] * 3 + ["outfall"], dtype="str"),
            "rim_elev": np.nan,
            "invert_elev": [98.5, 98.2, 97.8, 97.5],
            "src_layer": pd.array(["structures"] * 4, dtype="str"),
            "src_fid": range(1, 5),
        },
        geometry=[shapely.Point(xy(*v)) for v in pts.values()],
        crs=CRS18,
    )
    links = [("P1", "A", "B"), ("P2", "B", "C"), ("P3", "C", "OF1")]
    n = len(links)
    cv = gpd.GeoDataFrame(
        {
            "conv_id": pd.array([a for a, _, _ in links], dtype="str"),
            "kind": pd.array(["pipe"] * n, dtype="str"),
            "from_id": pd.array([b for _, b, _ in links], dtype="str"),
            "to_id": pd.array([e for _, _, e in links], dtype="str"),
            "us_invert": [98.5, 98.2, 97.8],
            "ds_invert": [98.2, 97.8, 97.5],
            "diameter_in": 15.0,
            "rise_in": np.nan,
            "material": pd.array(["RCP", "HDPE", "RCP"], dtype="str"),
            "flow_dir": pd.array([None] * n, dtype="str"),
            "src_layer": pd.array(["conveyances"] * n, dtype="str"),
            "src_fid": range(1, n + 1),
        },
        geometry=[shapely.LineString([xy(*pts[b]), xy(*pts[e])]) for _, b, e in links],
        crs=CRS18,
    )
    outfalls = gpd.GeoDataFrame(
        {
            "outfall_id": pd.array(["OF1"], dtype="str"),
            "receiving_water": pd.array(["Test Creek"], dtype="str"),
            "pwl_id": pd.array(["1302-0001"], dtype="str"),
            "status": pd.array(["unknown"], dtype="str"),
            "permit_id": pd.array([None], dtype="str"),
            "src_layer": pd.array(["outfalls"], dtype="str"),
            "src_fid": [1],
        },
        geometry=[shapely.Point(xy(*pts["OF1"]))],
        crs=CRS18,
    )
    parcels = lots_gdf(t)
    parcels["prop_class"] = pd.array(["210", "484"], dtype="str")
    layers = {"structures": st, "conveyances": cv, "outfalls": outfalls, "parcels": parcels}
    return Workspace(path=None, crs=CRS18, layers=layers, dem=dem(t.z))
