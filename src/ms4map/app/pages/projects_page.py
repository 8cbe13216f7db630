"""Projects: land development projects from the determination to maintenance, and their construction."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pandas as pd
import streamlit as st

from ...records import construction as con
from ...records import projects as prj
from ...records.project_fields import GUARANTEE_KINDS, STATUSES, construction_rules
from .. import auth, records_ui, state, widgets

#: A project's statuses in words.
STATUS_WORDS = {
    "screened": "screened",
    "swppp_submitted": "SWPPP submitted",
    "approved": "SWPPP approved",
    "under_construction": "under construction",
    "as_built_received": "as-built plans received",
    "one_year_inspected": "one-year inspection: acceptable",
    "guarantee_released": "guarantee released",
    "maintained": "maintained by the owner",
}
#: Construction rows in words.
KIND_WORDS = {
    "notice": "stage notice",
    "inspection": "inspection",
    "violation": "violation notice",
    "stop_work": "stop-work order",
}
GUARANTEE_WORDS = {
    "performance_bond": "performance bond",
    "cash_escrow": "cash escrow",
    "letter_of_credit": "letter of credit",
}


def _words(code: Any) -> str:
    return code.replace("_", " ") if isinstance(code, str) else ""


def render() -> None:
    st.title("Projects")
    st.caption(
        "Land development projects: a site's determination saved as a project, its SWPPP, "
        "approval, construction, as-built plans, one-year inspection, guarantee and "
        "maintenance, each step in the order the law allows; and the construction "
        "oversight: stage notices (late under 48 hours), inspections, violation notices "
        "and stop-work orders."
    )
    rec = records_ui.reader()
    smo = auth.current().role == "smo"
    if smo:
        _new_project_form()
    if rec is None or prj.projects(rec).empty:
        st.info("No project yet: save a determination from the Site screening page as one.")
        records_ui.read_only_note("projects")
        return
    table = prj.projects(rec)
    shown = pd.DataFrame(
        {
            "Project": table["project_id"],
            "Name": table["project_name"],
            "Applicant": table["applicant"],
            "Status": [STATUS_WORDS.get(s, s) for s in table["status"]],
            "Since": table["step_on"],
            "Next step": [STATUS_WORDS.get(s, "none") if s else "none" for s in table["next_step"]],
        }
    )
    st.dataframe(shown, hide_index=True, width="stretch", key="projects_table")
    ids = [int(i) for i in table["project_id"]]
    names = dict(zip(ids, table["project_name"], strict=True))
    pid = widgets.sticky_select(
        st,
        "Project",
        ids,
        default=ids[-1],
        format_func=lambda i: f"project {i} — {names[i]}",
        key="projects_project",
        query="project",
    )
    records_ui.read_only_note("projects")
    _state(rec, pid)
    if smo:
        _forms(rec, pid)


def _state(rec: Any, pid: int) -> None:
    s = con.project_state(rec, pid)
    p = prj.project(rec, pid)
    st.subheader(f"Project {pid}: {state.data_text(p['project_name'])}")
    nxt = STATUS_WORDS.get(s["next_step"], "none (the last step)") if s["next_step"] else "none"
    st.markdown(
        f"**Status:** {STATUS_WORDS[s['status']]} since {s['step_on']}. **Next step:** {nxt}."
    )
    if s["blocked_by"]:
        st.error(
            f"Only site stabilization work may proceed: {s['blocked_by']}. The project does "
            "not move on until the violations are corrected and the order lifted."
        )
    g = s["guarantee"]
    kind = GUARANTEE_WORDS.get(g["kind"], "none recorded")
    amount = "" if g["amount"] is None else f" of ${float(g['amount']):,.0f}"
    easement = (
        f"recorded ({state.data_text(p.get('easement_where') or '')})"
        if p.get("easement_recorded")
        else "not recorded"
    )
    lines = [
        f"Applicant: {state.data_text(p.get('applicant') or '—')}",
        f"Site: {state.data_text(p.get('site_label') or '—')}",
        "Post-construction practices required: " + ("yes" if p.get("facility_required") else "no"),
        f"Guarantee: {kind}{amount} ({g['state']})",
        f"Maintenance easement: {easement}",
        "Certificate of occupancy: " + ("withheld" if s["co_hold"] else "not withheld"),
        f"Late stage notices: {s['late_notices']}",
    ]
    st.markdown("\n".join(f"- {line}" for line in lines))
    hist = prj.project_history(rec, pid)
    st.markdown("**Steps and changes** (who and when, from the audit trail)")
    st.dataframe(
        pd.DataFrame(
            {
                "Version": hist["version"],
                "Status": [STATUS_WORDS.get(x, x) for x in hist["status"]],
                "Step date": hist["step_on"],
                "Recorded": hist["created_at"],
                "By": hist["created_by"],
            }
        ),
        hide_index=True,
        width="stretch",
        key="projects_history",
    )
    rows = con.construction(rec, pid)
    st.markdown("**Construction oversight**")
    if rows.empty:
        st.caption("No stage notice, inspection, violation or stop-work order yet.")
    else:
        st.dataframe(
            pd.DataFrame(
                {
                    "Id": rows["event_id"],
                    "What": [KIND_WORDS.get(k, k) for k in rows["kind"]],
                    "Date": rows["date"],
                    "Stage": [_words(x) for x in rows["stage"]],
                    "Hours ahead": rows["hours_ahead"],
                    "Late": ["late" if x is True else "" for x in rows["late"]],
                    "Result / nature": [
                        _words(r) if isinstance(r, str) else (n if isinstance(n, str) else "")
                        for r, n in zip(rows["result"], rows["nature"], strict=True)
                    ],
                    "Corrected": rows["corrected_on"],
                    "Lifted": rows["lifted_on"],
                }
            ),
            hide_index=True,
            width="stretch",
            key="projects_construction",
        )
    with st.expander("The determination saved with the project"):
        st.caption(f"SHA-256 of the document as saved: {p['determination_sha256']}")
        st.json(json.loads(p["determination"]), expanded=False)


# -- forms (the SMO) -------------------------------------------------------------------
def _new_project_form() -> None:
    with st.expander("Save a determination as a project"):
        records_ui.form_start("projects_new", ("projects_new_",))
        det = st.session_state.get("screen_det")
        source = ["the determination on the Site screening page", "a determination file (JSON)"]
        pick = st.radio("From", source, key="projects_new_from", index=0 if det else 1)
        upload = None
        if pick == source[1]:
            upload = st.file_uploader(
                "Determination (ms4map screen --json)", type=["json"], key="projects_new_file"
            )
        elif det is None:
            st.caption("No determination on the Site screening page yet in this session.")
        with st.form("projects_new_form"):
            name = st.text_input("Project name (blank: the application's)", key="projects_new_name")
            applicant = st.text_input(
                "Applicant (blank: the application's)", key="projects_new_app"
            )
            day = st.date_input("Saved on", value=dt.date.today(), max_value=dt.date.today(),
                                key="projects_new_day")  # fmt: skip
            go = records_ui.submit_button("Save the project", "projects_new")
        if go:
            doc = upload.getvalue().decode("utf-8", "replace") if upload is not None else det
            if doc is None:
                st.error("Give a determination: screen a site first, or upload its JSON.")
                return
            records_ui.save_form(
                "projects_new",
                "Saving a project",
                lambda rec: prj.save_project(
                    rec, doc, date=day, name=name or None, applicant=applicant or None
                ),
                "Project {out} saved.",
            )


def _forms(rec: Any, pid: int) -> None:
    p = prj.project(rec, pid)
    rules = construction_rules(rec.profile_of({"profile": p["profile"]}) or rec.profile)
    today = dt.date.today()
    nxt = STATUSES[STATUSES.index(p["status"]) + 1] if p["status"] != STATUSES[-1] else None
    if nxt:
        with st.expander(f"Next step: {STATUS_WORDS[nxt]}"):
            records_ui.form_start("projects_step", ("projects_step_",))
            with st.form("projects_step_form"):
                day = st.date_input("Date", value=today, max_value=today, key="projects_step_day")
                kw: dict[str, Any] = {}
                if nxt == "approved":
                    kw["approved_by"] = st.text_input("Approved by", key="projects_step_by")
                if nxt == "as_built_received":
                    kw["engineer"] = st.text_input(
                        "Certified by (professional engineer)", key="projects_step_pe"
                    )
                if nxt == "one_year_inspected":
                    kw["acceptable"] = st.checkbox(
                        "The facilities were found acceptable", key="projects_step_ok"
                    )
                kw["notes"] = st.text_input("Notes", key="projects_step_notes") or None
                go = records_ui.submit_button("Record the step", "projects_step")
            if go:
                records_ui.save_form(
                    "projects_step",
                    "Advancing a project",
                    lambda r: prj.advance_project(r, pid, nxt, day, **kw),
                    f"Project {pid}: {STATUS_WORDS[nxt]} recorded (version {{out}}).",
                )
    with st.expander("Guarantee, maintenance easement, certificate of occupancy"):
        records_ui.form_start("projects_upd", ("projects_upd_",))
        kinds = [k for k in GUARANTEE_KINDS if k in rules.guarantee_kinds]
        with st.form("projects_upd_form"):
            kind = st.selectbox("Guarantee", [None, *kinds], key="projects_upd_kind",
                                format_func=lambda k: GUARANTEE_WORDS.get(k, "—"))  # fmt: skip
            amount = st.number_input("Amount (USD)", min_value=0.0, value=None,
                                     key="projects_upd_amount")  # fmt: skip
            posted = st.date_input("Posted on", value=None, key="projects_upd_posted")
            drawn = st.date_input("The town drew on it on", value=None, key="projects_upd_drawn")
            drawn_amount = st.number_input(
                "Amount drawn (USD)", min_value=0.0, value=None, key="projects_upd_drawn_amount"
            )
            easement = st.checkbox("Maintenance easement recorded", key="projects_upd_eas")
            where = st.text_input("Where recorded (e.g. County Clerk, liber/page)",
                                  key="projects_upd_where")  # fmt: skip
            on = st.date_input("Recorded on", value=None, key="projects_upd_on")
            hold = st.selectbox("Certificate of occupancy", ["unchanged", "withhold", "release"],
                                key="projects_upd_hold")  # fmt: skip
            go = records_ui.submit_button("Record the changes", "projects_upd")
        if go:
            fields = {
                "guarantee_kind": kind,
                "guarantee_amount": amount,
                "guarantee_posted_on": posted,
                "guarantee_drawn_on": drawn,
                "guarantee_drawn_amount": drawn_amount,
                "easement_recorded": True if easement else None,
                "easement_where": where or None,
                "easement_recorded_on": on,
                "co_hold": {"withhold": True, "release": False}.get(hold),
            }
            fields = {k: v for k, v in fields.items() if v is not None}
            records_ui.save_form(
                "projects_upd",
                "Changing a project",
                lambda r: prj.update_project(r, pid, expected_version=p["version"], **fields),
                f"Project {pid} updated (version {{out}}).",
            )
    _construction_forms(rec, pid, rules)


def _construction_forms(rec: Any, pid: int, rules: Any) -> None:
    today = dt.date.today()
    with st.expander("Stage notice received"):
        records_ui.form_start("projects_note", ("projects_note_",))
        with st.form("projects_note_form"):
            stage = st.selectbox("Stage", list(rules.notice_stages), format_func=_words,
                                 key="projects_note_stage")  # fmt: skip
            c = st.columns(2)
            sd = c[0].date_input("Stage on", value=today, key="projects_note_sd")
            stime = c[1].time_input("at", value=dt.time(8, 0), key="projects_note_st")
            nd = c[0].date_input("Notice received on", value=today, max_value=today,
                                 key="projects_note_nd")  # fmt: skip
            ntime = c[1].time_input("at ", value=dt.time(8, 0), key="projects_note_nt")
            go = records_ui.submit_button("Record the notice", "projects_note")
        if go:
            records_ui.save_form(
                "projects_note",
                "Recording a stage notice",
                lambda r: con.notify_stage(
                    r,
                    pid,
                    stage,
                    dt.datetime.combine(sd, stime),
                    notified_at=dt.datetime.combine(nd, ntime),
                ),
                "Stage notice {out} recorded.",
            )
    with st.expander("Construction inspection"):
        records_ui.form_start("projects_insp", ("projects_insp_",))
        with st.form("projects_insp_form"):
            day = st.date_input("Date", value=today, max_value=today, key="projects_insp_day")
            result = st.selectbox("Result", ["approved", "violations"], format_func=_words,
                                  key="projects_insp_result")  # fmt: skip
            findings = st.text_area("Findings", key="projects_insp_findings")
            go = records_ui.submit_button("Record the inspection", "projects_insp")
        if go:
            records_ui.save_form(
                "projects_insp",
                "Recording a construction inspection",
                lambda r: con.inspect_site(r, pid, day, findings=findings or None, result=result),
                "Inspection {out} recorded.",
            )
    _violation_forms(rec, pid, today)


def _violation_forms(rec: Any, pid: int, today: dt.date) -> None:
    s = con.project_state(rec, pid)
    with st.expander("Violation notice (written)"):
        records_ui.form_start("projects_viol", ("projects_viol_",))
        with st.form("projects_viol_form"):
            day = st.date_input("Date", value=today, max_value=today, key="projects_viol_day")
            nature = st.text_input("Nature of the violation", key="projects_viol_nature")
            actions = st.text_input("Required corrective actions", key="projects_viol_actions")
            deadline = st.date_input("Remedy deadline", value=None, key="projects_viol_dl")
            go = records_ui.submit_button("Record the violation notice", "projects_viol")
        if go:
            records_ui.save_form(
                "projects_viol",
                "Recording a violation notice",
                lambda r: con.issue_violation(
                    r,
                    pid,
                    day,
                    nature=nature,
                    corrective_actions=actions,
                    remedy_deadline=deadline,
                ),
                "Violation notice {out} recorded.",
            )
    if s["open_violations"]:
        with st.expander("Violation corrected and approved"):
            records_ui.form_start("projects_corr", ("projects_corr_",))
            with st.form("projects_corr_form"):
                vid = st.selectbox("Violation notice", s["open_violations"], key="projects_corr_id")
                day = st.date_input("Date", value=today, max_value=today, key="projects_corr_day")
                go = records_ui.submit_button("Record the correction", "projects_corr")
            if go:
                records_ui.save_form(
                    "projects_corr",
                    "Recording a corrected violation",
                    lambda r: con.correct_violation(r, pid, vid, day),
                    f"Violation notice {vid} corrected.",
                )
    if s["stop_work_orders"]:
        _lift_form(pid, s, today)
    else:
        with st.expander("Stop-work order"):
            records_ui.form_start("projects_stop", ("projects_stop_",))
            with st.form("projects_stop_form"):
                day = st.date_input("Date", value=today, max_value=today, key="projects_stop_day")
                reason = st.text_input("For the violations", key="projects_stop_reason")
                go = records_ui.submit_button("Issue the stop-work order", "projects_stop")
            if go:
                records_ui.save_form(
                    "projects_stop",
                    "Issuing a stop-work order",
                    lambda r: con.stop_work(r, pid, day, reason=reason),
                    "Stop-work order {out} recorded.",
                )


def _lift_form(pid: int, s: dict[str, Any], today: dt.date) -> None:
    with st.expander("Lift the stop-work order"):
        records_ui.form_start("projects_lift", ("projects_lift_",))
        with st.form("projects_lift_form"):
            day = st.date_input("Date", value=today, max_value=today, key="projects_lift_day")
            go = records_ui.submit_button("Lift the order", "projects_lift")
        if go:
            oid = s["stop_work_orders"][-1]
            records_ui.save_form(
                "projects_lift",
                "Lifting a stop-work order",
                lambda r: con.lift_stop_work(r, pid, day, event_id=oid),
                f"Stop-work order {oid} lifted.",
            )
