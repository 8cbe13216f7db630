"""The Streamlit app: `streamlit run app.py [-- WORKSPACE]` or `ms4map app [WORKSPACE]`.

The app calls the library only; its pages hold widgets and layout, no GIS
logic.  Each page is a module of :mod:`ms4map.app.pages` with a ``render()``
function; :func:`main` sets the page config, makes sure the offline map
assets are in place and runs the navigation.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PAGES", "main", "page_object", "run_page"]

#: url path -> (module, title, icon)
PAGES: dict[str, tuple[str, str, str]] = {
    "map": ("map_page", "Map", ":material/map:"),
    "screening": ("screening", "Site screening", ":material/fact_check:"),
    "investigation": ("investigation", "Outfall investigation", ":material/search:"),
    "inventory": ("inventory", "Outfall inventory", ":material/list_alt:"),
    "cases": ("cases_page", "IDDE cases", ":material/assignment:"),
    "projects": ("projects_page", "Projects", ":material/construction:"),
    "septic": ("septic_page", "Septic", ":material/water_damage:"),
    "smp": ("smp_page", "SMPs", ":material/water:"),
    "permit": ("permit_page", "Permit year", ":material/event_note:"),
    "data": ("data_page", "Data", ":material/folder_open:"),
}


_PAGE_OBJECTS: dict[str, object] = {}


def page_object(name: str):
    """The ``st.Page`` of a page when the navigation runs (``None`` for a page run alone)."""
    return _PAGE_OBJECTS.get(name)


def _page_module(name: str):
    import importlib

    return importlib.import_module(f"ms4map.app.pages.{PAGES[name][0]}")


def _setup(
    app_dir: str | Path | None, workspace: str | None = None, profile: str | None = None
) -> None:
    import streamlit as st

    from . import records_map, state
    from .static import ensure_static_assets

    state.set_traced_workspace(records_map.traced)  # traces use the accepted outfall moves

    if app_dir is not None:
        state.set_app_dir(app_dir)
    if workspace is not None:
        state.set_cli_workspace(workspace)
    if profile is not None:
        state.set_cli_profile(profile)
    try:
        st.set_page_config(page_title="ms4map", layout="wide")  # default icon: no fetch
    except Exception:  # noqa: BLE001 - already set by the caller
        pass
    if "ms4map_assets" not in st.session_state:
        try:
            ensure_static_assets(state.app_dir() / "static")
            st.session_state["ms4map_assets"] = True
        except Exception as exc:  # noqa: BLE001
            st.session_state["ms4map_assets"] = False
            st.warning(f"Offline map scripts could not be prepared: {exc}")
    from .auth import login_gate

    login_gate()  # with a users file: the login form (and nothing else) until logged in
    state.sync_workspace()  # a reload reopens the workspace the address names
    lost = state.lost_workspace_message()
    if lost:  # never the demo in its place
        st.error(lost)


def main(app_dir: str | Path | None = None, argv: list[str] | None = None) -> None:
    """Run the app (the body of ``app.py``).

    Parameters
    ----------
    app_dir : path, optional
        Folder of the main script; its ``static/`` folder is what Streamlit
        serves, so the offline Leaflet copies go there.
    argv : list of str, optional
        The script's arguments (``streamlit run app.py -- [WORKSPACE] [--profile P]``):
        the first one that is not an option is the workspace to open instead of the
        demo; ``--profile`` names the town's municipality profile (a bundled name or a
        profile file).
    """
    import streamlit as st

    workspace, profile = _script_args(argv or [])
    _setup(app_dir, workspace, profile)
    pages = []
    for url, (_mod, title, _icon) in PAGES.items():
        # no icons: Streamlit fetches a page's icon as the favicon from the internet
        pg = st.Page(_make_runner(url), title=title, url_path=url, default=url == "map")
        _PAGE_OBJECTS[url] = pg
        pages.append(pg)
    nav = st.navigation(pages)
    nav.run()


def _script_args(argv: list[str]) -> tuple[str | None, str | None]:
    """``(workspace, profile)`` of the script's arguments."""
    workspace = profile = None
    it = iter(argv)
    for a in it:
        if a == "--profile":
            profile = next(it, None)
        elif a.startswith("--profile="):
            profile = a.split("=", 1)[1]
        elif not a.startswith("-") and workspace is None:
            workspace = a
    return workspace, profile


def _render(name: str) -> None:
    """Render a page; an error nobody foresaw is worded for the user, and its traceback
    (with the server's paths) goes to the server's log, never to the browser."""
    try:
        _page_module(name).render()
    except Exception as exc:  # noqa: BLE001 - st.stop/st.rerun are BaseExceptions, not caught
        import logging

        import streamlit as st

        from .state import plain

        logging.getLogger("ms4map.app").exception("page %s failed", name)
        st.error(
            f"This page stopped on an error: {type(exc).__name__}: {plain(str(exc))[:300]}. "
            "Nothing was saved by the step that failed. The details are in the log of the "
            "server running the app (for the administrator); please report them."
        )


def _make_runner(name: str):
    def run() -> None:
        _render(name)

    run.__name__ = f"page_{name}"
    return run


def run_page(name: str, app_dir: str | Path | None = None) -> None:
    """Run one page on its own (tests use this with ``AppTest.from_string``)."""
    if name not in PAGES:
        raise ValueError(f"Unknown page {name!r}, select from {list(PAGES)}")
    _PAGE_OBJECTS.clear()  # no navigation: links are plain links
    _setup(app_dir)
    _render(name)
