"""folium maps of a workspace and its results, built for the browser's sake.

The door of :mod:`ms4map.outputs.maps`; its modules each do one job:

- :mod:`.layers`: :func:`build_layers`, workspace + results -> one :class:`MapLayer`
  per toggle (features in the working CRS, one display category each);
- :mod:`.view`: :class:`MapView` (EPSG:4326 bounds and a zoom) and what is sent for it
  (:func:`display_geojson`, clipped to the view, flow arrows);
- :mod:`.render`: :func:`render_layers` (layers + view -> folium FeatureGroups, limited
  to the view), :func:`base_map`, :func:`static_map`, :func:`highlight_group` and
  :func:`legend_html`;
- :mod:`.identify`: :func:`identify` (the feature under a click, on the server) and
  :func:`search_features`;
- :mod:`.hillshade`: :func:`hillshade`, a shaded-relief image of the DEM.

The printable outfall map is :mod:`ms4map.outputs.outfall_sheet`; a feature's path and
an outfall's area are :mod:`ms4map.analysis`'s.  folium is imported inside the
functions that draw.

Besides :data:`__all__`, the door keeps importable every other public name the old
``maps.py`` had (``# kept``: its re-exports of :mod:`ms4map.analysis` among them).
"""

from __future__ import annotations

from ...analysis import OutfallArea as OutfallArea
from ...analysis import PathResult as PathResult
from ...analysis import feature_path as feature_path
from ...analysis import outfall_area as outfall_area
from ...analysis import outfall_inventory as outfall_inventory
from ...analysis.outfalls import inventory_totals as inventory_totals  # kept: old maps.py name
from ...analysis.paths import OVERLAND_METHODS as OVERLAND_METHODS  # kept: old maps.py name
from ...analysis.paths import feature_attributes as feature_attributes  # kept: old maps.py name
from ...analysis.paths import feature_geometry as feature_geometry  # kept: tests/test_app_*
from ...analysis.paths import overland_steps as overland_steps  # kept: old maps.py name
from ...io.styles import OUTFALL_COLOURS as OUTFALL_COLOURS  # kept: tests/test_app_*
from .hillshade import hillshade, png_bytes
from .identify import build_search_index, identify, search_features
from .layers import BASE_LAYERS, LAYER_LABELS, LAYER_ORDER, MapLayer, build_layers
from .layers import parcel_categories as parcel_categories  # kept: old maps.py name
from .render import (
    BASEMAPS,
    RenderStats,
    base_map,
    highlight_group,
    legend_html,
    render_layers,
    static_map,
)
from .view import MapView, display_geojson, fit_zoom
from .view import clip_to_view as clip_to_view  # kept: old maps.py name
from .view import flow_arrows as flow_arrows  # kept: old maps.py name
from .view import metres_per_pixel as metres_per_pixel  # kept: old maps.py name

__all__ = [
    "BASEMAPS",
    "BASE_LAYERS",
    "LAYER_LABELS",
    "LAYER_ORDER",
    "MapLayer",
    "MapView",
    "RenderStats",
    "base_map",
    "build_layers",
    "build_search_index",
    "display_geojson",
    "fit_zoom",
    "highlight_group",
    "hillshade",
    "identify",
    "legend_html",
    "png_bytes",
    "render_layers",
    "search_features",
    "static_map",
]
