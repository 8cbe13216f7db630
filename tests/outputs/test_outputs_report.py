"""Report rendering (HTML and one-page PDF) of a determination."""

from __future__ import annotations

import io

import pytest
from shapely.geometry import LineString, Point, box
from test_rules_conditions_fixtures import CLEAR, MILL, row, town_waters

from ms4map.core.errors import UsageError
from ms4map.outputs.report import (
    render_html,
    report_html,
    report_pdf,
    site_map_png,
    write_report,
)
from ms4map.rules.conditions import SiteInfo, determine


@pytest.fixture(scope="module")
def det():
    d = determine(
        [row("inlet", "CB1", 0.3, "OF-M", **MILL), row("inlet", "CB3", 0.7, "OF-C", **CLEAR)],
        waters=town_waters(),
        disturbed_acres=2.5,
        project_type="commercial",
        site=SiteInfo(
            label="P1",
            kind="parcels",
            parcel_ids=["P1"],
            geometry=box(100, 100, 180, 180),
            area_acres=3.0,
        ),
    )
    d.map_layers = {
        "site": box(100, 100, 180, 180),
        "crs": "EPSG:26918",
        "paths": [LineString([(140, 140), (0, 500)])],
        "inlets": [Point(140, 140)],
        "outfalls": [Point(0, 500)],
        "waters": [LineString([(0, 0), (0, 1000)])],
    }
    return d


def test_html(det):
    text = render_html(det)
    assert text.startswith("<!DOCTYPE html>")
    assert "Condition A" in text and "Mill Creek" in text and "1302-0001" in text
    assert "data:image/png;base64," in text
    assert "Name(s) of the receiving water(s)" in text
    assert "&ldquo;Condition A: stormwater runoff" in text  # citations quoted


def test_map_png(det):
    png = site_map_png(det)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000


def test_pdf_one_page(det, tmp_path):
    p = write_report(det, tmp_path / "site.pdf")
    data = p.read_bytes()
    assert data.startswith(b"%PDF")
    assert (
        data.count(b"/Type /Page\n") + data.count(b"/Type /Page ") + data.count(b"/Type /Page>")
        == 1
        or data.count(b"/Count 1") == 1
    )


def test_report_bytes_and_text_without_a_file(det, tmp_path):
    """report_pdf / report_html return what write_report writes (the PDF's text; the
    HTML exactly), and write no file."""
    html = report_html(det)
    assert html == write_report(det, tmp_path / "s.html").read_text(encoding="utf-8")
    data = report_pdf(det)
    assert data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF")
    pypdf = pytest.importorskip("pypdf")

    def text(pdf: bytes) -> list[str]:
        return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(pdf)).pages]

    assert text(data) == text(write_report(det, tmp_path / "s.pdf").read_bytes())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.html", "s.pdf"]


def test_html_file_and_bad_suffix(det, tmp_path):
    assert "Condition" in write_report(det, tmp_path / "s.html").read_text(encoding="utf-8")
    with pytest.raises(UsageError, match="html"):
        write_report(det, tmp_path / "s.docx")


def test_report_never_replaces_an_input(det, tmp_path):
    inp = tmp_path / "site.pdf"
    inp.write_bytes(b"mine")
    with pytest.raises(UsageError, match="Refusing"):
        write_report(det, inp, protected=[inp])
    assert inp.read_bytes() == b"mine"
    p = write_report(det, tmp_path / "a" / "b" / "r.pdf")  # missing folders are created
    assert p.read_bytes().startswith(b"%PDF")


def _all_text(fig):
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
    return "\n".join(out)


def test_report_sign_block_ids_workspace_scale_and_north(det):
    import matplotlib.pyplot as plt

    from ms4map.outputs.report import report_figure

    det.doc["workspace"] = {"name": "demo.gpkg", "path": "/x/demo.gpkg"}
    det.map_layers["outfall_ids"] = ["OF-M"]
    det.map_layers["site_label"] = "P1"
    html = render_html(det, include_map=False)
    for needle in (
        "Reviewed by",
        "Signature",
        "Stormwater Management Officer",
        "from the GIS data in demo.gpkg",
        "Inlets: CB1 (30%), CB3 (70%)",
        "OF-M (30%)",
    ):
        assert needle in html, needle
    fig = report_figure(det)
    try:
        text = _all_text(fig)
        for needle in (
            "Reviewed by:",
            "Title:",
            "Date:",
            "Signature:",
            "Stormwater Management Officer",
            "from the GIS data in demo.gpkg",
            "Inlets: CB1 (30%), CB3 (70%)",
            "Outfalls: OF-M (30%)",
        ):
            assert needle in text, needle
        map_text = "\n".join(t.get_text() for t in fig.axes[0].texts)
        assert "N" in map_text.split("\n")  # north arrow
        assert " ft (" in map_text  # scale bar
        assert "P1" in map_text and "OF-M" in map_text  # site and outfall labels
    finally:
        plt.close(fig)
