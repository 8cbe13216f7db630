"""Permit year: the compliance pack of a reporting period, the five-year screening schedule, field verification."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from ...core.tables import csv_text
from ...records.pack_write import write_pack
from ...records.periods import PERIOD_KINDS
from .. import auth, records_ui, state

_VERIFY_WORDS = {"verified": "verified in the field", "mapped_only": "mapped only"}
_MOVE_WORDS = {
    "none": "not moved",
    "pending": "found elsewhere, move not accepted",
    "accepted": "move accepted",
}


def render() -> None:
    ctx = state.page(
        "Permit year",
        "The compliance pack of a reporting period (NYSDEC MS4 general permit GP-0-24-001: "
        "permit year 3 January - 2 January, interim period 3 January - 30 June), the "
        "five-year outfall screening schedule and the outfalls verified in the field.",
    )
    if ctx is None:
        return
    rec = records_ui.reader()
    if rec is None:
        st.info("No IDDE records yet: the pack and the schedule count the records.")
        return
    _pack(rec, ctx.result)
    _schedule(rec, ctx.result)
    _verification(rec)


def _pack(rec, result) -> None:  # noqa: ANN001
    st.header("Compliance pack")
    offered = list(rec.periods.offered)
    c = st.columns(2)
    kind = c[0].selectbox(
        "Reporting period",
        offered,
        format_func=lambda k: PERIOD_KINDS[k],
        key="permit_period",
    )
    this_year = rec.periods.year_of(dt.date.today(), kind)
    year = int(
        c[1].number_input(
            "Year it starts in",
            min_value=1972,
            max_value=this_year,
            value=this_year,
            step=1,
            key="permit_year",
        )
    )
    try:
        pk = rec.pack(year, period=kind, result=result)
    except Exception as exc:  # noqa: BLE001 - a year before the records: the message
        st.error(str(exc))
        return
    st.markdown(f"**{state.data_text(pk.period.text())}**")
    table = pd.DataFrame(
        {
            "What": pk.idde["label"],
            "Count": pk.idde["count"],
            "Reported": pk.idde["reported"],
            "Override": pk.idde["override_reason"],
        }
    )
    st.dataframe(table, hide_index=True, width="stretch", key="permit_counts")
    with st.expander("What each count holds (drill-down)"):
        for r in pk.idde.to_dict("records"):
            st.markdown(
                f"**{r['label']}** ({r['count']}): "
                + state.data_text(", ".join(map(str, r["ids"])) or "none")
            )
    st.subheader("Mapping progress")
    st.dataframe(
        pd.DataFrame(
            {
                "What": pk.mapping["label"],
                "Done": pk.mapping["count"],
                "Of": pk.mapping["total"],
                "Share": [f"{s:.1%}" for s in pk.mapping["share"]],
            }
        ),
        hide_index=True,
        width="stretch",
        key="permit_mapping",
    )
    st.subheader("Expedited list (impaired or TMDL watersheds)")
    st.dataframe(
        pk.expedited.rename(
            columns={
                "outfall_id": "Outfall",
                "receiving_water": "Receiving water",
                "pwl_id": "PWL id",
                "why": "Why",
                "lacks": "Still lacks",
            }
        ),
        hide_index=True,
        width="stretch",
        key="permit_expedited",
    )
    d = st.columns(2)
    d[0].download_button(
        "Download the counts with their ids (CSV)",
        csv_text(pk.drilldown()),
        file_name=f"drilldown_{pk.period.kind}_{pk.period.year}.csv",
        mime="text/csv",
        key="permit_drill_csv",
    )
    if d[1].button("Make the compliance pack (PDF)", key="permit_pack_make"):
        with tempfile.TemporaryDirectory(dir=records_ui.app_data_dir()) as tmp:
            paths = write_pack(pk, Path(tmp), title=f"{rec.profile.municipality}")
            st.session_state["permit_pack_pdf"] = paths[0].read_bytes()
    if st.session_state.get("permit_pack_pdf"):
        d[1].download_button(
            "Download the compliance pack (PDF)",
            st.session_state["permit_pack_pdf"],
            file_name=f"compliance_pack_{pk.period.kind}_{pk.period.year}.pdf",
            mime="application/pdf",
            key="permit_pack_pdf_dl",
        )
    for n in pk.notes:
        st.caption(n)
    if auth.current().role == "smo":
        _override_form(pk)


def _override_form(pk) -> None:  # noqa: ANN001
    """The SMO types over a count: recorded in the audit trail with a reason (required)."""
    with st.expander("Type over a count (an override, recorded in the audit trail)"):
        labels = dict(zip(pk.idde["label"], pk.idde["key"], strict=True))
        with st.form("permit_override_form"):
            label = st.selectbox("Count", list(labels), key="permit_override_key")
            value = st.number_input("Number reported", min_value=0, step=1, key="permit_override_n")
            reason = st.text_input("Reason (required)", key="permit_override_reason")
            go = st.form_submit_button("Record the override")
        if go:
            try:
                n = records_ui.save_override(
                    labels[label],
                    int(value),
                    reason=reason,
                    year=pk.period.year,
                    period=pk.period.kind,
                )
            except Exception as exc:  # noqa: BLE001 - every refusal is shown
                st.error(str(exc))
            else:
                st.session_state["permit_override_saved"] = (
                    f"Override {n} recorded: {label} reported as {int(value)}."
                )
                st.rerun()
    said = st.session_state.pop("permit_override_saved", None)
    if said:
        st.success(said)


def _schedule(rec, result) -> None:  # noqa: ANN001
    st.header("Outfall screening schedule")
    st.caption(
        "Every outfall at least once in the years planned: never screened first, then "
        "priority from high to low, then the oldest last screening."
    )
    c = st.columns(3)
    start = int(
        c[0].number_input(
            "First year",
            min_value=2000,
            max_value=2100,
            value=dt.date.today().year + 1,
            key="permit_sched_start",
        )
    )
    years = int(c[1].number_input("Years", 1, 10, 5, key="permit_sched_years"))
    n = len(rec.outfalls)
    per_year = int(
        c[2].number_input(
            "Outfalls the crew screens a year",
            1,
            max(n, 1),
            max(1, -(-n // 5)),
            key="permit_sched_per_year",
        )
    )
    _scores, plan, warnings = rec.schedule(start, years=years, per_year=per_year, result=result)
    for w in warnings:
        st.warning(w)
    st.dataframe(
        plan.rename(
            columns={
                "order": "Order",
                "outfall_id": "Outfall",
                "year": "Year",
                "visit": "Visit",
                "priority": "Priority",
                "last_screened": "Last screened",
                "why": "Why",
            }
        ),
        hide_index=True,
        width="stretch",
        key="permit_schedule",
    )
    st.download_button(
        "Download the schedule (CSV)",
        csv_text(plan),
        file_name=f"screening_schedule_{start}.csv",
        mime="text/csv",
        key="permit_schedule_csv",
    )


def _verification(rec) -> None:  # noqa: ANN001
    st.header("Field verification")
    v = rec.verification()
    n = int((v["verification"] == "verified").sum())
    st.metric("Outfalls verified in the field", f"{n} of {len(v)}")
    st.dataframe(
        pd.DataFrame(
            {
                "Outfall": v["outfall_id"],
                "Verification": v["verification"].map(_VERIFY_WORDS),
                "Verified on": v["verified_on"],
                "Moved (m)": v["moved_m"],
                "Move": v["move"].map(_MOVE_WORDS),
                "Position the traces use": v["position_used"],
            }
        ),
        hide_index=True,
        width="stretch",
        key="permit_verification",
    )
    pending = v[v["move"] == "pending"]
    if auth.current().role == "smo" and len(pending):
        with st.form("permit_move_form"):
            oid = st.selectbox(
                "Outfall found elsewhere", pending["outfall_id"].tolist(), key="permit_move_oid"
            )
            reason = st.text_input("Why the field position is right", key="permit_move_reason")
            go = st.form_submit_button("Accept the move (the traces use the field position)")
        if go:
            row = pending.set_index("outfall_id").loc[oid]
            try:
                records_ui.save_move(oid, int(row["inspection_id"]), reason)
            except Exception as exc:  # noqa: BLE001 - every refusal is shown
                st.error(str(exc))
            else:
                st.rerun()
