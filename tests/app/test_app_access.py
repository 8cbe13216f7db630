"""AppTest: who may change the data (issue 28 item 10) and what survives a reload (item 5).

Item 10: with users, only the SMO uploads, removes uploads and opens server paths, and
only inside the allowed folders (the app's data folder and ``MS4MAP_ALLOWED_PATHS``;
``..`` and symlinks are followed before the check).  Without users the app stays the
single-user local app.  Item 5: the login token (signed, expiring, refused after logout,
removal or a new password) and the workspace the address names, reopened by a new
session or said to be lost, never replaced by the demo.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")
from streamlit.testing.v1 import AppTest  # noqa: E402

import ms4map
from ms4map.records import users  # noqa: E402

TIMEOUT = 180
SMO, SMO_PW = "jsmith", "smo password 1"
VIEWER, VIEWER_PW = "guest", "viewer password 1"
DEMO = Path(ms4map.datasets.get_path("alder_falls"))


@pytest.fixture()
def app_env(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.delenv("MS4MAP_RECORDS", raising=False)
    monkeypatch.delenv("MS4MAP_ALLOWED_PATHS", raising=False)
    from ms4map.app import auth

    auth.reset_rate_limit()
    app_env.mkdir(parents=True, exist_ok=True)
    return app_env


@pytest.fixture()
def with_users(app_env: Path) -> Path:
    users.add_user(SMO, "smo", SMO_PW)
    users.add_user(VIEWER, "viewer", VIEWER_PW)
    return app_env


def data_page(user: str | None = None, cookie: str | None = None) -> AppTest:
    """The Data page run as ``user`` (the session state a login leaves), or with the
    login cookie a reload sends."""
    lines = ["import streamlit as st", "from ms4map.app import auth, run_page"]
    if user:
        lines.append(f"st.session_state['ms4map_auth'] = {{'user': {user!r}}}")
    if cookie:
        lines.append(f"auth._cookie_token = lambda: {cookie!r}")
    lines.append("run_page('data')")
    return AppTest.from_string("\n".join(lines), default_timeout=TIMEOUT)


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [e.value for e in at.warning]
    parts += [e.value for e in at.info] + [e.value for e in at.success]
    return "\n".join(str(p) for p in parts).replace("\\", "")


def _demo_copy(folder: Path) -> Path:
    """The demo GeoPackage and its DEM copied into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for p in DEMO.parent.glob(DEMO.stem + "*"):
        shutil.copy(p, folder / p.name)
    return folder / DEMO.name


def _open(at: AppTest, path: str | Path) -> AppTest:
    at.text_input(key="data_path").set_value(str(path))
    return at.button(key="data_open").click().run()


# -- item 10: viewers read -------------------------------------------------------------
def test_a_viewer_cannot_remove_upload_or_open_a_server_path(with_users: Path) -> None:
    from ms4map.app.upload import store_upload

    geo = b'{"type":"FeatureCollection","features":[]}'
    up = store_upload("lots.geojson", geo)
    inside = _demo_copy(with_users / "town")
    at = data_page(VIEWER).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.button(key=f"data_remove_{up.folder.name}").disabled
    assert at.file_uploader(key="data_upload").disabled
    assert at.button(key="data_open").disabled
    assert "Only the SMO removes uploads" in _texts(at)
    assert "Only the SMO opens files on the server" in _texts(at)
    # the SMO's page, then the SMO is made a viewer before pressing: the server reads
    # the role again on the press, and nothing is removed or opened
    at = data_page(SMO).run()
    assert not at.button(key=f"data_remove_{up.folder.name}").disabled
    users.add_user(SMO, "viewer", SMO_PW, replace=True)
    at.button(key=f"data_remove_{up.folder.name}").click().run()
    assert up.folder.exists()
    assert at.button(key=f"data_remove_{up.folder.name}").disabled
    users.add_user(SMO, "smo", SMO_PW, replace=True)
    at = data_page(SMO).run()
    at.text_input(key="data_path").set_value(str(inside)).run()
    users.add_user(SMO, "viewer", SMO_PW, replace=True)
    at.button(key="data_open").click().run()
    assert "data_candidate" not in at.session_state
    assert at.button(key="data_open").disabled
    forced = AppTest.from_string(  # the check the press runs, called for a viewer
        "import streamlit as st\nfrom ms4map.app import auth\n"
        f"st.session_state['ms4map_auth'] = {{'user': {VIEWER!r}}}\n"
        "try:\n    auth.require_data_manager('Opening a file on the server')\n"
        "except PermissionError as exc:\n    st.session_state['refused'] = str(exc)\n"
    ).run()  # (caught in the script: the browser is told no exception's details)
    refused = forced.session_state["refused"]
    assert "Opening a file on the server is refused" in refused
    assert "viewers only read" in refused


def test_the_smo_removes_and_opens_inside_the_data_folder_only(
    with_users: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ms4map.app.upload import store_upload

    up = store_upload("lots.geojson", b'{"type":"FeatureCollection","features":[]}')
    at = data_page(SMO).run()
    assert not at.button(key=f"data_remove_{up.folder.name}").disabled
    assert not at.file_uploader(key="data_upload").disabled
    # outside the data folder: the demo's own file, a `..` way out, a symlink out
    (with_users / "link.gpkg").symlink_to(DEMO)
    for path in (DEMO, with_users / ".." / "out.gpkg", with_users / "link.gpkg"):
        if path.name == "out.gpkg":
            shutil.copy(DEMO, tmp_path / "out.gpkg")
        at = _open(data_page(SMO).run(), path)
        assert "data_candidate" not in at.session_state, path
        errors = " ".join(e.value for e in at.error).replace("\\", "")
        assert "is refused: the app opens files only inside" in errors, (path, errors)
        assert str(with_users.resolve()) in errors
        assert "MS4MAP_ALLOWED_PATHS" in errors
    # inside: it opens
    at = _open(data_page(SMO).run(), _demo_copy(with_users / "town"))
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["data_candidate"]["path"] == str(
        with_users.resolve() / "town/demo.gpkg"
    )
    # a folder the admin allows
    monkeypatch.setenv("MS4MAP_ALLOWED_PATHS", f"/nowhere{os.pathsep}{DEMO.parent}")
    at = _open(data_page(SMO).run(), DEMO)
    assert at.session_state["data_candidate"]["path"] == str(DEMO.resolve())


def test_a_manifest_cannot_reach_out_of_the_data_folder(with_users: Path) -> None:
    manifest = with_users / "town.toml"
    manifest.write_text(f'[layers]\nparcels = "{DEMO}::parcels"\n')
    at = _open(data_page(SMO).run(), manifest)
    assert "data_candidate" not in at.session_state
    errors = " ".join(e.value for e in at.error).replace("\\", "")
    assert "is refused" in errors and str(DEMO) in errors, errors


def test_without_users_the_local_app_manages_its_data(app_env: Path) -> None:
    from ms4map.app.upload import store_upload

    up = store_upload("lots.geojson", b'{"type":"FeatureCollection","features":[]}')
    at = data_page().run()
    assert not at.button(key=f"data_remove_{up.folder.name}").disabled
    at.button(key=f"data_remove_{up.folder.name}").click().run()
    assert not up.folder.exists()
    at = _open(data_page().run(), _demo_copy(app_env / "town"))
    assert "data_candidate" in at.session_state


# -- item 5: the login token -----------------------------------------------------------
def test_the_login_token_is_signed_expires_and_is_revoked(with_users: Path) -> None:
    import time

    from ms4map.app import auth

    smo = users.load_users()[SMO]
    token = auth.make_token(smo)
    held = auth.verify_token(token)
    assert held and held["user"] == SMO
    secret = with_users / "auth" / "session_secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    payload, sig = token.split(".")
    forged = auth.make_token(users.load_users()[VIEWER]).split(".")[0]
    assert auth.verify_token(f"{forged}.{sig}") is None  # another payload, this signature
    assert auth.verify_token(token[:-2] + ("AA" if token[-2:] != "AA" else "BB")) is None
    assert auth.verify_token(token, now=time.time() + 13 * 3600) is None  # expired (12 h)
    auth._revoke(held["sid"], held["exp"])  # what logging out does
    assert auth.verify_token(token) is None
    other = auth.make_token(smo)
    assert auth.verify_token(other)  # another login of the same user is not affected
    users.add_user(SMO, "smo", "a new password 2", replace=True)
    assert auth.verify_token(other) is None  # a new password
    again = auth.make_token(users.load_users()[SMO])
    users.remove_user(SMO)
    assert auth.verify_token(again) is None  # removed


def test_a_reload_with_the_cookie_keeps_the_login_and_logout_ends_it(with_users: Path) -> None:
    from ms4map.app import auth

    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('data')", default_timeout=TIMEOUT
    ).run()
    at.text_input(key="auth_user").set_value(SMO)
    at.text_input(key="auth_password").set_value(SMO_PW)
    at = [b for b in at.button if b.label == "Log in"][0].click().run()
    held = at.session_state["ms4map_auth"]
    token = held["token"]
    assert auth.verify_token(token)["user"] == SMO
    # the reload: a new session, with the cookie the page set
    again = data_page(cookie=token).run()
    assert not again.exception, [e.value for e in again.exception]
    assert f"Logged in as **{SMO}** (smo)." in _texts(again)
    assert "Data" in [t.value for t in again.title]
    again.button(key="auth_logout").click().run()
    assert [t.value for t in again.title] == ["ms4map: log in"]
    after = data_page(cookie=token).run()  # reload after logging out: logged out
    assert [t.value for t in after.title] == ["ms4map: log in"]
    # the first session (another tab with the same login) is logged out too
    at.run()
    assert [t.value for t in at.title] == ["ms4map: log in"]


def test_a_removed_user_is_logged_out_by_the_cookie(with_users: Path) -> None:
    from ms4map.app import auth

    token = auth.make_token(users.load_users()[SMO])
    assert "Logged in as" in _texts(data_page(cookie=token).run())
    users.remove_user(SMO)
    at = data_page(cookie=token).run()
    assert [t.value for t in at.title] == ["ms4map: log in"]


# -- item 5: the workspace survives a reload -------------------------------------------
def test_the_workspace_in_use_comes_back_after_a_reload(app_env: Path) -> None:
    from ms4map.app import records_ui

    town = _demo_copy(app_env / "town")
    at = _open(data_page().run(), town)
    at.button(key="data_use").click().run()
    wid = at.query_params["workspace"]
    assert at.session_state["ms4map_workspace"]["path"] == str(town.resolve())
    reload = data_page()
    reload.query_params["workspace"] = wid
    reload.run()
    assert not reload.exception, [e.value for e in reload.exception]
    assert reload.session_state["ms4map_workspace"]["path"] == str(town.resolve())
    assert f"**Current workspace:** `{town.resolve()}`" in _texts(reload)
    assert not reload.error, [e.value for e in reload.error]
    # a workspace that cannot be reopened is said, and the demo is not used in its place
    lost = data_page()
    lost.query_params["workspace"] = "0123456789abcdef"
    lost.run()
    assert not lost.exception, [e.value for e in lost.exception]
    assert "ms4map_workspace" not in lost.session_state
    assert any("cannot be opened again" in e.value for e in lost.error)
    script = (
        "import streamlit as st\nfrom ms4map.app import records_ui, state\n"
        "st.session_state['ms4map_workspace_lost'] = {'id': 'x', 'why': 'gone'}\n"
        "st.write(repr(records_ui.records_location()), repr(state.workspace(show_error=False)))"
    )
    probe = AppTest.from_string(script, default_timeout=TIMEOUT).run()
    assert [m.value for m in probe.markdown] == ["None None"], records_ui
    lost.button(key="data_demo").click().run()  # back to the demo: said by the user
    assert "workspace" not in lost.query_params
    assert "**Current workspace:** `demo`" in _texts(lost)


def test_the_readme_says_what_users_and_settings_do() -> None:
    """Issue 28 item 17: the README says the first user puts the whole app behind a login,
    and names the settings the code reads (session hours, allowed folders)."""
    from ms4map.app import auth, state

    repo = Path(__file__).resolve().parents[2]
    readme = " ".join((repo / "README.md").read_text(encoding="utf-8").split())
    app_doc = " ".join((repo / "docs" / "app.md").read_text(encoding="utf-8").split())
    assert "behind a login" in readme
    for text in (readme, app_doc):
        assert state.ALLOWED_PATHS_ENV in text and auth.SESSION_HOURS_ENV in text
    assert "Adding the first user puts the whole app behind a login" in app_doc


@pytest.mark.parametrize("name", ["investigation", "cases", "inventory", "map"])
def test_a_lost_workspace_offers_no_recording_on_the_demo(with_users: Path, name: str) -> None:
    """The SMO reloads a page whose workspace cannot be reopened: the page says so and
    offers no form; nothing is written to the demo's records."""
    at = AppTest.from_string(
        "import streamlit as st\nfrom ms4map.app import run_page\n"
        f"st.session_state['ms4map_auth'] = {{'user': {SMO!r}}}\n"
        f"run_page({name!r})",
        default_timeout=TIMEOUT,
    )
    at.query_params["workspace"] = "0123456789abcdef"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("cannot be opened again" in e.value for e in at.error), name
    labels = [b.label for b in at.button]
    assert "Save the inspection" not in labels and "Open the case" not in labels, labels
    assert not (with_users / "records").exists()
