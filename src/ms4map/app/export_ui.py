"""The app's download of result layers: the formats of ``ms4map export``.

One small control (format, "Prepare", download) placed where a page offers results;
the file is built by :func:`ms4map.outputs.export.export_frames` only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import streamlit as st

if TYPE_CHECKING:
    from ..io import Workspace

#: Choice shown -> suffix (the same choices as ``ms4map export --to``).
CHOICES = {
    "GeoPackage, styled for QGIS (.gpkg)": ".gpkg",
    "File Geodatabase for ArcGIS, unstyled (.gdb, zipped)": ".gdb",
    "Shapefiles + fields.csv (.zip)": ".zip",
    "GeoJSON, WGS 84 (.geojson)": ".geojson",
}
MIME = {
    ".gpkg": "application/geopackage+sqlite3",
    ".gdb": "application/zip",
    ".zip": "application/zip",
    ".geojson": "application/geo+json",
}


def layer_download(
    label: str, name: str, frame: Any, ws: Workspace, *, key: str, token: str = ""
) -> None:
    """:func:`results_download` of one layer ``name`` (the file named after it) with the
    workspace's provenance."""
    results_download(
        label, lambda: {name: frame}, stem=name, provenance=ws.provenance, key=key, token=token
    )


def results_download(
    label: str,
    layers: Callable[[], dict[str, Any]],
    *,
    stem: str,
    provenance: Callable[[], dict[str, Any]],
    key: str,
    token: str = "",
) -> None:
    """Format select box, a "Prepare" button and, once prepared, the download.

    ``token`` names what the layers hold (e.g. the filters on screen): a file prepared
    for another token is not offered (the download is always of what is on screen)."""
    from ..outputs.export import export_frames
    from .upload import app_data_dir

    c1, c2, c3 = st.columns([2, 1, 2])
    choice = c1.selectbox(f"Download {label} as", list(CHOICES), key=f"{key}_format")
    suffix = CHOICES[choice]
    if c2.button("Prepare the file", key=f"{key}_prepare"):
        workdir = app_data_dir() / "tmp"
        workdir.mkdir(parents=True, exist_ok=True)
        name, data, notes = export_frames(
            layers(), suffix, stem=stem, provenance=provenance(), workdir=workdir
        )
        st.session_state[f"{key}_file"] = (suffix, token, name, data, notes)
    got = st.session_state.get(f"{key}_file")
    if got and got[:2] == (suffix, token):  # not a file of another format or other rows
        _suffix, _token, name, data, notes = got
        c3.download_button(
            f"Download {name}", data, file_name=name, mime=MIME[suffix], key=f"{key}_download"
        )
        for note in notes:
            c3.caption(note)


def model_download(result: Any, ws: Workspace, *, key: str) -> None:
    """The traced network and its inlet catchments as an EPA SWMM model (``.inp``): the
    design storm's depth, a "Prepare the model" button and, once prepared, the download
    (the same file as ``ms4map export RESULTS.gpkg --to model.inp --storm-depth MM``)."""
    import tempfile
    from pathlib import Path

    from ..io import write_outputs
    from ..outputs import export
    from ..pipeline import model_layers
    from .upload import app_data_dir

    c1, c2, c3 = st.columns([2, 1, 2])
    depth = c1.number_input(
        "Design storm for the SWMM model: 24-hour depth (mm, NRCS Type II)",
        min_value=1.0,
        max_value=500.0,
        value=25.4,
        step=1.0,
        key=f"{key}_storm",
    )
    token = (ws.fingerprint(), float(depth))
    if c2.button("Prepare the SWMM model (.inp)", key=f"{key}_prepare"):
        workdir = app_data_dir() / "tmp"
        workdir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=workdir, prefix=".ms4map-model-") as td:
            src = Path(td) / "results.gpkg"
            layers = {**result.layers(), **model_layers(result)}
            write_outputs(src, layers, provenance=ws.provenance())
            res = export(src, Path(td) / "ms4map_model.inp", storm_depth_mm=float(depth))
            st.session_state[f"{key}_file"] = (token, res.path.read_bytes(), res.notes)
    got = st.session_state.get(f"{key}_file")
    if got and got[0] == token:  # not a model of another storm or another town
        _token, data, notes = got
        c3.download_button(
            "Download ms4map_model.inp",
            data,
            file_name="ms4map_model.inp",
            mime="text/plain",
            key=f"{key}_download",
        )
        for note in notes:
            c3.caption(note)
