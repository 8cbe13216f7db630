"""The annual IDDE report: one column per reporting year, as CSV or a PDF (tables of at
most six years, three to a letter page)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..core.tables import csv_text
from ..io import check_output_path, write_text_output

__all__ = ["LABELS", "write_annual_report"]

#: Row labels of the report, in order.
LABELS = {
    "period": "Reporting period",
    "period_start": "Period starts",
    "period_end": "Period ends",
    "outfalls": "Outfalls in the MS4",
    "outfalls_screened": "Outfalls screened (inspected) in the period",
    "screened_last_5_years": "Share of outfalls screened in the last 5 years",
    "flowing": "Outfalls found flowing (dry weather)",
    "suspect_or_obvious": "Outfalls characterised suspect or obvious",
    "cases_opened": "Cases opened",
    "track_downs": "Track-downs (cases sampled)",
    "samples_taken": "Track-down samples taken",
    "illicit_found": "Illicit discharges found (source identified)",
    "notices_sent": "Notices of violation sent",
    "illicit_eliminated": "Illicit discharges eliminated",
    "cases_open": "Cases open at the end of the period",
}


def _table(report: pd.DataFrame) -> pd.DataFrame:
    if "period" not in report:  # a report made before the periods
        report = report.assign(period="reporting year")
    t = report.set_index("year")[list(LABELS)].T
    t.index = [LABELS[k] for k in t.index]
    t.columns = [str(c) for c in t.columns]
    share = LABELS["screened_last_5_years"]
    t.loc[share] = [f"{float(v):.0%}" for v in t.loc[share]]
    return t


#: Reporting years side by side in one table (more would not fit their dates), and
#: tables on one page.
YEARS_PER_TABLE = 6
TABLES_PER_PAGE = 3


def _annual_pages(t: pd.DataFrame, title: str) -> list:
    """The report's pages: the years in tables of at most :data:`YEARS_PER_TABLE`
    columns, :data:`TABLES_PER_PAGE` tables to a letter page (the caller closes them)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    years = list(t.columns)
    chunks = [years[i : i + YEARS_PER_TABLE] for i in range(0, len(years), YEARS_PER_TABLE)]
    chunks = chunks or [[]]
    per_page = [chunks[i : i + TABLES_PER_PAGE] for i in range(0, len(chunks), TABLES_PER_PAGE)]
    label_w = 0.42
    height = 0.25  # of the page, per table (15 rows)
    pages = []
    for k, page in enumerate(per_page, start=1):
        fig = plt.figure(figsize=(8.5, 11))
        pages.append(fig)
        fig.text(0.5, 0.95, "Illicit discharge detection and elimination", ha="center", size=14)
        fig.text(0.5, 0.925, title, ha="center", size=9)
        if len(per_page) > 1:
            fig.text(0.95, 0.975, f"page {k} of {len(per_page)}", ha="right", size=7)
        for j, cols in enumerate(page):
            top = 0.9 - j * (height + 0.03)
            ax = fig.add_axes((0.05, top - height, 0.9, height))
            ax.axis("off")
            sub = t[cols]
            cells = [
                [label, *map(str, row)]
                for label, row in zip(sub.index, sub.to_numpy(), strict=True)
            ]
            ncol = len(cols)
            tab = ax.table(
                cellText=cells,
                colLabels=["", *cols],
                colWidths=[label_w] + [(1 - label_w) / YEARS_PER_TABLE] * ncol,
                bbox=(0.0, 0.0, label_w + (1 - label_w) * ncol / YEARS_PER_TABLE, 1.0),
                cellLoc="center",
            )
            for (_r, c), cell in tab.get_celld().items():
                if c == 0:
                    cell.set_text_props(ha="left")
                    cell.PAD = 0.02
            tab.auto_set_font_size(False)
            tab.set_fontsize(8)
        fig.text(
            0.05,
            0.05,
            "Counts are of outfalls or cases, not of records; from the ms4map records file.",
            size=7,
        )
    return pages


def write_annual_report(
    report: pd.DataFrame,
    path: str | Path,
    *,
    title: str,
    protected: Iterable[str | Path] = (),
) -> Path:
    """Write :meth:`Records.annual_report` as ``.csv`` (one row per year) or ``.pdf``.

    Parameters
    ----------
    report : DataFrame
        One row per reporting year (columns ``year`` and the summary keys).
    path : path
        ``.csv`` or ``.pdf``; checked with :func:`ms4map.io.check_output_path`.
    title : str
        Heading of the PDF (municipality and law).
    protected : paths
        Input files never to write.

    The PDF prints the years in tables of at most :data:`YEARS_PER_TABLE` columns (one
    page for up to 18 years; more go on further numbered pages), so every date stays
    inside its cell.
    """
    out = check_output_path(
        path, protected=protected, suffixes=(".csv", ".pdf"), option="--annual-report"
    )
    if out.suffix.lower() == ".csv":
        return write_text_output(
            out, csv_text(report), protected=protected, option="--annual-report"
        )
    pages = _annual_pages(_table(report), title)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        if len(pages) == 1:
            pages[0].savefig(tmp, format="pdf")
        else:
            from matplotlib.backends.backend_pdf import PdfPages

            with PdfPages(tmp) as pdf:
                for fig in pages:
                    pdf.savefig(fig)
        tmp.replace(out)
    finally:
        import matplotlib.pyplot as plt

        for fig in pages:
            plt.close(fig)
        if tmp.exists():
            tmp.unlink()
    return out
