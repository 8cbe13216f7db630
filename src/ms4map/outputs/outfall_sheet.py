"""The printable outfall map: a PDF of every outfall on the town's map plus the inventory table.

Candidate sources, sampling plans and notices live in :mod:`ms4map.idde`; the
inventory itself is :func:`ms4map.analysis.outfalls.outfall_inventory`.  The status
drawn is the inventory's ``status`` column: the app passes the one status of each
outfall (:func:`ms4map.records.summary.outfall_status`, the layer merged with the
records).
"""

from __future__ import annotations

import io
import math
import textwrap
from typing import TYPE_CHECKING, Any

from ..io.styles import OUTFALL_COLOURS

if TYPE_CHECKING:
    import pandas as pd

    from ..io import Workspace
    from ..pipeline import PipelineResult

__all__ = ["outfall_map_pdf"]

#: Label offsets tried in turn (points from the outfall), before a leader line.
_OFFSETS = ((4, 3), (4, -9), (-4, 3), (-4, -9), (0, 8), (0, -14), (9, -3), (-9, -3))
#: Inventory rows per table page.
_PER_PAGE = 30


def outfall_map_pdf(
    ws: Workspace,
    result: PipelineResult,
    inventory: pd.DataFrame,
    *,
    title: str = "MS4 outfall map",
) -> bytes:
    """A printable outfall map (PDF, letter landscape) plus the inventory table.

    Page 1 draws parcels, waters, conveyances, sewersheds and every outfall
    labelled with its id (labels of close outfalls moved apart, with a leader line when
    needed), with a scale bar instead of raw coordinates; the following pages list
    the inventory, headers wrapped to their columns.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    buf = io.BytesIO()
    with PdfPages(buf) as pdf:
        fig = map_figure(ws, result, inventory, title=title)
        pdf.savefig(fig)
        plt.close(fig)
        for fig in table_figures(inventory):
            pdf.savefig(fig)
            plt.close(fig)
    return buf.getvalue()


def map_figure(
    ws: Workspace, result: PipelineResult | None, inventory: pd.DataFrame, *, title: str
) -> Any:
    """Page 1 of :func:`outfall_map_pdf` (a matplotlib figure)."""
    import matplotlib.pyplot as plt

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
                label=status.replace("_", " "),
            )
        ax.legend(title="Outfall status", loc="lower right", fontsize=7, title_fontsize=8)
    ax.set_title(f"{title} — {len(inventory)} outfall(s)")
    ax.set_aspect("equal")
    # no raw projected coordinates (a 1e6 offset means nothing on paper): a scale bar
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(f"Coordinates: {getattr(ws.crs, 'name', str(ws.crs))}", fontsize=7)
    ax.set_ylabel("")
    fig.tight_layout()
    _scale_bar(ax, _metres_per_unit(ws.crs))
    if len(inventory):
        _place_labels(fig, ax, inventory)
    return fig


def _metres_per_unit(crs: Any) -> float:
    try:
        return float(crs.axis_info[0].unit_conversion_factor)
    except Exception:  # noqa: BLE001 - no CRS: metres
        return 1.0


def _scale_bar(ax: Any, metres_per_unit: float) -> None:
    """A scale bar of a round length (about a fifth of the width), bottom left."""
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    width_m = (x1 - x0) * metres_per_unit
    if not width_m > 0:
        return
    raw = width_m / 5
    exp = 10 ** math.floor(math.log10(raw))
    length = max(m * exp for m in (1, 2, 5) if m * exp <= raw)
    units = length / metres_per_unit
    bx, by = x0 + 0.04 * (x1 - x0), y0 + 0.05 * (y1 - y0)
    ax.plot([bx, bx + units], [by, by], color="black", linewidth=3, solid_capstyle="butt")
    text = f"{length / 1000:g} km" if length >= 1000 else f"{length:g} m"
    ax.annotate(
        text, (bx + units / 2, by), xytext=(0, 4), textcoords="offset points", ha="center",
        fontsize=7,
    )  # fmt: skip
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)


def _place_labels(fig: Any, ax: Any, inventory: pd.DataFrame) -> None:
    """Every outfall's id next to it, never over another label: the first free offset
    of :data:`_OFFSETS`, else further out with a leader line."""
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    for r in inventory.sort_values(["y", "x"], ascending=[False, True]).itertuples():
        label = None
        tries = [(o, False) for o in _OFFSETS]
        tries += [((dx * k, dy * k), True) for k in (2, 3, 4, 5, 6) for dx, dy in _OFFSETS]
        for (dx, dy), leader in tries:
            t = ax.annotate(
                str(r.outfall_id),
                (r.x, r.y),
                xytext=(dx, dy),
                textcoords="offset points",
                ha="left" if dx >= 0 else "right",
                fontsize=6,
                zorder=6,
                arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "#555555"} if leader else None,
            )
            box = t.get_window_extent(renderer).expanded(1.05, 1.1)
            if not any(box.overlaps(b) for b in placed):
                label = t
                placed.append(box)
                break
            t.remove()
        if label is None:  # crowded beyond every try: the last one, still readable
            t = ax.annotate(str(r.outfall_id), (r.x, r.y), xytext=(4, 3),
                            textcoords="offset points", fontsize=6, zorder=6)  # fmt: skip
            placed.append(t.get_window_extent(renderer))


def table_figures(inventory: pd.DataFrame) -> list[Any]:
    """The inventory pages of :func:`outfall_map_pdf`: headers wrapped to their column."""
    import matplotlib.pyplot as plt

    shown = inventory.drop(columns=[c for c in ("x", "y", "status_reason") if c in inventory])
    shown = shown.astype(object).where(shown.notna(), "")
    if "status" in shown:
        shown["status"] = shown["status"].astype(str).str.replace("_", " ")
    text = shown.astype(str)
    # column widths by their content (a long header wraps instead of widening it)
    chars = [
        max(
            8,
            min(28, int(text[c].str.len().max() if len(text) else 0)),
            max((len(w) for w in str(c).split("_")), default=0),
        )
        for c in text.columns
    ]
    total = sum(chars)
    widths = [n / total for n in chars]
    labels = [
        textwrap.fill(str(c).replace("_", " "), width=max(6, n), break_long_words=True)
        for c, n in zip(text.columns, chars, strict=True)
    ]
    lines = max((lab.count("\n") + 1 for lab in labels), default=1)
    values = text.map(lambda v: v if len(v) <= 28 else v[:27] + "…")
    figs = []
    for start in range(0, max(len(values), 1), _PER_PAGE):
        fig, ax = plt.subplots(figsize=(11, 8.5))
        ax.axis("off")
        chunk = values.iloc[start : start + _PER_PAGE]
        if len(chunk):
            tab = ax.table(
                cellText=chunk.to_numpy(),
                colLabels=labels,
                colWidths=widths,
                loc="upper center",
                cellLoc="left",
            )
            tab.auto_set_font_size(False)
            tab.set_fontsize(6)
            row_h = 0.022
            for (row, _col), cell in tab.get_celld().items():
                cell.set_height(row_h * lines if row == 0 else row_h)
                if row == 0:
                    cell.get_text().set_fontweight("bold")
        ax.set_title(f"Outfall inventory ({start + 1}-{start + len(chunk)} of {len(values)})")
        figs.append(fig)
    return figs
