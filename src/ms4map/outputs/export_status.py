"""Exports that carry the one outfall status: the IDDE records' status put on the layers that name outfalls."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

import pandas as pd

from ..records import open_records

__all__ = ["records_status", "status_from_records", "with_records_status"]

_STATUS: ContextVar[pd.DataFrame | None] = ContextVar("ms4map_export_status", default=None)


def status_from_records(records: str | Path) -> pd.DataFrame:
    """``outfall_id, status, status_reason`` of every outfall of a records file: the one
    status (:func:`ms4map.records.summary.outfall_status`: the outfalls layer's status
    merged with the inspections and the cases).  The records file is only read.

    Raises
    ------
    InputOpenError, DataError
        The records file cannot be opened (named by :func:`ms4map.records.open_records`).
    """
    rec = open_records(Path(records).expanduser(), user="ms4map export", role="viewer")
    st = pd.DataFrame(rec.outfall_status().drop(columns="geometry", errors="ignore"))
    return pd.DataFrame(
        {
            "outfall_id": st["outfall_id"].astype(str).to_numpy(),
            "status": st["status"].astype(str).to_numpy(),
            "status_reason": st["reason"].astype(str).to_numpy(),
        }
    )


@contextlib.contextmanager
def records_status(status: pd.DataFrame | None) -> Iterator[None]:
    """While in the block, every layer an export reads gets ``status`` (see
    :func:`with_records_status`)."""
    token = _STATUS.set(status)
    try:
        yield
    finally:
        _STATUS.reset(token)


def with_records_status(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the one status of the records in use (:func:`records_status`):
    a layer with ``outfall_id`` and ``status`` columns gets the records' ``status`` and
    ``status_reason`` where it names an outfall of the records, and keeps its own status
    as ``layer_status``; any other layer, or no records, is returned as it is."""
    status = _STATUS.get()
    if status is None or "outfall_id" not in frame.columns or "status" not in frame.columns:
        return frame
    by_id = status.set_index("outfall_id")
    ids = frame["outfall_id"].astype(str)
    out = frame.copy()
    out["layer_status"] = frame["status"]
    got = ids.map(by_id["status"])
    out["status"] = got.where(got.notna(), frame["status"])
    out["status_reason"] = ids.map(by_id["status_reason"]).where(
        got.notna(), "not in the records file's outfalls: the layer's status"
    )
    return out
