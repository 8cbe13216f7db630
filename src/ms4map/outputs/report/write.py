"""Write a determination's report to a file, HTML or PDF by its suffix (:func:`write_report`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import UsageError
from ...io import write_text_output
from .html import render_html
from .pdf import write_pdf

if TYPE_CHECKING:
    from .text import DeterminationLike

__all__ = ["REPORT_SUFFIXES", "write_report"]

#: Report formats, by file suffix.
REPORT_SUFFIXES = (".html", ".htm", ".pdf")


def write_report(det: DeterminationLike, path: str | Path, *, protected: Any = ()) -> Path:
    """Write the report as HTML (``.html``/``.htm``) or PDF (``.pdf``) by suffix.

    Parameters
    ----------
    det : Determination
    path : str or Path
        Output file; a missing folder is created.
    protected : iterable of paths
        Input files (e.g. the workspace's ``inputs``) the report must never replace.

    Raises
    ------
    UsageError
        Unknown suffix, or ``path`` is one of ``protected`` (or a sidecar of one).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".html", ".htm"):
        return write_text_output(
            p, render_html(det), protected=protected, option="--report", suffixes=(suffix,)
        )
    if suffix == ".pdf":
        return write_pdf(det, p, protected=protected)
    raise UsageError(f"Unknown report format {suffix!r}: select from ['.html', '.pdf']")
