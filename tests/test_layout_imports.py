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
    """The old paths answer with the new objects, each import with a DeprecationWarning."""
    import ms4map
    from ms4map.rules import conditions, septic

    for old in ("ms4map.conditions", "ms4map.septic", "ms4map.io.files"):
        sys.modules.pop(old, None)  # a first import warns; an earlier test may have made it
    with pytest.warns(DeprecationWarning, match="removed in ms4map 0.3"):
        from ms4map.conditions import evaluate_site
    with pytest.warns(DeprecationWarning):
        from ms4map.septic import flag_septic, mailing_list
    with pytest.warns(DeprecationWarning, match="ms4map.io.open"):
        from ms4map.io.files import open_workspace

    assert evaluate_site is conditions.evaluate_site
    assert (flag_septic, mailing_list) == (septic.flag_septic, septic.mailing_list)
    assert open_workspace is ms4map.io.open_workspace is ms4map.open_workspace
    assert ms4map.conditions.evaluate_site is evaluate_site


@pytest.mark.parametrize("old", sorted(_compat.SPLIT))
def test_split_module_answers_every_name_from_its_new_modules(old: str) -> None:
    """A split module's old path finds each name in the new modules, in table order."""
    sys.modules.pop(old, None)  # a first import warns; an earlier test may have made it
    with pytest.warns(DeprecationWarning, match=old.replace(".", r"\.")):
        module = importlib.import_module(old)
    names = [n for n in dir(module) if not n.startswith("__")]
    assert names, old
    for name in names[:50]:
        value = getattr(module, name)
        owner = next(
            importlib.import_module(m)
            for m in _compat.SPLIT[old]
            if hasattr(importlib.import_module(m), name)
        )
        assert value is getattr(owner, name)
    with pytest.raises(AttributeError, match="split into"):
        module.no_such_name  # noqa: B018


def test_old_paths_in_a_fresh_interpreter() -> None:
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "import sys, ms4map, ms4map.rules.conditions as r\n"
        "assert 'ms4map.outputs.maps' not in sys.modules  # nothing loads before it is asked for\n"
        "try:\n"
        "    import ms4map.conditions\n"
        "except DeprecationWarning as w:\n"
        "    assert 'ms4map.rules.conditions' in str(w)\n"
        "else:\n"
        "    raise AssertionError('no warning')\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "import ms4map.conditions as c\n"
        "from ms4map.overland import route\n"
        "import ms4map.hydrology as h\n"
        "assert c is r and route is h.route and c.__spec__.name == 'ms4map.rules.conditions'\n"
        "import importlib; importlib.reload(c)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_io_does_not_reach_up_to_the_demo_generator(monkeypatch, tmp_path) -> None:
    """The demo town comes from ``datasets``: the committed files, or a rebuild by the
    generator into the data folder when an install carries none; io only finds the
    committed file (deprecated) and never builds it."""
    import ms4map
    import ms4map.datasets as datasets
    from ms4map.datasets import alder_falls

    committed = datasets.get_path("alder_falls")
    assert committed.name == "demo.gpkg" and committed.exists()
    assert datasets.get_path("alder_falls", "dem").name == "demo_dem.tif"
    with pytest.warns(DeprecationWarning, match="get_path"):
        assert ms4map.io.demo_path() == committed
    with pytest.raises(ValueError, match="Available datasets are alder_falls"):
        datasets.get_path("springfield")

    calls = []
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(datasets, "_committed", lambda name: None)
    monkeypatch.setattr(alder_falls, "build_demo", lambda out: calls.append(out))
    assert datasets.get_path("alder_falls") == tmp_path / "demo" / "demo.gpkg"
    assert calls == [tmp_path / "demo"]


def test_importing_the_package_loads_no_gis_library() -> None:
    """``import ms4map`` (and the CLI module, and batch's scheduler side) stays light;
    the front door's names load on first use and are their package doors' objects."""
    code = (
        "import sys\n"
        "import ms4map, ms4map.cli, ms4map.batch\n"
        "heavy = {'geopandas', 'pandas', 'rasterio', 'pyogrio', 'shapely'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "from ms4map import open_workspace\n"
        "import ms4map.io\n"
        "assert open_workspace is ms4map.io.open_workspace\n"
        "assert ms4map.Workspace is ms4map.io.Workspace\n"
        "assert 'geopandas' in sys.modules and 'Dem' in dir(ms4map)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_front_door() -> None:
    """``dir(ms4map)`` is the front door: its names and nothing private, each one the
    object of the package door it names."""
    import ms4map

    names = dir(ms4map)
    assert names == sorted(ms4map.__all__)
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    assert len(names) <= 45
    for verb in ("open_workspace", "run", "Settings", "where_does_it_drain", "outfall_area"):
        assert verb in names
    for name, door in ms4map._FRONT_DOOR.items():
        value = getattr(ms4map, name)
        if door is None:
            assert value is importlib.import_module(f"ms4map.{name}")
        else:
            assert value is getattr(importlib.import_module(door), name), name
    assert set(ms4map.__all__) - set(ms4map._FRONT_DOOR) == {
        "DataError",
        "Finding",
        "InputOpenError",
        "Ms4mapError",
        "OutputError",
        "QAReport",
        "UsageError",
        "ValidationError",
        "__version__",
    }
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        ms4map.nothing_here  # noqa: B018


# ---- doors (issue 26) -------------------------------------------------------------------
#: The largest door a subpackage may have (the package root, the front door, is larger).
MAX_DOOR_NAMES = 20
#: The front ends: they may reach into each other (``ms4map app`` starts the app).
FRONT_ENDS = ("cli", "app")
#: Modules that may import other modules of ms4map inside functions, with the reason.
#: Everywhere else an import of ms4map inside a function is a hidden dependency (an import
#: cycle worked around, or a layer broken): the library imports at module level.
LAZY_IMPORTERS: dict[str, str] = {
    "ms4map": "the front door loads each name on first use, so `import ms4map` stays light",
    "ms4map._compat": "the old module paths load their new module when asked for",
    "ms4map.cli": "front end: `ms4map --help` and `ms4map batch` must not load the GIS "
    "libraries, so each command imports its library in its run()",
    "ms4map.app": "front end: Streamlit pages import what they show when shown",
    "ms4map.batch": "the scheduler process loads no GIS library (`import ms4map.batch` stays "
    "light, the fork server preloads the chain); each town's task imports it in the worker",
}
#: Modules that may be imported inside functions anywhere, with the reason.
LAZY_IMPORTED: dict[str, str] = {
    "ms4map.hydrology._kernels": "numba loads (and compiles) only when routing runs",
    "ms4map.hydrology._fill": "numba loads (and compiles) only when routing runs",
}


def _doors() -> dict[str, Path]:
    """Every subpackage's ``__init__.py`` (the root excluded)."""
    return {
        name: path
        for name, path in MODULES.items()
        if path.name == "__init__.py" and name != "ms4map"
    }


def _all_of(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "__all__":
            return list(ast.literal_eval(node.value))
    return None


def _door_names(package: str) -> set[str]:
    names = _all_of(MODULES[package])
    return set(names or ())


@pytest.mark.parametrize("package", sorted(_doors()))
def test_every_package_has_an_explicit_door(package: str) -> None:
    """A door: an ``__all__`` of at most 20 names besides the package's public modules
    (``io.styles``, ``core.errors``: one topic each), each bound by an import or a
    definition in the ``__init__`` itself, and no lazy ``__getattr__``."""
    path = MODULES[package]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = _all_of(path)
    assert names is not None, f"{path.relative_to(SRC.parent)} has no __all__"
    modules = [n for n in names if f"{package}.{n}" in MODULES]
    assert len(names) - len(modules) <= MAX_DOOR_NAMES, (package, len(names) - len(modules))
    assert not [n for n in modules if n.startswith("_")], package
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    assert "__getattr__" not in bound, f"{package} has a lazy __getattr__"
    assert not set(names) - bound - set(modules), (package, sorted(set(names) - bound))


def _top(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_other_packages_import_only_door_names() -> None:
    """Code of one package reaches another only through its door: a name of the door's
    ``__all__``, or a public module the door lists (``from ms4map.io import styles``,
    ``from ms4map.core.errors import DataError``).  Tests may import step modules."""
    bad = []
    for name, path in MODULES.items():
        own = _top(name)
        for line, mod, text in _imports(path):
            target = _top(mod)
            if target in ("", own) or mod == "ms4map" or _is_own_submodule(name, mod, path):
                continue
            if target in FRONT_ENDS or own in ("__main__",):
                continue  # the front ends are not libraries: they have no door
            door = f"ms4map.{target}"
            if door not in MODULES:
                continue  # a plain module of the root (_compat, _layout)
            names = _door_names(door)
            imported = text.rsplit(" ", 1)[-1]
            if mod == door:
                ok = imported in names or imported == target  # the door itself
            else:
                first = mod.split(".")[2]
                ok = first in names and not any(p.startswith("_") for p in mod.split(".")[2:])
            if not ok:
                bad.append(f"{path.relative_to(SRC.parent)}:{line}: `{text}`")
    assert not bad, "imports past another package's door:\n" + "\n".join(bad)


def _absolute(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module an ``ImportFrom`` in module ``name`` imports from."""
    if not node.level:
        return node.module or ""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = here[: len(here) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def test_no_ms4map_import_inside_a_function() -> None:
    """The library imports its own modules at module level (:data:`LAZY_IMPORTERS` are
    the reasoned exceptions); imports of optional extras may stay in functions."""
    bad = []
    for name, path in MODULES.items():
        if name in LAZY_IMPORTERS or any(
            name.startswith(p + ".") for p in LAZY_IMPORTERS if p != "ms4map"
        ):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if (
                    isinstance(node, ast.ImportFrom)
                    and _absolute(name, path, node) in LAZY_IMPORTED
                ):
                    continue
                if isinstance(node, ast.ImportFrom) and (
                    node.level or (node.module or "").startswith("ms4map")
                ):
                    bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno}")
                elif isinstance(node, ast.Import) and any(
                    a.name.startswith("ms4map") for a in node.names
                ):
                    bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno}")
    assert not bad, "ms4map imports inside functions:\n" + "\n".join(sorted(set(bad)))
