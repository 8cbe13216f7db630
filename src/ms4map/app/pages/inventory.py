"""Outfall inventory: the list the state MS4 permit asks a town to keep."""

from __future__ import annotations

import streamlit as st

from ...analysis.outfalls import inventory_totals
from ...outputs.outfall_sheet import outfall_map_pdf
from .. import state, widgets


@st.cache_data(show_spinner="Drawing the outfall map ...", max_entries=4)
def _pdf(_ws, _result, fingerprint: str, statuses: str, _inv) -> bytes:
    return outfall_map_pdf(_ws, _result, _inv)


def render() -> None:
    ctx = state.page(
        "Outfall inventory",
        "Every outfall with its receiving water (PWL id), status, sewershed and what "
        "drains to it (NYSDEC MS4 general permit: outfall map and inventory).",
    )
    if ctx is None:
        return
    ws, result = ctx.ws, ctx.result
    # no parcels (a network-only town): the inventory without its septic counts
    septic = (
        state.septic_layer(ws, result) if result is not None and "parcels" in ws.layers else None
    )
    from .. import records_ui

    # one status per outfall: the layer's merged with the records (map, counts, PDF, CSV)
    inv = records_ui.with_status(state.outfall_inventory(ws, result, septic), ws)
    if not widgets.has_outfalls(inv):
        return
    token = records_ui.status_token(inv)
    c = st.columns(5)
    c[0].metric("Outfalls", len(inv))
    c[1].metric("With a PWL id", int(inv["pwl_id"].notna().sum()))
    c[2].metric(
        "Flowing / suspect / illicit",
        int(inv["status"].astype(str).isin(["flowing", "suspect", "illicit"]).sum()),
    )
    tot = inventory_totals(ws, result, septic=septic)
    c[3].metric("Parcels draining to an outfall", _n(tot["parcels"]))
    septic_label = (
        "Flagged septic parcels draining to an outfall"
        if tot["septic_basis"] == "flagged"
        else "Septic parcels draining to an outfall"
    )
    c[4].metric(septic_label, _n(tot["septic_parcels"]))
    if tot["parcels"] is not None:
        st.caption(
            "Totals count each parcel once. The table counts a parcel in the row of every "
            f"outfall it drains to: {tot['multi_outfall_parcels']:,} parcel(s) drain to more "
            f"than one, so its parcel column sums to {tot['parcels_in_rows']:,}"
            + (
                f" and its septic column to {tot['septic_in_rows']:,}."
                if tot["septic_in_rows"] is not None
                else "."
            )
            + (
                " Septic parcels are those the Septic page flags (tributary to the MS4)."
                if tot["septic_basis"] == "flagged"
                else " Septic parcels are those whose sewer attribute says septic."
            )
        )
    shown = inv.drop(columns=["x", "y"])
    st.dataframe(shown, hide_index=True, width="stretch")
    c1, c2 = st.columns(2)
    widgets.csv_download(
        c1,
        "Download inventory (CSV)",
        inv,
        file_name="outfall_inventory.csv",
        key="inventory_dl_csv",
    )
    if c2.button("Make the printable outfall map (PDF)", key="inventory_make_pdf"):
        st.session_state["inventory_pdf"] = (token, _pdf(ws, result, ws.fingerprint(), token, inv))
    made = st.session_state.get("inventory_pdf")
    if made and made[0] == token:  # a map made before a status changed is not offered
        c2.download_button(
            "Download outfall map (PDF)",
            made[1],
            file_name="outfall_map.pdf",
            mime="application/pdf",
            key="inventory_dl_pdf",
        )
    sheds = getattr(result, "sewersheds", None)
    if sheds is not None and len(sheds):  # the outfalls' sewersheds, in the export formats
        from .. import export_ui

        export_ui.layer_download(
            "the sewersheds",
            "sewersheds",
            sheds,
            ws,
            key="inventory_export",
            token=ws.fingerprint(),
        )
    if getattr(result, "network", None) is not None and len(result.inlet_catchments):
        from .. import export_ui

        export_ui.model_download(result, ws, key="inventory_model")
    records_ui.inventory_records(inv)
    from .. import field_ui

    field_ui.field_trips(inv)


def _n(v) -> str:
    return "unknown" if v is None else f"{v:,}"
