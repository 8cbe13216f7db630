"""Small widgets the pages share: search, feature details, downloads."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from .. import maps

__all__ = ["feature_details", "search_box", "show_path"]


def search_box(
    ws: Any, key: str, *, layers: tuple[str, ...] | None = None
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
    from . import state

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
                f"'{query}' matches {what}, not a parcel: a site is made of parcels here. "
                "Search a parcel's address or id, or find the feature on the Map page."
            )
            return None
    if not len(hits):
        st.caption(f"Nothing matches '{query}'.")
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


def feature_details(
    ws: Any, result: Any, layer: str, fid: str, *, path: maps.PathResult | None = None
) -> maps.PathResult | None:
    """Attributes of the selected feature and its downstream path, as text."""
    attrs = maps.feature_attributes(ws, layer, fid, result=result)
    st.subheader(
        f"{maps.LAYER_LABELS.get(layer, layer)[:-1] if layer.endswith('s') else layer} {fid}"
    )
    if attrs:
        shown = {k: v for k, v in attrs.items() if v is not None and k not in ("src_fid",)}
        st.dataframe(
            pd.DataFrame({"attribute": list(shown), "value": [str(v) for v in shown.values()]}),
            hide_index=True,
            width="stretch",
        )
    if layer in ("parcels", "structures", "conveyances", "outfalls"):
        if path is None:
            path = maps.feature_path(ws, result, layer, fid)
        show_path(path)
        return path
    return None


def show_path(path: maps.PathResult) -> None:
    st.markdown("**Downstream path**")
    if path.steps:
        for s in path.steps:
            st.markdown(f"- {s}")
    else:
        st.caption(path.reason or "No path.")
    if path.receiving_waters:
        st.markdown("Receiving water(s): " + ", ".join(path.receiving_waters))
