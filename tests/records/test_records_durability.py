"""Crash and concurrency: a writer killed with SIGKILL, and two writer processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_records import make_town

import ms4map.records as rec

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_WRITER = """
import sys
import ms4map.records as rec
r = rec.open_records(sys.argv[1], user=sys.argv[2])
n = int(sys.argv[3])
i = 0
while n < 0 or i < n:
    i += 1
    iid = r.add_inspection("OF-" + str(1 + i % 4), "2025-06-02", odor=i % 4,
                           notes="x" * 2000)
    print(iid, flush=True)
"""


def _writer(town: Path, user: str, n: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(town), user, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _counts(path: Path) -> tuple[str, int, int, list[int]]:
    with sqlite3.connect(path) as con:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        n = con.execute("SELECT count(*) FROM inspections").fetchone()[0]
        a = con.execute("SELECT count(*) FROM audit").fetchone()[0]
        ids = [r[0] for r in con.execute("SELECT inspection_id FROM inspections ORDER BY 1")]
    return ok, n, a, ids


def test_sigkill_mid_writing_loses_nothing_committed(tmp_path) -> None:
    town = make_town(tmp_path)
    rec.open_records(town, user="setup")  # create the file before the race
    proc = _writer(town, "killed", -1)
    reported = 0
    deadline = time.monotonic() + 15
    assert proc.stdout is not None
    while reported < 40 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        reported = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert reported >= 40, proc.stderr.read() if proc.stderr else ""
    path = town.with_name("town.records.gpkg")
    r = rec.open_records(town, user="after")  # rolls back any hot journal
    assert r.integrity_check() == "ok"
    ok, n, a, ids = _counts(path)
    assert ok == "ok"
    # every change reported as committed is there, at most one more committed after the
    # last print; no half row: each inspection has exactly its audit row
    assert reported <= n <= reported + 1
    assert a == n
    assert ids == list(range(1, n + 1))
    assert not Path(str(path) + "-journal").exists() or r.integrity_check() == "ok"
    assert r.add_inspection("OF-1", "2025-06-03") == n + 1  # and the file is writable


def test_two_writer_processes_both_succeed(tmp_path) -> None:
    town = make_town(tmp_path)
    procs = [_writer(town, user, 200) for user in ("alice", "bob")]  # both create the file
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "locked" not in err
    ok, n, a, ids = _counts(town.with_name("town.records.gpkg"))
    assert (ok, n, a) == ("ok", 400, 400)
    assert ids == list(range(1, 401))
    audit = rec.open_records(town, user="reader").audit()
    assert audit["created_by"].value_counts().to_dict() == {"alice": 200, "bob": 200}
