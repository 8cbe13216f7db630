"""The map widget every page shares: st_folium updated in place, clicks answered on the server.

The base map (basemap tiles, hillshade, offline scripts) stays the same between
reruns so the browser keeps its Leaflet map; the layers for the current view
travel as ``feature_group_to_add`` and replace the previous ones.  Only the
click position, the bounds and the zoom come back (``returned_objects``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import streamlit as st

from ..outputs import maps
from . import state
from .static import asset_base_url, offline_css, offline_js

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = [
    "MapOutput",
    "default_view",
    "map_controls",
    "pending_click",
    "show_map",
    "view_from_st_folium",
]


@dataclass
class MapOutput:
    """What came back from the browser this run."""

    view: maps.MapView
    click: tuple[float, float] | None = None  # (lat, lng) of a new click
    stats: maps.RenderStats = field(default_factory=maps.RenderStats)


def default_view(ws: Workspace) -> maps.MapView:
    """The whole-town view: the extent of the parcels (else of every layer)."""
    import numpy as np

    frames = [
        f
        for role in ("parcels", "conveyances", "structures", "outfalls", "ms4_area")
        if (f := ws.layers.get(role)) is not None and len(f) and hasattr(f, "total_bounds")
    ]
    if not frames:
        return maps.MapView(42.5, -74.5, 43.5, -73.5, 9)
    b = np.array([f.total_bounds for f in frames[:1]])
    return maps.MapView.from_bounds(tuple(b[0]), ws.crs)


#: A map narrower or lower than this many pixels was reported before it was laid out.
MIN_MAP_PX = 64


def view_from_st_folium(
    out: dict | None, default: maps.MapView, *, height_px: int = 600
) -> maps.MapView:
    """The view reported by ``st_folium`` (``bounds`` and ``zoom``), else ``default``.

    A box of (almost) no width or height is a map reported before the page laid it out
    (its frame not yet sized): what a map of ``height_px`` shows around its centre at its
    zoom is taken instead, else every layer and highlight clipped to that box would be
    left out until the user moves the map.
    """
    if not out:
        return default
    b = out.get("bounds") or {}
    sw, ne = b.get("_southWest") or {}, b.get("_northEast") or {}
    try:
        south, west = float(sw["lat"]), float(sw["lng"])
        north, east = float(ne["lat"]), float(ne["lng"])
    except (KeyError, TypeError, ValueError):
        return default
    if not all(map(math.isfinite, (south, west, north, east))) or north < south:
        return default
    zoom = out.get("zoom")
    zoom = int(zoom) if zoom is not None else default.zoom
    laid_out = maps.MapView.around(
        (south + north) / 2, (west + east) / 2, zoom, width_px=MIN_MAP_PX, height_px=MIN_MAP_PX
    )
    if (
        north - south < laid_out.north - laid_out.south
        or east - west < laid_out.east - laid_out.west
    ):
        return maps.MapView.around(
            laid_out.center[0], laid_out.center[1], zoom, height_px=height_px
        )
    return maps.MapView(south, west, north, east, zoom)


def map_controls(key: str, *, layers: dict[str, Any], default_hidden: tuple[str, ...] = ()) -> dict:
    """Basemap, hillshade and layer toggles (plain widgets, in the sidebar)."""
    sb = st.sidebar
    basemap = sb.selectbox(
        "Basemap",
        list(maps.BASEMAPS),
        index=0,
        key=f"{key}_basemap",
        help="'none' works offline; the others load tiles from the internet.",
    )
    hill = sb.checkbox("Hillshade from the DEM", value=True, key=f"{key}_hillshade")
    options = [k for k in maps.LAYER_ORDER if k in layers]
    visible = sb.multiselect(
        "Layers",
        options,
        default=[k for k in options if k not in default_hidden],
        format_func=lambda k: maps.LAYER_LABELS.get(k, k),
        key=f"{key}_layers",
    )
    return {"basemap": basemap, "hillshade": hill, "visible": visible}


def pending_click(key: str) -> tuple[float, float, int] | None:
    """A click the browser reported since the last run, as ``(lat, lng, zoom)``.

    Reading it *before* drawing lets a page answer the click in the same run
    (select the feature, draw its path) instead of rerunning once more.
    """
    out = st.session_state.get(key)
    lc = (out or {}).get("last_clicked") if isinstance(out, dict) else None
    if not lc or lc == st.session_state.get(f"{key}_last_click"):
        return None
    st.session_state[f"{key}_last_click"] = lc
    try:
        return float(lc["lat"]), float(lc["lng"]), int(out.get("zoom") or 16)
    except (KeyError, TypeError, ValueError):
        return None


def show_map(
    key: str,
    ws: Workspace,
    layers: dict[str, Any],
    *,
    visible: list[str] | None = None,
    highlights: dict[str, Any] | None = None,
    basemap: str = "none",
    hillshade: bool = False,
    focus: Any = None,
    height: int = 600,
    focus_zoom: tuple[int, int] = (16, 19),
) -> MapOutput:
    """Draw the map and return the view and any new click.

    The legend of the visible layers and of the highlights is drawn under the map (the
    map itself takes the page's whole width).

    Parameters
    ----------
    key : str
        Widget key (one per page).
    ws : Workspace
    layers : dict of str to MapLayer
    visible : list of str, optional
    highlights : dict, optional
        ``label -> GeoSeries`` drawn on top (selection, path, upstream ...).
    focus : shapely geometry, optional
        Jump the map to this geometry (working CRS) when it changes.
    focus_zoom : (int, int)
        Zoom range of that jump (a point: street level; an area: fit it).
    """
    from streamlit_folium import st_folium

    home = default_view(ws)
    previous = st.session_state.get(key)
    view = view_from_st_folium(previous, home, height_px=height)
    center = zoom = None
    if focus is not None and not focus.is_empty:
        fview = maps.MapView.from_bounds(tuple(focus.buffer(60).bounds), ws.crs)
        fit = maps.fit_zoom(fview.south, fview.west, fview.north, fview.east, height_px=height)
        fview.zoom = min(max(fit, focus_zoom[0]), focus_zoom[1])
        center, zoom = list(fview.center), fview.zoom
        if st.session_state.get(f"{key}_focus") != (center, zoom):
            st.session_state[f"{key}_focus"] = (center, zoom)
            # what the map will show there (it may be wider than the focus itself)
            view = maps.MapView.around(*center, zoom, height_px=height)
    hs = state.hillshade_url(ws) if hillshade else None
    static_ok = bool(st.get_option("server.enableStaticServing")) and st.session_state.get(
        "ms4map_assets", False
    )
    asset_url = asset_base_url(st.get_option("server.baseUrlPath") or "") if static_ok else None
    m = maps.base_map(
        home,
        basemap=basemap,
        asset_js=offline_js(asset_url) if asset_url is not None else None,
        asset_css=offline_css(asset_url) if asset_url is not None else None,
        hillshade_url=hs[0] if hs else None,
        hillshade_bounds=hs[1] if hs else None,
    )
    stats = maps.RenderStats()
    layers, case_groups, case_legend = _records_overlay(ws, layers, visible)
    groups = maps.render_layers(layers, view, visible=visible, crs=ws.crs, stats=stats)
    groups += case_groups
    if highlights:
        groups.append(maps.highlight_group(highlights, view=view))
    with st.container():
        out = st_folium(
            m,
            key=key,
            height=height,
            use_container_width=True,
            returned_objects=["last_clicked", "bounds", "zoom"],
            feature_group_to_add=groups or None,
            center=center,
            zoom=zoom,
        )
        for note in stats.notes:
            st.caption(note)
        if not static_ok:
            st.caption(
                "Offline map scripts are not served (start with `ms4map app` or with "
                "server.enableStaticServing = true); the map loads Leaflet from the internet."
            )
        st.markdown(
            maps.legend_html(layers, visible=visible, highlights=highlights, horizontal=True),
            unsafe_allow_html=True,
        )
    if case_legend:
        st.markdown(case_legend, unsafe_allow_html=True)
    click = None
    lc = (out or {}).get("last_clicked")
    if lc and lc != st.session_state.get(f"{key}_last_click"):
        # a click not yet consumed by pending_click (first run after a reload)
        st.session_state[f"{key}_last_click"] = lc
        try:
            click = (float(lc["lat"]), float(lc["lng"]))
        except (KeyError, TypeError, ValueError):
            click = None
    return MapOutput(
        view=view_from_st_folium(out, view, height_px=height), click=click, stats=stats
    )


def _records_overlay(ws: Workspace, layers: dict[str, Any], visible: list[str] | None) -> tuple:
    """Outfalls coloured by their derived status and the open cases (IDDE records), and
    the SMPs coloured by their inspection status."""
    out: tuple = (layers, [], "")
    if visible is None or "outfalls" in visible:
        try:
            from .records_map import map_overlay

            out = map_overlay(ws, layers)
        except Exception as exc:  # noqa: BLE001 - the map draws without records
            st.caption(f"IDDE records not shown on the map: {exc}")
    try:
        from .records_ui import reader
        from .smp_map import smp_overlay

        group, legend = smp_overlay(ws, reader())
    except Exception as exc:  # noqa: BLE001 - the map draws without the SMPs
        st.caption(f"SMPs not shown on the map: {exc}")
        return out
    if group is None:
        return out
    return out[0], [*out[1], group], f"{out[2]}<br>{legend}" if out[2] else legend
