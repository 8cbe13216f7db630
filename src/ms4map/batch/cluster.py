"""Many towns at once: run_batch, one task per town, in this process or on a (local) Dask cluster.

:func:`run_batch` runs the towns in this process (``scheduler="none"``) or on a Dask
cluster (``local``, ``local:N`` or a scheduler address, :func:`parse_scheduler`) and
keeps ``DIR/summary.csv`` up to date as towns finish.  A town that fails (bad data, an
ms4map bug, a lost worker) is ``failed`` with its error and the others go on.  The
workers of a local cluster are forked from one fork server that has imported
:data:`WORKER_PRELOAD` (:func:`start_worker_server`).  dask and distributed (the
``dask`` extra) are imported only when a cluster is used.  Details in ``docs/batch.md``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import Ms4mapError, UsageError
from .manifest import Town
from .town import STATUSES, check_outputs, run_town, write_summary

__all__ = [
    "WORKER_PRELOAD",
    "BatchRun",
    "cpu_cores",
    "local_cluster_options",
    "parse_scheduler",
    "run_batch",
    "start_worker_server",
]

TaskFn = Callable[..., dict[str, Any]]


@dataclass
class BatchRun:
    """What :func:`run_batch` did: one row per town (manifest order) and timings."""

    rows: list[dict[str, Any]]
    wall_seconds: float
    scheduler: str
    workers: int | None = None
    dashboard: str | None = None
    summary_path: Path | None = None
    #: Seconds to start (or reach) the cluster and to close it (0 for ``none``).
    startup_seconds: float = 0.0
    shutdown_seconds: float = 0.0

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] == "failed"]

    def counts(self) -> dict[str, int]:
        return {s: sum(r["status"] == s for r in self.rows) for s in STATUSES}


def run_batch(
    towns: Sequence[Town],
    out_dir: str | Path,
    *,
    scheduler: str = "local",
    force: bool = False,
    on_start: Callable[[str], None] | None = None,
    on_result: Callable[[dict[str, Any], int, int], None] | None = None,
    task: TaskFn | None = None,
    connect_timeout: float = 5.0,
    dashboard: bool = False,
) -> BatchRun:
    """Run every town (one task each) and write ``summary.csv`` as they finish.

    Parameters
    ----------
    towns : sequence of Town
        From :func:`read_manifest`.
    out_dir : path
        Folder of the outputs (created).
    scheduler : str
        ``local`` (a LocalCluster, one single-threaded worker process per core),
        ``local:N``, a scheduler address (``tcp://host:8786``) or ``none`` (this
        process, no Dask).
    force : bool
        Recompute towns whose output is up to date.
    on_start : callable, optional
        Called with a line about the cluster (its dashboard address).
    on_result : callable, optional
        Called with ``(row, done, total)`` as each town finishes.
    task : callable, optional
        The function run per town, ``task(town, out_dir, force=...) -> row``; default
        :func:`run_town`.
    connect_timeout : float
        Seconds to wait for a scheduler address.
    dashboard : bool
        Serve the Dask dashboard of a local cluster on ``127.0.0.1:8787`` (only this
        machine can open it; it has no password).  Off by default.

    Raises
    ------
    UsageError
        A bad scheduler, a cluster without the ``dask`` extra installed, or a scheduler
        address that cannot be reached (before any town runs).
    """
    t0 = time.perf_counter()
    _refuse_in_worker_start()
    kind, arg = parse_scheduler(scheduler)
    if kind != "none":
        require_dask()
    # the workers' fork server imports their modules while the outputs are checked and
    # the scheduler starts
    forked = kind == "local" and start_worker_server()
    out = check_outputs(towns, out_dir)
    fn = task or run_town
    total = len(towns)
    rows: dict[str, dict[str, Any]] = {}
    say = on_start or (lambda _m: None)

    def finished(row: dict[str, Any]) -> None:
        rows[row["name"]] = row
        write_summary([rows[t.name] for t in towns if t.name in rows], out)
        if on_result is not None:
            on_result(row, len(rows), total)

    run = BatchRun(rows=[], wall_seconds=0.0, scheduler=scheduler)
    # a town that failed in the previous run is always retried, even if an output of
    # its inputs is there (a --force run that failed; docs/batch.md)
    retry = _failed_before(out / "summary.csv")
    if kind == "none":
        for t in towns:
            finished(fn(t, str(out), force=force or t.name in retry))
    else:
        with contextlib.ExitStack() as stack:
            if forked:
                import dask

                with contextlib.suppress(ImportError):  # without it _connect says so
                    # distributed's defaults go into dask's config first: a setting made
                    # before they are there would take them all away when it is undone
                    # (and the next cluster of this process would not start)
                    import distributed  # noqa: F401
                # for the workers started now and any a nanny restarts later
                stack.enter_context(
                    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
                )
            work = _Work(towns, out, fn, force, finished, retry)
            _run_cluster(
                run,
                kind,
                arg,
                connect_timeout=connect_timeout,
                say=say,
                work=work,
                t0=t0,
                dashboard=dashboard,
            )
    run.rows = [rows[t.name] for t in towns if t.name in rows]
    run.wall_seconds = time.perf_counter() - t0
    run.summary_path = out / "summary.csv"
    if not run.rows:
        write_summary([], out)
    return run


def parse_scheduler(text: str) -> tuple[str, Any]:
    """``none`` -> ("none", None); ``local`` / ``local:N`` -> ("local", N);
    an address (``tcp://host:8786``) -> ("address", text).

    N is capped at the cores this process may use (:func:`cpu_cores`): a local cluster
    never has more worker processes than cores (``local:999`` on 2 cores gives 2).

    Raises
    ------
    UsageError
        Anything else, or ``local:N`` with N < 1.
    """
    s = (text or "").strip()
    low = s.lower()
    if low == "none":
        return "none", None
    if low == "local":
        return "local", _cores()
    if low.startswith("local:"):
        n = low.split(":", 1)[1]
        if n.isdigit() and int(n) >= 1:
            return "local", min(int(n), _cores())
        raise UsageError(
            f"--scheduler {text!r}: the number of workers must be a whole number >= 1, "
            "e.g. local:2."
        )
    if "://" in s:
        return "address", s
    raise UsageError(
        f"--scheduler {text!r} is not one of local, local:N, none or a scheduler address "
        "such as tcp://host:8786."
    )


#: The message when a cluster is asked for without dask and distributed installed.
DASK_MISSING = (
    "Running towns on Dask needs the dask extra, which is not installed. Fix: "
    "python -m pip install 'ms4map[dask]', or run the towns in this process with "
    "--scheduler none."
)


def require_dask() -> None:
    """Raise :class:`UsageError` (exit 4) naming the ``dask`` extra when dask or
    distributed cannot be imported."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError(DASK_MISSING) from None


def cpu_cores() -> int:
    """The cores this process may use: the most workers a local cluster gets."""
    return _cores()


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _failed_before(summary: Path) -> set[str]:
    """The towns the ``summary.csv`` of the previous run into this folder lists as
    ``failed`` (none when there is none, or it cannot be read)."""
    import csv

    try:
        with open(summary, newline="", encoding="utf-8") as fh:
            return {r["name"] for r in csv.DictReader(fh) if r.get("status") == "failed"}
    except (OSError, KeyError, ValueError, csv.Error):
        return set()


def _lost_row(town: Town, exc: BaseException) -> dict[str, Any]:
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        msg = (
            f"workspace '{town.workspace}': the Dask worker running this town was lost "
            "(it crashed or ran out of memory). Fix: give each worker more memory (fewer "
            "workers, e.g. --scheduler local:1) or run the town alone with "
            f"`ms4map drainage {town.workspace}`."
        )
    else:
        msg = (
            f"workspace '{town.workspace}': the task did not finish on the cluster: "
            f"{type(exc).__name__}: {exc}. Fix: check the workers can read the town's files "
            "and have ms4map installed, then rerun (finished towns are skipped)."
        )
    return {"name": town.name, "status": "failed", "error": msg, "seconds": None}


#: How a script must call :func:`run_batch` with a local cluster (said by the errors).
_MAIN_GUARD = (
    'Fix: in a script, call run_batch under `if __name__ == "__main__":` (each worker '
    "of a local cluster imports the script that started it, docs/batch.md)"
)


def _refuse_in_worker_start() -> None:
    """Refuse to run while a new worker process imports its parent's main script.

    A script that calls :func:`run_batch` at its top level, without the
    ``if __name__ == "__main__":`` guard, would otherwise start another batch (and
    another cluster) in every worker it starts.
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise UsageError(
            "run_batch was called while a worker process was starting: it was importing "
            f"the script that started the batch. {_MAIN_GUARD}."
        )


@dataclass
class _Work:
    """The towns of a run and what to do with each: the task and who takes its row."""

    towns: Sequence[Town]
    out: Path
    fn: TaskFn
    force: bool
    finished: Callable[[dict[str, Any]], None]
    retry: set[str] = field(default_factory=set)


def _run_cluster(
    run: BatchRun,
    kind: str,
    arg: Any,
    *,
    connect_timeout: float,
    say: Callable[[str], None],
    work: _Work,
    t0: float,
    dashboard: bool = False,
) -> None:
    """Start or reach the cluster, run the towns on it and close it."""
    client, cluster = _connect(kind, arg, connect_timeout, dashboard=dashboard)
    run.startup_seconds = time.perf_counter() - t0
    try:
        run.workers = len(client.scheduler_info().get("workers", {}))
        run.dashboard = _dashboard(client) if dashboard or kind != "local" else "off"
        if kind == "local":
            board = run.dashboard
            if not dashboard:
                board = "off (--dashboard serves it on this machine only, 127.0.0.1:8787)"
            say(f"Dask: local cluster of {arg} worker(s), dashboard {board}")
        else:
            _check_worker_versions(client, arg)
            wait = "" if run.workers else "; no worker yet: the towns wait for one"
            say(
                f"Dask: scheduler {arg} with {run.workers} worker(s){wait}, "
                f"dashboard {run.dashboard}"
            )
        _run_on(client, work)
    finally:
        t1 = time.perf_counter()
        client.close()
        if cluster is not None:
            cluster.close()
        run.shutdown_seconds = time.perf_counter() - t1


def _ms4map_version() -> str:
    """This process's ms4map version (run on each worker by :func:`_check_worker_versions`)."""
    from ..core.version import __version__

    return str(__version__)


def _check_worker_versions(client: Any, address: str) -> None:
    """Refuse a cluster whose workers run another ms4map version than this process
    (their answers would differ from a run here), naming the workers and both versions.

    Raises
    ------
    UsageError
        A worker runs another version, or cannot import ms4map at all.
    """
    mine = _ms4map_version()
    try:
        theirs = client.run(_ms4map_version)
    except Exception as exc:  # noqa: BLE001 - a worker without ms4map: said below
        client.close()
        raise UsageError(
            f"The workers of the Dask scheduler at {address} cannot run ms4map "
            f"({type(exc).__name__}: {str(exc)[:200]}). Fix: install ms4map {mine} (the "
            "same version as here) in the Python environment of every worker "
            "(docs/batch.md, 'A cluster of your own')."
        ) from None
    other = {w: v for w, v in theirs.items() if v != mine}
    if other:
        client.close()
        named = ", ".join(f"{w} has {v}" for w, v in sorted(other.items())[:5])
        raise UsageError(
            f"The workers of the Dask scheduler at {address} run another ms4map version "
            f"than this machine ({mine}): {named}. Fix: install ms4map {mine} on every "
            "worker (docs/batch.md, 'A cluster of your own'), or run with --scheduler local."
        )


#: Modules a town's task uses, imported once in the fork server the workers of a local
#: cluster are forked from (:func:`start_worker_server`) instead of in each worker's
#: first town.  A module missing here is only imported later, in the worker.
WORKER_PRELOAD = (
    "distributed",
    "ms4map.batch",
    "ms4map.pipeline",
    "ms4map.hydrology",  # every module of the routing (its door imports them)
    "ms4map.hydrology._kernels",  # numba and the routing kernels (from numba's disk cache)
    "ms4map.hydrology._fill",  # the fill's kernels (the chain no longer uses whitebox)
    "ms4map.drainage",
    "ms4map.network.build",
    "ms4map.network.trace",
    "ms4map.rules.conditions",
    "ms4map.rules.septic",
    "ms4map.rules.waters",
    "ms4map.rules.profiles",
    "scipy.ndimage",
    "scipy.sparse",
    "scipy.spatial",
    "rasterio",
    "rasterio.features",
    "rasterio.warp",
    "ms4map.batch._worker_server",  # last: freezes the collector on all of the above
)

#: Set in the fork server's environment (so in every worker's) unless already set:
#: one thread for numpy's BLAS, as distributed's nanny sets before it spawns a worker
#: (``distributed.nanny.pre-spawn-environ``; a forked worker would not get them).  Not
#: its ``MALLOC_TRIM_THRESHOLD_=65536``: measured here it made a 1M-cell town about 10 %
#: slower (every grid allocated and freed through mmap), and the in-process run does not
#: have it either; a worker runs one town at a time and large grids go back to the
#: system when freed anyway.
_WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}


def start_worker_server() -> bool:
    """Start the fork server that the workers of a local cluster are forked from.

    It imports :data:`WORKER_PRELOAD` once, in its own process, while this one goes on
    (reading the manifest, starting the scheduler); each worker is then a fork of it:
    no interpreter start-up and no imports in each worker, and a worker exits without
    the interpreter's slow tear-down of those modules.  Call it as early as possible;
    calling it again is free.  The fork server starts fresh (it is not a fork of this
    process), so it inherits no threads or open files from here.

    Returns ``False`` where there is no fork server (Windows): workers are spawned.
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover
        return False
    from multiprocessing import forkserver

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(WORKER_PRELOAD))
    env = {k: v for k, v in _WORKER_ENV.items() if k not in os.environ}
    if os.environ.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"  # as the nanny: one hash seed on every worker
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        forkserver.ensure_running()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return True


#: Dask settings of a local cluster (read by its scheduler and nannies as they start):
#:
#: - ``allowed-failures`` 0: a town whose worker dies is failed at once, not retried on
#:   the next worker.
#: - the workers' statistical profiler off: it samples the running town's stack every
#:   10 ms for the dashboard's Profile page, and measured on the benchmark towns a town
#:   took about 10 % more CPU with it (0.92 against 0.82 s, docs/batch.md).  A cluster
#:   given by address keeps its own settings.
_LOCAL_CLUSTER_CONFIG = {
    "distributed.scheduler.allowed-failures": 0,
    "distributed.worker.profile.enabled": False,
}


#: Where a local cluster serves its dashboard when asked to (``dashboard=True``): this
#: machine only.  Dask's own default (``:8787``) listens on every interface, and the
#: dashboard has no password (worker addresses, folders, logs, errors).
DASHBOARD_ADDRESS = "127.0.0.1:8787"


def local_cluster_options(n_workers: int, *, dashboard: bool = False) -> dict[str, Any]:
    """The keyword arguments of the ``LocalCluster`` of ``--scheduler local:N``.

    The scheduler listens on 127.0.0.1; the dashboard is off unless ``dashboard``,
    then on :data:`DASHBOARD_ADDRESS` (never on all interfaces).
    """
    return {
        "n_workers": int(min(n_workers, _cores())),
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": DASHBOARD_ADDRESS if dashboard else None,
        "silence_logs": logging.CRITICAL,
    }


def _connect(kind: str, arg: Any, timeout: float, *, dashboard: bool = False) -> tuple[Any, Any]:
    require_dask()
    import dask
    from distributed import Client, LocalCluster

    if kind == "local":
        try:
            with dask.config.set(_LOCAL_CLUSTER_CONFIG):
                cluster = LocalCluster(**local_cluster_options(int(arg), dashboard=dashboard))
        except RuntimeError as exc:  # "Nanny failed to start": the worker's error is above
            raise UsageError(
                f"The local Dask cluster did not start: its worker processes failed "
                f"({str(exc).rstrip('.')}; their error is printed above). {_MAIN_GUARD}; "
                "otherwise run with the scheduler 'none' to see the error in this process."
            ) from exc
        return Client(cluster), cluster
    return _client_at(Client, arg, timeout), None


def _client_at(client_class: Any, address: str, timeout: float) -> Any:
    """A client of the scheduler at ``address``, or a :class:`UsageError` within about
    three times ``timeout``: a service there that is not a Dask scheduler (a web server
    that never answers Dask's handshake, a service whose reply Dask reads as a huge
    message and fails with MemoryError) is said as such, not waited for or crashed on."""
    import threading

    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = client_class(address, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - said below, in the caller's thread
            box["error"] = exc

    fix = (
        f"Fix: start a scheduler (`dask scheduler`, then `dask worker {address}` on each "
        "machine), check the address and port, or use --scheduler local."
    )
    worker = threading.Thread(target=connect, name="ms4map-connect", daemon=True)
    worker.start()
    worker.join(3 * timeout + 5)
    if worker.is_alive():
        raise UsageError(
            f"{address} does not answer as a Dask scheduler within {3 * timeout + 5:g} s "
            f"(something listens there, but not Dask). {fix}"
        )
    exc = box.get("error")
    if isinstance(exc, (OSError, TimeoutError)):
        raise UsageError(
            f"Cannot reach the Dask scheduler at {address} within {timeout:g} s: {exc}. {fix}"
        ) from None
    if exc is not None:
        raise UsageError(
            f"{address} is not a Dask scheduler (connecting failed with "
            f"{type(exc).__name__}: {str(exc)[:200]}). {fix}"
        ) from None
    return box["client"]


def _dashboard(client: Any) -> str:
    try:
        link = str(client.dashboard_link)
    except Exception:  # noqa: BLE001 - no dashboard service
        return "not available"
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return f"{link} (its graphs need bokeh: python -m pip install 'bokeh>=3.1')"
    return link


def _input_bytes(town: Town) -> int:
    """Bytes of a town's workspace and DEM files (what is not found counts 0): the
    order towns are handed to a cluster."""
    ws, dem = Path(town.workspace), None
    if ws.suffix.lower() == ".toml":
        from ..io import load_manifest

        try:
            m = load_manifest(ws)
        except Ms4mapError:
            return 0
        ws, dem = Path(m.get("workspace") or ws), m.get("dem")
    dem_path = Path(dem) if dem else ws.with_name(f"{ws.stem}_dem.tif")
    return _file_bytes(ws) + _file_bytes(dem_path)


def _file_bytes(p: Path) -> int:
    try:
        if p.is_dir():
            return sum(f.stat().st_size for f in p.iterdir() if f.is_file())
        return p.stat().st_size if p.is_file() else 0
    except OSError:
        return 0


def _run_on(client: Any, work: _Work) -> None:
    """Run the towns of ``work`` on the cluster, never more at once than it has worker
    threads (a town that failed in the previous run is forced: ``work.retry``).

    The scheduler would otherwise send a worker queued towns besides the one it runs,
    and count every one of them as having died with it when the worker is lost; handing
    out one town per thread keeps a lost worker's failure to the town that caused it.
    """
    import uuid

    from distributed import as_completed

    tag = uuid.uuid4().hex[:8]
    # largest first (stable: manifest order among equals), so a big town does not start
    # last while the other workers sit idle
    pending = sorted(work.towns, key=_input_bytes, reverse=True)
    inflight: dict[Any, Town] = {}
    done = as_completed()

    def top_up() -> None:
        slots = max(1, sum(client.nthreads().values()))
        while pending and len(inflight) < slots:
            t = pending.pop(0)
            force = work.force or t.name in work.retry
            key = f"ms4map-town-{t.name}-{tag}"
            f = client.submit(work.fn, t, str(work.out), force=force, key=key, pure=False)
            inflight[f] = t
            done.add(f)

    try:
        top_up()
        for f in done:
            t = inflight.pop(f)
            if f.status == "finished":
                try:
                    row = f.result()
                except Exception as exc:  # noqa: BLE001 - the result could not be fetched
                    row = _lost_row(t, exc)
            else:
                try:
                    exc = f.exception()
                except BaseException as e:  # noqa: BLE001 - cancelled futures raise here
                    exc = e
                row = _lost_row(t, exc)
            work.finished(row)
            top_up()
    finally:
        client.cancel(list(inflight))
