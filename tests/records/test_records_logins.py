"""Login attempts (issue 29 item 5): counted before the password check, limited per name
and client, per client and per name, shared between processes, and unlocked by
``ms4map users unlock``."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("argon2")

from ms4map.cli import main  # noqa: E402
from ms4map.records import logins, users  # noqa: E402

SMO, SMO_PW = "jsmith", "smo walks the creek"


@pytest.fixture()
def users_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MS4MAP_USERS_FILE", raising=False)
    users.add_user(SMO, "smo", SMO_PW)
    return users.users_file_path()


def test_one_name_from_one_client_is_locked_after_five(users_file: Path) -> None:
    t = 1000.0
    for i in range(logins.MAX_PER_NAME_CLIENT):
        assert logins.reserve(SMO, "10.0.0.9", users_file=users_file, now=t + i) == 0
    wait = logins.reserve(SMO, "10.0.0.9", users_file=users_file, now=t + 5)
    assert 0 < wait <= logins.LOCK_S
    # the SMO at another address is not locked out by the attacker's guesses
    assert logins.reserve(SMO, "10.0.0.2", users_file=users_file, now=t + 5) == 0
    # after the lock the attacker may try again, and the next lock is twice as long
    assert logins.reserve(SMO, "10.0.0.9", users_file=users_file, now=t + 40) == 0
    assert logins.reserve(SMO, "10.0.0.9", users_file=users_file, now=t + 41) > logins.LOCK_S


def test_one_client_trying_many_names_is_limited(users_file: Path) -> None:
    """Ten names with one password each: the eleventh attempt waits."""
    for i in range(logins.MAX_PER_CLIENT):
        assert logins.reserve(f"name{i}", "10.0.0.9", users_file=users_file, now=100.0 + i) == 0
    assert logins.reserve("name10", "10.0.0.9", users_file=users_file, now=111.0) > 0


def test_unlock_lets_the_smo_in_again(users_file: Path, capsys: pytest.CaptureFixture) -> None:
    import time

    now = time.time()
    for _i in range(logins.MAX_PER_NAME_CLIENT):
        logins.reserve(SMO, "local", users_file=users_file, now=now)
    assert logins.reserve(SMO, "local", users_file=users_file, now=now) > 0
    assert main(["users", "unlock", SMO]) == 0
    assert f"User {SMO} can log in again (10 recent login attempt(s)" in capsys.readouterr().out
    assert logins.reserve(SMO, "local", users_file=users_file, now=now) == 0


def test_parallel_logins_reach_the_password_check_at_most_five_times(
    users_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty wrong passwords sent at once: at most five are checked (the old code
    checked the lock, then the slow hash, then counted: all twenty got through)."""
    pytest.importorskip("streamlit")
    from ms4map.app import auth

    checked = []
    real = users.verify_password

    def counting(password_hash, password):
        checked.append(password)
        return real(password_hash, password)

    monkeypatch.setattr(users, "verify_password", counting)
    answers: list[tuple[bool, str]] = []
    start = threading.Barrier(20)

    def attempt(i: int) -> None:
        start.wait()
        answers.append(auth.login(SMO, f"guess number {i}"))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(answers) == 20 and not any(ok for ok, _ in answers)
    assert len(checked) == logins.MAX_PER_NAME_CLIENT
    refused = [msg for ok, msg in answers if "Too many login attempts" in msg]
    assert len(refused) == 20 - logins.MAX_PER_NAME_CLIENT
    assert f"ms4map users unlock {SMO}" in refused[0]
