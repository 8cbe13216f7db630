"""In chromium, no internet: the Permit year page (issue 30) on the demo with seeded
records: the period named with its dates, the drill-down, the compliance pack's PDF
downloaded and read back, the screening schedule's warning for a crew too small.

Same set-up as ``tests/app/test_app_browser.py`` (Debian's chromium through Playwright;
every request off localhost fails the test).
"""

from __future__ import annotations

import datetime as dt
import os

import pytest

import ms4map

pytestmark = pytest.mark.browser

from test_app_browser import (  # noqa: E402
    ARTIFACTS,
    _browser,
    _free_port,
    _idle,
    _need_chromium,
    _serving,
    streamlit_cmd,
)


@pytest.fixture(scope="module")
def app_seeded(tmp_path_factory: pytest.TempPathFactory):
    _need_chromium()
    data = tmp_path_factory.mktemp("appdata_permit")
    env = dict(os.environ, MS4MAP_DATA_DIR=str(data))
    for k in ("MS4MAP_WORKSPACE", "MS4MAP_USERS_FILE", "MS4MAP_RECORDS"):
        env.pop(k, None)
    from ms4map.records import open_records

    r = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="jsmith",
        records=data / "records" / "demo.records.gpkg",
        users_file=None,
    )
    year = r.periods.year_of(dt.date.today())
    r.add_inspection("OF-009", f"{year}-06-02", flow_present=True, characterization="suspect")
    r.open_case("OF-009", f"{year}-06-03", origin="complaint")
    port = _free_port()
    with _serving(streamlit_cmd(port), data, env, port) as url:
        yield url, year


def test_permit_page_in_chromium(app_seeded, tmp_path) -> None:
    import pypdf
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    url, year = app_seeded
    with _browser() as (page, off):
        page.goto(f"{url}/permit")
        try:
            page.get_by_text(
                f"permit year {year} (3 January {year} to 2 January {year + 1}"
            ).first.wait_for(timeout=120_000)
            _idle(page)
            drill = page.locator('[data-testid="stMarkdown"]').filter(
                has_text="Complaints received"
            )
            for _attempt in range(3):  # a click swallowed by a rerun is clicked again
                page.get_by_text("What each count holds (drill-down)").click()
                try:
                    drill.first.wait_for(state="visible", timeout=20_000)
                    break
                except PlaywrightTimeout:
                    _idle(page)
            assert "(1): 1" in drill.first.inner_text()
            _idle(page)
            page.get_by_role("button", name="Make the compliance pack (PDF)").first.click()
            button = page.get_by_role("button", name="Download the compliance pack (PDF)").first
            button.wait_for(timeout=120_000)
            with page.expect_download(timeout=60_000) as got:
                button.click()
            pdf = tmp_path / "pack.pdf"
            got.value.save_as(pdf)
        finally:
            page.screenshot(path=str(ARTIFACTS / "browser_permit.png"), full_page=True)
        text = " ".join(" ".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages).split())
        assert "Illicit discharge detection and elimination" in text
        assert "Outfalls screened in the period: 1" in text
        assert "Complaints received (cases opened on a complaint): 1" in text
        # a crew of one a year for 24 outfalls over five years: reported, not dropped
        _idle(page)
        per_year = page.get_by_label("Outfalls the crew screens a year").first
        per_year.fill("1")
        per_year.press("Enter")
        page.get_by_text("The crew cannot screen every outfall").first.wait_for(timeout=120_000)
    assert not off, off
