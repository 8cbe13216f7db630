"""Offline map assets: Leaflet and jQuery served by Streamlit itself.

folium's defaults load Leaflet, jQuery, Bootstrap, Font Awesome and plugin
scripts from public CDNs; on a network without them a map is a blank box.  The
app instead serves local copies through Streamlit's static file serving
(``server.enableStaticServing``, files under ``<app dir>/static/`` at
``/app/static/...``).  The copies come from installed packages
(``xstatic-leaflet``, ``xstatic-jquery``) and are copied, never committed, into
``<app dir>/static/vendor/`` at start-up (Streamlit refuses symlinks that leave
the static folder, so they are real copies, refreshed only when the installed
version changes).

The map needs no Bootstrap or Font Awesome: the app draws circle markers and
its own HTML legend, never ``folium.Icon`` markers.
"""

from __future__ import annotations

import importlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "VENDOR_DIRNAME",
    "VendorAsset",
    "asset_base_url",
    "ensure_static_assets",
    "installed_assets",
    "offline_css",
    "offline_js",
]

VENDOR_DIRNAME = "vendor"

#: Installed packages that ship the map's scripts: name -> (module, files to copy).
_PACKAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "leaflet": ("xstatic.pkg.leaflet", ("leaflet.js", "leaflet.css", "images")),
    "jquery": ("xstatic.pkg.jquery", ("jquery.min.js",)),
}


@dataclass(frozen=True)
class VendorAsset:
    """One installed asset package (a folder of files in site-packages)."""

    name: str
    version: str
    source: Path
    files: tuple[str, ...]


def installed_assets() -> dict[str, VendorAsset]:
    """Find the asset packages that are installed.

    Returns
    -------
    dict of str to VendorAsset
        ``{"leaflet": ..., "jquery": ...}`` for the packages found; a missing
        package is simply absent (:func:`ensure_static_assets` raises).
    """
    found: dict[str, VendorAsset] = {}
    for name, (module, files) in _PACKAGES.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        base = Path(mod.BASE_DIR)
        if all((base / f).exists() for f in files):
            found[name] = VendorAsset(name, str(getattr(mod, "VERSION", "")), base, files)
    return found


def ensure_static_assets(static_dir: str | Path) -> Path:
    """Copy the installed map assets into ``static_dir/vendor`` (idempotent).

    Parameters
    ----------
    static_dir : path
        The ``static/`` folder beside the Streamlit main script.

    Returns
    -------
    pathlib.Path
        The vendor folder.

    Raises
    ------
    ms4map.core.errors.InputOpenError
        When xstatic-leaflet or xstatic-jquery is not installed (install the
        ``app`` extra: ``pip install ms4map[app]``).
    """
    from ..core.errors import InputOpenError

    assets = installed_assets()
    missing = sorted(set(_PACKAGES) - set(assets))
    if missing:
        raise InputOpenError(
            f"The map's offline scripts are not installed ({', '.join(missing)}). "
            "Fix: pip install 'ms4map[app]' (xstatic-leaflet, xstatic-jquery)."
        )
    vendor = Path(static_dir) / VENDOR_DIRNAME
    vendor.mkdir(parents=True, exist_ok=True)
    stamp_path = vendor / "versions.json"
    wanted = {a.name: a.version for a in assets.values()}
    try:
        current = json.loads(stamp_path.read_text())
    except (OSError, ValueError):
        current = {}
    for asset in assets.values():
        dest = vendor / asset.name
        complete = all((dest / f).exists() for f in asset.files)
        if complete and current.get(asset.name) == asset.version:
            continue
        tmp = vendor / f".{asset.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for f in asset.files:
            src = asset.source / f
            if src.is_dir():
                shutil.copytree(src, tmp / f)
            else:
                shutil.copy2(src, tmp / f)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    if current != wanted:
        stamp_path.write_text(json.dumps(wanted, indent=1))
    return vendor


def asset_base_url(base_url_path: str = "") -> str:
    """URL prefix of the vendor folder as Streamlit serves it (``/app/static/vendor``)."""
    prefix = "/" + base_url_path.strip("/") if base_url_path.strip("/") else ""
    return f"{prefix}/app/static/{VENDOR_DIRNAME}"


def offline_js(base_url: str) -> list[tuple[str, str]]:
    """``default_js`` for :class:`folium.Map`, pointing at the local copies."""
    return [
        ("leaflet", f"{base_url}/leaflet/leaflet.js"),
        ("jquery", f"{base_url}/jquery/jquery.min.js"),
    ]


def offline_css(base_url: str) -> list[tuple[str, str]]:
    """``default_css`` for :class:`folium.Map`, pointing at the local copies."""
    return [("leaflet_css", f"{base_url}/leaflet/leaflet.css")]
