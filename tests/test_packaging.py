"""Packaging: environment.yml names the same dependencies as pyproject.toml; CI runs the README's test command."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_requirements() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    reqs = list(data["project"]["dependencies"])
    for extra in data["project"]["optional-dependencies"].values():
        reqs += extra
    return {_name(r): r.replace(" ", "") for r in reqs}


def _environment_requirements() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (ROOT / "environment.yml").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+[^#]*?)\s*(#.*)?$", line)
        if not m:
            continue
        req = m.group(1).strip()
        if req in ("pip", "-e .", "conda-forge") or req.startswith("python") or req.endswith(":"):
            continue
        out[_name(req)] = req.replace(" ", "")
    return out


def test_environment_yml_matches_pyproject() -> None:
    py, env = _pyproject_requirements(), _environment_requirements()
    assert set(py) == set(env), (
        f"only in pyproject: {sorted(set(py) - set(env))}; only in environment.yml: {sorted(set(env) - set(py))}"
    )
    for name, req in py.items():
        assert env[name] == req, (
            f"{name}: pyproject says {req!r}, environment.yml says {env[name]!r}"
        )


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    m = re.search(r"```(?:bash|sh)\n(python -m pip install[^\n]*pytest[^\n]*)\n```", readme)
    assert m, "README must show the test command in a bash block"
    assert m.group(1) in ci.splitlines()


def test_demo_is_package_data() -> None:
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert '"ms4map.demo_data": "data/layers"' in setup
    if not (ROOT / "data" / "layers" / "demo.gpkg").exists():
        pytest.skip("demo not generated in this checkout")


def test_what_users_read_cites_the_repository_s_own_docs() -> None:
    """The project's design notes (RULES.md, DESIGN.md, STYLE.md) are not shipped: code,
    docs and notebooks cite docs/ (docs/rules.md for the rules) instead."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    cited = []
    for rel in tracked:
        path = ROOT / rel
        if rel == "tests/test_packaging.py" or path.suffix not in {
            ".py",
            ".md",
            ".ipynb",
            ".toml",
            ".txt",
            ".yml",
            ".cfg",
        }:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        cited += [f"{rel}: {m}" for m in re.findall(r"\b(?:RULES|DESIGN|STYLE)\.md\b", text)]
    assert not cited, cited


@pytest.mark.parametrize(
    "notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name
)
def test_notebook_is_stored_without_outputs(notebook: Path) -> None:
    """Notebooks are kept without outputs (each has a test that runs it)."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None
