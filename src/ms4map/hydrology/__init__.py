"""Surface flow on the DEM: every cell routed to its first MS4 target, water, depression or DEM edge.

:func:`route` is the recipe (:mod:`.routing`); it returns an :class:`OverlandResult`
(:mod:`.result`, with :func:`catchment_polygons`), which :func:`surface_path` and
:func:`upstream_mask` query (:mod:`.queries`).  The steps live in :mod:`.targets` (the
targets on the grid), :mod:`.conditioning` (the fill, closed depressions, targets as
sinks) and :mod:`.routing` (D8 directions, first target); grid helpers in :mod:`.cells`,
the compiled fill in :mod:`._fill` (whitebox-workflows' algorithm; :mod:`._whitebox`,
the session the tests check it against).  The storm network itself is
:mod:`ms4map.network`.  Details in ``docs/hydrology.md``.
"""

from .cells import mean_slopes, polygonize, to_colrow, walk_down
from .conditioning import condition_dem
from .queries import surface_path, upstream_mask, upstream_mask_of
from .result import DEFAULTS, ROUTING_STEP, TARGET_KINDS, OverlandResult, catchment_polygons
from .routing import check_layer_crs, d8_pointer, route
from .targets import TargetGrid, network_targets, rasterize_targets

__all__ = [
    "DEFAULTS",
    "ROUTING_STEP",
    "TARGET_KINDS",
    "OverlandResult",
    "TargetGrid",
    "catchment_polygons",
    "check_layer_crs",
    "condition_dem",
    "d8_pointer",
    "mean_slopes",
    "network_targets",
    "polygonize",
    "rasterize_targets",
    "route",
    "surface_path",
    "to_colrow",
    "upstream_mask",
    "upstream_mask_of",
    "walk_down",
]
