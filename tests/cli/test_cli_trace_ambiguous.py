"""``ms4map trace --from ID`` on an ambiguous path: says so and names the candidates."""

from __future__ import annotations

import pytest
from ambiguous_builders import BARE_Y_CONVEYANCES, Y_CONVEYANCES, Y_STRUCTURES, bare_y_network
from network_builders import conveyances, structures

import ms4map.network
from ms4map.cli import main


@pytest.fixture()
def y_gpkg(tmp_path):
    gpkg = tmp_path / "y.gpkg"
    structures(Y_STRUCTURES).to_file(gpkg, layer="structures", driver="GPKG")
    conveyances(Y_CONVEYANCES).to_file(gpkg, layer="conveyances", driver="GPKG")
    return gpkg


def test_trace_from_prints_ambiguous_and_the_candidates(y_gpkg, monkeypatch, capsys):
    real = ms4map.network.trace_downstream

    def ambiguous_trace(net, start):
        tr = real(net, start)
        tr.method = "ambiguous"
        tr.reason = "the evidence cannot tell which way flow leaves S: O1 or O2"
        tr.ambiguous = True
        return tr

    monkeypatch.setattr(ms4map.network, "trace_downstream", ambiguous_trace)
    assert main(["trace", str(y_gpkg), "--from", "A"]) == 0
    text = capsys.readouterr().out
    assert "Downstream of A: ambiguous" in text
    assert (
        "  ambiguous: the evidence cannot tell which outfall takes the flow; candidates O1, O2"
        in text
    )
    assert "outfall(s): O1, O2" not in text  # no outfall is named


def test_trace_from_a_decided_path_names_its_outfall(y_gpkg, capsys):
    assert main(["trace", str(y_gpkg), "--from", "N"]) == 0  # the pipe N leads to O1 only
    text = capsys.readouterr().out
    assert "  outfall(s): O1" in text and "ambiguous:" not in text


def test_trace_from_on_the_networks_own_ambiguous_answer(tmp_path, capsys):
    bare_y_network()  # skipped while the network gives no ambiguous answer (issue 27)
    gpkg = tmp_path / "bare.gpkg"
    structures(Y_STRUCTURES).to_file(gpkg, layer="structures", driver="GPKG")
    conveyances(BARE_Y_CONVEYANCES).to_file(gpkg, layer="conveyances", driver="GPKG")
    assert main(["trace", str(gpkg), "--from", "A"]) == 0
    text = capsys.readouterr().out
    assert "candidates O1, O2" in text and "ambiguous: the evidence cannot tell" in text
