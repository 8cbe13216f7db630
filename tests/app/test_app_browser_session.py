"""In chromium, as the SMO does it (issue 28 items 5 and 16): a reload keeps the login and
the workspace; after logging out a reload shows the login form; no Deploy button.

The server is started with the command ``ms4map app`` runs (:func:`ms4map.cli.app.
app_command`), so its toolbar setting is the one users get.  Same browser set-up as
``tests/app/test_app_browser.py`` (no internet; waits on what the page shows).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

import ms4map

pytestmark = pytest.mark.browser

from test_app_browser import (  # noqa: E402
    ARTIFACTS,
    _browser,
    _free_port,
    _go,
    _idle,
    _map_frame,
    _need_chromium,
    _serving,
)

SMO, SMO_PW = "jsmith", "smo password 1"
VIEWER, VIEWER_PW = "guest", "viewer password 1"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """``ms4map app``'s server on a data folder with the SMO, a viewer and a town copy."""
    _need_chromium()
    pytest.importorskip("argon2")
    from ms4map.cli.app import app_command

    data = tmp_path_factory.mktemp("appdata_session")
    env = dict(os.environ, MS4MAP_DATA_DIR=str(data))
    for var in ("MS4MAP_WORKSPACE", "MS4MAP_USERS_FILE", "MS4MAP_ALLOWED_PATHS"):
        env.pop(var, None)
    for name, role, pw in ((SMO, "smo", SMO_PW), (VIEWER, "viewer", VIEWER_PW)):
        subprocess.run(
            [sys.executable, "-m", "ms4map", "users", "add", name, "--role", role]
            + ["--password-stdin"],
            input=pw + "\n",
            text=True,
            env=env,
            check=True,
        )
    demo = ms4map.datasets.get_path("alder_falls")
    town = data / "town"
    town.mkdir()
    for p in demo.parent.glob(demo.stem + "*"):
        shutil.copy(p, town / p.name)
    port = _free_port()
    cmd = app_command(port=port, address="127.0.0.1", headless=True)
    cmd += ["--server.fileWatcherType", "none"]
    with _serving(cmd, data, env, port) as url:
        yield url, data, town / demo.name


def _log_in(page, name: str, password: str) -> None:
    page.get_by_role("textbox", name="User name").fill(name)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.get_by_text(f"Logged in as {name}").wait_for(timeout=60_000)
    _go(page, "Data")  # the app opens on the map after a login
    _idle(page)


def test_a_reload_keeps_the_login_and_the_workspace(served) -> None:
    url, _data, town = served
    with _browser() as (page, off):
        page.goto(f"{url}/data")
        page.get_by_role("textbox", name="User name").wait_for(timeout=60_000)
        _log_in(page, SMO, SMO_PW)
        page.get_by_role("heading", name="Data").wait_for(timeout=60_000)
        assert page.get_by_role("button", name="Deploy").count() == 0  # item 16
        box = page.get_by_role(
            "textbox", name="GeoPackage, File Geodatabase, folder of layers or TOML manifest"
        )
        box.fill(str(town))
        box.press("Enter")
        _idle(page)
        page.get_by_role("button", name="Open and validate").click()
        use = page.get_by_role("button", name=f"Use '{town}' on every page")
        use.wait_for(timeout=90_000)
        _idle(page)
        use.click()
        page.get_by_text(f"Current workspace: {town}").wait_for(timeout=60_000)
        _idle(page)
        page.reload()
        page.get_by_role("heading", name="Data").wait_for(timeout=60_000)
        _idle(page)
        page.screenshot(path=str(ARTIFACTS / "browser_reload_session.png"), full_page=True)
        assert page.get_by_text(f"Logged in as {SMO}").count() > 0, "logged out by a reload"
        assert page.get_by_text(f"Current workspace: {town}").count() > 0, "workspace lost"
        # on another page (a page link drops the query string): the same after a reload
        _go(page, "Map")
        _map_frame(page, timeout=240)
        _idle(page)
        assert "workspace=" in page.url, page.url
        page.reload()
        _map_frame(page, timeout=240)
        _idle(page)
        assert page.get_by_text(f"Logged in as {SMO}").count() > 0
        _go(page, "Data")
        page.get_by_text(f"Current workspace: {town}").wait_for(timeout=60_000)
        _idle(page)
        # logging out, then reloading: the login form
        page.get_by_role("button", name="Log out").click()
        page.get_by_role("textbox", name="User name").wait_for(timeout=60_000)
        _idle(page)
        page.reload()
        page.get_by_role("textbox", name="User name").wait_for(timeout=60_000)
        _idle(page)
        assert page.get_by_text("Logged in as").count() == 0
        assert page.get_by_role("heading", name="Data").count() == 0
    assert not off, off


def test_a_viewer_cannot_remove_uploads_nor_open_server_paths(served, monkeypatch) -> None:
    url, data, _town = served
    from ms4map.app.upload import store_upload

    monkeypatch.setenv("MS4MAP_DATA_DIR", str(data))  # the server's data folder
    up = store_upload("lots.geojson", b'{"type":"FeatureCollection","features":[]}')
    with _browser() as (page, off):
        page.goto(f"{url}/data")
        page.get_by_role("textbox", name="User name").wait_for(timeout=60_000)
        _log_in(page, VIEWER, VIEWER_PW)
        page.get_by_text("Stored uploads (1)").wait_for(timeout=60_000)
        _idle(page)
        page.screenshot(path=str(ARTIFACTS / "browser_viewer_data.png"), full_page=True)
        assert page.get_by_role("button", name="Remove").is_disabled()
        assert page.get_by_role("button", name="Open and validate").is_disabled()
        assert page.get_by_role(
            "textbox", name="GeoPackage, File Geodatabase, folder of layers or TOML manifest"
        ).is_disabled()
        assert page.get_by_text("Only the SMO opens files on the server").count() > 0
    assert up.folder.exists()
    assert not off, off
