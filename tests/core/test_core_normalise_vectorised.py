"""The column-at-once normalisers give the per-value normalisers' answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ms4map.core.nulls import is_blank_or_null_marker
from ms4map.io import aliases

ELEV = [12.5, 0, "0", -9999, "1,234.5", " 7 ", "", None, np.nan, "<Null>", "abc", pd.NA, 3]
TEXT = ["A-1", " B ", "", "NULL", None, np.nan, 1204.0, 7, "None", "x.0"]


def _per_value_text(v):
    if is_blank_or_null_marker(v):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v).strip()


@pytest.mark.parametrize(
    "values",
    [ELEV, [1.0, 0.0, -9999.0, np.nan, 4.25], pd.array([1, 0, None], dtype="Int64")],
)
def test_elevations_match_the_per_value_rule(values):
    s = pd.Series(values, dtype=object if isinstance(values, list) and values is ELEV else None)
    want = np.array(
        [np.nan if (r := aliases.normalize_elevation(v)) is None else r for v in s], dtype=float
    )
    got = aliases.normalize_elevations(s)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.allclose(got[~np.isnan(got)], want[~np.isnan(want)])


@pytest.mark.parametrize(
    "values",
    [
        pd.Series(TEXT, dtype=object),
        pd.Series(["a", " b", None, "", "<Null>"], dtype="str"),
        pd.Series([1.0, 2.5, np.nan, 300.0]),
        pd.Series([1, 2, 3]),
        pd.Series([None, None], dtype=object),
    ],
)
def test_text_or_na_matches_the_per_value_rule(values):
    got = [None if pd.isna(v) else v for v in aliases.text_or_na(values)]
    assert got == [_per_value_text(v) for v in values]


def test_map_unique_calls_once_per_distinct_value():
    calls = []

    def f(v):
        calls.append(v)
        return None if v is None else str(v).upper()

    s = pd.Series(["cb", "mh", "cb", None, "cb", np.nan], dtype=object)
    out = aliases.map_unique(s, f)
    assert out.tolist() == ["CB", "MH", "CB", None, "CB", None]
    assert sorted(map(str, calls)) == ["None", "cb", "mh"]
    # tuples (parsed pipe sizes) work as values too
    sizes = aliases.map_unique(pd.Series(["15''", "60''X42''", "15''"]), aliases.parse_pipe_size)
    assert sizes.tolist() == [(15.0, None), (60.0, 42.0), (15.0, None)]
