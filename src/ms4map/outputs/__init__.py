"""What people read: folium maps, click identification and outfall PDFs
(:mod:`.maps`), determination reports (:mod:`.report`) and exports to GIS formats
(:mod:`.export`)."""

from ..core.lazy import lazy_submodules

__getattr__ = lazy_submodules(__name__, ("export", "maps", "report"))
