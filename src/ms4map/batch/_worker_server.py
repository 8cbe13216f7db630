"""Imported last by the workers' fork server (``ms4map.batch.WORKER_PRELOAD``).

Three settings of the fork server, the first two inherited by every worker it forks:

- Python's cyclic garbage collector is frozen on everything the fork server has
  imported (``gc.freeze``), as the Python documentation advises before forking.  The
  workers then never scan those objects (nor copy the memory pages holding them by
  touching their collector headers).
- Ctrl-C (``SIGINT``) is ignored.  At a terminal it reaches every process of the run;
  the batch process stops the run and closes the cluster, which ends the workers,
  instead of each worker printing its own ``KeyboardInterrupt`` traceback.  The fork
  server restores, in each worker it forks, the handlers it found after importing this.
- The fork server exits at once when the run's process has gone (``os._exit`` as the
  first exit handler), without tearing down the modules it imported.  It shares the
  run's standard output, so anything reading that output (a pipe, ``tee``, a CI log, a
  benchmark) waited for this tear-down: 0.5 s before, 0.15 - 0.2 s with the frozen
  collector, 0.07 - 0.1 s now (benchmarks/batch_speed.md, "Measured, fifth session").  It writes
  no file and owns no resource, so nothing is lost.  The workers never run exit
  handlers: a forked child ends with ``os._exit`` after its task.
"""

from __future__ import annotations

import atexit
import gc
import os
import signal


def _exit_now() -> None:  # pragma: no cover - runs as the fork server exits
    os._exit(0)


signal.signal(signal.SIGINT, signal.SIG_IGN)
gc.freeze()
atexit.register(_exit_now)
