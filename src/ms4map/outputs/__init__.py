"""What people read: folium maps, the determination report, the outfall sheet and exports.

The door of :mod:`ms4map.outputs`; its parts each do one job:

- :mod:`.maps`: folium maps of a workspace and its results (layers, view, render,
  click identification, search, hillshade);
- :mod:`.report`: the determination report, HTML and PDF;
- :mod:`.outfall_sheet`: the printable outfall map and inventory (PDF);
- :mod:`.export`: the results in GIS formats (GeoPackage, Shapefile, GeoJSON, CSV), and as
  an EPA SWMM model (``.inp``: :mod:`.swmm_out`, its tables :mod:`.swmm_tables`).

folium and matplotlib are imported only inside the functions that draw.
"""

from __future__ import annotations

from . import maps, outfall_sheet, report
from .export import export
from .maps import build_layers, render_layers, static_map
from .outfall_sheet import outfall_map_pdf
from .report import render_html, report_html, report_pdf, write_report

__all__ = [
    "build_layers",
    "export",
    "outfall_map_pdf",
    "render_html",
    "render_layers",
    "report_html",
    "report_pdf",
    "static_map",
    "write_report",
    # the public modules
    "maps",
    "outfall_sheet",
    "report",
]
