"""The app's local users: names, roles and Argon2 password hashes in a TOML file.

No identity provider and no internet: a town office keeps a small users file in the
app's data folder (``MS4MAP_DATA_DIR/users.toml``; ``MS4MAP_USERS_FILE`` names another
file).  It is the same file the records store reads roles from
(:func:`ms4map.records.open_records`)::

    [users.jsmith]
    role = "smo"
    password_hash = "$argon2id$v=19$m=65536,t=3,p=4$..."

Passwords are never stored: only their Argon2id hash (``argon2-cffi``, the ``app``
extra), which also carries its own salt and cost.  A password must be at least
:data:`MIN_PASSWORD_LENGTH` characters, not one of the most common passwords, not blank,
and not the user's name (:func:`check_password`).  Managed with ``ms4map users add``,
``ms4map users list``, ``ms4map users remove`` and ``ms4map users unlock``.

Changes are safe when several run at once (two ``users add`` in two terminals, an add
racing a removal): each takes the file's lock (``users.toml.lock`` beside it, the
``filelock`` package), reads the file again, and replaces it atomically.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import DataError, InputOpenError, UsageError

__all__ = [
    "MIN_PASSWORD_LENGTH",
    "ROLES",
    "USERS_FILE_NAME",
    "User",
    "add_user",
    "check_password",
    "hash_password",
    "list_users",
    "locked",
    "load_users",
    "remove_user",
    "users_file_path",
    "verify_password",
]

#: ``smo`` (the Stormwater Management Officer) records and decides; ``viewer`` reads.
ROLES = ("smo", "viewer")
USERS_FILE_NAME = "users.toml"
MIN_PASSWORD_LENGTH = 8
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Seconds a change waits for another change of the users file before giving up.
LOCK_TIMEOUT_S = 30.0
#: The most common passwords of the public breach lists (those of 8 characters or more,
#: which the length rule lets through), refused whatever their case.
COMMON_PASSWORDS = frozenset(
    """
    password password1 password12 password123 passw0rd p@ssw0rd p@ssword 12345678
    123456789 1234567890 0123456789 87654321 11111111 00000000 12341234 11223344
    123123123 qwertyuiop qwerty123 qwertyui 1q2w3e4r 1qaz2wsx zaq12wsx asdfghjk
    asdfasdf iloveyou sunshine princess football baseball welcome1 welcome123
    abcd1234 abc12345 abcdefgh letmein1 trustno1 superman batman123 starwars
    whatever computer internet michelle jennifer jordan23 charlie1 dragon12
    monkey12 master12 shadow12 changeme changeme1 administrator admin123 admin1234
    stormwater municipal ms4map123 newyork1 liverpool chocolate
    """.split()
)


@dataclass(frozen=True)
class User:
    """One entry of the users file."""

    name: str
    role: str
    password_hash: str | None

    @property
    def can_log_in(self) -> bool:
        return bool(self.password_hash)


def users_file_path() -> Path:
    """``$MS4MAP_USERS_FILE``, else ``users.toml`` in the app's data folder.

    The data folder is ``MS4MAP_DATA_DIR`` (default ``~/.local/share/ms4map``); it is
    not created here.
    """
    env = os.environ.get("MS4MAP_USERS_FILE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("MS4MAP_DATA_DIR")
    d = Path(base).expanduser() if base else Path.home() / ".local" / "share" / "ms4map"
    return d / USERS_FILE_NAME


def _hasher():
    try:
        from argon2 import PasswordHasher
    except ModuleNotFoundError:  # pragma: no cover - argon2-cffi is in the app extra
        raise UsageError(
            "Passwords need argon2-cffi. Fix: python -m pip install -e '.[app]' "
            "(or pip install argon2-cffi)."
        ) from None
    return PasswordHasher()


def check_password(password: str, *, name: str | None = None) -> str:
    """``password`` when it is good enough to keep owners' names and enforcement records.

    Good enough: at least :data:`MIN_PASSWORD_LENGTH` characters, not blank, not one
    character repeated, not in :data:`COMMON_PASSWORDS`, and (given ``name``) neither
    the user's name nor made of it (``jsmithjsmith``).

    Raises
    ------
    UsageError
        The rule the password breaks and what to choose instead.
    """
    fix = "Fix: choose another (a passphrase of a few unrelated words is good)."
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise UsageError(
            f"The password is too short: at least {MIN_PASSWORD_LENGTH} characters. "
            "Fix: choose a longer one (a passphrase of a few words is good)."
        )
    bare = password.strip().lower()
    if not bare or len(set(bare)) == 1:
        raise UsageError(f"The password is blank or one character repeated. {fix}")
    if bare in COMMON_PASSWORDS:
        raise UsageError(f"The password is one of the most common passwords. {fix}")
    if name and name.lower() in bare and len(bare.replace(name.lower(), "")) < 4:
        raise UsageError(f"The password is made of the user name '{name}'. {fix}")
    return password


def hash_password(password: str, *, name: str | None = None) -> str:
    """The Argon2id hash of ``password`` (salted; refuses weak passwords, see
    :func:`check_password`)."""
    return _hasher().hash(check_password(password, name=name))


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether ``password`` matches the stored hash (False for no hash or a bad hash)."""
    if not password_hash or not isinstance(password, str):
        return False
    from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

    try:
        return bool(_hasher().verify(password_hash, password))
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def check_name(name: str) -> str:
    """A user name: 1-64 letters, digits, ``.``, ``_``, ``-`` (starting with a letter/digit)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise UsageError(
            f"User name {name!r} is not allowed. Fix: 1-64 letters, digits, '.', '_' or "
            "'-', starting with a letter or digit (e.g. jsmith)."
        )
    return name


def load_users(path: str | Path | None = None) -> dict[str, User]:
    """The users of the file (empty when the file does not exist).

    Raises
    ------
    DataError
        The file is not valid TOML, or a user has an unknown role.
    """
    p = Path(path).expanduser() if path is not None else users_file_path()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputOpenError(f"Users file '{p}' cannot be read: {exc}.") from None
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"Users file '{p}' is not valid TOML: {exc}.") from None
    out: dict[str, User] = {}
    for name, entry in (data.get("users") or {}).items():
        entry = entry if isinstance(entry, dict) else {"role": entry}
        role = entry.get("role", "viewer")
        if role not in ROLES:
            raise DataError(
                f"Users file '{p.name}': users.{name}.role = {role!r}. Fix: select from "
                f"{list(ROLES)}."
            )
        h = entry.get("password_hash")
        out[str(name)] = User(str(name), str(role), str(h) if h else None)
    return out


def _path(path: str | Path | None) -> Path:
    return Path(path).expanduser() if path is not None else users_file_path()


@contextmanager
def locked(path: str | Path | None = None) -> Iterator[Path]:
    """Hold the users file's lock (``<file>.lock``) while reading and changing it.

    Yields the users file's path. Waits up to :data:`LOCK_TIMEOUT_S` seconds for another
    change to finish.

    Raises
    ------
    UsageError
        Another change held the lock for too long.
    """
    from filelock import FileLock, Timeout

    p = _path(path)
    if not p.parent.exists():  # the data folder: private when ms4map makes it
        p.parent.parent.mkdir(parents=True, exist_ok=True)
        p.parent.mkdir(mode=0o700, exist_ok=True)
    lock = FileLock(str(p) + ".lock", timeout=LOCK_TIMEOUT_S)
    try:
        with lock:
            yield p
    except Timeout:
        raise UsageError(
            f"The users file '{p}' is being changed by another program (its lock "
            f"'{p.name}.lock' was held for {LOCK_TIMEOUT_S:.0f} s). Fix: try again; if no "
            "ms4map users command is running, remove that .lock file."
        ) from None


def _write(p: Path, users: dict[str, User]) -> None:
    lines = [
        "# ms4map users (ms4map users add/list/remove). Passwords are Argon2id hashes;",
        "# never edit a hash by hand. Roles: smo (records and decides), viewer (reads).",
        "",
    ]
    for u in sorted(users.values(), key=lambda u: u.name):
        lines.append(f"[users.{json.dumps(u.name)}]")
        lines.append(f"role = {json.dumps(u.role)}")
        if u.password_hash:
            lines.append(f"password_hash = {json.dumps(u.password_hash)}")
        lines.append("")
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".users.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.chmod(tmp, 0o600)  # the hashes are for the office, not for everyone
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_user(
    name: str, role: str, password: str, *, path: str | Path | None = None, replace: bool = False
) -> User:
    """Add (or with ``replace=True`` change) a user; returns the entry written.

    Raises
    ------
    UsageError
        A bad name, role or password, or a user that exists already (without ``replace``).
    """
    check_name(name)
    if role not in ROLES:
        raise UsageError(f"Role {role!r}: select from {list(ROLES)}.")
    hashed = hash_password(password, name=name)  # slow: before taking the lock
    with locked(path) as p:
        users = load_users(p)  # read again under the lock: another change may have landed
        if name in users and not replace:
            raise UsageError(
                f"User '{name}' exists already. Fix: ms4map users remove {name} first, or "
                "give --replace to change the role or the password."
            )
        users[name] = User(name, role, hashed)
        _write(p, users)
    return users[name]


def remove_user(name: str, *, path: str | Path | None = None) -> None:
    """Remove a user (their records keep their name: the audit trail is never changed).

    Raises
    ------
    UsageError
        No such user.
    """
    with locked(path) as p:
        users = load_users(p)
        if name not in users:
            raise UsageError(f"No user '{name}' in {p}. Fix: see ms4map users list.")
        del users[name]
        _write(p, users)


def list_users(path: str | Path | None = None) -> list[User]:
    """The users, sorted by name."""
    return sorted(load_users(path).values(), key=lambda u: u.name)
