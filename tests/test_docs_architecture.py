"""docs/ARCHITECTURE.md's module table and docs/CONTRACTS.md's signatures are the code's.

The table under "### Modules" lists every module of ``src/ms4map`` with the first line
of its docstring, and nothing else; CONTRACTS.md's signature lines (``name(args)``
in a ``python`` block under "## Signatures") are those ``inspect.signature`` gives.
On failure the test prints the table as it should read.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
ARCH = ROOT / "docs" / "ARCHITECTURE.md"
CONTRACTS = ROOT / "docs" / "CONTRACTS.md"
_ROW = re.compile(r"^\| `([^`]+\.py)` \| (.*) \|$")


def _first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.strip().split("\n\n")[0].split()) if doc else ""


def module_table() -> list[tuple[str, str]]:
    """``(path below src/, first docstring paragraph)`` of every module, in path order."""
    return [
        (str(p.relative_to(SRC)), _first_line(p).replace("|", "\\|"))
        for p in sorted((SRC / "ms4map").rglob("*.py"))
    ]


def _documented() -> list[tuple[str, str]]:
    text = ARCH.read_text(encoding="utf-8")
    section = text.split("### Modules", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return [m.groups() for m in map(_ROW.match, section.splitlines()) if m]


def test_every_module_has_a_docstring() -> None:
    missing = [path for path, first in module_table() if not first]
    assert not missing, f"modules without a docstring: {missing}"


def test_module_table_is_the_code() -> None:
    want = module_table()
    have = _documented()
    table = "\n".join(f"| `{p}` | {j} |" for p, j in want)
    assert have == want, (
        "docs/ARCHITECTURE.md's module table differs from the modules' docstrings; "
        f"it should read:\n| module | job |\n|---|---|\n{table}"
    )


_SIG = re.compile(r"^(ms4map(?:\.\w+)+)(\(.*\))(?: -> .*)?$")


def _contract_signatures() -> list[tuple[str, str]]:
    text = CONTRACTS.read_text(encoding="utf-8")
    section = text.split("## Signatures", 1)[1]
    block = section.split("```python", 1)[1].split("```", 1)[0]
    return [m.groups() for m in map(_SIG.match, block.splitlines()) if m]


def test_contract_signatures_are_the_code() -> None:
    sigs = _contract_signatures()
    assert len(sigs) >= 20
    wrong = []
    for dotted, args in sigs:
        module, _, name = dotted.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        real = str(inspect.signature(obj)).split(" -> ")[0]
        if real != args:
            wrong.append(f"{dotted}{args}\n   code: {dotted}{real}")
    assert not wrong, "CONTRACTS.md signatures differ from the code:\n" + "\n".join(wrong)


def test_readme_python_example_runs_through_the_front_door(capsys) -> None:
    """The README's Python example runs as printed, on the demo town, and uses no old
    path (no DeprecationWarning of ms4map's)."""
    import warnings

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert "ms4map.open_workspace(" in block and "ms4map.run(" in block
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=DeprecationWarning, module=r"ms4map\.")
        warnings.filterwarnings("error", message=".*removed in ms4map 0.3.*")
        exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - our own example
    out = capsys.readouterr().out
    assert "Condition A: yes" in out  # the plaza drains to the PCB-listed Kenyon River
