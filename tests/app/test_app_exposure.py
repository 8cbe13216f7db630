"""Exposure by default (issue 29 item 13): the app listens on this computer, its data
folder is private, and the hillshade is not a public static file once the app has users."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest
from test_app_town import write_town

pytest.importorskip("streamlit")

ROOT = Path(__file__).resolve().parents[2]


def test_streamlit_run_listens_on_this_computer_only() -> None:
    """`streamlit run app.py` reads the checkout's config: it listened on all interfaces."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"


def test_the_data_folder_the_app_makes_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ms4map.app.upload import app_data_dir

    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "new" / "data"))
    made = app_data_dir()
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(shared))
    assert stat.S_IMODE(app_data_dir().stat().st_mode) == 0o755  # the owner's choice stays


def test_with_users_the_hillshade_is_not_a_static_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamlit as st

    import ms4map
    from ms4map.app import state
    from ms4map.records import users

    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.setattr(state, "app_dir", lambda: tmp_path / "checkout")
    ws = ms4map.open_workspace(write_town(tmp_path / "town"))
    real = st.get_option
    monkeypatch.setattr(
        st, "get_option", lambda k: True if k == "server.enableStaticServing" else real(k)
    )
    url, _ = state.hillshade_url(ws)
    assert url.startswith("/app/static/cache/hillshade_")  # the single-user app: a file
    assert list((tmp_path / "checkout" / "static" / "cache").glob("hillshade_*.png"))
    users.add_user("jsmith", "smo", "jsmith walks the creek")
    url, _ = state.hillshade_url(ws)
    assert url.startswith("data:image/png;base64,")  # only in the logged-in page
