"""In chromium, as an attacker does it (issue 29 checks): guessing passwords, a water named
like a Markdown image, formulas in the owners' names, and a zip of zeros.

A town copy is made hostile with SQLite: every outfall's receiving water is a Markdown
image and link pointing at this computer, and the septic parcels' owners are spreadsheet
formulas.  The server is ``ms4map app``'s command (see test_app_browser_session).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import zipfile

import pyogrio
import pytest

import ms4map

pytestmark = pytest.mark.browser

from test_app_browser import (  # noqa: E402
    ARTIFACTS,
    _browser,
    _free_port,
    _go,
    _idle,
    _need_chromium,
    _serving,
)

SMO, SMO_PW = "jsmith", "smo password 1"
EVIL_WATER = "![m](http://127.0.0.1:9/x.png) [click](http://127.0.0.1:9/y) $x$"
EVIL_OWNER = '=HYPERLINK("http://127.0.0.1:9/z","Pay here")'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    _need_chromium()
    pytest.importorskip("argon2")
    from ms4map.cli.app import app_command

    data = tmp_path_factory.mktemp("appdata_attacker")
    env = dict(os.environ, MS4MAP_DATA_DIR=str(data))
    for var in ("MS4MAP_WORKSPACE", "MS4MAP_USERS_FILE", "MS4MAP_ALLOWED_PATHS"):
        env.pop(var, None)
    subprocess.run(
        [sys.executable, "-m", "ms4map", "users", "add", SMO, "--role", "smo", "--password-stdin"],
        input=SMO_PW + "\n",
        text=True,
        env=env,
        check=True,
    )
    demo = ms4map.datasets.get_path("alder_falls")
    town = data / "town"
    town.mkdir()
    for p in demo.parent.glob(demo.stem + "*"):
        shutil.copy(p, town / p.name)
    gpkg = town / demo.name
    gpkg.unlink()
    for name in pyogrio.list_layers(demo)[:, 0]:
        frame = pyogrio.read_dataframe(demo, layer=name)
        if name == "outfalls":
            frame["receiving_water"] = EVIL_WATER
        if name == "parcels":
            frame.loc[frame["sewer"] == "septic", "owner"] = EVIL_OWNER
        pyogrio.write_dataframe(frame, gpkg, layer=name)
    port = _free_port()
    cmd = app_command(port=port, address="127.0.0.1", headless=True)
    cmd += ["--server.fileWatcherType", "none"]
    with _serving(cmd, data, env, port) as url:
        yield url, data, town / demo.name, env


def _try_login(page, name: str, password: str) -> None:
    page.get_by_role("textbox", name="User name").fill(name)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    _idle(page)


def test_guessing_is_stopped_and_the_smo_unlocked_on_the_server(served) -> None:
    url, _data, _town, env = served
    with _browser() as (page, off):
        page.goto(f"{url}/data")
        page.get_by_role("textbox", name="User name").wait_for(timeout=60_000)
        for i in range(5):
            _try_login(page, SMO, f"guess number {i}")
            page.get_by_text("Wrong user name or password.").wait_for(timeout=30_000)
        _try_login(page, SMO, SMO_PW)  # the right password, but locked now
        page.get_by_text("Too many login attempts").wait_for(timeout=30_000)
        assert page.get_by_text(f"ms4map users unlock {SMO}").count() > 0
        subprocess.run(
            [sys.executable, "-m", "ms4map", "users", "unlock", SMO], env=env, check=True
        )
        _try_login(page, SMO, SMO_PW)
        page.get_by_text(f"Logged in as {SMO}").wait_for(timeout=60_000)
    assert not off, off


def _open_town(page, town) -> None:
    _go(page, "Data")
    box = page.get_by_role(
        "textbox", name="GeoPackage, File Geodatabase, folder of layers or TOML manifest"
    )
    box.wait_for(timeout=60_000)
    box.fill(str(town))
    box.press("Enter")
    _idle(page)
    page.get_by_role("button", name="Open and validate").click()
    use = page.get_by_role("button", name=f"Use '{town}' on every page")
    use.wait_for(timeout=120_000)
    _idle(page)
    use.click()
    page.get_by_text(f"Current workspace: {town}").wait_for(timeout=60_000)
    _idle(page)


def test_hostile_names_are_text_and_formulas_are_defused(served) -> None:
    url, _data, town, env = served
    subprocess.run([sys.executable, "-m", "ms4map", "users", "unlock", SMO], env=env, check=True)
    with _browser() as (page, off):
        page.goto(f"{url}/data")
        _try_login(page, SMO, SMO_PW)
        page.get_by_text(f"Logged in as {SMO}").wait_for(timeout=60_000)
        _open_town(page, town)
        # the map's search: the path names the receiving water, as text
        _go(page, "Map")
        search = page.get_by_role("textbox", name="Search: address, parcel id, structure id")
        search.wait_for(timeout=240_000)
        search.fill("CB-0170")
        search.press("Enter")
        page.get_by_text("Downstream path").wait_for(timeout=240_000)
        _idle(page)
        page.screenshot(path=str(ARTIFACTS / "browser_attacker_map.png"), full_page=True)
        assert page.get_by_text("127.0.0.1:9/x.png").count() > 0  # shown ...
        assert page.locator("img[src*='127.0.0.1:9']").count() == 0  # ... not fetched
        links = page.locator("a[href*='127.0.0.1:9']")
        found = [
            links.nth(i).evaluate("e => e.parentElement.parentElement.outerHTML.slice(0, 600)")
            for i in range(links.count())
        ]
        assert not found, found  # ... nor a link
        # the septic table's download: owners' formulas are text in a spreadsheet
        page.get_by_role("link", name="Septic").click()
        button = page.get_by_role("button", name="Download table (CSV)")
        button.wait_for(timeout=240_000)
        _idle(page)
        with page.expect_download() as dl:
            button.click()
        text = open(dl.value.path(), encoding="utf-8").read()
        rows = list(csv.DictReader(io.StringIO(text)))
        owners = {r.get("Owner") or r.get("owner") for r in rows}
        assert "'" + EVIL_OWNER in owners, sorted(o for o in owners if o)[:5]
        assert EVIL_OWNER not in owners
    assert not off, off


def test_a_zip_of_zeros_is_refused_and_nothing_kept(served, tmp_path) -> None:
    url, data, _town, env = served
    subprocess.run([sys.executable, "-m", "ms4map", "users", "unlock", SMO], env=env, check=True)
    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "town.geojson",
            '{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},'
            '"geometry":{"type":"Point","coordinates":[-73.7,43.0]}}]}',
        )
        zf.writestr("parcels.dbf", b"\0" * (32 * 2**20))
    bomb = tmp_path / "town.zip"
    bomb.write_bytes(blob.getvalue())
    with _browser() as (page, off):
        page.goto(f"{url}/data")
        _try_login(page, SMO, SMO_PW)
        page.get_by_text(f"Logged in as {SMO}").wait_for(timeout=60_000)
        _go(page, "Data")
        page.locator("input[type=file]").first.set_input_files(str(bomb))
        page.get_by_text("but its header describes").wait_for(timeout=120_000)
        _idle(page)
    uploads = data / "uploads"
    kept = [p for p in uploads.rglob("*.dbf")] if uploads.exists() else []
    assert not kept, kept
    assert not off, off
