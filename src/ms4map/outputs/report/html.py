"""The determination as a self-contained one-page HTML document (:func:`render_html`), its map inlined."""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING, Any

from .site_map import site_map_png
from .text import (
    _YN,
    _acres,
    _application_line,
    _counts_word,
    _doc,
    _drainage_lines,
    _fraction_text,
    _listings,
    _missing_layer_notes,
    _prepared_line,
    _receiving_waters,
    _sources_text,
    _tmdl_name,
    _tmdl_watersheds,
    model_law_note,
)

if TYPE_CHECKING:
    from .text import DeterminationLike

__all__ = ["render_html", "report_html"]


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


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


def report_html(det: DeterminationLike) -> str:
    """The report as HTML text, what :func:`~.write.write_report` writes to ``.html``, with no file.

    Parameters
    ----------
    det : Determination or dict
        A determination, or its JSON document (``Determination.to_dict()``).

    Returns
    -------
    str
        The self-contained HTML document (map inlined).
    """
    return render_html(det)
