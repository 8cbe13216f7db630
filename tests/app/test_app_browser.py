"""End-to-end in a real browser: Debian's chromium driven by Playwright, no internet.

Chromium resolves no host but localhost (``--host-resolver-rules``), so the map must
draw from the locally served Leaflet; requests are only *listened to* (never
intercepted: intercepting every request made st_folium time out in a third of the
loads) and any request off localhost fails the test.  Waits are on what the page shows
(Leaflet paths, the highlighted site, the determination, Streamlit's script state),
never on a fixed time.

``test_app_end_to_end_offline`` searches a parcel (the River Rd shopping plaza, demo
scenario b), runs a screening and sees the Condition A answer;
``test_planner_path`` walks a planner's path: search a parcel, screen it, change the
parcel, see the old result cleared, screen again and download the PDF.  Screenshots go
to ``tests/artifacts/``.

It runs in CI (``.ci/run`` installs chromium); elsewhere it skips only when
``/usr/bin/chromium`` is absent.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
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


def streamlit_cmd(port: int) -> list[str]:
    """The command that serves the app on ``127.0.0.1:port``, headless, for a browser test."""
    return [
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


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory):
    _need_chromium()
    data = tmp_path_factory.mktemp("appdata")
    port = _free_port()
    env = dict(os.environ, MS4MAP_DATA_DIR=str(data))
    env.pop("MS4MAP_WORKSPACE", None)  # no workspace: the demo
    cmd = streamlit_cmd(port)
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


@contextmanager
def _serving(cmd: list[str], data: Path, env: dict[str, str], port: int):
    """Run the app's server ``cmd`` (logging to ``data/streamlit.log``) until the block
    ends; yields its address once it answers."""
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


LOCAL = ("http://127.0.0.1", "http://localhost", "ws://127.0.0.1", "ws://localhost")
NO_INTERNET = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"
TMDL_LOT = "102.15-2-9"  # demo scenario (f): in the Tamarack Lake phosphorus TMDL watershed


def _map_frame(page, timeout: float = 60, selector: str = "path.leaflet-interactive"):
    """The st_folium iframe once Leaflet has drawn ``selector`` in it."""
    end = time.time() + timeout
    while time.time() < end:
        for frame in page.frames:
            try:
                if frame.locator(selector).count() > 0:
                    return frame
            except Exception:  # noqa: BLE001 - frames come and go while loading
                continue
        time.sleep(0.25)
    seen = []  # what each frame had, for the CI log
    for frame in page.frames:
        try:
            seen.append((frame.url[:60], frame.locator("path.leaflet-interactive").count()))
        except Exception as exc:  # noqa: BLE001
            seen.append((frame.url[:60], type(exc).__name__))
    errors = page.locator("[data-testid=stException], [data-testid=stAlertContentError]")
    raise AssertionError(
        f"nothing matching {selector!r} was drawn in any frame; frames (url, paths): {seen}; "
        f"errors on the page: {errors.all_inner_texts()[:3]}"
    )


def _idle(page, timeout: float = 90_000) -> None:
    """Wait until Streamlit has no script run going (the page shows its answer)."""
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=stApp]');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'; }",
        timeout=timeout,
    )


def _go(page, name: str) -> None:
    """Follow the sidebar's link to page ``name`` and wait for its heading, still there once
    the app is idle; follow it again when a rerun of the page being left swallowed the
    click or took the browser back to it (its map answering late: seen in CI, where the
    Map page's heading came and the investigation page came back)."""
    heading = page.get_by_role("heading", name=name, exact=True)
    for attempt in range(3):
        _idle(page)
        page.get_by_role("link", name=name).click()
        try:
            heading.wait_for(timeout=60_000)
            _idle(page)
            page.wait_for_timeout(1_000)  # a late rerun of the page left starts here
            _idle(page)
            if heading.count():
                return
        except Exception:
            if attempt == 2:
                raise
    raise AssertionError(f"the page {name!r} did not stay after three clicks on its link")


@contextmanager
def _browser():
    """A chromium page that cannot reach the internet; yields (page, off_localhost)."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    off: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", NO_INTERNET]
        )
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.on(
                "request",
                lambda r: (
                    None if r.url.startswith((*LOCAL, "data:", "blob:")) else off.append(r.url)
                ),
            )
            yield context.new_page(), off
        finally:
            browser.close()


def _screen_parcel(page, parcel: str, acres: str, plan: str | None = None) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    ids = page.get_by_role("textbox", name="Parcel ids of the site (comma separated)")
    ids.wait_for(timeout=60_000)
    # the page's first run must finish before typing: on a loaded machine Streamlit
    # still replaces the box while the script runs, and a fill on a detached box fails
    _idle(page)
    ids.fill(parcel)
    ids.press("Enter")
    _map_frame(page, selector='path[stroke="#00e5ff"]')  # the site is highlighted
    _idle(page)
    for name, value in (("Disturbed acres", acres), ("Common plan", plan)):
        if value is None:
            continue
        box = page.get_by_role("spinbutton", name=name)
        box.fill(value)
        box.press("Enter")
        _idle(page)
    _idle(page)
    page.get_by_role("button", name="Screen the site").click()
    answer = page.get_by_text(f"Site: {parcel}")
    try:
        answer.wait_for(timeout=30_000)
    except PlaywrightTimeout:
        # a click that lands while the rerun of the last input is starting can be lost
        # by Streamlit (once in five fresh CI runs here): say so, then click once more
        page.screenshot(path=str(ARTIFACTS / "browser_screen_retry.png"), full_page=True)
        print(f"_screen_parcel({parcel!r}): no answer 30 s after the click; clicking again")
        _idle(page)
        page.get_by_role("button", name="Screen the site").click()
        answer.wait_for(timeout=90_000)
    _idle(page)


def test_app_end_to_end_offline(app_url: str) -> None:
    with _browser() as (page, off):
        page.goto(app_url)
        try:
            frame = _map_frame(page)
            _idle(page)
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
        page.locator('[data-testid="stMarkdown"]').filter(has_text="Kenyon River").first.wait_for(
            timeout=30_000
        )
        # screening
        _go(page, "Site screening")
        _screen_parcel(page, PLAZA, "2")
        metric = page.locator('[data-testid="stMetric"]').filter(has_text="Condition A")
        metric.first.wait_for(timeout=30_000)
        assert "YES" in metric.first.inner_text()
        page.screenshot(path=str(ARTIFACTS / "browser_screening.png"), full_page=True)
    assert not [u for u in off if "tile" not in u], off


def test_planner_path(app_url: str, tmp_path: Path) -> None:
    """Search a parcel, screen it, change the parcel (old result cleared), screen again,
    download the PDF of the new result."""
    with _browser() as (page, off):
        page.goto(app_url)
        _map_frame(page)
        _idle(page)
        _go(page, "Site screening")
        search = page.get_by_role("textbox", name="Search: address or parcel id")
        search.wait_for(timeout=60_000)
        search.fill(PLAZA)
        search.press("Enter")
        page.get_by_role("button", name="Add this parcel to the site").click()
        ids = page.get_by_role("textbox", name="Parcel ids of the site (comma separated)")
        page.wait_for_function(
            f"() => [...document.querySelectorAll('input')].some(i => i.value === {PLAZA!r})",
            timeout=60_000,
        )
        _screen_parcel(page, PLAZA, "2")
        metrics = page.locator('[data-testid="stMetric"]')
        assert "YES" in metrics.filter(has_text="Condition A").first.inner_text()
        pdf_button = page.get_by_role("button", name="Download report (PDF)")
        pdf_button.wait_for(timeout=60_000)
        # another parcel: the plaza's answer and its downloads go at once
        ids.fill(TMDL_LOT)
        ids.press("Enter")
        page.get_by_text("changed after the last screening").wait_for(timeout=60_000)
        _idle(page)
        assert metrics.count() == 0
        assert page.get_by_role("button", name="Download report (PDF)").count() == 0
        assert page.get_by_text(f"Site: {PLAZA}").count() == 0
        page.screenshot(path=str(ARTIFACTS / "browser_cleared.png"), full_page=True)
        _screen_parcel(page, TMDL_LOT, "1")
        assert "YES" in metrics.filter(has_text="Condition A").first.inner_text()
        with page.expect_download(timeout=90_000) as dl:
            page.get_by_role("button", name="Download report (PDF)").click()
        path = tmp_path / "report.pdf"
        dl.value.save_as(path)
        assert TMDL_LOT in dl.value.suggested_filename
        data = path.read_bytes()
        assert data.startswith(b"%PDF") and len(data) > 10_000
        page.screenshot(path=str(ARTIFACTS / "browser_planner.png"), full_page=True)
    assert not [u for u in off if "tile" not in u], off


def test_invalid_acreage_clears_the_answer(app_url: str) -> None:
    """Type -1 acres after a 1.5-acre screening and press Screen, as a planner would:
    the field is refused by name and the 1.5-acre answer is gone (nothing to print)."""
    with _browser() as (page, _off):
        page.goto(app_url)
        _map_frame(page)
        _idle(page)
        _go(page, "Site screening")
        _screen_parcel(page, PLAZA, "1.5")
        assert page.get_by_text("1.5 acres disturbed").count() > 0
        box = page.get_by_role("spinbutton", name="Disturbed acres")
        box.fill("-1")
        page.get_by_role("button", name="Screen the site").click()
        _idle(page)
        alert = page.locator('[data-testid="stAlert"]').filter(has_text="Disturbed acres")
        alert.first.wait_for(timeout=30_000)
        text = alert.first.inner_text(timeout=5_000)
        _idle(page)
        if alert.count() == 0:  # a late rerun (the box's own) redrew the page: press again
            page.get_by_role("button", name="Screen the site").click()
            _idle(page)
            alert.first.wait_for(timeout=30_000)
            text = alert.first.inner_text(timeout=5_000)
        page.screenshot(path=str(ARTIFACTS / "browser_bad_acres.png"), full_page=True)
        assert "-1" in text
        assert page.get_by_text(f"Site: {PLAZA}").count() == 0
        assert page.get_by_role("button", name="Download report (PDF)").count() == 0
        assert page.locator('[data-testid="stMetric"]').count() == 0
