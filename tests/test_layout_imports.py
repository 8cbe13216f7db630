"""The package layout: imports only point down the declared order (``ms4map._layout``),
no import cycles, and the old flat module paths (``ms4map._compat.ALIASES``) still work."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from ms4map import _compat, _layout

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "ms4map"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def _modules() -> dict[str, Path]:
    return {_module_name(p)[0]: p for p in sorted(PKG.rglob("*.py"))}


MODULES = _modules()


def _imports(path: Path) -> list[tuple[int, str, str]]:
    """Every ms4map import of a file (any depth: functions, ``TYPE_CHECKING``):
    ``(line, imported module, the statement as written)``."""
    name, is_pkg = _module_name(path)
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ms4map":
                    found.append((node.lineno, alias.name, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "ms4map":
                continue
            text = f"from {'.' * node.level}{node.module or ''} import "
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                mod = sub if sub in MODULES else target
                found.append((node.lineno, mod, text + alias.name))
    return found


def _is_own_submodule(importer: str, imported: str, path: Path) -> bool:
    """A package's ``__init__`` importing its own submodules (re-exports)."""
    return path.name == "__init__.py" and imported.startswith(importer + ".")


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        _layout.layer_of(name)  # raises for a module in no layer


def test_imports_only_point_down() -> None:
    bad = []
    for name, path in MODULES.items():
        mine = _layout.layer_of(name)
        if mine is None:
            continue  # cli/, app/ and the package root may import anything
        own = name.split(".")[1]
        for line, mod, text in _imports(path):
            if mod.split(".")[1:2] == [own] or _is_own_submodule(name, mod, path):
                continue
            theirs = _layout.layer_of(mod)
            if theirs is None or theirs >= mine:
                where = "the top (cli/app/root)" if theirs is None else f"layer {theirs}"
                bad.append(
                    f"{path.relative_to(SRC.parent)}:{line}: `{text}` ({mod}) imports {where} "
                    f"from layer {mine} ({own})"
                )
    assert not bad, "imports that do not point down (ms4map._layout.LAYERS):\n" + "\n".join(bad)


def _graph() -> dict[str, dict[str, tuple[int, str]]]:
    graph: dict[str, dict[str, tuple[int, str]]] = {}
    for name, path in MODULES.items():
        edges = graph.setdefault(name, {})
        for line, mod, text in _imports(path):
            if mod != name and not _is_own_submodule(name, mod, path):
                edges.setdefault(mod, (line, text))
    return graph


def test_no_import_cycles() -> None:
    graph = _graph()
    colour: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        colour[node] = 1
        stack.append(node)
        for nxt in graph.get(node, {}):
            if colour.get(nxt) == 1:
                loop = [*stack[stack.index(nxt) :], nxt]
                steps = [
                    f"{MODULES[a].relative_to(SRC.parent)}:{graph[a][b][0]}: `{graph[a][b][1]}`"
                    for a, b in zip(loop, loop[1:], strict=False)
                ]
                cycles.append(" -> ".join(loop) + "\n    " + "\n    ".join(steps))
            elif colour.get(nxt) is None and nxt in graph:
                visit(nxt, stack)
        stack.pop()
        colour[node] = 2

    for node in graph:
        if colour.get(node) is None:
            visit(node, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


@pytest.mark.parametrize(("old", "new"), sorted(_compat.ALIASES.items()))
def test_old_module_path_is_the_new_module(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)
    module = sys.modules[old]
    assert module.__name__ == new
    assert module.__spec__.name == new  # the import system's alias spec is undone
    parent, _, leaf = old.rpartition(".")
    assert getattr(sys.modules[parent], leaf) is module


def test_old_public_names_work() -> None:
    import ms4map.network_build
    from ms4map.conditions import evaluate_site
    from ms4map.maps import identify, render_layers
    from ms4map.septic import flag_septic, mailing_list

    import ms4map
    from ms4map.rules import conditions, septic

    assert evaluate_site is conditions.evaluate_site
    assert (flag_septic, mailing_list) == (septic.flag_septic, septic.mailing_list)
    assert ms4map.conditions.evaluate_site is evaluate_site
    assert ms4map.maps.render_layers is render_layers and ms4map.maps.identify is identify
    assert ms4map.network_build is ms4map.network.build
    for name in ("write_outputs", "metres_to_crs_units", "demo_path", "open_workspace"):
        assert callable(getattr(ms4map.io, name))
    assert ms4map.open_workspace is ms4map.io.files.open_workspace
    assert ms4map.network.trace_upstream is ms4map.network.trace.trace_upstream
    assert ms4map.network.assign_outfalls is ms4map.network.trace.assign_outfalls


def test_old_paths_in_a_fresh_interpreter() -> None:
    code = (
        "import ms4map.conditions as c, ms4map.rules.conditions as r, sys\n"
        "from ms4map.profiles import load_profile\n"
        "from ms4map.overland import route\n"
        "import ms4map.hydrology.overland as o\n"
        "assert c is r and route is o.route and c.__spec__.name == 'ms4map.rules.conditions'\n"
        "assert 'ms4map.maps' not in sys.modules  # nothing loads before it is asked for\n"
        "import importlib; importlib.reload(c)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_root_gives_io_the_demo_builder(monkeypatch, tmp_path) -> None:
    """io does not import the demo generator; it takes the package root's."""
    import ms4map.datasets.alder_falls
    from ms4map.io import files

    calls = []
    monkeypatch.setattr(ms4map.datasets.alder_falls, "build_demo", lambda out: calls.append(out))
    files._demo_builder()(tmp_path)
    assert calls == [tmp_path]


def test_importing_the_package_loads_no_gis_library() -> None:
    """``import ms4map`` (and the CLI module) stays light; the workspace API loads on
    first use and is the io module's."""
    code = (
        "import sys\n"
        "import ms4map, ms4map.cli, ms4map.batch\n"
        "heavy = {'geopandas', 'pandas', 'rasterio', 'pyogrio', 'shapely'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "from ms4map import open_workspace\n"
        "import ms4map.io, ms4map.io.workspace\n"
        "assert open_workspace is ms4map.io.open_workspace\n"
        "assert ms4map.Workspace is ms4map.io.workspace.Workspace\n"
        "assert 'geopandas' in sys.modules and 'Dem' in dir(ms4map)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
