"""The report's site map: the site, its drainage path, inlets, outfalls and receiving waters, drawn from what the determination was made from.

:func:`site_map_layers` gathers the geometries from the determination's evidence (the
site, its drainage rows, the pipeline result: :class:`ms4map.rules.conditions.SiteEvidence`):
the surface path from the site, the traced pipes from each inlet, the outfalls and the
receiving waters.  The rules decide; this module draws.  A small static map
(matplotlib, no tiles, nothing fetched) with a scale bar and a north arrow; the HTML
report inlines it as PNG (:func:`site_map_png`), the PDF draws it on page 1
(:func:`_draw_map`).  matplotlib is imported inside the functions.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import shapely

from ...analysis import where_does_it_drain
from ...core.nulls import is_blank
from ...core.units import metres_per_unit
from ...network import trace_downstream
from ...rules.conditions.document import SiteEvidence
from ...rules.conditions.summary import MS4_KINDS, REACH_KINDS, resolve_waterbody
from .text import _short

if TYPE_CHECKING:
    from .text import DeterminationLike

__all__ = ["site_map_layers", "site_map_png"]


def site_map_layers(det: DeterminationLike) -> dict[str, Any]:
    """The geometries of a determination's site map (``crs``, ``site``, ``surface_path``,
    ``paths``, ``inlets``/``inlet_ids``, ``outfalls``/``outfall_ids``, ``waters``,
    ``site_label``; for an ambiguous network path also ``uncertain_paths`` and
    ``candidate_outfalls``/``candidate_ids``).

    Drawn once from the determination's evidence and kept in ``det.map_layers``; a
    determination made on rows alone (no evidence) has the layers given to it, or none.
    """
    layers = getattr(det, "map_layers", None)
    if layers:
        return layers
    evidence = getattr(det, "evidence", None)
    if evidence is None:
        return {}
    layers = _layers_from(evidence)
    det.map_layers = layers  # drawn once per determination
    return layers


def _layers_from(evidence: SiteEvidence) -> dict[str, Any]:
    """Geometries for the static map: site, inlets, traced paths, outfalls, waters."""
    info, rows, result = evidence.site, evidence.rows, evidence.result
    workspace, waters = evidence.workspace, evidence.waters
    outfall_points = evidence.outfall_points
    layers: dict[str, Any] = {"site": info.geometry, "crs": workspace.crs}
    if info.geometry is not None:
        try:
            point = info.geometry.representative_point()
            layers["surface_path"] = where_does_it_drain(result, point).geometry
        except Exception:  # noqa: BLE001 - the map is a courtesy; a failed path is omitted
            layers["surface_path"] = None
    net = getattr(result, "network", None)
    inlet_pts, paths, inlet_ids, uncertain = [], [], [], []
    ms4 = rows[rows["target_kind"].isin(MS4_KINDS)]
    cands = _candidates(ms4)
    for tid in dict.fromkeys(str(t) for t in ms4["target_id"] if not is_blank(t)):
        if net is not None:
            try:
                tr = trace_downstream(net, tid)
                if tr.geometry is not None and not tr.geometry.is_empty:
                    amb = getattr(tr, "ambiguous", False) or tid in cands
                    (uncertain if amb else paths).append(tr.geometry)
            except Exception:  # noqa: BLE001 - the map is a courtesy; a failed trace is omitted
                pass
            nodes = getattr(net, "nodes", None)
            if nodes is not None and tid in nodes.index:
                inlet_pts.append(nodes.loc[tid].geometry)
                inlet_ids.append(tid)
    layers["inlets"] = inlet_pts
    layers["inlet_ids"] = inlet_ids
    layers["paths"] = paths
    of_ids = [
        o
        for o in dict.fromkeys(str(x) for x in ms4["outfall_id"] if not is_blank(x))
        if o in outfall_points
    ]
    layers["outfalls"] = [outfall_points[o] for o in of_ids]
    layers["outfall_ids"] = of_ids
    if uncertain or cands:  # an ambiguous path: drawn uncertain, its candidates marked
        cand_ids = [
            o
            for o in dict.fromkeys(c for ids in cands.values() for c in ids)
            if o in outfall_points and o not in of_ids
        ]
        layers["uncertain_paths"] = uncertain
        layers["candidate_outfalls"] = [outfall_points[o] for o in cand_ids]
        layers["candidate_ids"] = [f"{o}?" for o in cand_ids]
    layers["site_label"] = info.label
    wbs = []
    for r in rows[rows["target_kind"].isin(REACH_KINDS)].to_dict("records"):
        g = waters.waterbody_geometry(resolve_waterbody(r, waters))
        if g is not None:
            wbs.append(g)
    layers["waters"] = wbs
    return layers


def _candidates(ms4: Any) -> dict[str, list[str]]:
    """``target_id -> candidate outfalls`` of the MS4 rows whose network path is
    ambiguous (``outfall_candidates``)."""
    if "outfall_candidates" not in ms4.columns:
        return {}
    out: dict[str, list[str]] = {}
    for tid, c in zip(ms4["target_id"], ms4["outfall_candidates"], strict=True):
        ids = [] if is_blank(c) else [x for x in str(c).split(";") if x]
        if ids and not is_blank(tid):
            out.setdefault(str(tid), []).extend(ids)
    return out


def _draw_map(ax: Any, det: DeterminationLike) -> None:
    """Site (orange), drainage path (blue), inlets, outfalls (red), receiving waters."""
    layers = site_map_layers(det)
    crs = layers.get("crs")
    drawn = False

    def plot(geoms: Any, **kw: Any) -> None:
        nonlocal drawn
        geoms = [
            g
            for g in (geoms if isinstance(geoms, list) else [geoms])
            if g is not None and not g.is_empty
        ]
        if geoms:
            gpd.GeoSeries(geoms, crs=crs).plot(ax=ax, **kw)
            drawn = True

    plot(layers.get("waters", []), color="#6baed6", edgecolor="#2171b5", linewidth=2.0, alpha=0.8)
    plot(layers.get("site"), facecolor="#fdae6b", edgecolor="#d94801", linewidth=1.5, alpha=0.7)
    plot(layers.get("surface_path"), color="#08519c", linewidth=1.2, linestyle="--")
    plot(layers.get("paths", []), color="#08519c", linewidth=1.5)
    # an ambiguous path: grey and dashed, its candidate outfalls hollow (uncertain)
    plot(layers.get("uncertain_paths", []), color="#8c8c8c", linewidth=1.5, linestyle="--")
    plot(layers.get("inlets", []), color="black", markersize=14, marker="s")
    plot(layers.get("outfalls", []), color="#cb181d", markersize=30, marker="v")
    plot(
        layers.get("candidate_outfalls", []),
        facecolor="none",
        edgecolor="#636363",
        markersize=30,
        marker="v",
    )
    ax.set_aspect("equal")
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_xticks([])
    ax.set_yticks([])
    site = layers.get("site")
    if drawn and site is not None:
        # frame the site and its path; keep the map readable when the path is long
        parts = [
            g
            for g in [
                site,
                *layers.get("paths", []),
                *layers.get("outfalls", []),
                *layers.get("uncertain_paths", []),
                *layers.get("candidate_outfalls", []),
                layers.get("surface_path"),
            ]
            if g is not None and not g.is_empty
        ]
        x0, y0, x1, y1 = shapely.GeometryCollection(parts).bounds
        pad = max(x1 - x0, y1 - y0) * 0.08 + 20
        x0, y0, x1, y1 = x0 - pad, y0 - pad, x1 + pad, y1 + pad
        # fill the axes box (equal scale in x and y): widen the short side
        pos = ax.get_position(original=True)
        fw, fh = ax.figure.get_size_inches()
        box_ratio = (pos.height * fh) / (pos.width * fw)
        w, h = x1 - x0, y1 - y0
        if h / w < box_ratio:
            extra = (w * box_ratio - h) / 2
            y0, y1 = y0 - extra, y1 + extra
        else:
            extra = (h / box_ratio - w) / 2
            x0, x1 = x0 - extra, x1 + extra
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
    if drawn:
        _label_features(ax, layers)
        _scale_bar(ax, crs)
        _north_arrow(ax)
    if not drawn:
        ax.text(
            0.5,
            0.5,
            "no geometry for the map",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=8,
            color="grey",
        )
    ax.set_title(
        "Site (orange), drainage path (blue), inlets (■), outfalls (▼), "
        "receiving waters (light blue)"
        + (
            "; ambiguous path (grey, dashed) and its candidate outfalls (▽, id?)"
            if layers.get("uncertain_paths") or layers.get("candidate_outfalls")
            else ""
        ),
        fontsize=6,
    )


def _label_features(ax: Any, layers: dict[str, Any]) -> None:
    """Site label at the site, outfall ids beside the outfall markers (inside the frame)."""
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()

    def inside(pt: Any) -> bool:
        return x0 <= pt.x <= x1 and y0 <= pt.y <= y1

    box = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75}
    site = layers.get("site")
    if site is not None and not site.is_empty:
        pt = site.representative_point()
        ax.annotate(
            _short(str(layers.get("site_label") or "site"), 30),
            (pt.x, pt.y),
            fontsize=6,
            fontweight="bold",
            color="#7f2704",
            ha="center",
            va="center",
            bbox=box,
        )
    # outfall ids below their points (red), inlet ids above theirs
    for points, ids, offset, size, colour in (
        ("outfalls", "outfall_ids", (4, -8), 5.5, "#cb181d"),
        ("candidate_outfalls", "candidate_ids", (4, -8), 5.5, "#636363"),
        ("inlets", "inlet_ids", (4, 3), 5, "black"),
    ):
        for pt, fid in zip(layers.get(points, []), layers.get(ids, []), strict=False):
            if pt is not None and inside(pt):
                ax.annotate(
                    str(fid),
                    (pt.x, pt.y),
                    xytext=offset,
                    textcoords="offset points",
                    fontsize=size,
                    color=colour,
                    bbox=box,
                )


def _unit_m(crs: Any) -> float:
    """Metres per CRS unit (1 when the CRS is missing: it only labels the scale bar)."""
    return metres_per_unit(crs, default=1.0)


def _nice(x: float) -> float:
    """The largest 1/2/5 x 10^k not above ``x``."""
    if x <= 0:
        return 0.0
    e = 10 ** math.floor(math.log10(x))
    return max(m * e for m in (1, 2, 5) if m * e <= x)


def _scale_bar(ax: Any, crs: Any) -> None:
    """A scale bar (about a quarter of the frame) in feet, with metres in brackets."""
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    m_per_unit = _unit_m(crs)
    width_ft = (x1 - x0) * m_per_unit / 0.3048
    ft = _nice(width_ft / 4)
    if ft <= 0:
        return
    length = ft * 0.3048 / m_per_unit
    bx, by = x0 + (x1 - x0) * 0.05, y0 + (y1 - y0) * 0.05
    ax.plot([bx, bx + length], [by, by], color="black", linewidth=2.5, solid_capstyle="butt")
    ax.plot([bx, bx + length / 2], [by, by], color="white", linewidth=1.2, solid_capstyle="butt")
    ax.text(
        bx + length / 2,
        by + (y1 - y0) * 0.02,
        f"{ft:,.0f} ft ({ft * 0.3048:,.0f} m)",
        ha="center",
        va="bottom",
        fontsize=5.5,
        bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75},
    )
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)


def _north_arrow(ax: Any) -> None:
    """North arrow, top right (the map is drawn in a projected CRS, north up)."""
    ax.annotate(
        "N",
        xy=(0.94, 0.95),
        xytext=(0.94, 0.82),
        xycoords="axes fraction",
        textcoords="axes fraction",
        ha="center",
        va="center",
        fontsize=7,
        fontweight="bold",
        arrowprops={"facecolor": "black", "width": 2.5, "headwidth": 7, "headlength": 6},
    )


def site_map_png(
    det: DeterminationLike, *, dpi: int = 110, size: tuple[float, float] = (4.0, 3.4)
) -> bytes:
    """The static map as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    try:
        _draw_map(ax, det)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return buf.getvalue()
