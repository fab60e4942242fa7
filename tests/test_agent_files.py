"""One-file agents (`python -m azjax.export`) wherever a run directory is taken: the
arena's `alphazero:FILE` specs, the league's `--run-dir FILE` and `alphazero:FILE`
baselines, `python -m azjax.gtp --run-dir FILE` and `python -m azjax.play --run-dir FILE`,
each playing the same (greedy) moves as the run directory it was exported from. All in
this process: the commands' own processes (their stdin and stdout) are tested in
tests/test_gtp.py, tests/test_play.py and tests/test_league.py."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest
from test_gtp import untrained

from azjax import Agent
from azjax.commands.arena import main as arena_main
from azjax.commands.gtp import main as gtp_main
from azjax.commands.league import main as league_main
from azjax.commands.play import main as play_main


@pytest.fixture(scope="module")
def run_and_file(tiny_run, tmp_path_factory):
    """A copy of the tiny tic-tac-toe run (checkpoints 1 and 2; the league writes its
    tables into it) and its newest checkpoint exported to a file."""
    root = tmp_path_factory.mktemp("agent_files")
    run_dir = Path(shutil.copytree(tiny_run, root / "run"))
    path = Agent.load(run_dir).export(root / "ttt.azjax")
    return run_dir, path


# The agents' opponent: what is compared is the agents' own (seeded, greedy) play, and a
# random player adds no search to compile.
OPPONENT = "random"


def arena_json(tmp_path, name: str, *argv: str) -> dict:
    out = tmp_path / f"{name}.json"
    assert arena_main([*argv, "--games", "6", "--openings", "2", "--seed", "3",
                       "--json", str(out)]) == 0
    return json.loads(out.read_text())


def results(data: dict) -> list:
    return [data["as_player0"], data["as_player1"], data["wins"], data["draws"]]


@pytest.mark.slow  # an arena of its own (~10 s); the file loads in the default run
def test_arena_takes_an_agent_file_with_spec_options(run_and_file, tmp_path, capsys):
    run_dir, path = run_and_file
    for options in ("", ",sims=3"):
        from_run = arena_json(tmp_path, "run", f"alphazero:{run_dir}{options}", OPPONENT)
        from_file = arena_json(tmp_path, "file", f"alphazero:{path}{options}", OPPONENT)
        assert results(from_file) == results(from_run)
        assert from_file["game"] == "tictactoe"
    # sampled moves and the network alone are accepted too
    assert arena_main([f"alphazero:{path},greedy=false", f"network:{path}", "--games",
                       "2"]) == 0
    capsys.readouterr()


def test_arena_errors_about_agent_files_are_one_line(run_and_file, tmp_path, capsys):
    _, path = run_and_file
    not_agent = tmp_path / "notes.azjax"
    not_agent.write_text("hello")
    for spec, message in ((f"alphazero:{tmp_path / 'missing.azjax'}", "does not exist"),
                          (f"alphazero:{not_agent}", "is not an azjax agent file"),
                          (f"alphazero:{path},step=1", "it has no steps")):
        assert arena_main([spec, "random", "--games", "2"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert arena_main([f"alphazero:{path}", "random", "--game", "connect_four"]) == 2
    assert "trained on 'tictactoe'" in capsys.readouterr().err


def test_league_of_an_agent_file_matches_its_run(run_and_file, tmp_path, capsys):
    run_dir, path = run_and_file
    common = ["--baselines", OPPONENT, "--anchor", OPPONENT, "--games", "6", "--seed", "1"]
    assert league_main(["--run-dir", str(run_dir), "--steps", "2", *common]) == 0
    out = tmp_path / "league"
    assert league_main(["--run-dir", str(path), "--out", str(out), *common]) == 0
    stdout = capsys.readouterr().out
    assert f"wrote {out / 'league.json'}" in stdout
    from_run = json.loads((run_dir / "league.json").read_text())
    from_file = json.loads((out / "league.json").read_text())
    assert [e["name"] for e in from_file["players"]] == ["ttt", OPPONENT]
    assert [e["name"] for e in from_run["players"]] == ["it2", OPPONENT]
    assert same_match(from_file, from_run)
    # an agent file as a baseline of a run's league (one pair: the file, its anchor)
    assert league_main(["--run-dir", str(run_dir), "--steps", "2", "--games", "2",
                        "--baselines", f"alphazero:{path}", "--anchor",
                        f"alphazero:{path}"]) == 0
    assert f"alphazero:{path}" in capsys.readouterr().out
    assert league_main(["--run-dir", str(path), "--steps", "1"]) == 2
    assert "no steps" in capsys.readouterr().err


def same_match(a: dict, b: dict) -> bool:
    """The first match of two league.json files, apart from the players' names."""
    first = [{k: v for k, v in data["matches"][0].items() if k not in ("a", "b")}
             for data in (a, b)]
    return first[0] == first[1]


def with_stdin(monkeypatch, text: str) -> None:
    """The commands' stdin: `text` (bytes underneath, as GTP reads them)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_play_takes_an_agent_file_as_its_run_dir(run_and_file, monkeypatch, capsys):
    run_dir, path = run_and_file
    stdin = "".join(f"{k}\n" for k in range(1, 10)) + "n\n"
    outs = []
    for source in (["--run-dir", str(run_dir)], ["--run-dir", str(path)],
                   ["--agent", str(path)]):
        with_stdin(monkeypatch, stdin)
        capsys.readouterr()
        assert play_main(["tictactoe", *source, "--side", "second"]) == 0
        outs.append(capsys.readouterr().out)
    assert "Score: " in outs[0]
    assert outs[1] == outs[0] and outs[2] == outs[0]


def test_gtp_takes_an_agent_file_as_its_run_dir(tmp_path, monkeypatch, capsys):
    path = untrained("go", size=5, komi=0.5, history=2).export(tmp_path / "go5.azjax")
    script = "boardsize 5\nplay b C3\ngenmove w\ngenmove b\nquit\n"
    replies = []
    for flag in ("--run-dir", "--agent"):
        with_stdin(monkeypatch, script)
        capsys.readouterr()
        assert gtp_main([flag, str(path)]) == 0
        replies.append(capsys.readouterr().out)
    lines = [line for line in replies[0].split("\n") if line]
    assert replies[0] == replies[1]
    assert len(lines) == 5 and all(line.startswith("=") for line in lines), lines
    assert lines[2] != "=" and lines[3] != "="  # the two genmove replies name a move
    assert gtp_main(["--run-dir", str(path), "--step", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "no steps" in err
