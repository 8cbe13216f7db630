"""Validate a workspace: every problem collected and reported together.

The checks themselves run while :func:`ms4map.io.open_workspace` reads the layers
(validate once, at the boundary); this module turns the outcome into a report
whether or not it has errors, which is what ``ms4map validate`` prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import ValidationError
from ..core.qa import QAReport
from .fieldmap import mapping_to_toml
from .open import open_workspace
from .workspace import Workspace

__all__ = ["validate", "ValidationResult"]


class ValidationResult:
    """Outcome of :func:`validate`: the report and, when there were no errors, the workspace."""

    def __init__(self, report: QAReport, workspace: Workspace | None) -> None:
        self.report = report
        self.workspace = workspace

    @property
    def ok(self) -> bool:
        return not self.report.has_errors

    @property
    def exit_code(self) -> int:
        if self.report.has_errors:
            return 2
        return 1 if self.report.warnings else 0

    def to_markdown(self) -> str:
        text = self.report.to_markdown(title="ms4map validation report")
        ws = self.workspace
        if ws is not None:
            lines = ["", "## Layers", "", "| role | features | source layers |", "|---|---|---|"]
            for role, df in ws.layers.items():
                srcs = (
                    ", ".join(sorted(set(map(str, df["src_layer"])))) if "src_layer" in df else ""
                )
                lines.append(f"| {role} | {len(df)} | {srcs} |")
            lines += [
                "",
                f"DEM: {ws.dem.path.name if ws.dem is not None and ws.dem.path else 'none'}",
            ]
            if ws.dem is not None:
                lines.append(
                    f"DEM grid: {ws.dem.shape[1]} x {ws.dem.shape[0]} cells of {ws.dem.cellsize:g} "
                    f"{ws.crs.axis_info[0].unit_name}, vertical unit {ws.dem.vertical_unit or 'unknown'}"
                )
            lines += [
                "",
                "## Field mapping used",
                "",
                "```toml",
                mapping_to_toml(ws.field_mapping),
                "```",
            ]
            text += "\n".join(lines) + "\n"
        return text

    def to_json(self) -> str:
        extra: dict[str, Any] = {}
        if self.workspace is not None:
            extra["field_mapping"] = self.workspace.field_mapping
            extra["crs"] = self.workspace.crs.to_string()
            extra["layers"] = {r: len(df) for r, df in self.workspace.layers.items()}
        return self.report.to_json(extra=extra)


def validate(path: str | Path | None, **options: Any) -> ValidationResult:
    """Open a workspace and return every finding, errors included, without raising.

    Parameters
    ----------
    path : str or Path
        As for :func:`ms4map.io.open_workspace`.
    **options
        Keyword options of :func:`ms4map.io.open_workspace`.

    Raises
    ------
    InputOpenError
        When the input cannot be opened at all (missing file or layer).
    """
    try:
        ws = open_workspace(path, **options)
    except ValidationError as exc:
        return ValidationResult(exc.report, None)  # type: ignore[arg-type]
    return ValidationResult(ws.qa, ws)
