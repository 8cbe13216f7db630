"""Outfall inventory: the list the state MS4 permit asks a town to keep."""

from __future__ import annotations

import streamlit as st

from ... import maps
from .. import state


@st.cache_data(show_spinner="Drawing the outfall map ...", max_entries=4)
def _pdf(_ws, _result, fingerprint: str, _inv) -> bytes:
    return maps.outfall_map_pdf(_ws, _result, _inv)


def render() -> None:
    st.title("Outfall inventory")
    st.caption(
        "Every outfall with its receiving water (PWL id), status, sewershed and what "
        "drains to it (NYSDEC MS4 general permit: outfall map and inventory)."
    )
    ctx = state.context()
    if ctx is None:
        return
    ws, result = ctx.ws, ctx.result
    inv = maps.outfall_inventory(ws, result)
    if not len(inv):
        st.warning("This workspace has no outfalls.")
        return
    c = st.columns(4)
    c[0].metric("Outfalls", len(inv))
    c[1].metric("With a PWL id", int(inv["pwl_id"].notna().sum()))
    c[2].metric(
        "Flowing / suspect / illicit",
        int(inv["status"].astype(str).isin(["flowing", "suspect", "illicit"]).sum()),
    )
    c[3].metric(
        "Septic parcels upstream",
        int(inv["septic_parcels_upstream"].fillna(0).sum()) if result is not None else 0,
    )
    shown = inv.drop(columns=["x", "y"])
    st.dataframe(shown, hide_index=True, width="stretch")
    c1, c2 = st.columns(2)
    c1.download_button(
        "Download inventory (CSV)",
        inv.to_csv(index=False),
        file_name="outfall_inventory.csv",
        mime="text/csv",
        key="inventory_dl_csv",
    )
    if c2.button("Make the printable outfall map (PDF)", key="inventory_make_pdf"):
        st.session_state["inventory_pdf"] = _pdf(ws, result, ws.fingerprint(), inv)
    if st.session_state.get("inventory_pdf"):
        c2.download_button(
            "Download outfall map (PDF)",
            st.session_state["inventory_pdf"],
            file_name="outfall_map.pdf",
            mime="application/pdf",
            key="inventory_dl_pdf",
        )
