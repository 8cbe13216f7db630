"""The demo town's planted defects are exactly what validation and network QA report."""

from __future__ import annotations

import pytest

import ms4map
from ms4map import network
from ms4map.cli import main
from ms4map.datasets import alder_falls as demo
from ms4map.io.validate import validate


def _ids(finding) -> list[str]:
    return [s.strip() for s in str(finding.feature_id or "").split(",") if s.strip()]


@pytest.fixture(scope="module")
def demo_ws():
    return ms4map.open_workspace(ms4map.datasets.get_path("alder_falls"))


def test_validate_reports_exactly_the_planted_data_defects(capsys) -> None:
    path = ms4map.datasets.get_path("alder_falls")
    assert main(["validate", str(path)]) == 1  # warnings only
    capsys.readouterr()
    report = validate(path).report
    reported = {(f.code, i) for f in report.warnings for i in _ids(f)}
    planted = {(d["code"], d["id"]) for d in demo.PLANTED_DEFECTS if d["level"] == "data"}
    assert reported == planted
    assert not report.errors


def test_network_qa_reports_the_planted_network_defects(demo_ws) -> None:
    net = network.build_network(demo_ws)
    found = {(f.code, str(f.feature_id)) for f in net.qa.findings}
    planted = {(d["code"], d["id"]) for d in demo.PLANTED_DEFECTS if d["level"] == "network"}
    assert planted <= found
    # every warning is a planted defect, or its direct consequence: the pipe cut off by
    # the unsnapped end has no outfall (the adverse pipe keeps its ids: no dead end)
    consequences = {("no_outfall_subnetwork", "P-0568")}
    warnings = {(f.code, str(f.feature_id)) for f in net.qa.warnings}
    assert warnings == (planted & warnings) | consequences
    assert not net.qa.errors


def test_every_demo_outfall_is_reached_and_most_structures_drain(demo_ws) -> None:
    net = network.build_network(demo_ws)
    table = network.assign_outfalls(net)
    assert set(demo_ws.outfalls["outfall_id"]) <= set(table["outfall_id"].dropna())
    assert (table["outfall_id"].notna()).mean() > 0.98
