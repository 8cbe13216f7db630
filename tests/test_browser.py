"""End-to-end in a real browser: Debian's chromium driven by Playwright, no internet.

Every request that is not to localhost is blocked, so the map must draw from
the locally served Leaflet.  The test starts the app on the bundled demo town,
checks that Leaflet vector features are drawn, searches a parcel (the River Rd
shopping plaza, demo scenario b), runs a screening, sees the Condition A answer
and saves a screenshot in ``tests/artifacts/``.

It runs in CI (``.ci/run`` installs chromium); elsewhere it skips only when
``/usr/bin/chromium`` is absent.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[1]
PLAZA = "107.12-2-11"  # demo scenario (b): 2-acre commercial plaza, Kenyon River outfalls
ARTIFACTS = REPO / "tests" / "artifacts"


def _need_chromium() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(
                "CI must run the browser test: /usr/bin/chromium is missing (.ci/run "
                "installs it with apt-get install chromium)"
            )
        pytest.skip(
            "Debian's chromium is not installed (/usr/bin/chromium); "
            "apt-get install chromium to run the browser test"
        )
    pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, timeout: float = 90) -> None:
    import urllib.request

    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - localhost only
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"the app did not answer at {url}")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory):
    _need_chromium()
    data = tmp_path_factory.mktemp("appdata")
    port = _free_port()
    env = dict(os.environ, MS4MAP_DATA_DIR=str(data))
    env.pop("MS4MAP_WORKSPACE", None)  # no workspace: the demo
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(REPO / "app.py"),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--server.enableStaticServing",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    log = open(data / "streamlit.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_http(f"http://127.0.0.1:{port}/_stcore/health")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _map_frame(page, timeout: float = 60):
    """The st_folium iframe once Leaflet has drawn vector paths in it."""
    end = time.time() + timeout
    while time.time() < end:
        for frame in page.frames:
            try:
                if frame.locator("path.leaflet-interactive").count() > 0:
                    return frame
            except Exception:  # noqa: BLE001 - frames come and go while loading
                continue
        time.sleep(0.5)
    raise AssertionError("no Leaflet vector path was drawn in any frame")


def test_app_end_to_end_offline(app_url: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    blocked: list[str] = []

    def route(r) -> None:
        url = r.request.url
        if url.startswith(
            (
                "http://127.0.0.1",
                "http://localhost",
                "ws://127.0.0.1",
                "ws://localhost",
                "data:",
                "blob:",
            )
        ):
            r.continue_()
        else:
            blocked.append(url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.route("**/*", route)
            page = context.new_page()
            page.goto(app_url)
            try:
                frame = _map_frame(page)
                page.wait_for_timeout(2000)
            finally:
                page.screenshot(path=str(ARTIFACTS / "browser_map.png"), full_page=True)
            n_paths = frame.locator("path.leaflet-interactive").count()
            assert n_paths > 10, n_paths
            # search a parcel in the sidebar
            search = page.get_by_role(
                "textbox", name="Search: address, parcel id, structure id or outfall id"
            )
            search.fill(PLAZA)
            search.press("Enter")
            page.get_by_text("Downstream path").wait_for(timeout=60_000)
            page.locator('[data-testid="stMarkdown"]').filter(
                has_text="Kenyon River"
            ).first.wait_for(timeout=30_000)
            # screening
            page.get_by_role("link", name="Site screening").click()
            ids = page.get_by_role("textbox", name="Parcel ids of the site (comma separated)")
            ids.wait_for(timeout=60_000)
            ids.fill(PLAZA)
            ids.press("Enter")
            page.wait_for_timeout(1500)
            acres = page.get_by_role("spinbutton", name="Disturbed acres")
            acres.fill("2")
            page.get_by_role("button", name="Screen the site").click()
            page.get_by_text("Determination").wait_for(timeout=90_000)
            metric = page.locator('[data-testid="stMetric"]').filter(has_text="Condition A")
            metric.first.wait_for(timeout=30_000)
            assert "YES" in metric.first.inner_text()
            page.screenshot(path=str(ARTIFACTS / "browser_screening.png"), full_page=True)
        finally:
            browser.close()
    assert not [u for u in blocked if "tile" not in u], blocked
