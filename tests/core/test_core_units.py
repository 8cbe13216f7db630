"""One helper for metres per CRS unit (ms4map._units)."""

from __future__ import annotations

import pytest

from ms4map.core.errors import DataError
from ms4map.core.units import metres_per_unit, metres_to_units


def test_projected_units():
    assert metres_per_unit("EPSG:26918") == 1.0  # NAD83 / UTM 18N, metres
    assert metres_per_unit("EPSG:2284") == pytest.approx(0.3048006096)  # VA South, US ft
    assert metres_to_units("EPSG:2284", 0.3048006096) == pytest.approx(1.0)


def test_geographic_crs_is_refused_never_converted_with_a_constant():
    with pytest.raises(DataError, match="projected CRS.*--crs"):
        metres_per_unit("EPSG:4326")
    with pytest.raises(DataError, match="projected"):
        metres_per_unit("EPSG:4326", default=1.0)  # a default does not cover degrees


def test_missing_or_unreadable_crs():
    assert metres_per_unit(None, default=1.0) == 1.0
    with pytest.raises(DataError, match="no CRS"):
        metres_per_unit(None)
    with pytest.raises(DataError, match="cannot be read"):
        metres_per_unit("not a crs")
