"""Fixtures shared by the test modules (pytest finds them by name; see docs/ARCHITECTURE.md).

``demo_result`` runs the pipeline on the bundled demo town once per session (the pipeline's
own in-memory cache would hand every module the same objects anyway); the others are
cheap and built per module or per test.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import ms4map
from ms4map import pipeline

# The test folders mirror src/ms4map (tests/io, tests/network, ...); their shared
# builders (network_builders, terrains, test_hydrology_overland_fixtures, make_town of
# test_records, ...) import each other by module name from any folder.
sys.path[:0] = [
    str(d)
    for d in sorted(Path(__file__).resolve().parent.iterdir())
    if d.is_dir() and d.name not in ("data", "artifacts", "__pycache__") and str(d) not in sys.path
]


def _demo_path() -> Path:
    path = ms4map.datasets.get_path("alder_falls")
    if not path.exists():
        pytest.skip("the demo town is not built")
    return path


@pytest.fixture()
def sync_events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every ``os.fsync`` (the path synced) and ``os.replace`` (the target) from now on,
    in order: ``[("fsync", path), ("replace", path), ...]``; both still happen."""
    import os

    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | os.PathLike, dst: str | os.PathLike) -> None:
        events.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


@pytest.fixture(scope="session")
def demo_result():
    """``(workspace, pipeline result)`` of the bundled demo town, built once."""
    ws = ms4map.open_workspace(_demo_path())
    return ws, pipeline.run(ws)


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo town (``demo.gpkg`` and ``demo_dem.tif``) in a temporary folder."""
    src = _demo_path()
    d = tmp_path_factory.mktemp("demo")
    shutil.copy(src, d / "demo.gpkg")
    shutil.copy(src.with_name("demo_dem.tif"), d / "demo_dem.tif")
    return d / "demo.gpkg"


@pytest.fixture()
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The app opens the demo town (no ``MS4MAP_WORKSPACE``) and writes under the returned
    temporary data folder (``MS4MAP_DATA_DIR``)."""
    data = tmp_path / "data"
    monkeypatch.delenv("MS4MAP_WORKSPACE", raising=False)
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(data))
    return data
