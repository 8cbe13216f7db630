"""What the IDDE modules share: a cell as text, a recorded septic failure in words, the workspace, the outfall check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import DataError, UsageError
from ..core.nulls import is_na
from ..core.qa import shown_ids
from ..rules.septic import FAILURE_CONDITIONS, parse_failure_codes

if TYPE_CHECKING:
    from ..io import Workspace
    from ..pipeline import PipelineResult


def _text(v: Any) -> str:
    return "" if v is None or is_na(v) else str(v).strip()


def _failure_text(value: Any) -> str:
    """``surface_discharge`` -> ``surface_discharge: 174-6 B, Discharges of ...``."""
    raw = _text(value)
    if not raw:
        return ""
    try:
        codes = parse_failure_codes(raw)
    except Exception:  # noqa: BLE001 - the recorded text alone is still an answer
        return raw
    named = [
        f"condition {c}: {FAILURE_CONDITIONS[c].rstrip('.')}"
        for c in codes
        if c in FAILURE_CONDITIONS
    ]
    return f"{raw} ({'; '.join(named)})" if named else raw


def _workspace(result: PipelineResult, workspace: Workspace | None) -> Workspace:
    ws = workspace if workspace is not None else getattr(result, "workspace", None)
    if ws is None:
        raise UsageError("The workspace is needed: pass workspace= (or a pipeline result).")
    return ws


def _check_outfall(result: PipelineResult, ws: Workspace, outfall_id: str) -> None:
    known: list[str] = []
    net = getattr(result, "network", None)
    if net is not None:
        known = [str(o) for o in net.outfalls.index]
    elif ws.layers.get("outfalls") is not None:
        known = ws.layers["outfalls"]["outfall_id"].astype(str).tolist()
    if known and outfall_id not in known:
        shown = shown_ids(sorted(known), 10)
        raise DataError(
            f"Outfall '{outfall_id}' is not in the outfalls layer ({len(known)} outfalls: "
            f"{shown}). Fix: check the id (ids are case-sensitive)."
        )
