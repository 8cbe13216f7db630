"""Who is using the app: the login form, the session's user and role, the one write check.

With a users file (``ms4map users add NAME --role smo|viewer``; see :mod:`ms4map.records.users`)
the app shows a login form before any page; the session then carries the user and the
role.  Without one the app runs and every records page is read-only, saying how to add
a user.  Every write of the records goes through :func:`require_smo`, on the server,
which reads the users file again (a user removed or made a viewer since logging in can
no longer write); hiding the buttons is only the visible half.

Login attempts are rate-limited per name and client, per client and per name, counted
before the password is checked, in a file every server process and ``ms4map users
unlock`` share (:mod:`ms4map.records.logins`): after :data:`MAX_FAILURES` attempts of one
name from one browser address within :data:`FAIL_WINDOW_S` seconds that pair waits
:data:`LOCK_S` seconds, doubling with each further attempt (at most :data:`MAX_LOCK_S`).
An unknown name costs the same hash check as a known one and gets the same message.

A login survives a browser reload: it is kept in a cookie (:data:`COOKIE`) holding a
signed, expiring token: ``payload.signature``, the HMAC-SHA256 of the payload (user,
session id, expiry, a digest of the user's password hash) with a secret kept in the app's
data folder (``auth/session_secret``, created with 0600 permissions).  The cookie is set
and cleared by a small script (``st.html``, no internet), and read back by the server
from the reload's request (``st.context.cookies``); Streamlit has no API to set a cookie,
and a token in the address bar would travel with every copied link.  The token is
refused once it expired (:func:`session_hours`, ``MS4MAP_SESSION_HOURS``, default 12),
after the user logged out (its session id is kept in ``auth/revoked.json`` until it
expires), and when the user was removed, can no longer log in or has a new password.

Without users (no users file) the app stays the single-user local app: no login, the
records read-only, and uploading, removing uploads and opening server paths allowed
(:func:`can_manage_data`); with users those are the SMO's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from ..records import logins, users

__all__ = [
    "FAIL_WINDOW_S",
    "LOCK_S",
    "MAX_FAILURES",
    "MAX_LOCK_S",
    "COOKIE",
    "Session",
    "can_edit",
    "can_manage_data",
    "current",
    "has_users",
    "login",
    "login_gate",
    "logout",
    "make_token",
    "require_data_manager",
    "require_smo",
    "reset_rate_limit",
    "session_hours",
    "verify_token",
]

SESSION_KEY = "ms4map_auth"
MAX_FAILURES = logins.MAX_PER_NAME_CLIENT
FAIL_WINDOW_S = logins.WINDOW_S
LOCK_S = logins.LOCK_S
MAX_LOCK_S = logins.MAX_LOCK_S
ADD_USER_HINT = "ms4map users add NAME --role smo"
#: The cookie that keeps the login across reloads (a signed token, see the module doc).
COOKIE = "ms4map_session"
#: Environment variable: hours a login lasts (default :data:`SESSION_HOURS`).
SESSION_HOURS_ENV = "MS4MAP_SESSION_HOURS"
SESSION_HOURS = 12.0

_LOCK = threading.Lock()
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
    """The session's user and role, checked against the users file as it is now.

    A session without a user takes it from a valid login cookie (a reload); a user
    removed, unable to log in or with a new password since is logged out.
    """
    if not has_users():
        return Session(None, "viewer", False, False)
    held = st.session_state.get(SESSION_KEY) or _from_cookie()
    name = held.get("user") if held else None
    if not name:
        return Session(None, "viewer", False, True)
    try:
        u = users.load_users().get(name)
    except Exception:  # noqa: BLE001
        u = None
    if (
        u is None
        or not u.can_log_in
        or (held.get("pw") and held["pw"] != _pw_digest(u.password_hash))
        or (held.get("sid") and held["sid"] in _revoked())
    ):  # removed, a new password, or logged out (in another tab) since logging in
        st.session_state.pop(SESSION_KEY, None)
        return Session(None, "viewer", False, True)
    st.session_state[SESSION_KEY] = held
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


def can_manage_data() -> bool:
    """Whether this session may upload, remove uploads and open server paths (only to
    decide what to show): the SMO, or anyone when the app has no users (the single-user
    local app)."""
    s = current()
    return not s.users_file or (s.logged_in and s.role == "smo")


def require_data_manager(what: str = "this change") -> Session:
    """The server-side check of uploading, removing uploads and opening server paths.

    Returns the session when it may (see :func:`can_manage_data`); raises
    :class:`PermissionError` otherwise.
    """
    s = current()
    if not s.users_file or (s.logged_in and s.role == "smo"):
        return s
    if not s.logged_in:
        raise PermissionError(f"{what} is refused: nobody is logged in. Fix: log in as the SMO.")
    raise PermissionError(
        f"{what} is refused: user '{s.user}' has the {s.role} role (viewers only read). "
        "Fix: ask the SMO to do it."
    )


# -- the login cookie ------------------------------------------------------------------
def session_hours() -> float:
    """Hours a login lasts: ``MS4MAP_SESSION_HOURS`` (a positive number), else 12."""
    try:
        hours = float(os.environ.get(SESSION_HOURS_ENV) or SESSION_HOURS)
    except ValueError:
        return SESSION_HOURS
    return hours if hours > 0 else SESSION_HOURS


def _auth_dir() -> Path:
    from .upload import app_data_dir

    folder = app_data_dir() / "auth"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _secret() -> bytes:
    """The signing secret: ``<data dir>/auth/session_secret``, made once (0600)."""
    import tempfile

    path = _auth_dir() / "session_secret"
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=".secret.", dir=path.parent)  # 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)  # atomic, and never replaces a secret made meanwhile
        except FileExistsError:
            pass
    finally:
        Path(tmp).unlink(missing_ok=True)
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def _pw_digest(password_hash: str | None) -> str:
    return hashlib.sha256((password_hash or "").encode()).hexdigest()[:16]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _sign(payload: str) -> str:
    return _b64(hmac.new(_secret(), payload.encode("ascii"), hashlib.sha256).digest())


def make_token(user: users.User, *, now: float | None = None) -> str:
    """A signed login token for ``user``, valid :func:`session_hours` from ``now``."""
    now = time.time() if now is None else now
    body = {
        "u": user.name,
        "sid": secrets.token_hex(12),
        "exp": int(now + session_hours() * 3600),
        "pw": _pw_digest(user.password_hash),
    }
    payload = _b64(json.dumps(body, separators=(",", ":")).encode())
    return f"{payload}.{_sign(payload)}"


def verify_token(token: str | None, *, now: float | None = None) -> dict | None:
    """The token's ``{"user", "pw", "sid", "exp"}`` when it is valid now, else ``None``.

    Valid: signed with this app's secret, not expired, not logged out, and its user is
    in the users file, can log in and has the password it had when the token was made.
    """
    if not token or token.count(".") != 1:
        return None
    payload, sig = token.split(".")
    try:
        if not hmac.compare_digest(sig, _sign(payload)):
            return None
        body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        name, sid, exp, pw = body["u"], str(body["sid"]), int(body["exp"]), str(body["pw"])
        known = users.load_users().get(name)
    except Exception:  # noqa: BLE001 - a broken token or users file: no login
        return None
    if exp <= (time.time() if now is None else now) or sid in _revoked():
        return None
    if known is None or not known.can_log_in or _pw_digest(known.password_hash) != pw:
        return None
    return {"user": name, "pw": pw, "sid": sid, "exp": exp, "token": token}


def _revoked() -> dict[str, int]:
    try:
        return json.loads((_auth_dir() / "revoked.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _revoke(sid: str, exp: int) -> None:
    """Remember a logged-out session until its token expires (then it is refused anyway)."""
    import tempfile

    with _LOCK:
        now = time.time()
        kept = {k: v for k, v in _revoked().items() if v > now}
        kept[sid] = exp
        folder = _auth_dir()
        fd, tmp = tempfile.mkstemp(prefix=".revoked.", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(kept, f)
            os.replace(tmp, folder / "revoked.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _cookie_name() -> str:
    """The cookie's name; with the port, as browsers share cookies between ports."""
    try:
        port = int(st.get_option("server.port"))
    except Exception:  # noqa: BLE001
        port = 0
    return f"{COOKIE}_{port}"


def _cookie_token() -> str | None:
    """The login cookie the browser sent when this session started (a reload)."""
    try:
        return st.context.cookies.get(_cookie_name())
    except Exception:  # noqa: BLE001 - no browser (a script run alone)
        return None


def _from_cookie() -> dict | None:
    token = _cookie_token()
    if not token or st.session_state.get("ms4map_auth_cookie_refused") == token:
        return None
    held = verify_token(token)
    if held is None:
        st.session_state["ms4map_auth_cookie_refused"] = token  # checked once per session
    return held


def _set_cookie(token: str | None, max_age: int = 0) -> None:
    """Set (or with ``None`` clear) the login cookie in the browser: a small script."""
    value = token or ""
    age = max(0, int(max_age)) if token else 0
    script = (
        "<script>(function(){var d=DOC;var s=d.location.protocol==='https:'?'; Secure':'';"
        f"d.cookie='{_cookie_name()}={value}; Max-Age={age}; Path=/; "
        "SameSite=Strict'+s;})();</script>"
    )
    try:  # in the page itself (Streamlit 1.5x: st.html runs scripts when told to)
        st.html(script.replace("DOC", "document"), unsafe_allow_javascript=True)
    except TypeError:  # an older Streamlit: a component's frame, of the same origin
        import streamlit.components.v1 as components

        components.html(script.replace("DOC", "window.parent.document"), height=0)


# -- rate limit ----------------------------------------------------------------------
def reset_rate_limit() -> None:
    """Forget every login attempt (tests; ``ms4map users unlock NAME`` forgets one name's)."""
    logins.forget(users_file=users.users_file_path())


def _client() -> str:
    """The browser's address as the server sees it (``local`` when unknown)."""
    try:
        ip = st.context.ip_address
    except Exception:  # noqa: BLE001 - no browser (a script run alone)
        ip = None
    return ip if isinstance(ip, str) and ip else "local"


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
    client = _client()
    try:  # counted before the check: attempts sent at once cannot all reach it
        wait = logins.reserve(name, client, users_file=users.users_file_path())
    except Exception as exc:  # noqa: BLE001 - no attempts file, no login
        return False, f"Login attempts cannot be counted: {exc}"
    if wait > 0:
        return False, (
            f"Too many login attempts for '{name}' or from this address: try again in "
            f"{int(wait) + 1} s (attempts are rate-limited; the administrator can run "
            f"`ms4map users unlock {name}` on the server)."
        )
    try:
        known = users.load_users().get(name)
    except Exception as exc:  # noqa: BLE001
        return False, f"The users file cannot be read: {exc}"
    ok = users.verify_password(known.password_hash if known else _dummy_hash(), password or "")
    if not (ok and known is not None):
        return False, "Wrong user name or password."
    logins.succeeded(name, client, users_file=users.users_file_path())
    held = verify_token(make_token(known))
    st.session_state[SESSION_KEY] = held or {"user": known.name}
    return True, f"Logged in as {known.name} ({known.role})."


def logout() -> None:
    """End the session's login: its token is refused from now on (a reload with the
    cookie finds nobody logged in), and the login form clears the cookie."""
    held = st.session_state.pop(SESSION_KEY, None) or {}
    if held.get("sid"):
        _revoke(str(held["sid"]), int(held.get("exp") or time.time() + 86400))
    cookie = verify_token(_cookie_token())  # the reload's cookie, when another session's
    if cookie is not None and cookie["user"] == held.get("user"):
        _revoke(cookie["sid"], cookie["exp"])


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
        held = st.session_state.get(SESSION_KEY) or {}
        if held.get("token") and _cookie_token() != held["token"]:
            with st.sidebar:  # the login survives a reload
                _set_cookie(held["token"], int(held["exp"] - time.time()))
        st.sidebar.caption(f"Logged in as **{s.user}** ({s.role}).")
        if st.sidebar.button("Log out", key="auth_logout"):
            logout()
            st.rerun()
        return s
    _set_cookie(None)  # a logged-out, stale or expired login cookie goes
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
