"""The printed determination and notice, eighth audit: what the page leaves out, the
303(d) CSV and the missing layers in the provenance, the local date, the deadline.

Each test was worked by hand and fails on the code before the fix.
"""

from __future__ import annotations

import datetime as real_dt
import hashlib
import os
import time
import types

import geopandas as gpd
import pandas as pd
import pytest
from shapely.geometry import LineString, Point, box
from test_rules_conditions_fixtures import CLEAR, MILL, row, town_waters

import ms4map
from ms4map import idde, pipeline
from ms4map.core.errors import DataError
from ms4map.outputs.report import render_html, report_figure, write_report
from ms4map.rules.conditions import SiteInfo, determine, evaluate_site
from ms4map.rules.waters import Waters, waters_for

CRS = "EPSG:26918"
PLAZA = "107.12-2-11"


def _hand_det(rows, *, waters, **kw):
    kw.setdefault("project_type", "commercial")
    d = determine(
        rows,
        waters=waters,
        disturbed_acres=2.5,
        site=SiteInfo(
            label="P1",
            kind="parcels",
            parcel_ids=["P1"],
            geometry=box(100, 100, 180, 180),
            area_acres=3.0,
        ),
        **kw,
    )
    d.map_layers = {
        "site": box(100, 100, 180, 180),
        "crs": CRS,
        "inlets": [Point(140, 140)],
        "outfalls": [Point(0, 500)],
        "waters": [LineString([(0, 0), (0, 1000)])],
    }
    return d


def _brooks(n, listed):
    """``n`` outfalls to ``n`` brooks: the last ``listed`` are category 5 for PCBs (they
    count), the others category 3 for phosphorus (they do not); the listed ones get the
    smallest shares of the site."""
    ids = [f"1302-{10 + i:04d}" for i in range(n)]
    names = [f"Brook {i:02d}" for i in range(n)]
    wb = gpd.GeoDataFrame(
        {"wb_id": ids, "name": names, "kind": ["creek"] * n},
        geometry=[LineString([(i * 1000, 0), (i * 1000, 1000)]) for i in range(n)],
        crs=CRS,
    )
    counting = [i >= n - listed for i in range(n)]
    imp = pd.DataFrame(
        {
            "wb_id": ids,
            "pollutant": ["PCBs" if c else "Phosphorus" for c in counting],
            "category": ["5" if c else "3" for c in counting],
            "list_year": [2018] * n,
            "source": ["x"] * n,
        }
    )
    tm = gpd.GeoDataFrame(
        {"tmdl_id": [], "name": [], "pollutant": [], "stormwater_source": [], "approved": []},
        geometry=[],
        crs=CRS,
    )
    waters = Waters.from_frames(waterbodies=wb, impairments=imp, tmdl_watersheds=tm, crs=CRS)
    big = [0.9 / (n - listed)] * (n - listed)
    small = [0.1 / listed] * listed
    rows = [
        row("inlet", f"CB{i}", f, f"OF-{i}", water=names[i], pwl=ids[i])
        for i, f in enumerate(big + small)
    ]
    return _hand_det(rows, waters=waters), names, ids


def _fig_text(fig):
    import matplotlib.pyplot as plt

    try:
        return "\n".join(t.get_text() for t in fig.texts)
    finally:
        plt.close(fig)


def _pages(det):
    try:
        from ms4map.outputs.report import report_figures
    except ImportError:  # the code before the fix drew one page
        return [_fig_text(report_figure(det))]
    return [_fig_text(f) for f in report_figures(det)]


def _section(text, start, end):
    return text[text.index(start) : text.index(end)]


@pytest.fixture(scope="module")
def demo(demo_copy):
    ws = ms4map.open_workspace(demo_copy)
    return demo_copy, ws, pipeline.run(ws)


# 1 -------------------------------------------------------------------------------------
def test_pdf_prints_the_water_that_makes_condition_a_yes_and_what_it_leaves_out():
    det, names, ids = _brooks(8, listed=1)
    assert det.doc["conditions"]["A"]["value"] is True
    text = _fig_text(report_figure(det))
    drainage = _section(text, "\nDrainage", "Impaired waters")
    impaired = _section(text, "Impaired waters", "SWPPP items")
    # the only counting water (10% of the site, the last of 8) is printed, first
    assert drainage.split("\n")[2].startswith(f"- {names[7]} ({ids[7]}): 10% through the MS4")
    assert impaired.split("\n")[1].startswith(f"- {names[7]} ({ids[7]}): PCBs, category 5")
    assert "and 2 more receiving waters (see the JSON document)" in drainage
    assert "and 2 more listings (see the JSON document)" in impaired
    assert f"Outfalls: OF-7 (10%) to {names[7]} ({ids[7]})" in drainage
    # the HTML lists every water, the counting one first
    html = render_html(det, include_map=False)
    assert html.index(f"<li>{names[7]} ({ids[7]})") < html.index(f"<li>{names[0]} ({ids[0]})")


def test_pdf_never_leaves_out_a_listing_that_counts():
    det, names, ids = _brooks(24, listed=16)
    pages = _pages(det)
    text = "\n".join(pages)
    for name, wb in zip(names[8:], ids[8:], strict=True):
        assert f"- {name} ({wb}): PCBs, category 5, 2018: counts" in text, name
        assert f"- {name} ({wb}): " in _section(text, "\nDrainage", "Impaired waters")
    # the waters that do not count are cut, and the page says so
    assert "- Brook 00 (1302-0010): Phosphorus" not in text
    assert "and 8 more listings (see the JSON document)" in text
    assert "and 8 more receiving waters (see the JSON document)" in text
    assert "and 12 more reasons (see the JSON document)" in text


# 2 -------------------------------------------------------------------------------------
def test_impairments_csv_is_in_the_provenance_and_on_the_report(demo, tmp_path):
    _, ws, res = demo
    csv = tmp_path / "my_303d.csv"
    csv.write_text(
        "PWL ID,Waterbody Name,Cause/Pollutant,List Part,List Year\n"
        "1101-0012,Kenyon River,Phosphorus,1,2024\n",
        encoding="utf-8",
    )
    det = evaluate_site(
        PLAZA,
        disturbed_acres=2,
        project_type="commercial",
        workspace=ws,
        result=res,
        waters=waters_for(ws, csv),
    )
    assert "Phosphorus" in det.doc["conditions"]["A"]["reasons"][0]  # the CSV was used
    prov = det.doc["provenance"]
    assert prov["impairments_csv"] == {
        "path": str(csv.resolve()),
        "sha256": hashlib.sha256(csv.read_bytes()).hexdigest(),
    }
    line = "from the GIS data in demo.gpkg and the 303(d) list in my_303d.csv, under"
    assert line in render_html(det, include_map=False)
    text = _fig_text(report_figure(det))
    assert line in text.replace("\n", " ")
    sha = prov["impairments_csv"]["sha256"]
    assert f"303(d) list {csv.resolve()} sha256 {sha[:16]}" in " ".join(text.split())
    # without the CSV: nothing claimed
    plain = evaluate_site(
        PLAZA, disturbed_acres=2, project_type="commercial", workspace=ws, result=res
    )
    assert "impairments_csv" not in plain.doc["provenance"]
    assert "303(d) list in" not in render_html(plain, include_map=False)


# 3 -------------------------------------------------------------------------------------
def test_missing_303d_layer_is_not_known_never_none():
    full = town_waters()
    waters = Waters.from_frames(
        waterbodies=full.waterbodies,
        impairments=None,
        tmdl_watersheds=full.tmdl_watersheds,
        crs=CRS,
        missing=["impairments"],
    )
    det = _hand_det([row("inlet", "CB3", 1.0, "OF-C", **CLEAR)], waters=waters)
    assert det.doc["conditions"]["A"]["value"] is None
    text = _fig_text(report_figure(det))
    section = _section(text, "Impaired waters and TMDL watersheds", "SWPPP items")
    assert "none" not in section.lower()
    assert "The 303(d) list (layer `impairments`) is missing" in section
    assert "is not known" in section.replace("\n", " ")
    html = render_html(det, include_map=False)
    h = _section(html, "<h2>Impaired waters", "<h2>SWPPP")
    assert "None." not in h and "The 303(d) list (layer `impairments`) is missing" in h
    assert det.doc["provenance"]["missing_layers"] == ["impairments"]
    # a TMDL layer missing is said too
    no_tmdl = Waters.from_frames(
        waterbodies=full.waterbodies,
        impairments=full.impairments,
        crs=CRS,
        missing=["tmdl_watersheds"],
    )
    det = _hand_det([row("inlet", "CB3", 1.0, "OF-C", **CLEAR)], waters=no_tmdl)
    section = _section(_fig_text(report_figure(det)), "Impaired waters", "SWPPP items")
    assert "none reached" not in section and "(layer `tmdl_watersheds`) are missing" in section


# 4 -------------------------------------------------------------------------------------
def test_workspace_provenance_does_not_overwrite_the_determinations_settings():
    ws_prov = {
        "tool": "ms4map",
        "version": "0.0.9",
        "created": "2020-01-01T00:00:00+00:00",
        "inputs": {"/x/town.gpkg": "abc"},
        "workspace_settings": {"crs": CRS},
        "settings": {"profile": "stillwater"},
        "crs": CRS,
    }
    det = determine(
        [row("inlet", "CB1", 1.0, "OF-M", **MILL)],
        waters=town_waters(),
        disturbed_acres=2.5,
        project_type="commercial",
        provenance=ws_prov,
    )
    prov = det.doc["provenance"]
    assert prov["settings"] == {"tributary_reach_km": 0.0, "pollutant_reading": "law"}
    assert prov["created"] != ws_prov["created"] and prov["version"] == ms4map.__version__
    assert prov["workspace_provenance"] == {
        "tool": "ms4map",
        "version": "0.0.9",
        "created": "2020-01-01T00:00:00+00:00",
        "settings": {"profile": "stillwater"},
    }
    assert prov["workspace_inputs"] == {"/x/town.gpkg": "abc"}
    assert prov["workspace_settings"] == {"crs": CRS} and prov["crs"] == CRS


# 5 -------------------------------------------------------------------------------------
def test_readme_example_pdf_keeps_the_provenance_line_and_every_citation(demo, tmp_path):
    _, ws, res = demo
    det = evaluate_site(
        PLAZA, disturbed_acres=2, project_type="commercial", workspace=ws, result=res
    )
    doc = det.to_dict()
    assert any(c["rule"] == "swppp_post_construction" for c in doc["citations"])
    text = _fig_text(report_figure(det))
    flat = " ".join(text.split())
    assert f"ms4map {ms4map.__version__}, schema {doc['schema_version']}" in flat
    assert "continued in the JSON document" not in flat
    for c in doc["citations"]:
        assert " ".join(c["quote"][:40].split()) in flat, c["rule"]
    assert "Site 107.12-2-11 · page 1 of 1" in text
    pdf = write_report(det, tmp_path / "r.pdf").read_bytes()
    assert b"/Count 1 " in pdf or b"/Count 1>" in pdf or b"/Count 1\n" in pdf


def test_a_long_determination_continues_on_numbered_pages_with_the_site_id(tmp_path):
    det, _names, _ids = _brooks(24, listed=16)
    pages = _pages(det)
    n = len(pages)
    assert n >= 2
    for k, text in enumerate(pages, start=1):
        assert f"Site P1 · page {k} of {n}" in text
    assert "(continued)" in pages[1]
    assert "Reviewed by:" in pages[-1] and "Reviewed by:" not in pages[0]
    assert f"ms4map {ms4map.__version__}, schema" in pages[-1]
    flat = " ".join("\n".join(pages).split())
    for c in det.doc["citations"]:
        assert " ".join(c["quote"][:40].split()) in flat, c["rule"]
    pdf = write_report(det, tmp_path / "long.pdf").read_bytes()
    assert f"/Count {n}".encode() in pdf


# 6 -------------------------------------------------------------------------------------
def test_screened_on_is_the_local_date(monkeypatch):
    import ms4map.rules.conditions.determination as C

    instant = real_dt.datetime(2025, 6, 3, 2, 30, tzinfo=real_dt.UTC)  # 22:30 EDT, 2 June

    class FakeDT(real_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            if tz is not None:
                return instant.astimezone(tz)
            return instant.astimezone().replace(tzinfo=None)

    clock = types.SimpleNamespace(
        **{k: getattr(real_dt, k) for k in dir(real_dt) if not k.startswith("__")}
    )
    clock.datetime = FakeDT
    monkeypatch.setattr(C, "_dt", clock)
    old = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        det = _hand_det([row("inlet", "CB1", 1.0, "OF-M", **MILL)], waters=town_waters())
        assert "Screened on 2025-06-02 " in _fig_text(report_figure(det))
        assert "Screened on 2025-06-02 " in render_html(det, include_map=False)
        assert det.doc["provenance"]["created"] == "2025-06-02T22:30:00-04:00"
        # a document that recorded UTC is printed with the local date too
        doc = det.to_dict()
        doc["provenance"]["created"] = "2025-06-03T02:30:00+00:00"
        assert "Screened on 2025-06-02 " in render_html(doc, include_map=False)
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


# 7 -------------------------------------------------------------------------------------
def test_notice_deadline_before_its_issue_date_is_refused(demo):
    _, ws, _res = demo
    kw = dict(violation="failing_septic", workspace=ws, profile="stillwater")
    with pytest.raises(DataError, match=r"2025-05-01 is before the notice's issue date") as e:
        idde.notice_of_violation("106.12-2-14", issued="2025-06-06", deadline="2025-05-01", **kw)
    assert "Fix: give a deadline on or after the issue date" in str(e.value)
    same_day = idde.notice_of_violation(
        "106.12-2-14", issued="2025-06-06", deadline="2025-06-06", **kw
    )
    assert same_day.deadline == real_dt.date(2025, 6, 6)


# 8 (05) --------------------------------------------------------------------------------
def test_html_repeats_the_site_and_answers_on_every_printed_page():
    det = _hand_det([row("inlet", "CB1", 1.0, "OF-M", **MILL)], waters=town_waters())
    html = render_html(det, include_map=False)
    head = (
        '<thead><tr><td class="runhead">Town of Stillwater stormwater review determination'
        " · Site P1 · Condition A: Yes · Condition B: No · Condition C: Yes"
        " · SWPPP required: Yes</td></tr></thead>"
    )
    assert head in html
    assert 'content: "page " counter(page) " of " counter(pages)' in html


@pytest.mark.browser
def test_html_printed_by_chromium_names_the_site_on_every_page(demo, tmp_path):
    import shutil
    import subprocess

    pypdf = pytest.importorskip("pypdf")
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("chromium is not installed")
    _, ws, res = demo
    det = evaluate_site(
        PLAZA, disturbed_acres=2, project_type="commercial", workspace=ws, result=res
    )
    page = write_report(det, tmp_path / "r.html")
    out = tmp_path / "printed.pdf"
    subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-pdf-header-footer",
            f"--print-to-pdf={out}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    if not out.exists():
        pytest.skip("chromium could not print here")
    pages = [p.extract_text() for p in pypdf.PdfReader(out).pages]
    for k, text in enumerate(pages, start=1):
        assert f"Site {PLAZA} · Condition A: Yes" in text, k
        assert f"page {k} of {len(pages)}" in text, k
    assert "Reviewed by" in pages[-1] and f"ms4map {ms4map.__version__}" in pages[-1]


# 8 (07) --------------------------------------------------------------------------------
def _annual(first, last):
    from ms4map.records.annual import LABELS

    years = list(range(first, last + 1))
    rep = pd.DataFrame({"year": years})
    for key in LABELS:
        rep[key] = [0] * len(years)
    rep["period_start"] = [f"{y}-01-01" for y in years]
    rep["period_end"] = [f"{y}-12-31" for y in years]
    rep["screened_last_5_years"] = [0.25] * len(years)
    rep["outfalls"] = [124] * len(years)
    return rep


@pytest.mark.parametrize("first", [2019, 2012, 2001])
def test_annual_report_pdf_every_cell_is_legible(first, tmp_path, monkeypatch):
    import matplotlib.figure as mf
    import matplotlib.table as mt

    from ms4map.records.annual import write_annual_report

    drawn = []
    orig = mf.Figure.savefig

    def savefig(self, *a, **k):
        self.canvas.draw()
        rend = self.canvas.get_renderer()
        for ax in self.axes:
            for tab in (c for c in ax.get_children() if isinstance(c, mt.Table)):
                for (r, c), cell in tab.get_celld().items():
                    text = cell.get_text()
                    wide = text.get_window_extent(rend).width > cell.get_window_extent(rend).width
                    drawn.append((r, c, text.get_text(), wide))
        return orig(self, *a, **k)

    monkeypatch.setattr(mf.Figure, "savefig", savefig)
    out = write_annual_report(_annual(first, 2025), tmp_path / "a.pdf", title="Town")
    assert out.read_bytes().startswith(b"%PDF")
    assert [x for x in drawn if x[3]] == []  # no text wider than its cell
    shown = {x[2] for x in drawn}
    for y in range(first, 2026):
        assert {str(y), f"{y}-01-01", f"{y}-12-31"} <= shown, y


# 8 (11: acres) -------------------------------------------------------------------------
def test_acres_are_never_printed_rounded_across_a_threshold():
    small = determine(
        [row("inlet", "CB1", 1.0, "OF-M", **MILL)],
        waters=town_waters(),
        disturbed_acres=0.99999999,
        project_type="commercial",
    )
    assert small.doc["land_development_activity"]["reasons"][0].startswith(
        "The activity disturbs 0.99999999 acres, less than one acre"
    )
    det = determine(
        [row("inlet", "CB1", 1.0, "OF-M", **MILL)],
        waters=town_waters(),
        disturbed_acres=4.99999999,
        project_type="commercial",
    )
    assert det.doc["conditions"]["B"]["reasons"][0] == (
        "The activity disturbs 4.99999999 acres, less than five."
    )
    det.map_layers = {}
    assert "Disturbance 4.99999999 acres" in _fig_text(report_figure(det))
    assert "<b>Disturbance:</b> 4.99999999 acres" in render_html(det, include_map=False)
    from ms4map.rules.conditions import acres_text

    assert [acres_text(x) for x in (2.5, 2.123456789, 1.0, 12)] == ["2.5", "2.12346", "1", "12"]
    assert acres_text(0.99999999) == "0.99999999" and acres_text(4.99999999) == "4.99999999"
