"""A field import killed with SIGKILL at random moments: none or all of the package (issue 32)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest
from test_records_field import add_rows, demo_copy

import ms4map.records as rec
from ms4map.records.field_export import export_package

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_IMPORTER = """
import contextlib, sys
import ms4map.records as rec
from ms4map.records import gpkg
from ms4map.records.field_import import import_package
r = rec.open_records(sys.argv[1], user="jsmith")
inner = gpkg.write_tx

@contextlib.contextmanager
def tx(path):  # says when the import's write transaction has begun
    with inner(path) as con:
        print("in-tx", flush=True)
        yield con

gpkg.write_tx = tx
print("start", flush=True)
print(import_package(r, sys.argv[2])["added"], flush=True)
"""

N = 300


def _counts(path) -> tuple[str, int, int, int]:
    with sqlite3.connect(path) as con:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        n = con.execute("SELECT count(*) FROM inspections").fetchone()[0]
        a = con.execute("SELECT count(*) FROM audit WHERE table_name = 'inspections'").fetchone()[0]
        pk = con.execute("SELECT count(*) FROM audit WHERE action = 'field_import'").fetchone()[0]
    return ok, n, a, pk


def test_sigkill_during_import_leaves_none_or_all(tmp_path) -> None:
    r = rec.open_records(demo_copy(tmp_path), user="jsmith")
    pkg = tmp_path / "trip.gpkg"
    export_package(r, pkg, outfalls=["OF-001", "OF-002"], hillshade=False)
    add_rows(pkg, "inspections", [
        {"device_uuid": str(uuid.uuid4()), "device_id": "phone", "outfall_id": "OF-001",
         "date": "2025-06-02", "odor": i % 4, "notes": "x" * 3000}
        for i in range(N)
    ])  # fmt: skip
    rng = random.Random(32)
    delays = [0.0] + [rng.uniform(0.0, 0.5) for _ in range(5)]
    outcomes = []
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _IMPORTER, str(r.path), str(pkg)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "start", proc.stderr.read()
        assert proc.stdout.readline().strip() == "in-tx", proc.stderr.read()
        time.sleep(delays.pop(0))  # the first kill lands inside the transaction
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)
        after = rec.open_records(r.path, user="after")  # rolls back a hot journal
        assert after.integrity_check() == "ok"
        ok, n, a, pk = _counts(r.path)
        assert ok == "ok"
        assert n in (0, N) and a == n and pk == (1 if n else 0)
        assert after.verify()["ok"]
        outcomes.append(n)
        print("killed; rows after:", n, "rc", proc.returncode)
        if n:
            break
    final = rec.open_records(r.path, user="jsmith")
    from ms4map.records.field_import import import_package

    rep = import_package(final, pkg)  # finishing (or repeating) adds exactly the rest
    assert _counts(r.path)[1] == N and rep["already"] in (0, N)
    assert outcomes[0] == 0  # killed inside the transaction: nothing of it in the store
