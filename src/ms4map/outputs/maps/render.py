"""folium maps of the layers: the layers in view, highlights, the base map, a static map and the legend.

The map never ships every feature: each render takes the current view (a
:class:`~.view.MapView`), picks the features in it with the spatial index, drops
parcels below a zoom level unless few are in view, simplifies at about half a screen
pixel (never finer than 0.5 m), rounds coordinates to 6 decimals (~0.1 m) and sends one
style per category instead of one per feature.  folium is imported inside the functions
(it is only needed to draw).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import numpy as np

from ...core.units import metres_per_unit
from ...io.styles import AMBIGUOUS_COLOUR, AMBIGUOUS_DASH
from .layers import LAYER_ORDER, OUTFALL_PRIORITY, MapLayer
from .view import MapView, clip_to_view, display_geojson, flow_arrows, in_view

__all__ = [
    "BASEMAPS",
    "HIGHLIGHT_COLOUR",
    "HIGHLIGHT_STYLES",
    "PATH_COLOUR",
    "RenderStats",
    "base_map",
    "highlight_group",
    "legend_html",
    "render_layers",
    "static_map",
]


#: Basemaps: name -> (tiles URL or None, attribution).  "none" works offline.
BASEMAPS: dict[str, tuple[str | None, str]] = {
    "none": (None, ""),
    "OpenStreetMap (online)": (
        "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        "&copy; OpenStreetMap contributors",
    ),
    "Esri World Imagery (online)": (
        "https://server.arcgisonline.com/ArcGIS/rest/services/World_Imagery/MapServer/tile/{z}/{y}/{x}",
        "Tiles &copy; Esri",
    ),
}


PATH_COLOUR = "#ff00ff"
HIGHLIGHT_COLOUR = "#00e5ff"
#: Highlights drawn over the layers: label -> (colour, dash or None, legend words).
#: A label not listed is drawn in :data:`HIGHLIGHT_COLOUR` and named as is.
HIGHLIGHT_STYLES: dict[str, tuple[str, str | None, str]] = {
    "selection": (HIGHLIGHT_COLOUR, None, "selected"),
    "path": (PATH_COLOUR, None, "path to the outfall (pipes and ditches)"),
    "overland step": (PATH_COLOUR, "6 6", "overland step (parcel to inlet or water)"),
    "outfalls reached": (PATH_COLOUR, None, "outfall(s) reached"),
    "ambiguous path": (
        AMBIGUOUS_COLOUR,
        AMBIGUOUS_DASH,
        "ambiguous path: the network cannot tell which outfall takes the flow",
    ),
    "candidate outfalls": (AMBIGUOUS_COLOUR, AMBIGUOUS_DASH, "candidate outfalls (uncertain)"),
    "sewershed": (HIGHLIGHT_COLOUR, "8 4", "sewershed of the outfall"),
    "upstream network": ("#ffd400", None, "network upstream of the outfall"),
    "contributing parcels": (HIGHLIGHT_COLOUR, None, "parcels draining to the outfall"),
}


@dataclass
class RenderStats:
    """What one render sent: features per layer and notes for the user."""

    features: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def render_layers(
    layers: dict[str, MapLayer],
    view: MapView,
    *,
    visible: Iterable[str] | None = None,
    crs: Any = None,
    min_tolerance_m: float = 0.5,
    decimals: int = 6,
    stats: RenderStats | None = None,
) -> list[Any]:
    """folium FeatureGroups of the visible layers, limited to ``view``.

    Parameters
    ----------
    layers : dict of str to MapLayer
    view : MapView
    visible : iterable of str, optional
        Layer keys to draw (default all).
    crs : CRS, optional
        Working CRS (default: the first layer's).
    min_tolerance_m : float
        Finest simplification, in metres (the tolerance is half a screen pixel,
        never below this).
    decimals : int
        Coordinate decimals sent to the browser.
    stats : RenderStats, optional
        Filled with the feature counts and notes (e.g. "zoom in to see parcels").

    Returns
    -------
    list of folium.FeatureGroup
        One group per drawn layer, in :data:`LAYER_ORDER`.
    """
    import folium

    keys = [k for k in LAYER_ORDER if k in layers and (visible is None or k in set(visible))]
    if not keys:
        return []
    crs = crs if crs is not None else layers[keys[0]].frame.crs
    bbox = view.bbox(crs)
    unit = metres_per_unit(crs, default=1.0)
    mpp = view.metres_per_pixel()
    tol = max(min_tolerance_m, 0.5 * mpp) / unit
    groups = []
    for key in keys:
        layer = layers[key]
        sub = in_view(layer.frame, bbox)
        if view.zoom < layer.min_zoom and len(sub) > layer.max_features // 2:
            if stats is not None:
                stats.notes.append(
                    f"{layer.label}: {len(sub):,} in view; zoom in (to level {layer.min_zoom}) to draw them."
                )
                stats.features[key] = 0
            continue
        if len(sub) > layer.max_features:
            if stats is not None:
                stats.notes.append(
                    f"{layer.label}: {len(sub):,} in view, the first {layer.max_features:,} drawn; zoom in."
                )
            sub = sub.iloc[: layer.max_features]
        if layer.geom != "point" and len(sub):
            sub = clip_to_view(sub, bbox)
        if stats is not None:
            stats.features[key] = len(sub)
        fg = folium.FeatureGroup(name=layer.label, show=True)
        parts = list(sub.groupby("category", sort=True))
        if key == "outfalls":  # later groups are drawn on top: the important statuses last
            parts.sort(key=lambda kv: OUTFALL_PRIORITY.get(str(kv[0]), 0))
        for cat, part in parts:
            _add_geojson(fg, part, layer, str(cat), tol=tol, decimals=decimals)
        if layer.arrows and len(sub) and view.zoom >= 16:
            arrows = flow_arrows(sub, size=7 * mpp / unit)
            for cat, part in arrows.groupby("category", sort=True):
                colour = layer.colour(str(cat))
                folium.GeoJson(
                    display_geojson(part, decimals=decimals),
                    style_function=_const_style({"color": colour, "weight": 2, "opacity": 1}),
                    interactive=False,
                ).add_to(fg)
        groups.append(fg)
    return groups


def _const_style(style: dict[str, Any]):
    def fn(_feature: Any) -> dict[str, Any]:
        return style

    return fn


def _add_geojson(
    fg: Any, part: gpd.GeoDataFrame, layer: MapLayer, cat: str, *, tol: float, decimals: int
) -> None:
    import folium

    colour = layer.colour(cat)
    data = display_geojson(part, tolerance=tol if layer.geom != "point" else 0.0, decimals=decimals)
    if layer.geom == "point":
        style = {
            "color": "#222222",
            "weight": layer.weight,
            "fillColor": colour,
            "fillOpacity": layer.fill_opacity,
            "radius": layer.radius,
        }
        if cat in layer.dash_categories:  # uncertain (an ambiguous outfall): dashed ring
            style["dashArray"] = layer.dash_categories[cat]
        folium.GeoJson(
            data,
            marker=folium.CircleMarker(radius=layer.radius, fill=True),
            style_function=_const_style(style),
        ).add_to(fg)
    elif layer.geom == "line":
        style = {"color": colour, "weight": layer.weight, "opacity": 0.9}
        if cat in layer.dash_categories:  # uncertain (an ambiguous outfall)
            style["dashArray"] = layer.dash_categories[cat]
        folium.GeoJson(data, style_function=_const_style(style)).add_to(fg)
    else:
        style = {
            "color": colour if layer.key not in ("parcels",) else "#555555",
            "weight": layer.weight,
            "fillColor": colour,
            "fillOpacity": layer.fill_opacity,
        }
        if layer.dash:
            style["dashArray"] = layer.dash
        folium.GeoJson(data, style_function=_const_style(style)).add_to(fg)


def highlight_group(
    items: dict[str, gpd.GeoSeries | gpd.GeoDataFrame],
    *,
    name: str = "Selection",
    colours: dict[str, str] | None = None,
    decimals: int = 6,
    view: MapView | None = None,
    max_features: int = 5000,
) -> Any:
    """A FeatureGroup that draws highlighted geometries (selection, path, upstream).

    With ``view``, only what is in view is sent (clipped, simplified at half a
    pixel, at most ``max_features`` per item), like the layers themselves.
    """
    import folium

    fg = folium.FeatureGroup(name=name)
    colours = colours or {}
    for label, geoms in items.items():
        if geoms is None or not len(geoms):
            continue
        frame = geoms if isinstance(geoms, gpd.GeoDataFrame) else gpd.GeoDataFrame(geometry=geoms)
        tol = 0.0
        if view is not None and frame.crs is not None and not frame.crs.is_geographic:
            bbox = view.bbox(frame.crs)
            frame = in_view(frame.reset_index(drop=True), bbox)
            if len(frame) > max_features:
                frame = frame.iloc[:max_features]
            if len(frame):
                frame = clip_to_view(frame, bbox)
            tol = max(0.5, 0.5 * view.metres_per_pixel()) / metres_per_unit(frame.crs, default=1.0)
            if not len(frame):
                continue
        colour, dash, _words = HIGHLIGHT_STYLES.get(label, (HIGHLIGHT_COLOUR, None, label))
        colour = colours.get(label, colour)
        style = {
            "color": colour,
            "weight": 4
            if label in ("path", "overland step", "upstream network", "ambiguous path")
            else 3,
            "fillOpacity": 0.15,
            "fillColor": colour,
        }
        if dash:
            style["dashArray"] = dash
        is_pt = frame.geometry.geom_type.isin(["Point", "MultiPoint"]).to_numpy()
        if is_pt.any():  # circle markers (a plain GeoJson point is an image marker)
            folium.GeoJson(
                display_geojson(frame[is_pt], decimals=decimals),
                marker=folium.CircleMarker(radius=7, fill=True),
                style_function=_const_style(style | {"fillOpacity": 0.6}),
            ).add_to(fg)
        if not is_pt.all():
            folium.GeoJson(
                display_geojson(frame[~is_pt], tolerance=tol, decimals=decimals),
                style_function=_const_style(style),
            ).add_to(fg)
    return fg


def base_map(
    view: MapView,
    *,
    basemap: str = "none",
    asset_js: Sequence[tuple[str, str]] | None = None,
    asset_css: Sequence[tuple[str, str]] | None = None,
    hillshade_url: str | None = None,
    hillshade_bounds: list[list[float]] | None = None,
    hillshade_opacity: float = 0.5,
) -> Any:
    """An empty map at ``view``: basemap tiles (or none) and the hillshade image.

    Parameters
    ----------
    view : MapView
    basemap : str
        A key of :data:`BASEMAPS`; ``"none"`` needs no network.
    asset_js, asset_css : list of (name, URL), optional
        folium's ``default_js`` / ``default_css`` for locally served Leaflet/jQuery (the
        app passes :func:`ms4map.app.static.offline_js` / ``offline_css``); ``None`` keeps
        folium's CDN links.
    hillshade_url : str, optional
        URL (or data URL) of a hillshade PNG; ``hillshade_bounds`` its
        ``[[south, west], [north, east]]``.
    """
    import folium

    if basemap not in BASEMAPS:
        raise ValueError(f"Unknown basemap: {basemap!r}, select from {list(BASEMAPS)}")
    tiles, attr = BASEMAPS[basemap]
    m = folium.Map(
        location=list(view.center),
        zoom_start=view.zoom,
        tiles=None,
        control_scale=True,
        prefer_canvas=False,
        max_zoom=21,
    )
    if asset_js is not None:
        m.default_js = list(asset_js)
    if asset_css is not None:
        m.default_css = list(asset_css)
    if tiles is not None:
        folium.TileLayer(
            tiles=tiles, attr=attr, name=basemap, max_zoom=21, max_native_zoom=19
        ).add_to(m)
    if hillshade_url is not None and hillshade_bounds is not None:
        overlay = folium.raster_layers.ImageOverlay(
            image="data:image/png;base64,",  # placeholder: folium would read a local path
            bounds=hillshade_bounds,
            opacity=hillshade_opacity,
            name="Hillshade",
            interactive=False,
            zindex=1,
        )
        overlay.url = hillshade_url  # a served URL (or data URL) used as is
        overlay.add_to(m)
    return m


def static_map(
    layers: dict[str, MapLayer],
    *,
    view: MapView | None = None,
    visible: Iterable[str] | None = None,
    highlights: dict[str, gpd.GeoSeries | gpd.GeoDataFrame] | None = None,
    basemap: str = "none",
    asset_js: Sequence[tuple[str, str]] | None = None,
    asset_css: Sequence[tuple[str, str]] | None = None,
    legend: bool = True,
) -> Any:
    """A complete folium map (for HTML export or a notebook): layers, highlights, legend;
    ``asset_js``/``asset_css`` as in :func:`base_map`."""
    import folium

    if view is None:
        frames = [lyr.frame for lyr in layers.values() if len(lyr.frame)]
        if not frames:
            raise ValueError("No layer has features to map.")
        b = np.array([f.total_bounds for f in frames])
        view = MapView.from_bounds(
            (b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()), frames[0].crs
        )
    m = base_map(view, basemap=basemap, asset_js=asset_js, asset_css=asset_css)
    for fg in render_layers(layers, view, visible=visible):
        fg.add_to(m)
    if highlights:
        highlight_group(highlights).add_to(m)
    if legend:
        html = legend_html(layers, visible=visible, highlights=highlights)
        m.get_root().html.add_child(
            folium.Element(
                '<div style="position:fixed;bottom:24px;left:10px;z-index:9999;background:white;'
                "padding:6px 8px;border:1px solid #999;font:12px sans-serif;max-height:60%;"
                f'overflow:auto">{html}</div>'
            )
        )
    m.fit_bounds([[view.south, view.west], [view.north, view.east]])
    return m


def _swatch(geom: str, colour: str, dash: str | None = None) -> str:
    if geom == "point":
        return (
            '<span style="display:inline-block;width:10px;height:10px;border-radius:50%;'
            f'background:{colour};border:1px {"dashed" if dash else "solid"} #222"></span>'
        )
    if geom == "line":
        style = "dashed" if dash else "solid"
        return (
            '<span style="display:inline-block;width:18px;height:0;'
            f'border-top:3px {style} {colour};vertical-align:middle"></span>'
        )
    if dash:  # an outline only
        return (
            '<span style="display:inline-block;width:14px;height:10px;'
            f'border:2px dashed {colour}"></span>'
        )
    return (
        '<span style="display:inline-block;width:14px;height:10px;'
        f'background:{colour};opacity:0.8;border:1px solid #555"></span>'
    )


def _highlight_geom(label: str, geoms: Any) -> str:
    kinds = set(getattr(geoms, "geom_type", [])) if geoms is not None else set()
    if kinds and kinds <= {"Point", "MultiPoint"}:
        return "point"
    if kinds and kinds <= {"LineString", "MultiLineString"}:
        return "line"
    if label in ("path", "overland step", "upstream network", "ambiguous path"):
        return "line"
    if label in ("outfalls reached", "candidate outfalls"):
        return "point"
    return "polygon"


def legend_html(
    layers: dict[str, MapLayer],
    *,
    visible: Iterable[str] | None = None,
    only_present: bool = True,
    highlights: dict[str, Any] | None = None,
    horizontal: bool = False,
) -> str:
    """An HTML legend: one swatch per category of each visible layer.

    Parameters
    ----------
    highlights : dict, optional
        ``label -> geometries`` drawn on top (as given to :func:`highlight_group`):
        each gets an entry under "Highlighted" (:data:`HIGHLIGHT_STYLES` words).
    horizontal : bool
        Lay the layers side by side (a legend under a full-width map).
    """
    vis = None if visible is None else set(visible)
    parts = []
    if highlights:
        rows = []
        for label, geoms in highlights.items():
            if geoms is None or not len(geoms):
                continue
            colour, dash, words = HIGHLIGHT_STYLES.get(label, (HIGHLIGHT_COLOUR, None, label))
            geom = _highlight_geom(label, getattr(geoms, "geometry", geoms))
            rows.append(f"{_swatch(geom, colour, dash)}&nbsp;{_esc(words)}")
        if rows:
            parts.append("<b>Highlighted</b><br>" + "<br>".join(rows))
    for key in LAYER_ORDER:
        if key not in layers or (vis is not None and key not in vis):
            continue
        layer = layers[key]
        present = (
            set(map(str, layer.frame["category"].unique())) if only_present else set(layer.styles)
        )
        cats = [c for c in layer.styles if c in present] + sorted(present - set(layer.styles))
        if not cats:
            continue
        rows = []
        for c in cats:
            sw = _swatch(layer.geom, layer.colour(c), layer.dash or layer.dash_categories.get(c))
            rows.append(f"{sw}&nbsp;{_esc(c.replace('_', ' '))}")
        parts.append(f"<b>{_esc(layer.label)}</b><br>" + "<br>".join(rows))
    if horizontal:
        cells = "".join(
            f'<div style="margin:0 18px 6px 0;vertical-align:top">{p}</div>' for p in parts
        )
        return (
            '<div class="ms4map-legend" style="font-size:12px;line-height:1.5;display:flex;'
            f'flex-wrap:wrap">{cells}</div>'
        )
    return (
        '<div class="ms4map-legend" style="font-size:12px;line-height:1.5">'
        + "<br>".join(parts)
        + "</div>"
    )


def _esc(text: str) -> str:
    return html.escape(str(text))
