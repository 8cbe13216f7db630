"""The printed determination a planner files (issue 10, part 5), on the demo town."""

from __future__ import annotations

import json
import os
import re
import stat

import geopandas as gpd
import pytest
import shapely

import ms4map
from ms4map import pipeline
from ms4map.cli import main
from ms4map.core.errors import UsageError
from ms4map.outputs.report import model_law_note, render_html, report_figure, write_report
from ms4map.outputs.report.text import _short
from ms4map.rules.conditions import application_info, evaluate_site

PLAZA = "107.12-2-11"
APP = ["--applicant", "Jane Roe", "--project-name", "River Rd Plaza"]
APP += ["--application-number", "SW-2026-014", "--application-date", "2026-03-15"]


@pytest.fixture(scope="module")
def demo(demo_copy):
    ws = ms4map.open_workspace(demo_copy)
    return demo_copy, ws, pipeline.run(ws)


def _det(demo, site=PLAZA, **kw):
    _, ws, res = demo
    kw.setdefault("disturbed_acres", 1)
    kw.setdefault("project_type", "commercial")
    return evaluate_site(site, workspace=ws, result=res, **kw)


def _pdf_text(det) -> str:
    fig = report_figure(det)
    try:
        return "\n".join(t.get_text() for t in fig.texts)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_cli_application_fields_in_json_and_report(demo, tmp_path, capsys) -> None:
    path = demo[0]
    out = tmp_path / "det.html"
    args = ["screen", str(path), "--site", PLAZA, "--acres", "1", *APP]
    assert main([*args, "--json", "--report", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == "1.2"
    assert doc["application"] == {
        "applicant": "Jane Roe",
        "project_name": "River Rd Plaza",
        "application_number": "SW-2026-014",
        "date": "2026-03-15",
    }
    html = out.read_text()
    for v in ("Jane Roe", "River Rd Plaza", "SW-2026-014", "2026-03-15"):
        assert v in html
    bad = ["screen", str(path), "--site", PLAZA, "--acres", "1"]
    assert main([*bad, "--application-date", "15/03/2026"]) == 4
    assert "YYYY-MM-DD" in capsys.readouterr().err


def test_application_info_validates() -> None:
    assert application_info({}) is None
    assert application_info({"applicant": "  A   B "})["applicant"] == "A B"
    with pytest.raises(UsageError, match="select from"):
        application_info({"owner": "x"})


def test_blank_fields_to_fill_in_when_none_given(demo) -> None:
    text = _pdf_text(_det(demo))
    assert re.search(r"Applicant: _{8,}", text) and re.search(r"Application no\.: _{8,}", text)


def test_report_has_no_internal_words(demo) -> None:
    det = _det(demo)
    html = render_html(det, include_map=False)
    pdf = _pdf_text(det)
    for text in (html, pdf):
        assert "Workspace:" not in text
        assert not re.search(r"\binlet \d+%", text)  # a lone 'inlet 100%'
        assert "enters storm sewer inlets" in text
        assert "section: null" not in text and "None" not in text.replace("None.", "")


def test_drawn_polygon_area_is_printed(demo) -> None:
    _, ws, _ = demo
    c = ws.parcels[ws.parcels["parcel_id"] == PLAZA].geometry.iloc[0].representative_point()
    square = gpd.GeoSeries([shapely.box(c.x - 30, c.y - 30, c.x + 30, c.y + 30)], crs=ws.crs)
    det = _det(demo, site=square, disturbed_acres=0.5, common_plan_acres=2)
    acres = 3600 / 4046.8564224
    assert det["site"]["area_acres"] == pytest.approx(acres, rel=1e-3)
    assert f"{acres:.2f} acres" in _pdf_text(det)
    assert f"{acres:.2f} acres" in render_html(det, include_map=False)


def test_quotes_are_cut_at_a_word() -> None:
    text = "Condition A: stormwater runoff from land development activities discharging"
    cut = _short(text, 40)
    assert cut.endswith("…") and len(cut) <= 40
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " "
    assert _short("short", 40) == "short"


def test_quoted_pdf_citations_end_at_a_word(demo) -> None:
    det = _det(demo)
    quotes = " ".join(c["quote"] for c in det["citations"])
    text = " ".join(_pdf_text(det).split())
    cut = re.findall(r"(\S+)…\"", text)
    assert cut, "no long quote was shortened (the test needs one)"
    for word in cut:  # the last word before the ellipsis is a whole word of a quote
        assert re.search(rf"(?<!\S){re.escape(word)}(?=[\s,;:.])", quotes), word


def test_model_law_note_only_where_the_rule_is_borrowed(demo) -> None:
    note = model_law_note(_det(demo).to_dict())
    assert note and "Town of Stillwater" in note and "Kiryas Joel" in note
    assert "Condition A" in note
    assert model_law_note(_det(demo, profile="kiryas_joel").to_dict()) is None


def test_pdf_mode_is_like_every_other_output(demo, tmp_path) -> None:
    old = os.umask(0o022)
    try:
        det = _det(demo)
        pdf = write_report(det, tmp_path / "r.pdf")
        html = write_report(det, tmp_path / "r.html")
    finally:
        os.umask(old)
    assert stat.S_IMODE(pdf.stat().st_mode) == 0o644
    assert stat.S_IMODE(pdf.stat().st_mode) == stat.S_IMODE(html.stat().st_mode)


def test_app_application_fields_reach_the_download(tmp_path, monkeypatch) -> None:
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("MS4MAP_WORKSPACE", raising=False)
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('screening')", default_timeout=120
    ).run()
    at.text_input(key="screen_parcel_ids").set_value(PLAZA).run()
    at.button(key="screen_submit").click().run()
    assert at.session_state["screen_det"].doc["application"] is None
    at.text_input(key="screen_applicant").set_value("Jane Roe").run()
    at.text_input(key="screen_application_date").set_value("2026-03-15").run()
    assert not at.exception and not at.error
    app = at.session_state["screen_det"].doc["application"]  # not cleared: same answer
    assert app["applicant"] == "Jane Roe" and app["date"] == "2026-03-15"
    assert any("acres)" in m.value for m in at.markdown if m.value.startswith("**Site:**"))


def test_dollar_signs_print_as_text_not_math(demo) -> None:
    """A project name with two '$' printed as typed; a TeX command in it must not stop
    the PDF (matplotlib read '$...$' as math: "Costs 1,000to2", or a failed report)."""
    import io

    import pypdf

    from ms4map.outputs.report import report_pdf

    for name in ("Costs $1{,}000 to $2", r"Lot $\href{x}{y}$ phase 2"):
        det = _det(demo).with_application({"project_name": name})
        pdf = pypdf.PdfReader(io.BytesIO(report_pdf(det)))
        text = " ".join(" ".join(page.extract_text() for page in pdf.pages).split())
        assert name in text, (name, text[:400])
