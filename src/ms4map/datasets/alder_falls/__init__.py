"""Build the bundled demo town: the Town and Village of Alder Falls, Saratoga County, NY.

A fictional upstate New York town (about 4 x 3.5 km, UTM 18N) made so that every
feature of ms4map has something real to show: a DEM with ridges, a river terrace, a
creek valley, a lake with its phosphorus TMDL watershed and a glacial kettle (a
closed depression); a village street grid with catch basins, manholes and pipes
draining to outfalls on the creek and the river; rural roads with ditches and
culverts; about 3,000 tax parcels; and a handful of *planted defects*
(:data:`PLANTED_DEFECTS`) and *scenario parcels* (:data:`SCENARIO_PARCELS`,
:data:`HAND_CHECKS`) that tests and documentation refer to.

:func:`build_demo` is deterministic: the same seed gives the same layers and the
same DEM array (only GeoPackage timestamps differ).  ``ms4map demo`` calls it.

Design notes (the coordinates below are local metres from the DEM's south-west
corner, easting ``u`` and northing ``v``; the real coordinates add :data:`ORIGIN`):

* River: the Kenyon River runs north-south at ``u`` 3730-3790, flowing south.
  Between River Road (``u`` 3552.5) and the river a terrace has a sharp crest at
  ``u`` = 3620: west of it the land drains to River Road, east of it straight to the
  river.
* Creek: the Alder Kill enters in the west and crosses the village at ``v`` ~1750 to
  the river.  Tamarack Lake (north-west) drains by Tamarack Brook to the creek.
* Curbed village streets are 1-cell troughs in the DEM with a raised shoulder and a
  shallow sag at each catch basin, so surface runoff really reaches the inlets.
  Rural roads have ditches burnt 0.6 m deep, falling monotonically to their outfall.
* Planar / ridge "pads" make the hand-check parcels exactly predictable.
"""

from __future__ import annotations

from .build import DemoBuild, build_demo, build_layers
from .spec import (
    CRS,
    DEFAULT_SEED,
    DEM_NAME,
    GPKG_NAME,
    HAND_CHECKS,
    NODATA,
    NODATA_HOLE,
    ORIGIN,
    PLANTED_DEFECTS,
    SCENARIO_PARCELS,
    SEWER_DISTRICT,
)

__all__ = [
    "CRS",
    "DEFAULT_SEED",
    "DEM_NAME",
    "GPKG_NAME",
    "HAND_CHECKS",
    "NODATA",
    "NODATA_HOLE",
    "ORIGIN",
    "PLANTED_DEFECTS",
    "SCENARIO_PARCELS",
    "SEWER_DISTRICT",
    "DemoBuild",
    "build_demo",
    "build_layers",
]
