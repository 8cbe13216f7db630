"""A feature's downstream path (the app's) on an ambiguous trace: candidates, no outfall."""

from __future__ import annotations

from types import SimpleNamespace

from ambiguous_builders import Y_CONVEYANCES, Y_STRUCTURES, y_network
from network_builders import conveyances, structures, ws_of

import ms4map.network
from ms4map.analysis import feature_path


def _result():
    ws = ws_of(structures(Y_STRUCTURES), conveyances(Y_CONVEYANCES))
    return SimpleNamespace(network=y_network(), workspace=ws, drainage=None)


def test_ambiguous_trace_names_candidates_and_no_outfall(monkeypatch):
    real = ms4map.network.trace_downstream

    def ambiguous_trace(net, start):
        tr = real(net, start)
        tr.reason = "the evidence cannot tell which way flow leaves S: O1 or O2"
        tr.ambiguous = True
        return tr

    monkeypatch.setattr(ms4map.network, "trace_downstream", ambiguous_trace)
    path = feature_path(_result(), "structures", "A")
    assert path.steps == [
        "from structure A, then the network cannot tell which outfall takes the flow "
        "(candidates O1, O2; the evidence cannot tell which way flow leaves S: O1 or O2): "
        "outfall undetermined"
    ]
    assert path.outfall_ids == [] and path.receiving_waters == []
    assert len(path.geometry)  # the pipes to both candidates are still drawn


def test_decided_trace_names_its_outfall():
    path = feature_path(_result(), "conveyances", "N")
    assert path.outfall_ids == ["O1"]
    assert "outfall O1" in path.steps[0]
