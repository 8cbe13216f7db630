"""One-page printable report of a Condition A/B/C determination: HTML and PDF.

Both carry a small static map of the site and its drainage path (matplotlib, no
tiles, nothing fetched).  The PDF is drawn with matplotlib's own PDF backend, so
no system libraries are needed.

Examples
--------
>>> from ms4map.outputs.report import write_report                     # doctest: +SKIP
>>> write_report(det, "site.html"); write_report(det, "site.pdf")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import html
import io
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..rules.conditions import Determination

    #: A determination, or its JSON document (``Determination.to_dict()``).
    DeterminationLike = Determination | Mapping[str, Any]

__all__ = ["REPORT_SUFFIXES", "render_html", "site_map_png", "write_pdf", "write_report"]

#: Report formats, by file suffix.
REPORT_SUFFIXES = (".html", ".htm", ".pdf")

_YN = {True: "Yes", False: "No", None: "Undetermined"}


def _doc(det: DeterminationLike) -> dict[str, Any]:
    return det.to_dict() if hasattr(det, "to_dict") else dict(det)


def _draw_map(ax: Any, det: DeterminationLike) -> None:
    """Site (orange), drainage path (blue), inlets, outfalls (red), receiving waters."""
    import geopandas as gpd

    layers = getattr(det, "map_layers", {}) or {}
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
    plot(layers.get("inlets", []), color="black", markersize=14, marker="s")
    plot(layers.get("outfalls", []), color="#cb181d", markersize=30, marker="v")
    ax.set_aspect("equal")
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_xticks([])
    ax.set_yticks([])
    site = layers.get("site")
    if drawn and site is not None:
        # frame the site and its path; keep the map readable when the path is long
        import shapely

        parts = [
            g
            for g in [
                site,
                *layers.get("paths", []),
                *layers.get("outfalls", []),
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
        "receiving waters (light blue)",
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


def _short(text: str, n: int) -> str:
    """``text`` cut to at most ``n`` characters at a word boundary, with an ellipsis."""
    if len(text) <= n:
        return text
    cut = text[: n - 1]
    if " " in cut and not text[n - 1].isspace():
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-(") + "…"


#: The drainage fractions in words.
_FRACTION_WORDS = {
    "inlet": "enters storm sewer inlets",
    "conveyance": "enters MS4 ditches or pipes directly",
    "water_direct": "reaches a water directly",
    "depression": "ends in closed depressions (internally drained)",
    "off_dem": "lies or flows outside the elevation model (unknown)",
    "unknown": "drains somewhere unmapped (unknown)",
}


def _fraction_text(fr: dict[str, float]) -> str:
    """``"100% of the site enters storm sewer inlets"`` (largest first)."""
    parts = [
        f"{v * 100:.0f}% {_FRACTION_WORDS.get(k, k.replace('_', ' '))}"
        for k, v in sorted(fr.items(), key=lambda kv: -kv[1])
        if v > 0
    ]
    if not parts:
        return "no drainage known"
    return "Of the site's area, " + "; ".join(parts) + "."


_RULE_WORDS = {
    "land_development_activity": "the definition of a land development activity",
    "pollutant_of_concern": "the definition of a pollutant of concern",
    "condition_a": "Condition A",
    "condition_b": "Condition B",
    "condition_c": "Condition C",
    "swppp_required": "the SWPPP requirement",
    "swppp_basic": "the SWPPP contents",
    "swppp_post_construction": "the post-construction SWPPP contents",
}


def model_law_note(d: dict[str, Any]) -> str | None:
    """One plain sentence when rules are quoted from the model law printed in another
    town's chapter (because the town's own text on file lacks them); else ``None``."""
    import re

    borrowed = [
        c
        for c in d.get("citations", [])
        if "model local law" in str(c.get("law", "")) and "as printed in" in str(c.get("law", ""))
    ]
    if not borrowed:
        return None
    m = re.search(r"as printed in the ([^,)]+)", str(borrowed[0]["law"]))
    source = f", as printed in the {m.group(1).strip()}" if m else ""
    rules = list(
        dict.fromkeys(_RULE_WORDS.get(c.get("rule"), str(c.get("rule"))) for c in borrowed)
    )
    listed = rules[0] if len(rules) == 1 else ", ".join(rules[:-1]) + " and " + rules[-1]
    return (
        f"The copy of {d.get('municipality') or 'the town'}'s law on file does not print "
        f"{listed}, so those are quoted from the NYSDEC model local law{source}."
    )


def _application_line(d: dict[str, Any]) -> list[tuple[str, str | None]]:
    app = d.get("application") or {}
    return [
        ("Applicant", app.get("applicant")),
        ("Project", app.get("project_name")),
        ("Application no.", app.get("application_number")),
        ("Application date", app.get("date")),
    ]


def _prepared_line(d: dict[str, Any]) -> str:
    prov = d["provenance"]
    return (
        f"Screened on {str(prov['created'])[:10]} from the GIS data in "
        f"{_workspace_name(d)}, under the {prov['profile']['name']} rules."
    )


def _unit_m(crs: Any) -> float:
    """Metres per CRS unit (1 when the CRS is missing: it only labels the scale bar)."""
    from ..core.units import metres_per_unit

    return metres_per_unit(crs, default=1.0)


def _nice(x: float) -> float:
    """The largest 1/2/5 x 10^k not above ``x``."""
    import math

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


def _workspace_name(d: dict[str, Any]) -> str:
    ws = d.get("workspace") or {}
    if ws.get("name"):
        return str(ws["name"])
    inputs = (d.get("provenance") or {}).get("workspace_inputs") or {}
    names = [Path(p).name for p in inputs]
    return names[0] if names else "not recorded"


def _id_list(items: list[dict[str, Any]], key: str, limit: int = 12) -> str:
    parts = [f"{i[key]} ({i['fraction'] * 100:.0f}%)" for i in items[:limit]]
    if len(items) > limit:
        parts.append(f"and {len(items) - limit} more")
    return ", ".join(parts)


def _drainage_lines(d: dict[str, Any]) -> list[str]:
    """Inlet and outfall ids with the share of the site that reaches each."""
    dr = d["drainage"]
    out = []
    if dr.get("inlets"):
        out.append("Inlets: " + _id_list(dr["inlets"], "target_id"))
    if dr.get("outfalls"):
        ofs = dr["outfalls"][:12]
        out.append(
            "Outfalls: "
            + ", ".join(
                f"{o['outfall_id']} ({o['fraction'] * 100:.0f}%)"
                + (
                    f" to {o.get('receiving_water') or 'unnamed water'}"
                    f" ({o.get('pwl_id') or 'no PWL ID'})"
                )
                for o in ofs
            )
            + (f", and {len(dr['outfalls']) - 12} more" if len(dr["outfalls"]) > 12 else "")
        )
    return out


def _tmdl_name(t: dict[str, Any]) -> str:
    from ..rules.conditions import tmdl_watershed_label

    return tmdl_watershed_label(t.get("name") or t.get("tmdl_id"))


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def render_html(det: DeterminationLike, *, include_map: bool = True) -> str:
    """The determination as a self-contained one-page HTML document (map inlined)."""
    d = _doc(det)
    c = d["conditions"]
    rows = "".join(
        f"<tr><th>Condition {k}</th><td class='v{str(c[k]['value']).lower()}'>"
        f"{_YN[c[k]['value']]}</td><td>{'<br>'.join(_e(r) for r in c[k]['reasons'])}</td></tr>"
        for k in ("A", "B", "C")
    )
    dr = d["drainage"]
    waters = (
        "".join(
            f"<li>{_e(w['name'] or 'unnamed water')} ({_e(w['pwl_id'] or 'no PWL ID')}): "
            f"{w['fraction'] * 100:.0f}% {'through the MS4' if w['via'] == 'ms4' else 'directly'}"
            + (f", outfall(s) {_e(', '.join(w['outfalls']))}" if w.get("outfalls") else "")
            + "</li>"
            for w in dr["receiving_waters"]
        )
        or "<li>none reached</li>"
    )
    frac = _fraction_text(dr["fractions"])
    imp = "".join(
        f"<tr><td>{_e(i['name'])} ({_e(i['pwl_id'])})</td><td>{_e(i['pollutant'])}</td>"
        f"<td>{_e(i['category'])}</td><td>{_e(i['list_year'])}</td>"
        f"<td>{'counts' if i['counts_for_condition_a'] else 'does not count'}: {_e(i['why'])}</td></tr>"
        for i in d["impaired_waters"]
    )
    imp += "".join(
        f"<tr><td>{_e(_tmdl_name(t))}</td><td>{_e(t['pollutant'])}</td>"
        f"<td>TMDL</td><td>{_e(t['approved'])}</td>"
        f"<td>{'counts' if t['counts_for_condition_a'] else 'does not count'}: {_e(t['why'])}</td></tr>"
        for t in d["tmdl_watersheds"]
    )
    items = d["swppp_items"]
    basic = "".join(
        f"<li>{_e(i['text'])}" + (f": <b>{_e(i['value'])}</b>" if i.get("value") else "") + "</li>"
        for i in items["basic"]
    )
    post = "".join(f"<li value='{i['n']}'>{_e(i['text'])}</li>" for i in items["post_construction"])
    post_note = {
        True: "required",
        None: "required if Condition A is confirmed",
        False: "not required",
    }[items["post_construction_required"]]
    cites = "".join(
        f"<li>{_e(ci['law'])}{', § ' + _e(ci['section']) if ci.get('section') else ''}: "
        f"&ldquo;{_e(ci['quote'])}&rdquo;</li>"
        for ci in d["citations"]
    )
    note = model_law_note(d)
    cites_note = f"<p class='small'>{_e(note)}</p>" if note else ""
    app_rows = "".join(
        f"<th>{_e(k)}</th><td>{_e(v) if v else ''}</td>" for k, v in _application_line(d)
    )
    prov = d["provenance"]
    img = ""
    if include_map:
        b64 = base64.b64encode(site_map_png(det)).decode()
        img = f"<img class='map' alt='site map' src='data:image/png;base64,{b64}'>"
    site = d["site"]
    inp = d["inputs"]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Stormwater determination: {_e(site["label"])}</title>
<style>
@page {{ size: letter; margin: 0.5in; }}
body {{ font-family: Helvetica, Arial, sans-serif; font-size: 9pt; margin: 0; }}
h1 {{ font-size: 13pt; margin: 0 0 2pt 0; }} h2 {{ font-size: 10pt; margin: 6pt 0 2pt 0; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ border: 1px solid #bbb;
 padding: 2pt 4pt; vertical-align: top; text-align: left; }}
.vtrue {{ background: #fee0d2; font-weight: bold; }} .vfalse {{ background: #e5f5e0; }}
.vnone {{ background: #fff7bc; font-weight: bold; }}
.map {{ float: right; width: 3.4in; margin: 0 0 4pt 8pt; border: 1px solid #ccc; }}
ol, ul {{ margin: 0; padding-left: 14pt; }} .small {{ font-size: 7pt; color: #555; }}
.cols {{ columns: 2; column-gap: 14pt; }}
.sign {{ margin-top: 10pt; page-break-inside: avoid; }}
.sign td {{ height: 22pt; width: 32%; }} .sign th {{ width: 12%; }}
.app {{ margin: 2pt 0 4pt 0; width: auto; }} .app td {{ min-width: 0.9in; }}
</style></head><body>
{img}
<h1>{_e(d["municipality"])}: stormwater review determination</h1>
<p class="small">{_e(_prepared_line(d))}</p>
<table class="app"><tr>{app_rows}</tr></table>
<p><b>Site:</b> {_e(site["label"])}{" (" + _e(site["address"]) + ")" if site.get("address") else ""}
{f"&middot; {site['area_acres']:.2f} acres" if site.get("area_acres") else ""}<br>
<b>Disturbance:</b> {inp["disturbed_acres"]:g} acres{f" in a common plan of {inp['common_plan_acres']:g} acres" if inp["common_plan_acres"] is not None else ""}
&middot; <b>Project type:</b> {_e(d["project_type"]["value"])} ({_e(d["project_type"]["source"])})
&middot; <b>Exemption:</b> {_e(d["exemption"]["code"] or "none")}<br>
<b>Land development activity:</b> {_YN[d["land_development_activity"]["value"]]}
&mdash; {_e(" ".join(d["land_development_activity"]["reasons"]))}<br>
<b>Exempt from review:</b> {_YN[d["exemption"]["exempt"]]} &mdash; {_e(" ".join(d["exemption"]["reasons"]))}<br>
<b>SWPPP required:</b> {_YN[d["swppp_required"]["value"]]};
post-construction controls {post_note}.<br>
<b>Pollutant of concern:</b> {_e(d["pollutant_of_concern"]["description"])}</p>
<table>{rows}</table>
<h2>Drainage</h2>
<p>{_e(frac)}{"".join("<br>" + _e(x) for x in _drainage_lines(d))}</p>
<ul>{waters}</ul>
<h2>Impaired waters and TMDL watersheds reached</h2>
{("<table><tr><th>Water</th><th>Pollutant</th><th>Category</th><th>Year</th><th>For Condition A</th></tr>" + imp + "</table>") if imp else "<p>None.</p>"}
<h2>SWPPP items</h2>
{('<div class="cols"><ol>' + basic + "</ol></div>") if basic else "<p>No SWPPP required.</p>"}
{("<p><b>Post-construction (" + post_note + "):</b></p><ol>" + post + "</ol>") if post else ""}
<h2>Citations</h2>{cites_note}<ul class="small">{cites}</ul>
<table class="sign"><tr><th>Reviewed by</th><td></td><th>Title</th>
<td>{_e(d["officer_title"])}</td></tr>
<tr><th>Date</th><td></td><th>Signature</th><td></td></tr></table>
<p class="small">Prepared for the {_e(d["officer_title"])} by ms4map {_e(prov["version"])}
(determination schema {_e(d["schema_version"])}), profile {_e(prov["profile"]["name"])},
{_e(prov["created"])}; inputs sha256 {_e(prov["inputs_sha256"][:16])}&hellip;.
A screening aid: confirm on site before relying on it.</p>
</body></html>
"""


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=width, break_long_words=False) or [""]


def write_pdf(det: DeterminationLike, path: str | Path, *, protected: Any = ()) -> Path:
    """A one-page letter-size PDF (matplotlib PDF backend); returns the path.

    The path is checked first (never one of ``protected``; folder created), then the
    page is written to a temporary file and moved into place.
    """
    import os
    import tempfile

    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    from ..io import check_output_path

    p = check_output_path(path, protected=protected, suffixes=(".pdf",), option="--report")
    fig = report_figure(det)
    fd, tmp = tempfile.mkstemp(suffix=".pdf", dir=p.parent, prefix=".ms4map-")
    os.close(fd)
    try:
        with PdfPages(tmp) as pdf:
            pdf.savefig(fig)
        # mkstemp makes the file 0600: give it the mode every other output has
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return p


#: Top of the signature block on the PDF page (figure fraction).
_SIGN_TOP = 0.105


def _signature_block(fig: Any, officer_title: str) -> None:
    """Reviewed by / title / date / signature, with lines to write on."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    x0, x1, y0, y1 = 0.05, 0.95, 0.02, _SIGN_TOP
    fig.patches.append(
        Rectangle(
            (x0, y0),
            x1 - x0,
            y1 - y0,
            transform=fig.transFigure,
            fill=False,
            edgecolor="#555555",
            linewidth=0.8,
        )
    )
    fig.text(x0 + 0.01, y1 - 0.008, "Review", fontsize=8, fontweight="bold", va="top")
    rows = [
        (("Reviewed by:", None), ("Title:", officer_title)),
        (("Date:", None), ("Signature:", None)),
    ]
    for r, ((la, va), (lb, vb)) in enumerate(rows):
        y = y1 - 0.045 - r * 0.033
        for lx, label, value, end in (
            (x0 + 0.01, la, va, 0.48),
            (0.51, lb, vb, x1 - 0.01),
        ):
            fig.text(lx, y, label, fontsize=7.5, va="bottom")
            start = lx + 0.085
            if value:
                fig.text(start, y + 0.002, value, fontsize=7.5, va="bottom")
            else:
                fig.add_artist(
                    Line2D(
                        [start, end],
                        [y, y],
                        transform=fig.transFigure,
                        color="black",
                        linewidth=0.6,
                    )
                )


class _Lines(list):
    """The report's text lines: ``(text, font size, weight)``, wrapped as they are added."""

    def add(
        self,
        text: str,
        *,
        size: float = 7.5,
        weight: str = "normal",
        width: int = 60,
        indent: str = "",
    ) -> None:
        """Add ``text`` wrapped at ``width`` characters; ``indent`` starts each follow-on line."""
        for i, ln in enumerate(_wrap(text, width)):
            self.append(((indent if i else "") + ln, size, weight))


def _header_lines(d: dict[str, Any]) -> _Lines:
    """Title, preparation and application lines, the site and the activity (beside the map)."""
    out = _Lines()
    site = d["site"]
    inp = d["inputs"]
    out.add(
        f"{d['municipality']}: stormwater review determination",
        size=12,
        weight="bold",
        width=90,
    )
    out.add(_prepared_line(d), size=7, width=70)
    fields = [f"{k}: {v or '_' * 16}" for k, v in _application_line(d)]
    out.add("   ".join(fields[:2]), width=60)
    out.add("   ".join(fields[2:]), width=60)
    out.add(
        f"Site: {site['label']}"
        + (f" ({site['address']})" if site.get("address") else "")
        + (f", {site['area_acres']:.2f} acres" if site.get("area_acres") else "")
    )
    out.add(
        f"Disturbance {inp['disturbed_acres']:g} acres"
        + (
            f", common plan {inp['common_plan_acres']:g} acres"
            if inp["common_plan_acres"] is not None
            else ""
        )
        + f"; project type {d['project_type']['value']} ({d['project_type']['source']}); "
        f"exemption {d['exemption']['code'] or 'none'}"
    )
    out.add(
        f"Land development activity: {_YN[d['land_development_activity']['value']]}. "
        + " ".join(d["land_development_activity"]["reasons"])
    )
    out.add(
        f"Exempt: {_YN[d['exemption']['exempt']]}. SWPPP required: "
        f"{_YN[d['swppp_required']['value']]}."
    )
    out.add("Pollutant of concern: " + d["pollutant_of_concern"]["description"])
    return out


def _conditions_and_drainage(d: dict[str, Any], out: _Lines) -> None:
    """Conditions A, B and C with their first reasons; the receiving waters and fractions."""
    for k in ("A", "B", "C"):
        c = d["conditions"][k]
        out.add(f"Condition {k}: {_YN[c['value']]}", size=9, weight="bold", width=120)
        for r in c["reasons"][:4]:
            out.add("- " + r, width=125, indent="  ")
    out.add("Drainage", size=9, weight="bold", width=120)
    for w in d["drainage"]["receiving_waters"][:6]:
        out.add(
            f"- {w['name'] or 'unnamed water'} ({w['pwl_id'] or 'no PWL ID'}): "
            f"{w['fraction'] * 100:.0f}% {'through the MS4' if w['via'] == 'ms4' else 'directly'}"
            + (f", outfall(s) {', '.join(w['outfalls'])}" if w.get("outfalls") else ""),
            width=125,
            indent="  ",
        )
    out.add("  " + _fraction_text(d["drainage"]["fractions"]), width=125, indent="    ")
    for ln in _drainage_lines(d):
        out.add("  " + ln, width=125, indent="    ")


def _waters_lines(d: dict[str, Any], out: _Lines) -> None:
    """The impaired waters and TMDL watersheds reached, and whether each counts."""
    out.add("Impaired waters and TMDL watersheds", size=9, weight="bold", width=120)
    for i in d["impaired_waters"][:6]:
        out.add(
            f"- {i['name']} ({i['pwl_id']}): {i['pollutant']}, category {i['category']}"
            f"{', ' + str(i['list_year']) if i['list_year'] else ''}: "
            f"{'counts' if i['counts_for_condition_a'] else 'does not count'} ({i['why']})",
            width=125,
            indent="  ",
        )
    for t in d["tmdl_watersheds"][:3]:
        out.add(
            f"- {_tmdl_name(t)} ({t['pollutant']}): "
            f"{'counts' if t['counts_for_condition_a'] else 'does not count'} ({t['why']})",
            width=125,
            indent="  ",
        )
    if not d["impaired_waters"] and not d["tmdl_watersheds"]:
        out.add("  none reached", width=125)


def _swppp_lines(d: dict[str, Any], out: _Lines) -> None:
    """The SWPPP items: the basic ones in one paragraph, the post-construction controls."""
    items = d["swppp_items"]
    out.add("SWPPP items", size=9, weight="bold", width=120)
    if not items["basic"]:
        out.add("  No SWPPP required.", width=125)
        return
    out.add(
        "  17 basic items (background, site map at 1 in = 100 ft or larger, soils, "
        "phasing, pollution prevention, materials, stabilisation, ESC map and details, "
        "temporary-to-permanent practices, schedules, receiving waters, "
        "responsibilities, flow diversions, existing runoff data, anything requested). "
        "Receiving waters (item 13): " + str(items["basic"][12].get("value")),
        width=125,
    )
    if items["post_construction"]:
        note = {True: "required", None: "required if Condition A is confirmed"}[
            items["post_construction_required"]
        ]
        out.add(
            f"  Post-construction controls ({note}): "
            + "; ".join(i["text"] for i in items["post_construction"]),
            width=125,
        )


def _citation_lines(d: dict[str, Any], out: _Lines) -> None:
    """The law's citations (quotes shortened) and the provenance line."""
    prov = d["provenance"]
    out.add("Citations", size=9, weight="bold", width=120)
    note = model_law_note(d)
    if note:
        out.add("  " + note, size=6, width=165, indent="  ")
    for ci in d["citations"][:9]:
        q = _short(ci["quote"], 230)
        out.add(
            f'- {ci["law"]}{", § " + ci["section"] if ci.get("section") else ""}: "{q}"',
            size=6,
            width=165,
            indent="  ",
        )
    out.add(
        f"ms4map {prov['version']}, schema {d['schema_version']}, profile "
        f"{prov['profile']['name']}, {prov['created']}. A screening aid: confirm on site.",
        size=6,
        width=165,
    )


def _draw_text(fig: Any, top: _Lines, lines: _Lines) -> None:
    """Draw the header beside the map, then the body down to the signature block (what
    does not fit is left to the JSON document, and the page says so)."""
    y = 0.965
    for text, size, weight in top:
        fig.text(0.05, y, text, fontsize=size, fontweight=weight, va="top")
        y -= size / 72 / 11 * 1.35
    y = min(y, 0.685) - 0.005
    floor = _SIGN_TOP + 0.014
    for text, size, weight in lines:
        if y - size / 72 / 11 < floor:
            fig.text(
                0.05,
                _SIGN_TOP + 0.003,
                "(continued in the JSON document)",
                fontsize=6,
                style="italic",
                va="bottom",
            )
            break
        fig.text(0.05, y, text, fontsize=size, fontweight=weight, va="top")
        y -= size / 72 / 11 * 1.35


def report_figure(det: DeterminationLike) -> Any:
    """The one-page report as a letter-size matplotlib figure (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    d = _doc(det)
    fig = plt.figure(figsize=(8.5, 11))
    try:
        ax_map = fig.add_axes((0.52, 0.685, 0.43, 0.245))
        _draw_map(ax_map, det)
        top = _header_lines(d)
        lines = _Lines()
        _conditions_and_drainage(d, lines)
        _waters_lines(d, lines)
        _swppp_lines(d, lines)
        _citation_lines(d, lines)
        _draw_text(fig, top, lines)
        _signature_block(fig, d["officer_title"])
    except Exception:
        plt.close(fig)
        raise
    return fig


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
    from ..io import write_text_output

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".html", ".htm"):
        return write_text_output(
            p, render_html(det), protected=protected, option="--report", suffixes=(suffix,)
        )
    if suffix == ".pdf":
        return write_pdf(det, p, protected=protected)
    raise UsageError(f"Unknown report format {suffix!r}: select from ['.html', '.pdf']")
