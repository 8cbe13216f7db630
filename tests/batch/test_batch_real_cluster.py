"""`ms4map batch` on a Dask cluster started the way real ones are: a scheduler and two
workers as separate processes, with distributed's own command-line tools, on 127.0.0.1
(issue 34 item 4).  The same outputs as `--scheduler none`; a worker killed mid-town
fails that town only; workers of another ms4map version are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_batch import assert_same_outputs, summary, write_manifest, write_tiny_town

from ms4map.cli import main

pytest.importorskip("distributed")

START_SECONDS = 60.0


def _dask(*args: str, env: dict[str, str] | None = None, log: Path) -> subprocess.Popen:
    """``dask ARGS`` (distributed's command-line tool) as its own process."""
    out = log.open("w")
    # the test's own task below (die_on_boom) is pickled by reference: the scheduler and
    # the workers import this module as the tests see it
    path = os.pathsep.join(p for p in sys.path if p)
    return subprocess.Popen(
        [sys.executable, "-m", "dask", *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": path, **(env or {})},
    )


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=20)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two single-threaded workers, each its own process (a town whose
    worker dies is failed at once, not retried elsewhere: the setting docs/batch.md gives
    for a cluster of your own)."""
    from distributed import Client

    root = tmp_path_factory.mktemp("real_cluster")
    sched_file = root / "scheduler.json"
    env = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    procs = [
        _dask(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(sched_file),
            env=env,
            log=root / "scheduler.log",
        )
    ]
    try:
        deadline = time.monotonic() + START_SECONDS
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sched_file.exists(), (root / "scheduler.log").read_text()
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for i in (1, 2):
            procs.append(
                _dask(
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                    "--name",
                    f"w{i}",
                    log=root / f"worker{i}.log",
                )
            )
        with Client(address, timeout=30) as c:
            c.wait_for_workers(2, timeout=START_SECONDS)
        yield address
    finally:
        _stop(procs)


@pytest.fixture(scope="module")
def towns(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cluster_towns")
    write_tiny_town(root / "valley")
    return root


@pytest.fixture(scope="module")
def reference(towns, tmp_path_factory) -> Path:
    """The town run in this process (`--scheduler none`)."""
    man = write_manifest(towns / "ref.toml", [{"name": "valley", "workspace": "valley/town.gpkg"}])
    out = tmp_path_factory.mktemp("cluster_ref")
    assert main(["batch", str(man), "--out", str(out), "--scheduler", "none", "--quiet"]) == 0
    return out / "valley.gpkg"


def test_batch_on_a_cluster_of_separate_processes_gives_the_same_outputs(
    cluster, towns, reference, tmp_path, capsys
):
    man = write_manifest(
        towns / "two.toml",
        [
            {"name": "valley", "workspace": "valley/town.gpkg"},
            {"name": "valley-k", "workspace": "valley/town.gpkg", "profile": "kingsbury"},
        ],
    )
    out = tmp_path / "out"
    code = main(["batch", str(man), "--out", str(out), "--scheduler", cluster])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert f"Dask: scheduler {cluster} with 2 worker(s)" in cap.err
    s = summary(out)
    assert dict(s["status"]) == {"valley": "ok", "valley-k": "ok"}
    assert_same_outputs(out / "valley.gpkg", reference)


def die_on_boom(town, out_dir, *, force=False):
    """The batch task, except that the worker process running town 'boom' is killed
    (SIGKILL: no clean-up, as the kernel's out-of-memory killer does)."""
    import signal

    from ms4map.batch import run_town

    if town.name == "boom":
        os.kill(os.getpid(), signal.SIGKILL)
    return run_town(town, out_dir, force=force)


def test_a_worker_killed_mid_town_fails_that_town_only(cluster, towns, reference, tmp_path):
    from ms4map.batch import read_manifest, run_batch

    man = write_manifest(
        towns / "boom.toml",
        [
            {"name": "boom", "workspace": "valley/town.gpkg"},
            {"name": "valley", "workspace": "valley/town.gpkg"},
        ],
    )
    out = tmp_path / "out"
    res = run_batch(read_manifest(man), out, scheduler=cluster, task=die_on_boom)
    assert res.counts() == {"ok": 1, "failed": 1, "skipped": 0}
    s = summary(out)
    assert s.loc["boom", "status"] == "failed"
    assert "worker running this town was lost" in s.loc["boom", "error"]
    assert not (out / "boom.gpkg").exists()
    assert s.loc["valley", "status"] == "ok"
    assert_same_outputs(out / "valley.gpkg", reference)


def test_workers_of_another_ms4map_version_are_refused_before_any_town(
    cluster, towns, tmp_path, monkeypatch, capsys
):
    # this machine says another version than the workers (which import their own)
    monkeypatch.setattr("ms4map.core.version.__version__", "0.0.0-not-this")
    man = write_manifest(towns / "ver.toml", [{"name": "valley", "workspace": "valley/town.gpkg"}])
    out = tmp_path / "out"
    code = main(["batch", str(man), "--out", str(out), "--scheduler", cluster])
    err = capsys.readouterr().err
    assert code == 4
    assert "run another ms4map version" in err and "Fix" in err
    assert not (out / "valley.gpkg").exists()
