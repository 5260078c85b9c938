"""The package's layering and the suite's one-definition rule, checked on the source itself.

* the core (``detsim/`` and its sub-packages but ``track``) never imports the tracking suite, and its
  sub-packages (and top-level modules: ``errors``, ``entry``) form an acyclic graph of imports, lazy ones
  included (the engine owns the observer hook the diagnostics implement, so ``rendering`` never imports
  ``diagnostics``; ``host`` reads the configuration's error from ``errors``, not from ``model``), and nothing
  in the engine (``rendering``, ``model``) prints;
* every suite fact has one home in ``detsim/track/base`` (the acceptance line, Pearson r, the exit codes,
  sha256, changing directory); a second definition elsewhere in ``detsim/`` fails here, naming the file;
* every suite module has a test file of its own, mirroring its place in the package;
* the suite's areas form an acyclic graph of imports (lazy imports inside functions included), and no
  area imports the command layer (:mod:`detsim.track.commands`, :mod:`detsim.track.cli`);
* the modules of the base the asv suite loads (and what they import) import only the standard library, numpy
  and the base, relatively (lazy imports included): the suite loads them from the working tree under a name
  of its own beside any commit's ``detsim``; the recorder's steps, which ``.ci/track`` runs by path, and all
  they import, only the standard library;
* the judge imports neither a target's modules nor the recorder: what it needs of a recording is given to it.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "detsim"
TRACK = PACKAGE / "track"
BASE = TRACK / "base"
TESTS = ROOT / "tests" / "track"

# fact -> (pattern in source code, the modules allowed to hold it: one, or one in the core and one in the suite)
ONE_HOME = {
    "the acceptance line": (re.compile(r"\b0\.9995\b|\b5e-4\b"), ("track/base/metrics.py",)),
    "Pearson r": (re.compile(r"\bcorrcoef\("), ("track/base/metrics.py",)),
    "exit-code constants": (re.compile(r"^\s*EXIT_\w+(\s*,\s*EXIT_\w+)*\s*=|^class ExitCode\b", re.M),
                            ("track/base/exitcodes.py",)),
    # the core cannot import the suite, and the asv suite loads the suite's base beside older detsims that
    # lack the core's module (it imports only the standard library, numpy and itself): one home on each side
    "sha256": (re.compile(r"\bhashlib\.sha256\("), ("fileio/digest.py", "track/base/hashing.py")),
    "changing directory": (re.compile(r"\bos\.chdir\("), ("host/working_directory.py", "track/base/golden.py")),
}

# the `detsim` command has its own single exit code for bad input (the core cannot import the suite)
SUITE_ONLY = {"exit-code constants"}


@functools.cache  # each fact's test reads every module of the package: parsed once per process
def _code(path: Path) -> str:
    """The module's source without docstrings and comments (facts may be *mentioned* in prose)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0] = ast.Pass()
    return ast.unparse(tree)


@functools.cache  # the import graph's tests read every module of the suite: parsed once per process
def _imports(path: Path, root: Path = ROOT) -> frozenset[str]:
    """Every module ``path`` imports, at any depth of its code (relative imports resolved from ``root``)."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return frozenset(names)


COMMAND_LAYER = {"commands", "cli"}


def _graph(folder: Path, depth: int, skip: frozenset[str] = frozenset()) -> dict[str, set[str]]:
    """part -> the other parts its modules import (any import, lazy ones included), where a part is a first
    name under ``folder`` (a sub-package, or a module of its own), ``folder`` being the package named by its
    last ``depth`` path names (``detsim``: 1, ``detsim/track``: 2); the package's ``__init__`` and the parts
    in ``skip`` are left out."""
    root = folder.parents[depth - 1]
    prefix = list(folder.relative_to(root).parts)
    graph: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        source = path.relative_to(folder).with_suffix("").parts[0]
        if source == "__init__" or source in skip:
            continue
        parts = (name.split(".") for name in _imports(path, root))
        targets = {p[depth] for p in parts if p[:depth] == prefix and len(p) > depth} - {source, *skip}
        graph.setdefault(source, set()).update(targets)
    return graph


def _area_graph(track: Path) -> dict[str, set[str]]:
    """area -> the other areas of the tracking suite its modules import."""
    return _graph(track, 2)


def _core_graph(package: Path) -> dict[str, set[str]]:
    """sub-package (or top-level module) of the core -> the others it imports; the suite is not the core."""
    return _graph(package, 1, frozenset({"track"}))


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path of areas (first == last), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


CORE = sorted(p for p in PACKAGE.rglob("*.py") if TRACK not in p.parents)  # detsim/ and its sub-packages but track


def test_the_core_is_its_sub_packages():
    assert len(CORE) > 30 and {p.parent.name for p in CORE} >= {"detsim", "model", "rendering"}


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_never_imports_the_suite(path):
    leaks = sorted(name for name in _imports(path) if name == "detsim.track" or name.startswith("detsim.track."))
    assert not leaks, f"{path.relative_to(ROOT)} imports {leaks}"


@pytest.mark.parametrize("fact", list(ONE_HOME))
def test_each_suite_fact_has_one_home(fact):
    pattern, homes = ONE_HOME[fact]
    where = TRACK if fact in SUITE_ONLY else PACKAGE
    holders = sorted(str(p.relative_to(PACKAGE)) for p in where.rglob("*.py") if pattern.search(_code(p)))
    assert holders == sorted(homes), f"{fact} defined in {holders}, expected only in {homes}"


def _suite_modules() -> list[Path]:
    return sorted(p for p in TRACK.rglob("*.py") if p.name != "__init__.py" and p.parent != TRACK)


@pytest.mark.parametrize("module", _suite_modules(), ids=lambda p: str(p.relative_to(TRACK)))
def test_every_suite_module_has_its_own_test_file(module):
    area = module.parent.name
    expected = TESTS / area / f"test_{area}_{module.stem}.py"
    assert expected.is_file(), f"{module.relative_to(ROOT)} has no test file {expected.relative_to(ROOT)}"


def test_the_areas_import_each_other_without_a_cycle():
    cycle = _cycle(_area_graph(TRACK))
    assert cycle is None, "import cycle between areas: " + " -> ".join(cycle)


def test_the_suites_map_lists_every_area_above_the_areas_it_imports():
    """detsim/track/__init__.py's map names the areas from the top; each imports only areas named after it."""
    import detsim.track

    named = re.findall(r":mod:`\.(\w+)`", detsim.track.__doc__.split("From the top:", 1)[1])
    ranked = sorted(set(named), key=named.index)  # each area where the map first names it
    graph = _area_graph(TRACK)
    assert set(graph) <= set(ranked), f"areas missing from the map: {sorted(set(graph) - set(ranked))}"
    for area, imported in graph.items():
        above = [b for b in imported if ranked.index(b) <= ranked.index(area)]
        assert not above, f"{area} imports {above}, listed above it in the suite's map"


def test_the_core_sub_packages_import_each_other_without_a_cycle():
    graph = _core_graph(PACKAGE)
    assert {"rendering", "diagnostics", "model", "host", "fileio"} <= set(graph)  # the graph was read
    assert "rendering" in graph["diagnostics"]  # the diagnoses implement the engine's hook
    cycle = _cycle(graph)
    assert cycle is None, "import cycle between the core's sub-packages: " + " -> ".join(cycle)


def test_the_core_graph_finds_a_planted_cycle(tmp_path):
    """The engine importing a diagnosis lazily, the diagnosis importing the engine relatively: a cycle; a
    top-level module is a part of its own; the suite is not the core."""
    package = tmp_path / "detsim"
    for part in ("rendering", "diagnostics", "track"):
        (package / part).mkdir(parents=True)
        (package / part / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from detsim.rendering import engine\n")
    (package / "errors.py").write_text("")
    (package / "rendering" / "engine.py").write_text("from detsim.errors import ConfigError\n"
                                                     "def render():\n    from detsim.diagnostics import trace\n")
    (package / "diagnostics" / "trace.py").write_text("from ..rendering.engine import render\n")
    (package / "track" / "cli.py").write_text("import detsim.diagnostics.trace\n")
    graph = _core_graph(package)
    assert graph == {"rendering": {"errors", "diagnostics"}, "diagnostics": {"rendering"}, "errors": set()}
    assert _cycle(graph) in (["diagnostics", "rendering", "diagnostics"], ["rendering", "diagnostics", "rendering"])
    (package / "rendering" / "engine.py").write_text("from detsim.errors import ConfigError\n")
    _imports.cache_clear()
    assert _cycle(_core_graph(package)) is None


ENGINE = ("rendering", "model")  # nothing in the engine prints: progress and diagnoses go through hooks


def _prints(path: Path) -> list[str]:
    """Where a module prints: calls of ``print`` and uses of ``sys.stdout``/``sys.stderr``, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{node.lineno}: print")
        elif isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr") \
                and isinstance(node.value, ast.Name) and node.value.id == "sys":
            found.append(f"{node.lineno}: sys.{node.attr}")
    return found


@pytest.mark.parametrize("path", [p for p in CORE if p.relative_to(PACKAGE).parts[0] in ENGINE],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_engine_never_prints(path):
    assert not _prints(path), f"{path.relative_to(ROOT)} prints at {_prints(path)}"


def test_the_print_rule_sees_print_and_the_standard_streams(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('"""print(x) in prose"""\nimport sys\ndef f(x):\n    print(x)\n    sys.stderr.write("y")\n'
                       "    log.print = 1\n")
    assert _prints(planted) == ["4: print", "5: sys.stderr"]


def test_no_area_imports_the_command_layer():
    graph = _area_graph(TRACK)
    leaks = sorted(f"{area} -> {target}" for area, targets in graph.items() if area not in COMMAND_LAYER
                   for target in targets & COMMAND_LAYER)
    assert not leaks, f"areas importing the command layer: {leaks}"


def test_the_graph_rules_see_lazy_and_relative_imports(tmp_path):
    """A planted lazy cycle between two areas and a relative import of the commands are both found."""
    track = tmp_path / "detsim" / "track"
    for area in ("alpha", "beta", "commands"):
        (track / area).mkdir(parents=True)
        (track / area / "__init__.py").write_text("")
    (track / "alpha" / "one.py").write_text("from detsim.track.beta.two import f\n")
    (track / "beta" / "two.py").write_text("def f():\n    from detsim.track.alpha import one\n"
                                           "    from ..commands import run\n")
    graph = _area_graph(track)
    assert graph["alpha"] == {"beta"}
    assert graph["beta"] == {"alpha", "commands"}
    assert _cycle(graph) in (["alpha", "beta", "alpha"], ["beta", "alpha", "beta"])
    assert _cycle({"alpha": {"beta"}, "beta": set()}) is None


BASE_MAY_IMPORT = frozenset(sys.stdlib_module_names) | {"numpy"}


def _outside_base(path: Path) -> list[str]:
    """The imports of a base module, at any depth of its code, that are neither the standard library nor
    numpy nor a relative import of another base module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] not in BASE_MAY_IMPORT]
        elif isinstance(node, ast.ImportFrom) and node.level != 1:
            module = "." * node.level + (node.module or "")
            if node.level or module.split(".")[0] not in BASE_MAY_IMPORT:
                found.append(module)
    return found


def _loaded_by_the_asv_suite() -> set[str]:
    """The base modules ``benchmarks/`` loads (``base_module`` names and the tuple mapped over it in
    ``benchmarks/common.py``), and every base module those import, relatively, at any depth."""
    common = ast.parse((ROOT / "benchmarks" / "common.py").read_text())
    named = {node.value for call in ast.walk(common) if isinstance(call, ast.Call)
             and getattr(call.func, "id", None) in ("base_module", "map")
             for node in ast.walk(call) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    found, todo = set(), [name for name in named if (BASE / f"{name}.py").is_file()]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        for node in ast.walk(ast.parse((BASE / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                todo += [node.module] if node.module else [alias.name for alias in node.names]
    return found


def test_the_asv_suite_loads_the_base_modules_it_needs():
    assert {"golden", "hashing", "metrics", "provenance", "callgrind", "fresh", "workloads"} <= _loaded_by_the_asv_suite()


@pytest.mark.parametrize("module", sorted(_loaded_by_the_asv_suite()))
def test_the_base_the_asv_suite_loads_imports_only_the_standard_library_numpy_and_itself(module):
    path = BASE / f"{module}.py"
    outside = _outside_base(path)
    assert not outside, f"{path.relative_to(ROOT)} imports {outside}"


def _module_file(name: str) -> Path | None:
    """The file of a dotted module name of the package, or None (a name imported from a module, or none of ours)."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else \
        (path / "__init__.py" if (path / "__init__.py").is_file() else None)


def _top_level_imports(path: Path) -> frozenset[str]:
    """The absolute imports a package's ``__init__`` runs when loaded (its functions' lazy ones are not run)."""
    body = ast.parse(path.read_text()).body
    return frozenset(name for node in body if isinstance(node, (ast.Import, ast.ImportFrom))
                     for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]))


def _steps_closure() -> dict[Path, frozenset[str]]:
    """Each module the recorder's steps (run by path by ``.ci/track``, ``detsim/track`` loaded as a package of its
    own) import, at any depth, and the packages' ``__init__`` files that loads, with their imports."""
    found, todo = {}, [TRACK / "recorder" / "steps.py"]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found[path] = _imports(path) if path.name != "__init__.py" else _top_level_imports(path)
        todo += [f for f in map(_module_file, found[path]) if f is not None]
        todo += [folder / "__init__.py" for folder in path.parents if TRACK in (folder, *folder.parents)]
    return found


def test_the_recording_steps_need_only_the_standard_library():
    closure = _steps_closure()
    assert {TRACK / "recorder" / "own.py", BASE / "files.py", TRACK / "__init__.py"} <= set(closure)
    for path, names in closure.items():
        outside = sorted(n for n in names if n.split(".")[0] not in sys.stdlib_module_names
                         and not (n.startswith("detsim.track.") and (_module_file(n) or _module_file(n.rsplit(".", 1)[0]))
                                  in closure))
        assert not outside, f"{path.relative_to(ROOT)}, which the tracking run's steps import, imports {outside}"
    assert not [p for p in closure if p.parent == PACKAGE]  # detsim/__init__.py: the measured package


JUDGE_NEVER_IMPORTS = {"target", "recorder"}  # what the judge needs of a recording is passed in (twins) or in base


def test_the_judge_imports_neither_targets_nor_the_recorder():
    assert not _area_graph(TRACK)["judge"] & JUDGE_NEVER_IMPORTS


def test_the_base_rule_sees_lazy_absolute_and_parent_imports(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import json, os.path\nimport numpy as np\nfrom .hashing import sha256_bytes\n"
                       "from . import golden\nfrom collections import abc\nimport torch\n"
                       "from detsim.track.base.hashing import image_sha256\nfrom ..runtime import output\n"
                       "def f():\n    import detsim.commandline.to_config\n    from triton import jit\n")
    assert _outside_base(planted) == ["torch", "detsim.track.base.hashing", "..runtime", "detsim.commandline.to_config",
                                      "triton"]


def test_the_rules_see_code_not_prose(tmp_path):
    """A planted second definition is found; the same words in a docstring or comment are not."""
    planted = tmp_path / "planted.py"
    planted.write_text('"""Passes at r >= 0.9995."""\nimport hashlib\n\n'
                       "class ExitCode:\n    OK = 0\n"
                       "EXIT_OK, EXIT_BAD = 0, 2  # a 0.9995 comment\nR = 0.9995\nx = np.corrcoef(a, b)\n"
                       "os.chdir(d)\nh = hashlib.sha256(b'')\n")
    prose = tmp_path / "prose.py"
    prose.write_text('"""Passes at r >= 0.9995 (np.corrcoef(a, b)); os.chdir(d)."""\n# EXIT_OK = 0\n')
    for fact, (pattern, _) in ONE_HOME.items():
        assert pattern.search(_code(planted)), fact
        assert not pattern.search(_code(prose)), fact
