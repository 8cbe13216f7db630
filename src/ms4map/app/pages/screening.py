"""Site screening: choose a site, enter the project, get Condition A/B/C with reasons."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import streamlit as st
from shapely.geometry import LineString, Point, Polygon

from ...analysis.paths import overland_steps
from ...outputs import maps, report_html, report_pdf
from ...outputs.report import site_map_layers
from ...rules import conditions
from ...rules.profiles import EXEMPTION_CODES
from .. import mapview, state, widgets

if TYPE_CHECKING:
    from ...io import Workspace

GUESS = "(guess from the parcel's property class)"
NONE = "(none)"
#: How a receiving water is reached, in words (the determination's ``via`` codes).
VIA = {"ms4": "through the storm sewer (MS4)", "direct": "directly, not through the MS4"}
#: How messages name the form's fields.
APP_LABELS = {
    "disturbed_acres": "'Disturbed acres'",
    "common_plan_acres": "'Common plan of development acres'",
    "project_type": "'Project type'",
    "exemption": "'Exemption claimed'",
}
MAP_LAYERS = ("parcels", "waterbodies", "impaired_waters", "conveyances", "structures", "outfalls")


def render() -> None:
    st.title("Site screening")
    st.caption(
        "Condition A, B or C of the stormwater law for a land development activity: "
        "choose the site, describe the project, and screen."
    )
    for name in ("screen_parcel_ids", "screen_vertices"):  # values set by clicks/buttons
        if f"{name}_next" in st.session_state:
            st.session_state[name] = st.session_state.pop(f"{name}_next")
    ctx = state.context()
    if ctx is None:
        return
    ws, result = ctx.ws, ctx.result

    mode = st.radio(
        "Site",
        ["parcels", "polygon"],
        format_func={
            "parcels": "Parcel(s): search, type ids or click the map",
            "polygon": "Polygon: click its corners on the map or type them",
        }.get,
        horizontal=True,
        key="screen_mode",
    )
    layers = state.map_layers(ws, result)
    site = _site_inputs(ws, mode)
    # the answer on screen is always for the inputs on screen: a determination made for
    # other inputs is cleared (with its path and downloads) as soon as an input changes
    det = st.session_state.get("screen_det")
    if det is not None and st.session_state.get("screen_det_inputs") != _inputs_key(mode, site):
        st.session_state.pop("screen_det", None)
        st.session_state.pop("screen_det_inputs", None)
        # the note stays until the next screening: the map moving to the new site reruns
        # the page, and the note must not vanish with that rerun
        st.session_state["screen_stale"] = True
        det = None
    stale = det is None and bool(st.session_state.get("screen_stale"))
    highlights = _highlights(ws, mode, site)
    if det is not None and site_map_layers(det):
        highlights.update(_det_layers(det))
        if mode == "parcels":  # the overland step from each parcel to its inlet(s)
            steps = [overland_steps(ws, result, pid) for pid in site]
            steps = [g for s in steps for g in s.geometry]
            if steps:
                highlights["overland step"] = gpd.GeoSeries(steps, crs=ws.crs)
    out = mapview.show_map(
        "screen_map",
        ws,
        layers,
        visible=[k for k in MAP_LAYERS if k in layers],
        highlights=highlights,
        focus=_focus(highlights),
        focus_zoom=(12, 18),
        height=460,
    )
    if out.click is not None:
        _apply_click(ws, layers, mode, out)

    with st.container(border=True):
        c1, c2 = st.columns(2)
        disturbed = _acres_input(c1, "Disturbed acres", 1.0, "screen_acres")
        plan = _acres_input(
            c2,
            "Common plan of development acres (0 = not part of a larger plan)",
            0.0,
            "screen_plan",
        )
        c3, c4, c5 = st.columns(3)
        types = [GUESS, *conditions.PROJECT_TYPES]
        ptype = c3.selectbox("Project type", types, key="screen_type", format_func=_spaced)
        exemption = c4.selectbox(
            "Exemption claimed",
            [NONE, *EXEMPTION_CODES],
            key="screen_exemption",
            format_func=_spaced,
        )
        profile = widgets.profile_box(c5, "screen_profile")
        with st.expander("Application (printed on the report)"):
            a1, a2 = st.columns(2)
            a1.text_input("Applicant", key="screen_applicant")
            a2.text_input("Project name", key="screen_project_name")
            a3, a4 = st.columns(2)
            a3.text_input("Application number", key="screen_application_number")
            a4.text_input("Application date (YYYY-MM-DD)", key="screen_application_date")
        submitted = st.button("Screen the site", type="primary", key="screen_submit")
    if submitted:
        _screen(
            ws,
            result,
            site,
            mode=mode,
            disturbed=disturbed,
            plan=plan,
            ptype=ptype,
            exemption=exemption,
            profile=profile,
        )
    det = st.session_state.get("screen_det")
    if det is not None:
        _show_determination(ws, det)
    elif stale:
        st.info(
            "The site or the project changed after the last screening, so its "
            "determination, path and downloads were cleared. Press **Screen the site** "
            "for the inputs shown."
        )


#: The form's fields and their defaults (as the widgets below create them).
_FIELDS = (
    ("screen_acres", 1.0),
    ("screen_plan", 0.0),
    ("screen_type", GUESS),
    ("screen_exemption", NONE),
    ("screen_profile", None),
)


def _inputs_key(mode: str, site: Any) -> tuple:
    """Everything a determination depends on that the user can change on this page."""
    fields = tuple(st.session_state.get(k, default) for k, default in _FIELDS)
    return (mode, tuple(map(tuple, site)) if mode == "polygon" else tuple(site), fields)


def _focus(highlights: dict[str, Any]) -> Any:
    """The site and, once screened, its path and outfalls: where the map should look."""
    import shapely

    geoms = [
        g
        for k in ("selection", "path", "overland step", "outfalls reached")
        for g in getattr(highlights.get(k), "values", [])
        if g is not None and not g.is_empty
    ]
    return shapely.union_all(geoms) if geoms else None


def _site_inputs(ws: Workspace, mode: str) -> Any:
    if mode == "parcels":
        hit = widgets.search_box(ws, "screen_search", layers=("parcels",))
        if hit is not None and st.button("Add this parcel to the site", key="screen_add"):
            _add_parcel(hit[1])
        text = st.text_input(
            "Parcel ids of the site (comma separated)",
            key="screen_parcel_ids",
            help="Clicking a parcel on the map adds or removes it.",
        )
        ids = [s.strip() for s in text.split(",") if s.strip()]
        return ids
    text = st.text_area(
        "Polygon corners, one 'latitude, longitude' per line (map clicks add corners)",
        key="screen_vertices",
        height=120,
    )
    c1, c2 = st.columns(2)
    if c1.button("Undo last corner", key="screen_undo"):
        lines = [ln for ln in text.splitlines() if ln.strip()]
        st.session_state["screen_vertices_next"] = "\n".join(lines[:-1])
        st.rerun()
    if c2.button("Clear corners", key="screen_clear"):
        st.session_state["screen_vertices_next"] = ""
        st.rerun()
    try:
        return _parse_vertices(text)
    except ValueError as exc:
        st.warning(str(exc))
        return []


#: Seconds a screening may take in the app before the page says so and moves on (the
#: one run left finishing in the background is bounded by :data:`MAX_CORNERS`).
SCREEN_SECONDS = 120.0


def _time_boxed(func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``, or a :class:`TimeoutError` naming the limit after
    :data:`SCREEN_SECONDS` (the page is not held; the run finishes in its thread)."""
    import concurrent.futures as cf

    pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ms4map-screen")
    try:
        return pool.submit(func, *args, **kwargs).result(timeout=SCREEN_SECONDS)
    except cf.TimeoutError:
        raise TimeoutError(
            f"the screening took more than {SCREEN_SECONDS:.0f} s. Fix: screen fewer parcels "
            "or a simpler outline, or run `ms4map screen` on the command line"
        ) from None
    finally:
        pool.shutdown(wait=False)


#: Corners a typed or clicked site polygon may have: a person's outline of a site needs
#: far fewer; a bigger surveyed boundary comes as a file (ms4map screen --site FILE).
MAX_CORNERS = 200


def _parse_vertices(text: str) -> list[tuple[float, float]]:
    """The typed corners as (latitude, longitude); raises ``ValueError`` naming the first
    line that is not two numbers, not finite or not a latitude and a longitude."""
    pts = []
    for n, line in enumerate(text.splitlines(), start=1):
        parts = [p for p in line.replace(";", ",").replace(" ", ",").split(",") if p]
        if not parts:
            continue
        try:
            lat, lon = float(parts[0]), float(parts[1])
        except (ValueError, IndexError):
            raise ValueError(
                f"Polygon corners, line {n} ('{line.strip()[:40]}'): not 'latitude, longitude'. "
                "Fix: two numbers per line, e.g. 43.3101, -73.6402."
            ) from None
        if not (math.isfinite(lat) and math.isfinite(lon)) or abs(lat) > 90 or abs(lon) > 180:
            raise ValueError(
                f"Polygon corners, line {n} ('{line.strip()[:40]}'): not a latitude (-90 to 90) "
                "and a longitude (-180 to 180). Fix: type the corner's latitude, longitude."
            )
        pts.append((lat, lon))
        if len(pts) > MAX_CORNERS:
            raise ValueError(
                f"Polygon corners: more than {MAX_CORNERS}. Fix: outline the site with fewer "
                "corners, or screen a boundary file from the command line (ms4map screen "
                "--site FILE)."
            )
    return pts


def _add_parcel(pid: str) -> None:
    ids = [s.strip() for s in st.session_state.get("screen_parcel_ids", "").split(",") if s.strip()]
    if pid in ids:
        ids.remove(pid)
    else:
        ids.append(pid)
    st.session_state["screen_parcel_ids_next"] = ", ".join(ids)
    st.rerun()


def _apply_click(ws: Workspace, layers: dict, mode: str, out: mapview.MapOutput) -> None:
    lat, lng = out.click
    if mode == "parcels":
        found = maps.identify(layers, lat, lng, zoom=out.view.zoom, visible=["parcels"])
        if found is not None:
            _add_parcel(found[1])
    else:
        text = st.session_state.get("screen_vertices", "")
        st.session_state["screen_vertices_next"] = (
            text.rstrip() + f"\n{lat:.7f}, {lng:.7f}"
        ).strip()
        st.rerun()


def _polygon(vertices: list[tuple[float, float]]) -> gpd.GeoSeries:
    """The site polygon of the typed corners; raises ``ValueError`` for fewer than three
    corners or an outline that crosses itself (never repaired silently: a zig-zag
    "repaired" is a hundred slivers, not the site)."""
    if len(vertices) < 3:
        raise ValueError("A polygon needs at least three corners.")
    poly = Polygon([(lng, lat) for lat, lng in vertices])
    if not poly.is_valid:
        from shapely.validation import explain_validity

        why = explain_validity(poly)
        raise ValueError(
            f"The polygon's outline crosses itself ({why}). Fix: list the corners in order "
            "around the site ('Undo last corner' removes the last one)."
        )
    return gpd.GeoSeries([poly], crs="EPSG:4326")


def _highlights(ws: Workspace, mode: str, site: Any) -> dict[str, Any]:
    if mode == "parcels":
        parcels = ws.layers.get("parcels")
        if not site or parcels is None:
            return {}
        sel = parcels[parcels["parcel_id"].astype(str).isin(site)]
        return {"selection": sel.geometry} if len(sel) else {}
    if not site:
        return {}
    pts = [(lng, lat) for lat, lng in site]
    geom = Point(pts[0]) if len(pts) == 1 else LineString(pts + ([pts[0]] if len(pts) > 2 else []))
    return {"selection": gpd.GeoSeries([geom], crs="EPSG:4326").to_crs(ws.crs)}


def _det_layers(det: Any) -> dict[str, Any]:
    ml = site_map_layers(det)
    crs = ml.get("crs")
    out: dict[str, Any] = {}
    paths = [g for g in ml.get("paths", []) if g is not None and not g.is_empty]
    if paths:
        out["path"] = gpd.GeoSeries(paths, crs=crs)
    outs = [g for g in ml.get("outfalls", []) if g is not None]
    if outs:
        out["outfalls reached"] = gpd.GeoSeries(outs, crs=crs)
    # an ambiguous network path: drawn uncertain, with its candidate outfalls
    for key, label in (
        ("uncertain_paths", "ambiguous path"),
        ("candidate_outfalls", "candidate outfalls"),
    ):
        geoms = [g for g in ml.get(key, []) if g is not None and not g.is_empty]
        if geoms:
            out[label] = gpd.GeoSeries(geoms, crs=crs)
    return out


def _screen(ws, result, site, *, mode, disturbed, plan, ptype, exemption, profile) -> None:
    if mode == "parcels":
        if not site:
            st.warning("Choose at least one parcel (search, type its id, or click it on the map).")
            return
        site_arg: Any = site
    else:
        try:
            site_arg = _polygon(site)
        except ValueError as exc:
            st.warning(str(exc))
            return
    try:
        det = _time_boxed(
            conditions.evaluate_site,
            result,  # None (the analysis failed): evaluate_site runs it on the workspace
            site_arg,
            disturbed_acres=float(disturbed),
            project_type=None if ptype == GUESS else ptype,
            common_plan_acres=float(plan) if plan else None,
            exemption=None if exemption == NONE else exemption,
            workspace=ws,
            profile=profile,
            labels=APP_LABELS,
        )
    except Exception as exc:  # noqa: BLE001 - shown to the user
        from ...core.errors import Ms4mapError

        st.session_state.pop("screen_det", None)
        st.session_state.pop("screen_det_inputs", None)
        if isinstance(exc, Ms4mapError):
            st.error(str(exc))
        else:
            st.error(f"Screening failed: {type(exc).__name__}: {state.plain(exc)}")
        return
    st.session_state["screen_det"] = det
    st.session_state["screen_det_inputs"] = _inputs_key(mode, site)
    st.session_state.pop("screen_stale", None)
    st.rerun()


def _yes(v: Any) -> str:
    return {True: "YES", False: "no", None: "undetermined"}.get(v, str(v))


def _application(det: Any) -> Any:
    """The determination with the application fields on screen (they change what is
    printed, not the answer, so they apply without screening again): a copy
    (:meth:`~ms4map.rules.conditions.Determination.with_application`); ``det`` is unchanged."""
    from ...core.errors import UsageError

    fields = {
        "applicant": st.session_state.get("screen_applicant"),
        "project_name": st.session_state.get("screen_project_name"),
        "application_number": st.session_state.get("screen_application_number"),
        "date": st.session_state.get("screen_application_date"),
    }
    try:
        return det.with_application(fields)
    except UsageError as exc:
        st.warning(f"{state.plain(exc)} The report leaves the date blank.")
        return det.with_application({**fields, "date": None})


def _show_determination(ws: Workspace, det: Any) -> None:
    det = _application(det)
    st.session_state["screen_det"] = det  # the determination shown is the one filed
    d = det.to_dict()
    st.header("Determination")
    area = d["site"].get("area_acres")
    st.markdown(
        f"**Site:** {state.data_text(d['site'].get('label', ''))}"
        + (f" ({area:.2f} acres)" if area else "")
    )
    inputs = d["inputs"]
    plan = inputs.get("common_plan_acres")
    st.markdown(
        f"**Project:** {conditions.acres_text(inputs['disturbed_acres'])} acres disturbed"
        + (f", common plan {conditions.acres_text(plan)} acres" if plan is not None else "")
        + f"; {_spaced(str(d['project_type']['value']))}"
    )
    cols = st.columns(4)
    for col, k in zip(cols[:3], ("A", "B", "C"), strict=True):
        c = d["conditions"][k]
        col.metric(f"Condition {k}", _yes(c["value"]))
    cols[3].metric("SWPPP required", _yes(d["swppp_required"]["value"]))
    for k in ("A", "B", "C"):
        c = d["conditions"][k]
        with st.expander(f"Condition {k}: {_yes(c['value'])} — reasons", expanded=k == "A"):
            for r in c.get("reasons", []):
                st.markdown(f"- {state.plain(state.app_fixes(r))}")
    rw = d.get("drainage", {}).get("receiving_waters") or []
    if rw:
        st.markdown("**Drainage path / receiving waters**")
        for w in rw:
            st.markdown(
                f"- {state.data_text(w.get('name') or '?')} "
                f"(PWL {state.data_text(w.get('pwl_id') or 'unknown')}), "
                f"{VIA.get(str(w.get('via')), w.get('via'))}, "
                f"{float(w.get('fraction') or 0):.0%} of the site"
            )
    _downloads(ws, det)


def _downloads(ws: Workspace, det: Any) -> None:
    import json

    label = str(det.to_dict().get("site", {}).get("label", "site")).replace(" ", "_")[:40]
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        "Download JSON",
        json.dumps(det.to_dict(), indent=2),
        file_name=f"screening_{label}.json",
        mime="application/json",
        key="screen_dl_json",
    )
    try:
        for kind, col, mime in (("html", c2, "text/html"), ("pdf", c3, "application/pdf")):
            data = _report(det, _report_key(det), kind)
            if data is not None:
                col.download_button(
                    f"Download report ({kind.upper()})",
                    data,
                    file_name=f"screening_{label}.{kind}",
                    mime=mime,
                    key=f"screen_dl_{kind}",
                )
    except Exception as exc:  # noqa: BLE001
        c2.warning(f"The report could not be made: {exc}")


def _report_key(det: Any) -> str:
    """What a determination's report is cached by: its JSON document (the site, the
    answers, the application fields, the time it was made), hashed."""
    import hashlib

    return hashlib.sha256(det.to_json().encode("utf-8")).hexdigest()


@st.cache_data(show_spinner=False, max_entries=32)
def _report(_det: Any, key: str, kind: str) -> str | bytes:
    """The report of the determination ``key`` as HTML text or PDF bytes, made once
    (:func:`ms4map.outputs.report_html` / :func:`~ms4map.outputs.report_pdf`, no file)
    and not again on each rerun of the page."""
    return report_html(_det) if kind == "html" else report_pdf(_det)


def _acres_input(col: Any, label: str, value: float, key: str) -> float:
    """An acreage field in steps of 0.1.

    No ``min_value``/``max_value``: with them the browser keeps a typed -1 on screen but
    never sends it, so **Screen** answered for the last accepted value, which the user no
    longer sees.  The value typed is sent as it is and the screening refuses it by name.
    """
    return col.number_input(label, value=value, step=0.1, key=key)


def _spaced(code: str) -> str:
    """A code word as shown in a choice: spaces for underscores."""
    return code.replace("_", " ")
