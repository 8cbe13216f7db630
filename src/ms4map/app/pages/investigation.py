"""Outfall investigation: what drains to an outfall, and who might be the source."""

from __future__ import annotations

import streamlit as st

from ...analysis import outfall_area, outfall_inventory
from ...analysis.paths import feature_geometry
from ...outputs import maps
from .. import mapview, state, widgets


def render() -> None:
    ctx = state.page(
        "Outfall investigation",
        "Choose an outfall with dry-weather flow: its sewershed, upstream network and "
        "contributing parcels are highlighted, and candidate sources are listed.",
    )
    if ctx is None:
        return
    ws, result = ctx.ws, ctx.result
    from .. import records_ui

    inv = records_ui.with_status(outfall_inventory(ws, result), ws)  # the one status
    if not widgets.has_outfalls(inv):
        return
    ids = inv["outfall_id"].tolist()
    status = dict(zip(inv["outfall_id"], inv["status"].astype(str), strict=True))
    water = dict(zip(inv["outfall_id"], inv["receiving_water"].astype(str), strict=True))
    # suspect / flowing / illicit outfalls first
    rank = {"illicit": 0, "suspect": 1, "flowing": 2}
    ids.sort(key=lambda o: (rank.get(status.get(o, ""), 9), o))
    asked = st.query_params.get("outfall")  # a link from the Map page: ?outfall=OF-009
    pick = None
    if asked and st.session_state.get("inv_outfall_asked") != asked:
        st.session_state["inv_outfall_asked"] = asked
        if asked in ids:
            pick = asked
        else:
            st.warning(  # shown as text: the address is anyone's to write
                f"Outfall '{state.data_text(asked[:80])}' (from the link) is not in this "
                "workspace's outfalls."
            )
    # kept by outfall id: its label changes when a record changes its status
    oid = widgets.sticky_select(
        st,
        "Outfall",
        ids,
        pick=pick,
        format_func=lambda o: f"{o} — {str(status.get(o)).replace('_', ' ')} — {water.get(o)}",
        key="inv_outfall",
    )
    if result is None:
        st.info("Upstream areas need the drainage analysis, which is not available.")
        return
    area = outfall_area(result, oid)
    st.caption(area.reason)
    layers = state.map_layers(ws, result)
    highlights = {}
    if len(area.sewershed):
        highlights["sewershed"] = area.sewershed
    if area.edges is not None and len(area.edges):
        highlights["upstream network"] = area.edges.geometry
    if len(area.parcels):
        highlights["contributing parcels"] = area.parcels.geometry
    focus_geom = feature_geometry(ws, "outfalls", oid)
    extent = [focus_geom] if focus_geom is not None else []
    extent += list(area.sewershed) + list(area.parcels.geometry)
    if area.edges is not None:
        extent += list(area.edges.geometry)
    if extent:
        from shapely import box, union_all

        focus_geom = box(*union_all([g for g in extent if g is not None]).bounds)
    mapview.show_map(
        "inv_map",
        ws,
        layers,
        visible=[k for k in maps.BASE_LAYERS if k in layers],
        highlights=highlights,
        focus=focus_geom,
        focus_zoom=(12, 18),
        height=480,
    )
    if not widgets.has_parcels(ws, "Candidate sources and notices of violation"):
        records_ui.outfall_records("inv", oid)
        return
    septic = state.septic_layer(ws, result)
    from ... import idde

    cand = idde.candidates_for_area(area, septic=septic)
    st.subheader(f"Candidate sources ({len(cand)})")
    if not len(cand):
        st.caption("No septic, commercial, industrial or flagged parcel drains to this outfall.")
    widgets.people_table(st, cand)
    widgets.csv_download(
        st, "Download candidates (CSV)", cand, file_name=f"candidates_{oid}.csv", key="inv_dl_csv"
    )
    _notice_drafter(ws, result, cand)
    records_ui.outfall_records("inv", oid)


def _notice_drafter(ws, result, cand) -> None:
    """Draft a notice of violation for one candidate parcel (logic in ms4map.idde)."""
    from ... import idde

    if not len(cand):
        return
    with st.expander("Draft notice of violation"):
        pids = cand["parcel_id"].astype(str).tolist()
        pid = st.selectbox("Parcel", pids, key="inv_nov_parcel")
        row = cand[cand["parcel_id"].astype(str) == pid].iloc[0]
        codes = list(idde.VIOLATIONS)
        violation = st.selectbox(
            "Violation",
            codes,
            index=codes.index(idde.suggest_violation(row)),
            format_func=lambda c: idde.VIOLATIONS[c]["label"],
            key="inv_nov_violation",
        )
        profile = widgets.profile_box(st, "inv_nov_profile")
        deadline = st.date_input(
            "Remedy deadline (blank = from the profile's remedy period, or left to fill in)",
            value=None,
            key="inv_nov_deadline",
        )
        try:
            notice = idde.notice_of_violation(
                result,
                pid,
                violation=violation,
                workspace=ws,
                profile=profile,
                deadline=deadline,
            )
        except Exception as exc:  # noqa: BLE001 - shown to the officer
            st.error(f"The notice could not be drafted: {state.plain(exc)}")
            return
        widgets.notice_download(
            notice,
            "Download notice (HTML, print to PDF)",
            file_name=f"notice_{pid}_{violation}.html",
            key="inv_nov_download",
        )
