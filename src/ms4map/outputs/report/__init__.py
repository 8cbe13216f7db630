"""The printable report of a Condition A/B/C determination: HTML and PDF.

The door of :mod:`ms4map.outputs.report`; its modules each do one job:

- :mod:`.site_map`: the small static map of the site and its drainage path
  (matplotlib, no tiles, nothing fetched), from the determination's map layers;
- :mod:`.text`: the wording both reports share;
- :mod:`.html`: :func:`render_html` / :func:`report_html`, one self-contained page;
- :mod:`.pdf`: :func:`report_pdf` (bytes), :func:`write_pdf`, the pages and the
  signature block (matplotlib's own PDF backend, so no system libraries are needed);
- :mod:`.write`: :func:`write_report`, HTML or PDF by the file's suffix.

Examples
--------
>>> from ms4map.outputs.report import write_report                     # doctest: +SKIP
>>> write_report(det, "site.html"); write_report(det, "site.pdf")  # doctest: +SKIP
"""

from __future__ import annotations

from .html import render_html, report_html
from .pdf import report_figure, report_figures, report_pdf, write_pdf
from .site_map import site_map_layers, site_map_png
from .text import model_law_note
from .write import REPORT_SUFFIXES, write_report

__all__ = [
    "REPORT_SUFFIXES",
    "model_law_note",
    "render_html",
    "report_figure",
    "report_figures",
    "report_html",
    "report_pdf",
    "site_map_layers",
    "site_map_png",
    "write_pdf",
    "write_report",
]
