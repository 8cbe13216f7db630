"""Surface flow on the DEM: :mod:`ms4map.hydrology.overland` routes every cell to its
first target (inlet, open conveyance or water); details in ``docs/hydrology.md``."""

from ..core.lazy import lazy_submodules

__getattr__ = lazy_submodules(__name__, ("overland",))
