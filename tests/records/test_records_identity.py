"""Who records (issue 29 item 7): the role is set once by the store, a users file's
list is kept, and a name cannot carry control characters."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_records import make_town

import ms4map.records as rec
from ms4map.cli import main
from ms4map.core.errors import EXIT_USAGE, UsageError

pytest.importorskip("argon2")


@pytest.fixture()
def town(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    (tmp_path / "town").mkdir()
    return make_town(tmp_path / "town")


@pytest.fixture()
def with_users(town: Path) -> Path:
    rec.users.add_user("jsmith", "smo", "jsmith walks the creek")
    rec.users.add_user("guest", "viewer", "guest reads the map")
    return town


def _inspect(town: Path, *extra: str) -> int:
    return main(["inspect", str(town), "--outfall", "OF-1", "--date", "2025-06-02", *extra])


def test_a_viewer_cannot_become_the_smo_by_assignment(with_users: Path) -> None:
    r = rec.open_records(with_users, user="jsmith")
    r.add_inspection("OF-1", "2025-06-01", flow_present=False)  # the store exists now
    g = rec.open_records(with_users, user="guest")
    assert g.role == "viewer"
    with pytest.raises(AttributeError):
        g.role = "smo"
    with pytest.raises(AttributeError):
        g.user = "jsmith"
    with pytest.raises(PermissionError, match="viewer role"):
        g.add_inspection("OF-2", "2025-06-02", flow_present=False)


def test_with_a_users_file_an_unlisted_name_cannot_record(
    with_users: Path, capsys: pytest.CaptureFixture
) -> None:
    assert _inspect(with_users, "--by", "mallory") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "User 'mallory' is not in the users file" in err and "ms4map users list" in err
    assert not rec.records_path(with_users).exists()  # nothing written
    assert _inspect(with_users, "--by", "jsmith") == 0


def test_an_empty_users_file_is_not_a_way_round_the_list(
    with_users: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    assert _inspect(with_users, "--by", "mallory", "--users-file", "/dev/null") == EXIT_USAGE
    assert "lists no users" in capsys.readouterr().err
    monkeypatch.setenv("MS4MAP_USERS_FILE", "")
    assert _inspect(with_users, "--by", "mallory") == EXIT_USAGE
    assert "MS4MAP_USERS_FILE is set but empty" in capsys.readouterr().err
    assert not rec.records_path(with_users).exists()


@pytest.mark.parametrize("name", ["jsmith\nsmo approved", "js\tmith", "x" * 65])
def test_a_name_with_control_characters_is_refused(town: Path, name: str) -> None:
    with pytest.raises(UsageError, match="control characters"):
        rec.open_records(town, user=name)


def test_without_a_users_file_the_name_is_recorded_as_given(town: Path) -> None:
    r = rec.open_records(town, user="Jane Doe")
    r.add_inspection("OF-1", "2025-06-01", flow_present=False)
    assert r.audit()["created_by"].tolist() == ["Jane Doe"]
