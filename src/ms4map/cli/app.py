"""``ms4map app [WORKSPACE]``: start the Streamlit map app (the demo town by default).

Runs ``streamlit run`` on the repository's ``app.py`` when ms4map runs from a
source checkout, else on a small launcher written to the app's data folder
(``MS4MAP_DATA_DIR``, default ``~/.local/share/ms4map``).  Static file serving
is switched on so Leaflet is served locally and the map works offline, and the
toolbar is the viewer's (``client.toolbarMode = "viewer"``): no Deploy button.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from ..core.errors import InputOpenError
from . import Command, add_debug_option

__all__ = ["COMMANDS", "app_command", "launcher_script", "run", "run_server"]

_LAUNCHER = '''"""ms4map app launcher (written by `ms4map app`; safe to delete)."""

import sys
from pathlib import Path

from ms4map.app import main

HERE = Path(__file__).resolve()
ARGV = sys.argv[1:] if sys.argv and Path(sys.argv[0]).resolve() == HERE else []
main(app_dir=HERE.parent, argv=ARGV)
'''


ABOUT = """start the map app in the browser (the demo town when no workspace is given)

Start the ms4map Streamlit app: map, site screening, outfall investigation and inventory,
septic, data. Works offline.
"""


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        nargs="?",
        metavar="WORKSPACE",
        help="GeoPackage workspace (or manifest); default: the bundled demo town",
    )
    p.add_argument(
        "--profile",
        metavar="NAME|FILE",
        help="the town's municipality profile (stillwater, kingsbury, kiryas_joel or a "
        "profile TOML file; default stillwater, or $MS4MAP_PROFILE): the septic and "
        "screening layers, and the deadlines of the cases recorded in the app",
    )
    p.add_argument("--port", type=int, default=8501, help="port (default 8501)")
    p.add_argument(
        "--address", default="localhost", help="address to listen on (default localhost)"
    )
    p.add_argument("--headless", action="store_true", help="do not open a browser window")
    add_debug_option(p)


def launcher_script() -> Path:
    """The script to run: the checkout's ``app.py``, else a launcher in the data folder."""
    here = Path(__file__).resolve()
    repo_app = here.parents[3] / "app.py"
    if repo_app.is_file() and "ms4map.app" in repo_app.read_text(errors="ignore"):
        return repo_app
    from ..app.upload import app_data_dir

    folder = app_data_dir() / "app"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ms4map_app.py"
    if not script.exists() or script.read_text() != _LAUNCHER:
        script.write_text(_LAUNCHER)
    return script


def app_command(
    path: str | None = None,
    *,
    port: int = 8501,
    address: str = "localhost",
    headless: bool = False,
    profile: str | None = None,
) -> list[str]:
    """The ``streamlit run`` command line ``ms4map app`` executes."""
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(launcher_script()),
        "--server.enableStaticServing",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--server.maxUploadSize",
        "200",
        # no Deploy button (public cloud hosting for owners' names and enforcement
        # records), nor the developer's rerun and clear-cache items; Print stays
        "--client.toolbarMode",
        "viewer",
        # no tracebacks with the server's paths in the browser (the app words its errors)
        "--client.showErrorDetails",
        "none",
    ]
    if headless:
        cmd += ["--server.headless", "true"]
    script_args = ([str(path)] if path else []) + (["--profile", profile] if profile else [])
    if script_args:
        cmd += ["--", *script_args]
    return cmd


def run(args: argparse.Namespace) -> int:
    path = None
    if args.path:
        p = Path(args.path).expanduser()
        if not p.exists():
            raise InputOpenError(f"Workspace '{p}' does not exist. Fix: check the path.")
        path = str(p.resolve())
    import importlib.util

    missing = [m for m in ("streamlit", "streamlit_folium") if importlib.util.find_spec(m) is None]
    if missing:
        raise InputOpenError(
            f"The app needs Streamlit and streamlit-folium ({', '.join(missing)} missing). "
            "Fix: pip install 'ms4map[app]'."
        )
    profile = _checked_profile(args.profile)
    cmd = app_command(
        path, port=args.port, address=args.address, headless=args.headless, profile=profile
    )
    print(f"ms4map app: http://{args.address}:{args.port}  (Ctrl+C stops it)", file=sys.stderr)
    return run_server(cmd)


def _checked_profile(profile: str | None) -> str | None:
    """The profile checked before the server starts (a bad one is a clear error here, not
    a failure on a page); a file by its full path, as the server runs elsewhere."""
    if not profile:
        return None
    from ..rules.profiles import BUILTIN_PROFILES, load_profile

    load_profile(profile)
    return profile if profile in BUILTIN_PROFILES else str(Path(profile).expanduser().resolve())


def run_server(cmd: list[str]) -> int:
    """Run the Streamlit server and stop it with ``ms4map app``: SIGTERM and SIGHUP sent
    to this process are forwarded to the server (Ctrl+C reaches both already), so no
    server is left running; returns the server's exit code (0 after Ctrl+C)."""
    proc = subprocess.Popen(cmd)
    forwarded: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        forwarded.append(signum)
        if proc.poll() is None:
            proc.send_signal(signum)

    old = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            old[sig] = signal.signal(sig, forward)
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:  # the server got the Ctrl+C too; let it finish
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                return 0
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if proc.poll() is None:  # never leave the server behind
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    if forwarded and code < 0:  # stopped by the signal we forwarded: a normal stop
        return 128 + forwarded[0]
    return code


COMMANDS = (Command("app", ABOUT, run, _options),)
