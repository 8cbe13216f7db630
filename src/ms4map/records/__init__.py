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
status (``not_flowing`` < ``flowing`` < ``suspect`` < ``illicit``; ``eliminated`` only
by a case) is derived from the inspections, the cases and the outfalls layer, never
typed by hand, and never lowered by an inspection (:func:`~ms4map.records.summary.outfall_status`).

Modules: :mod:`~ms4map.records.open` (:func:`open_records`), :mod:`~ms4map.records.records`
(the :class:`Records` facade), :mod:`~ms4map.records.reads` and
:mod:`~ms4map.records.writes` (its work), :mod:`~ms4map.records.layers` (the workspace
layers read without the pipeline), :mod:`~ms4map.records.gpkg` (the file), and
:mod:`~ms4map.records.fields`, :mod:`~ms4map.records.cases`,
:mod:`~ms4map.records.summary`, :mod:`~ms4map.records.photos` (pure rules);
:mod:`~ms4map.records.periods` (the permit year and the other reporting periods),
:mod:`~ms4map.records.pack` and :mod:`~ms4map.records.pack_write` (the compliance
pack), :mod:`~ms4map.records.verify` (field verification of outfalls),
:mod:`~ms4map.records.field_export` and :mod:`~ms4map.records.field_import` (the
offline field package); :mod:`~ms4map.records.smp` (the SMP programme: practices,
inspections, maintenance, what is overdue), :mod:`~ms4map.records.smp_fields` (the
practice kinds and fields), :mod:`~ms4map.records.smp_import` (the import, drainage
areas) and :mod:`~ms4map.records.smp_drainage` (the area draining to a practice).
offline field package); :mod:`~ms4map.records.projects`,
:mod:`~ms4map.records.construction` and :mod:`~ms4map.records.project_fields` (land
development projects and their construction oversight, tables ``projects`` and
``construction``).

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

from . import (
    annual,
    case_profile,
    cases,
    construction,
    field_export,
    field_import,
    fields,
    gpkg,
    logins,
    pack,
    pack_write,
    periods,
    photos,
    project_fields,
    projects,
    smp,
    smp_drainage,
    smp_fields,
    smp_import,
    users,
    verify,
)
from .cases import DEADLINE_STATUSES, STEPS, case_deadlines
from .fields import (
    CASE_FIELDS,
    CHARACTERIZATIONS,
    FLOW_ESTIMATES,
    INSPECTION_FIELDS,
    SAMPLE_FIELDS,
)
from .open import ROLES, USERS_FILE_ENV, default_user, open_records, records_path
from .photos import MAX_PHOTO_BYTES, check_photo
from .records import Records
from .summary import SUMMARY_KEYS, annual_report, outfall_status, summary

__all__ = [
    "CASE_FIELDS",
    "CHARACTERIZATIONS",
    "DEADLINE_STATUSES",
    "FLOW_ESTIMATES",
    "INSPECTION_FIELDS",
    "MAX_PHOTO_BYTES",
    "ROLES",
    "SAMPLE_FIELDS",
    "STEPS",
    "SUMMARY_KEYS",
    "USERS_FILE_ENV",
    "Records",
    "annual_report",
    "case_deadlines",
    "check_photo",
    "default_user",
    "open_records",
    "outfall_status",
    "records_path",
    "summary",
    # the public modules
    "annual",
    "case_profile",
    "cases",
    "construction",
    "field_export",
    "field_import",
    "fields",
    "gpkg",
    "logins",
    "pack",
    "pack_write",
    "periods",
    "photos",
    "smp",
    "smp_drainage",
    "smp_fields",
    "smp_import",
    "project_fields",
    "projects",
    "users",
    "verify",
]
