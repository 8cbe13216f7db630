"""Who is using the app: the login form, the session's user and role, the one write check.

With a users file (``ms4map users add NAME --role smo|viewer``; see :mod:`ms4map.records.users`)
the app shows a login form before any page; the session then carries the user and the
role.  Without one the app runs and every records page is read-only, saying how to add
a user.  Every write of the records goes through :func:`require_smo`, on the server,
which reads the users file again (a user removed or made a viewer since logging in can
no longer write); hiding the buttons is only the visible half.

Wrong passwords are rate-limited per user name, in the server process (shared by every
browser session): after :data:`MAX_FAILURES` failures within :data:`FAIL_WINDOW_S`
seconds the name is locked for :data:`LOCK_S` seconds, doubling with each further
failure (at most :data:`MAX_LOCK_S`).  An unknown name costs the same hash check as a
known one and gets the same message.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import streamlit as st

from ..records import users

__all__ = [
    "FAIL_WINDOW_S",
    "LOCK_S",
    "MAX_FAILURES",
    "MAX_LOCK_S",
    "Session",
    "can_edit",
    "current",
    "has_users",
    "login",
    "login_gate",
    "logout",
    "require_smo",
    "reset_rate_limit",
]

SESSION_KEY = "ms4map_auth"
MAX_FAILURES = 5
FAIL_WINDOW_S = 900.0
LOCK_S = 30.0
MAX_LOCK_S = 900.0
ADD_USER_HINT = "ms4map users add NAME --role smo"

_LOCK = threading.Lock()
_FAILS: dict[str, list[float]] = {}
_LOCKED_UNTIL: dict[str, float] = {}
_DUMMY_HASH: list[str] = []


@dataclass(frozen=True)
class Session:
    """The session's user: ``user`` None until logged in; ``role`` ``smo``/``viewer``."""

    user: str | None
    role: str
    logged_in: bool
    users_file: bool  # a users file with at least one user exists

    @property
    def name(self) -> str:
        return self.user or "anonymous"


def has_users() -> bool:
    """Whether a users file with at least one user who can log in exists."""
    try:
        return any(u.can_log_in for u in users.load_users().values())
    except Exception:  # noqa: BLE001 - a broken file: shown by login_gate
        return True


def current() -> Session:
    """The session's user and role, checked against the users file as it is now."""
    if not has_users():
        return Session(None, "viewer", False, False)
    name = (st.session_state.get(SESSION_KEY) or {}).get("user")
    if not name:
        return Session(None, "viewer", False, True)
    try:
        u = users.load_users().get(name)
    except Exception:  # noqa: BLE001
        u = None
    if u is None or not u.can_log_in:  # removed since logging in
        st.session_state.pop(SESSION_KEY, None)
        return Session(None, "viewer", False, True)
    return Session(u.name, u.role, True, True)


def can_edit() -> bool:
    """Whether this session may write records (only to decide what to show)."""
    return current().role == "smo"


def require_smo(what: str = "this change") -> Session:
    """The server-side check every records write goes through.

    Returns the session when its user is logged in and the users file gives them the
    ``smo`` role now; raises :class:`PermissionError` otherwise (a viewer, nobody
    logged in, or no users file at all).
    """
    s = current()
    if not s.users_file:
        raise PermissionError(
            f"{what} is refused: the app has no users, so records are read-only. Fix: add "
            f"the SMO with `{ADD_USER_HINT}` and log in."
        )
    if not s.logged_in:
        raise PermissionError(f"{what} is refused: nobody is logged in. Fix: log in as the SMO.")
    if s.role != "smo":
        raise PermissionError(
            f"{what} is refused: user '{s.user}' has the {s.role} role (viewers only read). "
            "Fix: ask the SMO to record it."
        )
    return s


# -- rate limit ----------------------------------------------------------------------
def reset_rate_limit() -> None:
    """Forget every failure (tests; a restarted server forgets them too)."""
    with _LOCK:
        _FAILS.clear()
        _LOCKED_UNTIL.clear()


def _locked_for(name: str, now: float) -> float:
    with _LOCK:
        return max(0.0, _LOCKED_UNTIL.get(name, 0.0) - now)


def _fail(name: str, now: float) -> None:
    with _LOCK:
        recent = [t for t in _FAILS.get(name, []) if now - t < FAIL_WINDOW_S] + [now]
        _FAILS[name] = recent
        extra = len(recent) - MAX_FAILURES
        if extra >= 0:
            _LOCKED_UNTIL[name] = now + min(MAX_LOCK_S, LOCK_S * 2**extra)


def _dummy_hash() -> str:
    if not _DUMMY_HASH:
        _DUMMY_HASH.append(users.hash_password("not a password of anyone"))
    return _DUMMY_HASH[0]


def login(name: str, password: str) -> tuple[bool, str]:
    """Check a name and password; on success the session carries the user.

    Returns
    -------
    (bool, str)
        Whether it worked and the message to show.
    """
    name = (name or "").strip()
    now = time.monotonic()
    wait = _locked_for(name, now)
    if wait > 0:
        return False, (
            f"Too many wrong passwords for '{name}': try again in {int(wait) + 1} s "
            "(wrong passwords are rate-limited)."
        )
    try:
        known = users.load_users().get(name)
    except Exception as exc:  # noqa: BLE001
        return False, f"The users file cannot be read: {exc}"
    ok = users.verify_password(known.password_hash if known else _dummy_hash(), password or "")
    if not (ok and known is not None):
        _fail(name, now)
        return False, "Wrong user name or password."
    with _LOCK:
        _FAILS.pop(name, None)
    st.session_state[SESSION_KEY] = {"user": known.name}
    return True, f"Logged in as {known.name} ({known.role})."


def logout() -> None:
    st.session_state.pop(SESSION_KEY, None)


# -- the widgets -----------------------------------------------------------------------
def login_gate() -> Session:
    """Run on every page: the login form (and ``st.stop``) or the sidebar's user line."""
    s = current()
    if not s.users_file:
        st.sidebar.caption(
            f"Records are read-only: the app has no users. To record inspections and "
            f"cases, add the SMO: `{ADD_USER_HINT}` (then reload and log in)."
        )
        return s
    if s.logged_in:
        st.sidebar.caption(f"Logged in as **{s.user}** ({s.role}).")
        if st.sidebar.button("Log out", key="auth_logout"):
            logout()
            st.rerun()
        return s
    st.title("ms4map: log in")
    st.caption("This app has users (ms4map users list). The SMO records; viewers read.")
    with st.form("auth_login_form"):
        name = st.text_input("User name", key="auth_user")
        pw = st.text_input("Password", type="password", key="auth_password")
        submitted = st.form_submit_button("Log in")
    if submitted:
        ok, msg = login(name, pw)
        if ok:
            st.rerun()
        st.error(msg)
    st.stop()
    return s  # pragma: no cover - st.stop ends the run
