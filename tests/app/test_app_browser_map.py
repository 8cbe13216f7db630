"""The Map page in chromium at 1440 x 1000 (issue 10, part 3): the map takes the page's
width, and a search shows the structure's whole path with its outfall on screen.

Same harness as ``tests/app/test_app_browser.py`` (no internet, waits on what the page shows).
"""

from __future__ import annotations

import pytest
from test_app_browser import ARTIFACTS, _idle, _map_frame, _need_chromium, app_url  # noqa: F401

pytestmark = pytest.mark.browser


def test_the_map_uses_the_width_and_a_search_shows_the_whole_path(app_url: str) -> None:  # noqa: F811
    _need_chromium()
    from playwright.sync_api import sync_playwright
    from test_app_browser import CHROMIUM, LOCAL, NO_INTERNET

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    off: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", NO_INTERNET]
        )
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 1000})
            context.on(
                "request",
                lambda r: (
                    None if r.url.startswith((*LOCAL, "data:", "blob:")) else off.append(r.url)
                ),
            )
            page = context.new_page()
            page.goto(app_url)
            _map_frame(page)
            _idle(page)
            main = page.locator('[data-testid="stMain"]').bounding_box()
            iframe = page.locator("iframe").first.bounding_box()
            # the map was 776 px of a 1440 px window beside a legend column
            assert iframe["width"] >= 0.9 * (main["width"] - 2 * 48), (iframe, main)
            assert iframe["width"] >= 880, iframe
            search = page.get_by_role(
                "textbox", name="Search: address, parcel id, structure id or outfall id"
            )
            search.fill("CB-0170")
            search.press("Enter")
            page.get_by_text("Downstream path", exact=True).wait_for(timeout=60_000)
            frame = _map_frame(page, selector='path[stroke="#ff00ff"]')
            _idle(page)
            page.screenshot(path=str(ARTIFACTS / "browser_map_path.png"), full_page=True)
            size = frame.evaluate("() => [window.innerWidth, window.innerHeight]")
            boxes = frame.evaluate(
                "() => [...document.querySelectorAll('path[stroke=\"#ff00ff\"]')]"
                ".map(e => { const b = e.getBoundingClientRect();"
                " return [b.left, b.top, b.right, b.bottom]; })"
            )
            assert boxes, "no magenta path or outfall drawn"
            for left, top, right, bottom in boxes:  # the path and OF-009 are on screen
                assert left >= -2 and top >= -2, (left, top, size)
                assert right <= size[0] + 2 and bottom <= size[1] + 2, (right, bottom, size)
        finally:
            browser.close()
    assert not [u for u in off if "tile" not in u], off


def test_an_outfall_links_to_its_investigation(app_url: str) -> None:  # noqa: F811
    _need_chromium()
    from test_app_browser import _browser

    with _browser() as (page, off):
        page.goto(app_url)
        _map_frame(page)
        _idle(page)
        search = page.get_by_role(
            "textbox", name="Search: address, parcel id, structure id or outfall id"
        )
        search.fill("OF-009")
        search.press("Enter")
        page.get_by_text("What drains here").wait_for(timeout=60_000)
        _map_frame(page, selector='path[stroke="#ffd400"]')  # the network upstream
        _idle(page)
        page.get_by_role("link", name="Investigate outfall OF-009: candidate sources").click()
        page.get_by_role("heading", name="Outfall investigation").wait_for(timeout=60_000)
        _idle(page)
        assert "outfall=OF-009" in page.url
        # the outfall chosen: its label in the selectbox ("OF-009 — suspect — Alder Kill")
        # the outfall chosen: the selectbox's value ("OF-009 — suspect — Alder Kill")
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=stSelectbox] input')]"
            ".some(e => e.value.startsWith('OF-009'))",
            timeout=30_000,
        )
        page.get_by_text("Candidate sources").first.wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "browser_outfall_link.png"), full_page=True)
    assert not [u for u in off if "tile" not in u], off
