"""A run's checkpoints (`Checkpoints`, a run directory's `RunDir.checkpoints`): checked
orbax checkpoints of the whole TrainState.

A checkpoint is `checkpoints/<step>/`: orbax's arrays (written into a temporary directory
and renamed when complete), then a copy of the run's metrics records and, last, a
manifest with the config and a SHA-256 of every file. The manifest is the commit point:
a step directory without one (a process killed between the two), with a file missing,
changed or unreadable, is damaged. Restoring takes the newest intact checkpoint and says
which damaged ones it passed over; a run directory none of whose checkpoints is intact
is refused. Checkpoints are read as azjax 0.1.0 and later write them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from azjax.run.config import TrainConfig
from azjax.run.directory.checkpoint_files import (
    AMENDED_METRICS_COPY,
    ITEM_DIR,
    METRICS_COPY,
    UNFINISHED,
    checkpoint_steps,
    damaged_steps,
    is_unfinished,
    metadata_tree,
    params_files,
    read_manifest,
    set_aside,
    step_dir,
    verify,
    write_manifest,
)
from azjax.run.directory.layout import CHECKPOINT_DIR, RunDirError, records_text
from azjax.run.files import error_line, write_atomic
from azjax.run.process.devices import agreed_max, barrier, first_text, is_primary, spans_processes


class DamagedCheckpointWarning(UserWarning):
    """Loading passed over damaged checkpoints to the newest intact one."""


class _QuietOrbax(logging.Filter):
    """Drops orbax's notice that there is no OCDBT data to merge (we save without OCDBT,
    whose merge globs the path and so fails on run directories named with `[`, `*`, `?`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Skipping merge of OCDBT" not in record.getMessage()


logging.getLogger("absl").addFilter(_QuietOrbax())


class _Silenced(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


@contextlib.contextmanager
def _orbax_silenced():
    """Drops orbax's log records (tracebacks of its worker threads included) while it
    saves: a failure reaches the caller as an exception, said once, in one line."""
    silenced = _Silenced()
    logger = logging.getLogger("absl")
    logger.addFilter(silenced)
    try:
        yield
    finally:
        logger.removeFilter(silenced)


def _whole_replicas() -> None:
    """Has orbax write a replicated array whole from its first replica (its default
    on GPUs), not a slice from each replica: slicing runs op by op and compiled a program
    per shape at a run's first save, a noticeable share of a short run
    (docs/results.md#what-took-time-off), for nothing when the replicas share a host. Orbax's registry is global: this holds
    for every orbax save in the process. Such an array is then stored in one chunk, as
    on one device; checkpoints written either way restore alike."""
    registered = ocp.type_handlers.get_type_handler(jax.Array)
    handler = ocp.type_handlers.ArrayHandler(  # keeping the registered one's metadata store
        use_replica_parallel=False,
        array_metadata_store=getattr(registered, "_array_metadata_store", None))
    with _orbax_silenced():  # its warning that a handler is replaced
        ocp.type_handlers.register_type_handler(jax.Array, handler, override=True)


_whole_replicas()


# --- checkpoints ------------------------------------------------------------------------


def _manager(folder: Path, max_to_keep: int, keep_period: int | None
             ) -> ocp.CheckpointManager:
    """An orbax manager for a run's checkpoints folder (saves synchronously, without
    OCDBT), keeping the newest `max_to_keep` and every step a multiple of `keep_period`."""
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep, keep_period=keep_period, create=True,
        enable_async_checkpointing=False, cleanup_tmp_directories=True,
    )
    with _orbax_silenced():
        return ocp.CheckpointManager(
            folder.absolute(), options=options,
            item_handlers=ocp.StandardCheckpointHandler(use_ocdbt=False))


def _local_parts(x: Any) -> list[Any]:
    """The parts of a leaf this process holds: one copy of a replicated array, each
    shard of a split one, the value itself off device."""
    if not isinstance(x, jax.Array):
        return [x]
    if x.is_fully_replicated:
        return [x.addressable_data(0)]
    return [shard.data for shard in x.addressable_shards]


def all_finite(tree: Any) -> bool:
    """Whether every float leaf of `tree` is finite, of the parts this process holds (a
    run of several processes agrees on the verdict: `_first_intact`)."""
    return all(bool(np.isfinite(np.asarray(part)).all()) for x in jax.tree.leaves(tree)
               if jax.dtypes.issubdtype(x.dtype, np.inexact) for part in _local_parts(x))


def _restore_error(err: BaseException) -> str:
    if "tree structures do not match" in str(err):
        return ("cannot be read: its saved state is laid out otherwise than this version "
                "of azjax lays it out (a game's or the training state's fields changed since "
                "it was written, e.g. Go's states gained positional-superko hashes); its "
                "network still loads (Agent.load, alphazero:DIR), but the run cannot resume")
    return f"cannot be read ({error_line(err, 160)})"


def _restore_tree(directory: Path, abstract: Any) -> Any:
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract)
    try:
        with ocp.StandardCheckpointer() as checkpointer:
            return checkpointer.restore(directory / ITEM_DIR, abstract)
    except ValueError as err:
        if "tree structures do not match" not in str(err):
            raise
        try:
            return _restore_without_later_fields(directory, abstract)
        except Exception:  # not that: the layout really differs
            raise err from None


def _restore_without_later_fields(directory: Path, abstract: Any) -> Any:
    """A checkpoint written before the state gained fields that this run leaves None
    (a setting off, such as restarts' archive): every array of `abstract` is in it, and
    the None fields it lacks stay None."""
    if not any(leaf is None for leaf in jax.tree.leaves(abstract,
                                                       is_leaf=lambda x: x is None)):
        raise ValueError("no None field to leave out")
    restored = _partial_restore(directory, abstract)
    if jax.tree.structure(restored) != jax.tree.structure(abstract) or any(
            isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree.leaves(restored)):
        raise ValueError("the checkpoint lacks arrays of the state")
    return restored


def _partial_restore(directory: Path, item: Any) -> Any:
    """The arrays of `item` (shapes) read from a checkpoint that may hold more."""
    args = ocp.args.PyTreeRestore(
        item=item,
        restore_args=ocp.checkpoint_utils.construct_restore_args(item),
        partial_restore=True,
    )
    with ocp.PyTreeCheckpointer() as checkpointer:
        return checkpointer.restore(directory / ITEM_DIR, args=args)


def _restore_params_tree(directory: Path, abstract_params: Any) -> Any:
    item = {"params": jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_params)}
    return _partial_restore(directory, item)["params"]


@dataclasses.dataclass
class Restored:
    """A restored checkpoint: its step, the restored tree, its manifest and the newer
    checkpoints passed over, with why (step, tree and manifest None: only unfinished saves
    were there)."""

    step: int | None
    tree: Any
    manifest: dict[str, Any] | None
    damaged: list[tuple[int, str]]

    def notice(self, run_dir: Path) -> str | None:
        """One line on the damaged checkpoints passed over, if any."""
        if not self.damaged:
            return None
        passed = "; ".join(f"checkpoint {s}: {why}" for s, why in self.damaged)
        using = "starting afresh" if self.step is None else f"using checkpoint {self.step}"
        return f"{run_dir}: passed over damaged {passed}; {using}"


def _first_intact(run_dir: Path, steps: Sequence[int], load: Callable[[Path], Any],
                  only: Callable[[dict], Callable[[str], bool]] | None = None,
                  together: bool = False) -> Restored:
    """The newest of `steps` that is intact and loads. `together`: the processes of a run
    load their own parts of one state; each checks its share of the files and its own
    arrays, and they agree on every verdict (one process seeing damage means all fall
    back together)."""
    share = (jax.process_index(), jax.process_count()) if together else (0, 1)
    agreed = first_text if together else (lambda text: text)
    agreed_kind = agreed_max if together else int
    damaged: list[tuple[int, str]] = []
    for step in steps:
        directory = step_dir(run_dir, step)
        manifest = read_manifest(directory)
        why = agreed(verify(run_dir, step, manifest,
                            only(manifest) if only is not None and manifest else None,
                            share) or "") or None
        if why is None:
            tree, kind, failed = None, 0, ""  # kind: 0 loaded, 1 unreadable, 2 refused
            try:
                with _orbax_silenced():  # a failure is told once, below
                    tree = load(directory)
            except RunDirError as err:
                kind, failed = 2, str(err)
            except Exception as err:  # noqa: BLE001 - any failure to read
                kind, failed = 1, _restore_error(err)
            kind, failed = agreed_kind(kind), agreed(failed)
            if kind == 2:
                raise RunDirError(failed)
            if kind == 1:  # its files are as its manifest says: not damage
                raise RunDirError(f"checkpoint {step} of {str(run_dir)!r} passed its "
                                  f"checksums but {failed}")
            finite = "" if all_finite(tree) else "it holds non-finite numbers"
            why = agreed(finite) or None
            if why is None:
                return Restored(step, tree, manifest, damaged)
        damaged.append((step, why))
    described = "; ".join(f"checkpoint {s}: {why}" for s, why in damaged)
    if len(steps) == 1 and len(damaged) == 1:
        raise RunDirError(f"checkpoint {steps[0]} of {str(run_dir)!r} is damaged: "
                          f"{damaged[0][1]}")
    raise RunDirError(f"no intact checkpoint in {str(run_dir)!r} ({described}); "
                      "restore the run from a copy, or use another --run-dir")


def _shapes(tree: Any) -> dict[str, tuple[int, ...]]:
    return {jax.tree_util.keystr(path): tuple(x.shape)
            for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]}


def _stored_tree(directory: Path) -> Any:
    """The tree of array metadata a checkpoint records (None if unreadable)."""
    try:
        with ocp.PyTreeCheckpointer() as checkpointer:
            return metadata_tree(checkpointer.metadata(directory / ITEM_DIR))
    except Exception:  # noqa: BLE001 - no readable metadata
        return None


def _stored_shapes(directory: Path) -> dict[str, tuple[int, ...]]:
    """The shapes of the parameters a checkpoint's metadata records ({} if unreadable)."""
    tree = _stored_tree(directory)
    try:
        return _shapes({"params": tree["params"]})
    except Exception:  # noqa: BLE001 - no readable metadata: nothing to compare
        return {}


def _misfit(run_dir: Path, directory: Path, stored: dict, expected: dict) -> RunDirError:
    wrong = [f"{k}: stored {stored.get(k)}, expected {v}" for k, v in expected.items()
             if stored.get(k) != v]
    return RunDirError(
        f"the weights of {str(run_dir)!r} (step {directory.name}) do not fit the network of "
        f"the game being loaded ({'; '.join(wrong[:3]) or 'other layers'}); was the run "
        "trained on other game options or another game?")


def _write_records(path: Path, records: Sequence[dict[str, Any]]) -> None:
    """Writes a checkpoint's copy of the metrics records (gzipped JSON lines, atomically)."""
    write_atomic(path, gzip.compress(records_text(records).encode(), mtime=0))


class Checkpoints:
    """A run's checkpoints: the `checkpoints/` folder of its run directory
    (`RunDir.checkpoints`), one step folder per checkpoint, each committed by its manifest.

    Reading needs nothing but the folder; saving first opens orbax's manager
    (`open_for_saving`), which `close` releases.
    """

    def __init__(self, run_path: Path):
        self.run_path = Path(run_path)
        self.folder = self.run_path / CHECKPOINT_DIR
        self._manager: ocp.CheckpointManager | None = None

    def __repr__(self) -> str:
        return f"Checkpoints({str(self.folder)!r})"

    def steps(self) -> list[int]:
        """The steps of the checkpoint folders, newest first (complete or not).

        Returns:
          The steps; [] for none.
        """
        return checkpoint_steps(self.run_path)

    def step_dir(self, step: int) -> Path:
        """The folder of checkpoint `step`.

        Args:
          step: the checkpoint's step (its training iteration).

        Returns:
          The folder's path (it may not exist).
        """
        return step_dir(self.run_path, step)

    def manifest(self, step: int) -> dict[str, Any] | None:
        """The manifest of checkpoint `step`.

        Args:
          step: the checkpoint's step.

        Returns:
          The manifest; None for none, or an unreadable one.
        """
        return read_manifest(self.step_dir(step))

    def verify(self, step: int) -> str | None:
        """Why checkpoint `step` is damaged (its files against its manifest).

        Args:
          step: the checkpoint's step.

        Returns:
          The reason in a few words; None when it is intact.
        """
        return verify(self.run_path, step)

    def damaged(self, params_only: bool = False) -> dict[int, str]:
        """The damaged checkpoints, with why.

        Args:
          params_only: check only the files that loading the network needs.

        Returns:
          By step, the reason.
        """
        return damaged_steps(self.run_path, params_only)

    def recorded_config(self) -> dict[str, Any] | None:
        """The config the newest intact checkpoint records in its manifest.

        Returns:
          The config as a dict; None when no intact checkpoint records one.
        """
        for step in self.steps():
            manifest = self.manifest(step)
            if (manifest is not None and manifest.get("config")
                    and verify(self.run_path, step, manifest) is None):
                return manifest["config"]
        return None

    def set_aside(self, steps: Sequence[int]) -> list[Path]:
        """Moves damaged checkpoints into `damaged-checkpoints/` (kept for inspection;
        the run saves those steps again).

        Args:
          steps: the checkpoints' steps.

        Returns:
          Where each went.
        """
        return set_aside(self.run_path, steps)

    def restore_newest(self, abstract_state: Any) -> Restored | None:
        """The newest intact checkpoint restored into `abstract_state`'s shapes.

        Saves that did not finish (no manifest) are passed over like damaged
        checkpoints; when they are all there is, the run starts afresh: a `Restored`
        with step and tree None lists them.

        Args:
          abstract_state: the training state (or its shapes) to restore into.

        Returns:
          The restored checkpoint; None when the run has none.

        Raises:
          RunDirError: when none is intact.
        """
        steps = self.steps()
        unfinished = [s for s in steps if is_unfinished(self.step_dir(s))]
        candidates = [s for s in steps if s not in unfinished]
        passed = [(s, UNFINISHED) for s in unfinished]
        if not candidates:  # nothing of an unfinished save was committed: no record
            return Restored(None, None, None, passed) if passed else None
        restored = _first_intact(self.run_path, candidates,
                                 lambda d: _restore_tree(d, abstract_state),
                                 together=spans_processes(abstract_state))
        restored.damaged = sorted(restored.damaged + passed, reverse=True)
        return restored

    def restore(self, abstract_state: Any, step: int | None = None) -> Any:
        """The state of checkpoint `step` (which must be intact), or of the newest
        intact one.

        Args:
          abstract_state: the training state (or its shapes) to restore into.
          step: the checkpoint's step (None: the newest intact).

        Returns:
          The restored state.

        Raises:
          RunDirError: for no such checkpoint, or a damaged one.
        """
        steps = [step] if step is not None else self.steps()
        if not steps:
            raise RunDirError(f"no checkpoint in {self.folder}")
        return _first_intact(self.run_path, steps,
                             lambda d: _restore_tree(d, abstract_state)).tree

    def restore_params(self, abstract_params: Any, step: int | None = None) -> Restored:
        """Only the network parameters of the newest intact checkpoint (or of `step`,
        which must be intact), checking only the files they need; reads no replay, and
        works across changes to the rest of the training state.

        Args:
          abstract_params: the network's parameters (or their shapes).
          step: the checkpoint's step (None: the newest intact).

        Returns:
          The restored checkpoint, whose tree is the parameters.

        Raises:
          RunDirError: for no checkpoint, a damaged one, or weights that do not fit.
        """
        run_dir, steps = self.run_path, self.steps()
        if not steps:
            raise RunDirError(f"{str(run_dir)!r} holds no checkpoint yet")
        if step is not None:
            if step not in steps:
                raise RunDirError(f"no checkpoint at step {step} in {str(run_dir)!r}; "
                                  f"steps there: {sorted(steps)}")
            steps = [step]
        expected = _shapes({"params": abstract_params})

        def load(directory: Path) -> Any:
            try:
                params = _restore_params_tree(directory, abstract_params)
            except Exception:
                stored = _stored_shapes(directory)  # a network of another shape, or damage?
                if stored and stored != expected:
                    raise _misfit(run_dir, directory, stored, expected) from None
                raise
            stored = _shapes({"params": params})
            if stored != expected:
                raise _misfit(run_dir, directory, stored, expected)
            return params

        return _first_intact(run_dir, steps, load, params_files)

    def records(self, restored: Restored) -> list[dict[str, Any]]:
        """The metrics records a restored checkpoint holds.

        Args:
          restored: the checkpoint.

        Returns:
          The records up to its step.
        """
        name = restored.manifest.get("metrics_file", METRICS_COPY)
        data = gzip.decompress((self.step_dir(restored.step) / name).read_bytes())
        return [json.loads(line) for line in data.decode().splitlines()]

    def amend_records(self, step: int, records: Sequence[dict[str, Any]]) -> None:
        """Replaces the records that intact checkpoint `step` holds (its last record
        amended after the save: the final evaluation a stop skipped, run on resuming).

        The new copy is written beside the old one under its own name, then the
        manifest, rewritten atomically, names it: killed at any point, the checkpoint
        stays intact and holds either the old records or the new ones. Process 0 only.

        Args:
          step: the checkpoint's step.
          records: every record up to `step`.
        """
        directory = self.step_dir(step)
        manifest = read_manifest(directory)
        if manifest is None:
            raise RunDirError(f"checkpoint {step} of {self.run_path} has no manifest to amend")
        _write_records(directory / AMENDED_METRICS_COPY, records)
        write_manifest(directory, step, manifest.get("config"), len(records),
                       AMENDED_METRICS_COPY)

    def open_for_saving(self, max_to_keep: int = 3, keep_period: int | None = None) -> None:
        """Opens orbax's manager of the folder, which `save` writes with.

        Args:
          max_to_keep: how many of the newest checkpoints are kept.
          keep_period: every checkpoint whose step is a multiple of this is kept too.
        """
        self.close()
        self._manager = _manager(self.folder, max_to_keep, keep_period)

    def save(self, step: int, train_state: Any, config: TrainConfig,
             records: Sequence[dict[str, Any]]) -> None:
        """Writes checkpoint `step`: the whole training state, then the metrics
        records up to it and `config`, then the manifest that commits it. In a run of
        several processes each saves its part of the arrays and process 0 the rest.

        Args:
          step: the step (the training iteration).
          train_state: the state.
          config: the run's config, recorded in the manifest.
          records: the run's metrics records up to `step`.

        Raises:
          RuntimeError: when `open_for_saving` was not called.
        """
        if self._manager is None:
            raise RuntimeError(f"{self!r}: open_for_saving() before save()")
        with _orbax_silenced():
            self._manager.save(step, args=ocp.args.StandardSave(train_state))
            self._manager.wait_until_finished()
        barrier(f"azjax checkpoint {step} arrays")  # every process's arrays are written
        if not is_primary():
            return
        directory = self.step_dir(step)
        _write_records(directory / METRICS_COPY, records)
        write_manifest(directory, step, config.to_dict(), len(records))

    def close(self) -> None:
        """Releases orbax's manager, if open."""
        if self._manager is not None:
            self._manager.close()
            self._manager = None
