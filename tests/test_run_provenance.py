"""Provenance recorded at training time: each training process that starts or resumes a
run appends its code, command and machine to provenance.jsonl (`azjax.run.directory.process_record`),
and `azjax export` reports the processes that trained the exported checkpoint
(`azjax.run.agents.run_provenance`), falling back to the exporting code for runs without them."""

from __future__ import annotations

import dataclasses
import datetime
import json
import shlex
import subprocess
import sys
from pathlib import Path

import jax
import pytest
from test_training import ROOT
from tiny import CONFIG

import azjax
from azjax import Agent, train, train_group
from azjax.commands.export import main as export_main
from azjax.run.agents.run_provenance import code_commit, trained_by, training_command
from azjax.run.directory import process_record
from azjax.run.directory.run_dir import RunDir

REAL_RUN = subprocess.run


def checkout() -> tuple[str | None, bool | None]:
    """HEAD of the checkout these tests run from and whether tracked files changed
    (None, None outside a git checkout), asked of git here, not of azjax."""
    if not (ROOT / ".git").exists():
        return None, None
    git = ["git", "-C", str(ROOT)]
    head = REAL_RUN([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                    check=True, timeout=60).stdout.strip()
    changed = REAL_RUN([*git, "status", "--porcelain", "--untracked-files=no"],
                       capture_output=True, text=True, check=True, timeout=60).stdout
    return head, bool(changed.strip())


def commit_words(commit: str | None, dirty: bool | None) -> str:
    return "unknown" if commit is None else commit + " with uncommitted changes" * bool(dirty)


@pytest.fixture
def fresh_git():
    """`git_commit` asked afresh in the test (it is asked once per process), and again
    after it (so that no patched answer outlives the test)."""
    process_record.git_commit.cache_clear()
    yield
    process_record.git_commit.cache_clear()


def test_each_training_process_appends_its_record_and_export_lists_them(
        tmp_path, monkeypatch, capsys):
    """A fresh run records iteration 0 and its command; a resumed one appends its own
    from iteration 2; the export of iteration 3 names both commands in order, and of
    iteration 2 the first alone; a process that found the run finished trained none of
    it; a run resumed at another commit lists both commits."""
    run = tmp_path / "run"
    first = ["azjax train", "tictactoe", "--run-dir", str(run)]
    monkeypatch.setattr(sys, "argv", first)
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    train(CONFIG, run, progress=None)
    after = datetime.datetime.now(datetime.timezone.utc)
    [record] = RunDir(run).read_provenance()
    command = f"azjax train tictactoe --run-dir {shlex.quote(str(run))}"
    commit, dirty = checkout()
    assert record["iteration"] == 0
    assert (record["command"], record["script"]) == (command, "azjax train")
    assert (record["commit"], record["dirty"]) == (commit, dirty)
    assert record["azjax_version"] == azjax.__version__
    assert before <= datetime.datetime.fromisoformat(record["started"]) <= after
    if Path("/proc/cpuinfo").is_file():
        assert isinstance(record["processor"], str) and record["processor"]
    assert (record["backend"], record["device_kind"], record["devices"],
            record["processes"], record["jax_version"]) == (
        jax.default_backend(), jax.devices()[0].device_kind, 1, 1, jax.__version__)

    resumed = [*first, "--iterations", "3"]
    monkeypatch.setattr(sys, "argv", resumed)
    train(CONFIG.replace(iterations=3), run, progress=None)
    records = RunDir(run).read_provenance()
    assert [r["iteration"] for r in records] == [0, 2]
    assert records[0] == record and records[1]["command"] == command + " --iterations 3"

    out = tmp_path / "agent.azjax"
    assert export_main([str(run), str(out)]) == 0
    words = commit_words(commit, dirty)
    assert f"iteration 3, azjax {azjax.__version__}, commit {words} (" in capsys.readouterr().out
    facts = Agent.load(out).provenance
    assert facts.command == (f"{command} (from iteration 0); {command} --iterations 3 "
                             "(from iteration 2)")
    assert (facts.commit, facts.azjax_version) == (words, azjax.__version__)
    assert facts.notes[0] == ("version, commit and command as the 2 training processes "
                              "recorded them on starting (provenance.jsonl)")
    assert facts.notes[1] == (f"trained on 1 x {record['device_kind']} ({record['backend']}), "
                              f"host processor {record['processor']}")
    assert facts.iterations == 3
    two = Agent.load(run, step=2).provenance
    assert (two.command, two.commit, two.iterations) == (command, words, 2)
    assert two.notes[0].startswith("version, commit and command as the training process ")

    train(CONFIG.replace(iterations=3), run, progress=None)  # finished: trains nothing
    assert [r["iteration"] for r in RunDir(run).read_provenance()] == [0, 2, 3]
    assert Agent.load(run).provenance == dataclasses.replace(facts, exported=None)

    other = {**records[1], "commit": "f" * 40, "dirty": True, "azjax_version": "9.9"}
    RunDir(run).provenance_file.write_text(
        "".join(json.dumps(r) + "\n" for r in (records[0], other)))
    facts = Agent.load(run).provenance
    assert facts.commit == (f"{words} (from iteration 0); {'f' * 40} with uncommitted "
                            "changes (from iteration 2)")
    assert facts.azjax_version == (f"{azjax.__version__} (from iteration 0); 9.9 "
                                   "(from iteration 2)")


def test_every_run_of_a_group_records_its_process(tmp_path):
    """A sweep's compile group (`train_group`) writes a record into each run."""
    runs = [tmp_path / "a", tmp_path / "b"]
    configs = [CONFIG.replace(iterations=1), CONFIG.replace(iterations=1, seed=1)]
    train_group(configs, runs, progress=None)
    for run in runs:
        assert [r["iteration"] for r in RunDir(run).read_provenance()] == [0], run


def test_trained_by_keeps_the_processes_whose_training_a_checkpoint_holds():
    """A process that resumed from an older checkpoint redid the work of those since;
    one that started at the checkpoint's iteration or later trained none of it."""
    records = [{"iteration": i, "n": n} for n, i in enumerate([0, 10, 10, 5, 20])]

    def kept(step):
        return [r["n"] for r in trained_by(records, step)]

    assert kept(30) == kept(None) == [0, 3, 4]
    assert kept(20) == kept(12) == [0, 3]
    assert kept(5) == [0] and kept(0) == [] and trained_by([], 7) == []
    assert kept(10) == [0, 3]  # the processes that started at 10 were redone from 5


@pytest.mark.parametrize("error", [
    FileNotFoundError(2, "No such file or directory: 'git'"),
    subprocess.TimeoutExpired(["git"], 2),
    subprocess.CalledProcessError(128, ["git"], stderr="fatal: not a git repository"),
])
def test_a_failing_git_does_not_stop_training(tiny_run_copy, monkeypatch, fresh_git, error):
    """git missing, hanging past its timeout, or failing: the run trains on, its record
    has no commit, and the export says 'unknown' for that process."""
    asked = []

    def run(args, *rest, **options):
        if args[0] != "git":
            return REAL_RUN(args, *rest, **options)
        asked.append(options.get("timeout"))
        raise error

    monkeypatch.setattr(subprocess, "run", run)
    train(CONFIG.replace(iterations=3), tiny_run_copy, progress=None)
    assert RunDir(tiny_run_copy).checkpoints.steps()[0] == 3
    if (ROOT / ".git").exists():
        assert asked and all(t is not None and t <= 2 for t in asked), asked
    first, second = RunDir(tiny_run_copy).read_provenance()
    assert (second["iteration"], second["commit"], second["dirty"]) == (2, None, None)
    assert first["commit"] == checkout()[0]  # the fixture's process, before the patch
    words = commit_words(first["commit"], first["dirty"])
    expected = words if first["commit"] is None else (
        f"{words} (from iteration 0); unknown (from iteration 2)")
    assert Agent.load(tiny_run_copy).provenance.commit == expected


def test_code_outside_a_git_checkout_records_no_commit(monkeypatch, fresh_git, tmp_path):
    monkeypatch.setattr(process_record, "CHECKOUT", tmp_path)  # as an installed wheel
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("git was asked"))
    assert process_record.git_commit() == (None, None)
    record = process_record.start_record(4)
    assert (record["commit"], record["dirty"], record["iteration"]) == (None, None, 4)


def test_a_run_without_records_falls_back_to_the_exporting_code_and_says_so(
        tiny_run_copy, tmp_path):
    """A run from before provenance.jsonl: the exporting checkout's commit and the
    command rebuilt from config.json, in the notes; a run whose records begin later
    (an old run resumed by this azjax) lists the unrecorded iterations first."""
    run = RunDir(tiny_run_copy)
    [record] = run.read_provenance()
    run.provenance_file.unlink()
    config = run.load_config()
    path = Agent.load(tiny_run_copy).export(tmp_path / "old.azjax")
    facts = Agent.load(path).provenance
    assert (facts.azjax_version, facts.commit) == (azjax.__version__, code_commit())
    assert facts.command == training_command(config, tiny_run_copy)
    assert facts.notes[0] == (
        "version and commit are the exporting code's, and the command was rebuilt from "
        "config.json: the run directory has no provenance.jsonl (a run from before azjax "
        "recorded the code and commands that trained it)")

    run.provenance_file.write_text(json.dumps({**record, "iteration": 1}) + "\n")
    words = commit_words(record["commit"], record["dirty"])
    facts = Agent.load(tiny_run_copy).provenance
    assert facts.commit == f"not recorded (from iteration 0); {words} (from iteration 1)"
    assert facts.command == f"not recorded (from iteration 0); {record['command']} " \
                            "(from iteration 1)"
    assert ("the iterations up to 1 were trained by processes that recorded nothing in "
            "provenance.jsonl (an azjax from before it)") in facts.notes
    one = Agent.load(tiny_run_copy, step=1).provenance
    assert one.command == training_command(config, tiny_run_copy)
    assert one.notes[0].endswith(": its provenance.jsonl records no process that trained "
                                 "it up to iteration 1")


def test_a_torn_last_record_is_skipped_and_ended_by_the_next(tmp_path):
    """A process killed mid-write leaves half a line: reading skips it, and the next
    record starts on a line of its own instead of being lost with it."""
    run = RunDir.open(tmp_path / "run")
    assert run.read_provenance() == []
    run.path.mkdir()
    run.append_provenance({"iteration": 0, "command": "a"})
    with open(run.provenance_file, "a") as f:
        f.write('{"iteration": 4, "comm')
    assert [r["command"] for r in run.read_provenance()] == ["a"]
    run.append_provenance({"iteration": 4, "command": "b"})
    assert [r["command"] for r in run.read_provenance()] == ["a", "b"]
    with open(run.provenance_file, "a") as f:  # records that cannot be placed in the run
        f.write('[1]\n{"iteration": "5"}\n{"iteration": true}\n')
    assert len(run.read_provenance()) == 2
