"""Small helpers on layer frames shared by the analysis and the maps.

Metres per CRS unit: :func:`ms4map.core.units.metres_per_unit` (the one units helper).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import pandas as pd

if TYPE_CHECKING:
    import geopandas as gpd

    from ..hydrology.overland import OverlandResult
    from ..network.build import StormNetwork

__all__ = ["WGS84", "ResultLike", "column_or_none", "feature_ids"]

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


class ResultLike(Protocol):
    """What the analysis reads of a :class:`ms4map.pipeline.PipelineResult`.

    ``pipeline`` is the analysis's sibling layer (``ms4map._layout``), so the analysis
    names the attributes it reads instead of importing the class.
    """

    network: StormNetwork | None
    overland: OverlandResult | None
    drainage: pd.DataFrame
    sewersheds: gpd.GeoDataFrame
    inlets: gpd.GeoDataFrame
