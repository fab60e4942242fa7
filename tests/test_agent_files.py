"""One-file agents (`python -m azjax.export`) wherever a run directory is taken: the
arena's `alphazero:FILE` specs, the league's `--run-dir FILE` and `alphazero:FILE`
baselines, `python -m azjax.gtp --run-dir FILE` and `python -m azjax.play --run-dir FILE`,
each playing the same (greedy) moves as the run directory it was exported from."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_gtp import untrained
from test_training import ROOT, SMALL

from azjax import Agent, train
from azjax.arena import main as arena_main
from azjax.gtp import main as gtp_main
from azjax.league import main as league_main


@pytest.fixture(scope="module")
def run_and_file(tmp_path_factory):
    """A one-iteration tic-tac-toe run and its newest checkpoint exported to a file."""
    root = tmp_path_factory.mktemp("agent_files")
    run_dir = root / "run"
    train(SMALL.replace(iterations=1, checkpoint_every=1, eval_every=0), run_dir,
          progress=None)
    path = Agent.load(run_dir).export(root / "ttt.azjax")
    return run_dir, path


def arena_json(tmp_path, name: str, *argv: str) -> dict:
    out = tmp_path / f"{name}.json"
    assert arena_main([*argv, "--games", "6", "--openings", "2", "--seed", "3",
                       "--json", str(out)]) == 0
    return json.loads(out.read_text())


def results(data: dict) -> list:
    return [data["as_player0"], data["as_player1"], data["wins"], data["draws"]]


def test_arena_takes_an_agent_file_with_spec_options(run_and_file, tmp_path, capsys):
    run_dir, path = run_and_file
    for options in ("", ",sims=3"):
        from_run = arena_json(tmp_path, "run", f"alphazero:{run_dir}{options}", "mcts:8")
        from_file = arena_json(tmp_path, "file", f"alphazero:{path}{options}", "mcts:8")
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
    common = ["--baselines", "mcts:8", "--anchor", "mcts:8", "--games", "6", "--seed", "1"]
    assert league_main(["--run-dir", str(run_dir), "--steps", "1", *common]) == 0
    out = tmp_path / "league"
    assert league_main(["--run-dir", str(path), "--out", str(out), *common]) == 0
    stdout = capsys.readouterr().out
    assert f"wrote {out / 'league.json'}" in stdout
    from_run = json.loads((run_dir / "league.json").read_text())
    from_file = json.loads((out / "league.json").read_text())
    assert [e["name"] for e in from_file["players"]] == ["ttt", "mcts:8"]
    assert [e["name"] for e in from_run["players"]] == ["it1", "mcts:8"]
    assert same_match(from_file, from_run)
    # an agent file as a baseline of a run's league
    assert league_main(["--run-dir", str(run_dir), "--steps", "1", "--games", "2",
                        "--baselines", f"random,alphazero:{path}"]) == 0
    assert f"alphazero:{path}" in capsys.readouterr().out
    assert league_main(["--run-dir", str(path), "--steps", "1"]) == 2
    assert "no steps" in capsys.readouterr().err


def same_match(a: dict, b: dict) -> bool:
    """The first match of two league.json files, apart from the players' names."""
    first = [{k: v for k, v in data["matches"][0].items() if k not in ("a", "b")}
             for data in (a, b)]
    return first[0] == first[1]


def test_play_takes_an_agent_file_as_its_run_dir(run_and_file):
    run_dir, path = run_and_file
    stdin = "".join(f"{k}\n" for k in range(1, 10)) + "n\n"
    outs = []
    for source in (["--run-dir", str(run_dir)], ["--run-dir", str(path)],
                   ["--agent", str(path)]):
        done = subprocess.run(
            [sys.executable, "-m", "azjax.play", "tictactoe", *source, "--side", "second"],
            input=stdin, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    assert "Score: " in outs[0]
    assert outs[1] == outs[0] and outs[2] == outs[0]


def test_gtp_takes_an_agent_file_as_its_run_dir(tmp_path, capsys):
    path = untrained("go", size=5, komi=0.5, history=2).export(tmp_path / "go5.azjax")
    script = "boardsize 5\nplay b C3\ngenmove w\ngenmove b\nquit\n"
    replies = []
    for flag in ("--run-dir", "--agent"):
        done = subprocess.run([sys.executable, "-m", "azjax.gtp", flag, str(path)],
                              input=script, capture_output=True, text=True, cwd=ROOT,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        replies.append(done.stdout)
    lines = [line for line in replies[0].split("\n") if line]
    assert replies[0] == replies[1]
    assert len(lines) == 5 and all(line.startswith("=") for line in lines), lines
    assert lines[2] != "=" and lines[3] != "="  # the two genmove replies name a move
    assert gtp_main(["--run-dir", str(path), "--step", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "no steps" in err
