"""The notebooks as committed: where they install azjax from, where their Colab links
point, the Hex game they carry, and the outputs of a full run they show.

The project's repository has one home, `[project.urls] Repository` in pyproject.toml:
every notebook's install cell defaults to `git+` that URL at the tag of the release the
notebook was saved with (`@v` pyproject.toml's version), and every Colab link (in the
notebooks and in docs/) is built from it, so a fork changes one line. On a GPU runtime the
install cell installs azjax's `cuda` extra (JAX's CUDA build), not a CPU-only JAX. The
notebooks are committed with the outputs of a full (not smoke) run, which the documentation
site shows (mkdocs-jupyter, `execute: false`): every cell that shows something has its
output, none an error, in the order of a run from the top. tests/test_notebooks.py runs
them (at a smoke budget, outside the checkout).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
REPOSITORY = PROJECT["urls"]["Repository"]
VERSION = PROJECT["version"]
RELEASE = f"git+{REPOSITORY}@v{VERSION}"  # the install cells' default: the release's tag
COLAB = re.compile(r"https://colab\.research\.google\.com/github/[^\s)\]\"'>]+")
# Code cells that show nothing where azjax is installed: the install cell, the parameters.
SILENT = {"setup", "parameters"}


def _tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def _colab_link(notebook: str) -> str:
    slug = REPOSITORY.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{slug}/blob/main/notebooks/{notebook}"


def test_the_repository_is_a_github_url():
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", REPOSITORY), REPOSITORY


def test_there_are_the_four_notebooks():
    assert [p.stem for p in NOTEBOOKS] == ["connect_four", "go", "tictactoe", "your_own_game"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_install_cell_installs_the_release_from_the_repository_only_where_azjax_is_missing(
        path):
    setup = _setup(path)
    # The tag is pyproject.toml's version: bumping the version means saving the notebooks
    # with it (and tagging the release v<version>).
    assert f'AZJAX_VERSION = "{VERSION}"' in setup.source
    assert ('AZJAX_SOURCE = os.environ.get("AZJAX_SOURCE",\n'
            f'                              f"git+{REPOSITORY}@v{{AZJAX_VERSION}}")'
            in setup.source)
    assert 'if importlib.util.find_spec("azjax") is None:\n    %pip install' in setup.source
    assert '"{AZJAX_REQUIREMENT}"' in setup.source
    assert ("apt-get install" in setup.source) == (path.stem == "go")  # GNU Go, in Colab


def _setup(path: Path):
    nb = nbformat.read(path, as_version=4)
    setup = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert "setup" in _tags(setup)
    return setup


_FIND_SPEC, _EXISTS = importlib.util.find_spec, os.path.exists  # as the runtime has them


def _run_setup(path: Path, monkeypatch, *, gpu: bool, source: str | None = None,
               installed: bool = False) -> list[tuple[str, str]]:
    """Runs the install cell as IPython would (its `%pip` and `!` lines turned into
    calls), on a runtime with or without an NVIDIA GPU, AZJAX_SOURCE `source` (None:
    unset) and azjax installed or not: the magics it called, with their lines expanded,
    and nothing installed."""
    from IPython.core.inputtransformer2 import TransformerManager

    calls: list[tuple[str, str]] = []
    namespace: dict = {}

    class Shell:
        def run_line_magic(self, name, line, _stack_depth=1):
            calls.append((name, line.format(**namespace)))

        def system(self, command):
            calls.append(("!", command))

    namespace["get_ipython"] = Shell
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: (
        _FIND_SPEC(name, *args) if name != "azjax" or installed else None))
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: (
        f"/usr/bin/{name}" if gpu and name == "nvidia-smi" else None))
    monkeypatch.setattr(os.path, "exists", lambda p: (
        gpu if str(p).startswith("/dev/nvidia") else _EXISTS(p)))
    if source is None:
        monkeypatch.delenv("AZJAX_SOURCE", raising=False)
    else:
        monkeypatch.setenv("AZJAX_SOURCE", source)
    python = TransformerManager().transform_cell(_setup(path).source)
    exec(compile(python, f"{path.name}:setup", "exec"), namespace)
    return calls


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_install_cell_installs_the_cuda_extra_on_a_gpu_runtime(path, monkeypatch, tmp_path):
    """By default the release tagged with pyproject.toml's version; on a GPU runtime
    (nvidia-smi, or /dev/nvidia0) with the `cuda` extra, whatever the source, so that pip
    keeps or installs JAX's CUDA build rather than put a CPU-only JAX in its place."""
    assert any(r.startswith("jax[cuda") for r in PROJECT["optional-dependencies"]["cuda"])

    def pip(requirement: str) -> list[tuple[str, str]]:
        return [("pip", f'install --quiet "{requirement}"')]

    assert _run_setup(path, monkeypatch, gpu=False) == pip(RELEASE)
    assert _run_setup(path, monkeypatch, gpu=True) == pip(f"azjax[cuda] @ {RELEASE}")
    wheel = tmp_path / f"azjax-{VERSION}-py3-none-any.whl"
    wheel.touch()
    assert _run_setup(path, monkeypatch, gpu=False, source=str(wheel)) == pip(str(wheel))
    assert _run_setup(path, monkeypatch, gpu=True, source=str(wheel)) == pip(
        f"azjax[cuda] @ {wheel.as_uri()}")
    assert _run_setup(path, monkeypatch, gpu=True, source=f"azjax=={VERSION}") == pip(
        f"azjax[cuda]=={VERSION}")
    assert _run_setup(path, monkeypatch, gpu=True, installed=True) == []  # nothing to do


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_colab_badge_is_built_from_the_repository(path):
    nb = nbformat.read(path, as_version=4)
    links = [link for cell in nb.cells if cell.cell_type == "markdown"
             for link in COLAB.findall(cell.source)]
    assert links == [_colab_link(path.name)]
    assert "colab-badge.svg" in nb.cells[0].source


def test_colab_links_in_the_docs_are_built_from_the_repository():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    links = {link for page in pages for link in COLAB.findall(page.read_text())}
    assert links, "docs/getting-started.md links the notebooks to Colab"
    assert links <= {_colab_link(p.name) for p in NOTEBOOKS}


def test_the_hex_notebook_writes_the_example_game():
    """One game, checked in two places: the notebook's game cell writes
    examples/hex_game.py into its working directory, and nothing else defines it."""
    nb = nbformat.read(ROOT / "notebooks" / "your_own_game.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if "game-source" in _tags(c)]
    game = (ROOT / "examples" / "hex_game.py").read_text()
    assert cell.source == "%%writefile hex_game.py\n" + game.rstrip("\n")
    assert sum("class Hex(" in c.source for c in nb.cells) == 1
    assert not any("examples/hex_game.py" in c.source and "sys.path" in c.source
                   for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_with_the_outputs_of_a_full_run(path):
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    for cell in code:
        tags = _tags(cell)
        assert not {"injected-parameters", "interpreter"} & set(tags), "a test's cell"
        assert "execution" not in cell.metadata, "timings are not committed"
        if SILENT & set(tags):
            assert not cell.outputs, tags
        else:
            assert cell.outputs, f"cell {tags} shows nothing"
        for out in cell.outputs:
            assert out.output_type != "error", (tags, out.get("ename"), out.get("evalue"))
            if out.output_type == "stream" and out.name == "stderr":
                assert "Traceback" not in out.text, (tags, out.text)
    # a full run, not a smoke run: SMOKE's 4 iterations are not what it shows
    train = next(cell for cell in code if "train" in _tags(cell))
    last = re.search(r"(\d+) metrics records; last: iteration (\d+)",
                     "".join(out.get("text", "") for out in train.outputs))
    assert last and int(last[2]) > 4, "the saved run is a smoke run"
