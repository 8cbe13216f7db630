"""Writing the compliance pack: the annual report PDF first, then every section, and a CSV per section.

``ms4map records WORKSPACE --year 2025 --pack DIR`` writes into ``DIR``:

* ``compliance_pack_<period>_<year>.pdf`` -- the annual IDDE report (the
  ``--annual-report`` PDF) as its first section, then the IDDE counts, the mapping
  progress, the open cases with their age and the expedited list, every count with
  the ids behind it and any override beside it;
* ``idde_counts.csv``, ``mapping_progress.csv``, ``open_cases.csv``,
  ``expedited.csv`` -- one per section (``ids`` joined with ``;``);
* ``drilldown.csv`` -- one row per id behind a count (``section, key, kind, id``);
* the programme sections after them (:data:`PROGRAMME_SECTIONS`): construction sites
  (land development projects) and post-construction SMPs, a CSV per table
  (``smp_inventory.csv``, ``smp_overdue.csv``, ...) and the same rows in the PDF.

CSV only: ``openpyxl`` is not a dependency of ms4map, so no XLSX is written.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.tables import csv_text
from ..io import check_output_path, open_workspace, write_text_output
from ..rules.waters import Waters
from .annual import _annual_pages, _table
from .construction import pack_rows as construction_pack_rows
from .pack import expedited_list, idde_counts, mapping_progress, open_case_ages, overrides
from .periods import Period
from .reads import _ws_kwargs, check_period_begun, period_of
from .schedule import priority_scores, priority_weights, upstream_counts
from .smp import pack_rows as smp_pack_rows
from .verify import verified_outfalls

__all__ = [
    "PROGRAMME_SECTIONS",
    "CompliancePack",
    "build_pack",
    "outfall_priorities",
    "write_pack",
]

#: The programme sections after the IDDE ones: title -> the function giving its tables
#: (``pack_rows(records, period) -> {table name: rows}``; each table a CSV of its name).
PROGRAMME_SECTIONS: dict[str, Any] = {
    "Construction sites: land development projects": construction_pack_rows,
    "Post-construction stormwater management practices (SMPs)": smp_pack_rows,
}
#: Rows of one programme table printed in the PDF (all of them are in its CSV).
PDF_ROWS = 60


@dataclass
class CompliancePack:
    """The sections of one period's pack (frames of :mod:`ms4map.records.pack`)."""

    period: Period
    municipality: str
    idde: pd.DataFrame
    mapping: pd.DataFrame
    open_cases: pd.DataFrame
    expedited: pd.DataFrame
    annual: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    #: title -> {table name: rows} (:data:`PROGRAMME_SECTIONS`)
    programme: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)

    def drilldown(self) -> pd.DataFrame:
        """``section, key, kind, id``: one row per id behind a count."""
        rows = [
            {"section": sec, "key": r["key"], "kind": r["kind"], "id": i}
            for sec, df in (("idde_counts", self.idde), ("mapping_progress", self.mapping))
            for r in df.to_dict("records")
            for i in r["ids"]
        ]
        return pd.DataFrame(rows, columns=["section", "key", "kind", "id"])


def _workspace_layers(records: Any) -> dict[str, Any]:
    """The layers the pack reads (no DEM, no pipeline)."""
    roles = ("outfalls", "structures", "conveyances", "waterbodies", "impairments")
    ws = open_workspace(
        records.workspace, roles=(*roles, "tmdl_watersheds"), no_dem=True, **_ws_kwargs(records)
    )
    return {"ws": ws, **{r: ws.layers.get(r) for r in (*roles, "tmdl_watersheds")}}


def _tmdl_of(outfalls: Any, tmdl: Any) -> dict[str, str]:
    """``outfall_id -> TMDL watershed name`` for outfalls inside one."""
    if tmdl is None or not len(tmdl) or "geometry" not in getattr(outfalls, "columns", []):
        return {}
    import geopandas as gpd

    tm = tmdl.to_crs(outfalls.crs) if tmdl.crs != outfalls.crs else tmdl
    name = "name" if "name" in tm else ("tmdl_id" if "tmdl_id" in tm else None)
    hit = gpd.sjoin(outfalls[["outfall_id", "geometry"]], tm, predicate="within", how="inner")
    out: dict[str, str] = {}
    for r in hit.to_dict("records"):
        out.setdefault(str(r["outfall_id"]), str(r.get(name, "")) if name else "")
    return out


def _listed(lay: dict[str, Any]) -> set[str]:
    """PWL ids with a 303(d) listing (category 5) or an approved TMDL (4a)."""
    imp = Waters.from_workspace(lay["ws"]).impairments
    if not len(imp):
        return set()
    return set(imp.loc[imp["category"].astype(str).isin(["5", "4a"]), "wb_id"].astype(str))


def outfall_priorities(records: Any, *, result: Any = None) -> pd.DataFrame:
    """:func:`ms4map.records.schedule.priority_scores` of the records' outfalls: the
    upstream trace from ``result`` (a pipeline result; without one the upstream
    components are not known), the records, the impaired waters and TMDL watersheds,
    the weights of the profile's ``[records.priority]``."""
    lay = _workspace_layers(records)
    outfalls = lay["outfalls"] if lay["outfalls"] is not None else records.outfalls
    weights, classes = priority_weights(records.profile.raw.get("records"))
    upstream = None
    if result is not None:
        parcels = result.workspace.layers.get("parcels") if result.workspace else None
        upstream = upstream_counts(result.drainage, parcels, classes=classes)
    listed = _listed(lay)
    impaired = {
        str(r["outfall_id"])
        for r in outfalls.to_dict("records")
        if not pd.isna(r.get("pwl_id")) and str(r.get("pwl_id")).strip() in listed
    } | set(_tmdl_of(outfalls, lay["tmdl_watersheds"]))
    return priority_scores(
        outfalls,
        records.inspections(),
        records.cases(),
        upstream=upstream,
        impaired=impaired,
        weights=weights,
    )


def build_pack(
    records: Any,
    year: int | None = None,
    *,
    period: str | None = None,
    result: Any = None,
    today: dt.date | str | None = None,
) -> CompliancePack:
    """The compliance pack of the period of ``period`` (default: the profile's) that
    starts in ``year``.

    ``result`` (a pipeline result) adds the sewersheds drawn; without it that row is
    left out and :attr:`CompliancePack.notes` says so.  Deadlines are judged on the
    period's last day (or ``today`` when the period has not ended).
    """
    p = period_of(records, year, period)
    check_period_begun(records, p)
    lay = _workspace_layers(records)
    outfalls = lay["outfalls"] if lay["outfalls"] is not None else records.outfalls
    ins, smp, cas = records.inspections(), records.samples(), records.cases()
    day = dt.date.today() if today is None else pd.Timestamp(today).date()
    judged = min(p.end, day)
    dl = records.deadlines(today=judged)
    verified = verified_outfalls(ins, until=p.end)
    idde = idde_counts(
        p,
        outfalls=outfalls,
        inspections=ins,
        samples=smp,
        cases=cas,
        deadlines=dl,
        verified=verified,
    )
    notes = [
        f"Deadlines judged on {judged.isoformat()}.",
        "CSV only: openpyxl is not a dependency of ms4map, so no XLSX is written.",
    ]
    sheds = None if result is None else getattr(result, "sewersheds", None)
    if sheds is None:
        notes.append(
            "Sewersheds drawn: not counted (no network result; ms4map records --pack "
            "--network runs the pipeline)."
        )
    mapping = mapping_progress(
        outfalls=outfalls,
        structures=lay["structures"],
        conveyances=lay["conveyances"],
        sewersheds=sheds,
    )
    listed = _listed(lay)
    five = idde.set_index("key").loc["screened_last_5_years", "ids"]
    shed_ids = None
    if sheds is not None:
        shed_ids = mapping.set_index("key").loc["sewersheds_drawn", "ids"]
    expedited = expedited_list(
        outfalls=outfalls,
        listed=listed,
        tmdl_of=_tmdl_of(outfalls, lay["tmdl_watersheds"]),
        verified=verified,
        screened_5y=list(five),
        sewersheds=shed_ids,
    )
    ov = overrides(records.audit(), p)
    idde["reported"] = [
        ov[k]["value"] if k in ov else c for k, c in zip(idde["key"], idde["count"], strict=True)
    ]
    idde["override_reason"] = [ov.get(k, {}).get("reason", "") for k in idde["key"]]
    idde["override_by"] = [ov.get(k, {}).get("by", "") for k in idde["key"]]
    idde["override_at"] = [ov.get(k, {}).get("at", "") for k in idde["key"]]
    return CompliancePack(
        period=p,
        municipality=records.profile.municipality,
        idde=idde,
        mapping=mapping,
        open_cases=open_case_ages(p, cas),
        expedited=expedited,
        annual=records.annual_report(p.year, period=period),
        notes=notes,
        programme={title: rows(records, p) for title, rows in PROGRAMME_SECTIONS.items()},
    )


def _joined(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    if "ids" in out:
        out["ids"] = [";".join(map(str, v)) for v in out["ids"]]
    return out


def _section_lines(pack: CompliancePack) -> list[tuple[str, float]]:
    """The text of the sections after the annual report: ``(line, font size)``."""
    wrap = 110
    lines: list[tuple[str, float]] = []

    def ids_lines(ids: list[str]) -> None:
        body = ", ".join(map(str, ids)) if ids else "(none)"
        for ln in textwrap.wrap(f"ids: {body}", wrap, subsequent_indent="      "):
            lines.append((ln, 7))

    lines.append(("IDDE counts", 12))
    for r in pack.idde.to_dict("records"):
        over = ""
        if r["override_reason"]:
            over = (
                f"  [reported {r['reported']}: override by {r['override_by']} at "
                f"{r['override_at']}: {r['override_reason']}]"
            )
        for ln in textwrap.wrap(f"{r['label']}: {r['count']}{over}", wrap):
            lines.append((ln, 8.5))
        ids_lines(r["ids"])
    lines += [("", 8), ("Mapping progress", 12)]
    for r in pack.mapping.to_dict("records"):
        lines.append((f"{r['label']}: {r['count']} of {r['total']} ({r['share']:.1%})", 8.5))
        ids_lines(r["ids"])
    lines += [("", 8), ("Cases still open at the end of the period, with their age", 12)]
    if not len(pack.open_cases):
        lines.append(("(none)", 8))
    for r in pack.open_cases.to_dict("records"):
        lines.append(
            (
                f"case {r['case_id']} at outfall {r['outfall_id']}: opened {r['opened_on']}, "
                f"{r['age_days']} days open, status {r['status']}",
                8,
            )
        )
    lines += [("", 8), ("Expedited list: outfalls in impaired or TMDL watersheds", 12)]
    if not len(pack.expedited):
        lines.append(("(none)", 8))
    for r in pack.expedited.to_dict("records"):
        text = f"{r['outfall_id']} ({r['why']}): lacks {r['lacks'] or 'nothing'}"
        for ln in textwrap.wrap(text, wrap, subsequent_indent="    "):
            lines.append((ln, 8))
    for title, tables in pack.programme.items():
        lines += [("", 8), (title, 12)]
        for name, df in tables.items():
            lines += _table_lines(name, df, wrap)
    lines += [("", 8), ("Notes", 12)] + [(n, 7.5) for n in pack.notes]
    return lines


def _table_lines(name: str, df: pd.DataFrame, wrap: int) -> list[tuple[str, float]]:
    """One programme table in the PDF: its name and row count, then a line per row
    (``column: value`` for the values that are set), :data:`PDF_ROWS` at most."""
    lines = [(f"{name.replace('_', ' ')}: {len(df)} row(s) ({name}.csv)", 9.5)]
    for r in df.head(PDF_ROWS).to_dict("records"):
        text = "; ".join(f"{k}: {v}" for k, v in r.items() if not _blank(v))
        for ln in textwrap.wrap(text or "(empty row)", wrap, subsequent_indent="    "):
            lines.append((ln, 7.5))
    if len(df) > PDF_ROWS:
        lines.append((f"... {len(df) - PDF_ROWS} more row(s) in {name}.csv", 7.5))
    return lines


def _blank(v: Any) -> bool:
    try:
        return v is None or bool(pd.isna(v)) or str(v) == ""
    except (TypeError, ValueError):  # a list or an array: set
        return False


def _text_pages(lines: list[tuple[str, float]], heading: str) -> list[Any]:
    import matplotlib.pyplot as plt

    pages = []
    per_page = 62
    chunks = [lines[i : i + per_page] for i in range(0, len(lines), per_page)] or [[]]
    for k, chunk in enumerate(chunks, start=1):
        fig = plt.figure(figsize=(8.5, 11))
        pages.append(fig)
        fig.text(0.5, 0.96, heading, ha="center", size=10)
        fig.text(0.95, 0.975, f"section page {k} of {len(chunks)}", ha="right", size=7)
        y = 0.93
        for text, size in chunk:
            fig.text(0.06, y, text, size=size, weight="bold" if size >= 12 else "normal")
            y -= 0.0135 if size < 12 else 0.02
    return pages


def write_pack(
    pack: CompliancePack,
    folder: str | Path,
    *,
    title: str,
    protected: Any = (),
) -> list[Path]:
    """Write ``pack`` into ``folder`` (created): the PDF, a CSV per section and the
    drill-down; returns the paths written.  Every path is checked with
    :func:`ms4map.io.check_output_path` (never one of the inputs)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    folder = Path(folder).expanduser()
    p = pack.period
    written: list[Path] = []
    for name, df in (
        ("idde_counts.csv", _joined(pack.idde)),
        ("mapping_progress.csv", _joined(pack.mapping)),
        ("open_cases.csv", pack.open_cases),
        ("expedited.csv", pack.expedited),
        ("drilldown.csv", pack.drilldown()),
        *((f"{n}.csv", df) for tables in pack.programme.values() for n, df in tables.items()),
    ):
        written.append(
            write_text_output(folder / name, csv_text(df), protected=protected, option="--pack")
        )
    pdf = check_output_path(
        folder / f"compliance_pack_{p.kind}_{p.year}.pdf",
        protected=protected,
        suffixes=(".pdf",),
        option="--pack",
    )
    heading = f"Compliance pack, {p.text()}, {pack.municipality}"
    with matplotlib.rc_context({"pdf.fonttype": 42}):
        pages = _annual_pages(_table(pack.annual), f"{title} - {p.name}")
        pages += _text_pages(_section_lines(pack), heading)
        tmp = pdf.with_name(f".{pdf.name}.tmp")
        try:
            with PdfPages(tmp) as out:
                for fig in pages:
                    out.savefig(fig)
            tmp.replace(pdf)
        finally:
            for fig in pages:
                plt.close(fig)
            if tmp.exists():
                tmp.unlink()
    return [pdf, *written]
