"""Parcel drainage: parcel -> inlet(s) / open conveyance / water / depression -> outfall -> water.

:mod:`.join` joins inlets and conveyances to their outfalls and waters through the storm
network, :mod:`.parcels` makes the parcel drainage table (its columns :data:`COLUMNS`, its
methods :data:`METHODS`) and :mod:`.sewersheds` one polygon per outfall.  The point and
polygon queries on a pipeline result (``where_does_it_drain``, ``what_drains_here``,
``polygon_drainage``) live in :mod:`ms4map.analysis`.
"""

from ..hydrology import TARGET_KINDS
from .join import NetworkJoin, network_join
from .parcels import (
    COLUMNS,
    DEFAULT_FALLBACK_M,
    METHODS,
    ParcelCells,
    parcel_cells,
    parcel_drainage,
)
from .sewersheds import sewersheds

__all__ = [
    "COLUMNS",
    "DEFAULT_FALLBACK_M",
    "METHODS",
    "TARGET_KINDS",
    "NetworkJoin",
    "ParcelCells",
    "network_join",
    "parcel_cells",
    "parcel_drainage",
    "sewersheds",
]
