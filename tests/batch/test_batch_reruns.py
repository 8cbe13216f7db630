"""Batch reruns and missing inputs (issue 29 item 12): an output with rows deleted is
not up to date, a town whose inputs changed or vanished fails instead of answering
without them, and the temporary outputs of killed runs are removed."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_batch import summary, write_manifest, write_tiny_town

from ms4map.batch.town import partial_path
from ms4map.cli import main


@pytest.fixture
def valley(tmp_path: Path):
    ws = write_tiny_town(tmp_path / "v")
    man = write_manifest(tmp_path / "b.toml", [{"name": "v1", "workspace": "v/town.gpkg"}])
    out = tmp_path / "out"
    argv = ["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    return ws, argv, out


def test_an_output_with_rows_deleted_is_recomputed(valley) -> None:
    """Half the screening rows deleted: the old check (layers, versions, input hashes)
    skipped it as up to date."""
    _, argv, out = valley
    with sqlite3.connect(out / "v1.gpkg") as con:
        n = con.execute("SELECT count(*) FROM screening").fetchone()[0]
        con.execute("DELETE FROM screening WHERE fid % 2 = 0")
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "ok"
    with sqlite3.connect(out / "v1.gpkg") as con:
        assert con.execute("SELECT count(*) FROM screening").fetchone()[0] == n
    assert main(argv) == 0
    assert summary(out).loc["v1", "status"] == "skipped"


def test_a_dem_deleted_since_the_last_run_fails_the_town_until_force(valley) -> None:
    ws, argv, out = valley
    (ws.parent / "town_dem.tif").unlink()
    assert main(argv) == 1
    row = summary(out).loc["v1"]
    assert row["status"] == "failed"
    assert "town_dem.tif" in row["error"] and "is gone now" in row["error"]
    assert "--force" in row["error"]
    assert (out / "v1.gpkg").exists()  # the earlier answer stays, with its DEM
    assert main([*argv, "--force"]) == 0  # the user's decision: compute without it
    row = summary(out).loc["v1"]
    assert row["status"] == "ok" and row["off_dem_parcels"] == 0


def test_a_dem_deleted_during_the_run_fails_the_town(
    valley, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old batch wrote the answer and said ok, although its DEM was gone."""
    from ms4map import pipeline

    ws, argv, out = valley
    real = pipeline.run

    def run_and_lose_the_dem(*a, **kw):
        (ws.parent / "town_dem.tif").unlink(missing_ok=True)
        return real(*a, **kw)

    monkeypatch.setattr(pipeline, "run", run_and_lose_the_dem)
    assert main([*argv, "--force"]) == 1
    row = summary(out).loc["v1"]
    assert row["status"] == "failed"
    assert "changed while the town ran" in row["error"] and "town_dem.tif' is gone" in row["error"]
    assert not list(out.glob(".*partial*"))


def test_a_killed_runs_temporary_output_is_removed_by_the_next_run(valley) -> None:
    _, argv, out = valley
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    mine = partial_path(out / "v1.gpkg")
    left = mine.with_name(mine.name.replace(f"-{os.getpid()}.", f"-{pid}."))
    left.write_bytes(b"x" * 4096)  # a killed batch's half-written town
    legacy = out / ".v1.partial.gpkg"
    legacy.write_bytes(b"x")
    running = out / ".v2.partial-otherhost-1.gpkg"  # another computer's: not ours to judge
    running.write_bytes(b"x")
    assert main(argv) == 0
    assert not left.exists() and not legacy.exists()
    assert running.exists()


# -- issue 29 item 11: a scheduler address where no Dask scheduler listens ------------------
def test_a_web_server_as_scheduler_is_refused_in_bounded_time() -> None:
    """An HTTP server there never answers Dask's handshake: the old batch waited 60 s
    and more; now it is a usage error within 3 x timeout + 5 s."""
    import threading
    import time
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    pytest.importorskip("distributed")
    from distributed import Client

    from ms4map.batch.cluster import _client_at
    from ms4map.core.errors import UsageError

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # Dask's handshake is a bad request
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.server_address[1]}"
    t0 = time.monotonic()
    try:
        with pytest.raises(UsageError, match="does not answer as a Dask scheduler"):
            _client_at(Client, address, 1.0)
    finally:
        server.shutdown()
    assert time.monotonic() - t0 < 30


def test_another_service_failing_dask_is_said_not_crashed_on() -> None:
    from ms4map.batch.cluster import _client_at
    from ms4map.core.errors import UsageError

    def reads_a_huge_frame(address, timeout):
        raise MemoryError

    with pytest.raises(UsageError, match="is not a Dask scheduler .*MemoryError"):
        _client_at(reads_a_huge_frame, "tcp://127.0.0.1:6379", 1.0)
