"""The town's municipality profile in the app (``ms4map app --profile``, ``MS4MAP_PROFILE``).

Without it the app judged every town by Stillwater's law: a case opened in the app
recorded the profile ``stillwater`` (so Kingsbury's 48-hour remedy was never set), and
the screening and notice boxes started on Stillwater.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("argon2")
from test_app_records import OUTFALL, SMO, SMO_PW, _button, _login, _records, page  # noqa: E402

from ms4map.app import _script_args  # noqa: E402
from ms4map.cli import main  # noqa: E402
from ms4map.cli.app import app_command  # noqa: E402
from ms4map.records import users  # noqa: E402


def test_the_command_passes_a_checked_profile(tmp_path: Path, capsys) -> None:
    cmd = app_command("/x/town.gpkg", profile="kingsbury")
    assert cmd[cmd.index("--") :] == ["--", "/x/town.gpkg", "--profile", "kingsbury"]
    assert _script_args(["/x/town.gpkg", "--profile", "kingsbury"]) == ("/x/town.gpkg", "kingsbury")
    assert _script_args(["--profile", "/p/mytown.toml"]) == (None, "/p/mytown.toml")
    assert main(["app", "--profile", "nowhere"]) == 4  # a usage error, before any server
    assert "Unknown profile 'nowhere'" in capsys.readouterr().err
    assert main(["app", "--profile", str(tmp_path / "gone.toml")]) == 3
    assert "does not exist" in capsys.readouterr().err


def test_a_case_opened_in_the_app_records_the_towns_profile(
    app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    monkeypatch.delenv("MS4MAP_RECORDS", raising=False)
    monkeypatch.setenv("MS4MAP_PROFILE", "kingsbury")
    from ms4map.app import auth

    auth.reset_rate_limit()
    users.add_user(SMO, "smo", SMO_PW)
    at = _login(page("investigation").run(), SMO, SMO_PW)
    at.selectbox(key="inv_outfall").set_value(OUTFALL).run()
    at.selectbox(key="inv_case_origin").set_value("complaint")
    at = _button(at, "Open the case").click().run()
    assert not at.exception, [e.value for e in at.exception]
    case = _records(app_env).cases().iloc[0]
    assert case["profile"] == "kingsbury"  # it was "stillwater"
    at = _login(page("screening").run(), SMO, SMO_PW)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="screen_profile").value == "kingsbury"
