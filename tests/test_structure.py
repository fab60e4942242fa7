"""The packages' shape (azjax and envs): no import cycles, no imports hidden in functions,
small modules, games that never import the framework, a public API that imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import azjax
import envs

PACKAGES = {
    "azjax": Path(azjax.__file__).resolve().parent,
    "envs": Path(envs.__file__).resolve().parent,
}
MAX_LINES = 500
# Imported only where used (inside a function), by module name prefix, per package:
# optional extras, so that the package works without them, and matplotlib, imported while
# a run's first step compiles rather than at start-up (`azjax.plots.preload`).
OPTIONAL_IMPORTS = {
    "azjax": ("tensorboardX", "matplotlib"),
    "envs": ("envs.pgx_adapter", "pgx"),
}


def modules(package: str = "azjax") -> dict[str, Path]:
    root = PACKAGES[package]
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node of the tree except those under `if TYPE_CHECKING:` (imports for type
    annotations only, which never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                todo.extend(child.orelse)
            else:
                todo.append(child)


def all_imports(path: Path) -> set[str]:
    """Every module name `path` imports (and `module.name` for `from module import name`),
    at any depth of the file, except under `if TYPE_CHECKING:`."""
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def imports(path: Path, names: set[str]) -> set[str]:
    """The package's modules `path` imports, at any depth of the file."""
    return {name for name in all_imports(path) if name in names}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_module_imports_one_that_imports_it_back(package):
    mods = modules(package)
    graph = {name: imports(path, set(mods)) - {name} for name, path in mods.items()}
    # Depth-first search for a cycle; the package itself only re-exports.
    del graph[package]
    state: dict[str, int] = {}
    cycles = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(graph.get(name, ())):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [name, nxt] if nxt in trail
                              else [name, nxt])
            elif nxt not in state:
                visit(nxt, trail + [name])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert cycles == []


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


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_module_is_over_500_lines(package):
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules(package).items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_envs_never_imports_azjax():
    """The games stand alone: no module of `envs` imports `azjax` (at any depth)."""
    found = {
        name: sorted(m for m in all_imports(path) if m == "azjax" or m.startswith("azjax."))
        for name, path in modules("envs").items()
    }
    assert {name: ms for name, ms in found.items() if ms} == {}
    assert len(found) >= 10  # the scan saw the package's modules


def test_the_public_api_is_listed_and_documented():
    for name in azjax.__all__:
        obj = getattr(azjax, name)
        assert obj.__doc__, name
    assert len(set(azjax.__all__)) == len(azjax.__all__)
