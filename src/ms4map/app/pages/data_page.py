"""Data: open another workspace or upload layers, map their fields, read the QA report.

Uploads are stored (and zips unpacked safely) in the app's own data folder;
the user's files are never modified.  Nothing is used before the validation
report has been shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from ...schema import LAYERS
from .. import state
from ..upload import MAX_UPLOAD_BYTES, app_data_dir, store_upload

IGNORE = "(not used)"
AUTO = "(automatic)"
ROLES = [r for r in LAYERS]


def render() -> None:
    st.title("Data")
    src = state.workspace_source()
    st.markdown(f"**Current workspace:** `{src.get('label') or 'demo'}`")
    ws = state.workspace()
    if ws is not None:
        with st.expander("Validation / QA report of the current workspace"):
            st.markdown(ws.qa.to_markdown())
        st.caption(
            "Layers: "
            + ", ".join(f"{k} ({len(v):,})" for k, v in ws.layers.items())
            + (
                f"; DEM {ws.dem.shape[1]}x{ws.dem.shape[0]} cells"
                if ws.dem is not None
                else "; no DEM"
            )
        )
    if st.session_state.get("ms4map_workspace") and st.button(
        "Back to the demo town", key="data_demo"
    ):
        st.session_state.pop("ms4map_workspace", None)
        st.rerun()

    cand = st.session_state.get("data_candidate")
    if cand:
        st.success(st.session_state.get("data_candidate_msg", "Opened."))
        st.button(
            f"Use '{cand['label']}' on every page",
            on_click=_use_candidate,
            key="data_use",
            type="primary",
        )
        with st.expander("Validation report of these data", expanded=True):
            st.markdown(st.session_state.get("data_candidate_report", ""))

    st.header("Open a workspace from disk")
    path = st.text_input(
        "GeoPackage, File Geodatabase, folder of layers or TOML manifest",
        key="data_path",
        placeholder="/path/to/town.gpkg",
    )
    if st.button("Open and validate", key="data_open") and path.strip():
        _try_open(
            {
                "path": path.strip(),
                "layers": None,
                "field_map": None,
                "dem": None,
                "label": path.strip(),
            }
        )

    st.header("Upload layers")
    st.caption(
        f"Zipped Shapefile, GeoPackage or GeoJSON; up to {MAX_UPLOAD_BYTES // 2**20} MB per "
        f"file. Files are kept in {app_data_dir() / 'uploads'}; yours are never modified."
    )
    files = st.file_uploader(
        "Layer files",
        type=["zip", "gpkg", "geojson", "json", "fgb"],
        accept_multiple_files=True,
        key="data_upload",
    )
    stored: dict[str, Any] = st.session_state.setdefault("data_stored", {})
    for f in files or []:
        fid = getattr(f, "file_id", None) or f.name
        if fid in stored:
            continue
        try:
            stored[fid] = (f.name, store_upload(f.name, f.getvalue()))
        except Exception as exc:  # noqa: BLE001 - every bad file becomes a message
            stored[fid] = (f.name, exc)
    layer_files: list[tuple[str, str]] = []  # (label, source spec)
    for name, item in stored.values():
        if isinstance(item, Exception):
            st.error(f"{name}: {item}")
            continue
        for p in item.layers:
            for lyr in _layers_of(p):
                spec = f"{p}::{lyr}" if p.suffix.lower() == ".gpkg" else str(p)
                label = f"{name}: {lyr}" if p.suffix.lower() == ".gpkg" else f"{name}: {p.name}"
                layer_files.append((label, spec))
        if item.skipped:
            st.caption(f"{name}: ignored non-layer files: {', '.join(item.skipped[:10])}")
    if not layer_files:
        return
    st.subheader("Which layer is which")
    roles: dict[str, list[str]] = {}
    field_map: dict[str, dict[str, str]] = {}
    for i, (label, spec) in enumerate(layer_files):
        guess = _guess_role(label)
        role = st.selectbox(
            label,
            [IGNORE, *ROLES],
            index=([IGNORE, *ROLES].index(guess) if guess else 0),
            key=f"data_role_{i}",
        )
        if role == IGNORE:
            continue
        roles.setdefault(role, []).append(spec)
        cols = _columns_of(spec)
        spec_cols = LAYERS[role].column_names
        with st.expander(f"Fields of {label} -> {role}"):
            for c in spec_cols:
                choice = st.selectbox(
                    c,
                    [AUTO, *cols],
                    key=f"data_field_{i}_{c}",
                    help="Which source column feeds this canonical column "
                    "(automatic = the built-in alias tables).",
                )
                if choice != AUTO:
                    field_map.setdefault(role, {})[c] = choice
    if st.button("Validate the uploaded layers", key="data_validate", type="primary"):
        _try_open(
            {
                "path": None,
                "layers": roles,
                "field_map": field_map or None,
                "dem": None,
                "label": "uploaded layers",
            }
        )


def _try_open(src: dict[str, Any]) -> None:
    """Open + validate; show the QA report; offer to use it only when it opened."""
    from ...io import open_workspace

    kwargs = {k: src[k] for k in ("layers", "field_map", "dem") if src.get(k)}
    try:
        ws = open_workspace(src["path"], **kwargs)
    except Exception as exc:  # noqa: BLE001
        for k in ("data_candidate", "data_candidate_msg", "data_candidate_report"):
            st.session_state.pop(k, None)
        st.error(f"Cannot use these data: {exc}")
        report = getattr(exc, "report", None)
        if report is not None and hasattr(report, "to_markdown"):
            st.markdown(report.to_markdown(title="Validation report"))
        return
    st.session_state["data_candidate"] = src
    st.session_state["data_candidate_msg"] = (
        f"Opened '{src['label']}': "
        f"{', '.join(f'{k} ({len(v):,})' for k, v in ws.layers.items())}. "
        "Read the validation report, then use these data."
    )
    st.session_state["data_candidate_report"] = ws.qa.to_markdown(title="Validation report")
    st.rerun()


def _use_candidate() -> None:
    st.session_state.pop("data_candidate_msg", None)
    st.session_state.pop("data_candidate_report", None)
    cand = st.session_state.pop("data_candidate", None)
    if cand:
        st.session_state["ms4map_workspace"] = cand


def _layers_of(p: Path) -> list[str]:
    if p.suffix.lower() != ".gpkg":
        return [p.stem]
    try:
        from ...io import list_source_layers

        return list_source_layers(p)
    except Exception:  # noqa: BLE001
        return [p.stem]


def _columns_of(spec: str) -> list[str]:
    import pyogrio

    path, _, layer = spec.partition("::")
    try:
        info = pyogrio.read_info(path, layer=layer or None)
        return [str(c) for c in info["fields"]]
    except Exception:  # noqa: BLE001
        return []


def _guess_role(label: str) -> str | None:
    low = label.lower()
    for role in ROLES:
        if role in low or role.rstrip("s") in low:
            return role
    return None
