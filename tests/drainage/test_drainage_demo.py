"""The parcel drainage table on the bundled demo town (data/layers/demo.gpkg + demo_dem.tif)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ms4map


@pytest.fixture(scope="module")
def res(demo_result):
    """The demo town's pipeline result (conftest's ``demo_result``, built once)."""
    return demo_result[1]


def _fractions(res, pid):
    d = res.drainage[res.drainage["parcel_id"] == pid]
    return {
        f"{k}:{t}": f
        for k, t, f in zip(d["target_kind"], d["target_id"], d["fraction"], strict=True)
    }


def test_every_parcel_sums_to_one(res):
    sums = res.drainage.groupby("parcel_id")["fraction"].sum()
    assert len(sums) == len(res.drainage["parcel_id"].unique())
    assert np.abs(sums.to_numpy() - 1).max() < 1e-6
    ws_parcels = set(
        ms4map.open_workspace(ms4map.datasets.get_path("alder_falls")).parcels["parcel_id"]
    )
    assert set(sums.index) == ws_parcels


@pytest.mark.parametrize("check", ["HC1", "HC2", "HC3"])
def test_hand_check_parcels(res, check):
    from ms4map.datasets.alder_falls import HAND_CHECKS

    hc = HAND_CHECKS[check]
    got = _fractions(res, hc["parcel_id"])
    for key, want in hc["expected"].items():
        assert got.get(key, 0.0) == pytest.approx(want, abs=0.05), (key, got)


def test_village_parcels_drain_to_inlets(res):
    d = res.drainage
    village = d[d["parcel_id"].isin(["106.12-2-16", "104.14-10-1", "107.12-2-11"])]
    assert (village["target_kind"] == "inlet").all()
    assert village["outfall_id"].notna().all() and village["receiving_water"].notna().all()
    # the plaza drains only to Kenyon River outfalls
    plaza = d[d["parcel_id"] == "107.12-2-11"]
    assert set(plaza["receiving_water"]) == {"Kenyon River"}


def test_kettle_parcel_is_internally_drained(res):
    got = _fractions(res, "102.11-3-3")
    assert sum(v for k, v in got.items() if k.startswith("depression:")) == pytest.approx(1.0)
    dep = res.overland.depression_table
    assert len(dep) >= 1 and dep["max_depth_m"].max() > 2.0


@pytest.mark.parametrize("pid", ["107.15-1-10", "107.15-1-2"])
def test_riverside_parcels_drain_direct_to_the_river(res, pid):
    d = res.drainage[res.drainage["parcel_id"] == pid]
    assert (d["target_kind"] == "water_direct").all()
    assert set(d["pwl_id"]) == {"1101-0012"}


def test_parcel_half_off_the_dem(res):
    d = res.drainage[res.drainage["parcel_id"] == "100.10-1-1"]
    off = d[d["target_kind"] == "off_dem"]
    assert 0.3 < off["fraction"].sum() < 0.7
    assert set(off["method"]) == {"off_dem"}


def test_sewersheds_do_not_overlap(res):
    sw = res.sewersheds
    assert sw["outfall_id"].is_unique and len(sw) > 10
    for (a, ga), (b, gb) in itertools.combinations(
        zip(sw["outfall_id"], sw.geometry, strict=True), 2
    ):
        assert ga.intersection(gb).area < 1e-3, (a, b)


def test_what_drains_to_an_outfall(res):
    from ms4map.analysis import what_drains_here
    from ms4map.core.errors import DataError

    shed = what_drains_here(res, outfall_id="OF-009")
    assert shed["inlets"].iloc[0] > 10 and shed["area_m2"].iloc[0] > 100_000
    # positional outfall id works too; an unknown id is an error, not "nothing drains here"
    assert what_drains_here(res, "OF-009")["area_m2"].iloc[0] == shed["area_m2"].iloc[0]
    with pytest.raises(DataError, match="Unknown outfall 'OF-999'"):
        what_drains_here(res, outfall_id="OF-999")
