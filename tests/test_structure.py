"""The packages' shape (azjax and envs), read from the code itself: layers that import
downwards only, no import circle (type-checking imports included), no imports hidden in
functions, few modules at the top, every command in `azjax.commands` behind `azjax
COMMAND` and importing no other command, entry points at the top that are only entry
points, and a public API that is listed and documented. Module size is left to judgement:
a module is one idea."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import azjax
import envs
from azjax.__main__ import COMMANDS as TABLE

PACKAGES = {
    "azjax": Path(azjax.__file__).resolve().parent,
    "envs": Path(envs.__file__).resolve().parent,
}
# The layers, lowest first: a module may import its own layer and those before it. The
# top-level modules of `azjax` (the public API, `azjax COMMAND` and the entry points of
# `python -m azjax.<command>`) are the last layer.
LAYERS = (
    "envs",
    "azjax.core",
    "azjax.run",
    "azjax.go",
    "azjax.evaluation",
    "azjax.driver",
    "azjax.sweep",
    "azjax.commands",
    "azjax",
)
SUBPACKAGES = [layer for layer in LAYERS if layer.startswith("azjax.")]
# Every command's module (`azjax COMMAND`), by the table of `azjax/__main__.py`; `check`
# is the games' own (`envs.check`), every other lives in `azjax.commands`.
COMMAND_MODULES = {module for module, _ in TABLE.values()}
OUTSIDE_COMMANDS = {"envs.check"}
# The helpers of `azjax.commands` that commands share; they are no command themselves.
COMMAND_HELPERS = {"azjax.commands.command_line", "azjax.commands.errors"}
# `python -m azjax.<name>` for these: a module at the top that only runs the command.
ENTRY_POINTS = ("arena", "export", "gtp", "gtp_referee", "league", "play", "serve")
# The top-level modules that are not entry points: the public API and `azjax COMMAND`.
TOP_NOT_ENTRY_POINTS = {"__init__", "__main__"}
MAX_TOP_MODULES = 10
# Imported only where used (inside a function), by module name prefix, per package:
# optional extras, so that the package works without them, and matplotlib, imported while
# a run's first step compiles rather than at start-up (`azjax.run.directory.plots.preload`).
OPTIONAL_IMPORTS = {
    "azjax": ("tensorboardX", "matplotlib"),
    "envs": ("envs.pgx_adapter", "pgx"),
}


def modules(package: str) -> dict[str, Path]:
    """Every module of `package` (`azjax` or `envs`) by dotted name; a package's
    `__init__.py` is named by the package."""
    root = PACKAGES[package]
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


ALL_MODULES = {**modules("azjax"), **modules("envs")}


def imports(path: Path) -> set[str]:
    """The modules of azjax and envs that `path` imports, anywhere in the file (inside
    functions and under `if TYPE_CHECKING:` too). `from P import m` names module `P.m`
    when that is a module, and `P` (its `__init__`) for any other name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in ALL_MODULES else node.module)
    return {name for name in found if name in ALL_MODULES}


GRAPH = {name: imports(path) - {name} for name, path in ALL_MODULES.items()}


def layer_of(module: str) -> int:
    """The index in LAYERS of the layer `module` belongs to (a subpackage's `__init__`
    belongs to its subpackage, not to the top)."""
    if module in LAYERS:
        return LAYERS.index(module)
    for i, layer in reversed(list(enumerate(LAYERS))):
        if module == layer or module.startswith(layer + ".") and (
                layer != "azjax" or module.count(".") == 1):
            return i
    raise AssertionError(f"{module} is in no layer")


def package_of(module: str) -> str:
    """The package whose `__init__` a module belongs under (a package, itself)."""
    path = ALL_MODULES[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def test_every_module_is_in_a_layer_and_the_layers_exist():
    assert {layer_of(name) for name in ALL_MODULES} == set(range(len(LAYERS)))
    for layer in LAYERS:
        assert layer in ALL_MODULES, layer


def test_layers_import_downwards_only():
    upward = sorted(f"{name} -> {dep}" for name, deps in GRAPH.items() for dep in deps
                    if layer_of(dep) > layer_of(name))
    assert upward == []


def test_the_core_imports_nothing_but_itself_and_the_games():
    outside = sorted(f"{name} -> {dep}" for name, deps in GRAPH.items() for dep in deps
                     if name.startswith("azjax.core")
                     and not (dep.startswith("azjax.core") or dep.split(".")[0] == "envs"))
    assert outside == []
    assert len([name for name in GRAPH if name.startswith("azjax.core.")]) >= 10


def test_no_module_of_a_subpackage_imports_its_own_package_init():
    """A subpackage's modules import each other by module, never through the `__init__`
    that imports them (which would be half-built at that moment)."""
    found = sorted(f"{name} -> {dep}" for name, deps in GRAPH.items() for dep in deps
                   if ALL_MODULES[name].name != "__init__.py" and dep == package_of(name))
    assert found == []


def test_no_import_circle_anywhere():
    """Depth-first search for a cycle over every import between modules of azjax and
    envs, type-checking imports included."""
    state: dict[str, int] = {}
    cycles = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(GRAPH[name]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [name, nxt] if nxt in trail
                              else [name, nxt])
            elif nxt not in state:
                visit(nxt, trail + [name])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [])
    assert cycles == []


def test_the_checks_see_real_imports():
    """The layering and cycle checks read the real import graph (so that an empty graph
    cannot pass them)."""
    assert "azjax.core.search" in GRAPH["azjax.core.selfplay"]
    assert "azjax.run.directory.checkpoint" in GRAPH["azjax.run.agents.agent"]
    assert "envs.core" in GRAPH["envs.go"]
    assert sum(len(deps) for deps in GRAPH.values()) > 200


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_imports_are_at_the_top_of_every_module(package):
    """No import hidden inside a function to dodge a cycle (optional extras excepted)."""
    hidden = []
    for name, path in modules(package).items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        module = inner.module if isinstance(inner, ast.ImportFrom) else (
                            inner.names[0].name)
                        if not (module or "").startswith(OPTIONAL_IMPORTS[package]):
                            hidden.append(f"{name}:{inner.lineno} {module}")
    assert hidden == []


def test_few_modules_at_the_top():
    top = sorted(path.stem for path in PACKAGES["azjax"].glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top
    assert set(ENTRY_POINTS) <= set(top), top


def entry_point_problems(path: Path, command: str) -> list[str]:
    """What makes the module at `path` more than the entry point of `python -m
    azjax.<command>`: anything but a docstring and one `if __name__ == "__main__":` that
    imports `run_script` and the command's `main` and runs `run_script(main)`, as the
    command's own module does."""
    tree = ast.parse(path.read_text())
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    if len(body) != 1 or not isinstance(body[0], ast.If) or body[0].orelse or (
            ast.unparse(body[0].test) != "__name__ == '__main__'"):
        return [f"{path.name}: more than a docstring and `if __name__ == '__main__':`"]
    ran = ast.unparse(ast.Module(body=body[0].body, type_ignores=[]))
    wanted = ("from azjax.commands.errors import run_script\n"
              f"from azjax.commands.{command} import main\nrun_script(main)")
    return [] if ran == wanted else [f"{path.name} runs {ran!r}, not {wanted!r}"]


def test_each_module_at_the_top_but_the_api_and_the_dispatcher_is_only_an_entry_point():
    """`python -m azjax.arena` (and the rest of ENTRY_POINTS) runs `azjax.commands.arena`'s
    `main` as `python -m azjax.commands.arena` does, and holds nothing to import: no
    library name is reached through the old module names."""
    problems = []
    for path in sorted(PACKAGES["azjax"].glob("*.py")):
        if path.stem in TOP_NOT_ENTRY_POINTS:
            continue
        assert f"azjax.commands.{path.stem}" in COMMAND_MODULES, f"{path.name}: no command"
        problems += entry_point_problems(path, path.stem)
        names = {name for name in vars(importlib.import_module(f"azjax.{path.stem}"))
                 if not name.startswith("__")}
        if names:
            problems.append(f"azjax.{path.stem} gives names to import: {sorted(names)}")
    assert problems == []


def test_an_entry_point_that_does_more_is_caught(tmp_path):
    """The check above fails on a module that also imports a library name, or runs
    anything else."""
    good = tmp_path / "good.py"
    good.write_text('"""Doc."""\n\nif __name__ == "__main__":\n'
                    "    from azjax.commands.errors import run_script\n"
                    "    from azjax.commands.play import main\n\n    run_script(main)\n")
    assert entry_point_problems(good, "play") == []
    assert entry_point_problems(good, "serve") != []
    door = tmp_path / "door.py"
    door.write_text("from azjax.commands.play import play_game  # noqa\n" + good.read_text())
    assert entry_point_problems(door, "play") != []
    more = tmp_path / "more.py"
    more.write_text(good.read_text().replace("run_script(main)", "run_script(main, [])"))
    assert entry_point_problems(more, "play") != []


def test_every_command_lives_in_azjax_commands_behind_one_word_of_azjax():
    """`azjax COMMAND` (`azjax/__main__.py`) reaches each command module's `main`; every
    one lives in `azjax.commands` (but `check`, the games' own `envs.check`), and each
    runs as `python -m azjax.commands.<module>` too."""
    assert {f"azjax.commands.{name}" for name in ENTRY_POINTS} | {
        "azjax.commands.train", "azjax.commands.sweep", "azjax.commands.info"} <= COMMAND_MODULES
    for module in COMMAND_MODULES:
        assert callable(importlib.import_module(module).main), module
        if module in OUTSIDE_COMMANDS:
            continue
        assert module.startswith("azjax.commands.") and module.count(".") == 2, module
        assert module not in COMMAND_HELPERS, module
        tree = ast.parse(ALL_MODULES[module].read_text())
        guards = [ast.unparse(n) for n in tree.body if isinstance(n, ast.If)
                  and "__main__" in ast.unparse(n.test)]
        assert guards == ["if __name__ == '__main__':\n    run_script(main)"], module
    # Each module of azjax.commands is a command or a helper of theirs.
    own = {name for name in ALL_MODULES if name.startswith("azjax.commands.")}
    assert own == (COMMAND_MODULES - OUTSIDE_COMMANDS) | COMMAND_HELPERS


def commands_importing_commands(graph: dict[str, set[str]]) -> list[str]:
    """`A -> B` for each module of `azjax.commands` (a command, a helper or the package)
    that imports a command B other than itself."""
    return sorted(f"{name} -> {dep}" for name, deps in graph.items()
                  if name.startswith("azjax.commands")
                  for dep in deps & COMMAND_MODULES - {name})


def test_no_command_imports_another_command():
    """What two commands share lives in a layer below them (`azjax.run.agents.agent_source`,
    say) or in the helpers, never in one of them: each command can change alone."""
    assert commands_importing_commands(GRAPH) == []
    # The check reads the real graph, and catches a command importing another.
    assert "azjax.commands.errors" in GRAPH["azjax.commands.play"]
    faulty = {**GRAPH, "azjax.commands.serve": GRAPH["azjax.commands.serve"]
              | {"azjax.commands.play"}}
    assert commands_importing_commands(faulty) == [
        "azjax.commands.serve -> azjax.commands.play"]


def test_envs_never_imports_azjax():
    """The games stand alone: no module of `envs` imports `azjax` (at any depth)."""
    found = {name: sorted(dep for dep in GRAPH[name] if dep.split(".")[0] == "azjax")
             for name in modules("envs")}
    assert {name: deps for name, deps in found.items() if deps} == {}
    assert len(found) >= 10


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_every_subpackage_says_what_it_holds_and_what_it_may_import(package):
    """The docstring of each subpackage names its modules and the layers it may import,
    and those are exactly its own modules and the layers below it."""
    doc = importlib.import_module(package).__doc__
    assert doc
    own = {name.rpartition(".")[2] for name in ALL_MODULES
           if name.startswith(package + ".") and name.count(".") == package.count(".") + 1}
    assert own and all(f"`{module}`" in doc for module in own), own
    may = doc.split("May import:", 1)[1]
    below = LAYERS[:LAYERS.index(package)]
    for layer in LAYERS:
        short = layer.removeprefix("azjax.")
        named = f"`{layer}`" in may or f"`{short}`" in may
        assert named == (layer in below) or layer == "azjax", (layer, may)


@pytest.mark.parametrize("package", ["azjax", "envs", *SUBPACKAGES])
def test_the_public_api_is_listed_and_documented(package):
    module = importlib.import_module(package)
    assert module.__doc__
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        obj = getattr(module, name)
        assert obj.__doc__ or isinstance(obj, (str, int)), f"{package}.{name}"


def test_importing_azjax_leaves_matplotlib_for_later():
    """`import azjax` (every command and script starts with it) does not import matplotlib:
    the driver imports it while a run's first step compiles, the league when it plots."""
    out = subprocess.run([sys.executable, "-c", "import sys, azjax, azjax.evaluation, "
                          "azjax.go, azjax.driver; print('matplotlib' in sys.modules)"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
