"""The printable outfall map: a PDF of every outfall on the town's map plus the inventory table.

Candidate sources, sampling plans and notices live in :mod:`ms4map.idde`; the
inventory itself is :func:`ms4map.analysis.outfalls.outfall_inventory`.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from ..io.styles import OUTFALL_COLOURS

if TYPE_CHECKING:
    import pandas as pd

    from ..io import Workspace
    from ..pipeline import PipelineResult

__all__ = ["outfall_map_pdf"]


def outfall_map_pdf(
    ws: Workspace,
    result: PipelineResult,
    inventory: pd.DataFrame,
    *,
    title: str = "MS4 outfall map",
) -> bytes:
    """A printable outfall map (PDF, letter landscape) plus the inventory table.

    Page 1 draws parcels, waters, conveyances, sewersheds and every outfall
    labelled with its id; the following pages list the inventory.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    buf = io.BytesIO()
    with PdfPages(buf) as pdf:
        fig, ax = plt.subplots(figsize=(11, 8.5))
        get = ws.layers.get
        if (p := get("parcels")) is not None and len(p):
            p.plot(ax=ax, facecolor="#f2f2f2", edgecolor="#bbbbbb", linewidth=0.2)
        sheds = getattr(result, "sewersheds", None) if result is not None else None
        if sheds is not None and len(sheds):
            sheds.plot(ax=ax, facecolor="none", edgecolor="#7570b3", linewidth=1.0)
        if (w := get("waterbodies")) is not None and len(w):
            w.plot(ax=ax, color="#4a90d9", linewidth=1.2, alpha=0.8)
        conv = get("conveyances")
        if conv is not None and len(conv):
            conv.plot(ax=ax, color="#08519c", linewidth=0.6)
        if len(inventory):
            for status, grp in inventory.groupby(inventory["status"].astype(str)):
                ax.scatter(
                    grp["x"],
                    grp["y"],
                    s=30,
                    c=OUTFALL_COLOURS.get(status, "#969696"),
                    edgecolors="black",
                    linewidths=0.6,
                    zorder=5,
                    label=status,
                )
            for r in inventory.itertuples():
                ax.annotate(
                    str(r.outfall_id),
                    (r.x, r.y),
                    xytext=(3, 3),
                    textcoords="offset points",
                    fontsize=6,
                    zorder=6,
                )
            ax.legend(title="Outfall status", loc="lower right", fontsize=7, title_fontsize=8)
        ax.set_title(f"{title} — {len(inventory)} outfall(s)")
        ax.set_aspect("equal")
        ax.tick_params(labelsize=6)
        ax.set_xlabel(getattr(ws.crs, "name", str(ws.crs)), fontsize=7)
        fig.tight_layout()
        pdf.savefig(fig)
        plt.close(fig)
        shown = inventory.drop(columns=["x", "y"]).astype(object).where(inventory.notna(), "")
        per_page = 40
        for start in range(0, max(len(shown), 1), per_page):
            fig, ax = plt.subplots(figsize=(11, 8.5))
            ax.axis("off")
            chunk = shown.iloc[start : start + per_page]
            if len(chunk):
                tab = ax.table(
                    cellText=chunk.astype(str).to_numpy(),
                    colLabels=[c.replace("_", " ") for c in chunk.columns],
                    loc="upper center",
                    cellLoc="left",
                )
                tab.auto_set_font_size(False)
                tab.set_fontsize(6)
                tab.scale(1, 1.1)
            ax.set_title(f"Outfall inventory ({start + 1}-{start + len(chunk)} of {len(shown)})")
            pdf.savefig(fig)
            plt.close(fig)
    return buf.getvalue()
