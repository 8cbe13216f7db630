"""IDDE records: outfall inspections, track-down samples and cases, with an audit trail.

The records of a workspace live in a GeoPackage beside it, ``<stem>.records.gpkg``
(never inside the user's input files), created on first use.  Opening it reads only
the workspace's outfalls layer (ids and points); nothing here runs the pipeline except
:meth:`Records.next_sample`, which needs the storm network.

Tables (each row with ``created_at`` and ``created_by``):

* ``inspections`` -- outfall reconnaissance inspections (ORI), at the outfall's point;
* ``samples`` -- track-down samples at structures, linked to a case;
* ``cases`` -- complaint or finding -> investigation -> source found -> notice ->
  appeal -> corrected / eliminated / closed, each step dated, one row per step;
* ``attachments`` -- photos (JPEG/PNG checked by content, size-limited);
* ``audit`` -- one row per change (who, when, table, row id, action, old and new
  values as JSON), written in the same transaction as the change.

Every table is append-only (SQLite triggers refuse UPDATE and DELETE): a correction is
a new version of a row, and the read methods return the current versions.  Outfall
status (``flowing``, ``suspect``, ``illicit``, ``eliminated``, ...) is derived from
the latest inspection and the cases, never typed by hand.

Examples
--------
>>> import ms4map.records as rec                                    # doctest: +SKIP
>>> r = rec.open_records("town.gpkg", user="jsmith")                # doctest: +SKIP
>>> r.add_inspection("OF-009", "2025-06-02", flow_present=True, odor=2,
...                  detergents=0.4, characterization="suspect")   # doctest: +SKIP
1
>>> r.summary(2025)["outfalls_screened"]                           # doctest: +SKIP
1
"""

from __future__ import annotations

from .cases import (
    DEADLINE_STATUSES,
    STEPS,
    add_business_days,
    case_deadlines,
    is_business_day,
    last_day,
    ny_public_holidays,
)
from .fields import (
    CASE_FIELDS,
    CHARACTERIZATIONS,
    FLOW_ESTIMATES,
    INSPECTION_FIELDS,
    SAMPLE_FIELDS,
)
from .gpkg import BUSY_TIMEOUT_S, JOURNAL_MODE, TABLES
from .photos import MAX_PHOTO_BYTES, check_photo
from .store import ROLES, USERS_FILE_ENV, Records, default_user, open_records, records_path
from .summary import SUMMARY_KEYS, annual_report, outfall_status, summary

__all__ = [
    "BUSY_TIMEOUT_S",
    "CASE_FIELDS",
    "CHARACTERIZATIONS",
    "DEADLINE_STATUSES",
    "FLOW_ESTIMATES",
    "INSPECTION_FIELDS",
    "JOURNAL_MODE",
    "MAX_PHOTO_BYTES",
    "ROLES",
    "SAMPLE_FIELDS",
    "STEPS",
    "SUMMARY_KEYS",
    "TABLES",
    "USERS_FILE_ENV",
    "Records",
    "add_business_days",
    "is_business_day",
    "last_day",
    "ny_public_holidays",
    "annual_report",
    "case_deadlines",
    "check_photo",
    "default_user",
    "open_records",
    "outfall_status",
    "records_path",
    "summary",
]
