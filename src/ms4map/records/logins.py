"""Login attempts: the rate limit every app session and ``ms4map users unlock`` share.

The app counts each login attempt **before** it checks the password (so that twenty
attempts sent at once cannot all reach the check) in a small JSON file beside the users
file, ``<users file folder>/auth/login_attempts.json``, changed under its lock
(``filelock``) by every server process and by ``ms4map users unlock``.  Three limits,
each over :data:`WINDOW_S` seconds:

- one name from one client (browser address): :data:`MAX_PER_NAME_CLIENT` attempts;
- one client, any names: :data:`MAX_PER_CLIENT` attempts (ten names, one password each);
- one name, all clients: :data:`MAX_PER_NAME` attempts (a guess spread over addresses).

A limit reached locks its key for :data:`LOCK_S` seconds, doubling with each further
attempt up to :data:`MAX_LOCK_S`.  A wrong password from someone else's address
therefore does not lock the SMO out at theirs unless it comes in the hundreds; when it
does, ``ms4map users unlock NAME`` on the server lets the SMO in again.  A successful
login forgets the attempts of its name at its client.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from ..core.errors import UsageError
from .users import users_file_path

__all__ = [
    "LOCK_S",
    "MAX_LOCK_S",
    "MAX_PER_CLIENT",
    "MAX_PER_NAME",
    "MAX_PER_NAME_CLIENT",
    "WINDOW_S",
    "attempts_path",
    "forget",
    "reserve",
    "succeeded",
    "unlock",
]

WINDOW_S = 900.0
MAX_PER_NAME_CLIENT = 5
MAX_PER_CLIENT = 10
MAX_PER_NAME = 50
LOCK_S = 30.0
MAX_LOCK_S = 900.0
_LIMITS = {"nc": MAX_PER_NAME_CLIENT, "c": MAX_PER_CLIENT, "n": MAX_PER_NAME}


def attempts_path(users_file: str | Path | None = None) -> Path:
    """The attempts file of a users file (default: the app's, see
    :func:`ms4map.records.users.users_file_path`)."""
    p = Path(users_file).expanduser() if users_file is not None else users_file_path()
    return p.parent / "auth" / "login_attempts.json"


def _keys(name: str, client: str) -> dict[str, str]:
    return {"nc": f"nc:{name}|{client}", "c": f"c:{client}", "n": f"n:{name}"}


def _load(p: Path, now: float) -> dict[str, list[float]]:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out = {}
    for key, times in (data if isinstance(data, dict) else {}).items():
        kept = [float(t) for t in times if isinstance(t, int | float) and now - t < WINDOW_S]
        if kept:
            out[str(key)] = kept
    return out


def _save(p: Path, data: dict[str, list[float]]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".attempts.", dir=p.parent)  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _change(users_file: str | Path | None):
    from filelock import FileLock

    p = attempts_path(users_file)
    p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return p, FileLock(str(p) + ".lock", timeout=30)


def _wait(times: list[float], limit: int, now: float) -> float:
    extra = len(times) - limit
    if extra < 0:
        return 0.0
    until = times[-1] + min(MAX_LOCK_S, LOCK_S * 2**extra)
    return max(0.0, until - now)


def reserve(
    name: str, client: str, *, users_file: str | Path | None = None, now: float | None = None
) -> float:
    """Count one attempt of ``name`` from ``client`` before its password is checked.

    Returns
    -------
    float
        0 when the attempt may go on (it is counted), else the seconds to wait (it is not
        counted: a refused attempt does not lengthen the lock).
    """
    now = time.time() if now is None else now
    p, lock = _change(users_file)
    with lock:
        data = _load(p, now)
        keys = _keys(name, client)
        wait = max(_wait(data.get(k, []), _LIMITS[kind], now) for kind, k in keys.items())
        if wait > 0:
            return wait
        for k in keys.values():
            data.setdefault(k, []).append(now)
        _save(p, data)
    return 0.0


def succeeded(name: str, client: str, *, users_file: str | Path | None = None) -> None:
    """A right password: forget the attempts of ``name`` at ``client``, and take this
    attempt off the client's and the name's counts (their other attempts stay, so a right
    password cannot reset an attacker's count elsewhere)."""
    p, lock = _change(users_file)
    with lock:
        data = _load(p, time.time())
        keys = _keys(name, client)
        data.pop(keys["nc"], None)
        for k in (keys["c"], keys["n"]):
            if data.get(k):
                data[k].pop()
                if not data[k]:
                    del data[k]
        _save(p, data)


def unlock(name: str, *, users_file: str | Path | None = None) -> int:
    """Forget every attempt of ``name`` (``ms4map users unlock``); returns how many.

    Raises
    ------
    UsageError
        The attempts file cannot be changed (its folder is not writable).
    """
    try:
        p, lock = _change(users_file)
        with lock:
            data = _load(p, time.time())
            gone = [k for k in data if k == f"n:{name}" or k.startswith(f"nc:{name}|")]
            count = sum(len(data.pop(k)) for k in gone)
            _save(p, data)
    except OSError as exc:
        raise UsageError(
            f"The login attempts '{attempts_path(users_file)}' cannot be changed: {exc}. Fix: "
            "run the command as the user the app runs as."
        ) from None
    return count


def forget(*, users_file: str | Path | None = None) -> None:
    """Forget every attempt (tests; an administrator starting afresh)."""
    p, lock = _change(users_file)
    with lock:
        _save(p, {})
