"""The documentation: the site builds with `mkdocs build --strict` (no broken link, no
missing reference), the API reference covers every public module, the README stays
short, and the code blocks users copy run (`tests/docs_blocks.py` says how).

The page runs train small runs and play small matches: slow (`pytest -m slow`, CI's
second step). The build, the coverage and the parsing of every block are in the default
suite."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_readme_headline
from docs_blocks import SMOKE, Block, bash_line, blocks, commands, shrink
from test_readme_headline import COMMAND as HEADLINE

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in [ROOT / "README.md", *DOCS.rglob("*.md")])
MAX_README_LINES = 250
COMMANDS = ("arena", "export", "gtp", "gtp_referee", "league", "play", "serve")
# What the scratch directory holds before a page runs: run directories trained by the
# scripts at the smoke size, and agent files exported from them. The pages' Go commands
# need a go9x9 run, not its warm-up (tests/test_experiments.py trains that).
RUNS = {
    "tictactoe": ["experiments/tictactoe.py"],
    "connect_four": ["experiments/connect_four.py"],
    "go9x9": ["experiments/go9x9.py", "--eval-opponents", "random", "--warm-up", ""],
}
AGENT_FILES = {"ttt.azjax": "tictactoe", "c4.azjax": "connect_four"}


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page, ROOT)]


def test_the_site_builds_strictly(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=600)
    assert out.returncode == 0, out.stderr[-5000:]
    index = (tmp_path / "site" / "index.html").read_text()
    assert "azjax" in index
    # the API reference was rendered from the docstrings, not left as directives
    api = (tmp_path / "site" / "api" / "core" / "index.html").read_text()
    assert "make_search_fn" in api and ":::" not in api


def public_modules() -> set[str]:
    found = set()
    for package in ("azjax", "envs"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if any(part.startswith("_") and part != "__init__" for part in parts):
                continue
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_public_module_is_in_the_api_reference():
    """Every module of azjax and envs is private (a leading underscore) or documented: the
    API reference renders it (`::: module`)."""
    referenced = {m["module"] for page in (DOCS / "api").glob("*.md")
                  for m in re.finditer(r"^::: (?P<module>[\w.]+)", page.read_text(), re.M)}
    assert public_modules() - referenced == set()
    assert referenced - public_modules() == set()
    assert len(referenced) > 60


def test_the_readme_is_short_and_links_into_the_site():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= MAX_README_LINES
    linked = set(re.findall(r"\]\((docs/[\w/-]+\.md)(?:#[\w-]+)?\)", readme))
    assert len(linked) >= 8, linked
    for page in linked:
        assert (ROOT / page).is_file(), page


def _contains(tokens: list[str], part: list[str]) -> bool:
    """Whether `part` is a run of consecutive tokens of `tokens`."""
    return any(tokens[i:i + len(part)] == part for i in range(len(tokens) - len(part) + 1))


def _without_assignments(tokens: list[str]) -> list[str]:
    """A command line without the `NAME=value` assignments before its command."""
    while tokens and re.fullmatch(r"[A-Za-z_]\w*=.*", tokens[0]):
        tokens = tokens[1:]
    return tokens


def test_the_two_commands_are_the_readme_s_and_ci_runs_them():
    """The README's two commands, word for word: the first installs the package and
    trains tic-tac-toe, the command tests/test_readme_headline.py runs (CI's slow step,
    after CI's own install of the package); the second is the test command, in .ci/run."""
    (block,) = [block for block in blocks(ROOT / "README.md", ROOT)
                if block.lang == "bash" and "pytest" in block.text]
    first, second = commands(block.code())
    ci = [_without_assignments(tokens) for tokens in commands((ROOT / ".ci" / "run").read_text())]

    install, run = first[:first.index("&&")], first[first.index("&&") + 1:]
    assert install == ["pip", "install", "-e", "."]
    assert run == list(HEADLINE), (run, HEADLINE)
    headline = test_readme_headline.test_default_tictactoe_command_reaches_perfect_play
    assert "slow" in {mark.name for mark in headline.pytestmark}
    assert any(tokens[:3] == ["pytest", "-m", "slow"] for tokens in ci)

    assert second[-1] == "pytest" and 'pip install -e ".[test]"' in block.text
    assert any(_contains(tokens, second) for tokens in ci), second


def test_every_block_parses_and_names_what_exists():
    """Every directive is well formed and applies; every command a block runs names a
    script, module or command that exists."""
    found = all_blocks()
    assert sum(block.runs for block in found) >= 30
    for block in found:
        code = block.code()  # raises for a replacement that no longer applies
        if not block.runs or block.lang != "bash":
            continue
        for tokens in commands(code):
            for i, word in enumerate(tokens):
                if word in ("python", "python3") and i + 1 < len(tokens):
                    nxt = tokens[i + 1]
                    if nxt == "-m":
                        module = tokens[i + 2]
                        assert module.split(".")[0] in ("azjax", "envs", "mkdocs", "pytest"), (
                            block.where(), module)
                        if module.startswith("azjax."):
                            assert module.removeprefix("azjax.") in COMMANDS, (block.where(),
                                                                               module)
                    elif nxt.endswith(".py"):
                        assert nxt.startswith(("experiments/", "benchmarks/", "../")), (
                            block.where(), nxt)
                        assert (ROOT / nxt.replace("../", "")).is_file(), (block.where(), nxt)
        assert "pip install" not in code, f"{block.where()}: an install in a block that runs"


def test_shrink_makes_commands_small():
    (tokens,) = commands("python experiments/connect_four.py --iterations 500 --games 100 "
                         "--eval-opponents mcts:1000 alphabeta:4 gnugo:1  # a comment")
    small = shrink(tokens)
    assert small[small.index("--iterations") + 1] == str(SMOKE["--iterations"])
    assert small.count("--iterations") == 1
    assert small[small.index("--games") + 1] == "2"
    assert "mcts:8" in small and "alphabeta:1" in small and "gnugo:1" in small
    assert "#" not in bash_line(small) and "comment" not in small
    (tokens,) = commands('cd examples && python -m azjax.arena a b --games 9 | tail -1')
    assert bash_line(shrink(tokens)) == (
        "cd examples && python -m azjax.arena a b --games 2 | tail -1")


@pytest.fixture(scope="session")
def scratch_root(tmp_path_factory) -> Path:
    """A scratch copy of the repository root with small trained runs and agent files."""
    root = tmp_path_factory.mktemp("docs-root")
    for name in ("experiments", "benchmarks", "notebooks", "docs"):
        (root / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "examples", root / "examples",
                    ignore=shutil.ignore_patterns("runs", "__pycache__"))
    for name, command in RUNS.items():
        tokens = ["python", *command, "--run-dir", f"runs/{name}"]
        _run(bash_line(shrink(tokens)), root, f"training runs/{name}")
    for file, run in AGENT_FILES.items():
        _run(f"python -m azjax.export runs/{run} {file}", root, f"exporting {file}")
    return root


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent),
                                           os.environ.get("PYTHONPATH", "")]),
            "MPLBACKEND": "Agg"}


def _run(script: str, cwd: Path, what: str, timeout: float = 900) -> None:
    out = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd,
                         env=_env(), capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, f"{what}:\n{script}\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"


def _page_ids() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in PAGES
            if any(block.runs for block in blocks(p, ROOT))]


@pytest.mark.slow
@pytest.mark.parametrize("page", _page_ids())
def test_the_code_blocks_of_a_page_run(page, scratch_root, tmp_path):
    work = tmp_path / "root"
    shutil.copytree(scratch_root, work, symlinks=True)
    found = [block for block in blocks(ROOT / page, ROOT) if block.runs]
    python = [block for block in found if block.lang == "python"]
    if python:
        script = "from docs_blocks import smoke  # noqa: F401\n" + "\n".join(
            f"# {block.where()}\n{block.code()}" for block in python)
        (work / "page_blocks.py").write_text(script)
        _run("python page_blocks.py", work, f"the python blocks of {page}")
    for block in found:
        if block.lang == "bash":
            script = "\n".join(bash_line(shrink(tokens)) for tokens in commands(block.code()))
            _run(script, work, block.where())
