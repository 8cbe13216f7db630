"""Imported last by the workers' fork server (``ms4map.batch.WORKER_PRELOAD``).

Two settings that every worker forked from the fork server inherits:

- Python's cyclic garbage collector is frozen on everything the fork server has
  imported (``gc.freeze``), as the Python documentation advises before forking.  The
  workers then never scan those objects (nor copy the memory pages holding them by
  touching their collector headers), and the fork server itself exits at the end of a
  run without collecting them: that collection took about 0.5 s after the run's own
  process had exited, and anything reading the command's output (a pipe, ``tee``, a
  benchmark) waited for it (docs/batch.md, "Measured, fifth session").
- Ctrl-C (``SIGINT``) is ignored.  At a terminal it reaches every process of the run;
  the batch process stops the run and closes the cluster, which ends the workers,
  instead of each worker printing its own ``KeyboardInterrupt`` traceback.  The fork
  server restores, in each worker it forks, the handlers it found after importing this.
"""

from __future__ import annotations

import gc
import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
gc.freeze()
