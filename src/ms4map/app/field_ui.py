"""Field trips in the app: make a field package for the selected outfalls, import one back.

Part of the records pages (the outfall inventory), shown to the SMO only; every action
goes through :func:`ms4map.app.auth.require_smo` on the server (``records_ui._writer``).
The package is written in the app's data folder (``MS4MAP_DATA_DIR/field/``) and offered
for download; an uploaded package is saved there before it is imported, and the import
report (added, imported before, refused with the field and the fix, conflicts) is shown.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from ..records import field_export, field_import
from . import auth, records_ui, state
from .upload import app_data_dir

__all__ = ["field_trips", "import_report"]


def _folder(sub: str) -> Path:
    p = app_data_dir() / "field" / sub
    p.mkdir(parents=True, exist_ok=True)
    return p


def _error(exc: BaseException) -> None:
    st.error(state.data_text(str(exc)))


def field_trips(inv: pd.DataFrame) -> None:
    """The "Field trips" part: a package for the selected outfalls, and an import."""
    if not auth.can_edit():
        return  # the SMO's tool only
    st.subheader("Field trips")
    st.caption(
        "A field package is one GeoPackage for QGIS or QField: the outfalls to visit, the "
        "pipes and structures upstream, the parcels around them, a hillshade basemap, the "
        "open cases, and empty inspection, sample and photo forms. Bring it back and import "
        "it: every row is checked as if typed here; importing it twice adds nothing."
    )
    ids = inv["outfall_id"].astype(str).tolist()
    chosen = st.multiselect("Outfalls to visit (none: all)", ids, key="field_outfalls")
    if st.button("Make the field package", key="field_make"):
        try:
            rec = records_ui._writer("Making a field package")
            stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            out = _folder("packages") / f"field-trip-{stamp}.gpkg"
            info = field_export.export_package(rec, out, outfalls=chosen or None, qgis_project=True)
            st.session_state["field_made"] = info
        except Exception as exc:  # noqa: BLE001 - a refusal shown with its reason, not a crash
            _error(exc)
    made = st.session_state.get("field_made")
    if made and Path(made["path"]).exists():
        st.success(
            f"Field package made: {made['outfalls']} outfall(s), {made['structures']} "
            f"structure(s), {made['cases']} open case(s), {made['bytes'] / 1e6:.1f} MB"
            + (
                "; its QGIS project with the crew's forms is inside it (QField or QGIS: "
                "open the file under its own name)."
                if made.get("qgis_project")
                else " (no QGIS project: QGIS's Python, python3-qgis, is not installed here)."
            )
        )
        st.download_button(
            "Download the field package (GeoPackage)",
            Path(made["path"]).read_bytes(),
            file_name=Path(made["path"]).name,
            mime="application/geopackage+sqlite3",
            key="field_download",
        )
    up = st.file_uploader("Field package to import (.gpkg)", type=["gpkg"], key="field_upload")
    if up is not None and st.button("Import the field package", key="field_import"):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(up.name).name) or "package.gpkg"
        dest = _folder("incoming") / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{name}"
        dest.write_bytes(up.getvalue())
        try:
            rec = records_ui._writer("Importing a field package")
            st.session_state["field_report"] = field_import.import_package(rec, dest)
        except Exception as exc:  # noqa: BLE001 - every refusal shown with its reason
            st.session_state.pop("field_report", None)
            _error(exc)
    report = st.session_state.get("field_report")
    if report:
        import_report(report)


def import_report(report: dict[str, Any]) -> None:
    """The import report: what was added, imported before, refused (field, fix), conflicts."""
    a = report["added"]
    st.success(
        f"Imported: {a['inspections']} inspection(s), {a['samples']} sample(s), "
        f"{a['photos']} photo(s); {report['already']} row(s) were imported before; "
        f"{len(report['refused'])} refused."
    )
    if report["refused"]:
        st.warning("Refused rows (nothing of them was added): fix them and import again.")
        table = pd.DataFrame(report["refused"])[
            ["table", "outfall_id", "case_id", "field", "reason"]
        ].rename(
            columns={
                "table": "Table",
                "outfall_id": "Outfall",
                "case_id": "Case",
                "field": "Field",
                "reason": "Reason and fix",
            }
        )
        st.dataframe(table, hide_index=True, width="stretch", key="field_refused")
    for c in report["conflicts"]:
        st.warning(state.data_text(c))
