"""Cached access to the workspace, the pipeline result and the map layers.

Pages never open files or run analyses themselves: they ask this module, which
caches every expensive object with ``st.cache_resource`` (one copy per process,
shared by every session) keyed by the workspace fingerprint.

The workspace chosen on the Data page survives a browser reload: it is kept in the
app's data folder (``workspaces/<id>.json``) and the address names it
(``?workspace=<id>``); a reload reopens that one, or says why it cannot and opens
nothing else (never the demo in its place).  The Data page opens server paths only
inside :func:`allowed_folders`: the app's data folder and the folders of
``MS4MAP_ALLOWED_PATHS``.
"""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from .. import pipeline
from ..rules import conditions, septic
from .upload import app_data_dir

if TYPE_CHECKING:
    from ..io import Workspace
    from ..pipeline import PipelineResult
    from ..rules.conditions import Screening
    from ..rules.septic import SepticFlags

__all__ = [
    "ALLOWED_PATHS_ENV",
    "AppContext",
    "allowed_folders",
    "app_dir",
    "check_server_path",
    "check_workspace_inputs",
    "lost_workspace_message",
    "app_fixes",
    "context",
    "map_layers",
    "outfall_inventory",
    "page",
    "parcel_screening",
    "pipeline_result",
    "plain",
    "profile_choices",
    "set_app_dir",
    "set_cli_profile",
    "septic_flags",
    "sync_workspace",
    "town_profile",
    "use_workspace",
    "workspace",
    "workspace_source",
]

_APP_DIR: Path | None = None
_CLI_WORKSPACE: str | None = None
_CLI_PROFILE: str | None = None

#: Environment variable naming the town's municipality profile (``ms4map app --profile``).
PROFILE_ENV = "MS4MAP_PROFILE"
#: Environment variable: more folders the Data page may open workspaces from (separated
#: by ``os.pathsep``, ``:`` on Linux and macOS); the app's data folder always is one.
ALLOWED_PATHS_ENV = "MS4MAP_ALLOWED_PATHS"
#: The query-string key naming the workspace in use (a reload reopens it).
WORKSPACE_PARAM = "workspace"
_CHOSEN = "ms4map_workspace"
_LOST = "ms4map_workspace_lost"


def set_cli_workspace(path: str | None) -> None:
    """The workspace given on the command line (``streamlit run app.py -- PATH``)."""
    global _CLI_WORKSPACE
    _CLI_WORKSPACE = path


def set_cli_profile(profile: str | None) -> None:
    """The town's profile given on the command line (``ms4map app --profile``)."""
    global _CLI_PROFILE
    _CLI_PROFILE = profile


def town_profile() -> str:
    """The town's municipality profile: a bundled name or a profile file's path.

    ``ms4map app --profile`` > ``MS4MAP_PROFILE`` > ``stillwater``.  It is the profile
    of the septic and screening layers, of the records (the deadlines of a case opened
    in the app) and the first choice of the pages' profile boxes.
    """
    return _CLI_PROFILE or os.environ.get(PROFILE_ENV) or "stillwater"


def profile_choices() -> tuple[list[str], int]:
    """The options of a page's profile box (the bundled ones and the town's own file,
    when it is one) and the index of the town's."""
    from ..rules.profiles import BUILTIN_PROFILES

    town = town_profile()
    options = list(BUILTIN_PROFILES) + ([] if town in BUILTIN_PROFILES else [town])
    return options, options.index(town)


def set_app_dir(path: str | Path) -> None:
    """Remember the folder of the Streamlit main script (its ``static/`` is served)."""
    global _APP_DIR
    _APP_DIR = Path(path)


def app_dir() -> Path:
    """The main script's folder, or ``<data dir>/app`` when the app was started otherwise."""
    if _APP_DIR is not None:
        return _APP_DIR
    p = app_data_dir() / "app"
    p.mkdir(parents=True, exist_ok=True)
    return p


# -- which workspace -------------------------------------------------------------------
def workspace_source() -> dict[str, Any]:
    """Options of the workspace to open: session choice > command line > env > demo.

    Returns
    -------
    dict
        ``{"path": str | None, "layers": dict | None, "field_map": dict | None,
        "dem": str | None, "label": str}``; ``path None`` with no layers = the demo.
        A workspace the address names that cannot be reopened has ``"unavailable"``
        (why): nothing is opened then, and records go nowhere.
    """
    chosen = st.session_state.get(_CHOSEN)
    if chosen:
        return dict(chosen)
    lost = st.session_state.get(_LOST)
    if lost:
        return {
            "path": None,
            "layers": None,
            "field_map": None,
            "dem": None,
            "crs": None,
            "label": f"workspace {lost['id']} (cannot be reopened)",
            "unavailable": lost["why"],
        }
    path = _CLI_WORKSPACE or os.environ.get("MS4MAP_WORKSPACE") or None
    return {
        "path": path,
        "layers": None,
        "field_map": None,
        "dem": None,
        "crs": None,
        "label": path or "demo",
    }


def _workspaces_dir() -> Path:
    return app_data_dir() / "workspaces"


def _workspace_id(src: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(_key(src).encode()).hexdigest()[:16]


def _remember(src: dict[str, Any]) -> str:
    """Keep ``src`` in ``<data dir>/workspaces/<id>.json`` (once); its id."""
    import json
    import tempfile

    wid = _workspace_id(src)
    target = _workspaces_dir() / f"{wid}.json"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ws.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(src, f, default=str)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return wid


def _recall(wid: str) -> tuple[dict[str, Any] | None, str]:
    """The workspace kept under ``wid``, or ``None`` and why not."""
    import json
    import re

    if not re.fullmatch(r"[0-9a-f]{16}", wid or ""):
        return None, f"'{wid}' is not a workspace id of this app"
    try:
        src = json.loads((_workspaces_dir() / f"{wid}.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "this app's data folder does not know it (another server or data folder?)"
    except (OSError, ValueError) as exc:
        return None, f"its record cannot be read ({exc})"
    try:
        for key in ("path", "dem"):
            if src.get(key):
                check_server_path(src[key])
    except PermissionError as exc:
        return None, str(exc)
    return src, ""


def use_workspace(src: dict[str, Any] | None) -> None:
    """Put ``src`` in use on every page (``None``: back to the command line's or the
    demo), and name it in the address so that a reload reopens it."""
    st.session_state.pop(_LOST, None)
    if src is None:
        st.session_state.pop(_CHOSEN, None)
        if WORKSPACE_PARAM in st.query_params:
            del st.query_params[WORKSPACE_PARAM]
        return
    st.session_state[_CHOSEN] = dict(src)
    st.query_params[WORKSPACE_PARAM] = _remember(src)


def sync_workspace() -> None:
    """At the start of every run: the address names the session's workspace, and a new
    session (a reload) reopens the workspace the address names, or keeps why it cannot
    (shown by :func:`workspace`; nothing else is opened in its place)."""
    chosen = st.session_state.get(_CHOSEN)
    if chosen:
        wid = _remember(chosen)
        if st.query_params.get(WORKSPACE_PARAM) != wid:
            st.query_params[WORKSPACE_PARAM] = wid  # page links drop the query string
        return
    wid = st.query_params.get(WORKSPACE_PARAM)
    lost = st.session_state.get(_LOST)
    if not wid:
        if lost:  # keep saying it (a page link dropped the query string)
            st.query_params[WORKSPACE_PARAM] = lost["id"]
        return
    if lost and lost["id"] == wid:
        return
    src, why = _recall(wid)
    if src is None:
        st.session_state[_LOST] = {"id": wid, "why": why}
    else:
        st.session_state[_CHOSEN] = src


def lost_workspace_message() -> str | None:
    """What to say when the address names a workspace that cannot be reopened (shown
    at the top of every page), else ``None``."""
    src = workspace_source()
    if not src.get("unavailable"):
        return None
    return (
        f"The workspace this page had open ({plain(src['label'])}) cannot be opened again: "
        f"{plain(src['unavailable'])}. Nothing else is opened in its place, so nothing is "
        "shown or recorded. Fix: open it again (or another one) on the Data page, or go "
        "back to the demo town there."
    )


def allowed_folders() -> list[Path]:
    """The folders the Data page may open workspaces from: the app's data folder and
    those of ``MS4MAP_ALLOWED_PATHS`` (each resolved: its symlinks followed)."""
    out = [app_data_dir().resolve()]
    for part in os.environ.get(ALLOWED_PATHS_ENV, "").split(os.pathsep):
        if part.strip():
            out.append(Path(part.strip()).expanduser().resolve())
    return out


def check_server_path(path: str | Path) -> Path:
    """``path`` resolved (``..`` and symlinks followed) when it is inside one of
    :func:`allowed_folders`; raises :class:`PermissionError` otherwise."""
    given = Path(path).expanduser()
    real = given.resolve()
    folders = allowed_folders()
    if any(real == f or real.is_relative_to(f) for f in folders):
        return real
    shown = f"'{path}'" + (f" (it leads to '{real}')" if real != given.absolute() else "")
    raise PermissionError(
        f"Opening {shown} is refused: the app opens files only inside "
        f"{', '.join(str(f) for f in folders)}. Fix: upload the files below, copy them into "
        f"{folders[0]}, or ask whoever runs the app to add their folder to "
        f"{ALLOWED_PATHS_ENV} (folders separated by '{os.pathsep}')."
    )


def check_workspace_inputs(ws: Workspace) -> None:
    """Every file ``ws`` read is inside :func:`allowed_folders` (a manifest or a
    folder of layers cannot reach out of them); raises :class:`PermissionError`."""
    for p in getattr(ws, "inputs", {}) or {}:
        check_server_path(p)


def _key(src: dict[str, Any]) -> str:
    import json

    return json.dumps(
        {k: src.get(k) for k in ("path", "layers", "field_map", "dem", "crs")},
        sort_keys=True,
        default=str,
    )


@st.cache_resource(show_spinner="Opening the workspace ...", max_entries=4)
def _open_workspace(key: str) -> Workspace:
    import json

    from ..datasets import get_path
    from ..io import open_workspace

    src = json.loads(key)
    path = src.get("path")
    if path is None and not src.get("layers"):
        path = str(get_path("alder_falls"))
    kwargs: dict[str, Any] = {}
    if src.get("layers"):
        kwargs["layers"] = src["layers"]
    if src.get("field_map"):
        kwargs["field_map"] = src["field_map"]
    if src.get("dem"):
        kwargs["dem"] = src["dem"]
    if src.get("crs"):
        kwargs["crs"] = src["crs"]
    return open_workspace(path, **kwargs)


def workspace(*, show_error: bool = True) -> Workspace | None:
    """The current workspace (cached), or ``None`` after showing why it cannot open."""
    src = workspace_source()
    if src.get("unavailable"):
        return None  # said at the top of every page (lost_workspace_message)
    try:
        return _open_workspace(_key(src))
    except Exception as exc:  # noqa: BLE001 - every failure becomes a message
        if show_error:
            _show_error(f"The workspace '{src.get('label')}' could not be opened", exc)
        return None


def plain(text: Any) -> str:
    """Text shown as is in Streamlit's markdown: GDAL's ``'<DRIVER>:'`` is not swallowed as
    an HTML tag (the message looked cut off), ``$`` does not start a formula, an address
    is not a link."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans at all
        parts = [str(text).replace("`", "'")]
    for i in range(0, len(parts), 2):  # outside `code spans` (escapes show there)
        for ch in ("\\", "<", ">", "$", "*", "_", "[", "]"):
            parts[i] = parts[i].replace(ch, "\\" + ch)
        # nor an address a link (GitHub-flavoured autolinks): a zero-width space breaks it
        parts[i] = _BARE_LINK.sub("\\1\u200b", parts[i])
    return "`".join(parts)


_BARE_LINK = re.compile(r"(?i)(:(?=//)|www(?=\.))")


#: Every ASCII punctuation mark: CommonMark lets a backslash make any of them literal.
_PUNCTUATION = re.compile(r"""([!-/:-@\[-`{-~])""")


def data_text(value: Any) -> str:
    """A value from the data or the address bar shown as text in Streamlit's markdown:
    every punctuation mark escaped, so a water named ``![m](http://host/x.png)`` is not
    an image the browser fetches, ``[click](...)`` not a link, ``$x$`` not math, and a
    URL not turned into a link.  For messages with ``code`` spans, :func:`plain`."""
    text = _PUNCTUATION.sub(r"\\\1", " ".join(str(value).split()))
    # escaping does not stop GitHub-flavoured autolinks (http://..., www...., a@b.c): a
    # zero-width space between two escapes breaks them and leaves the text as it reads
    return _AUTOLINK.sub("\\1\u200b", text)


#: Where an autolink would start in escaped text: a scheme's ``\:`` before ``\/``,
#: ``www`` before ``\.``, ``\@`` before a word.
_AUTOLINK = re.compile(r"(\\:(?=\\/)|(?i:www)(?=\\\.)|\\@(?=\w))")


#: The command line's advice -> what to do in the app (the library's messages are
#: written for the CLI; on the Data page the same fix is a widget).
_APP_FIXES = (
    (
        "Pass --dem FILE or put <stem>_dem.tif beside the GeoPackage.",
        "Upload the town's DEM GeoTIFF on the Data page (on the command line: `--dem FILE`, "
        "or `<stem>_dem.tif` beside the GeoPackage).",
    ),
    (
        "Pass a DEM GeoTIFF with --dem FILE.",
        "Upload a DEM GeoTIFF on the Data page (on the command line: `--dem FILE`).",
    ),
    (
        "Define its CRS in your GIS (e.g. Define Projection) or save it as a GeoPackage with "
        "a CRS; then re-run.",
        "Choose its CRS on the Data page ('CRS of ...'), or define it in your GIS (e.g. "
        "Define Projection) and upload it again.",
    ),
    (
        "Fix: pass --dem.",
        "Fix: upload a DEM GeoTIFF on the Data page (on the command line: `--dem`).",
    ),
    (
        "Nothing to do; pass --crs to choose another projected CRS.",
        "Nothing to do; choose another projected 'Working CRS' on the Data page if you need.",
    ),
)


#: ``--field ROLE[.SOURCE_LAYER].COLUMN=SOURCE`` in a message: the Data page's field boxes.
_FIELD_OPTION = re.compile(r"(?:map it with |with )?`?--field (\w+)\.(?:[\w-]+\.)?(\w+)=[A-Z_]+`?")
#: ``--impairments`` (with or without its ``CSV``): the Data page's 303(d) list upload.
_IMPAIRMENTS_OPTION = re.compile(r"(?:pass )?`?--impairments(?: CSV)?`?")


def app_fixes(text: str) -> str:
    """A library message or QA report with the command line's fixes in the app's words
    (``--dem``, ``--crs``, ``--field``, ``--impairments``: the Data page's boxes)."""
    out = str(text)
    for cli, app in _APP_FIXES:
        out = out.replace(cli, app)
    out = out.replace("map the id column with --field", "choose the id column on the Data page")
    out = out.replace("the warnings of `--impairments`", "the 303(d) list's warnings")
    out = _FIELD_OPTION.sub(
        lambda m: (
            f"choose the {m.group(1)} layer's '{m.group(2)}' column on the Data page "
            f"('Fields of ... -> {m.group(1)}')"
        ),
        out,
    )
    return _IMPAIRMENTS_OPTION.sub("load the 303(d) list CSV on the Data page", out)


def _show_error(title: str, exc: BaseException) -> None:
    from ..core.errors import Ms4mapError

    if isinstance(exc, Ms4mapError):
        st.error(f"{title}: {plain(app_fixes(exc))}")
        report = getattr(exc, "report", None)
        if report is not None and hasattr(report, "to_markdown"):
            with st.expander("QA report"):
                st.markdown(app_fixes(report.to_markdown()))
    else:
        import logging

        logging.getLogger("ms4map.app").error(
            "%s: %s", title, "".join(traceback.format_exception(exc))
        )
        st.error(
            f"{title}: {type(exc).__name__}: {plain(exc)}. The details are in the log of "
            "the server running the app (for the administrator)."
        )


#: Pipeline results by workspace fingerprint (one copy per server process, like
#: st.cache_resource, but computed under a progress box the user sees).
_RESULTS: dict[str, Any] = {}
_RESULTS_MAX = 4
_RESULT_LOCKS: dict[str, Any] = {}


def _run_pipeline(ws: Workspace, fingerprint: str) -> PipelineResult:
    """Run (or reuse) the pipeline; the first run shows each step as it goes, with the
    seconds so far, and ends with the time of each step (what was slow)."""
    import threading
    import time

    if fingerprint in _RESULTS:
        return _RESULTS[fingerprint]
    lock = _RESULT_LOCKS.setdefault(fingerprint, threading.Lock())
    with lock:  # two sessions opening the same town compute it once
        if fingerprint in _RESULTS:
            return _RESULTS[fingerprint]
        t0 = time.perf_counter()
        with st.status("Tracing drainage (network, overland flow, parcels) ...") as box:

            def say(message: str) -> None:
                box.write(f"{time.perf_counter() - t0:5.1f} s  {message}")

            result = pipeline.run(ws, progress=say)
            total = time.perf_counter() - t0
            steps = ", ".join(
                f"{k} {v:.1f} s" for k, v in (getattr(result, "timings", {}) or {}).items() if v
            )
            box.update(
                label=f"Drainage traced in {total:.0f} s" + (f" ({steps})" if steps else ""),
                state="complete",
                expanded=False,
            )
        while len(_RESULTS) >= _RESULTS_MAX:
            _RESULTS.pop(next(iter(_RESULTS)))
        _RESULTS[fingerprint] = result
        return result


def pipeline_result(ws: Workspace, *, show_error: bool = True) -> PipelineResult | None:
    """The cached :func:`ms4map.pipeline.run` result, or ``None`` (with a message)."""
    try:
        return _run_pipeline(ws, ws.fingerprint())
    except Exception as exc:  # noqa: BLE001
        if show_error:
            _show_error("The drainage analysis failed", exc)
        return None


@st.cache_resource(show_spinner="Flagging septic parcels ...", max_entries=4)
def _septic(_ws: Workspace, _result: PipelineResult, fingerprint: str, profile: str) -> SepticFlags:
    return septic.septic_flags(_result, profile=profile, workspace=_ws)


def septic_flags(
    ws: Workspace, result: PipelineResult | None, *, profile: str | None = None
) -> SepticFlags | None:
    """The cached :func:`ms4map.rules.septic.septic_flags` (default: under
    :func:`town_profile`): the ``septic`` layer, its findings and the missing legal
    layers; ``None`` without a result or when it fails (said on the page)."""
    return _parcel_layer(
        _septic, "Septic flagging failed", ws, result, profile=profile or town_profile()
    )


def septic_layer(
    ws: Workspace, result: PipelineResult | None, *, profile: str | None = None
) -> Any | None:
    """The cached ``septic`` layer (default: under :func:`town_profile`), or ``None``."""
    flags = septic_flags(ws, result, profile=profile)
    return None if flags is None else flags.table


@st.cache_resource(show_spinner="Screening every parcel for Condition A ...", max_entries=4)
def _screening(
    _ws: Workspace, _result: PipelineResult, fingerprint: str, profile: str
) -> Screening:
    return conditions.screen_parcels(_result, profile=profile, workspace=_ws)


def parcel_screening(
    ws: Workspace, result: PipelineResult | None, *, profile: str | None = None
) -> Screening | None:
    """The cached :func:`ms4map.rules.conditions.screen_parcels` of every parcel (default:
    under :func:`town_profile`), or ``None`` without a result or when it fails."""
    return _parcel_layer(
        _screening, "Parcel screening failed", ws, result, profile=profile or town_profile()
    )


def screening_layer(
    ws: Workspace, result: PipelineResult | None, *, profile: str | None = None
) -> Any | None:
    """The cached ``screening`` layer of every parcel (default: under
    :func:`town_profile`), or ``None`` when unavailable."""
    scr = parcel_screening(ws, result, profile=profile)
    return None if scr is None else scr.table


def _parcel_layer(
    cached: Callable[..., Any],
    failure: str,
    ws: Workspace,
    result: PipelineResult | None,
    *,
    profile: str,
) -> Any | None:
    """``cached(ws, result, fingerprint, profile)``: a per-parcel answer under ``profile``;
    ``None`` without a result, or when it fails (said as ``failure`` on the page)."""
    if result is None:
        return None
    try:
        return cached(ws, result, ws.fingerprint(), profile)
    except Exception as exc:  # noqa: BLE001
        _show_error(failure, exc)
        return None


@st.cache_resource(show_spinner="Preparing map layers ...", max_entries=8)
def _layers(
    _ws: Workspace, _result: PipelineResult | None, _septic: Any, _screening: Any, key: tuple
) -> Any:
    from ..outputs import maps

    return maps.build_layers(
        _ws, result=_result, septic=_septic, screening=_screening, parcel_colour=key[-1]
    )


def map_layers(
    ws: Workspace,
    result: PipelineResult | None,
    *,
    parcel_colour: str = "drainage",
    septic: Any = None,
    screening: Any = None,
) -> dict[str, Any]:
    """Cached :func:`ms4map.outputs.maps.build_layers` for this workspace and colouring."""
    key = (
        ws.fingerprint(),
        result is not None,
        septic is not None,
        screening is not None,
        parcel_colour,
    )
    return _layers(ws, result, septic, screening, key)


@st.cache_resource(show_spinner="Counting what drains to each outfall ...", max_entries=8)
def _inventory(_ws: Workspace, _result: PipelineResult | None, _septic: Any, key: tuple) -> Any:
    from ..analysis import outfalls

    return outfalls.outfall_inventory(_ws, _result, septic=_septic)


def outfall_inventory(ws: Workspace, result: PipelineResult | None, septic: Any = None) -> Any:
    """Cached :func:`ms4map.analysis.outfalls.outfall_inventory` (septic counts from the septic layer
    when given: the parcels the Septic page flags)."""
    return _inventory(
        ws, result, septic, (ws.fingerprint(), result is not None, septic is not None)
    )


@st.cache_resource(show_spinner="Indexing ids and addresses ...", max_entries=4)
def _search_index(_ws: Workspace, fingerprint: str) -> Any:
    from ..outputs import maps

    return maps.build_search_index(_ws)


def search_index(ws: Workspace) -> Any:
    """The cached :func:`ms4map.outputs.maps.build_search_index` of the workspace."""
    return _search_index(ws, ws.fingerprint())


@st.cache_resource(show_spinner="Shading the DEM ...", max_entries=4)
def _hillshade(_dem: Any, fingerprint: str) -> tuple[bytes, list[list[float]]]:
    from ..outputs import maps

    rgba, bounds = maps.hillshade(_dem.array, _dem.transform, _dem.crs, z_factor=_dem.z_to_m)
    return maps.png_bytes(rgba), bounds


def hillshade_url(ws: Workspace) -> tuple[str, list[list[float]]] | None:
    """URL of the workspace DEM's hillshade PNG and its bounds: a static file of the
    single-user app, a data URL in the page when the app has users (docs/app.md)."""
    dem = getattr(ws, "dem", None)
    if dem is None:
        return None
    png, bounds = _hillshade(dem, ws.fingerprint())
    from . import auth

    # a static file is served to anyone who can reach the port, logged in or not: with
    # users the relief goes only to sessions past the login, inside the page
    if st.get_option("server.enableStaticServing") and not auth.has_users():
        cache = app_dir() / "static" / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        name = f"hillshade_{ws.fingerprint()}.png"
        target = cache / name
        if not target.exists():
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(png)
            tmp.replace(target)
        base = st.get_option("server.baseUrlPath").strip("/")
        prefix = f"/{base}" if base else ""
        return f"{prefix}/app/static/cache/{name}", bounds
    import base64

    return "data:image/png;base64," + base64.b64encode(png).decode(), bounds


@dataclass
class AppContext:
    """What a page needs: the workspace and, when it ran, the pipeline result."""

    ws: Workspace
    result: PipelineResult | None


#: What the traces of the app use instead of the workspace as opened (set by the app's
#: set-up: the records' accepted outfall moves, :func:`ms4map.app.records_map.traced`).
_TRACED: list[Any] = []


def set_traced_workspace(fn: Any) -> None:
    """Set the function that gives the workspace the pipeline runs on (``fn(ws) -> ws``)."""
    _TRACED[:] = [fn]


def traced_workspace(ws: Workspace) -> Workspace:
    """``ws`` as the traces use it: with the outfall moves the SMO accepted (issue 30
    item 3); ``ws`` itself when none was accepted or the records cannot be read."""
    if not _TRACED:
        return ws
    try:
        return _TRACED[0](ws)
    except Exception:  # noqa: BLE001 - the records are said on their own pages
        return ws


def context(*, need_result: bool = True) -> AppContext | None:
    """Workspace (+ result); ``None`` after an error message when the workspace fails.
    The result is that of :func:`traced_workspace` (accepted outfall moves applied)."""
    ws = workspace()
    if ws is None:
        return None
    result = pipeline_result(traced_workspace(ws)) if need_result else None
    return AppContext(ws, result)


def page(title: str, caption: str | None = None) -> AppContext | None:
    """Start a page: its title (and caption), then :func:`context`."""
    st.title(title)
    if caption is not None:
        st.caption(caption)
    return context()
