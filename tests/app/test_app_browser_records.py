"""In chromium, no internet: the SMO logs in, records an inspection with a photo on the
demo, and the outfall's colour on the map changes to its derived status.

Same set-up as ``tests/app/test_app_browser.py`` (Debian's chromium through Playwright; every
request off localhost fails the test; waits on what the page shows), with a users file
made by ``ms4map users add`` in the app's data folder before the server starts.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ms4map

pytestmark = pytest.mark.browser

from test_app_browser import (  # noqa: E402
    ARTIFACTS,
    REPO,
    _browser,
    _free_port,
    _idle,
    _map_frame,
    _need_chromium,
    _wait_http,
    streamlit_cmd,
)

SMO, SMO_PW = "jsmith", "smo password 1"
OUTFALL = "OF-009"  # 'suspect' in the demo's outfalls layer, first in the investigation list
ILLICIT = "#d73027"  # maps.OUTFALL_COLOURS["illicit"]: an 'obvious' inspection


@pytest.fixture(scope="module")
def app_with_users(tmp_path_factory: pytest.TempPathFactory):
    _need_chromium()
    pytest.importorskip("argon2")
    data = tmp_path_factory.mktemp("appdata_users")
    env = dict(os.environ, MS4MAP_DATA_DIR=str(data))
    env.pop("MS4MAP_WORKSPACE", None)
    env.pop("MS4MAP_USERS_FILE", None)
    subprocess.run(
        [sys.executable, "-m", "ms4map", "users", "add", SMO, "--role", "smo", "--password-stdin"],
        input=SMO_PW + "\n",
        text=True,
        env=env,
        check=True,
    )
    port = _free_port()
    cmd = streamlit_cmd(port)
    log = open(data / "streamlit.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_http(f"http://127.0.0.1:{port}/_stcore/health")
        yield f"http://127.0.0.1:{port}", data
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _choose(page, label: str, option: str) -> None:
    """A Streamlit selectbox (a combobox named by its label): open it, pick the option.

    Tried again when a rerun of the page redraws the form and closes the list.
    """
    box = page.get_by_role("combobox", name=label)
    for attempt in range(3):
        _idle(page)
        box.click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=10_000)
        except Exception:  # noqa: BLE001 - the list closed under us
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            continue
        if box.input_value() == option:
            return
    raise AssertionError(f"{label}: {box.input_value()!r}, not {option!r}")


def test_smo_records_an_inspection_and_the_outfall_changes_colour(app_with_users, tmp_path):
    url, data = app_with_users
    from PIL import Image

    photo = tmp_path / "outfall.png"
    Image.new("RGB", (40, 30), (90, 80, 60)).save(photo)
    with _browser() as (page, off):
        page.goto(url)
        page.get_by_role("textbox", name="User name").fill(SMO)
        page.get_by_role("textbox", name="Password").fill(SMO_PW)
        page.get_by_role("button", name="Log in").click()
        frame = _map_frame(page, timeout=120)
        _idle(page)
        before = frame.locator(f'path.leaflet-interactive[fill="{ILLICIT}"]').count()
        assert page.get_by_text(f"Logged in as {SMO}").count() > 0
        page.get_by_role("link", name="Outfall investigation").click()
        page.get_by_text(f"Records of {OUTFALL}").wait_for(timeout=120_000)
        _idle(page)
        _choose(page, "Flow present", "yes")
        _choose(page, "Characterization", "obvious")
        page.locator('input[type="file"]').first.set_input_files(str(photo))
        page.get_by_text("outfall.png").first.wait_for(timeout=30_000)
        page.get_by_role("button", name="Save the inspection").click()
        page.get_by_text(f"Inspection 1 of {OUTFALL} recorded by {SMO} with 1 photo(s).").wait_for(
            timeout=90_000
        )
        _idle(page)
        page.screenshot(path=str(ARTIFACTS / "browser_inspection.png"), full_page=True)
        page.get_by_role("link", name="Map").click()
        page.get_by_role("heading", name="Map").wait_for(timeout=60_000)
        frame = _map_frame(page, selector=f'path.leaflet-interactive[fill="{ILLICIT}"]')
        _idle(page)
        after = frame.locator(f'path.leaflet-interactive[fill="{ILLICIT}"]').count()
        page.screenshot(path=str(ARTIFACTS / "browser_outfall_colour.png"), full_page=True)
        assert after == before + 1, (before, after)
    assert not [u for u in off if "tile" not in u], off
    from ms4map.records import open_records

    rec = open_records(
        ms4map.datasets.get_path("alder_falls"),
        user="t",
        role="viewer",
        records=data / "records" / "demo.records.gpkg",
    )
    assert list(rec.inspections()["created_by"]) == [SMO]
    assert len(rec.attachments()) == 1
