"""The code blocks of the documentation (README.md and docs/*.md), as the tests run them.

A fenced block in `python` or `bash` is code a user copies, and the tests run it (other
languages, `text` and `console` included, are shown output and are not run):

* a page's `python` blocks run in order as one script, in one fresh interpreter;
* each `bash` block runs as one `bash -e` script (`cd` holds within the block);
* both run in a scratch copy of the repository root that holds small trained runs
  (`runs/tictactoe`, `runs/connect_four`, `runs/go9x9`), agent files (`ttt.azjax`,
  `c4.azjax`) and a copy of `examples/`, so that "python experiments/tictactoe.py" and
  "Agent.load('runs/tictactoe')" work as written.

They run at a small size: every command line is shrunk by `shrink` (the experiment
scripts train two iterations of a tiny network, matches play two games, searches use
few simulations), and `python` blocks can call `smoke(config)`, which shrinks a
`TrainConfig` the same way. A block may be preceded by directives in HTML comments, which
neither GitHub nor MkDocs shows:

    <!-- docs-test: skip REASON -->             not run (the reason is required)
    <!-- docs-test: replace "OLD" "NEW" -->     run with OLD replaced by NEW
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from azjax import TrainConfig

FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(?P<text>.*?)\s*-->", re.S)
RUN_LANGUAGES = ("python", "bash")

# Small enough to train two iterations and evaluate once in seconds; every other setting is
# the recipe's own (tests/test_experiments.py trains the scripts with these too).
SMOKE = {
    "--network.channels": 8, "--network.num-blocks": 1, "--network.value-hidden": 8,
    "--search.num-simulations": 4, "--search.max-num-considered-actions": 4,
    # the trained agent plays (arena, league, GTP) with that search too, not go9x9's 128
    "--search.play-simulations": 0,
    "--selfplay.num-games": 8, "--selfplay.steps-per-iteration": 4,
    "--learner.batch-size": 16, "--replay-capacity": 256, "--gradient-steps": 1,
    "--learn-after": 0,  # go9x9 waits for 10,000 positions, more than this replay holds
    "--iterations": 2, "--eval-every": 2, "--eval-search-every": 1, "--eval-simulations": 4,
    "--eval-games": 2,  # against each opponent of the training-time evaluation
    "--checkpoint-every": 2, "--selfplay.cheap-simulations": 2,
    # cadences in iterations only (the Go recipes' are in minutes): the same records and
    # checkpoints however long a busy machine takes
    "--eval-every-minutes": 0, "--checkpoint-every-minutes": 0,
    "--warm-up-minutes": 0.01,  # go9x9's warm-up run (go7x7): one iteration
}
# Options of any command, shrunk wherever they appear.
SMALL_OPTIONS = {
    "--games": "2", "--eval-games": "2", "--gate-games": "2", "--seeds": "1",
    "--simulations": "4", "--gate-simulations": "4",
}
# Player specs, shrunk wherever they appear (gnugo is as fast as it is).
SMALL_SPECS = ((re.compile(r"\bmcts:\d+"), "mcts:8"), (re.compile(r"\balphabeta:\d+"),
                                                         "alphabeta:1"))
TRAINING_SCRIPTS = re.compile(r"(^|/)experiments/(?!sweep\.py)\w+\.py$")
SWEEP_SCRIPT = re.compile(r"(^|/)experiments/sweep\.py$")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    lang: str
    text: str
    skip: str | None = None
    replacements: tuple[tuple[str, str], ...] = ()

    @property
    def runs(self) -> bool:
        return self.lang in RUN_LANGUAGES and self.skip is None

    def code(self) -> str:
        """The block's text with its replacements made (ValueError for one that does not
        occur: a directive must not outlive the text it shrinks)."""
        text = self.text
        for old, new in self.replacements:
            if old not in text:
                raise ValueError(f"{self.page}:{self.line}: replace {old!r}: not in the block")
            text = text.replace(old, new)
        return text

    def where(self) -> str:
        return f"{self.page}:{self.line}"


def parse_directives(text: str, where: str) -> tuple[str | None, list[tuple[str, str]]]:
    """(skip reason or None, replacements) of the directives in `text`."""
    skip, replacements = None, []
    for match in DIRECTIVE.finditer(text):
        words = shlex.split(match["text"])
        if words[:1] == ["skip"]:
            if len(words) < 2:
                raise ValueError(f"{where}: docs-test: skip needs a reason")
            skip = " ".join(words[1:])
        elif words[:1] == ["replace"] and len(words) == 3:
            replacements.append((words[1], words[2]))
        else:
            raise ValueError(f"{where}: unknown docs-test directive {match['text']!r}")
    return skip, replacements


def blocks(path: Path, root: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with the directives just above each."""
    text = path.read_text()
    page = str(path.relative_to(root))
    out, end = [], 0
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[end:match.start()]
        # Directives count when only blank lines and comments separate them from the block.
        tail = re.search(r"((?:[ \t]*<!--.*?-->[ \t]*\n|[ \t]*\n)*)\Z", before, re.S)[1]
        skip, replacements = parse_directives(tail, f"{page}:{line}")
        body = "\n".join(part[len(match["indent"]):] for part in match["body"].split("\n"))
        out.append(Block(page, line, match["lang"], body, skip, tuple(replacements)))
        end = match.end()
    return out


OPERATORS = ("&&", "||", "|", ";", "&")


def _tokens(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def commands(script: str) -> list[list[str]]:
    """The command lines of a bash block as token lists (`&&`, `|`, `;` kept as tokens):
    continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [tokens for line in joined.splitlines() if (tokens := _tokens(line))]


def bash_line(tokens: list[str]) -> str:
    """A token list as a bash command line, operators unquoted."""
    return " ".join(t if t in OPERATORS else shlex.quote(t) for t in tokens)


def _set_option(words: list[str], flag: str, value: str, append: bool) -> list[str]:
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            words = [*words[:i + 1], value, *words[i + 2:]]
            return words
        if word.startswith(flag + "="):
            return [*words[:i], f"{flag}={value}", *words[i + 1:]]
    return [*words, flag, value] if append else words


def shrink(tokens: list[str]) -> list[str]:
    """A command line at the tests' small size: the training scripts get `SMOKE`, any
    command small match and search sizes, specs few simulations or a shallow depth."""
    out, segment = [], []
    for token in [*tokens, ";"]:
        if token in OPERATORS:
            out += [*_shrink_command(segment), token]
            segment = []
        else:
            segment.append(token)
    return out[:-1]


def _shrink_command(words: list[str]) -> list[str]:
    script = words[1] if words[:1] in (["python"], ["python3"]) and len(words) > 1 else ""
    if TRAINING_SCRIPTS.search(script):
        for flag, value in SMOKE.items():
            words = _set_option(words, flag, str(value), append=True)
    elif SWEEP_SCRIPT.search(script):
        for flag in ("--iterations", "--network.channels", "--network.num-blocks",
                     "--selfplay.num-games", "--gradient-steps", "--search.num-simulations",
                     "--learner.batch-size", "--replay-capacity"):
            words = _set_option(words, flag, str(SMOKE[flag]), append=True)
    for flag, value in SMALL_OPTIONS.items():
        words = _set_option(words, flag, value, append=False)
    for pattern, small in SMALL_SPECS:
        words = [pattern.sub(small, word) for word in words]
    return words


def smoke(config: TrainConfig) -> TrainConfig:
    """`config` at the size `SMOKE` gives the training scripts (all at once: settings
    checked together, such as learn_after and replay_capacity, are judged together)."""
    return config.with_values({flag.removeprefix("--").replace("-", "_"): value
                               for flag, value in SMOKE.items()})
