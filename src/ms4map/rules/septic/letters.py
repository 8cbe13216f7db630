"""The mailing list of the septic layer: owners and addresses for letters, highest priority first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...core.nulls import is_blank
from ...core.tables import csv_text
from ...io import write_text_output
from ..profiles import Profile, load_profile

__all__ = ["mailing_list", "write_mailing_list"]


def mailing_list(
    septic: pd.DataFrame, *, only_flagged: bool = True, profile: str | Profile | None = None
) -> pd.DataFrame:
    """Owner and mailing-address list for letters, highest priority first.

    Columns: ``owner, owner_address, parcel_id, address, priority_label, special_condition,
    violation, outfall_id, receiving_water, reason`` (+ ``officer_title`` when a profile is
    given).  Parcels without an owner address are kept (so nobody is silently dropped) and
    sorted last.
    """
    df = septic[septic["flagged"]] if only_flagged else septic
    cols = [
        "owner",
        "owner_address",
        "parcel_id",
        "address",
        "priority",
        "priority_label",
        "special_condition",
        "violation",
        "outfall_id",
        "receiving_water",
        "reason",
    ]
    out = pd.DataFrame(df[cols]).copy()
    out["_noaddr"] = out["owner_address"].map(is_blank)
    out = out.sort_values(["_noaddr", "priority", "owner"], ascending=[True, False, True])
    out = out.drop(columns=["_noaddr", "priority"]).reset_index(drop=True)
    if profile is not None:
        out["officer_title"] = load_profile(profile).officer_title
    return out


def write_mailing_list(
    septic: pd.DataFrame,
    path: str | Path,
    *,
    only_flagged: bool = True,
    profile: str | Profile | None = None,
    protected: Any = (),
) -> Path:
    """Write :func:`mailing_list` as CSV (UTF-8); returns the path.

    ``protected`` (input files, e.g. a workspace's ``inputs``) are never written over:
    such a path raises :class:`~ms4map.errors.UsageError`; a missing folder is created.
    """
    text = csv_text(mailing_list(septic, only_flagged=only_flagged, profile=profile))
    return write_text_output(
        path, text, protected=protected, option="--letters", suffixes=(".csv",)
    )
