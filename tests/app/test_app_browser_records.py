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
    _go,
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


def _press(page, button: str, confirmation: str, *, done, shot: str) -> None:
    """Press a form's button and wait for its confirmation; press once more only when a
    rerun drawing the form swallowed the press and nothing was saved (``done()``: the
    records say), so nothing is doubled.  A screenshot ``shot`` when it fails."""
    _idle(page)
    said = page.get_by_text(confirmation).first
    try:
        for attempt in range(2):
            page.get_by_role("button", name=button).click()
            try:
                said.wait_for(timeout=45_000)
                return
            except Exception:
                if attempt or done():
                    raise
    except Exception:
        page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
        raise


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
        _go(page, "Outfall investigation")
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
        _go(page, "Map")
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


def _heading_structure(page) -> str:
    """The structure the track-down heading proposes ("Next structure to sample: X")."""
    import re

    loc = page.get_by_text(re.compile(r"Next structure to sample: \S+")).first
    loc.wait_for(timeout=90_000)
    return re.search(r"Next structure to sample: (\S+)", loc.inner_text()).group(1)


def _pdf_status(page, outfall: str) -> str:
    """The status the printable outfall map's inventory table gives ``outfall``."""
    import io

    import pypdf

    page.get_by_role("button", name="Make the printable outfall map (PDF)").click()
    dl = page.get_by_role("button", name="Download outfall map (PDF)")
    dl.wait_for(timeout=180_000)
    _idle(page)
    with page.expect_download(timeout=60_000) as got:
        dl.click()
    pdf = pypdf.PdfReader(io.BytesIO(open(got.value.path(), "rb").read()))  # noqa: SIM115
    text = "\n".join(p.extract_text() or "" for p in pdf.pages[1:])
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(outfall))
    for word in ("not flowing", "illicit", "suspect", "flowing", "eliminated", "unknown"):
        if word in line:
            return word.replace(" ", "_")
    raise AssertionError(line)


def test_records_round_samples_steps_reload_and_one_status(app_with_users) -> None:
    """Issue 28's records round: open a case, take three samples accepting each proposed
    structure, record steps on the chosen case, reload mid-way; the outfall's status is
    the same on every page and in the PDF."""
    pytest.importorskip("pypdf")
    url, data = app_with_users
    from ms4map.records import open_records

    def records(user: str = "t", role: str = "viewer"):
        return open_records(
            ms4map.datasets.get_path("alder_falls"),
            user=user,
            role=role,
            records=data / "records" / "demo.records.gpkg",
        )

    with _browser() as (page, off):
        page.goto(url)
        page.get_by_role("textbox", name="User name").fill(SMO)
        page.get_by_role("textbox", name="Password").fill(SMO_PW)
        page.get_by_role("button", name="Log in").click()
        page.get_by_text(f"Logged in as {SMO}").wait_for(timeout=120_000)
        _idle(page)
        # open a case at the outfall, from the investigation page
        _go(page, "Outfall investigation")
        page.get_by_text(f"Records of {OUTFALL}").wait_for(timeout=120_000)
        _idle(page)
        page.get_by_role("textbox", name="What was reported or found").fill("grey water, soap")
        _press(
            page,
            "Open the case",
            f"opened at {OUTFALL}",
            done=lambda: len(records().cases()) > 0,
            shot="browser_records_open_fail.png",
        )
        _idle(page)
        cid = int(records().cases()["case_id"].max())
        # a second, later case: the page's default choice, not the one we work on
        other = records(SMO, "smo").open_case("OF-001", "2025-06-01", origin="complaint")
        _go(page, "IDDE cases")
        _idle(page)
        _choose(page, "Case", f"case {cid} — {OUTFALL}")
        page.get_by_text(f"Steps of case {cid}").wait_for(timeout=60_000)
        _idle(page)
        headings = []
        for i in range(3):
            sid = _heading_structure(page)
            box = page.get_by_role("textbox", name="Structure")
            # (a rerun may still be drawing the form: its box is empty for a moment)
            for _ in range(60):
                if box.input_value() == sid:
                    break
                page.wait_for_timeout(500)
            assert box.input_value() == sid, (i, box.input_value(), sid)  # item 1
            headings.append(sid)
            _choose(page, "Result", "flow / pollutant found")
            _press(
                page,
                "Save the sample",
                f"Sample {i + 1} saved: {sid}",
                done=lambda i=i: len(records().samples()) > i,
                shot="browser_records_round_fail.png",
            )
            _idle(page)
            if i == 1:  # reload mid-way: the login and the chosen case stay
                page.reload()
                page.get_by_role("heading", name="IDDE cases").wait_for(timeout=60_000)
                _idle(page)
                assert page.get_by_text(f"Logged in as {SMO}").count() > 0, "logged out"
                case_box = page.get_by_role("combobox", name="Case")
                assert case_box.input_value().startswith(f"case {cid} "), case_box.input_value()
        page.screenshot(path=str(ARTIFACTS / "browser_records_round.png"), full_page=True)
        # steps, on the chosen case
        _choose(page, "Next step", "investigation")
        _press(
            page,
            "Record the step",
            f"Case {cid}: investigation recorded",
            done=lambda: records().cases().set_index("case_id").loc[cid, "status"] != "opened",
            shot="browser_records_step_fail.png",
        )
        _idle(page)
        assert page.get_by_role("combobox", name="Case").input_value().startswith(f"case {cid} ")
        _choose(page, "Next step", "source_found")
        page.get_by_role("textbox", name="Source parcel id (SBL)").fill("106.12-2-14")
        _press(
            page,
            "Record the step",
            f"Case {cid}: source_found recorded",
            done=lambda: (
                records().cases().set_index("case_id").loc[cid, "status"] == "source_found"
            ),
            shot="browser_records_step_fail.png",
        )
        _idle(page)
        label = page.get_by_role("combobox", name="Case").input_value()
        assert label == f"case {cid} — {OUTFALL}", label
        assert page.get_by_text(f"Case {cid} is at the step: source_found").count() > 0
        # the records: samples at the heading's structures, steps on the chosen case
        rec = records()
        assert rec.samples(cid)["struct_id"].tolist() == headings
        cases = rec.cases().set_index("case_id")
        assert cases.loc[cid, "status"] == "source_found"
        assert cases.loc[other, "status"] == "opened"
        want = rec.outfall_status().set_index("outfall_id").loc[OUTFALL, "status"]
        assert want == "illicit"
        # the same status on every page and in the PDF
        _go(page, "Outfall investigation")
        page.get_by_text(f"Records of {OUTFALL}").wait_for(timeout=120_000)
        _idle(page)
        shown = page.get_by_role("combobox", name="Outfall").input_value()
        assert shown.startswith(f"{OUTFALL} — {want}"), shown
        _go(page, "Map")  # (the cases page has a map too: wait for this page's heading)
        _map_frame(page, timeout=240)
        _idle(page)
        search = page.get_by_role(
            "textbox", name="Search: address, parcel id, structure id or outfall id"
        )
        try:
            search.wait_for(timeout=240_000)  # the sidebar draws after the map on a slow run
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "browser_records_map_fail.png"), full_page=True)
            raise
        search.fill(OUTFALL)
        search.press("Enter")
        page.get_by_text("Status:").first.wait_for(timeout=90_000)
        _idle(page)
        line = page.get_by_text("Status:").first.inner_text()
        assert f"Status: {want}" in line, line
        _go(page, "Outfall inventory")
        _idle(page)
        assert _pdf_status(page, OUTFALL) == want
        page.screenshot(path=str(ARTIFACTS / "browser_records_status.png"), full_page=True)
    assert not [u for u in off if "tile" not in u], off
