"""Small helpers on layer frames shared by the analysis and the maps.

Metres per CRS unit: :func:`ms4map.core.units.metres_per_unit` (the one units helper).
"""

from __future__ import annotations

import pandas as pd

__all__ = ["WGS84", "column_or_none", "feature_ids"]

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
