"""One-page printable report of a Condition A/B/C determination: HTML and PDF.

Both carry a small static map of the site and its drainage path (matplotlib, no
tiles, nothing fetched).  The PDF is drawn with matplotlib's own PDF backend, so
no system libraries are needed.

Examples
--------
>>> from ms4map.report import write_report                     # doctest: +SKIP
>>> write_report(det, "site.html"); write_report(det, "site.pdf")  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import html
import io
import textwrap
from pathlib import Path
from typing import Any

from .errors import UsageError

__all__ = ["REPORT_SUFFIXES", "render_html", "site_map_png", "write_pdf", "write_report"]

#: Report formats, by file suffix.
REPORT_SUFFIXES = (".html", ".htm", ".pdf")

_YN = {True: "Yes", False: "No", None: "Undetermined"}


def _doc(det: Any) -> dict[str, Any]:
    return det.to_dict() if hasattr(det, "to_dict") else dict(det)


def _draw_map(ax: Any, det: Any) -> None:
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
        ax.set_xlim(x0 - pad, x1 + pad)
        ax.set_ylim(y0 - pad, y1 + pad)
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


def site_map_png(det: Any, *, dpi: int = 110, size: tuple[float, float] = (4.0, 3.4)) -> bytes:
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


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def render_html(det: Any, *, include_map: bool = True) -> str:
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
    fr = dr["fractions"]
    frac = ", ".join(f"{k.replace('_', ' ')} {v * 100:.0f}%" for k, v in fr.items() if v > 0)
    imp = "".join(
        f"<tr><td>{_e(i['name'])} ({_e(i['pwl_id'])})</td><td>{_e(i['pollutant'])}</td>"
        f"<td>{_e(i['category'])}</td><td>{_e(i['list_year'])}</td>"
        f"<td>{'counts' if i['counts_for_condition_a'] else 'does not count'}: {_e(i['why'])}</td></tr>"
        for i in d["impaired_waters"]
    )
    imp += "".join(
        f"<tr><td>TMDL {_e(t['name'] or t['tmdl_id'])}</td><td>{_e(t['pollutant'])}</td>"
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
</style></head><body>
{img}
<h1>{_e(d["municipality"])}: stormwater review determination</h1>
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
<p>{_e(frac) or "no drainage known"}</p><ul>{waters}</ul>
<h2>Impaired waters and TMDL watersheds reached</h2>
{("<table><tr><th>Water</th><th>Pollutant</th><th>Category</th><th>Year</th><th>For Condition A</th></tr>" + imp + "</table>") if imp else "<p>None.</p>"}
<h2>SWPPP items</h2>
{('<div class="cols"><ol>' + basic + "</ol></div>") if basic else "<p>No SWPPP required.</p>"}
{("<p><b>Post-construction (" + post_note + "):</b></p><ol>" + post + "</ol>") if post else ""}
<h2>Citations</h2><ul class="small">{cites}</ul>
<p class="small">Prepared for the {_e(d["officer_title"])} by ms4map {_e(prov["version"])}
(determination schema {_e(d["schema_version"])}), profile {_e(prov["profile"]["name"])},
{_e(prov["created"])}; inputs sha256 {_e(prov["inputs_sha256"][:16])}&hellip;.
A screening aid: confirm on site before relying on it.</p>
</body></html>
"""


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=width, break_long_words=False) or [""]


def write_pdf(det: Any, path: str | Path, *, protected: Any = ()) -> Path:
    """A one-page letter-size PDF (matplotlib PDF backend); returns the path.

    The path is checked first (never one of ``protected``; folder created), then the
    page is written to a temporary file and moved into place.
    """
    import os
    import tempfile

    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    from .io import check_output_path

    p = check_output_path(path, protected=protected, suffixes=(".pdf",), option="--report")
    fig = report_figure(det)
    fd, tmp = tempfile.mkstemp(suffix=".pdf", dir=p.parent, prefix=".ms4map-")
    os.close(fd)
    try:
        with PdfPages(tmp) as pdf:
            pdf.savefig(fig)
        os.replace(tmp, p)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return p


def report_figure(det: Any) -> Any:
    """The one-page report as a letter-size matplotlib figure (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    d = _doc(det)
    fig = plt.figure(figsize=(8.5, 11))
    try:
        ax_map = fig.add_axes((0.55, 0.70, 0.40, 0.25))
        _draw_map(ax_map, det)
        lines: list[tuple[str, float, str]] = []  # (text, size, weight)

        def add(
            text: str,
            *,
            size: float = 7.5,
            weight: str = "normal",
            width: int = 60,
            indent: str = "",
        ) -> None:
            for i, ln in enumerate(_wrap(text, width)):
                lines.append(((indent if i else "") + ln, size, weight))

        site = d["site"]
        inp = d["inputs"]
        add(
            f"{d['municipality']}: stormwater review determination",
            size=11,
            weight="bold",
            width=45,
        )
        add(f"Site: {site['label']}" + (f" ({site['address']})" if site.get("address") else ""))
        add(
            f"Disturbance {inp['disturbed_acres']:g} acres"
            + (
                f", common plan {inp['common_plan_acres']:g} acres"
                if inp["common_plan_acres"] is not None
                else ""
            )
            + f"; project type {d['project_type']['value']} ({d['project_type']['source']}); "
            f"exemption {d['exemption']['code'] or 'none'}"
        )
        add(
            f"Land development activity: {_YN[d['land_development_activity']['value']]}. "
            + " ".join(d["land_development_activity"]["reasons"])
        )
        add(
            f"Exempt: {_YN[d['exemption']['exempt']]}. SWPPP required: "
            f"{_YN[d['swppp_required']['value']]}."
        )
        add("Pollutant of concern: " + d["pollutant_of_concern"]["description"])
        top = list(lines)
        lines.clear()
        for k in ("A", "B", "C"):
            c = d["conditions"][k]
            add(f"Condition {k}: {_YN[c['value']]}", size=9, weight="bold", width=110)
            for r in c["reasons"][:4]:
                add("- " + r, width=115, indent="  ")
        add("Drainage", size=9, weight="bold", width=110)
        for w in d["drainage"]["receiving_waters"][:6]:
            add(
                f"- {w['name'] or 'unnamed water'} ({w['pwl_id'] or 'no PWL ID'}): "
                f"{w['fraction'] * 100:.0f}% {'through the MS4' if w['via'] == 'ms4' else 'directly'}"
                + (f", outfall(s) {', '.join(w['outfalls'])}" if w.get("outfalls") else ""),
                width=115,
                indent="  ",
            )
        fr = d["drainage"]["fractions"]
        add(
            "  "
            + ", ".join(f"{k.replace('_', ' ')} {v * 100:.0f}%" for k, v in fr.items() if v > 0),
            width=115,
        )
        add("Impaired waters and TMDL watersheds", size=9, weight="bold", width=110)
        for i in d["impaired_waters"][:6]:
            add(
                f"- {i['name']} ({i['pwl_id']}): {i['pollutant']}, category {i['category']}"
                f"{', ' + str(i['list_year']) if i['list_year'] else ''}: "
                f"{'counts' if i['counts_for_condition_a'] else 'does not count'} ({i['why']})",
                width=115,
                indent="  ",
            )
        for t in d["tmdl_watersheds"][:3]:
            add(
                f"- TMDL {t['name'] or t['tmdl_id']} ({t['pollutant']}): "
                f"{'counts' if t['counts_for_condition_a'] else 'does not count'} ({t['why']})",
                width=115,
                indent="  ",
            )
        if not d["impaired_waters"] and not d["tmdl_watersheds"]:
            add("  none reached", width=115)
        items = d["swppp_items"]
        add("SWPPP items", size=9, weight="bold", width=110)
        if items["basic"]:
            add(
                "  17 basic items (background, site map at 1 in = 100 ft or larger, soils, "
                "phasing, pollution prevention, materials, stabilisation, ESC map and details, "
                "temporary-to-permanent practices, schedules, receiving waters, "
                "responsibilities, flow diversions, existing runoff data, anything requested). "
                "Receiving waters (item 13): " + str(items["basic"][12].get("value")),
                width=115,
            )
            if items["post_construction"]:
                note = {True: "required", None: "required if Condition A is confirmed"}[
                    items["post_construction_required"]
                ]
                add(
                    f"  Post-construction controls ({note}): "
                    + "; ".join(i["text"] for i in items["post_construction"]),
                    width=115,
                )
        else:
            add("  No SWPPP required.", width=115)
        add("Citations", size=9, weight="bold", width=110)
        for ci in d["citations"][:9]:
            q = ci["quote"] if len(ci["quote"]) < 230 else ci["quote"][:227] + "..."
            add(
                f'- {ci["law"]}{", § " + ci["section"] if ci.get("section") else ""}: "{q}"',
                size=6,
                width=150,
                indent="  ",
            )
        prov = d["provenance"]
        add(
            f"ms4map {prov['version']}, schema {d['schema_version']}, profile "
            f"{prov['profile']['name']}, {prov['created']}. A screening aid: confirm on site.",
            size=6,
            width=150,
        )
        y = 0.965
        for text, size, weight in top:
            fig.text(0.05, y, text, fontsize=size, fontweight=weight, va="top")
            y -= size / 72 / 11 * 1.35
        y = min(y, 0.685) - 0.005
        for text, size, weight in lines:
            if y < 0.02:
                fig.text(0.05, 0.01, "(continued in the JSON document)", fontsize=6, style="italic")
                break
            fig.text(0.05, y, text, fontsize=size, fontweight=weight, va="top")
            y -= size / 72 / 11 * 1.35
    except Exception:
        plt.close(fig)
        raise
    return fig


def write_report(det: Any, path: str | Path, *, protected: Any = ()) -> Path:
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
    from .io import write_text_output

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".html", ".htm"):
        return write_text_output(
            p, render_html(det), protected=protected, option="--report", suffixes=(suffix,)
        )
    if suffix == ".pdf":
        return write_pdf(det, p, protected=protected)
    raise UsageError(f"Unknown report format {suffix!r}: select from ['.html', '.pdf']")
