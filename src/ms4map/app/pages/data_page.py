"""Data: open another workspace or upload layers, map their fields, read the QA report.

Uploads are stored (and zips unpacked safely) in the app's own data folder;
the user's files are never modified.  Nothing is used before the validation
report has been shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from ...core.schema import LAYERS
from ...rules.waters import workspace_qa
from .. import auth, state
from ..state import plain
from ..upload import (
    MAX_UPLOAD_BYTES,
    TABLE_SUFFIXES,
    import_303d_csv,
    list_uploads,
    remove_upload,
    store_table_upload,
    store_upload,
    uploads_dir,
)

if TYPE_CHECKING:
    from ..upload import StoredUpload

IGNORE = "(not used)"
AUTO = "(automatic)"
ROLES = [r for r in LAYERS]
NO_DEM = "(no DEM: parcels drain to the nearest inlet)"
AS_FILE = "(as in the file)"
OTHER_CRS = "other: type an EPSG code"
#: CRSs a New York town's data is usually in (EPSG code -> words).
COMMON_CRS = {
    "EPSG:26918": "NAD83 / UTM zone 18N (eastern NY)",
    "EPSG:26917": "NAD83 / UTM zone 17N (western NY)",
    "EPSG:2260": "NAD83 / New York East (ftUS)",
    "EPSG:2261": "NAD83 / New York Central (ftUS)",
    "EPSG:2262": "NAD83 / New York West (ftUS)",
    "EPSG:2263": "NAD83 / New York Long Island (ftUS)",
    "EPSG:32618": "WGS 84 / UTM zone 18N",
    "EPSG:4326": "WGS 84 latitude/longitude",
    "EPSG:4269": "NAD83 latitude/longitude",
}


def render() -> None:
    """The page: the current workspace, a candidate just opened, opening from disk and
    uploading layers (then assigning them)."""
    st.title("Data")
    _current_workspace()
    _opened_candidate()
    _open_from_disk()
    layer_files, rasters = _uploaded_layers()
    if layer_files:
        _assign_layers(layer_files, rasters)
    _stored_uploads()


def _current_workspace() -> None:
    """The workspace in use: its name, QA report, layers and DEM, and the way back to
    the demo town."""
    src = state.workspace_source()
    label = str(src.get("label") or "demo").replace("`", "'")  # a code span: shown as typed
    st.markdown(f"**Current workspace:** `{label}`")
    ws = state.workspace()
    if ws is not None:
        with st.expander("Validation / QA report of the current workspace"):
            st.markdown(state.app_fixes(workspace_qa(ws).to_markdown()))
        st.caption(
            "Layers: "
            + ", ".join(f"{k} ({len(v):,})" for k, v in ws.layers.items())
            + (
                f"; DEM {ws.dem.shape[1]}x{ws.dem.shape[0]} cells"
                if ws.dem is not None
                else "; no DEM"
            )
        )
    back = st.session_state.get("ms4map_workspace") or src.get("unavailable")
    if back and st.button("Back to the demo town", key="data_demo"):
        state.use_workspace(None)
        st.rerun()


def _opened_candidate() -> None:
    """The data just opened and validated, with the button that puts them in use."""
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


def _open_from_disk() -> None:
    """Open and validate a workspace given by its path (and its DEM's): the SMO's (or
    anyone's without users), inside the allowed folders only."""
    st.header("Open a workspace from disk")
    may = auth.can_manage_data()
    folders = ", ".join(f"`{f}`" for f in state.allowed_folders())
    st.caption(
        f"Files on the server inside {folders} (whoever runs the app can allow more "
        f"folders with the {state.ALLOWED_PATHS_ENV} setting)."
        if may
        else "Only the SMO opens files on the server (viewers read)."
    )
    path = st.text_input(
        "GeoPackage, File Geodatabase, folder of layers or TOML manifest",
        key="data_path",
        placeholder="/path/to/town.gpkg",
        disabled=not may,
    )
    dem_path = st.text_input(
        "DEM GeoTIFF (optional; default: <name>_dem.tif beside a GeoPackage)",
        key="data_path_dem",
        placeholder="/path/to/town_dem.tif",
        disabled=not may,
    )
    if st.button("Open and validate", key="data_open", disabled=not may) and path.strip():
        try:
            auth.require_data_manager("Opening a file on the server")
            real = state.check_server_path(path.strip())
            dem = str(state.check_server_path(dem_path.strip())) if dem_path.strip() else None
        except PermissionError as exc:
            for k in ("data_candidate", "data_candidate_msg", "data_candidate_report"):
                st.session_state.pop(k, None)
            st.error(plain(exc))
            return
        _try_open(
            {
                "path": str(real),
                "layers": None,
                "field_map": None,
                "dem": dem,
                "crs": None,
                "label": path.strip(),
            }
        )


def _uploaded_layers() -> tuple[list[tuple[str, str, Path]], list[tuple[str, Path]]]:
    """The upload widget; stores what arrives and returns the layers ``(label, source
    spec, file)`` and rasters ``(label, file)`` of the stored uploads."""
    st.header("Upload layers")
    st.caption(
        f"Zipped Shapefile, GeoPackage or GeoJSON layers, a DEM GeoTIFF and the 303(d) "
        f"list as a CSV (comma, semicolon or tab separated); up to "
        f"{MAX_UPLOAD_BYTES // 2**20} MB per file. Each file is checked as it arrives. Copies "
        f"are kept in {uploads_dir()} (listed below, where you can remove them); your own "
        "files are never modified."
    )
    may = auth.can_manage_data()
    if not may:
        st.caption("Only the SMO uploads (viewers read).")
    files = st.file_uploader(
        "Layer files and DEM",
        type=["zip", "gpkg", "geojson", "json", "fgb", "tif", "tiff", "csv", "txt", "tsv"],
        accept_multiple_files=True,
        key="data_upload",
        disabled=not may,
    )
    stored = _store_files(files or [])
    layer_files: list[tuple[str, str, Path]] = []  # (label, source spec, file)
    rasters: list[tuple[str, Path]] = []
    for name, item in stored.values():
        if isinstance(item, Exception):
            st.error(f"{name}: {plain(item)}")
            continue
        if isinstance(item, Path):  # a 303(d) list CSV
            if item.exists():
                layer_files += _impairments_csv(name, item)
            continue
        if not item.folder.exists():  # removed below in another run
            continue
        _upload_messages(name, item)
        layer_files += _upload_layer_files(name, item)
        rasters += [(f"{name}: {p.name}", p) for p in item.rasters if p.name not in item.problems]
        if item.skipped:
            st.caption(f"{name}: ignored non-layer files: {plain(', '.join(item.skipped[:10]))}")
    return layer_files, rasters


def _store_files(files: list[Any]) -> dict[str, Any]:
    """Store each newly uploaded file once (a bad one as its error) and forget those
    removed from the uploader: ``file id -> (name, stored upload or exception)``."""
    stored: dict[str, Any] = st.session_state.setdefault("data_stored", {})
    for f in files:
        fid = getattr(f, "file_id", None) or f.name
        if fid in stored:
            continue
        try:
            auth.require_data_manager("Uploading")
            user = auth.current().name
            if f.name.lower().endswith(TABLE_SUFFIXES):  # the 303(d) list
                stored[fid] = (f.name, store_table_upload(f.name, f.getvalue(), user=user))
            else:
                stored[fid] = (f.name, store_upload(f.name, f.getvalue(), user=user))
        except Exception as exc:  # noqa: BLE001 - every bad file becomes a message
            stored[fid] = (f.name, exc)
    current = {getattr(f, "file_id", None) or f.name for f in files}
    for fid in [k for k in stored if k not in current]:  # removed from the uploader
        stored.pop(fid)
    return stored


#: The impairments columns a 303(d) list CSV's boxes name (column -> words).
IMPAIRMENT_BOXES = {
    "wb_id": "PWL ID (the water's id, NNNN-NNNN)",
    "pollutant": "Cause / pollutant",
    "category": "List part or EPA category",
    "list_year": "List year",
    "source": "Suspected source",
}


def _impairments_csv(name: str, path: Path) -> list[tuple[str, str, Path]]:
    """A 303(d) list CSV: which column holds what (automatic: the usual names), read
    into the ``impairments`` table; ``[(label, spec, file)]`` once it reads, else ``[]``
    after saying why."""
    from ...io.impairments import read_text_csv

    try:
        headers = list(read_text_csv(path).columns)
    except Exception as exc:  # noqa: BLE001 - every bad file becomes a message
        st.error(f"{name}: {plain(exc)}")
        return []
    columns: dict[str, str] = {}
    with st.expander(f"Columns of the 303(d) list {name}"):
        st.caption(
            "Which column of the CSV holds what. Automatic: the usual names (PWL ID, "
            "Cause/Pollutant, List Part, ... or an ATTAINS export's)."
        )
        for col, words in IMPAIRMENT_BOXES.items():
            choice = st.selectbox(
                words,
                [AUTO, *headers],
                key=f"data_303d_{name}_{col}",
                disabled=not auth.can_manage_data(),
            )
            if choice != AUTO:
                columns[col] = choice
    try:
        spec, read = import_303d_csv(path, columns)
    except Exception as exc:  # noqa: BLE001
        st.error(
            f"{name}: {plain(state.app_fixes(exc))} Choose the columns under "
            f"'Columns of the 303(d) list {name}'."
        )
        return []
    st.info(f"{name}: {len(read.table):,} listing(s) of the 303(d) list read.")
    for finding in read.qa.findings:
        st.warning(f"{name}: skipped {plain(finding.message)}")
    return [(f"{name}: impairments (303(d) list)", spec, path)]


def _upload_messages(name: str, item: StoredUpload) -> None:
    """The problems (errors) and notes of one stored upload."""
    for problem in item.problems.values():
        st.error(f"{name}: {plain(problem)}")
    for note in item.notes.values():
        st.info(f"{name}: {plain(note)}")


def _upload_layer_files(name: str, item: StoredUpload) -> list[tuple[str, str, Path]]:
    """``(label, source spec, file)`` of every layer of one stored upload (each layer of
    a GeoPackage), skipping files with a problem."""
    out: list[tuple[str, str, Path]] = []
    for p in item.layers:
        if p.name in item.problems:
            continue
        for lyr in _layers_of(p):
            spec = f"{p}::{lyr}" if p.suffix.lower() == ".gpkg" else str(p)
            label = f"{name}: {lyr}" if p.suffix.lower() == ".gpkg" else f"{name}: {p.name}"
            out.append((label, spec, p))
    return out


def _assign_layers(layer_files: list[tuple[str, str, Path]], rasters: list[tuple[str, Path]]):
    """Which layer is which, each layer's CRS and fields, the DEM, then validate."""
    st.subheader("Which layer is which")
    roles: dict[str, list[str]] = {}
    field_map: dict[str, dict[str, str]] = {}
    crs_of: dict[str, str] = {}
    for i, (label, spec, _file) in enumerate(layer_files):
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
        own = _crs_of(spec)
        crs_choice = _crs_select(
            f"CRS of {label}",
            key=f"data_crs_{i}",
            own=own,
            help_text="The coordinate system the file's coordinates are in. A Shapefile "
            "without its .prj has none: choose it here (the app writes a copy with it; "
            "your file is not changed).",
        )
        if crs_choice:
            crs_of[spec] = crs_choice
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
    st.subheader("Elevation (DEM)")
    dem_options = [NO_DEM, *[str(p) for _label, p in rasters]]
    dem_labels = {str(p): label for label, p in rasters}
    dem = st.selectbox(
        "DEM GeoTIFF for overland flow",
        dem_options,
        index=1 if len(dem_options) > 1 else 0,
        format_func=lambda o: dem_labels.get(o, o),
        key="data_dem",
        help="Without a DEM every parcel drains to its nearest inlet (a straight line, "
        "not the ground). Upload the town's elevation GeoTIFF above to trace runoff over "
        "the ground.",
    )
    if dem == NO_DEM:
        st.caption(
            "No DEM: parcels will drain to the nearest inlet. Upload a DEM GeoTIFF (.tif) "
            "with the layers to follow the ground."
        )
    working = _crs_select(
        "Working CRS (projected; automatic: the DEM's, else the data's, else its UTM zone)",
        key="data_working_crs",
        own=None,
        automatic=True,
        projected_only=True,
    )
    if st.button("Validate the uploaded layers", key="data_validate", type="primary"):
        try:
            roles = {
                role: [_with_crs(spec, crs_of[spec]) if spec in crs_of else spec for spec in specs]
                for role, specs in roles.items()
            }
        except Exception as exc:  # noqa: BLE001
            st.error(f"The CRS could not be given to the layer: {plain(exc)}")
            return
        _try_open(
            {
                "path": None,
                "layers": roles,
                "field_map": field_map or None,
                "dem": None if dem == NO_DEM else dem,
                "crs": working,
                "label": "uploaded layers",
            }
        )


def _crs_select(
    label: str,
    *,
    key: str,
    own: str | None,
    help_text: str | None = None,
    automatic: bool = False,
    projected_only: bool = False,
) -> str | None:
    """A CRS chooser: ``None`` = keep the file's own (or automatic), else ``EPSG:xxxx``."""
    first = AUTO if automatic else (f"{AS_FILE}: {own}" if own else "(none in the file: choose)")
    codes = [c for c in COMMON_CRS if not (projected_only and COMMON_CRS[c].endswith("longitude"))]
    options = [first, *codes, OTHER_CRS]
    choice = st.selectbox(
        label,
        options,
        format_func=lambda c: f"{c} — {COMMON_CRS[c]}" if c in COMMON_CRS else c,
        key=key,
        help=help_text,
    )
    if choice == first:
        return None
    if choice == OTHER_CRS:
        typed = st.text_input(f"EPSG code ({label})", key=f"{key}_code", placeholder="e.g. 26918")
        typed = typed.strip().upper().removeprefix("EPSG:")
        if not typed:
            return None
        if not typed.isdigit():
            st.warning(f"'{state.data_text(typed)}' is not an EPSG code (a number such as 26918).")
            return None
        try:
            from pyproj import CRS

            crs = CRS.from_epsg(int(typed))
        except Exception:  # noqa: BLE001
            st.warning(f"EPSG:{typed} is not a CRS pyproj knows. Check the code.")
            return None
        if projected_only and not crs.is_projected:
            st.warning(f"EPSG:{typed} ({crs.name}) is not projected; the working CRS must be.")
            return None
        st.caption(f"EPSG:{typed}: {crs.name}")
        return f"EPSG:{typed}"
    return choice


def _crs_of(spec: str) -> str | None:
    import pyogrio

    path, _, layer = spec.partition("::")
    try:
        return pyogrio.read_info(path, layer=layer or None).get("crs") or None
    except Exception:  # noqa: BLE001
        return None


def _with_crs(spec: str, crs: str) -> str:
    """A copy of the layer with ``crs`` as its CRS, beside the upload (``crs/`` folder of
    the upload's own folder, never the user's file); the copy's source spec."""
    import re

    import pyogrio

    path, _, layer = spec.partition("::")
    src = Path(path)
    root = uploads_dir().resolve()
    folder = next((q for q in src.resolve().parents if q.parent == root), None)
    if folder is None:
        raise ValueError(f"'{src.name}' is not an upload of this app: its CRS is not changed.")
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", f"{src.stem}_{layer}" if layer else src.stem)
    out = folder / "crs" / f"{stem}-{crs.replace(':', '')}.gpkg"
    if not out.exists():
        out.parent.mkdir(exist_ok=True)
        df = pyogrio.read_dataframe(path, layer=layer or None)
        df = df.set_crs(crs, allow_override=True)
        tmp = out.with_suffix(".tmp.gpkg")
        pyogrio.write_dataframe(df, tmp, layer=stem, driver="GPKG")
        tmp.replace(out)
    return str(out)


def _in_use(folder: Path) -> bool:
    """Whether the workspace in use (or about to be) reads files of this upload."""
    import json

    text = json.dumps(
        [st.session_state.get("ms4map_workspace"), st.session_state.get("data_candidate")],
        default=str,
    )
    return str(folder) in text


def _stored_uploads() -> None:
    """The uploads kept in the data folder: where they are, and a button to remove each."""
    import datetime as dt
    import shutil

    ups = list_uploads()
    where = uploads_dir()
    st.header(f"Stored uploads ({len(ups)})")
    free = shutil.disk_usage(where if where.exists() else where.parent).free
    st.caption(
        f"Copies of the files you uploaded, kept in {where} ({free / 2**30:,.1f} GiB free "
        "there). The same file uploaded again reuses its copy. Removing a copy does not "
        "touch your own file."
    )
    may = auth.can_manage_data()
    if ups and not may:
        st.caption("Only the SMO removes uploads (viewers read).")
    for up in ups:
        c1, c2 = st.columns([5, 1])
        when = dt.datetime.fromtimestamp(up.modified).strftime("%Y-%m-%d %H:%M")
        c1.markdown(
            f"**{plain(up.name)}** — {len(up.files)} file(s), {up.bytes / 2**20:,.1f} MB, "
            f"{when}  \n`{up.folder}`"
        )
        busy = _in_use(up.folder)
        if c2.button(
            "Remove",
            key=f"data_remove_{up.folder.name}",
            disabled=busy or not may,
            help="Only the SMO removes uploads."
            if not may
            else "In use by the current workspace: open another one first."
            if busy
            else "Delete this copy from the app's data folder.",
        ):
            try:
                auth.require_data_manager("Removing an upload")
                remove_upload(up.folder)
            except Exception as exc:  # noqa: BLE001
                st.error(plain(exc))
                return
            stored = st.session_state.get("data_stored", {})
            for fid in [
                k for k, (_n, item) in stored.items() if getattr(item, "folder", None) == up.folder
            ]:
                stored.pop(fid)
            st.session_state["data_removed_msg"] = f"Removed {up.name} ({up.folder})."
            st.rerun()
    msg = st.session_state.pop("data_removed_msg", None)
    if msg:
        st.success(plain(msg))


def _try_open(src: dict[str, Any]) -> None:
    """Open + validate; show the QA report; offer to use it only when it opened."""
    from ...io import open_workspace

    kwargs = {k: src[k] for k in ("layers", "field_map", "dem", "crs") if src.get(k)}
    try:
        ws = open_workspace(src["path"], **kwargs)
        state.check_workspace_inputs(ws)  # a manifest cannot reach out of the folders
    except Exception as exc:  # noqa: BLE001
        for k in ("data_candidate", "data_candidate_msg", "data_candidate_report"):
            st.session_state.pop(k, None)
        st.error(f"Cannot use these data: {plain(state.app_fixes(exc))}")
        report = getattr(exc, "report", None)
        if report is not None and hasattr(report, "to_markdown"):
            st.markdown(state.app_fixes(report.to_markdown(title="Validation report")))
        return
    st.session_state["data_candidate"] = src
    st.session_state["data_candidate_msg"] = (
        f"Opened '{src['label']}': "
        f"{', '.join(f'{k} ({len(v):,})' for k, v in ws.layers.items())}"
        + (
            f"; DEM {ws.dem.shape[1]:,} x {ws.dem.shape[0]:,} cells"
            if ws.dem is not None
            else "; no DEM (parcels drain to the nearest inlet)"
        )
        + ". Read the validation report, then use these data."
    )
    st.session_state["data_candidate_report"] = state.app_fixes(
        workspace_qa(ws).to_markdown(title="Validation report")
    )
    st.rerun()


def _use_candidate() -> None:
    st.session_state.pop("data_candidate_msg", None)
    st.session_state.pop("data_candidate_report", None)
    cand = st.session_state.pop("data_candidate", None)
    if cand:
        state.use_workspace(cand)  # named in the address: a reload reopens it


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
