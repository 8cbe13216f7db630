"""IDDE cases: deadlines, steps, the notice of violation, and the track-down on the map."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import streamlit as st

from ms4map.core.nulls import is_na_or_empty

from .. import auth, mapview, records_ui, state, widgets

if TYPE_CHECKING:
    from ...pipeline import PipelineResult

#: Row colours of the deadlines table.
DEADLINE_HIGHLIGHT = {"overdue": "#f4a6a6", "due": "#fde9a9", "late": "#f9d2c0"}


def render() -> None:
    st.title("IDDE cases")
    st.caption(
        "Cases opened from an inspection or a complaint, advanced step by step; their "
        "deadlines from the municipality profile; the notice of violation; and the "
        "track-down: the next structure to sample, on the map."
    )
    rec = records_ui.reader()
    if rec is None:
        st.info("No records yet: open a case from the Outfall investigation page.")
        records_ui.read_only_note("cases")
        return
    cases = rec.cases()
    if not len(cases):
        st.info("No case yet: open one from the Outfall investigation page.")
        records_ui.read_only_note("cases")
        return
    dl = rec.deadlines()
    deadline_table(dl)
    shown = pd.DataFrame(cases.drop(columns="geometry"))
    cols = ["case_id", "outfall_id", "status", "step_on", "origin", "opened_on"]
    cols += ["source_parcel_id", "notice_on", "remedy_deadline", "created_by"]
    st.dataframe(shown[[c for c in cols if c in shown]], hide_index=True, width="stretch")
    ids = [int(c) for c in cases["case_id"]]
    # kept by case id; the labels stay the same when a step is recorded (a label that
    # changed made the browser reset the box to another case now and then), and the
    # case's current status is said under the box
    cid = widgets.sticky_select(
        st,
        "Case",
        ids,
        default=ids[-1],
        format_func=lambda c: f"case {c} — {_case(cases, c)['outfall_id']}",
        key="cases_case",
        query="case",  # a reload keeps the chosen case
    )
    case = _case(cases, cid)
    st.caption(f"Case {cid} is at the step: {state.data_text(case['status'])}.")
    records_ui.read_only_note("cases")
    steps = rec.cases(history=True)
    steps = steps[steps["case_id"] == cid]
    st.markdown(f"**Steps of case {cid}** at {state.data_text(case['outfall_id'])}")
    st.dataframe(
        pd.DataFrame(steps.drop(columns="geometry"))[["version", "step", "step_on", "created_by"]],
        hide_index=True,
        width="stretch",
    )
    advance_form(cid, case)
    ctx = state.context()
    notice_download(ctx, case, rec.profile_of(case))
    track_down(ctx, rec, cid, case)


def _case(cases: Any, cid: int) -> dict[str, Any]:
    return cases[cases["case_id"] == int(cid)].iloc[0].to_dict()


def deadline_table(dl: pd.DataFrame) -> None:
    """Every deadline, due and overdue ones highlighted."""
    if not len(dl):
        st.caption("No deadline has started yet (they start with the notice of violation).")
        return
    n_over = int((dl["status"] == "overdue").sum())
    n_due = int((dl["status"] == "due").sum())
    (st.error if n_over else st.info)(
        f"Deadlines: {n_over} overdue, {n_due} due (from the municipality profile)."
    )

    def colour(row: pd.Series) -> list[str]:
        c = DEADLINE_HIGHLIGHT.get(str(row["status"]))
        return [f"background-color: {c}" if c else ""] * len(row)

    st.dataframe(dl.style.apply(colour, axis=1), hide_index=True, width="stretch")


def next_steps(case: dict[str, Any]) -> list[str]:
    """The steps a case can take next (not done, their prerequisites done, not closed)."""
    from ...records import STEPS

    if not is_na_or_empty(case.get("closed_on")):
        return []
    out = []
    for step, (col, needs) in STEPS.items():
        if step == "opened" or not is_na_or_empty(case.get(col)):
            continue
        if all(not is_na_or_empty(case.get(n)) for n in needs):
            out.append(step)
    return out


def advance_form(cid: int, case: dict[str, Any]) -> None:
    if auth.current().role != "smo":
        return
    options = next_steps(case)
    if not options:
        st.caption(f"Case {cid} is closed: no further step.")
        return
    st.markdown(f"**Advance case {cid}**")
    records_ui.form_start(
        "cases_step",
        (
            "cases_step_date",
            "cases_parcel",
            "cases_deadline",
            "cases_outcome",
            "cases_reason",
            "cases_notes",
        ),
    )
    step = st.selectbox("Next step", options, key="cases_step")
    with st.form("cases_step_form"):
        day = st.date_input(
            "Date", value=dt.date.today(), max_value=dt.date.today(), key="cases_step_date"
        )
        kw: dict[str, Any] = {}
        if step == "source_found":
            kw["parcel_id"] = st.text_input("Source parcel id (SBL)", key="cases_parcel") or None
        if step == "notice_sent":
            kw["deadline"] = st.date_input(
                "Remedy deadline (blank = the profile's remedy period; required when the "
                "profile leaves it to the notice)",
                value=None,
                key="cases_deadline",
            )
        if step == "appeal_decided":
            kw["outcome"] = st.selectbox("Outcome", ["upheld", "overturned"], key="cases_outcome")
        if step == "closed":
            kw["reason"] = st.text_input("Why closed", key="cases_reason") or None
        kw["notes"] = st.text_input("Notes", key="cases_notes") or None
        submitted = records_ui.submit_button("Record the step", "cases_step")
    if submitted:
        try:
            v = records_ui.save_step(cid, step, day, **kw)
        except Exception as exc:  # noqa: BLE001
            records_ui._error(exc)
            return
        records_ui.form_saved("cases_step", f"Case {cid}: {step} recorded (version {v}).")


def notice_download(ctx: Any, case: dict[str, Any], profile: Any) -> None:
    """The notice of violation of the case, filled from the case and the source parcel,
    under the profile the case is judged by (``None``: not at hand, said)."""
    from ... import idde

    pid = case.get("source_parcel_id")
    if is_na_or_empty(pid):
        st.caption("The notice of violation is printed once the source parcel is found.")
        return
    if ctx is None:
        return
    if profile is None:
        from ...records.case_profile import profile_not_known

        st.warning(profile_not_known(case.get("profile")))
        return
    violation = st.selectbox(
        "Violation",
        list(idde.VIOLATIONS),
        index=list(idde.VIOLATIONS).index("illicit_discharge"),
        format_func=lambda c: idde.VIOLATIONS[c]["label"],
        key="cases_violation",
    )
    finding = (
        f"Case {case['case_id']} at outfall {case['outfall_id']}, opened {case['opened_on']} "
        f"({case.get('origin')}); source traced to this parcel on {case.get('source_found_on')}."
    )
    if not is_na_or_empty(case.get("description")):
        finding += f" {case['description']}"
    try:
        notice = idde.notice_of_violation(
            ctx.result,
            str(pid),
            violation=violation,
            workspace=ctx.ws,
            profile=profile,
            issued=None if is_na_or_empty(case.get("notice_on")) else case["notice_on"],
            deadline=None
            if is_na_or_empty(case.get("remedy_deadline"))
            else case["remedy_deadline"],
            finding=finding,
        )
    except Exception as exc:  # noqa: BLE001
        st.error(f"The notice could not be drafted: {state.plain(exc)}")
        return
    widgets.notice_download(
        notice,
        "Print the notice of violation (HTML)",
        file_name=f"notice_case{case['case_id']}_{pid}.html",
        key="cases_notice",
    )


def track_down(ctx: Any, rec: Any, cid: int, case: dict[str, Any]) -> None:
    """The next structure to sample, highlighted with why; its result proposes the next."""
    import geopandas as gpd

    st.subheader("Track-down")
    if ctx is None or ctx.result is None:
        st.info("The sampling plan needs the drainage analysis (not available).")
        return
    try:
        nxt = rec.next_sample(cid, result=ctx.result)
    except Exception as exc:  # noqa: BLE001
        st.error(f"No sampling plan: {state.plain(exc)}")
        return
    sid = nxt.get("struct_id")
    if sid:
        st.markdown(
            f"**Next structure to sample: {state.data_text(sid)}** "
            f"({state.data_text(nxt.get('kind'))})"
        )
    else:
        st.markdown("**The source reach is isolated**: no structure left to split.")
    st.caption(nxt["reason"])
    ws = ctx.ws
    structures = ws.layers.get("structures")
    highlights: dict[str, Any] = {}
    focus = None
    if sid and structures is not None:
        g = structures[structures["struct_id"].astype(str) == str(sid)].geometry
        if len(g):
            highlights["next structure to sample"] = gpd.GeoSeries(list(g), crs=structures.crs)
            focus = g.iloc[0]
    suspect = suspect_network(ctx.result, str(case["outfall_id"]), nxt["followed"])
    if suspect is not None:
        nodes, edges = suspect
        st.caption(
            f"Still suspect: {len(nodes)} structure(s) and {len(edges)} conveyance part(s) "
            f"upstream of {case['outfall_id']}"
            + (f", after {len(nxt['followed'])} sample(s) on the plan." if nxt["followed"] else ".")
        )
        if len(edges):
            highlights["still suspect network"] = edges.geometry
            from shapely import box

            b = edges.total_bounds
            area = box(*b)
            focus = area if focus is None else box(*area.union(focus).bounds)
    smp = rec.samples(cid)
    if len(smp):
        highlights["samples taken"] = gpd.GeoSeries(list(smp.geometry), crs=smp.crs).to_crs(ws.crs)
        st.dataframe(
            pd.DataFrame(smp.drop(columns="geometry"))[
                ["sample_id", "struct_id", "date", "result", "sampler"]
            ],
            hide_index=True,
            width="stretch",
        )
    layers = state.map_layers(ws, ctx.result)
    mapview.show_map(
        "cases_map",
        ws,
        layers,
        visible=[k for k in ("parcels", "conveyances", "structures", "outfalls") if k in layers],
        highlights=highlights,
        focus=focus,
        focus_zoom=(14, 18),
        height=420,
    )
    if auth.current().role != "smo" or not is_na_or_empty(case.get("closed_on")):
        return
    from ...records import SAMPLE_FIELDS

    records_ui.form_start("cases_sample", ("cases_sample_",))
    propose_structure(cid, sid)
    with st.form("cases_sample_form"):
        st.markdown("**Record a sample**")
        c = st.columns(4)
        struct = c[0].text_input("Structure", key=STRUCT_KEY)
        day = c[1].date_input(
            "Date", value=dt.date.today(), max_value=dt.date.today(), key="cases_sample_date"
        )
        result = c[2].selectbox(
            "Result",
            ["flow", "clean"],
            format_func=lambda r: {"flow": "flow / pollutant found", "clean": "clean"}[r],
            key="cases_sample_result",
        )
        det = c[3].number_input("Detergents (mg/L)", value=None, step=0.1, key="cases_sample_det")
        tests: dict[str, Any] = {}
        with st.expander("The other field tests and notes"):
            cols = st.columns(3)
            extra = [f for f in SAMPLE_FIELDS if f.name not in ("result", "detergents")]
            for i, f in enumerate(extra):
                with cols[i % 3]:
                    v = records_ui._field_widget(f, "cases_sample_f", auth.current().name)
                if v is not None:
                    tests[f.name] = v
        submitted = records_ui.submit_button("Save the sample", "cases_sample")
    if submitted:
        fields: dict[str, Any] = {**tests, "result": result}
        if det is not None:
            fields["detergents"] = det
        try:
            n = records_ui.save_sample(cid, struct.strip(), day, **fields)
        except Exception as exc:  # noqa: BLE001
            records_ui._error(exc)
            return
        records_ui.form_saved(
            "cases_sample",
            f"Sample {n} saved: {struct.strip()} on {day}, {fields['result']} (case {cid}).",
        )


#: The Structure box of the sample form.
STRUCT_KEY = "cases_sample_struct"


def propose_structure(cid: int, sid: str | None) -> None:
    """Put the plan's next structure in the Structure box when the proposal changes.

    A keyed text box ignores a new ``value=`` after its first run, so the box is set
    through its session state, before it is drawn, each time the case or the proposal
    differs from the last one proposed (what the user typed over the same proposal
    stays).
    """
    proposal = (int(cid), sid or "")
    if st.session_state.get(f"{STRUCT_KEY}_proposed") != proposal or (
        STRUCT_KEY not in st.session_state
    ):
        st.session_state[f"{STRUCT_KEY}_proposed"] = proposal
        st.session_state[STRUCT_KEY] = proposal[1]


def suspect_network(
    result: PipelineResult, outfall_id: str, followed: list[str]
) -> tuple[Any, Any] | None:
    """The structures and conveyances still suspect after the samples on the plan.

    Everything upstream of the outfall, then for each sample followed (``"MH-1: flow"``):
    flow keeps only what is upstream of that structure, clean removes it.
    """
    from ...network import trace_upstream

    net = getattr(result, "network", None)
    if net is None:
        return None
    try:
        up = trace_upstream(net, outfall_id)
    except Exception:  # noqa: BLE001 - an outfall off the network: no area to show
        return None
    structs = set(up.struct_ids)
    edges = set(map(int, np.flatnonzero(net.edges.index.isin(up.edges.index))))
    for f in followed:
        sid, _, res = f.partition(": ")
        s_up = trace_upstream(net, sid)
        s_structs = set(s_up.struct_ids)
        s_edges = set(map(int, np.flatnonzero(net.edges.index.isin(s_up.edges.index))))
        if res == "flow":
            structs &= s_structs
            edges &= s_edges
        else:
            structs -= s_structs
            edges -= s_edges
    nodes = net.nodes[net.nodes["struct_id"].astype(str).isin(structs)]
    return nodes, net.edges.iloc[sorted(edges)]
