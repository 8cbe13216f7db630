"""Questions asked of a pipeline :class:`~ms4map.pipeline.Result`, each ``verb(result, what)``.

:mod:`.queries`: where a point drains (:class:`DrainagePath`), what drains to a point
or an outfall, the drainage of any polygon; :mod:`.paths`: a feature's way to its
receiving water (:class:`PathResult`); :mod:`.outfalls`: what drains to an outfall
(:class:`OutfallArea`) and the permit's outfall inventory.  :mod:`.frames` holds their
small helpers.  The parcel drainage table itself is made in :mod:`ms4map.drainage`.
"""

from . import frames, outfalls, paths, queries
from .outfalls import OutfallArea, outfall_area, outfall_inventory
from .paths import PathResult, feature_path
from .queries import DrainagePath, polygon_drainage, what_drains_here, where_does_it_drain

__all__ = [
    "DrainagePath",
    "OutfallArea",
    "PathResult",
    "feature_path",
    "outfall_area",
    "outfall_inventory",
    "polygon_drainage",
    "what_drains_here",
    "where_does_it_drain",
    # the public modules
    "frames",
    "outfalls",
    "paths",
    "queries",
]
