"""``ms4map users`` and :mod:`ms4map.users`: the app's users file, hashed passwords."""

from __future__ import annotations

import io
import stat
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("argon2")

import ms4map
from ms4map.cli import main  # noqa: E402
from ms4map.core.errors import EXIT_USAGE, UsageError  # noqa: E402
from ms4map.records import users  # noqa: E402


@pytest.fixture()
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    return tmp_path / "data"


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def test_add_list_remove_from_the_command_line(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    _stdin(monkeypatch, "correct horse battery\n")
    assert main(["users", "add", "jsmith", "--role", "smo", "--password-stdin"]) == 0
    _stdin(monkeypatch, "guest password\n")
    assert main(["users", "add", "guest", "--role", "viewer", "--password-stdin"]) == 0
    f = data_dir / "users.toml"
    text = f.read_text()
    # never in clear; an Argon2id hash with its own salt
    assert "correct horse battery" not in text and "guest password" not in text
    data = tomllib.loads(text)
    assert data["users"]["jsmith"]["role"] == "smo"
    assert data["users"]["jsmith"]["password_hash"].startswith("$argon2id$")
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    capsys.readouterr()
    assert main(["users", "list"]) == 0
    out = capsys.readouterr().out
    assert "jsmith  smo" in out and "guest   viewer" in out and "argon2" not in out
    assert main(["users", "remove", "guest"]) == 0
    assert set(users.load_users()) == {"jsmith"}
    assert users.verify_password(
        users.load_users()["jsmith"].password_hash, "correct horse battery"
    )
    assert not users.verify_password(users.load_users()["jsmith"].password_hash, "wrong one!")


def test_refusals(data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    _stdin(monkeypatch, "short\n")
    assert main(["users", "add", "jsmith", "--role", "smo", "--password-stdin"]) == EXIT_USAGE
    assert "too short" in capsys.readouterr().err
    assert not (data_dir / "users.toml").exists()  # nothing written
    _stdin(monkeypatch, "long enough pw\n")
    assert main(["users", "add", "../evil", "--role", "smo", "--password-stdin"]) == EXIT_USAGE
    assert main(["users", "add", "a", "--role", "admin", "--password-stdin"]) == EXIT_USAGE
    _stdin(monkeypatch, "long enough pw\n")
    assert main(["users", "add", "a", "--role", "smo", "--password-stdin"]) == 0
    _stdin(monkeypatch, "another long pw\n")
    assert main(["users", "add", "a", "--role", "viewer", "--password-stdin"]) == EXIT_USAGE
    assert "exists already" in capsys.readouterr().err
    _stdin(monkeypatch, "another long pw\n")
    args = ["users", "add", "a", "--role", "viewer", "--password-stdin", "--replace"]
    assert main(args) == 0
    assert users.load_users()["a"].role == "viewer"
    assert main(["users", "remove", "nobody"]) == EXIT_USAGE
    # no terminal and no --password-stdin: says how, writes nothing
    _stdin(monkeypatch, "")
    assert main(["users", "add", "b", "--role", "smo"]) == EXIT_USAGE
    assert "--password-stdin" in capsys.readouterr().err


def test_a_short_password_is_refused_after_the_first_prompt(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Issue 28 item 16: the length is checked before asking for the password again."""
    prompts: list[str] = []

    def ask(prompt: str = "") -> str:
        prompts.append(prompt)
        return "short"

    monkeypatch.setattr("getpass.getpass", ask)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    assert main(["users", "add", "jsmith", "--role", "smo"]) == EXIT_USAGE
    assert prompts == ["Password for jsmith: "]  # not asked twice
    assert "too short" in capsys.readouterr().err
    assert not (data_dir / "users.toml").exists()
    answers = iter(["long enough pw", "long enough pw"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    assert main(["users", "add", "jsmith", "--role", "smo"]) == 0
    assert users.load_users()["jsmith"].can_log_in
    assert "every page asks for a login" in capsys.readouterr().out  # the first user


def test_users_file_env_and_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "office" / "people.toml"
    monkeypatch.setenv("MS4MAP_USERS_FILE", str(other))
    assert users.users_file_path() == other
    users.add_user("x1", "smo", "password one")
    assert "x1" in users.load_users(other)
    third = tmp_path / "third.toml"
    _stdin(monkeypatch, "password two\n")
    assert (
        main(
            [
                "users",
                "--users-file",
                str(third),
                "add",
                "y",
                "--role",
                "viewer",
                "--password-stdin",
            ]
        )
        == 0
    )
    assert list(users.load_users(third)) == ["y"]
    with pytest.raises(UsageError):
        users.hash_password("1234567")


def test_the_records_store_reads_roles_from_the_app_users_file(
    data_dir: Path, tmp_path: Path
) -> None:
    """The users file of the app is the one the records store reads roles from."""
    import shutil

    from ms4map.records import open_records

    ws = tmp_path / "town.gpkg"
    shutil.copy(ms4map.datasets.get_path("alder_falls"), ws)
    users.add_user("jsmith", "smo", "smo password")
    users.add_user("guest", "viewer", "viewer password")
    r = open_records(ws, user="jsmith")
    assert r.role == "smo"
    r.add_inspection("OF-009", "2025-06-02", flow_present=False)
    g = open_records(ws, user="guest")
    assert g.role == "viewer"
    with pytest.raises(PermissionError):
        g.add_inspection("OF-009", "2025-06-02", flow_present=False)


# -- weak passwords (issue 29 item 14) --------------------------------------------------------
@pytest.mark.parametrize(
    "password",
    ["password", "12345678", "PASSWORD1", " " * 8, "aaaaaaaaaa", "jsmithjsmith", "JSmith123"],
)
def test_weak_passwords_are_refused_with_the_rule(password: str) -> None:
    with pytest.raises(UsageError, match="Fix: choose another"):
        users.check_password(password, name="jsmith")


def test_a_passphrase_with_the_name_in_it_is_kept() -> None:
    assert users.check_password("jsmith walks the creek", name="jsmith")


def test_the_cli_refuses_a_common_password(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    _stdin(monkeypatch, "password1\n")
    assert main(["users", "add", "jsmith", "--role", "smo", "--password-stdin"]) == EXIT_USAGE
    assert "most common passwords" in capsys.readouterr().err
    assert not (data_dir / "users.toml").exists()


# -- concurrent changes (issue 29 item 6) -----------------------------------------------------
def _add_in_a_process(args: tuple[str, str]) -> str:
    path, name = args
    from ms4map.records import users as u

    u.add_user(name, "viewer", f"{name} walks the creek", path=path)
    return name


def test_parallel_adds_keep_every_user(tmp_path: Path) -> None:
    """Six processes add a user each at once: all six are kept (the old code kept 1-2:
    each read the file, added its user and replaced the file with its own copy)."""
    from concurrent.futures import ProcessPoolExecutor

    path = tmp_path / "users.toml"
    names = [f"user{i}" for i in range(6)]
    with ProcessPoolExecutor(2) as pool:
        done = list(pool.map(_add_in_a_process, [(str(path), n) for n in names]))
    assert sorted(done) == names
    assert sorted(users.load_users(path)) == names


def test_an_add_racing_a_removal_does_not_bring_the_removed_user_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A removal lands while an add hashes its password: the add reads the file again
    under the lock, so the removed SMO stays removed."""
    path = tmp_path / "users.toml"
    users.add_user("boss", "smo", "boss walks the creek", path=path)
    real_hash = users.hash_password

    def slow_hash(password: str, *, name: str | None = None) -> str:
        users.remove_user("boss", path=path)  # lands while the add is busy
        return real_hash(password, name=name)

    monkeypatch.setattr(users, "hash_password", slow_hash)
    users.add_user("clerk", "viewer", "clerk walks the creek", path=path)
    assert sorted(users.load_users(path)) == ["clerk"]
