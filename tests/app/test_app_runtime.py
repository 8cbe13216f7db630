"""The app as it runs (issue 10, part 6): `ms4map app` stops its Streamlit server when
it is stopped, and no page uses a deprecated Streamlit argument (each warning floods the
server log)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        out += [int(c) for c in text.split()]
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.split(")")[-1].split()[0] != "Z"  # a zombie has exited


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_sigterm_to_ms4map_app_stops_the_server(tmp_path) -> None:
    port = _free_port()
    env = {**os.environ, "MS4MAP_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ms4map", "app", "--headless", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = None
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            kids = _children(proc.pid)
            with socket.socket() as s:
                up = s.connect_ex(("127.0.0.1", port)) == 0
            if kids and up:
                server = kids[0]
                break
            assert proc.poll() is None, "ms4map app exited early"
            time.sleep(0.5)
        assert server is not None, "the Streamlit server did not start"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while _alive(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(server), "the Streamlit server is still running"
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
        if server is not None and _alive(server):
            os.kill(server, signal.SIGKILL)


@pytest.mark.parametrize("name", ["map", "screening", "investigation", "inventory", "septic"])
def test_pages_use_no_deprecated_streamlit_argument(name, tmp_path, monkeypatch) -> None:
    import logging

    import streamlit.deprecation_util as dep
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("MS4MAP_WORKSPACE", raising=False)
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    seen: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Catch()
    dep._LOGGER.addHandler(handler)
    try:
        at = AppTest.from_string(
            f"from ms4map.app import run_page\nrun_page({name!r})", default_timeout=120
        ).run()
        if name == "map":  # the feature table of a selection is a dataframe too
            at.text_input(key="map_search_query").set_value("107.12-2-11").run()
    finally:
        dep._LOGGER.removeHandler(handler)
    assert not at.exception, [e.value for e in at.exception]
    assert not seen, seen[:2]


def test_ms4map_app_hides_the_deploy_button() -> None:
    """Issue 28 item 16: the toolbar is the viewer's (no Deploy button offering public
    cloud hosting), for ``ms4map app`` and for ``streamlit run app.py`` in the checkout;
    the browser test (test_app_browser_session) sees no Deploy button."""
    import tomllib

    from ms4map.cli.app import app_command

    cmd = app_command(port=8765, headless=True)
    assert cmd[cmd.index("--client.toolbarMode") + 1] == "viewer"
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["client"]["toolbarMode"] == "viewer"
