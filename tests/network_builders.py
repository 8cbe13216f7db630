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


def network_workspace(st_rows, cv_rows, **more) -> Workspace:
    st = gpd.GeoDataFrame(
        pd.DataFrame(
            [
                {"struct_id": i, "kind": k, "invert_elev": np.nan, "geometry": Point(x, y)}
                for i, k, x, y in st_rows
            ]
        ),
        geometry="geometry",
        crs=UTM,
    )
    recs = []
    for r in cv_rows:
        rec = {
            "conv_id": None,
            "kind": "pipe",
            "from_id": None,
            "to_id": None,
            "us_invert": np.nan,
            "ds_invert": np.nan,
            "diameter_in": np.nan,
            "flow_dir": None,
        }
        rec.update(r)
        rec["geometry"] = LineString(rec.pop("coords"))
        recs.append(rec)
    cv = gpd.GeoDataFrame(pd.DataFrame(recs), geometry="geometry", crs=UTM)
    return Workspace(
        path=None, crs=UTM, layers={"structures": st, "conveyances": cv, **more}, source_crs=UTM
    )


def far_water() -> gpd.GeoDataFrame:
    return gpd.GeoDataFrame(
        {"wb_id": ["W"], "name": ["Pond"]},
        geometry=[Polygon([(5000, 5000), (5100, 5000), (5100, 5100)])],
        crs=UTM,
    )
