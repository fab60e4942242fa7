"""The notebooks as committed: where they install azjax from, where their Colab links
point, the Hex game they carry, and the outputs of a full run they show.

The project's repository has one home, `[project.urls] Repository` in pyproject.toml:
every notebook's install cell defaults to `git+` that URL, and every Colab link (in the
notebooks and in docs/) is built from it, so a fork changes one line. The notebooks are
committed with the outputs of a full (not smoke) run, which the documentation site shows
(mkdocs-jupyter, `execute: false`): every cell that shows something has its output, none
an error, in the order of a run from the top. tests/test_notebooks.py runs them (at a
smoke budget, outside the checkout).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"][
    "Repository"]
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
def test_install_cell_installs_from_the_repository_only_where_azjax_is_missing(path):
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    setup = code[0]
    assert "setup" in _tags(setup)
    assert (f'AZJAX_SOURCE = os.environ.get("AZJAX_SOURCE", "git+{REPOSITORY}")'
            in setup.source)
    assert 'if importlib.util.find_spec("azjax") is None:\n    %pip install' in setup.source
    assert '"{AZJAX_SOURCE}"' in setup.source
    assert ("apt-get install" in setup.source) == (path.stem == "go")  # GNU Go, in Colab


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
