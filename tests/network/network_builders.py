"""Small storm networks built from rows, shared by the network tests."""

from __future__ import annotations

import re

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS
from shapely.geometry import LineString, Point, Polygon

from ms4map.io.workspace import Workspace

UTM = CRS.from_epsg(26918)
JUNCTION_ID = re.compile(r"\bJ\d+\b")


FEET = CRS.from_epsg(2263)  # NY State Plane Long Island, US survey feet


def structures(rows, crs=UTM) -> gpd.GeoDataFrame:
    """Structures from rows ``(id, kind, x, y[, invert[, rim]])``."""
    recs = []
    for r in rows:
        sid, kind, x, y, *rest = r
        recs.append(
            {
                "struct_id": sid,
                "kind": kind,
                "invert_elev": rest[0] if len(rest) > 0 else np.nan,
                "rim_elev": rest[1] if len(rest) > 1 else np.nan,
                "geometry": Point(x, y),
            }
        )
    return gpd.GeoDataFrame(pd.DataFrame(recs), geometry="geometry", crs=crs)


def conveyances(rows, crs=UTM) -> gpd.GeoDataFrame:
    """Conveyances from dicts with ``coords`` (a list of points or a geometry), an optional
    ``conv_id`` and any other attributes (the rest default to unknown)."""
    recs = []
    for r in rows:
        r = dict(r)
        coords = r.pop("coords")
        geom = coords if not isinstance(coords, list) else LineString(coords)
        rec = {
            "conv_id": r.pop("conv_id", None),
            "kind": r.pop("kind", "pipe"),
            "from_id": None,
            "to_id": None,
            "us_invert": np.nan,
            "ds_invert": np.nan,
            "diameter_in": np.nan,
            "flow_dir": None,
            "geometry": geom,
        }
        rec.update(r)
        recs.append(rec)
    return gpd.GeoDataFrame(pd.DataFrame(recs), geometry="geometry", crs=crs)


def ws_of(st=None, cv=None, crs=UTM, **more) -> Workspace:
    """A workspace of the layers given (structures ``st``, conveyances ``cv``, ``more``)."""
    layers = {}
    if st is not None:
        layers["structures"] = st
    if cv is not None:
        layers["conveyances"] = cv
    layers.update(more)
    return Workspace(path=None, crs=crs, layers=layers, source_crs=crs)


def network_workspace(st_rows, cv_rows, **more) -> Workspace:
    """A workspace in UTM from structure rows and conveyance dicts (see above)."""
    return ws_of(structures(st_rows), conveyances(cv_rows), **more)


def by_id(table):
    return table.set_index("struct_id")


def far_water() -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"wb_id": ["W"], "name": ["Pond"]},
        geometry=[Polygon([(5000, 5000), (5100, 5000), (5100, 5100)])],
        crs=UTM,
    )
