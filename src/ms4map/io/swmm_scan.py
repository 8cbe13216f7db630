"""Scan an EPA SWMM model's lines: sections, records with their line numbers, and the checks that name a bad record's line.

:func:`scan_model` is the first step of :func:`ms4map.io.swmm.read_swmm`: one pass over
the file before the swmm-api library parses the records, because the library keeps no
line numbers and silently keeps the last of two nodes with one name.  Every problem is
collected into one :class:`~ms4map.core.errors.ValidationError`, each naming the
section, the line and the fix (docs/network.md, "SWMM models as workspaces").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputOpenError, ValidationError
from ..core.qa import QAReport

__all__ = [
    "LINK_SECTIONS",
    "MIN_FIELDS",
    "NAMED_SHAPES",
    "NODE_SECTIONS",
    "ModelScan",
    "Record",
    "model_options",
    "scan_model",
]

#: Node sections and the structure kind of their nodes (junctions that receive a
#: subcatchment's runoff are ``inlet``: the model loads its runoff there).
NODE_SECTIONS = {
    "JUNCTIONS": "manhole",
    "OUTFALLS": "outfall",
    "STORAGE": "bmp",
    "DIVIDERS": "junction",
}

#: Link sections and the SWMM type written to ``swmm_type``.
LINK_SECTIONS = {
    "CONDUITS": "CONDUIT",
    "ORIFICES": "ORIFICE",
    "WEIRS": "WEIR",
    "PUMPS": "PUMP",
    "OUTLETS": "OUTLET",
}

_GEO_SECTIONS = ("COORDINATES", "VERTICES", "POLYGONS")
_READ_SECTIONS = (
    *NODE_SECTIONS,
    *LINK_SECTIONS,
    "XSECTIONS",
    "SUBCATCHMENTS",
    *_GEO_SECTIONS,
    "OPTIONS",
)

#: The fewest fields of a record EPA SWMM 5.2 accepts (measured against the engine,
#: docs/network.md); :func:`_min_fields` raises a few by the record's shape or type.
MIN_FIELDS = {
    "JUNCTIONS": 2,
    "OUTFALLS": 3,
    "STORAGE": 6,
    "DIVIDERS": 4,
    "CONDUITS": 7,
    "ORIFICES": 6,
    "WEIRS": 6,
    "PUMPS": 3,
    "OUTLETS": 6,
    "XSECTIONS": 3,
    "SUBCATCHMENTS": 8,
    "COORDINATES": 3,
    "VERTICES": 3,
    "POLYGONS": 3,
}

#: Cross-section shapes whose Geom1 is not a size (it names a [TRANSECTS] or [STREETS] entry).
NAMED_SHAPES = frozenset({"IRREGULAR", "STREET"})


_HEADER = re.compile(r"^\s*\[([^\]]+)\]")
_TOKEN = re.compile(r'"[^"]*"|[^\s"]+')


@dataclass(frozen=True)
class Record:
    """One data line of a section: its line number and its fields."""

    line: int
    fields: tuple[str, ...]


@dataclass
class ModelScan:
    """The file's sections as found: records of the sections read, raw text, header lines."""

    records: dict[str, list[Record]]
    text: dict[str, list[str]]
    header_line: dict[str, int]
    n_lines: int

    def has(self, section: str) -> bool:
        return section in self.header_line


def scan_model(path: str | Path) -> ModelScan:
    """The model's sections and records, checked.

    Parameters
    ----------
    path : str or Path
        The ``.inp`` file.

    Returns
    -------
    ModelScan

    Raises
    ------
    InputOpenError
        The file cannot be read as text, or has no section at all.
    ValidationError
        A record has too few fields or a text where a number belongs, a name is defined
        twice, a link names a missing node, a node has no coordinates (or the model has
        no [COORDINATES], or no node at all); every problem is listed.
    """
    path = Path(path)
    scan = _scan(_read_lines(path), path)
    errors = QAReport()
    _check_records(scan, errors)
    nodes = _node_index(scan, errors)
    if not nodes:
        errors.error(
            "swmm_no_nodes",
            "[JUNCTIONS]",
            f"Model '{path.name}' defines no node: its [JUNCTIONS], [OUTFALLS], [STORAGE] "
            "and [DIVIDERS] sections are missing or empty, so there is no network to read.",
            fix="Give the model's full .inp file (File > Export > Input File in SWMM).",
        )
        raise ValidationError(errors)
    _check_links(scan, nodes, errors)
    _check_coordinates(scan, nodes, errors, path)
    if errors.has_errors:
        raise ValidationError(errors)
    return scan


# -- the file as lines and records ----------------------------------------------------


def _read_lines(path: Path) -> list[str]:
    """The file's lines (UTF-8, else Latin-1); a file that is not text cannot be opened."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputOpenError(
            f"Cannot read SWMM model '{path}': {exc}. Fix: check the path."
        ) from None
    if b"\x00" in data[:4096]:
        raise InputOpenError(
            f"'{path.name}' is not a text file, so not an EPA SWMM input file. "
            "Fix: give the model's .inp file (File > Export > Input File in the SWMM GUI)."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.splitlines()


def _fields(line: str) -> tuple[str, ...]:
    """The fields of a line: whitespace-separated, double quotes group, ``;`` comments."""
    if '"' not in line:
        line = line.split(";", 1)[0]
        return tuple(line.split())
    toks = []
    for t in _TOKEN.findall(line):
        if t.startswith(";"):
            break
        if ";" in t and not t.startswith('"'):
            toks.append(t.split(";", 1)[0])
            break
        toks.append(t.strip('"'))
    return tuple(t for t in toks if t != "")


def _quoted(field_: str) -> str:
    """A field as SWMM writes it: in double quotes when it holds a space."""
    return f'"{field_}"' if any(c.isspace() for c in field_) else field_


def _scan(lines: list[str], path: Path) -> ModelScan:
    """Sections, records (of the sections read) and their raw text, with line numbers."""
    records: dict[str, list[Record]] = {}
    text: dict[str, list[str]] = {}
    header: dict[str, int] = {}
    current: str | None = None
    for i, raw in enumerate(lines, 1):
        m = _HEADER.match(raw)
        if m:
            current = m.group(1).strip().upper()
            header.setdefault(current, i)
            continue
        if current not in _READ_SECTIONS:
            continue
        f = _fields(raw)
        if f:
            records.setdefault(current, []).append(Record(i, f))
            text.setdefault(current, []).append(
                raw.split(";", 1)[0] if '"' not in raw else " ".join(map(_quoted, f))
            )
    if not header:
        raise InputOpenError(
            f"'{path.name}' has no [SECTION] header, so it is not an EPA SWMM input file. "
            "Fix: give the model's .inp file (File > Export > Input File in the SWMM GUI)."
        )
    return ModelScan(records, text, header, len(lines))


def _min_fields(section: str, f: tuple[str, ...]) -> int:
    """The fields SWMM needs for this record (some sections: by its shape or type)."""
    n = MIN_FIELDS[section]
    kind = f[4].upper() if section == "STORAGE" and len(f) > 4 else ""
    if section == "STORAGE" and kind not in ("", "TABULAR"):
        return 8  # FUNCTIONAL and the 5.2 shapes: three parameters
    if section == "OUTLETS" and len(f) > 4 and f[4].upper().startswith("FUNCTIONAL"):
        return 7
    if section == "XSECTIONS" and len(f) > 1:
        shape = f[1].upper()
        if shape == "CUSTOM":
            return 4
        if shape not in NAMED_SHAPES:
            return 6
    return n


def _check_records(scan: ModelScan, errors: QAReport) -> None:
    """Too few fields, and numbers that are not numbers, each named by section and line."""
    numeric = {  # section -> positions that must be numbers
        **{s: (1,) for s in NODE_SECTIONS},
        "CONDUITS": (3,),
        "COORDINATES": (1, 2),
        "VERTICES": (1, 2),
        "POLYGONS": (1, 2),
        "SUBCATCHMENTS": (3, 4),
    }
    for sec, recs in scan.records.items():
        if sec not in MIN_FIELDS:
            continue
        for r in recs:
            need = _min_fields(sec, r.fields)
            if len(r.fields) < need:
                errors.error(
                    "swmm_too_few_fields",
                    f"[{sec}]",
                    f"[{sec}] line {r.line}: record '{r.fields[0]}' has {len(r.fields)} "
                    f"field(s); EPA SWMM needs at least {need} here.",
                    feature_id=r.fields[0],
                    fix=f"Complete line {r.line} (see the [{sec}] column header in the "
                    "SWMM manual), or re-export the model from SWMM.",
                )
                continue
            for k in numeric.get(sec, ()):
                if _number(r.fields[k]) is None:
                    errors.error(
                        "swmm_not_a_number",
                        f"[{sec}]",
                        f"[{sec}] line {r.line}: field {k + 1} of '{r.fields[0]}' is "
                        f"'{r.fields[k]}', not a number.",
                        feature_id=r.fields[0],
                        fix=f"Correct line {r.line} of the model.",
                    )


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _node_index(scan: ModelScan, errors: QAReport) -> dict[str, tuple[str, str, int]]:
    """Upper-case node name -> (name, section, line); duplicated names are errors
    (SWMM's names ignore case)."""
    nodes: dict[str, tuple[str, str, int]] = {}
    for sec in NODE_SECTIONS:
        for r in scan.records.get(sec, []):
            key = r.fields[0].upper()
            if key in nodes:
                name, sec0, line0 = nodes[key]
                errors.error(
                    "swmm_duplicate_node",
                    f"[{sec}]",
                    f"[{sec}] line {r.line}: node '{r.fields[0]}' is defined again (first "
                    f"in [{sec0}] line {line0}); SWMM node names must be unique.",
                    feature_id=r.fields[0],
                    fix=f"Rename or delete one of the two (line {line0} or line {r.line}).",
                )
                continue
            nodes[key] = (r.fields[0], sec, r.line)
    return nodes


def _check_links(scan: ModelScan, nodes: dict[str, tuple[str, str, int]], errors: QAReport) -> None:
    """Duplicated link names and links whose from or to node no node section defines."""
    seen: dict[str, tuple[str, int]] = {}
    for sec in LINK_SECTIONS:
        for r in scan.records.get(sec, []):
            name = r.fields[0]
            if name.upper() in seen:
                sec0, line0 = seen[name.upper()]
                errors.error(
                    "swmm_duplicate_link",
                    f"[{sec}]",
                    f"[{sec}] line {r.line}: link '{name}' is defined again (first in "
                    f"[{sec0}] line {line0}); SWMM link names must be unique.",
                    feature_id=name,
                    fix=f"Rename or delete one of the two (line {line0} or line {r.line}).",
                )
            seen.setdefault(name.upper(), (sec, r.line))
            for end, node in (("From Node", r.fields[1]), ("To Node", r.fields[2])):
                if node.upper() not in nodes:
                    errors.error(
                        "swmm_missing_node",
                        f"[{sec}]",
                        f"[{sec}] line {r.line}: link '{name}' names {end} '{node}', which "
                        "no [JUNCTIONS], [OUTFALLS], [STORAGE] or [DIVIDERS] record defines.",
                        feature_id=name,
                        fix=f"Add node '{node}' to the model or correct the {end} on line "
                        f"{r.line}.",
                    )


def _check_coordinates(
    scan: ModelScan, nodes: dict[str, tuple[str, str, int]], errors: QAReport, path: Path
) -> None:
    """Every node needs a point: no [COORDINATES] section, or a node missing from it, is
    an error."""
    if not scan.records.get("COORDINATES"):
        where = (
            f"line {scan.header_line['COORDINATES']} starts an empty [COORDINATES] section"
            if scan.has("COORDINATES")
            else f"none of its {scan.n_lines} lines is a [COORDINATES] header"
        )
        errors.error(
            "swmm_no_coordinates",
            "[COORDINATES]",
            f"Model '{path.name}' has no node coordinates ({where}), so its network "
            "cannot be placed on a map.",
            fix="Open the model in the SWMM GUI, place the nodes (or import them) and "
            "save it; its [COORDINATES] section then lists every node.",
        )
        return
    have = {r.fields[0].upper() for r in scan.records["COORDINATES"]}
    for key, (name, sec, line) in nodes.items():
        if key not in have:
            errors.error(
                "swmm_node_without_coordinates",
                f"[{sec}]",
                f"[{sec}] line {line}: node '{name}' has no coordinates in [COORDINATES] "
                f"(section at line {scan.header_line['COORDINATES']}).",
                feature_id=name,
                fix=f"Add a line '{name} X Y' to [COORDINATES].",
            )


def model_options(scan: ModelScan) -> dict[str, str]:
    """FLOW_UNITS and LINK_OFFSETS (SWMM's defaults CFS and DEPTH)."""
    opts = {"FLOW_UNITS": "CFS", "LINK_OFFSETS": "DEPTH"}
    for r in scan.records.get("OPTIONS", []):
        key = r.fields[0].upper()
        if key in opts and len(r.fields) > 1:
            opts[key] = r.fields[1].upper()
    return opts
