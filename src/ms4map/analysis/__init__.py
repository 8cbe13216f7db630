"""Analysis of a pipeline result the map, the IDDE pages and the reports share:
:mod:`.paths` (a feature's way to its receiving water) and :mod:`.outfalls` (what
drains to an outfall, the outfall inventory); :mod:`.frames` holds their small helpers."""

from ..core.lazy import lazy_submodules

__getattr__ = lazy_submodules(__name__, ("frames", "outfalls", "paths"))
