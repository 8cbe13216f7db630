"""Click-to-answer time of the map app in a real browser (Debian chromium, no internet).

Writes a synthetic county (``map_bytes.county_layers``, 300,000 parcels by
default) as a GeoPackage in a temporary folder, starts the app on it, waits
for the first load (workspace, drainage and map layers are computed once and
cached), then clicks points on the map and times each click until the
clicked feature's details ("Downstream path") are shown.  Also reports the
bytes of the map component's data per render as the browser received them.

Target: <= 1 s from click to answer.  Usage::

    python benchmarks/browser_click.py [--parcels 300000] [--clicks 8] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

CHROMIUM = "/usr/bin/chromium"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, timeout: float) -> None:
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - localhost
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(url)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parcels", type=int, default=300_000)
    ap.add_argument("--clicks", type=int, default=8)
    ap.add_argument("--keep", type=Path, default=None, help="folder for the county (kept)")
    ap.add_argument("--load-timeout", type=float, default=1800.0)
    ap.add_argument("--start", default="0300.-0300", help="parcel id to search first")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print("chromium is not installed (apt-get install chromium)")
        return 2
    import pyogrio
    from map_bytes import county_layers
    from playwright.sync_api import sync_playwright

    folder = args.keep or Path(tempfile.mkdtemp(prefix="ms4map_county_"))
    folder.mkdir(parents=True, exist_ok=True)
    gpkg = folder / f"county_{args.parcels}.gpkg"
    t = time.perf_counter()
    if not gpkg.exists():
        for name, frame in county_layers(args.parcels).items():
            pyogrio.write_dataframe(frame, gpkg, layer=name)
    print(f"county: {gpkg} ({args.parcels:,} parcels; written in {time.perf_counter() - t:.1f} s)")

    port = _port()
    env = dict(os.environ, MS4MAP_DATA_DIR=str(folder / "data"))
    log = open(folder / "streamlit.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(REPO / "app.py"),
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--server.enableStaticServing",
            "true",
            "--server.fileWatcherType",
            "none",
            "--browser.gatherUsageStats",
            "false",
            "--",
            str(gpkg),
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url + "/_stcore/health", 120)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
            )
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            ctx.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith(
                        ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")
                    )
                    else r.abort()
                ),
            )
            sizes: list[int] = []
            page = ctx.new_page()

            def on_ws(ws) -> None:
                ws.on(
                    "framereceived",
                    lambda payload: sizes.append(
                        len(payload) if isinstance(payload, (bytes, str)) else 0
                    ),
                )

            page.on("websocket", on_ws)
            t = time.perf_counter()
            page.goto(url)
            frame = None
            end = time.time() + args.load_timeout
            while frame is None and time.time() < end:
                for f in page.frames:
                    try:
                        if f.locator("path.leaflet-interactive").count() > 0:
                            frame = f
                            break
                    except Exception:  # noqa: BLE001
                        continue
                time.sleep(0.5)
            if frame is None:
                print("the map never drew; see", folder / "streamlit.log")
                return 1
            first = time.perf_counter() - t
            print(f"first load (open workspace + drainage + layers, then cached): {first:.1f} s")
            page.wait_for_timeout(2000)
            # zoom to a parcel (search), as a user working at street level would
            search = page.get_by_role(
                "textbox", name="Search: address, parcel id, structure id or outfall id"
            )
            t = time.perf_counter()
            search.fill(args.start)
            search.press("Enter")
            page.get_by_text("Downstream path").first.wait_for(timeout=120_000)
            print(f"search '{args.start}' to answer: {time.perf_counter() - t:.2f} s")
            page.wait_for_timeout(3000)
            box = page.locator("iframe").first.bounding_box()
            times = []
            for k in range(args.clicks):
                fx = 0.15 + 0.7 * ((k * 3) % 7) / 6
                fy = 0.2 + 0.6 * ((k * 5) % 6) / 5
                before = page.locator("h3").first.inner_text()
                t = time.perf_counter()
                page.mouse.click(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)
                try:
                    page.wait_for_function(
                        "old => { const h = document.querySelector('h3'); "
                        "return h && h.innerText !== old; }",
                        arg=before,
                        timeout=15_000,
                        polling=20,
                    )
                except Exception:  # noqa: BLE001 - the same feature was hit, or no answer
                    print(f"click {k}: no new answer within 15 s (same feature?)")
                    continue
                dt = time.perf_counter() - t
                times.append(dt)
                print(f"click {k}: {dt:.2f} s  -> {page.locator('h3').first.inner_text()}")
                page.wait_for_timeout(800)
            browser.close()
        if times:
            print()
            print(
                f"click-to-answer over {len(times)} clicks: median {statistics.median(times):.2f} s, "
                f"max {max(times):.2f} s (target <= 1 s: "
                f"{'met' if statistics.median(times) <= 1 else 'NOT met'})"
            )
            if sizes:
                big = sorted(sizes)[-3:]
                print(
                    f"largest websocket messages received: {', '.join(f'{b / 2**20:.2f} MB' for b in big)}"
                )
        return 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


if __name__ == "__main__":
    raise SystemExit(main())
