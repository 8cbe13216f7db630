"""The annual IDDE report: one column per reporting year, as CSV or a one-page PDF."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

__all__ = ["LABELS", "write_annual_report"]

#: Row labels of the report, in order.
LABELS = {
    "period_start": "Reporting year starts",
    "period_end": "Reporting year ends",
    "outfalls": "Outfalls in the MS4",
    "outfalls_screened": "Outfalls screened (inspected) this year",
    "screened_last_5_years": "Share of outfalls screened in the last 5 years",
    "flowing": "Outfalls found flowing (dry weather)",
    "suspect_or_obvious": "Outfalls characterised suspect or obvious",
    "cases_opened": "Cases opened",
    "track_downs": "Track-downs (cases sampled)",
    "samples_taken": "Track-down samples taken",
    "illicit_found": "Illicit discharges found (source identified)",
    "notices_sent": "Notices of violation sent",
    "illicit_eliminated": "Illicit discharges eliminated",
    "cases_open": "Cases open at the end of the year",
}


def _table(report: pd.DataFrame) -> pd.DataFrame:
    t = report.set_index("year")[list(LABELS)].T
    t.index = [LABELS[k] for k in t.index]
    t.columns = [str(c) for c in t.columns]
    share = LABELS["screened_last_5_years"]
    t.loc[share] = [f"{float(v):.0%}" for v in t.loc[share]]
    return t


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
    """
    from ..io import check_output_path, write_text_output

    out = check_output_path(
        path, protected=protected, suffixes=(".csv", ".pdf"), option="--annual-report"
    )
    if out.suffix.lower() == ".csv":
        return write_text_output(
            out, report.to_csv(index=False), protected=protected, option="--annual-report"
        )
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = _table(report)
    fig = plt.figure(figsize=(8.5, 11))
    fig.text(0.5, 0.95, "Illicit discharge detection and elimination", ha="center", size=14)
    fig.text(0.5, 0.925, title, ha="center", size=9)
    ax = fig.add_axes((0.05, 0.1, 0.9, 0.8))
    ax.axis("off")
    ncol = len(t.columns)
    cells = [[label, *map(str, row)] for label, row in zip(t.index, t.to_numpy(), strict=True)]
    tab = ax.table(
        cellText=cells,
        colLabels=["", *t.columns],
        colWidths=[0.55] + [0.45 / max(ncol, 1)] * ncol,
        bbox=(0.0, 0.35, 1.0, 0.6),
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
    tmp = out.with_name(f".{out.name}.tmp")
    fig.savefig(tmp, format="pdf")
    plt.close(fig)
    tmp.replace(out)
    return out
