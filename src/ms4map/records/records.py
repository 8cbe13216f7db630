"""The facade of a workspace's IDDE records: :class:`Records`, one class over reads and writes.

:func:`~ms4map.records.open.open_records` makes one; :mod:`~ms4map.records.reads`
and :mod:`~ms4map.records.writes` do the work, with the :class:`Records` as their
first argument.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import pandas as pd

from ..rules.profiles import Profile
from . import reads, tamper, writes
from .periods import Period, PeriodSettings
from .permit import PermitYear
from .photos import MAX_PHOTO_BYTES

if TYPE_CHECKING:
    from ..pipeline import PipelineResult

__all__ = ["Records"]


class Records(PermitYear):
    """The IDDE records of one workspace (use :func:`open_records`).

    Attributes
    ----------
    path : pathlib.Path
        The records GeoPackage.
    workspace : pathlib.Path
        The workspace it belongs to (only its outfalls layer is read on opening).
    user, role : str
        Who acts, as ``smo`` (edits) or ``viewer`` (reads only).
    profile : Profile
        The municipality profile (deadlines, reporting-year start).
    outfalls : GeoDataFrame
        ``outfall_id`` and point of every outfall of the workspace, in the file's CRS.
    """

    def __init__(
        self,
        path: Path,
        workspace: Path,
        *,
        user: str,
        role: str,
        profile: Profile,
        outfalls: gpd.GeoDataFrame,
        inputs: list[Path],
        options: dict[str, Any],
        year_start: tuple[int, int],
        periods: PeriodSettings | None = None,
    ) -> None:
        self.path = path
        self.workspace = workspace
        self._user = user
        self._role = role
        self.profile = profile
        self.outfalls = outfalls
        self.inputs = inputs
        self.year_start = year_start
        self.periods = periods if periods is not None else PeriodSettings()
        self._options = options
        self._srs_id = int(outfalls.crs.to_epsg() or 100000) if outfalls.crs else 100000
        self._structures: gpd.GeoDataFrame | None = None
        self._parcel_ids: set[str] | None = None
        self._srs_id = writes.file_srs_id(self)

    @property
    def user(self) -> str:
        """Who acts: set once, by :func:`~ms4map.records.open_records` (read-only)."""
        return self._user

    @property
    def role(self) -> str:
        """``smo`` or ``viewer``: set once, by :func:`~ms4map.records.open_records` from
        the users file (read-only; a viewer cannot become the SMO by assignment)."""
        return self._role

    def __repr__(self) -> str:
        return f"<Records {self.path.name}: {len(self.outfalls)} outfalls, user {self.user} ({self.role})>"

    # ---------------------------------------------------------------- reads
    def inspections(self, *, history: bool = False) -> gpd.GeoDataFrame:
        """Inspections (current versions; every version with ``history=True``).

        Columns: ``inspection_id, version, outfall_id, date``, the inspection fields,
        ``created_at, created_by``, ``flow_type`` and ``flow_type_reason`` (the
        flow-type chart of :func:`ms4map.idde.flow_type` on the tests), geometry.
        """
        return reads.inspections(self, history=history)

    def samples(self, case_id: int | None = None, *, history: bool = False) -> gpd.GeoDataFrame:
        """Track-down samples (current versions), optionally of one case, with flow type."""
        return reads.samples(self, case_id, history=history)

    def cases(self, *, history: bool = False) -> gpd.GeoDataFrame:
        """Cases (current version = the latest step; every step with ``history=True``)."""
        return reads.cases(self, history=history)

    def attachments(self) -> pd.DataFrame:
        """Attachments without their bytes (see :meth:`attachment_data`)."""
        return reads.attachments(self)

    def attachment_data(self, attachment_id: int) -> bytes:
        """The bytes of one attachment."""
        return reads.attachment_data(self, attachment_id)

    def audit(self) -> pd.DataFrame:
        """The audit trail: one row per change, oldest first.

        Columns: ``audit_id, created_at`` (when, UTC), ``created_by`` (who), ``role``,
        ``table_name``, ``row_id``, ``version``, ``action``, ``old_values`` and
        ``new_values`` (JSON text).
        """
        return reads.audit(self)

    def outfall_status(self) -> gpd.GeoDataFrame:
        """Every outfall's one status: its inspections, its cases and the outfalls
        layer's own ``status``, ordered ``not_flowing`` < ``flowing`` < ``suspect`` <
        ``illicit`` (``eliminated`` only by a case); no inspection lowers ``suspect`` or
        ``illicit``.

        See :func:`ms4map.records.summary.outfall_status` for the rules; the layer's
        own ``status`` column is also kept as ``layer_status``.
        """
        return reads.status(self)

    def deadlines(
        self, *, today: dt.date | str | None = None, case_id: int | None = None
    ) -> pd.DataFrame:
        """Every deadline the cases have reached, ``due``/``overdue``/``met``/... on ``today``."""
        return reads.deadlines(self, today=today, case_id=case_id)

    def profile_of(self, case: Mapping[str, Any]) -> Profile | None:
        """The profile a case (a row of :meth:`cases`) is judged by; ``None`` when it is
        not at hand (:mod:`ms4map.records.case_profile`)."""
        return reads.profile_of(self, case)

    def period(self, year: int | None = None, kind: str | None = None) -> Period:
        """The reporting period of ``kind`` (default: the profile's, e.g. the permit year)
        that starts in ``year`` (default: the one today falls in)."""
        return reads.period_of(self, year, kind)

    def summary(self, year: int | None = None, *, period: str | None = None) -> dict[str, Any]:
        """The figures of a reporting period (default: the profile's period today falls in).

        See :func:`ms4map.records.summary.summary`; ``year`` is the year the period
        starts in (under the New York profiles the permit year 2025 runs 3 January 2025 to
        2 January 2026), ``period`` one of :data:`ms4map.records.periods.PERIOD_KINDS`.

        Raises
        ------
        UsageError
            An unknown period; a year whose period ends before the first record.
        """
        return reads.year_summary(self, year, kind=period)

    def annual_report(self, year: int | None = None, *, period: str | None = None) -> pd.DataFrame:
        """One row of :meth:`summary` figures per reporting period up to ``year``."""
        return reads.year_report(self, year, kind=period)

    def next_sample(
        self, case_id: int, result: PipelineResult | None = None, *, weight: str = "area"
    ) -> dict[str, Any]:
        """The next structure to sample for a case, from the samples already taken.

        Walks the bisection plan of :func:`ms4map.idde.sampling_plan` along the
        recorded results: the first planned structure, then on each sample taken at
        the planned structure the branch its ``result`` (``flow``/``clean``) selects.

        Parameters
        ----------
        case_id : int
        result : PipelineResult, optional
            From :func:`ms4map.pipeline.run`; computed (cached) from the workspace
            when not given (the only method here that runs the pipeline).
        weight : {"area", "candidates", "structures"}

        Returns
        -------
        dict
            ``case_id, outfall_id, struct_id`` (None when nothing is left to split),
            ``kind``, ``sample`` (depth in the plan), ``followed`` (the samples used,
            as ``struct_id: result``), ``unused`` (samples at structures off the plan),
            ``reason``.
        """
        return reads.next_sample(self, case_id, result, weight=weight)

    # ---------------------------------------------------------------- files
    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        return reads.integrity_check(self)

    def verify(self) -> dict[str, Any]:
        """Whether the records were changed outside ms4map: the audit rows' hash chain,
        and every row against what its audit row recorded (:func:`ms4map.records.tamper.verify`;
        ``ok``, ``problems``, ``chained``, ``unchained``, ``rows``)."""
        return tamper.verify(self.path)

    def backup(self, dest: str | Path) -> Path:
        """A consistent copy of the records file made with SQLite's backup API.

        Safe while others write (the copy is one committed state).  ``dest`` must not
        be the records file or an input file, and must not exist: a backup never
        replaces a file (another store, an earlier backup or any GeoPackage).
        """
        return reads.backup(self, dest)

    def export(self, dest: str | Path, *, table: str = "inspections") -> Path:
        """Write the records to a GeoPackage (every table) or one table to CSV.

        Parameters
        ----------
        dest : path
            ``.gpkg``: layers ``inspections``, ``samples``, ``cases``, ``outfall_status``,
            ``deadlines``, ``attachments`` (no bytes), ``audit``, ``projects``, ``construction``
            plus provenance; ``.csv``: the table named by ``table`` (one of these).
        table : str
        """
        return reads.export(self, dest, table=table)

    # ---------------------------------------------------------------- writes
    def add_inspection(
        self, outfall_id: str, date: dt.date | str, *, photos: Any = (), **fields: Any
    ) -> int:
        """Record one outfall inspection (ORI); returns its ``inspection_id``.

        Parameters
        ----------
        outfall_id : str
            An outfall of the workspace.
        date : date or "YYYY-MM-DD"
            Not in the future.
        **fields
            Exactly the fields of :data:`~ms4map.records.fields.INSPECTION_FIELDS`
            (``inspector``, ``time``, ``hours_since_rain``, ``flow_present``, ...).
        photos : paths or bytes, optional
            Photos attached in the same transaction: the inspection and its photos are
            written together or not at all.

        Raises
        ------
        DataError
            Unknown outfall, future date, a value outside its rule, an unknown keyword;
            nothing is written.
        PermissionError
            A viewer.
        """
        return writes.add_inspection(self, outfall_id, date, photos=photos, **fields)

    def open_case(
        self,
        outfall_id: str,
        date: dt.date | str,
        *,
        origin: str = "complaint",
        description: str | None = None,
        inspection_id: int | None = None,
        notes: str | None = None,
        photos: Any = (),
        again: bool = False,
    ) -> int:
        """Open a case at an outfall from a complaint or a finding; returns ``case_id``.

        ``photos`` are attached in the same transaction (all or nothing).  A case open
        at the same outfall, opened the same day from the same origin and description,
        is refused as the same case recorded twice unless ``again`` (a second one).

        Raises
        ------
        DataError
            Unknown outfall or inspection, bad origin, future date.
        PermissionError
            A viewer.
        """
        return writes.open_case(
            self,
            outfall_id,
            date,
            origin=origin,
            description=description,
            inspection_id=inspection_id,
            notes=notes,
            photos=photos,
            again=again,
        )

    def advance_case(
        self,
        case_id: int,
        step: str,
        date: dt.date | str,
        *,
        parcel_id: str | None = None,
        deadline: dt.date | str | None = None,
        outcome: str | None = None,
        reason: str | None = None,
        notes: str | None = None,
        photos: Any = (),
    ) -> int:
        """Record the next step of a case (a new version of its row); returns the version.

        ``photos`` are attached in the same transaction (all or nothing).

        Parameters
        ----------
        case_id : int
        step : str
            ``investigation``, ``source_found`` (needs ``parcel_id``), ``notice_sent``
            (``deadline`` = the remedy deadline of the notice; default: the profile's
            remedy period when it states one, Kingsbury 48 hours), ``appeal_filed``,
            ``appeal_decided`` (needs ``outcome``: ``upheld`` or ``overturned``),
            ``corrected``, ``eliminated``, ``closed`` (``reason`` optional).
        date : date or "YYYY-MM-DD"

        Raises
        ------
        DataError
            Unknown case or step, a step out of order or dated before the step it
            follows, a missing ``parcel_id``/``outcome``, an unknown parcel.
        PermissionError
            A viewer.
        """
        return writes.advance_case(
            self,
            case_id,
            step,
            date,
            parcel_id=parcel_id,
            deadline=deadline,
            outcome=outcome,
            reason=reason,
            notes=notes,
            photos=photos,
        )

    def add_sample(
        self,
        case_id: int,
        struct_id: str,
        date: dt.date | str,
        *,
        photos: Any = (),
        again: bool = False,
        **fields: Any,
    ) -> int:
        """Record a track-down sample at a structure for a case; returns ``sample_id``.

        A repeat of a sample the case has (every field equal) is refused unless ``again``.

        ``result`` (``flow`` = the flow or pollutant was found there, ``clean``)
        defaults to ``flow`` when ``flow_present`` is true and ``clean`` when it is
        false; one of the two must be given.  The other fields are the field tests of
        an inspection (:data:`~ms4map.records.fields.SAMPLE_FIELDS`).

        Raises
        ------
        DataError
            Unknown or closed case, unknown structure, a bad value, an unknown keyword,
            no ``result`` and no ``flow_present``.
        PermissionError
            A viewer.
        """
        return writes.add_sample(
            self, case_id, struct_id, date, photos=photos, again=again, **fields
        )

    def correct(
        self, table: str, row_id: int, *, expected_version: int | None = None, **fields: Any
    ) -> int:
        """Correct a row: a new version with the given fields changed; returns the version.

        The old version stays in the file (and in the audit trail, as ``old_values``).
        ``date`` may be corrected for inspections and samples; cases take the fields of
        :data:`~ms4map.records.fields.CASE_FIELDS`.  ``expected_version``: the version
        the change was made on (as read); when someone else has corrected the row since,
        the correction is refused instead of silently replacing theirs.

        Raises
        ------
        DataError
            Unknown table, row or field, a bad value, or the row changed since
            ``expected_version``.
        PermissionError
            A viewer.
        """
        return writes.correct(self, table, row_id, expected_version=expected_version, **fields)

    def attach(
        self,
        table: str,
        row_id: int,
        photo: str | Path | bytes,
        *,
        filename: str | None = None,
        caption: str | None = None,
        max_bytes: int = MAX_PHOTO_BYTES,
    ) -> int:
        """Attach a photo (JPEG or PNG, checked by content, size-limited) to a row.

        Parameters
        ----------
        table : {"inspections", "samples", "cases"}
        row_id : int
        photo : path or bytes

        Returns
        -------
        int
            The ``attachment_id``.

        Raises
        ------
        DataError
            Unknown table or row; a photo too large, not JPEG/PNG by content, or corrupt.
        PermissionError
            A viewer.
        """
        return writes.attach(
            self, table, row_id, photo, filename=filename, caption=caption, max_bytes=max_bytes
        )
