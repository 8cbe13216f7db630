"""SMPs: the post-construction practices, their inspection and maintenance schedule, what is overdue; the SMO records."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from .. import auth, records_ui, state, widgets
from ..smp_map import SMP_WORDS, map_status

#: The words of a practice's maintenance status.
MAINTENANCE_WORDS = {
    "ok": "maintained, not due",
    "due_soon": "maintenance due within 30 days",
    "overdue": "maintenance overdue",
    "never_maintained": "never maintained",
    "no_schedule": "no maintenance schedule",
}
#: Row colours of the schedule table (the map's colours, lighter).
STATUS_HIGHLIGHT = {"overdue": "#f4a6a6", "due_soon": "#fde9a9", "never_inspected": "#e0e0e0"}


def render() -> None:
    from ...records import smp

    st.title("SMPs")
    st.caption(
        "Post-construction stormwater management practices (ponds, wetlands, infiltration, "
        "filters, swales, green infrastructure): the inventory, each practice's inspection "
        "and maintenance schedule, and what is overdue. The Map page shows them coloured by "
        "their inspection status."
    )
    today = st.date_input("As of", value=dt.date.today(), key="smp_today")
    rec = records_ui.reader()
    status = smp.smp_status(rec, today) if rec is not None else None
    if status is None or not len(status):
        st.info("No SMP recorded yet.")
    else:
        _schedule(status)
        _overdue(smp.overdue(rec, today))
        _details(rec, status)
    records_ui.read_only_note("smp")
    if auth.current().role == "smo":
        _add_form()
        _import_form()


def _schedule(status: pd.DataFrame) -> None:
    st.subheader("Inventory and schedule")
    cols = ["smp_id", "name", "practice", "owner", "last_inspection", "inspection_due"]
    cols += ["inspection_status", "last_maintenance", "maintenance_due", "maintenance_status"]
    shown = pd.DataFrame(status.drop(columns="geometry"))[cols]
    shown["inspection_status"] = [
        SMP_WORDS.get(map_status(s), s) for s in shown["inspection_status"]
    ]
    shown["maintenance_status"] = [MAINTENANCE_WORDS.get(s, s) for s in shown["maintenance_status"]]
    states = [map_status(s) for s in status["inspection_status"]]
    shown = shown.rename(columns={c: widgets.attribute_label(c) for c in shown.columns})

    def colour(row: pd.Series) -> list[str]:
        c = STATUS_HIGHLIGHT.get(states[row.name], "")
        return [f"background-color: {c}" if c else ""] * len(row)

    st.dataframe(shown.style.apply(colour, axis=1), hide_index=True, width="stretch")


def _overdue(late: pd.DataFrame) -> None:
    st.subheader("Overdue")
    if not len(late):
        st.success("Nothing overdue.")
        return
    n = late["smp_id"].nunique()
    st.warning(f"{len(late)} overdue duties at {n} practices.")
    widgets.people_table(st, late)


def _details(rec: Any, status: pd.DataFrame) -> None:
    from ...records import smp

    ids = [int(i) for i in status["smp_id"]]
    names = dict(zip(ids, status["name"].astype(str), strict=True))
    sid = widgets.sticky_select(
        st,
        "Practice",
        ids,
        default=ids[0],
        format_func=lambda i: f"{i}: {names.get(i, '')}",
        key="smp_pick",
        query="smp",
    )
    row = status[status["smp_id"] == sid].iloc[0]
    st.markdown(
        f"**{state.data_text(row['name'])}**: {state.data_text(row['practice'])}; "
        f"{SMP_WORDS.get(map_status(row['inspection_status']), row['inspection_status'])}; "
        f"{MAINTENANCE_WORDS.get(row['maintenance_status'], row['maintenance_status'])}."
    )
    inv = smp.smps(rec)
    cur = inv[inv["smp_id"] == sid].drop(columns="geometry").iloc[0]
    facts = {
        k: v
        for k, v in cur.items()
        if k not in ("smp_id", "version", "name", "kind", "practice", "family")
        and v is not None
        and not (isinstance(v, float) and pd.isna(v))
        and v is not pd.NA
    }
    labels = [widgets.attribute_label(k) for k in facts]
    widgets.people_table(
        st, pd.DataFrame({"field": labels, "value": [str(v) for v in facts.values()]})
    )
    st.markdown("**Inspections**")
    widgets.people_table(
        st, smp.smp_inspections(rec, sid).drop(columns=["version"], errors="ignore")
    )
    st.markdown("**Maintenance**")
    widgets.people_table(
        st, smp.smp_maintenance(rec, sid).drop(columns=["version"], errors="ignore")
    )
    if auth.current().role == "smo":
        _inspect_form(sid)
        _maintain_form(sid)


def _write(what: str) -> Any:
    return records_ui._writer(what)


def _inspect_form(sid: int) -> None:
    from ...records import smp, smp_fields

    records_ui.form_start("smp_ins", ("smp_ins_",))
    with st.form("smp_ins_form"):
        st.markdown(f"**Record an inspection of SMP {sid}**")
        day = st.date_input("Date", value=dt.date.today(), key="smp_ins_date")
        kind = st.selectbox("Kind", smp_fields.INSPECTION_KINDS, key="smp_ins_kind",
                            format_func=lambda k: k.replace("_", " "))  # fmt: skip
        cond = st.selectbox("Condition", smp_fields.SMP_CONDITIONS, key="smp_ins_condition")
        findings = st.text_area("Findings", key="smp_ins_findings")
        actions = st.text_input("Actions required", key="smp_ins_actions")
        go = records_ui.submit_button("Save inspection", "smp_ins")
    if go:
        records_ui.save_form(
            "smp_ins",
            "Recording an SMP inspection",
            lambda rec: smp.inspect_smp(
                rec,
                sid,
                day,
                inspection_kind=kind,
                condition=cond,
                findings=findings or None,
                actions_required=actions or None,
            ),
            f"Inspection {{out}} of SMP {sid} saved.",
        )


def _maintain_form(sid: int) -> None:
    from ...records import smp

    records_ui.form_start("smp_mnt", ("smp_mnt_",))
    with st.form("smp_mnt_form"):
        st.markdown(f"**Record maintenance of SMP {sid}**")
        day = st.date_input("Date", value=dt.date.today(), key="smp_mnt_date")
        actions = st.text_input("What was done", key="smp_mnt_actions")
        by = st.text_input("Performed by (default: you)", key="smp_mnt_by")
        go = records_ui.submit_button("Save maintenance", "smp_mnt")
    if go:
        records_ui.save_form(
            "smp_mnt",
            "Recording SMP maintenance",
            lambda rec: smp.maintain_smp(
                rec, sid, day, actions=actions or None, performed_by=by or None
            ),
            f"Maintenance {{out}} of SMP {sid} saved.",
        )


def _add_form() -> None:
    from ...records import smp, smp_fields

    records_ui.form_start("smp_add", ("smp_add_",))
    with st.expander("Add a practice", expanded=False), st.form("smp_add_form"):
        name = st.text_input("Name", key="smp_add_name")
        kind = st.selectbox(
            "Kind",
            list(smp_fields.SMP_KINDS),
            format_func=smp_fields.kind_label,
            key="smp_add_kind",
        )
        where = st.text_input(
            "Location: X,Y or WKT (POLYGON ((...))) in the workspace's CRS", key="smp_add_where"
        )
        owner = st.text_input("Owner", key="smp_add_owner")
        c1, c2 = st.columns(2)
        ins = c1.number_input("Inspect every (months)", 0, 120, 12, key="smp_add_ins")
        mnt = c2.number_input("Maintain every (months)", 0, 120, 12, key="smp_add_mnt")
        engineer = st.text_input("As-built certified by (PE)", key="smp_add_pe")
        go = records_ui.submit_button("Add practice", "smp_add")
    if go:
        try:
            geom = _location(where)
            fields = {
                "owner": owner or None,
                "inspection_months": int(ins) or None,
                "maintenance_months": int(mnt) or None,
                "as_built_engineer": engineer or None,
            }
            sid = smp.add_smp(
                _write("Adding an SMP"),
                name,
                kind,
                geom,
                **{k: v for k, v in fields.items() if v is not None},
            )
        except Exception as exc:  # noqa: BLE001 - worded for the user
            records_ui._error(exc)
            return
        records_ui.form_saved("smp_add", f"SMP {sid} ({name}) added.")


def _location(text: str) -> Any:
    import shapely

    from ...core.errors import DataError

    text = (text or "").strip()
    if "," in text and "(" not in text:
        try:
            x, y = (float(v) for v in text.split(","))
        except ValueError:
            raise DataError(f"Location {text!r}: give X,Y (two numbers).") from None
        return shapely.Point(x, y)
    return text


def _import_form() -> None:
    from ...records import smp_import

    with st.expander("Import practices from a file", expanded=False):
        up = st.file_uploader(
            "GeoPackage or GeoJSON with the practices (columns name and kind at least)",
            type=["gpkg", "geojson", "json"],
            key="smp_import_file",
        )
        if up is None or not st.button("Import", key="smp_import_go"):
            return
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / Path(up.name).name
            path.write_bytes(up.getvalue())
            try:
                out = smp_import.import_smps(_write("Importing SMPs"), path)
            except Exception as exc:  # noqa: BLE001 - worded for the user
                records_ui._error(exc)
                return
        st.success(
            f"{len(out['added'])} added, {len(out['updated'])} updated, "
            f"{len(out['unchanged'])} unchanged."
        )
