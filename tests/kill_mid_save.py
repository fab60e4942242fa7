"""Runs an experiment script and SIGKILLs its own process in the middle of a checkpoint
save, at a point the caller chooses (no race with a watcher).

    python tests/kill_mid_save.py WHERE STEP NTH MARKER SCRIPT [SCRIPT ARGS...]

WHERE is `orbax` (orbax has written checkpoint STEP's arrays into its temporary
directory and not yet renamed it) or `manifest` (checkpoint STEP's directory is in place
with its arrays and records, but not its manifest, the commit point). The kill comes at
the NTH save of STEP (in a sweep's group of experiments, 2 is the second experiment's,
after the first one's committed). Just before it, MARKER gets the directory being written.
The hook lives in this process only; azjax itself is unchanged.
"""

import os
import runpy
import signal
import sys
from pathlib import Path

import orbax.checkpoint as ocp

from azjax.run.directory import checkpoint

where, step, nth, marker, script, *args = sys.argv[1:]
step, nth = int(step), int(nth)
saves = []


def maybe_die(saving_step: int, directory: Path) -> None:
    if saving_step != step:
        return
    saves.append(directory)
    if len(saves) == nth:
        Path(marker).write_text(str(directory))
        os.kill(os.getpid(), signal.SIGKILL)


if where == "orbax":
    finalize = ocp.StandardCheckpointHandler.finalize

    def finalize_or_die(self, directory):
        # `directory` is <run>/checkpoints/<step>.orbax-checkpoint-tmp-<n>/default
        tmp = Path(directory).parent
        maybe_die(int(tmp.name.split(".")[0]), tmp)
        finalize(self, directory)

    ocp.StandardCheckpointHandler.finalize = finalize_or_die
elif where == "manifest":
    write_manifest = checkpoint.write_manifest

    def write_manifest_or_die(directory, saving_step, *rest):
        maybe_die(saving_step, Path(directory))
        write_manifest(directory, saving_step, *rest)

    checkpoint.write_manifest = write_manifest_or_die
else:
    sys.exit(f"unknown kill point {where!r}")

sys.path[0] = str(Path(script).resolve().parent)  # as if the script were run itself
sys.argv = [script, *args]
runpy.run_path(script, run_name="__main__")
