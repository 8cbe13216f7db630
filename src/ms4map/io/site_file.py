"""The ``--site-file`` reader: a site's outline as a polygon layer with a CRS.

The file is read as it is (``geopandas.read_file``), and refused with a message naming
the fix when it holds no polygon or no CRS.
"""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd

from ..core.errors import DataError, InputOpenError

__all__ = ["read_site_file"]


def read_site_file(path: str) -> gpd.GeoDataFrame:
    """The site polygon(s) of ``--site-file``: a polygon layer with a CRS.

    Parameters
    ----------
    path : str
        A GeoJSON, GeoPackage or Shapefile (with its ``.prj``) holding the site's outline.

    Returns
    -------
    geopandas.GeoDataFrame
        The file's features, ``attrs["source_name"]`` its file name.

    Raises
    ------
    InputOpenError
        The file does not exist or cannot be read.
    DataError
        It has no geometry, no feature, a geometry that is not a polygon, or no CRS;
        each message names the fix.
    """
    p = Path(path)
    if not p.exists():
        raise InputOpenError(f"--site-file {path!r} does not exist.")
    try:
        gdf = gpd.read_file(p)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a cannot-open error
        raise InputOpenError(f"Cannot read --site-file {path!r}: {exc}") from exc
    fix = (
        "Fix: give the site polygon as GeoJSON, GeoPackage or Shapefile (with its .prj), "
        "or name its parcels with --site ID[,ID...]."
    )
    if not isinstance(gdf, gpd.GeoDataFrame) or gdf.geometry.name not in gdf.columns:
        raise DataError(
            f"--site-file {path!r} is not a spatial file: it has no geometry (and no CRS). " + fix
        )
    if not len(gdf):
        raise DataError(f"--site-file {path!r} holds no feature.")
    geoms = gdf.geometry[gdf.geometry.notna() & ~gdf.geometry.is_empty]
    if not len(geoms):
        raise DataError(f"--site-file {path!r} has no geometry in any feature. " + fix)
    kinds = sorted(set(geoms.geom_type) - {"Polygon", "MultiPolygon"})
    if kinds:
        raise DataError(
            f"--site-file {path!r} holds {', '.join(kinds)} geometry; the site must be "
            "a polygon. Fix: draw the site's outline as a polygon."
        )
    if gdf.crs is None:
        raise DataError(
            f"--site-file {path!r} is a polygon file without a CRS, so it cannot be placed "
            "on the town's map. Fix: save it with its CRS (GeoJSON is EPSG:4326 by "
            "definition; a Shapefile needs its .prj)."
        )
    gdf.attrs["source_name"] = p.name
    return gdf
