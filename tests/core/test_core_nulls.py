"""The null tests of ``ms4map.core.nulls``: each meaning on the values that tell them apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ms4map.core.nulls import (
    is_blank,
    is_blank_or_null_marker,
    is_na,
    is_na_or_empty,
    is_truthy,
    none_if_na,
)

VALUES = [
    None,
    pd.NA,
    pd.NaT,
    float("nan"),
    np.float64("nan"),
    np.float32("nan"),
    "",
    "  ",
    "<Null>",
    "NULL",
    "None",
    "null",
    "0",
    0,
    0.0,
    "x",
    False,
]

#: value index -> expected result, one column per function
EXPECTED = {
    #           None  NA    NaT    nan   nan64 nan32  ""    "  "   <Null> NULL  None  null   "0"    0      0.0    "x"    False
    is_blank: [True, True, False, True, True, False, True, True, False, False, False, False, False, False, False, False, False],
    is_blank_or_null_marker: [True, True, True, True, True, False, True, True, True, True, True, False, False, False, False, False, False],
    is_na: [True, True, True, True, True, True, False, False, False, False, False, False, False, False, False, False, False],
    is_na_or_empty: [True, True, True, True, True, True, True, False, False, False, False, False, False, False, False, False, False],
}  # fmt: skip


@pytest.mark.parametrize("func", list(EXPECTED), ids=lambda f: f.__name__)
def test_meanings(func):
    got = [func(v) for v in VALUES]
    assert got == EXPECTED[func]


def test_is_na_never_raises_on_containers():
    assert is_na([1, 2]) is False
    assert is_na(np.array([np.nan, 1.0])) is False


def test_none_if_na():
    assert none_if_na(np.nan) is None
    assert none_if_na(pd.NaT) is None
    assert none_if_na("") == ""
    assert none_if_na("a") == "a"
    assert none_if_na(0) == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("Yes", True), (" TRUE ", True), ("1", True), ("y", True), ("no", False),
     ("", False), (None, False), (np.nan, False), (pd.NA, False), (pd.NaT, False),
     (np.float32("nan"), False), (1, True), (0, False), (True, True), (np.bool_(False), False)],
)  # fmt: skip
def test_is_truthy(value, expected):
    assert is_truthy(value) is expected
