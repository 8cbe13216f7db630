"""Septic: parcels with on-site systems tributary to the MS4, for follow-up letters."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from .. import mapview, state

LETTER_COLUMNS = ("parcel_id", "owner", "owner_address", "address")


def render() -> None:
    st.title("Septic systems tributary to the MS4")
    ctx = state.context()
    if ctx is None:
        return
    ws, result = ctx.ws, ctx.result
    if state.library("septic") is None:
        state.not_available("Septic flagging", "septic")
        return
    if result is None:
        st.info("Septic flags need the drainage analysis, which is not available.")
        return
    flagged = state.septic_layer(ws, result)
    if flagged is None:
        return
    df = pd.DataFrame(flagged.drop(columns=[flagged.geometry.name], errors="ignore"))
    st.caption(f"{len(df)} parcel(s) in the septic layer.")
    with st.sidebar:
        st.subheader("Filters")
        include_all = st.checkbox(
            "Include septic parcels not tributary to the MS4", key="septic_all"
        )
        only_special = st.checkbox("Special condition only", key="septic_special")
        setback = st.checkbox(
            "Within a 75-A setback of water or an open conveyance only", key="septic_setback"
        )
        waters = sorted({str(w) for w in _col(df, "receiving_water").dropna()})
        chosen = st.multiselect("Receiving water", waters, key="septic_waters")
    keep = pd.Series(True, index=df.index)
    if not include_all and "flagged" in df.columns:
        keep &= df["flagged"].fillna(False).astype(bool)
    if only_special and "special_condition" in df.columns:
        keep &= df["special_condition"].fillna(False).astype(bool)
    if setback:
        if "within_setback" in df.columns:
            keep &= df["within_setback"].fillna(False).astype(bool)
        else:
            st.sidebar.caption("The septic layer has no setback column.")
    if chosen:
        keep &= _col(df, "receiving_water").astype(str).isin(chosen)
    sel = flagged[keep.to_numpy()]
    filtered = bool(only_special or setback or chosen)
    table = df[keep]
    st.subheader(f"Flagged parcels ({len(table)})")
    layers = state.map_layers(ws, result, parcel_colour="septic", septic=flagged)
    mapview.show_map(
        "septic_map",
        ws,
        layers,
        visible=[
            k
            for k in ("parcels", "waterbodies", "impaired_waters", "conveyances", "outfalls")
            if k in layers
        ],
        # parcels are coloured by their septic flag; outline only a filtered subset
        highlights={"selection": sel.geometry} if len(sel) and filtered else None,
        height=460,
    )
    st.dataframe(table, hide_index=True, width="stretch")
    try:
        letters = state.library("septic").mailing_list(flagged[keep.to_numpy()], only_flagged=False)
    except Exception:  # noqa: BLE001 - fall back to the plain columns
        letters = table[[c for c in LETTER_COLUMNS if c in table.columns]]
    c1, c2 = st.columns(2)
    c1.download_button(
        "Download table (CSV)",
        table.to_csv(index=False),
        file_name="septic_flagged.csv",
        mime="text/csv",
        key="septic_dl_csv",
    )
    c2.download_button(
        "Download mailing list for letters (CSV)",
        letters.to_csv(index=False),
        file_name="septic_letters.csv",
        mime="text/csv",
        key="septic_dl_letters",
    )


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series([None] * len(df), index=df.index)
