"""Every command line turns OS and library errors into one `error: ...` line and exit 2,
checks its outputs before the work, and loses no computed result to a failed write
(`azjax.commands.errors`; play, arena, league, export, experiments/sweep.py).

Tests run as root, which no permission bit stops, so unwritable places are ones that fail
for root too (a path under a file, a directory where a file should go, a missing
directory), a read-only file system is simulated by refusing file creation with EROFS,
and a full disk by pointing the write at /dev/full (ENOSPC from the kernel) or by a
subprocess with RLIMIT_FSIZE (EFBIG)."""

from __future__ import annotations

import errno
import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_in_process import experiment

import envs.limits
from azjax import Agent
from azjax.commands import arena, export, league, play
from azjax.commands import errors as cli
from azjax.core import memory
from azjax.evaluation import league as league_lib
from azjax.run import files
from azjax.run.config import COMMAND_SEED_MAX, RUN_SEED_MAX, check_seed

ROOT = Path(__file__).resolve().parents[1]
PYTHON_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def run_dir(tiny_run) -> Path:
    """A tic-tac-toe run (the tiny one of the session: checkpoints it1 and it2), to read."""
    return tiny_run


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "file.txt"
    path.write_text("not a directory\n")
    return path


def one_error(err: str, *words: str) -> str:
    """The one `error:` line of `err` (no traceback), checked to contain `words`."""
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    assert all(word in errors[0] for word in words), err
    return errors[0]


def only_error(err: str, *words: str) -> str:
    """As `one_error`, for a failure before any work: stderr is that one line alone."""
    line = one_error(err, *words)
    assert err == line + "\n", err
    return line


def leftovers(directory: Path) -> list[str]:
    """Temporary files a write may have left behind."""
    return sorted(p.name for p in Path(directory).rglob("*")
                  if p.name.endswith((".partial", ".tmp")) or "write-check" in p.name)


def calls(monkeypatch, owner, name: str) -> list:
    """Replaces `owner.name` by a recorder that fails the test if the work is reached."""
    seen = []

    def record(*args, **kwargs):
        seen.append(args)
        raise AssertionError(f"{name} was called: the work started before the check")

    monkeypatch.setattr(owner, name, record)
    return seen


def read_only(monkeypatch, directory: Path) -> None:
    """Makes creating files under `directory` fail as on a read-only file system."""
    original = files.open_new

    def refuse(path):
        if Path(directory) in Path(path).parents:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return original(path)

    monkeypatch.setattr(files, "open_new", refuse)


def full_disk(monkeypatch, directory: Path) -> None:
    """Makes writes of new files under `directory` fail with ENOSPC: the file is created
    (as on a real disk), but its descriptor writes to /dev/full."""
    original = files.open_new

    def to_full_disk(path):
        fd = original(path)
        if Path(directory) in Path(path).parents:
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, fd)
            os.close(full)
        return fd

    monkeypatch.setattr(files, "open_new", to_full_disk)


def small_memory(monkeypatch, size: int = 8 * 10**9) -> None:
    """Pretends the machine has `size` bytes, so the memory checks do not depend on it."""
    for module in (envs.limits, memory):  # wherever `check_fits` looks it up
        monkeypatch.setattr(module, "available_bytes", lambda: size)


LIMITED = """import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]),) * 2)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def file_size_limited(limit: int, *args: str) -> list[str]:
    """The command line of Python running `args` with writes beyond `limit` bytes failing
    with EFBIG (the limit is set in a launcher that then execs: no fork of this process
    with JAX's threads running)."""
    return [sys.executable, "-c", LIMITED, str(limit), *args]


# ------------------------------------------------------------- azjax.commands.errors


def test_one_line_errors_turns_user_errors_into_one_line_and_exit_2(capsys):
    def failing(err):
        @cli.one_line_errors
        def main() -> int:
            print("a result")
            raise err

        return main

    cases = [
        (ValueError("bad value\n  on two lines"), "error: bad value on two lines"),
        (PermissionError(errno.EACCES, "Permission denied", "/x/out.json"),
         "error: /x/out.json: Permission denied"),
        (OSError(errno.ENOSPC, "No space left on device"), "error: No space left on device"),
        (OverflowError("Python int too large to convert to C long"),
         "error: Python int too large to convert to C long"),
        (MemoryError("Unable to allocate 7.45 EiB"), "error: out of memory: Unable to"),
    ]
    for err, message in cases:
        assert failing(err)() == 2
        captured = capsys.readouterr()
        assert captured.out == "a result\n"  # what was printed before the error stays
        assert only_error(captured.err).startswith(message)
    for passes in (KeyboardInterrupt(), TypeError("a bug"), RuntimeError("a bug")):
        with pytest.raises(type(passes)):
            failing(passes)()


def test_run_script_exits_with_mains_code_after_freezing_the_imports():
    """The objects made before `main` are frozen out of the garbage collector's reach
    while it runs, and the exit status is main's (an exception still propagates)."""
    seen = []
    gc.unfreeze()
    before = gc.get_freeze_count()

    def main(value: int, *, plus: int) -> int:
        seen.append(gc.get_freeze_count())
        return value + plus

    def interrupted() -> int:
        raise KeyboardInterrupt

    try:
        with pytest.raises(SystemExit) as ended:
            cli.run_script(main, 1, plus=2)
        assert ended.value.code == 3 and before == 0 and seen[0] > 1000
        with pytest.raises(KeyboardInterrupt):
            cli.run_script(interrupted)
    finally:
        gc.unfreeze()


def test_check_output_path_refuses_what_cannot_be_written(tmp_path, a_file, monkeypatch):
    for path, message in [
        (tmp_path, "is a directory"),
        (tmp_path / "missing" / "out.json", "the directory"),
        (a_file / "out.json", "lies under .*which is a file, not a directory"),
        (a_file / "deeper" / "out.json", "lies under .*which is a file"),
        ("", "empty"),
    ]:
        with pytest.raises(ValueError, match=message) as caught:
            files.check_output_path(path, "--json")
        assert str(caught.value).startswith("--json: ") and "\n" not in str(caught.value)
    before = sorted(tmp_path.iterdir())
    assert files.check_output_path(tmp_path / "out.json", "--json") == tmp_path / "out.json"
    assert sorted(tmp_path.iterdir()) == before  # the check leaves nothing behind
    read_only(monkeypatch, tmp_path)
    with pytest.raises(ValueError, match="cannot write to .*Read-only file system"):
        files.check_output_path(tmp_path / "out.json", "--json")


def test_check_output_dir_allows_a_directory_to_be_made(tmp_path, a_file, monkeypatch):
    new = tmp_path / "new" / "deeper"
    assert files.check_output_dir(new, "--out") == new
    assert not (tmp_path / "new").exists()  # nothing is created
    with pytest.raises(ValueError, match="'.*file.txt' is a file, not a directory"):
        files.check_output_dir(a_file, "--out")
    with pytest.raises(ValueError, match="lies under .*which is a file"):
        files.check_output_dir(a_file / "sweep", "--out")
    read_only(monkeypatch, tmp_path)
    with pytest.raises(ValueError, match="Read-only file system"):
        files.check_output_dir(tmp_path / "new", "--out")


def test_write_atomic_writes_whole_or_not_at_all(tmp_path, monkeypatch):
    path = files.write_atomic(tmp_path / "out.txt", "new ✓")
    assert path.read_text() == "new ✓" and leftovers(tmp_path) == []
    (tmp_path / "out.txt").write_text("old")
    with pytest.raises(IsADirectoryError):
        files.write_atomic(tmp_path, b"data")  # a directory where the file should go
    full_disk(monkeypatch, tmp_path)
    with pytest.raises(OSError) as caught:
        files.write_atomic(tmp_path / "out.txt", b"x" * 100_000)
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "out.txt")  # the path, not the temp
    assert (tmp_path / "out.txt").read_text() == "old"
    assert leftovers(tmp_path) == []


def test_write_atomic_on_a_file_size_limit_leaves_nothing(tmp_path):
    script = ("import sys; from azjax.run.files import write_atomic\n"
              "write_atomic(sys.argv[1], b'x' * 100_000)\n")
    (tmp_path / "out.bin").write_bytes(b"old")
    done = subprocess.run(file_size_limited(1000, "-c", script, str(tmp_path / "out.bin")),
                          capture_output=True, text=True, env=PYTHON_ENV, timeout=120,
                          check=False)
    assert done.returncode != 0 and "File too large" in done.stderr
    assert (tmp_path / "out.bin").read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_check_seed():
    assert check_seed(0) == 0 and check_seed(COMMAND_SEED_MAX) == COMMAND_SEED_MAX
    for bad in (-1, COMMAND_SEED_MAX + 1, 99999999999999999999999, True, 1.0):
        with pytest.raises(ValueError, match="--seed must be an integer from 0 to"):
            check_seed(bad)


# ---------------------------------------------------------------------- python -m azjax.play


@pytest.mark.parametrize("seed", ["-1", "99999999999999999999999"])
def test_play_refuses_seeds_jax_cannot_take(run_dir, seed, capsys, monkeypatch):
    started = calls(monkeypatch, play, "session")
    assert play.main(["tictactoe", "--run-dir", str(run_dir), "--seed", seed]) == 2
    only_error(capsys.readouterr().err, "--seed must be an integer from 0 to", seed)
    assert started == []


def test_play_refuses_a_search_that_does_not_fit_before_allocating(run_dir, capsys,
                                                                   monkeypatch):
    small_memory(monkeypatch)
    started = calls(monkeypatch, play, "session")
    searched = calls(monkeypatch, Agent, "analyse")
    assert play.main(["tictactoe", "--run-dir", str(run_dir),
                      "--simulations", "1000000000"]) == 2
    only_error(capsys.readouterr().err, "a search of 1,000,000,000 simulations would need",
               "GB", "more than the 8.0 GB of memory here")
    assert started == [] and searched == []


def test_play_subprocess_seed_out_of_range_is_one_line(run_dir, tmp_path):
    done = subprocess.run([sys.executable, "-m", "azjax.play", "tictactoe", "--run-dir",
                           str(run_dir), "--seed", "99999999999999999999999"],
                          input="", capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          check=False)
    assert done.returncode == 2
    only_error(done.stderr, "--seed must be an integer")
    assert done.stdout == ""


# ---------------------------------------------------------------------- python -m azjax.arena


def test_arena_refuses_a_match_that_does_not_fit_before_allocating(capsys, monkeypatch):
    small_memory(monkeypatch)
    played = calls(monkeypatch, arena, "play_match")
    for players, part in ((["random", "random"], "live games"),
                          (["mcts:1000", "random"], "search trees of mcts:1000")):
        assert arena.main([*players, "--game", "tictactoe", "--games", "1000000000"]) == 2
        captured = capsys.readouterr()
        only_error(captured.err, "a match of 1,000,000,000 games of tictactoe would need",
                   part, "more than the 8.0 GB")
        assert captured.out == ""
    assert played == []


@pytest.mark.parametrize("where, message", [
    ("missing/out.json", "the directory"),
    ("file.txt/out.json", "lies under 'file.txt', which is a file"),
    (".", "is a directory"),
])
def test_arena_checks_the_json_path_before_playing(where, message, tmp_path, a_file, capsys,
                                                   monkeypatch):
    played = calls(monkeypatch, arena, "play_match")
    monkeypatch.chdir(tmp_path)
    assert arena.main(["random", "random", "--game", "tictactoe", "--games", "4",
                       "--json", where]) == 2
    captured = capsys.readouterr()
    only_error(captured.err, "--json", message)
    assert captured.out == "" and played == []


def test_arena_prints_the_result_before_a_failed_write(tmp_path, capsys, monkeypatch):
    full_disk(monkeypatch, tmp_path)
    out = tmp_path / "result.json"
    assert arena.main(["random", "solver", "--game", "tictactoe", "--games", "6",
                       "--json", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith("tictactoe: random vs solver: 6 games")  # not lost
    one_error(captured.err, str(out), "No space left on device")
    assert not out.exists() and leftovers(tmp_path) == []


def test_arena_subprocess_json_in_a_missing_directory(tmp_path):
    done = subprocess.run([sys.executable, "-m", "azjax.arena", "random", "random", "--game",
                           "tictactoe", "--games", "4", "--json",
                           str(tmp_path / "missing_dir" / "out.json")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          check=False)
    assert done.returncode == 2
    only_error(done.stderr, "--json", "missing_dir", "does not exist")
    assert done.stdout == ""  # refused before the match


# --------------------------------------------------------------------- python -m azjax.league


def test_league_on_a_read_only_run_refuses_before_playing(run_dir, tmp_path, capsys,
                                                          monkeypatch):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    read_only(monkeypatch, copy)
    played = calls(monkeypatch, league_lib, "round_robin")
    assert league.main(["--run-dir", str(copy), "--games", "2", "--kind", "network"]) == 2
    captured = capsys.readouterr()
    only_error(captured.err, "cannot write to", str(copy), "Read-only file system")
    assert played == [] and "league of" not in captured.out
    assert not any(copy.glob("league.*")) and leftovers(copy) == []


def test_league_prints_the_table_before_a_failed_write(run_dir, tmp_path, capsys,
                                                       monkeypatch):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    full_disk(monkeypatch, copy)
    assert league.main(["--run-dir", str(copy), "--games", "2", "--kind", "network"]) == 2
    captured = capsys.readouterr()
    assert "| rank | name | Elo |" in captured.out and "it1" in captured.out  # not lost
    assert "wrote" not in captured.out
    one_error(captured.err, "league.csv", "No space left on device")
    assert not any(copy.glob("league.*")) and leftovers(copy) == []


def test_league_refuses_bad_seeds_directories_and_what_does_not_fit(run_dir, tmp_path,
                                                                    capsys, monkeypatch):
    played = calls(monkeypatch, league_lib, "round_robin")
    assert league.main(["--run-dir", str(run_dir), "--seed", "-1"]) == 2
    only_error(capsys.readouterr().err, "--seed must be an integer")
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    (copy / "league.png").mkdir()
    assert league.main(["--run-dir", str(copy), "--games", "2"]) == 2
    only_error(capsys.readouterr().err, "league.png", "is a directory")
    small_memory(monkeypatch)
    assert league.main(["--run-dir", str(run_dir), "--steps", "1", "--games", "1000000",
                        "--simulations", "100000", "--baselines", "random,mcts:10"]) == 2
    only_error(capsys.readouterr().err, "a match of 1,000,000 games of tictactoe would need",
               "search trees of it1", "search trees of mcts:10", "more than the 8.0 GB")
    assert played == []


# --------------------------------------------------------------------- python -m azjax.export


@pytest.mark.parametrize("where, message", [
    ("out_dir", "is a directory"),
    ("file.txt/agent.azjax", "which is a file, not a directory"),
    ("missing/agent.azjax", "does not exist"),
])
def test_export_checks_the_output_before_loading(where, message, run_dir, tmp_path, a_file,
                                                 capsys, monkeypatch):
    (tmp_path / "out_dir").mkdir()
    loaded = calls(monkeypatch, Agent, "load")
    assert export.main([str(run_dir), str(tmp_path / where)]) == 2
    captured = capsys.readouterr()
    only_error(captured.err, "output file", message)
    assert captured.out == "" and loaded == [] and leftovers(tmp_path) == []


def test_export_to_a_read_only_place_refuses_before_loading(run_dir, tmp_path, capsys,
                                                             monkeypatch):
    read_only(monkeypatch, tmp_path)
    loaded = calls(monkeypatch, Agent, "load")
    assert export.main([str(run_dir), str(tmp_path / "agent.azjax")]) == 2
    only_error(capsys.readouterr().err, "cannot write to", "Read-only file system")
    assert loaded == [] and list(tmp_path.iterdir()) == []


def test_export_on_a_full_disk_keeps_the_old_file_and_no_partial(run_dir, tmp_path, capsys,
                                                                 monkeypatch):
    out = tmp_path / "agent.azjax"
    out.write_bytes(b"the previous export")
    full_disk(monkeypatch, tmp_path)
    assert export.main([str(run_dir), str(out)]) == 2
    one_error(capsys.readouterr().err, str(out), "No space left on device")
    assert out.read_bytes() == b"the previous export"
    assert leftovers(tmp_path) == []


def test_export_subprocess_past_the_file_size_limit(run_dir, tmp_path):
    out = tmp_path / "agent.azjax"
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    done = subprocess.run(file_size_limited(1000, "-m", "azjax.export", str(run_dir), str(out)),
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
                          check=False)
    assert done.returncode == 2
    only_error(done.stderr, str(out), "File too large")
    assert not out.exists() and leftovers(tmp_path) == []


# ------------------------------------------------- run directories that are not directories


def _cli_on_run(name: str, run: str, tmp_path: Path) -> int:
    if name == "play":
        return play.main(["tictactoe", "--run-dir", run])
    if name == "arena":
        return arena.main([f"alphazero:{run}", "random", "--games", "2"])
    if name == "league":
        return league.main(["--run-dir", run, "--games", "2"])
    return export.main([run, str(tmp_path / "agent.azjax")])


@pytest.mark.parametrize("name", ["play", "arena", "league", "export"])
def test_a_run_dir_that_is_a_file_or_unreadable_is_one_line(name, run_dir, tmp_path, a_file,
                                                            capsys, monkeypatch):
    for run in (a_file, a_file / "run", tmp_path / "missing"):
        assert _cli_on_run(name, str(run), tmp_path) == 2
        captured = capsys.readouterr()
        only_error(captured.err, str(run.relative_to(tmp_path)))
        assert captured.out == ""

    def unreadable(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    monkeypatch.setattr(Path, "read_text", unreadable)  # config.json cannot be read
    assert _cli_on_run(name, str(run_dir), tmp_path) == 2
    captured = capsys.readouterr()
    only_error(captured.err, "Permission denied")
    assert captured.out == ""


@pytest.mark.parametrize("name", ["play", "export"])
def test_a_damaged_checkpoint_is_one_line(name, run_dir, tmp_path, capsys):
    copy = tmp_path / "damaged"
    shutil.copytree(run_dir, copy)
    for path in (copy / "checkpoints").rglob("*"):
        if path.is_file() and path.stat().st_size > 16:
            path.write_bytes(path.read_bytes()[:16])
    assert _cli_on_run(name, str(copy), tmp_path) == 2
    captured = capsys.readouterr()
    one_error(captured.err, str(copy))
    assert "wrote" not in captured.out


# ----------------------------------------------------------------- experiments/sweep.py


# gumbel_scale: a setting the recipe's Gumbel search reads (a sweep of c_puct alone is
# refused, tests/test_sweep_settings_read.py).
SWEEP = ["--param", "gumbel_scale=0.5,1", "--iterations", "1"]


@pytest.mark.parametrize("args, words", [
    (["--seed", "-1"], ["seed must be in [0, 4294967295], got -1"]),
    (["--seed", str(RUN_SEED_MAX), "--seeds", "2"], ["--seed + --seeds - 1", "at most"]),
    (["--out", "{file}/sweep"], ["--out", "lies under", "which is a file"]),
    (["--param", "c_puct=1,2"], ["search.c_puct is never read by the gumbel search",
                                 "set --search.policy puct to sweep it"]),
])
def test_sweep_errors_before_training_are_one_line(args, words, a_file, tmp_path,
                                                   monkeypatch):
    args = [a.replace("{file}", str(a_file)) for a in args]
    monkeypatch.chdir(tmp_path)  # where the sweep's default --out (runs/...) would go
    done = experiment("sweep", *SWEEP, *args)  # the script's __main__, in this process
    assert done.returncode == 2, done.stderr
    only_error(done.stderr, *words)
    assert done.stdout == ""  # no group started
    assert list(tmp_path.iterdir()) == [a_file]  # nothing written


def test_sweep_subprocess_error_is_one_line(tmp_path):
    """The same through the real script: exit status 2, the one line alone on stderr."""
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / "sweep.py"), *SWEEP,
                           "--seed", "-1"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          check=False)
    assert done.returncode == 2, done.stderr
    only_error(done.stderr, "seed must be in [0, 4294967295], got -1")
    assert done.stdout == "" and list(tmp_path.iterdir()) == []
