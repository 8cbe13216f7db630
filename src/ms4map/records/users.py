"""The app's local users: names, roles and Argon2 password hashes in a TOML file.

No identity provider and no internet: a town office keeps a small users file in the
app's data folder (``MS4MAP_DATA_DIR/users.toml``; ``MS4MAP_USERS_FILE`` names another
file).  It is the same file the records store reads roles from
(:func:`ms4map.records.open_records`)::

    [users.jsmith]
    role = "smo"
    password_hash = "$argon2id$v=19$m=65536,t=3,p=4$..."

Passwords are never stored: only their Argon2id hash (``argon2-cffi``, the ``app``
extra), which also carries its own salt and cost.  Managed with ``ms4map users add``,
``ms4map users list`` and ``ms4map users remove``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
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


def check_password(password: str) -> str:
    """``password`` when it is long enough (at least :data:`MIN_PASSWORD_LENGTH`
    characters); raises :class:`~ms4map.core.errors.UsageError` otherwise."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LENGTH:
        raise UsageError(
            f"The password is too short: at least {MIN_PASSWORD_LENGTH} characters. "
            "Fix: choose a longer one (a passphrase of a few words is good)."
        )
    return password


def hash_password(password: str) -> str:
    """The Argon2id hash of ``password`` (salted; refuses passwords under 8 characters)."""
    return _hasher().hash(check_password(password))


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
    p = Path(path).expanduser() if path is not None else users_file_path()
    users = load_users(p)
    if name in users and not replace:
        raise UsageError(
            f"User '{name}' exists already. Fix: ms4map users remove {name} first, or "
            "give --replace to change the role or the password."
        )
    users[name] = User(name, role, hash_password(password))
    _write(p, users)
    return users[name]


def remove_user(name: str, *, path: str | Path | None = None) -> None:
    """Remove a user (their records keep their name: the audit trail is never changed).

    Raises
    ------
    UsageError
        No such user.
    """
    p = Path(path).expanduser() if path is not None else users_file_path()
    users = load_users(p)
    if name not in users:
        raise UsageError(f"No user '{name}' in {p}. Fix: see ms4map users list.")
    del users[name]
    _write(p, users)


def list_users(path: str | Path | None = None) -> list[User]:
    """The users, sorted by name."""
    return sorted(load_users(path).values(), key=lambda u: u.name)
