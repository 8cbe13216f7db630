"""The determination as a letter-size PDF: the pages (matplotlib figures), the signature block, and the bytes or file out.

One page when the determination fits; else the text continues on further pages, each
naming the site and "page k of n", and the signature block ends the last page.  The
PDF is drawn with matplotlib's own PDF backend (imported inside the functions), so no
system libraries are needed.
"""

from __future__ import annotations

import io
import os
import tempfile
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...io import check_output_path
from .site_map import _draw_map
from .text import (
    _PDF_LIMITS,
    _YN,
    _acres,
    _application_line,
    _counts_word,
    _doc,
    _drainage_lines,
    _fraction_text,
    _listings,
    _missing_layer_notes,
    _more,
    _prepared_line,
    _receiving_waters,
    _short,
    _sources_text,
    _tmdl_name,
    _tmdl_watersheds,
    model_law_note,
)

if TYPE_CHECKING:
    from .text import DeterminationLike

__all__ = ["report_figure", "report_figures", "report_pdf", "write_pdf"]


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
    import matplotlib.pyplot as plt

    p = check_output_path(path, protected=protected, suffixes=(".pdf",), option="--report")
    figs = report_figures(det)
    fd, tmp = tempfile.mkstemp(suffix=".pdf", dir=p.parent, prefix=".ms4map-")
    os.close(fd)
    try:
        _save_pages(figs, tmp)
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


def report_pdf(det: DeterminationLike) -> bytes:
    """The report as PDF bytes, the pages :func:`write_pdf` writes, with no file.

    Parameters
    ----------
    det : Determination or dict
        A determination, or its JSON document (``Determination.to_dict()``).

    Returns
    -------
    bytes
        The PDF document.
    """
    import matplotlib.pyplot as plt

    figs = report_figures(det)
    buf = io.BytesIO()
    try:
        _save_pages(figs, buf)
    finally:
        for fig in figs:
            plt.close(fig)
    return buf.getvalue()


def _save_pages(figs: list[Any], target: Any) -> None:
    """Write the pages ``figs`` as one PDF to ``target`` (a path or a binary file)."""
    from matplotlib.backends.backend_pdf import PdfPages

    with PdfPages(target) as pdf:
        for fig in figs:
            pdf.savefig(fig)


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

    # text is text: a '$' pair in a project or water name is not mathtext ("Costs
    # $1{,}000 to $2" printed "Costs 1,000to2", and a TeX command stopped the PDF)
    with matplotlib.rc_context({"text.parse_math": False}):
        return _report_figures(det, plt)


def _report_figures(det: DeterminationLike, plt: Any) -> list[Any]:
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
