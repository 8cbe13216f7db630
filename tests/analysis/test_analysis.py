"""The analysis verbs take ``(result, what)``: the workspace is ``result.workspace``; the
old ``(ws, result, what)`` forms are answered the same with a DeprecationWarning."""

from __future__ import annotations

import warnings

import pytest
import shapely
from test_hydrology_overland_fixtures import town_workspace, xy

import ms4map.analysis as analysis
from ms4map import pipeline
from ms4map.analysis import (
    DrainagePath,
    OutfallArea,
    PathResult,
    feature_path,
    outfall_area,
    where_does_it_drain,
)
from ms4map.core.errors import UsageError


@pytest.fixture(scope="module")
def res():
    pipeline.clear_cache()
    return pipeline.run(town_workspace())


def test_the_door_lists_the_verbs_and_their_answers() -> None:
    modules = {"frames", "outfalls", "paths", "queries"}  # the public modules, one topic each
    assert set(analysis.__all__) - modules == {
        "where_does_it_drain",
        "what_drains_here",
        "polygon_drainage",
        "feature_path",
        "outfall_area",
        "outfall_inventory",
        "DrainagePath",
        "PathResult",
        "OutfallArea",
    }
    assert modules <= set(analysis.__all__)


def test_outfall_area_reads_the_workspace_of_the_result(res) -> None:
    assert res.workspace is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = outfall_area(res, "OF1")
    with pytest.warns(DeprecationWarning, match=r"outfall_area\(result, outfall_id\)"):
        old = outfall_area(res.workspace, res, "OF1")
    assert isinstance(new, OutfallArea) and new.reason == old.reason and new.reason
    assert new.parcels.equals(old.parcels) and new.sewershed.equals(old.sewershed)
    assert new.edges.equals(old.edges)
    with pytest.warns(DeprecationWarning):
        none = outfall_area(res.workspace, None, "OF1")
    assert none.reason == "The drainage analysis has not been run."


def test_feature_path_reads_the_workspace_of_the_result(res) -> None:
    for layer, fid in (("structures", "I1"), ("parcels", "P000_000"), ("outfalls", "OF1")):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            new = feature_path(res, layer, fid)
        with pytest.warns(DeprecationWarning, match=r"feature_path\(result, layer, fid\)"):
            old = feature_path(res.workspace, res, layer, fid)
        assert isinstance(new, PathResult)
        assert (new.steps, new.outfall_ids, new.receiving_waters, new.reason) == (
            old.steps,
            old.outfall_ids,
            old.receiving_waters,
            old.reason,
        )
        assert new.geometry.equals(old.geometry)
    with pytest.warns(DeprecationWarning):
        none = feature_path(res.workspace, None, "parcels", "P000_000")
    assert "not been run" in none.reason


def test_a_result_without_workspace_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match="feature_path needs a pipeline Result"):
        feature_path(None, "parcels", "P1")
    with pytest.raises(UsageError, match="outfall_area needs a pipeline Result"):
        outfall_area(None, "OF1")


def test_where_does_it_drain_answers_a_drainage_path(res) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        path = where_does_it_drain(res, shapely.Point(xy(10, 50)))
        out = path.to_dict()
    assert isinstance(path, DrainagePath)
    assert list(out) == [
        "geometry",
        "surface_geometry",
        "pipe_geometry",
        "target_kind",
        "target_id",
        "outfall_ids",
        "receiving_water",
        "pwl_id",
        "method",
        "reason",
    ]
    assert DrainagePath.from_dict(out) == path
    assert path.outfall_ids[0] == "OF1" and path.method == "d8_path"


def test_drainage_path_still_answers_as_the_dict_it_was(res) -> None:
    """One release: the dict's ``[]``, ``get``, ``keys`` (and ``in``, iterating) answer as
    before, each with a DeprecationWarning naming the attribute to use."""
    path = where_does_it_drain(res, shapely.Point(xy(10, 50)))
    out = path.to_dict()
    with pytest.warns(DeprecationWarning, match=r"path\['reason'\] .* use path\.reason"):
        assert path["reason"] == out["reason"]
    with pytest.warns(DeprecationWarning, match=r"use path\.geometry"):
        assert path.get("geometry") is out["geometry"]
    with pytest.warns(DeprecationWarning, match=r"path\.to_dict\(\)"):
        assert path.get("nothing", 7) == 7
    with pytest.warns(DeprecationWarning, match="keys"):
        assert list(path.keys()) == list(out)
    with pytest.warns(DeprecationWarning):
        assert "outfall_ids" in path
    with pytest.warns(DeprecationWarning):
        assert list(path) == list(out)
    with pytest.warns(DeprecationWarning), pytest.raises(KeyError):
        _ = path["nothing"]
