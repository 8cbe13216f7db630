"""The IDDE records in the app: where they live, reading them, the forms that write them.

Pages call these functions; the records themselves are :mod:`ms4map.records`.  Reading
works for everyone (a viewer, or nobody logged in); every ``save_*`` function first
calls :func:`ms4map.app.auth.require_smo` on the server and then opens the records with
the session's user and role, so the audit trail names who did it and the store refuses
a viewer a second time.

Where: the demo town's records go to ``MS4MAP_DATA_DIR/records/demo.records.gpkg`` (the
app writes only in its data folder); a workspace opened from a path keeps its records
beside it (``town.records.gpkg``, the file the ``ms4map inspect`` / ``case`` commands
use), or in ``$MS4MAP_RECORDS``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from ..core.tables import csv_text
from . import auth, state
from .state import town_profile
from .upload import app_data_dir

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = [
    "CASE_COLOURS",
    "FIELD_TESTS",
    "inspection_form",
    "open_case_form",
    "outfall_history",
    "reader",
    "records_location",
    "save_case",
    "save_inspection",
    "save_sample",
    "save_step",
]

#: Field tests charted over time (mg/L).
FIELD_TESTS = ("ammonia", "detergents", "fluoride", "potassium")
#: Rings of the open-cases layer.
CASE_COLOURS = {"open case": "#7b3294", "open case, deadline overdue": "#b2182b"}
_UNSET = "—"


# -- where and who -----------------------------------------------------------------------
def records_location() -> dict[str, Any] | None:
    """The workspace path and records file of the app's workspace (None: not supported)."""
    from ..datasets import get_path

    src = state.workspace_source()
    if src.get("unavailable"):
        return None  # a workspace that cannot be reopened: never the demo's records
    path = src.get("path")
    if path is None and not src.get("layers"):
        rec = app_data_dir() / "records" / "demo.records.gpkg"
        return {"workspace": str(get_path("alder_falls")), "records": str(rec), "layers": None}
    if path is None:
        return None  # uploaded layers only: no workspace file to keep records with
    env = os.environ.get("MS4MAP_RECORDS")
    return {"workspace": str(path), "records": env or None, "layers": src.get("layers")}


@st.cache_resource(show_spinner=False, max_entries=8)
def _reader(key: str) -> Any:
    from ..records import open_records

    loc = json.loads(key)
    return open_records(
        loc["workspace"],
        user="viewer",
        role="viewer",
        records=loc["records"],
        layers=loc["layers"],
        profile=loc["profile"],
    )


def _rec_file(loc: dict[str, Any]) -> Path:
    from ..records import records_path

    return Path(loc["records"]) if loc.get("records") else records_path(loc["workspace"])


def reader() -> Any | None:
    """The records opened read-only (None when there are none yet)."""
    loc = records_location()
    if loc is None or not _rec_file(loc).exists():
        return None
    return _reader(json.dumps({**loc, "profile": town_profile()}, sort_keys=True, default=str))


def _writer(what: str) -> Any:
    """The server-side check, then the records opened as the session's user and role."""
    from ..records import open_records, users

    s = auth.require_smo(what)
    loc = records_location()
    if loc is None:
        raise PermissionError(
            f"{what} is refused: records are kept with a workspace opened from a path "
            "(Data page: 'Open a workspace'), not with uploaded layers only."
        )
    rec_file = _rec_file(loc)
    rec_file.parent.mkdir(parents=True, exist_ok=True)
    return open_records(
        loc["workspace"],
        user=s.name,
        role=s.role,
        records=str(rec_file),
        layers=loc["layers"],
        users_file=users.users_file_path(),
        profile=town_profile(),  # a case opened here records the town's profile
    )


# -- writes (each one: require_smo, then the store) ---------------------------------------
def save_inspection(
    outfall_id: str,
    date: dt.date | str,
    fields: dict[str, Any],
    photos: list[tuple[str, bytes]] = (),
) -> int:
    """Record an inspection and its photos; every photo is checked before anything is written."""
    from ..records import check_photo

    rec = _writer("Recording an inspection")
    for name, data in photos:
        check_photo(data, filename=name)
    iid = rec.add_inspection(outfall_id, date, **fields)
    for name, data in photos:
        rec.attach("inspections", iid, data, filename=name)
    return iid


def save_case(outfall_id: str, date: dt.date | str, **kwargs: Any) -> int:
    """Open a case (origin ``complaint`` or ``finding``, optionally from an inspection)."""
    return _writer("Opening a case").open_case(outfall_id, date, **kwargs)


def save_step(case_id: int, step: str, date: dt.date | str, **kwargs: Any) -> int:
    """Record the next step of a case."""
    return _writer("Advancing a case").advance_case(case_id, step, date, **kwargs)


def save_sample(case_id: int, struct_id: str, date: dt.date | str, **fields: Any) -> int:
    """Record a track-down sample."""
    return _writer("Recording a sample").add_sample(case_id, struct_id, date, **fields)


def save_override(key: str, value: int, *, reason: str, year: int, period: str) -> int:
    """Type over a count of the compliance pack (recorded in the audit trail)."""
    rec = _writer("Overriding a count of the compliance pack")
    return rec.override(key, value, reason=reason, year=year, period=period)


def save_move(outfall_id: str, inspection_id: int, reason: str) -> int:
    """Accept the position an inspection found for an outfall (recorded in the audit trail)."""
    rec = _writer("Accepting an outfall's moved position")
    return rec.accept_move(outfall_id, inspection_id=inspection_id, reason=reason)


def read_only_note(key: str) -> None:
    """Say why there is no form (the role, no login, no users file)."""
    s = auth.current()
    if not s.users_file:
        st.info(
            "Records are read-only: the app has no users. To record inspections and cases, "
            f"add the SMO on the server: `{auth.ADD_USER_HINT}`, then reload and log in."
        )
    elif s.role != "smo":
        st.caption(f"You are logged in as {s.name} ({s.role}): records are read-only for you.")


def _error(exc: BaseException) -> None:
    from ..core.errors import Ms4mapError

    if isinstance(exc, PermissionError | Ms4mapError):
        st.error(str(exc))
    else:  # pragma: no cover - a bug: say what
        st.error(f"{type(exc).__name__}: {state.plain(exc)}")


# -- forms: keep what was typed until it is saved -----------------------------------------
def form_start(name: str, prefixes: tuple[str, ...]) -> None:
    """Before a form is drawn: show the confirmation of the last save (until the form's
    :func:`submit_button` is pressed again) and, after a save, empty its fields (the keys
    starting with ``prefixes``).

    Forms are not ``clear_on_submit``: a refused entry keeps everything typed and the
    error names the field to fix; only a saved entry empties the form (see
    :func:`form_saved`).
    """
    if st.session_state.get(_submit_key(name)):  # a new entry: its own answer follows
        st.session_state.pop(f"saved:{name}", None)
    # the confirmation stays until the form is submitted again: a rerun that only redraws
    # the page (the map answering, another widget) must not take it away
    saved = st.session_state.get(f"saved:{name}")
    if st.session_state.pop(f"{name}_clear", False):
        for k in [k for k in st.session_state if str(k).startswith(prefixes)]:
            del st.session_state[k]
    if saved:
        st.success(saved)


def _submit_key(name: str) -> str:
    # keys named "<what>:<form>" are outside the form's prefixes: clearing the form keeps them
    return f"submit:{name}"


def submit_button(label: str, name: str) -> bool:
    """The submit button of form ``name`` (see :func:`form_start`): pressing it ends the
    confirmation of the last save, which is otherwise shown on every run."""
    return st.form_submit_button(label, key=_submit_key(name))


def save_form(name: str, what: str, call: Callable[[Any], Any], message: str) -> None:
    """Save form ``name``'s entry: ``call(records)`` with the records opened for writing
    (``what`` names the change for the refusals); confirms ``message.format(out=...)``
    with what the call returned, or shows the refusal and keeps what was typed."""
    try:
        out = call(_writer(what))
    except Exception as exc:  # noqa: BLE001 - the message names the field and the fix
        _error(exc)
        return
    form_saved(name, message.format(out=out))


def form_saved(name: str, message: str) -> None:
    """After a save: the next run confirms it and starts the form empty, then reruns."""
    st.session_state[f"saved:{name}"] = message
    st.session_state[f"{name}_clear"] = True
    st.rerun()


# -- the inspection form -------------------------------------------------------------------
#: Words of the fields whose names do not say it (the position found in the field).
_FIELD_WORDS = {
    "found_lat": "Latitude found in the field",
    "found_lon": "Longitude found in the field",
}


def _label(f: Any) -> str:
    words = f.name.replace("_", " ").replace("temperature c", "temperature").capitalize()
    words = _FIELD_WORDS.get(f.name, words)
    words = "pH" if f.name == "ph" else words
    if f.kind == "number" and f.unit:
        return f"{words} ({f.unit})"
    if f.kind == "severity":
        return f"{words} (0-3, 0 = not present)"
    return words


def _field_widget(f: Any, key: str, user: str) -> Any:
    wkey = f"{key}_{f.name}"
    if f.kind == "text":
        if f.name == "notes":
            return st.text_area(_label(f), key=wkey) or None
        return st.text_input(_label(f), value=user, key=wkey) or None
    if f.kind == "time":
        return st.text_input(_label(f) + " (HH:MM)", key=wkey) or None
    if f.kind == "bool":
        v = st.selectbox(_label(f), [_UNSET, "yes", "no"], key=wkey)
        return None if v == _UNSET else v == "yes"
    if f.kind == "severity":
        v = st.selectbox(_label(f), [_UNSET, 0, 1, 2, 3], key=wkey)
        return None if v == _UNSET else int(v)
    if f.kind == "choice":
        v = st.selectbox(_label(f), [_UNSET, *f.choices], key=wkey)
        return None if v == _UNSET else v
    if f.kind in ("number", "int") and f.name in _FIELD_WORDS:  # a GPS position: ~0.1 m
        return st.number_input(_label(f), value=None, step=1e-6, format="%.6f", key=wkey)
    if f.kind in ("number", "int"):
        return st.number_input(_label(f), value=None, step=0.1, format="%.2f", key=wkey)
    return st.text_input(_label(f), key=wkey) or None


def inspection_form(key: str, outfall_id: str) -> int | None:
    """The ORI field sheet for one outfall (only for the SMO); returns a new inspection id."""
    from ..records import INSPECTION_FIELDS, MAX_PHOTO_BYTES

    s = auth.current()
    if s.role != "smo":
        read_only_note(key)
        return None
    if records_location() is None:
        st.info("Records are kept with a workspace opened from a path (Data page).")
        return None
    form_start(f"{key}_ins", (f"{key}_date", f"{key}_f_", f"{key}_photos"))
    with st.form(f"{key}_ins_form"):
        st.markdown(
            f"**Record an inspection of {state.data_text(outfall_id)}** (outfall reconnaissance)"
        )
        day = st.date_input(
            "Date", value=dt.date.today(), max_value=dt.date.today(), key=f"{key}_date"
        )
        cols = st.columns(3)
        fields: dict[str, Any] = {}
        for i, f in enumerate(INSPECTION_FIELDS):
            with cols[i % 3]:
                v = _field_widget(f, f"{key}_f", s.name)
            if v is not None:
                fields[f.name] = v
        photos = st.file_uploader(
            f"Photos (JPEG or PNG, checked by their content; at most "
            f"{MAX_PHOTO_BYTES // 2**20} MB each)",
            type=["jpg", "jpeg", "png"],
            accept_multiple_files=True,
            key=f"{key}_photos",
            **_upload_limit(MAX_PHOTO_BYTES),
        )
        submitted = submit_button("Save the inspection", f"{key}_ins")
    if not submitted:
        return None
    try:
        files = [(p.name, p.getvalue()) for p in (photos or [])]
        iid = save_inspection(outfall_id, day, fields, files)
    except Exception as exc:  # noqa: BLE001 - every refusal is shown
        _error(exc)
        return None
    # the history, the chart and the map show it at once; the form starts empty
    form_saved(
        f"{key}_ins",
        f"Inspection {iid} of {outfall_id} recorded by {s.name}"
        + (f" with {len(files)} photo(s)." if files else "."),
    )
    return iid  # pragma: no cover - st.rerun ends the run


def _upload_limit(max_bytes: int) -> dict[str, int]:
    """The uploader's own size limit, on Streamlit versions that have it."""
    import inspect

    if "max_upload_size" in inspect.signature(st.file_uploader).parameters:
        return {"max_upload_size": max(1, max_bytes // 2**20)}
    return {}


# -- history --------------------------------------------------------------------------------
def outfall_history(key: str, outfall_id: str) -> pd.DataFrame:
    """The outfall's inspections and samples (table) and its field tests over time (chart)."""
    rec = reader()
    if rec is None:
        st.caption(f"No records yet for {state.data_text(outfall_id)}.")
        return pd.DataFrame()
    oid = str(outfall_id)
    ins = rec.inspections()
    ins = ins[ins["outfall_id"].astype(str) == oid]
    cases = rec.cases()
    case_ids = set(cases.loc[cases["outfall_id"].astype(str) == oid, "case_id"].astype(int))
    smp = rec.samples()
    smp = smp[smp["case_id"].astype(int).isin(case_ids)] if len(smp) else smp
    att = rec.attachments()
    photos = (
        att[att["target_table"] == "inspections"].groupby("target_id").size()
        if len(att)
        else pd.Series(dtype=int)
    )
    rows = []
    for r in ins.to_dict("records"):
        rows.append(
            {
                "record": f"inspection {r['inspection_id']}",
                "date": r["date"],
                "where": oid,
                "by": r.get("inspector") or r.get("created_by"),
                "flow": r.get("flow_present"),
                "characterization": r.get("characterization"),
                "flow_type": r.get("flow_type"),
                **{t: r.get(t) for t in FIELD_TESTS},
                "photos": int(photos.get(r["inspection_id"], 0)),
            }
        )
    for r in smp.to_dict("records"):
        rows.append(
            {
                "record": f"sample {r['sample_id']} (case {r['case_id']})",
                "date": r["date"],
                "where": r["struct_id"],
                "by": r.get("sampler") or r.get("created_by"),
                "flow": r.get("flow_present"),
                "characterization": r.get("result"),
                "flow_type": r.get("flow_type"),
                **{t: r.get(t) for t in FIELD_TESTS},
                "photos": 0,
            }
        )
    hist = pd.DataFrame(rows)
    st.markdown(
        f"**History of {state.data_text(oid)}**: {len(ins)} inspection(s), {len(smp)} sample(s)"
    )
    if not len(hist):
        st.caption("Nothing recorded yet at this outfall.")
        return hist
    hist = sort_history(hist)
    st.dataframe(hist, hide_index=True, width="stretch", key=f"{key}_history")
    mine = (
        att[(att["target_table"] == "inspections") & att["target_id"].isin(ins["inspection_id"])]
        if len(att)
        else att
    )
    if len(mine):
        with st.expander(f"Photos ({len(mine)})"):
            shown = mine.sort_values("attachment_id").tail(12)
            for a in shown.to_dict("records"):
                st.image(
                    rec.attachment_data(int(a["attachment_id"])),
                    caption=f"inspection {a['target_id']}: {a['filename']}",
                    width=320,
                )
    chart = field_tests_chart(hist)
    if chart is not None:
        st.caption("Field tests over time (mg/L)")
        st.altair_chart(chart, width="stretch")
    return hist


def sort_history(hist: pd.DataFrame) -> pd.DataFrame:
    """Records by date, then inspections before samples, each by its number
    ("sample 2" before "sample 10")."""
    kind = hist["record"].astype(str).str.split(" ").str[0]
    num = pd.to_numeric(hist["record"].astype(str).str.extract(r"^\S+ (\d+)")[0], errors="coerce")
    order = pd.DataFrame({"d": hist["date"].astype(str), "k": kind, "n": num})
    idx = order.sort_values(["d", "k", "n"], kind="stable").index
    return hist.loc[idx].reset_index(drop=True)


def field_tests_chart(hist: pd.DataFrame) -> Any | None:
    """The field tests over time: a line with a point at every date (one date shows as
    points), the y axis from 0 to above the highest value; ``None`` without tests."""
    import altair as alt

    tests = hist[["date", *FIELD_TESTS]].copy()
    tests[list(FIELD_TESTS)] = tests[list(FIELD_TESTS)].apply(pd.to_numeric, errors="coerce")
    tests = tests.dropna(how="all", subset=list(FIELD_TESTS))
    if not len(tests):
        return None
    tests["date"] = pd.to_datetime(tests["date"])
    wide = tests.groupby("date")[list(FIELD_TESTS)].max().reset_index()
    long = wide.melt("date", var_name="test", value_name="mg/L").dropna(subset=["mg/L"])
    top = float(long["mg/L"].max())
    top = top * 1.15 if top > 0 else 1.0
    return (
        alt.Chart(long)
        .mark_line(point=alt.OverlayMarkDef(size=60))
        .encode(
            x=alt.X("date:T", title="date"),
            y=alt.Y("mg/L:Q", title="mg/L", scale=alt.Scale(domain=[0, top], nice=False)),
            color=alt.Color("test:N", title="field test"),
            tooltip=["date:T", "test:N", "mg/L:Q"],
        )
        .properties(height=220)
    )


# -- cases ------------------------------------------------------------------------------------
def open_case_form(key: str, outfall_id: str) -> int | None:
    """Open a case at the outfall, from one of its inspections or from a complaint."""
    from ..records.fields import ORIGINS

    if auth.current().role != "smo":
        return None
    rec = reader()
    ins_ids: list[int] = []
    if rec is not None:
        ins = rec.inspections()
        ins_ids = [
            int(i)
            for i in ins.loc[ins["outfall_id"].astype(str) == str(outfall_id), "inspection_id"]
        ]
    form_start(f"{key}_case", (f"{key}_case_",))
    with st.form(f"{key}_case_form"):
        st.markdown(f"**Open a case at {state.data_text(outfall_id)}**")
        c = st.columns(3)
        origin = c[0].selectbox("Origin", list(ORIGINS), key=f"{key}_case_origin")
        day = c[1].date_input(
            "Opened on", value=dt.date.today(), max_value=dt.date.today(), key=f"{key}_case_date"
        )
        from_ins = c[2].selectbox(
            "From inspection",
            [0, *reversed(ins_ids)],
            format_func=lambda i: "none (a complaint)" if not i else f"inspection {i}",
            key=f"{key}_case_inspection",
        )
        desc = st.text_input("What was reported or found", key=f"{key}_case_desc")
        submitted = submit_button("Open the case", f"{key}_case")
    if not submitted:
        return None
    try:
        cid = save_case(
            outfall_id, day, origin=origin, description=desc or None, inspection_id=from_ins or None
        )
    except Exception as exc:  # noqa: BLE001
        _error(exc)
        return None
    form_saved(f"{key}_case", f"Case {cid} opened at {outfall_id}. Advance it on the Cases page.")
    return cid  # pragma: no cover - st.rerun ends the run


# -- the map: derived status and open cases ------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=16)
def _status(_rec: Any, path: str, stamp: tuple[int, int], today: str) -> tuple[Any, Any]:
    st_ = _rec.outfall_status()
    cases = _rec.cases()
    dl = _rec.deadlines(today=today)
    return st_, (cases, dl)


def derived_status() -> tuple[Any, Any, Any] | None:
    """(outfall status, current cases, deadlines) of the records, cached per file change."""
    rec = reader()
    if rec is None:
        return None
    stat = rec.path.stat()
    s, (cases, dl) = _status(
        rec, str(rec.path), (stat.st_mtime_ns, stat.st_size), dt.date.today().isoformat()
    )
    return s, cases, dl


def outfall_statuses(ws: Workspace | None = None) -> pd.DataFrame | None:
    """The one status of every outfall: :func:`ms4map.records.summary.outfall_status`
    (the outfalls layer's status merged with the records), which the map's colours and
    panel, the inventory's counts and table, the investigation's selector, the printable
    outfall map and the exports all read.  Without a records file, the same function on
    the layer alone; ``None`` without outfalls."""
    got = derived_status()
    if got is not None:
        return got[0]
    if ws is None:
        ctx = state.context()
        ws = None if ctx is None else ctx.ws
    of = None if ws is None else ws.layers.get("outfalls")
    if of is None or "outfall_id" not in of:
        return None
    from ..records.summary import outfall_status

    return outfall_status(pd.DataFrame(of.drop(columns="geometry")), pd.DataFrame(), pd.DataFrame())


def with_status(inv: pd.DataFrame, ws: Workspace | None = None) -> pd.DataFrame:
    """The inventory with ``status`` the one status of each outfall (and ``status_reason``)."""
    status = outfall_statuses(ws)
    if status is None or "outfall_id" not in inv:
        return inv
    m = status.set_index(status["outfall_id"].astype(str))
    ids = inv["outfall_id"].astype(str)
    out = inv.drop(columns=["status_reason"], errors="ignore")
    known = ids.isin(m.index).to_numpy()
    old = out["status"] if "status" in out else pd.Series([None] * len(out), index=out.index)
    out["status"] = [m.at[i, "status"] if k else o for i, k, o in zip(ids, known, old, strict=True)]
    at = list(out.columns).index("status") + 1
    out.insert(
        at,
        "status_reason",
        [m.at[i, "reason"] if k else None for i, k in zip(ids, known, strict=True)],
    )
    return out


def status_token(inv: pd.DataFrame) -> str:
    """A short fingerprint of the inventory's statuses (a PDF made before a status
    changed is not offered again)."""
    import hashlib

    text = "|".join(f"{o}={s}" for o, s in zip(inv["outfall_id"], inv["status"], strict=True))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def open_cases(cases: Any, deadlines: Any) -> Any:
    """The cases not closed nor eliminated, with ``overdue`` (any deadline overdue)."""
    if cases is None or not len(cases):
        return cases
    active = cases[cases["closed_on"].isna() & cases["eliminated_on"].isna()].copy()
    over = (
        set(deadlines.loc[deadlines["status"] == "overdue", "case_id"].astype(int))
        if deadlines is not None and len(deadlines)
        else set()
    )
    active["overdue"] = active["case_id"].astype(int).isin(over)
    return active


def inventory_columns(inv: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The inventory with ``derived_status`` and ``last_inspection``; and the coverage figures."""
    rec = reader()
    figures: dict[str, Any] = {"screened_share": 0.0, "screened": 0, "outfalls": len(inv)}
    inv = inv.copy()
    if rec is None:
        inv["last_inspection"] = None
        return inv, figures
    status = rec.outfall_status()
    m = status.set_index(status["outfall_id"].astype(str))
    ids = inv["outfall_id"].astype(str)
    inv["derived_status"] = ids.map(m["status"]).to_numpy()
    inv["last_inspection"] = ids.map(m["last_inspection_date"]).to_numpy()
    v = rec.verification().set_index("outfall_id")
    words = {"verified": "verified in the field", "mapped_only": "mapped only"}
    inv["verification"] = ids.map(v["verification"].map(words)).to_numpy()
    s = rec.summary()
    figures.update(
        screened_share=float(s.get("screened_last_5_years") or 0.0),
        screened=int(s.get("outfalls_screened") or 0),
        year=s.get("year"),
        period=s.get("period"),
        summary=s,
    )
    return inv, figures


def annual_report_pdf() -> bytes | None:
    """The annual report of the records (PDF bytes), or None without records."""
    import tempfile

    from ..records.annual import write_annual_report

    rec = reader()
    if rec is None:
        return None
    report = rec.annual_report()
    with tempfile.TemporaryDirectory(dir=app_data_dir()) as d:
        out = write_annual_report(
            report,
            Path(d) / "idde_annual_report.pdf",
            title=f"Municipality profile {rec.profile.name}",
        )
        return out.read_bytes()


def outfall_records(key: str, outfall_id: str) -> None:
    """The records section of an outfall page: history, chart, inspection and case forms."""
    st.subheader(f"Records of {state.data_text(outfall_id)}")
    outfall_history(key, outfall_id)
    inspection_form(key, outfall_id)
    open_case_form(key, outfall_id)


def inventory_records(inv: pd.DataFrame) -> None:
    """The inventory page's records part: coverage, last inspections, annual report, form."""
    st.subheader("Inspections (IDDE records)")
    table, fig = inventory_columns(inv if "status_reason" in inv else with_status(inv))
    c = st.columns(3)
    c[0].metric(
        "Screened in the permit's 5-year cycle",
        f"{fig['screened_share']:.0%}",
        help="Share of the outfalls inspected in the five reporting years ending this year.",
    )
    c[1].metric(
        f"Screened in the {fig.get('period', 'year')} {fig.get('year', dt.date.today().year)}",
        fig["screened"],
    )
    c[2].metric("Outfalls", fig["outfalls"])
    shown = ("outfall_id", "status", "status_reason", "last_inspection", "verification")
    cols = [x for x in shown if x in table]
    st.dataframe(table[cols], hide_index=True, width="stretch", key="inventory_records_table")
    rec = reader()
    if rec is not None:
        d = st.columns(2)
        d[0].download_button(
            "Download the annual report (CSV)",
            csv_text(rec.annual_report()),
            file_name="idde_annual_report.csv",
            mime="text/csv",
            key="inventory_annual_csv",
        )
        if d[1].button("Make the annual report (PDF)", key="inventory_annual_make"):
            st.session_state["inventory_annual_pdf"] = annual_report_pdf()
        if st.session_state.get("inventory_annual_pdf"):
            d[1].download_button(
                "Download the annual report (PDF)",
                st.session_state["inventory_annual_pdf"],
                file_name="idde_annual_report.pdf",
                mime="application/pdf",
                key="inventory_annual_pdf_dl",
            )
    ids = inv["outfall_id"].astype(str).tolist()
    oid = st.selectbox("Outfall to inspect", ids, key="inventory_ins_outfall")
    inspection_form("inventory", oid)


def outfall_status_line(outfall_id: str) -> None:
    """One line on a selected outfall: its one status (:func:`outfall_statuses`), why,
    its open cases."""
    status = outfall_statuses()
    if status is None:
        return
    got = derived_status()
    cases, dl = (None, None) if got is None else got[1:]
    row = status[status["outfall_id"].astype(str) == str(outfall_id)]
    if not len(row):
        return
    r = row.iloc[0]
    active = open_cases(cases, dl)
    mine = (
        active[active["outfall_id"].astype(str) == str(outfall_id)]
        if active is not None and len(active)
        else []
    )
    n_over = int(mine["overdue"].sum()) if len(mine) else 0
    st.markdown(
        f"**Status**: **{str(r['status']).replace('_', ' ')}** ({state.data_text(r['reason'])})"
        + (f"; {len(mine)} open case(s), {n_over} overdue" if len(mine) else "")
        + "."
    )
