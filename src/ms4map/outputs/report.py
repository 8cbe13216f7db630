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

__all__ = [
    "REPORT_SUFFIXES",
    "render_html",
    "report_figure",
    "report_figures",
    "site_map_png",
    "write_pdf",
    "write_report",
]

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


def _screened_on(prov: dict[str, Any]) -> str:
    """The local date of the screening (``YYYY-MM-DD``), as the notices and records date.

    ``created`` carries the local UTC offset; a document that recorded UTC (``+00:00``,
    as before) is turned into this machine's local date."""
    import datetime as dt

    text = str(prov.get("created") or "")
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return text[:10]
    if t.tzinfo is not None and t.utcoffset() == dt.timedelta(0):
        t = t.astimezone()
    return t.date().isoformat()


def _impairments_csv_name(prov: dict[str, Any]) -> str | None:
    """The file name of the 303(d) CSV read instead of the workspace's layer, if any."""
    csv = prov.get("impairments_csv") or {}
    return Path(str(csv["path"])).name if csv.get("path") else None


def _prepared_line(d: dict[str, Any]) -> str:
    prov = d["provenance"]
    csv = _impairments_csv_name(prov)
    return (
        f"Screened on {_screened_on(prov)} from the GIS data in {_workspace_name(d)}"
        + (f" and the 303(d) list in {csv}" if csv else "")
        + f", under the {prov['profile']['name']} rules."
    )


def _sources_text(prov: dict[str, Any]) -> str:
    """``"; 303(d) list out.csv sha256 0123456789abcdef…"`` for the provenance line."""
    csv = prov.get("impairments_csv") or {}
    if not csv.get("path"):
        return ""
    digest = csv.get("sha256")
    return f"; 303(d) list {csv['path']} sha256 " + (
        f"{digest[:16]}…" if digest else "not recorded (file unreadable)"
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


#: How many of the items that do not count for Condition A the PDF prints (every item
#: that counts is printed): receiving waters, listings, TMDL watersheds, reasons.
_PDF_LIMITS = {"waters": 6, "listings": 6, "tmdls": 3, "reasons": 4, "ids": 12}


def _more(n: int, what: str = "") -> str:
    """What the page says where it leaves ``n`` items out."""
    return f"and {n} more{' ' + what if what else ''} (see the JSON document)"


def _a_open(d: dict[str, Any]) -> bool:
    """Condition A is yes or undetermined: some waters count for it."""
    return d["conditions"]["A"]["value"] is not False


def _counting_ids(d: dict[str, Any]) -> set[str]:
    """PWL ids of the receiving waters whose own listing, or a listed water within the
    profile's tributary reach of them, counts for Condition A."""
    import re

    ids: set[str] = set()
    for i in d.get("impaired_waters", []):
        if i.get("counts_for_condition_a"):
            m = re.search(r" of (\S+) \(profile tributary_reach_km\)$", str(i.get("relation")))
            ids.add(m.group(1) if m else str(i.get("pwl_id")))
    return ids


def _water_counts(d: dict[str, Any], pwl_id: Any, ids: set[str]) -> bool:
    """Does the water ``pwl_id`` make Condition A yes or undetermined?  A listed water
    that counts, a water without a PWL ID, one Condition A's reasons name, or any water
    while the 303(d) list is missing."""
    if not _a_open(d):
        return False
    if not pwl_id or str(pwl_id) in ids or "impairments" in _missing_layers(d):
        return True
    return f"({pwl_id})" in " ".join(d["conditions"]["A"]["reasons"])


def _counting_first(items: list[Any], counts: Any) -> tuple[list[Any], list[Any]]:
    """``items`` split into those that ``counts(item)`` and the rest (order kept)."""
    yes = [i for i in items if counts(i)]
    return yes, [i for i in items if not counts(i)]


def _shown(items: list[Any], counts: Any, limit: int | None) -> tuple[list[Any], int]:
    """The items to print, those that count first and never cut, then the others up to
    ``limit`` items in all (``None``: all); and how many are left out."""
    yes, no = _counting_first(items, counts)
    if limit is None:
        return yes + no, 0
    rest = no[: max(0, limit - len(yes))]
    return yes + rest, len(no) - len(rest)


def _receiving_waters(d: dict[str, Any], limit: int | None = None) -> tuple[list[dict], int]:
    """The receiving waters to print (those that count for Condition A first, never
    left out) and how many others are left out."""
    ids = _counting_ids(d)
    return _shown(
        d["drainage"]["receiving_waters"], lambda w: _water_counts(d, w.get("pwl_id"), ids), limit
    )


def _listings(d: dict[str, Any], limit: int | None = None) -> tuple[list[dict], int]:
    """The 303(d) listings to print (those that count first, never left out)."""
    return _shown(d["impaired_waters"], lambda i: bool(i.get("counts_for_condition_a")), limit)


def _tmdl_watersheds(d: dict[str, Any], limit: int | None = None) -> tuple[list[dict], int]:
    """The TMDL watersheds to print (those that count or may count first, never left out)."""
    return _shown(
        d["tmdl_watersheds"], lambda t: t.get("counts_for_condition_a") is not False, limit
    )


def _missing_layers(d: dict[str, Any]) -> list[str]:
    """The legal layers the determination was made without (``provenance.missing_layers``;
    for an older document, those Condition A's reasons name as missing)."""
    from ..core.schema import LEGAL_LAYERS
    from ..rules.waters import missing_layer_reason

    prov = d.get("provenance") or {}
    if "missing_layers" in prov:
        return list(prov["missing_layers"] or [])
    reasons = d["conditions"]["A"]["reasons"]
    return [m for m in LEGAL_LAYERS if missing_layer_reason(m) in reasons]


def _missing_layer_notes(d: dict[str, Any]) -> list[str]:
    """One sentence per missing 303(d) or TMDL layer: what is therefore not known."""
    notes = {
        "impairments": "The 303(d) list (layer `impairments`) is missing, so whether the "
        "waters reached are impaired is not known (add the `impairments` layer or pass "
        "--impairments CSV).",
        "tmdl_watersheds": "The TMDL watersheds (layer `tmdl_watersheds`) are missing, so "
        "whether the site lies in or drains to a TMDL watershed is not known (add the "
        "`tmdl_watersheds` layer, an empty one when the town has none).",
    }
    return [notes[m] for m in _missing_layers(d) if m in notes]


def _id_list(items: list[dict[str, Any]], key: str, limit: int = 12) -> str:
    parts = [f"{i[key]} ({i['fraction'] * 100:.0f}%)" for i in items[:limit]]
    if len(items) > limit:
        parts.append(_more(len(items) - limit))
    return ", ".join(parts)


def _drainage_lines(d: dict[str, Any]) -> list[str]:
    """Inlet and outfall ids with the share of the site that reaches each (the outfalls
    to waters that count for Condition A first, never left out)."""
    dr = d["drainage"]
    out = []
    if dr.get("inlets"):
        out.append("Inlets: " + _id_list(dr["inlets"], "target_id"))
    if dr.get("outfalls"):
        ids = _counting_ids(d)
        ofs, more = _shown(
            dr["outfalls"], lambda o: _water_counts(d, o.get("pwl_id"), ids), _PDF_LIMITS["ids"]
        )
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
            + (", " + _more(more) if more else "")
        )
    return out


def _tmdl_name(t: dict[str, Any]) -> str:
    from ..rules.conditions import tmdl_watershed_label

    return tmdl_watershed_label(t.get("name") or t.get("tmdl_id"))


def _acres(x: float) -> str:
    """Acres as the reasons print them (never rounded onto or across a whole acre)."""
    from ..rules.conditions import acres_text

    return acres_text(x)


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _counts_word(value: bool | None) -> str:
    """Whether an impairment or TMDL watershed counts for Condition A, in words."""
    return {True: "counts", False: "does not count", None: "not known whether it counts"}[
        None if value is None else bool(value)
    ]


def _impaired_html(d: dict[str, Any]) -> str:
    """The impaired waters and TMDL watersheds reached (those that count first), with a
    note for each missing 303(d) or TMDL layer: then what is not known, never "none"."""
    imp = "".join(
        f"<tr><td>{_e(i['name'])} ({_e(i['pwl_id'])})</td><td>{_e(i['pollutant'])}</td>"
        f"<td>{_e(i['category'])}</td><td>{_e(i['list_year'])}</td>"
        f"<td>{_counts_word(i['counts_for_condition_a'])}: {_e(i['why'])}</td></tr>"
        for i in _listings(d)[0]
    )
    imp += "".join(
        f"<tr><td>{_e(_tmdl_name(t))}</td><td>{_e(t['pollutant'])}</td>"
        f"<td>TMDL</td><td>{_e(t['approved'])}</td>"
        f"<td>{_counts_word(t['counts_for_condition_a'])}: {_e(t['why'])}</td></tr>"
        for t in _tmdl_watersheds(d)[0]
    )
    notes = "".join(f"<p><b>Not known:</b> {_e(n)}</p>" for n in _missing_layer_notes(d))
    if imp:
        head = "<tr><th>Water</th><th>Pollutant</th><th>Category</th><th>Year</th>"
        return notes + f"<table>{head}<th>For Condition A</th></tr>{imp}</table>"
    return notes or "<p>None.</p>"


def _running_head(d: dict[str, Any]) -> str:
    """The line every printed page of the HTML repeats: the site and the answers."""
    c = d["conditions"]
    return (
        f"{d['municipality']} stormwater review determination · Site {d['site']['label']} · "
        + " · ".join(f"Condition {k}: {_YN[c[k]['value']]}" for k in ("A", "B", "C"))
        + f" · SWPPP required: {_YN[d['swppp_required']['value']]}"
    )


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
            for w in _receiving_waters(d)[0]
        )
        or "<li>none reached</li>"
    )
    frac = _fraction_text(dr["fractions"])
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
table.page, table.page > * > tr > td {{ border: none; padding: 0; }}
.runhead {{ display: none; }}
@media print {{
 .runhead {{ display: table-cell; font-size: 7pt; color: #333; padding-bottom: 3pt !important; }}
 @page {{ @bottom-right {{ content: "page " counter(page) " of " counter(pages);
   font-size: 7pt; }} }}
}}
</style></head><body>
<table class="page"><thead><tr><td class="runhead">{_e(_running_head(d))}</td></tr></thead>
<tbody><tr><td>
{img}
<h1>{_e(d["municipality"])}: stormwater review determination</h1>
<p class="small">{_e(_prepared_line(d))}</p>
<table class="app"><tr>{app_rows}</tr></table>
<p><b>Site:</b> {_e(site["label"])}{" (" + _e(site["address"]) + ")" if site.get("address") else ""}
{f"&middot; {site['area_acres']:.2f} acres" if site.get("area_acres") else ""}<br>
<b>Disturbance:</b> {_acres(inp["disturbed_acres"])} acres{f" in a common plan of {_acres(inp['common_plan_acres'])} acres" if inp["common_plan_acres"] is not None else ""}
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
{_impaired_html(d)}
<h2>SWPPP items</h2>
{('<div class="cols"><ol>' + basic + "</ol></div>") if basic else "<p>No SWPPP required.</p>"}
{("<p><b>Post-construction (" + post_note + "):</b></p><ol>" + post + "</ol>") if post else ""}
<h2>Citations</h2>{cites_note}<ul class="small">{cites}</ul>
<table class="sign"><tr><th>Reviewed by</th><td></td><th>Title</th>
<td>{_e(d["officer_title"])}</td></tr>
<tr><th>Date</th><td></td><th>Signature</th><td></td></tr></table>
<p class="small">Prepared for the {_e(d["officer_title"])} by ms4map {_e(prov["version"])}
(determination schema {_e(d["schema_version"])}), profile {_e(prov["profile"]["name"])},
{_e(prov["created"])}; inputs sha256 {_e(prov["inputs_sha256"][:16])}&hellip;{_e(_sources_text(prov))}.
A screening aid: confirm on site before relying on it.</p>
</td></tr></tbody></table>
</body></html>
"""


def _wrap(text: str, width: int) -> list[str]:
    # never break an id, a PWL ID or a path at its hyphens
    return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False) or [""]


def write_pdf(det: DeterminationLike, path: str | Path, *, protected: Any = ()) -> Path:
    """A letter-size PDF (matplotlib PDF backend); returns the path.

    One page when the determination fits (the README example does); else the text
    continues on further pages, each naming the site and "page k of n", and the
    signature block ends the last page, so nothing the determination needs is left out.
    The path is checked first (never one of ``protected``; folder created), then the
    pages are written to a temporary file and moved into place.
    """
    import os
    import tempfile

    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    from ..io import check_output_path

    p = check_output_path(path, protected=protected, suffixes=(".pdf",), option="--report")
    figs = report_figures(det)
    fd, tmp = tempfile.mkstemp(suffix=".pdf", dir=p.parent, prefix=".ms4map-")
    os.close(fd)
    try:
        with PdfPages(tmp) as pdf:
            for fig in figs:
                pdf.savefig(fig)
        # mkstemp makes the file 0600: give it the mode every other output has
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    finally:
        for fig in figs:
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
        f"Disturbance {_acres(inp['disturbed_acres'])} acres"
        + (
            f", common plan {_acres(inp['common_plan_acres'])} acres"
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


def _more_line(out: _Lines, n: int, what: str) -> None:
    """``"  and 3 more receiving waters (see the JSON document)"`` when ``n`` > 0."""
    if n:
        out.add("  " + _more(n, what), width=_BODY_WIDTH, indent="    ")


def _conditions_and_drainage(d: dict[str, Any], out: _Lines) -> None:
    """Conditions A, B and C with their first reasons; the receiving waters (those that
    count for Condition A first, never left out) and the fractions."""
    for k in ("A", "B", "C"):
        c = d["conditions"][k]
        out.add(f"Condition {k}: {_YN[c['value']]}", size=9, weight="bold", width=120)
        limit = _PDF_LIMITS["reasons"]
        for r in c["reasons"][:limit]:
            out.add("- " + r, width=_BODY_WIDTH, indent="  ")
        _more_line(out, max(0, len(c["reasons"]) - limit), "reasons")
    out.add("Drainage", size=9, weight="bold", width=120)
    shown, more = _receiving_waters(d, _PDF_LIMITS["waters"])
    for w in shown:
        out.add(
            f"- {w['name'] or 'unnamed water'} ({w['pwl_id'] or 'no PWL ID'}): "
            f"{w['fraction'] * 100:.0f}% {'through the MS4' if w['via'] == 'ms4' else 'directly'}"
            + (f", outfall(s) {', '.join(w['outfalls'])}" if w.get("outfalls") else ""),
            width=_BODY_WIDTH,
            indent="  ",
        )
    _more_line(out, more, "receiving waters")
    out.add("  " + _fraction_text(d["drainage"]["fractions"]), width=_BODY_WIDTH, indent="    ")
    for ln in _drainage_lines(d):
        out.add("  " + ln, width=_BODY_WIDTH, indent="    ")


def _waters_lines(d: dict[str, Any], out: _Lines) -> None:
    """The impaired waters and TMDL watersheds reached, and whether each counts (those
    that count first, never left out); a missing 303(d) or TMDL layer is said to leave
    them unknown, never "none"."""
    out.add("Impaired waters and TMDL watersheds", size=9, weight="bold", width=120)
    for note in _missing_layer_notes(d):
        out.add("  Not known: " + note, width=_BODY_WIDTH, indent="    ")
    shown, more = _listings(d, _PDF_LIMITS["listings"])
    for i in shown:
        out.add(
            f"- {i['name']} ({i['pwl_id']}): {i['pollutant']}, category {i['category']}"
            f"{', ' + str(i['list_year']) if i['list_year'] else ''}: "
            f"{_counts_word(i['counts_for_condition_a'])} ({i['why']})",
            width=_BODY_WIDTH,
            indent="  ",
        )
    _more_line(out, more, "listings")
    shown, more = _tmdl_watersheds(d, _PDF_LIMITS["tmdls"])
    for t in shown:
        out.add(
            f"- {_tmdl_name(t)} ({t['pollutant']}): "
            f"{_counts_word(t['counts_for_condition_a'])} ({t['why']})",
            width=_BODY_WIDTH,
            indent="  ",
        )
    _more_line(out, more, "TMDL watersheds")
    if not d["impaired_waters"] and not d["tmdl_watersheds"] and not _missing_layer_notes(d):
        out.add("  none reached", width=_BODY_WIDTH)


def _swppp_lines(d: dict[str, Any], out: _Lines) -> None:
    """The SWPPP items: the basic ones in one paragraph, the post-construction controls."""
    items = d["swppp_items"]
    out.add("SWPPP items", size=9, weight="bold", width=120)
    if not items["basic"]:
        out.add("  No SWPPP required.", width=_BODY_WIDTH)
        return
    out.add(
        "  17 basic items (background, site map at 1 in = 100 ft or larger, soils, "
        "phasing, pollution prevention, materials, stabilisation, ESC map and details, "
        "temporary-to-permanent practices, schedules, receiving waters, "
        "responsibilities, flow diversions, existing runoff data, anything requested). "
        "Receiving waters (item 13): " + str(items["basic"][12].get("value")),
        width=_BODY_WIDTH,
    )
    if items["post_construction"]:
        note = {True: "required", None: "required if Condition A is confirmed"}[
            items["post_construction_required"]
        ]
        out.add(
            f"  Post-construction controls ({note}): "
            + "; ".join(i["text"] for i in items["post_construction"]),
            width=_BODY_WIDTH,
        )


def _citation_lines(d: dict[str, Any], out: _Lines) -> None:
    """The law's citations, every one the determination needs (quotes shortened), and
    the provenance line."""
    prov = d["provenance"]
    out.add("Citations", size=9, weight="bold", width=120)
    note = model_law_note(d)
    if note:
        out.add("  " + note, size=6, width=165, indent="  ")
    for ci in d["citations"]:
        q = _short(ci["quote"], 230)
        out.add(
            f'- {ci["law"]}{", § " + ci["section"] if ci.get("section") else ""}: "{q}"',
            size=6,
            width=165,
            indent="  ",
        )
    out.add(
        f"ms4map {prov['version']}, schema {d['schema_version']}, profile "
        f"{prov['profile']['name']}, {prov['created']}; inputs sha256 "
        f"{str(prov.get('inputs_sha256') or '')[:16]}…{_sources_text(prov)}. "
        "A screening aid: confirm on site.",
        size=6,
        width=165,
        indent="  ",
    )


#: Characters per line of the 7.5 pt body text across the page.
_BODY_WIDTH = 140
#: Line height as a multiple of the font size.
_LEADING = 1.25
#: Where the text of page 1 starts below the map, and of a continuation page.
_MAP_BOTTOM, _CONT_TOP = 0.685, 0.945
#: Lowest text on a page with the signature block, and on one without.
_SIGN_FLOOR, _PAGE_FLOOR = _SIGN_TOP + 0.012, 0.045


def _height(size: float) -> float:
    """The height of one line of ``size`` points, as a fraction of the letter page."""
    return size / 72 / 11 * _LEADING


def _layout(top: _Lines, lines: _Lines) -> list[list[tuple[float, str, float, str]]]:
    """Place the lines on pages: ``[[(y, text, size, weight), ...], ...]``.

    Page 1 has the header beside the map and the body below it; further pages start at
    the top.  A heading is never the last line of a page.  The signature block needs the
    bottom of the last page: what would run into it moves to a page of its own.
    """
    pages: list[list[tuple[float, str, float, str]]] = [[]]
    y = 0.965
    for text, size, weight in top:
        pages[0].append((y, text, size, weight))
        y -= _height(size)
    y = min(y, _MAP_BOTTOM) - 0.005
    for n, (text, size, weight) in enumerate(lines):
        need = _height(size)
        if size >= 9 and n + 1 < len(lines):  # keep a heading with its first line
            need += _height(lines[n + 1][1])
        if y - need < _PAGE_FLOOR:
            pages.append([])
            y = _CONT_TOP
        pages[-1].append((y, text, size, weight))
        y -= _height(size)
    last = pages[-1]
    keep = [ln for ln in last if ln[0] - _height(ln[2]) >= _SIGN_FLOOR]
    if len(keep) < len(last):
        moved, y = [], _CONT_TOP
        for _, text, size, weight in last[len(keep) :]:
            moved.append((y, text, size, weight))
            y -= _height(size)
        pages[-1] = keep
        pages.append(moved)
    return pages


def _page_marks(fig: Any, d: dict[str, Any], k: int, n: int) -> None:
    """The site id and "page k of n" at the top right; on a continuation page the title."""
    site = d["site"]["label"]
    fig.text(
        0.95,
        0.978,
        f"Site {_short(str(site), 40)} · page {k} of {n}",
        fontsize=6.5,
        ha="right",
        va="bottom",
    )
    if k > 1:
        fig.text(
            0.05,
            0.965,
            f"{d['municipality']}: stormwater review determination, site "
            f"{_short(str(site), 60)} (continued)",
            fontsize=9,
            fontweight="bold",
            va="top",
        )


def report_figures(det: DeterminationLike) -> list[Any]:
    """The report as letter-size matplotlib figures, one per page (the caller closes
    them): one page when it fits, else as many as nothing left out needs."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    d = _doc(det)
    lines = _Lines()
    _conditions_and_drainage(d, lines)
    _waters_lines(d, lines)
    _swppp_lines(d, lines)
    _citation_lines(d, lines)
    pages = _layout(_header_lines(d), lines)
    figs: list[Any] = []
    try:
        for k, placed in enumerate(pages, start=1):
            fig = plt.figure(figsize=(8.5, 11))
            figs.append(fig)
            if k == 1:
                ax_map = fig.add_axes((0.52, _MAP_BOTTOM, 0.43, 0.245))
                _draw_map(ax_map, det)
            _page_marks(fig, d, k, len(pages))
            for y, text, size, weight in placed:
                fig.text(0.05, y, text, fontsize=size, fontweight=weight, va="top")
            if k == len(pages):
                _signature_block(fig, d["officer_title"])
    except Exception:
        for fig in figs:
            plt.close(fig)
        raise
    return figs


def report_figure(det: DeterminationLike) -> Any:
    """Page 1 of the report as a letter-size matplotlib figure (the caller closes it);
    the whole report is :func:`report_figures`."""
    import matplotlib.pyplot as plt

    figs = report_figures(det)
    for fig in figs[1:]:
        plt.close(fig)
    return figs[0]


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
