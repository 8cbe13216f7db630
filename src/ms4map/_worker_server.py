"""Imported last by the workers' fork server (``ms4map.batch.WORKER_PRELOAD``).

It freezes Python's cyclic garbage collector on everything the fork server has imported
(``gc.freeze``), as the Python documentation advises before forking.  The workers forked
from it then never scan those objects (nor copy the memory pages holding them by
touching their collector headers), and the fork server itself exits at the end of a run
without collecting them: that collection took about 0.5 s after the run's own process
had exited, and anything reading the command's output (a pipe, ``tee``, a benchmark)
waited for it (docs/batch.md, "Measured, fifth session").
"""

from __future__ import annotations

import gc

gc.freeze()
