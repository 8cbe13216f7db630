"""Units of the working CRS: metres per CRS unit, for every distance and area ms4map computes.

The one place that reads a CRS's linear unit (``docs/ARCHITECTURE.md``: the working CRS
is always projected).  A geographic CRS is refused for distances: degrees are never
turned into metres with a constant.
"""

from __future__ import annotations

from typing import Any

from .errors import DataError

__all__ = ["metres_per_unit", "metres_to_units"]


def metres_per_unit(crs: Any, *, default: float | None = None) -> float:
    """Metres per unit of a projected CRS's first axis.

    Parameters
    ----------
    crs : anything pyproj reads (``CRS``, EPSG code, WKT)
    default : float, optional
        Returned when ``crs`` is missing or unreadable; without it that is a
        ``DataError``.  A geographic CRS is always a ``DataError``.

    Returns
    -------
    float
        1.0 for metres, 0.3048 for feet, 0.3048006096 for US survey feet.
    """
    from pyproj import CRS
    from pyproj.exceptions import CRSError

    fix = "Fix: open the workspace with a projected --crs (e.g. EPSG:26918, NAD83 / UTM 18N)."
    if crs is None:
        if default is not None:
            return default
        raise DataError(f"The data has no CRS, so distances cannot be measured. {fix}")
    try:
        c = CRS.from_user_input(crs)
        factor = c.axis_info[0].unit_conversion_factor
    except (CRSError, IndexError, AttributeError, TypeError, ValueError):
        if default is not None:
            return default
        raise DataError(
            f"The CRS {crs!r} cannot be read, so distances cannot be measured. {fix}"
        ) from None
    if c.is_geographic:
        raise DataError(
            f"Distances need a projected CRS; {c.name} is in degrees (a degree is no fixed "
            f"number of metres). {fix}"
        )
    return float(factor or 1.0)


def metres_to_units(crs: Any, metres: float) -> float:
    """``metres`` in units of the projected ``crs`` (see :func:`metres_per_unit`)."""
    return float(metres) / metres_per_unit(crs)
