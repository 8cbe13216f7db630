"""QA findings and reports, shared by validation and every later step.

A :class:`Finding` names the layer, the feature, the column, what is wrong and
the fix.  A :class:`QAReport` collects findings from every step; it renders as
Markdown and JSON, as a table (:meth:`QAReport.to_frame`) and, for findings
with a location, as a map layer (:meth:`QAReport.to_geodataframe`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Finding", "QAReport", "ERROR", "WARNING", "INFO", "shown_ids"]

ERROR = "error"
WARNING = "warning"
INFO = "info"
_LEVELS = (ERROR, WARNING, INFO)


def shown_ids(ids: list[str], limit: int) -> str:
    """The first ``limit`` ids joined by commas, with `` ...`` when there are more."""
    return ", ".join(ids[:limit]) + (" ..." if len(ids) > limit else "")


@dataclass
class Finding:
    """One QA finding.

    Parameters
    ----------
    level : {"error", "warning", "info"}
        Errors stop the run; warnings are reported and the run goes on.
    code : str
        Stable machine-readable code, e.g. ``missing_crs`` or ``unsnapped_end``.
    layer : str
        Canonical layer (role) or source layer the finding is about.
    message : str
        What is wrong, in plain words.
    fix : str
        What the user can do about it.
    feature_id : str, optional
        Id of the feature concerned (``None`` for layer-level findings).
    column : str, optional
        Column concerned.
    step : str
        Which step found it (``validate``, ``network``, ``overland``, ...).
    x, y : float, optional
        Location in the working CRS, for the QA map layer.
    count : int
        How many features this finding stands for (1 unless aggregated).
    """

    level: str
    code: str
    layer: str
    message: str
    fix: str = ""
    feature_id: str | None = None
    column: str | None = None
    step: str = "validate"
    x: float | None = None
    y: float | None = None
    count: int = 1

    def __post_init__(self) -> None:
        if self.level not in _LEVELS:
            raise ValueError(f"Unknown level {self.level!r}, select from {list(_LEVELS)}")

    def one_line(self) -> str:
        where = f"layer '{self.layer}'"
        if self.feature_id is not None:
            where += f", feature '{self.feature_id}'"
        if self.column:
            where += f", column '{self.column}'"
        text = f"[{self.code}] {where}: {self.message}"
        if self.fix:
            text += f" Fix: {self.fix}"
        return text


@dataclass
class QAReport:
    """Every finding of a run, in order, plus notes on what was done."""

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # -- building -------------------------------------------------------------------
    def add(self, level: str, code: str, layer: str, message: str, **kwargs: Any) -> Finding:
        finding = Finding(level, code, layer, message, **kwargs)
        self.findings.append(finding)
        return finding

    def error(self, code: str, layer: str, message: str, **kwargs: Any) -> Finding:
        return self.add(ERROR, code, layer, message, **kwargs)

    def warning(self, code: str, layer: str, message: str, **kwargs: Any) -> Finding:
        return self.add(WARNING, code, layer, message, **kwargs)

    def info(self, code: str, layer: str, message: str, **kwargs: Any) -> Finding:
        return self.add(INFO, code, layer, message, **kwargs)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def extend(self, other: QAReport | Iterable[Finding]) -> None:
        if isinstance(other, QAReport):
            self.findings.extend(other.findings)
            self.notes.extend(other.notes)
        else:
            self.findings.extend(other)

    # -- reading --------------------------------------------------------------------
    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level == WARNING]

    @property
    def has_errors(self) -> bool:
        return any(f.level == ERROR for f in self.findings)

    def codes(self) -> Counter[str]:
        """Count of features per finding code."""
        c: Counter[str] = Counter()
        for f in self.findings:
            c[f.code] += f.count
        return c

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    # -- rendering ------------------------------------------------------------------
    def to_records(self) -> list[dict[str, Any]]:
        return [asdict(f) for f in self.findings]

    def to_json(self, *, indent: int | None = 2, extra: dict[str, Any] | None = None) -> str:
        doc: dict[str, Any] = {
            "summary": {
                "errors": len(self.errors),
                "warnings": len(self.warnings),
                "by_code": dict(sorted(self.codes().items())),
            },
            "notes": self.notes,
            "findings": self.to_records(),
        }
        if extra:
            doc.update(extra)
        return json.dumps(doc, indent=indent, default=str)

    def to_frame(self):  # -> pandas.DataFrame
        import pandas as pd

        cols = list(Finding.__dataclass_fields__)
        return pd.DataFrame(self.to_records(), columns=cols)

    def to_geodataframe(self, crs: Any):  # -> geopandas.GeoDataFrame
        """Findings with a location, as points (for the QA map layer)."""
        import geopandas as gpd

        df = self.to_frame()
        df = df[df["x"].notna() & df["y"].notna()].reset_index(drop=True)
        return gpd.GeoDataFrame(
            df, geometry=gpd.points_from_xy(df["x"].astype(float), df["y"].astype(float)), crs=crs
        )

    def to_markdown(self, *, title: str = "ms4map QA report", max_per_code: int = 20) -> str:
        lines = [f"# {title}", ""]
        lines.append(
            f"**{len(self.errors)} error(s), {len(self.warnings)} warning(s)**"
            + ("" if not self.has_errors else " — the run stops until the errors are fixed.")
        )
        lines.append("")
        if self.notes:
            lines.append("## Notes")
            lines += [f"- {n}" for n in self.notes]
            lines.append("")
        for level in _LEVELS:
            group = [f for f in self.findings if f.level == level]
            if not group:
                continue
            lines.append(f"## {level.capitalize()}s")
            lines.append("")
            lines.append("| problem (code) | layer | count | example ids | what | fix |")
            lines.append("|---|---|---|---|---|---|")
            order: dict[tuple[str, str], list[Finding]] = {}
            for f in group:
                order.setdefault((f.code, f.layer), []).append(f)
            for (code, layer), items in order.items():
                ids = [str(i.feature_id) for i in items if i.feature_id is not None]
                shown = shown_ids(ids, max_per_code)
                count = sum(i.count for i in items)
                msg = items[0].message if len(items) == 1 else _common_message(items)
                lines.append(
                    f"| {code_words(code)} (`{code}`) | {layer} | {count} | {shown} | {_md(msg)} "
                    f"| {_md(items[0].fix)} |"
                )
            lines.append("")
        return "\n".join(lines)


def code_words(code: str) -> str:
    """A finding's code as words for a person (``missing_id`` -> "Missing id"); the code
    itself stays beside it, for looking it up in the docs."""
    words = [w.upper() if w in _ACRONYMS else w for w in code.split("_")]
    return " ".join(words)[:1].upper() + " ".join(words)[1:]


_ACRONYMS = {"dem", "ms4", "crs", "pwl", "tmdl", "id", "ids", "qa", "swmm", "gis"}


def _common_message(items: list[Finding]) -> str:
    first = items[0].message
    return first if all(i.message == first for i in items) else f"{first} (and similar)"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
