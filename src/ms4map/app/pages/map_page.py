"""Map page: every layer with legend and toggles; click or search anything."""

from __future__ import annotations

import streamlit as st

from .. import mapview, records_map, state, widgets

PARCEL_COLOURINGS = {
    "drainage": "Drainage (where runoff goes)",
    "septic": "Septic flag",
    "condition_a": "Condition A screening",
}


def render() -> None:
    ctx = state.page("Map")
    if ctx is None:
        return
    ws, result = ctx.ws, ctx.result
    colour = st.sidebar.radio(
        "Colour parcels by",
        list(PARCEL_COLOURINGS),
        format_func=PARCEL_COLOURINGS.get,
        key="map_parcel_colour",
    )
    flags = state.septic_flags(ws, result) if colour == "septic" else None
    screened = state.parcel_screening(ws, result) if colour == "condition_a" else None
    septic = None if flags is None else flags.table
    screening = None if screened is None else screened.table
    if colour in ("septic", "condition_a") and result is None:
        st.sidebar.caption("Parcel colours need the drainage result (see the message above).")
    shown = screened if colour == "condition_a" else flags if colour == "septic" else None
    missing = list(shown.missing_layers) if shown is not None else []
    if colour == "septic":
        missing = [m for m in missing if m in ("impairments", "tmdl_watersheds")]
    if missing:
        from ...rules.waters import missing_layer_reason

        st.sidebar.warning(
            (
                "Condition A is undetermined wherever it would be 'no' (orange, not green). "
                if colour == "condition_a"
                else "Special conditions can be missing from the septic colours. "
            )
            + state.app_fixes(" ".join(missing_layer_reason(m) for m in missing))
        )
    layers = state.map_layers(ws, result, parcel_colour=colour, septic=septic, screening=screening)
    layers = records_map.layers_with_status(ws, layers)  # a click picks by derived status
    controls = mapview.map_controls(
        "map", layers=layers, default_hidden=("sewer_districts", "ms4_area", "tmdl_watersheds")
    )
    with st.sidebar:
        hit = widgets.search_box(ws, "map_search")
    if hit is not None and st.session_state.get("map_search_last") != hit:
        st.session_state["map_search_last"] = hit
        st.session_state["map_selected"] = hit
    _map_fragment(ws, result, layers, controls)


@st.fragment
def _map_fragment(ws, result, layers, controls) -> None:
    from ...analysis import outfall_area
    from ...analysis.paths import feature_geometry
    from ...outputs import maps

    click = mapview.pending_click("map_main")
    if click is not None:  # answered in this run: no second rerun
        found = maps.identify(
            layers, click[0], click[1], zoom=click[2], visible=controls["visible"]
        )
        if found is not None:
            st.session_state["map_selected"] = found
    sel = st.session_state.get("map_selected")
    geom = feature_geometry(ws, *sel, result=result) if sel else None
    highlights = {}
    path = widgets.downstream_path(ws, result, *sel) if sel else None
    area = None
    if sel and sel[0] == "outfalls" and result is not None:
        area = outfall_area(result, sel[1])  # what drains there, on the map too
        if len(area.sewershed):
            highlights["sewershed"] = area.sewershed
        if area.edges is not None and len(area.edges):
            highlights["upstream network"] = area.edges.geometry
    if geom is not None:
        highlights["selection"] = _series(geom, ws.crs)
    if path is not None:
        highlights.update(path.highlights())
        if sel[0] == "outfalls":  # the outfall is the selection itself
            highlights.pop("outfalls reached", None)
    out = mapview.show_map(
        "map_main",
        ws,
        layers,
        visible=controls["visible"],
        highlights=highlights,
        basemap=controls["basemap"],
        hillshade=controls["hillshade"],
        focus=_search_focus(ws, result, sel, path, area),
        focus_zoom=(12, 18),
        height=620,
    )
    if out.click is not None:  # a click pending_click could not see (first run)
        found = maps.identify(layers, *out.click, zoom=out.view.zoom, visible=controls["visible"])
        if found is not None and found != sel:
            st.session_state["map_selected"] = found
            st.rerun(scope="fragment")
    if sel:
        widgets.feature_details(ws, result, *sel, path=path, area=area)
    else:
        st.caption(
            "Click a feature on the map, or search in the sidebar, to see its attributes "
            "and its path to the receiving water."
        )


def _search_focus(ws, result, sel, path, area=None):
    """Where the map jumps after a search: the feature found and its whole path (overland
    step, pipes, outfall), not the feature alone at street level; for an outfall, also
    the whole sewershed that drains to it.  Computed once per search, so a later click
    elsewhere does not move the map."""
    from ...analysis import outfall_area
    from ...analysis.paths import feature_geometry

    searched = st.session_state.get("map_search_last")  # the map jumps to searches only
    if not searched:
        return None
    cached = st.session_state.get("map_search_focus")
    if cached is not None and cached[0] == searched:
        return cached[1]
    if sel != searched or path is None:
        path = widgets.downstream_path(ws, result, *searched)
    geoms = [feature_geometry(ws, *searched, result=result), path.extent()]
    if searched[0] == "outfalls" and result is not None:
        if sel != searched or area is None:
            area = outfall_area(result, searched[1])
        geoms += list(area.sewershed)
        if area.edges is not None:
            geoms += list(area.edges.geometry)
    geoms = [g for g in geoms if g is not None and not g.is_empty]
    import shapely

    focus = shapely.union_all(geoms) if geoms else None
    st.session_state["map_search_focus"] = (searched, focus)
    return focus


def _series(geom, crs):
    import geopandas as gpd

    return gpd.GeoSeries([geom], crs=crs)
