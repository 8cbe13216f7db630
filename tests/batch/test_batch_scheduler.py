"""`ms4map batch` schedulers: without the dask extra, more workers than cores, the dashboard.

Issue 28 item 13 and issue 29 item 3: a missing dask extra is a usage error (exit 4)
naming the extra and ``--scheduler none``; ``local:N`` never starts more worker processes
than cores; the dashboard of a local cluster is off by default and, when asked for, is
served on 127.0.0.1 only.
"""

from __future__ import annotations

import sys

import pytest

import ms4map.batch
import ms4map.core.errors
from ms4map.batch import cpu_cores, parse_scheduler
from ms4map.batch.cluster import DASHBOARD_ADDRESS, local_cluster_options
from ms4map.cli import main


def _manifest(tmp_path):
    ws = tmp_path / "town.gpkg"
    ws.write_bytes(b"")  # never opened: the scheduler is refused first
    man = tmp_path / "m.toml"
    man.write_text(f'[[town]]\nname = "t"\nworkspace = "{ws.name}"\n', encoding="utf-8")
    return man


@pytest.mark.parametrize("scheduler", ["local", "local:1", "tcp://127.0.0.1:9"])
def test_batch_without_the_dask_extra_exits_4_naming_it(tmp_path, monkeypatch, capsys, scheduler):
    # dask and distributed not installed: importing them raises ImportError
    for mod in [m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "distributed", None)
    monkeypatch.setattr(ms4map.batch, "start_worker_server", lambda: False)
    monkeypatch.setattr(ms4map.batch.cluster, "start_worker_server", lambda: False)
    out = tmp_path / "o"
    code = main(["batch", str(_manifest(tmp_path)), "--out", str(out), "--scheduler", scheduler])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "pip install 'ms4map[dask]'" in err
    assert "--scheduler none" in err
    assert "internal error" not in err
    assert not out.exists()


def test_local_n_is_capped_at_the_cores(monkeypatch):
    monkeypatch.setattr(ms4map.batch.cluster, "_cores", lambda: 2)
    assert parse_scheduler("local:999") == ("local", 2)
    assert parse_scheduler("local:2") == ("local", 2)
    assert parse_scheduler("local:1") == ("local", 1)
    assert parse_scheduler("local") == ("local", 2)
    assert cpu_cores() == 2
    assert local_cluster_options(999)["n_workers"] == 2


def test_the_cli_says_when_it_caps_the_workers(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ms4map.batch.cluster, "_cores", lambda: 2)
    monkeypatch.setattr(ms4map.batch, "start_worker_server", lambda: False)
    seen = {}

    def fake_run_batch(towns, out, *, scheduler, dashboard, **kw):
        seen.update(workers=parse_scheduler(scheduler)[1], dashboard=dashboard)
        raise ms4map.core.errors.UsageError("stop here")

    monkeypatch.setattr(ms4map.batch, "run_batch", fake_run_batch)
    monkeypatch.setattr(ms4map.batch, "read_manifest", lambda _p: [])
    code = main(["batch", "m.toml", "--out", str(tmp_path / "o"), "--scheduler", "local:999"])
    err = capsys.readouterr().err
    assert code == 4
    assert seen == {"workers": 2, "dashboard": False}
    assert "asks for 999 workers" in err and "gets 2" in err


def test_the_dashboard_is_off_by_default_and_never_on_all_interfaces():
    off = local_cluster_options(1)
    assert off["dashboard_address"] is None
    assert off["host"] == "127.0.0.1"
    on = local_cluster_options(1, dashboard=True)
    assert on["dashboard_address"] == DASHBOARD_ADDRESS
    assert DASHBOARD_ADDRESS.startswith("127.0.0.1:")


def test_run_batch_passes_the_dashboard_choice_to_the_cluster(tmp_path, monkeypatch):
    import distributed

    from ms4map.batch import Town
    from ms4map.core.errors import UsageError

    got = []

    def fake_cluster(**kw):
        got.append(kw)
        raise RuntimeError("not started in this test")

    monkeypatch.setattr(distributed, "LocalCluster", fake_cluster)
    monkeypatch.setattr(ms4map.batch.cluster, "start_worker_server", lambda: False)
    towns = [Town(name="t", workspace=str(tmp_path / "t.gpkg"))]
    for board in (False, True):
        with pytest.raises(UsageError):
            ms4map.batch.run_batch(towns, tmp_path / "o", scheduler="local:1", dashboard=board)
    assert [kw["dashboard_address"] for kw in got] == [None, DASHBOARD_ADDRESS]
    assert all(kw["host"] == "127.0.0.1" for kw in got)
