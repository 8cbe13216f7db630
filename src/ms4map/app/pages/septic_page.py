"""Septic: parcels with on-site systems tributary to the MS4, for follow-up letters."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ...rules.septic import mailing_list, undetermined_causes
from .. import mapview, state, widgets

LETTER_COLUMNS = ("parcel_id", "owner", "owner_address", "address")


def render() -> None:
    ctx = state.page("Septic systems tributary to the MS4")
    if ctx is None:
        return
    ws, result = ctx.ws, ctx.result
    if not widgets.has_parcels(ws, "Septic flags"):
        return
    if result is None:
        st.info("Septic flags need the drainage analysis, which is not available.")
        return
    flags = state.septic_flags(ws, result)
    if flags is None:
        return
    flagged = flags.table
    df = pd.DataFrame(flagged.drop(columns=[flagged.geometry.name], errors="ignore"))
    order = _priority_order(df)
    df, flagged = df.iloc[order], flagged.iloc[order]
    st.caption(
        f"{len(df)} parcel(s) in the septic layer, highest priority first (recorded "
        "violations, then special conditions, then the rest)."
    )
    # flagged parcels whose special condition missing data leaves open
    open_ = pd.Series(False, index=df.index)
    if "special_condition" in df.columns:
        open_ = df["special_condition"].isna() & _is_true(df, "flagged")
    if open_.any():
        causes = undetermined_causes(flagged, missing_layers=flags.missing_layers)
        st.warning(
            f"Special condition not determined for {int(open_.sum())} flagged parcel(s): "
            + "; ".join(f"{n}: {cause}" for n, cause in causes)
            + ". Each parcel's reason says what to add."
        )
    with st.sidebar:
        st.subheader("Filters")
        include_all = st.checkbox(
            "Include septic parcels not tributary to the MS4", key="septic_all"
        )
        only_special = st.checkbox("Special condition only", key="septic_special")
        only_open = bool(open_.any()) and st.checkbox(
            "Special condition not determined only",
            key="septic_special_open",
            help="A legal layer (303(d) listings or TMDL watersheds), a receiving water "
            "or a TMDL's stormwater source is not known: these parcels may have a "
            "special condition.",
        )
        pols = _septic_pollutants()
        only_septic_pol = st.checkbox(
            "Water impaired by a septic pollutant only" + (f" ({', '.join(pols)})" if pols else ""),
            key="septic_pollutant",
            help="A special condition because the receiving water is listed for a pollutant "
            "septic systems release, not for another one (e.g. PCBs).",
        )
        listed = sorted(
            {p.strip() for v in _col(df, "listed_pollutants").dropna() for p in str(v).split(",")}
            - {""}
        )
        chosen_pols = st.multiselect(
            "Receiving water listed for", listed, key="septic_listed_pollutants"
        )
        setback = st.checkbox(
            "Within a 75-A setback of water or an open conveyance only", key="septic_setback"
        )
        waters = sorted({str(w) for w in _col(df, "receiving_water").dropna()})
        chosen = st.multiselect("Receiving water", waters, key="septic_waters")
    keep = pd.Series(True, index=df.index)
    if not include_all:
        keep &= _is_true(df, "flagged")
    if only_special:
        keep &= _is_true(df, "special_condition")
    if only_open:
        keep &= open_
    if only_septic_pol:
        keep &= _is_true(
            df, "septic_pollutant", missing="The septic layer has no septic-pollutant column."
        )
    if chosen_pols:
        have = _col(df, "listed_pollutants").map(
            lambda v: {p.strip() for p in str(v).split(",")} if isinstance(v, str) else set()
        )
        keep &= have.map(lambda s: bool(s & set(chosen_pols)))
    if setback:
        keep &= _is_true(df, "within_setback", missing="The septic layer has no setback column.")
    if chosen:
        keep &= _col(df, "receiving_water").astype(str).isin(chosen)
    sel = flagged[keep.to_numpy()]
    filtered = bool(
        only_special or only_open or only_septic_pol or chosen_pols or setback or chosen
    )
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
    widgets.people_table(st, table)
    try:
        letters = mailing_list(flagged[keep.to_numpy()], only_flagged=False)
    except Exception:  # noqa: BLE001 - fall back to the plain columns
        letters = table[[c for c in LETTER_COLUMNS if c in table.columns]]
    c1, c2 = st.columns(2)
    widgets.csv_download(
        c1, "Download table (CSV)", table, file_name="septic_flagged.csv", key="septic_dl_csv"
    )
    widgets.csv_download(
        c2,
        "Download mailing list for letters (CSV)",
        letters,
        file_name="septic_letters.csv",
        key="septic_dl_letters",
    )
    from .. import export_ui  # the layer as GeoPackage / geodatabase / shapefiles / GeoJSON

    ids = tuple(sel["parcel_id"].astype(str)) if "parcel_id" in sel.columns else (len(sel),)
    export_ui.layer_download(
        "the parcels shown",
        "septic",
        sel,
        ws,
        key="septic_export",
        token=f"{ws.fingerprint()}:{hash(ids)}",
    )


def _priority_order(df: pd.DataFrame):
    """Row order: violations first, then by priority (high first), then by the share
    draining to the MS4, then by parcel id (a stable order for letters)."""
    import numpy as np

    viol = _col(df, "violation").fillna(False).astype(bool).to_numpy()
    pri = pd.to_numeric(_col(df, "priority"), errors="coerce").fillna(-1).to_numpy()
    frac = pd.to_numeric(_col(df, "ms4_fraction"), errors="coerce").fillna(0).to_numpy()
    pid = _col(df, "parcel_id").astype(str).to_numpy()
    return np.lexsort((pid, -frac, -pri, ~viol))


def _septic_pollutants() -> list[str]:
    try:
        from ...rules.profiles import load_profile

        return list(load_profile(state.town_profile()).septic_pollutants)
    except Exception:  # noqa: BLE001 - the filter still works without the words
        return []


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series([None] * len(df), index=df.index)


def _is_true(df: pd.DataFrame, column: str, *, missing: str | None = None) -> pd.Series:
    """The rows whose yes/no ``column`` is true (blank is no); every row when the layer
    lacks the column (and ``missing``, if given, is said in the sidebar)."""
    if column in df.columns:
        return df[column].fillna(False).astype(bool)
    if missing:
        st.sidebar.caption(missing)
    return pd.Series(True, index=df.index)
