"""The package's shape: no import cycles, small modules, a public API that imports."""

from __future__ import annotations

import ast
from pathlib import Path

import azjax

PACKAGE = Path(azjax.__file__).resolve().parent
MAX_LINES = 500


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(path: Path, names: set[str]) -> set[str]:
    """The azjax modules `path` imports, at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name in names}


def test_no_module_imports_one_that_imports_it_back():
    graph = {name: imports(path, set(modules())) - {name} for name, path in modules().items()}
    # Depth-first search for a cycle; the package itself only re-exports.
    del graph["azjax"]
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


def test_imports_are_at_the_top_of_every_module():
    """No import hidden inside a function to dodge a cycle (optional extras excepted)."""
    hidden = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        module = inner.module if isinstance(inner, ast.ImportFrom) else (
                            inner.names[0].name)
                        if not module.startswith("tensorboardX"):
                            hidden.append(f"{name}:{inner.lineno} {module}")
    assert hidden == []


def test_no_module_is_over_500_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_public_api_is_listed_and_documented():
    for name in azjax.__all__:
        obj = getattr(azjax, name)
        assert obj.__doc__, name
    assert len(set(azjax.__all__)) == len(azjax.__all__)
