"""The ``ms4map`` command line.

Every command takes the same workspace options (:func:`add_workspace_options`) and
maps errors to exit codes: 0 ok, 1 warnings (``validate`` only), 2 data errors,
3 input cannot be opened or an output written, 4 usage error.  No traceback unless
``--debug``.
Each command lives in its own module ``ms4map.cli.<module>`` (listed in
:data:`COMMAND_MODULES`), which declares it as data: ``COMMANDS``, a tuple of
:class:`Command` (name, help and description text, whether it takes the workspace
options, a function adding its own options, and ``run(args) -> int``).
:func:`build_parser` adds one sub-parser per :class:`Command`; ``ms4map.cli.records``
declares three (``inspect``, ``records``, ``case``).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.errors import EXIT_USAGE, Ms4mapError

if TYPE_CHECKING:
    from ..io import Workspace

__all__ = [
    "main",
    "Command",
    "add_debug_option",
    "add_profile_option",
    "add_workspace_options",
    "input_paths",
    "workspace_from_args",
    "workspace_kwargs",
]

# the modules declaring COMMANDS, in the order of `ms4map --help` (records: inspect,
# records, case)
COMMAND_MODULES = (
    "validate", "trace", "drainage", "screen", "batch", "app", "demo", "records", "project",
    "smp", "outfalls", "users", "export", "field",
)  # fmt: skip


class _Parser(argparse.ArgumentParser):
    """The parsers of ``ms4map``: exit code 4 for usage errors; a sub-command's arguments
    are added when that command is parsed or its help shown (:meth:`Command.add_to`), so
    ``ms4map batch`` does not import the libraries other commands' options come from."""

    _fill: Callable[[], None] | None = None

    def complete(self) -> None:
        """Add the arguments left for later (once)."""
        fill, self._fill = self._fill, None
        if fill is not None:
            fill()

    def parse_known_args(self, args=None, namespace=None):  # noqa: ANN001, ANN202
        self.complete()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.complete()
        return super().format_usage()

    def format_help(self) -> str:
        self.complete()
        return super().format_help()

    def error(self, message: str) -> None:  # exit code 4 for usage errors
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


@dataclass(frozen=True)
class Command:
    """One ``ms4map`` sub-command, as its module declares it (in ``COMMANDS``).

    Parameters
    ----------
    name
        The sub-command: ``ms4map NAME``.
    about
        Its texts, or a function returning them (texts built from library data when
        the parser is built): the first paragraph is its line in ``ms4map --help``,
        the rest the text of ``ms4map NAME --help``.  White space is folded, as
        argparse folds it when printing.
    run
        ``run(args) -> int``: runs the command and returns the exit code.
    options
        ``options(parser)``: adds the command's own arguments (after the workspace
        options when ``workspace``).
    workspace
        The command takes PATH and the workspace options (:func:`add_workspace_options`)
        first.
    early
        ``early(argv)``, optional: work that may start before the parser is built (it
        imports the other commands' modules and their libraries), given the command's
        raw arguments; it must not fail on arguments the parser will reject.
    """

    name: str
    about: str | Callable[[], str]
    run: Callable[[argparse.Namespace], int]
    options: Callable[[argparse.ArgumentParser], None]
    workspace: bool = False
    early: Callable[[list[str]], None] | None = None

    def texts(self) -> tuple[str, str]:
        """``(help, description)``: the first paragraph of :attr:`about` and the rest."""
        about = self.about() if callable(self.about) else self.about
        first, _, rest = about.strip().partition("\n\n")
        return " ".join(first.split()), " ".join(rest.split())

    def add_to(self, sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """Add the sub-parser of this command to ``sub``, run by :attr:`run`.

        Returns
        -------
        argparse.ArgumentParser
            The command's parser: workspace options (if any), then its own; with the
            parsers of :func:`build_parser` they are added when the command is parsed
            or its help or usage shown (``parser.complete()`` adds them at once).
        """
        summary, description = self.texts()
        parser = sub.add_parser(self.name, help=summary, description=description)

        def fill() -> None:
            if self.workspace:
                add_workspace_options(parser)
            self.options(parser)

        parser.set_defaults(func=self.run)
        if isinstance(parser, _Parser):
            parser._fill = fill
        else:
            fill()
        return parser


def add_debug_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--debug``: show tracebacks (every command has it; see :func:`main`)."""
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def add_profile_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--profile NAME|FILE``: the municipality profile (default stillwater)."""
    from ..rules.profiles import BUILTIN_PROFILES

    parser.add_argument(
        "--profile",
        default="stillwater",
        metavar="NAME|FILE",
        help=f"municipality profile: {', '.join(BUILTIN_PROFILES)} or a TOML file "
        "(default %(default)s)",
    )


def add_workspace_options(parser: argparse.ArgumentParser, *, path_required: bool = True) -> None:
    """Add PATH and the options every command shares."""
    parser.add_argument(
        "path",
        metavar="PATH",
        nargs=None if path_required else "?",
        help="GeoPackage workspace (or File Geodatabase, folder of layers, vector file, "
        "EPA SWMM model .inp with --crs, or a TOML manifest holding these options)",
    )
    g = parser.add_argument_group("workspace options")
    g.add_argument(
        "--layer",
        action="append",
        default=[],
        metavar="ROLE=LAYER",
        help="which layer plays a canonical role: a layer of PATH, a file, or FILE::LAYER "
        "(repeatable; several layers may feed one role)",
    )
    g.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="ROLE[.SOURCE_LAYER].COLUMN=SOURCE",
        help="map a source column to a canonical column (repeatable)",
    )
    g.add_argument(
        "--field-map", metavar="FILE", help="TOML field map (tables per role, value maps)"
    )
    g.add_argument(
        "--dem",
        nargs="+",
        metavar="FILE",
        help="DEM: a GeoTIFF, a .vrt, a folder of GeoTIFF tiles, or several tile files "
        "(read as one mosaic); default: <stem>_dem.tif beside PATH",
    )
    g.add_argument("--crs", metavar="CRS", help="projected working CRS, e.g. EPSG:26918")
    g.add_argument(
        "--repair-geometry",
        action="store_true",
        help="repair invalid geometries (reported) instead of stopping",
    )
    add_debug_option(g)


def workspace_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :func:`ms4map.io.open_workspace` from parsed options."""
    from ..io import FieldMap
    from ..io.fieldmap import parse_field_option
    from ..io.sources import parse_layer_option

    layers: dict[str, list[str]] = {}
    for text in args.layer or []:
        role, layer = parse_layer_option(text)
        layers.setdefault(role, []).append(layer)
    fmap = FieldMap.from_toml(args.field_map) if getattr(args, "field_map", None) else FieldMap()
    for text in args.field or []:
        role, src_layer, column, source = parse_field_option(text)
        fmap.set(role, column, source, source_layer=src_layer, origin=f"--field {text}")
    if getattr(args, "impairments", None):
        # the columns of the --impairments CSV (read by itself), not of a workspace layer
        fmap.columns = {k: v for k, v in fmap.columns.items() if k[0] != "impairments"}
    return {
        "layers": layers or None,
        "field_map": fmap,
        "dem": args.dem[0] if args.dem and len(args.dem) == 1 else args.dem,
        "crs": args.crs,
        "repair_geometry": bool(args.repair_geometry),
    }


def input_paths(args: argparse.Namespace) -> list[Path]:
    """Every user file the options name (workspace, DEM, layer files, field map, manifest).

    Outputs are checked against these before anything is computed, so a mistyped
    ``--out`` can never overwrite the user's data.
    """
    found: list[Path] = []
    dem = getattr(args, "dem", None) or []
    cands = [getattr(args, "path", None), getattr(args, "field_map", None)]
    for d in [dem] if isinstance(dem, str) else dem:  # a folder of tiles: each tile too
        cands.append(d)
        if Path(d).expanduser().is_dir():
            cands += [str(f) for f in Path(d).expanduser().iterdir() if f.is_file()]
    for text in getattr(args, "layer", None) or []:
        layer = text.split("=", 1)[-1]
        cands.append(layer.split("::", 1)[0])
    base = Path(args.path).expanduser() if getattr(args, "path", None) else None
    if base is not None:
        cands.append(base.with_name(f"{base.stem}_dem.tif"))
    if base is not None and base.suffix.lower() == ".toml":
        from ..core.manifest import manifest_files

        cands += manifest_files(base)
    for c in cands:
        if not c:
            continue
        p = Path(c).expanduser()
        for q in (p, (base.parent / p) if base is not None and not p.is_absolute() else p):
            if q.exists():
                found.append(q.resolve())
    return found


def workspace_from_args(args: argparse.Namespace) -> Workspace:
    """Open the workspace the options describe (raises ms4map errors)."""
    from ..io import open_workspace

    return open_workspace(args.path, **workspace_kwargs(args))


def commands() -> list[Command]:
    """The sub-commands, in the order of ``ms4map --help`` (their modules imported)."""
    found: list[Command] = []
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"ms4map.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ms4map.cli.{name}":
                continue  # command not available in this build
            raise
        found.extend(mod.COMMANDS)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ms4map",
        description="Which properties drain where: MS4 tracing, parcel drainage and screening.",
    )
    parser.add_argument("--version", action="version", version=f"ms4map {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in commands():
        command.add_to(sub)
    return parser


def _start_early(argv: list[str]) -> None:
    """The chosen command's :attr:`Command.early` work, before the parser is built."""
    if not argv:
        return
    for command in commands():
        if command.name == argv[0] and command.early is not None:
            command.early(argv[1:])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ms4map`` command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        _start_early(argv)
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        return int(args.func(args) or 0)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    except Ms4mapError as exc:
        if debug:
            traceback.print_exc()
        print(f"ms4map: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # output piped into `head` etc.
        return 0
    except KeyboardInterrupt:
        print("ms4map: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an ms4map bug: say so briefly
        if debug:
            traceback.print_exc()
        print(
            f"ms4map: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in ms4map; re-run with --debug and report the traceback.",
            file=sys.stderr,
        )
        return 70


def _no_numpy_hugepages() -> None:
    """Ask numpy, before it is imported, not to mark its large arrays for huge pages
    (``NUMPY_MADVISE_HUGEPAGE=0``, numpy's documented switch), unless the user set it.

    Where Linux's ``transparent_hugepage/defrag`` is ``madvise`` (Ubuntu's and
    Debian's default), each first touch of a marked array can stall on a synchronous
    memory compaction (numpy/numpy#31590): on the county benchmark ``ms4map
    drainage`` spent 4.4 - 7.6 s in the kernel with the marks and 2.3 - 2.5 s
    without (15.2 - 15.8 s instead of 19.2 - 20.8 s; docs/hydrology.md, "Speed").
    The command line is a process of its own; a notebook's numpy is not changed.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


def _entry() -> None:  # pragma: no cover
    _no_numpy_hugepages()
    code = main()
    # Everything the command wrote is closed and on disk by now.  Moving the surviving
    # objects out of the cyclic collector's reach spares the interpreter's last
    # collection of all of them (0.3 - 0.4 s after a town's chain, measured in
    # benchmarks/batch_speed.md); objects are still freed and finalised by reference counting.
    gc.freeze()
    sys.exit(code)
