"""Many towns at once: the whole chain per town, as one task each on ``dask.distributed``.

A batch manifest (TOML, :mod:`.manifest`) lists towns; :func:`run_town` (:mod:`.town`)
runs one of them (validate -> network -> overland -> drainage -> batch screening ->
septic flags) into ``DIR/<name>.gpkg``; :func:`run_batch` (:mod:`.cluster`) runs them all,
in this process or on a Dask cluster, and keeps ``DIR/summary.csv`` up to date.  The
steps of a town live in the packages below (``ms4map.pipeline``, ``ms4map.rules``).
Importing this package loads no GIS library.  Details in ``docs/batch.md``.
"""

from .cluster import (
    WORKER_PRELOAD,
    BatchRun,
    cpu_cores,
    parse_scheduler,
    run_batch,
    start_worker_server,
)
from .manifest import Town, read_manifest
from .town import (
    LAYERS,
    SUMMARY_COLUMNS,
    check_outputs,
    off_dem_parcels,
    output_path,
    previous_summary,
    run_town,
    write_summary,
)

__all__ = [
    "LAYERS",
    "SUMMARY_COLUMNS",
    "WORKER_PRELOAD",
    "BatchRun",
    "Town",
    "check_outputs",
    "cpu_cores",
    "off_dem_parcels",
    "output_path",
    "parse_scheduler",
    "previous_summary",
    "read_manifest",
    "run_batch",
    "run_town",
    "start_worker_server",
    "write_summary",
]
