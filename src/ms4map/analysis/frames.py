"""Small helpers on layer frames shared by the analysis and the maps."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["WGS84", "column_or_none", "crs_unit_m", "feature_ids"]

WGS84 = "EPSG:4326"


def column_or_none(frame: pd.DataFrame, name: str) -> pd.Series:
    """``frame[name]``, or a column of ``None`` when the frame lacks it."""
    if name in frame.columns:
        return frame[name]
    return pd.Series([None] * len(frame), index=frame.index, dtype=object)


def feature_ids(frame: pd.DataFrame, column: str) -> pd.Series:
    """The ids of a layer's rows as strings: ``column``, else the index of that name, else
    the row numbers."""
    if column in frame.columns:
        return frame[column].astype(str)
    if frame.index.name == column:
        return pd.Series(frame.index.astype(str), index=frame.index)
    return pd.Series([str(i) for i in range(len(frame))], index=frame.index)


def crs_unit_m(crs: Any) -> float:
    """Metres per unit of ``crs`` as the map and the inventory read it (1.0 when unknown)."""
    try:
        from pyproj import CRS

        c = CRS.from_user_input(crs)
        if c.is_geographic:
            return 111320.0
        return float(c.axis_info[0].unit_conversion_factor or 1.0)
    except Exception:  # noqa: BLE001 - fall back to metres
        return 1.0
