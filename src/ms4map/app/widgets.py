"""Small widgets the pages share: search, feature details, downloads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from ..analysis import PathResult, feature_path
from ..analysis.paths import OVERLAND_METHODS, feature_attributes
from ..core.tables import csv_text
from ..outputs import maps
from . import state

if TYPE_CHECKING:
    from ..analysis import OutfallArea
    from ..io import Workspace
    from ..pipeline import PipelineResult

__all__ = [
    "csv_download",
    "downstream_path",
    "feature_details",
    "has_outfalls",
    "notice_download",
    "outfall_summary",
    "page_link",
    "search_box",
    "show_path",
    "sticky_select",
]


def sticky_select(
    where: Any,
    label: str,
    options: list[Any],
    *,
    key: str,
    format_func: Any = str,
    default: Any = None,
    pick: Any = None,
    query: str | None = None,
) -> Any:
    """A selectbox whose choice is kept by its option (an id) across reruns.

    Streamlit keeps a selectbox's choice by its label: when ``format_func`` gives an
    option a new label (a case's status after a step, an outfall's status after an
    inspection), the choice would fall back to the first or default option.  Here the
    chosen option is remembered in ``st.session_state[key + "_chosen"]`` and written to
    the widget's state before it is drawn (no ``index=`` is passed, so Streamlit sees no
    second default).  ``default`` is the first choice; ``pick`` (when one of the
    options) replaces the choice, e.g. from a link.  With ``query`` the choice is also
    kept in the page's address (``?case=2``), so a reload keeps it.
    """
    opts = list(options)
    if not opts:
        return None
    memo = f"{key}_chosen"
    if pick is not None and pick in opts:
        st.session_state[memo] = pick
    if query and memo not in st.session_state:  # a new session (a reload): the address
        by_text = {str(o): o for o in opts}
        if st.query_params.get(query) in by_text:
            st.session_state[memo] = by_text[st.query_params[query]]
    chosen = st.session_state.get(memo)
    if chosen not in opts:
        chosen = default if default in opts else opts[0]
    st.session_state[memo] = chosen
    st.session_state[key] = chosen

    def remember() -> None:
        st.session_state[memo] = st.session_state.get(key)

    got = where.selectbox(label, opts, format_func=format_func, key=key, on_change=remember)
    if query and st.query_params.get(query) != str(got):
        st.query_params[query] = str(got)
    return got


def search_box(
    ws: Workspace, key: str, *, layers: tuple[str, ...] | None = None
) -> tuple[str, str] | None:
    """Text search over addresses and ids; returns the chosen ``(layer, id)`` or None.

    ``layers`` limits the answers (the screening page takes parcels only); the label
    and the example say what can be searched, and a query that matches only other
    features says what it matched and what to search instead.
    """
    if layers == ("parcels",):
        label, example = "Search: address or parcel id", "e.g. 12 Main St, 232.-1-12"
    else:
        label = "Search: address, parcel id, structure id or outfall id"
        example = "e.g. 12 Main St, 232.-1-12, CB-101, OF-3"
    query = st.text_input(label, key=f"{key}_query", placeholder=example)
    if not query.strip():
        return None
    hits = maps.search_features(ws, query, limit=30, index=state.search_index(ws))
    if layers is not None:
        others = hits[~hits["layer"].isin(layers)]
        hits = hits[hits["layer"].isin(layers)]
        if not len(hits) and len(others):
            what = ", ".join(
                f"{maps.LAYER_LABELS.get(lyr, lyr).lower().rstrip('s')} {fid}"
                for lyr, fid in zip(others["layer"][:3], others["fid"][:3], strict=False)
            )
            st.caption(
                f"'{state.data_text(query)}' matches {state.data_text(what)}, not a parcel: a site is made of parcels here. "
                "Search a parcel's address or id, or find the feature on the Map page."
            )
            return None
    if not len(hits):
        st.caption(f"Nothing matches '{state.data_text(query)}'.")
        return None
    options = [f"{lyr}|{fid}" for lyr, fid in zip(hits["layer"], hits["fid"], strict=False)]
    labels = dict(zip(options, hits["label"], strict=False))
    choice = st.selectbox(
        f"{len(hits)} match(es)", options, format_func=lambda o: labels[o], key=f"{key}_hit"
    )
    if not choice:
        return None
    lyr, fid = choice.split("|", 1)
    return lyr, fid


def has_outfalls(inventory: pd.DataFrame) -> bool:
    """Whether the outfall inventory has rows; a warning when it has none."""
    if len(inventory):
        return True
    st.warning("This workspace has no outfalls.")
    return False


def has_parcels(ws: Any, what: str) -> bool:
    """Whether the workspace has a parcels layer; where it has none, a note saying
    what cannot work without it (``what``) and how to add it."""
    if "parcels" in ws.layers:
        return True
    st.info(
        f"{what} need the town's parcels, and this workspace has no parcels layer "
        f"(it has: {', '.join(sorted(ws.layers)) or 'no layers'}). Add the parcels "
        "(polygons with a parcel id; a sewer or septic column for the septic flags) on "
        "the **Data** page, or as a `parcels` layer in the workspace's folder or GeoPackage."
    )
    return False


def profile_box(where: Any, key: str) -> str:
    """A "Municipality profile" choice in ``where`` (``st`` or a column): the bundled
    profiles and the town's own, by their municipality, the town's chosen by default."""
    options, town = state.profile_choices()
    return where.selectbox(
        "Municipality profile", options, index=town, key=key, format_func=profile_label
    )


def profile_label(profile: str) -> str:
    """A municipality profile as a person names it: its municipality ("Village of Kiryas
    Joel", not ``kiryas_joel``); a town's own profile file by its name, marked as a file."""
    from pathlib import Path

    from ..rules.profiles import load_profile

    try:
        town = load_profile(profile).municipality
    except Exception:  # noqa: BLE001 - a label must not break the page; the run says why
        town = None
    if "/" in profile or "\\" in profile:
        return f"{town or Path(profile).stem} (file {Path(profile).name})"
    return town or profile.replace("_", " ")


def page_link(name: str, label: str, **query: str) -> None:
    """A link to another page of the app with ``query`` as its query parameters.

    In the app (``st.navigation`` running) it is Streamlit's page link, which keeps
    the session; a page run on its own (tests) gets a plain link to the same URL.
    """
    from urllib.parse import urlencode

    from .. import app as _app

    target = _app.page_object(name)
    if target is not None:
        st.page_link(target, label=label, query_params=query or None)
    else:
        url = name + (f"?{urlencode(query)}" if query else "")
        st.markdown(f"[{label}]({url})")  # label: the caller shows its values as text


def outfall_summary(
    ws: Workspace, result: PipelineResult | None, fid: str, area: OutfallArea | None = None
) -> None:
    """What drains to an outfall: its upstream area and counts, and a link to investigate."""
    if result is None:
        st.caption("Upstream area and counts need the drainage analysis.")
        return
    septic = state.septic_layer(ws, result)
    inv = state.outfall_inventory(ws, result, septic)
    row = inv[inv["outfall_id"].astype(str) == str(fid)]
    st.markdown("**What drains here**")
    if len(row):
        r = row.iloc[0]
        c = st.columns(4)
        acres = r["sewershed_acres"]
        c[0].metric("Sewershed (acres)", "unknown" if pd.isna(acres) else f"{acres:,.1f}")
        for col, name, label in (
            (c[1], "structures_upstream", "Structures upstream"),
            (c[2], "parcels_upstream", "Parcels draining here"),
            (c[3], "septic_parcels_upstream", "Flagged septic parcels"),
        ):
            v = r[name]
            col.metric(label, "unknown" if pd.isna(v) else f"{int(v):,}")
        st.caption(
            f"Outfall {state.data_text(fid)} at {r['latitude']:.6f}, {r['longitude']:.6f} (lat, long). "
            "Parcels count if any part of them drains here; the sewershed (dashed) and the "
            "network upstream (yellow) are drawn on the map."
        )
    if area is not None and area.reason:
        st.caption(f"Upstream: {state.data_text(area.reason)}.")
    page_link(
        "investigation",
        f"Investigate outfall {state.data_text(fid)}: candidate sources",
        outfall=str(fid),
    )


#: Canonical attribute names as a person reads them (the files keep the codes).
ATTRIBUTE_LABELS = {
    "parcel_id": "Parcel id", "struct_id": "Structure id", "outfall_id": "Outfall id",
    "conv_id": "Conveyance id", "kind": "Kind", "rim_elev": "Rim elevation",
    "invert_elev": "Invert elevation", "address": "Address", "owner": "Owner",
    "owner_address": "Owner's mailing address", "prop_class": "Property class",
    "acres": "Acres", "sewer": "Sewer", "septic_failure": "Septic failure",
    "receiving_water": "Receiving water", "pwl_id": "PWL id (DEC waterbody)",
    "status": "Status in the outfalls layer (the records decide the status above)",
    "permit_id": "Permit id", "from_id": "From structure", "to_id": "To structure",
    "us_invert": "Upstream invert", "ds_invert": "Downstream invert",
    "diameter_in": "Diameter (inches)", "rise_in": "Rise (inches)", "material": "Material",
    "flow_dir": "Flow direction", "src_layer": "From the input layer",
}  # fmt: skip
ATTRIBUTE_LABELS.update({
    "septic_source": "Septic known from", "tributary": "Tributary to the MS4",
    "flagged": "Flagged", "ms4_fraction": "Share draining to the MS4",
    "direct_fraction": "Share draining directly to water", "outfalls": "Outfalls",
    "special_condition": "Special condition", "listed_pollutants": "Water listed for",
    "septic_pollutant": "Listed for a septic pollutant", "within_setback": "Within setback",
    "setback_feature": "Setback from", "failure_codes": "Recorded failures",
    "failure_conditions": "Failure conditions", "violation": "Violation",
    "priority": "Priority", "priority_label": "Priority (words)", "method": "How decided",
    "reason": "Why", "fraction": "Share draining here",
})  # fmt: skip
#: Attributes whose values are codes (``catch_basin``): shown as words.
_CODED = ("kind", "sewer", "status", "flow_dir", "septic_failure")
#: A code word inside text: lower-case words joined by underscores (``surface_discharge``).
_CODE_WORD = r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b"
#: Columns holding a share (0 to 1), shown as a percentage.
_SHARES = ("ms4_fraction", "direct_fraction", "fraction")


def people_table(where: Any, frame: pd.DataFrame, **kwargs: Any) -> None:
    """``st.dataframe`` of ``frame`` as a person reads it: columns by their labels
    (:data:`ATTRIBUTE_LABELS`), code words in the cells as words (``catch_basin`` ->
    "catch basin"), shares as percentages, no geometry.  Downloads keep the codes."""
    import re

    def words(v: Any) -> Any:
        if not isinstance(v, str):
            return v
        return re.sub(_CODE_WORD, lambda m: m.group(0).replace("_", " "), v)

    shown = pd.DataFrame(frame.drop(columns=["geometry"], errors="ignore"))
    for col in shown.columns:
        if shown[col].dtype == object or pd.api.types.is_string_dtype(shown[col]):
            shown[col] = shown[col].map(words)
    config = {
        c: (
            st.column_config.NumberColumn(attribute_label(c), format="percent")
            if c in _SHARES
            else st.column_config.Column(attribute_label(c))
        )
        for c in shown.columns
    }
    where.dataframe(shown, column_config=config, hide_index=True, width="stretch", **kwargs)


def attribute_label(name: str) -> str:
    """An attribute's name as a person reads it (``rim_elev`` -> "Rim elevation")."""
    return ATTRIBUTE_LABELS.get(name) or name.replace("_", " ").capitalize()


def _value_text(name: str, value: Any) -> str:
    text = str(value)
    return text.replace("_", " ") if name in _CODED else text


def feature_details(
    ws: Workspace,
    result: PipelineResult | None,
    layer: str,
    fid: str,
    *,
    path: PathResult | None = None,
    area: OutfallArea | None = None,
) -> PathResult | None:
    """Attributes of the selected feature and its downstream path, as text.

    An outfall also gets what drains to it (:func:`outfall_summary`); ``area`` is its
    :func:`ms4map.analysis.outfalls.outfall_area` when the caller has it.
    """
    attrs = feature_attributes(ws, layer, fid, result=result)
    st.subheader(
        f"{maps.LAYER_LABELS.get(layer, layer)[:-1] if layer.endswith('s') else layer} "
        + state.data_text(fid)
    )
    if layer == "outfalls":
        from .records_ui import outfall_status_line

        outfall_status_line(fid)  # the derived status the map colours it by
        outfall_summary(ws, result, fid, area)
    if attrs:
        shown = {k: v for k, v in attrs.items() if v is not None and k not in ("src_fid",)}
        st.dataframe(
            pd.DataFrame(
                {
                    "attribute": [attribute_label(k) for k in shown],
                    "value": [_value_text(k, v) for k, v in shown.items()],
                }
            ),
            hide_index=True,
            width="stretch",
        )
    if layer in ("parcels", "structures", "conveyances", "outfalls"):
        if path is None:
            path = downstream_path(ws, result, layer, fid)
        show_path(path)
        return path
    return None


def downstream_path(
    ws: Workspace, result: PipelineResult | None, layer: str, fid: str
) -> PathResult:
    """:func:`ms4map.analysis.feature_path` of a feature (``feature_path(result, layer,
    fid)``); without a pipeline result (the drainage analysis failed or has not run) an
    empty path whose reason says so, as the library answered ``result=None``."""
    if result is None:
        import geopandas as gpd

        return PathResult(
            gpd.GeoSeries([], crs=ws.crs),
            [],
            [],
            [],
            "The drainage analysis has not been run for this workspace.",
        )
    return feature_path(result, layer, fid)


def show_path(path: PathResult) -> None:
    st.markdown("**Downstream path**")
    if path.steps:
        for s in path.steps:
            st.markdown(f"- {state.data_text(s)}")
    else:
        st.caption(state.data_text(path.reason or "No path."))
    ov = path.overland
    if ov is not None and len(ov):
        how = sorted({OVERLAND_METHODS.get(m, m) for m in ov["method"].astype(str)})
        st.caption("The overland step (dashed on the map) runs " + "; ".join(how) + ".")
    if path.receiving_waters:
        st.markdown(
            "Receiving water(s): " + ", ".join(state.data_text(w) for w in path.receiving_waters)
        )


def csv_download(where: Any, label: str, frame: pd.DataFrame, *, file_name: str, key: str) -> None:
    """A button that downloads ``frame`` as CSV (without the index), in ``where`` (``st``
    or a column)."""
    where.download_button(label, csv_text(frame), file_name=file_name, mime="text/csv", key=key)


def notice_download(notice: Any, label: str, *, file_name: str, key: str) -> None:
    """A drafted notice of violation: its warnings, then a button that downloads it as
    HTML (to print)."""
    for w in notice.warnings:
        st.warning(w)
    st.download_button(label, notice.to_html(), file_name=file_name, mime="text/html", key=key)
