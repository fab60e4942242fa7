"""The files of a run's checkpoints: step directories, manifests (a SHA-256 of every file,
written last, so that a step without one did not finish saving) and their checks. Reads
no arrays; `azjax.run.directory.checkpoint` restores them."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from azjax.run.directory.layout import CHECKPOINT_DIR, DAMAGED_DIR
from azjax.run.files import os_error_text, sha256_digest, write_atomic

MANIFEST_FILE = "azjax_manifest.json"
METRICS_COPY = "azjax_metrics.jsonl.gz"
AMENDED_METRICS_COPY = "azjax_metrics_amended.jsonl.gz"
"""The records of a checkpoint whose last record was amended after it was saved (the
final evaluation a stop skipped, run on resuming); its manifest names it."""
MANIFEST_FORMAT = 1
ITEM_DIR = "default"  # orbax's directory of the one item of a step
UNFINISHED = "it is incomplete (no manifest: the save did not finish)"


def step_dir(run_dir: Path, step: int) -> Path:
    """The directory of checkpoint `step`."""
    return Path(run_dir) / CHECKPOINT_DIR / str(step)


def checkpoint_steps(run_dir: Path) -> list[int]:
    """The steps of the run's checkpoint directories, newest first (complete or not;
    orbax's temporary directories of an unfinished save are not steps)."""
    root = Path(run_dir) / CHECKPOINT_DIR
    if not root.is_dir():
        return []
    return sorted((int(p.name) for p in root.iterdir() if p.name.isdigit() and p.is_dir()),
                  reverse=True)


def write_manifest(directory: Path, step: int, config: dict[str, Any] | None,
                   records: int | None, records_file: str = METRICS_COPY) -> None:
    """Writes a step directory's manifest (last: it marks the checkpoint complete): the
    config, the number of metrics records the step holds and the file that holds them,
    and every file's SHA-256."""
    files = {path.relative_to(directory).as_posix(): sha256_digest(path)
             for path in sorted(directory.rglob("*"))
             if path.is_file() and path.name != MANIFEST_FILE}
    manifest = {"format": MANIFEST_FORMAT, "step": step, "config": config,
                "metrics_records": records, "files": files}
    if records_file != METRICS_COPY:
        manifest["metrics_file"] = records_file
    write_atomic(directory / MANIFEST_FILE, json.dumps(manifest, indent=1) + "\n")


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The manifest of a step directory, or None when it has none or it is unreadable."""
    try:
        manifest = json.loads((Path(directory) / MANIFEST_FILE).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and "files" in manifest else None


def is_unfinished(directory: Path) -> bool:
    """Whether a step directory is a save that did not finish: no manifest."""
    return not (Path(directory) / MANIFEST_FILE).exists()


def verify(run_dir: Path, step: int, manifest: dict[str, Any] | None = None,
           only: Callable[[str], bool] | None = None,
           share: tuple[int, int] = (0, 1)) -> str | None:
    """Why checkpoint `step` is damaged, or None when it is intact: its files against
    its manifest (those `only` selects, when given; with `share` = (i, n), the i-th of
    every n, the share of process i of n)."""
    directory = step_dir(run_dir, step)
    manifest = manifest or read_manifest(directory)
    if manifest is None:
        if (directory / MANIFEST_FILE).exists():
            return "its manifest is unreadable"
        return UNFINISHED
    expected = manifest["files"]
    if only is not None:
        expected = {k: v for k, v in expected.items() if only(k)}
    index, count = share
    for name, digest in sorted(expected.items())[index::count]:
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        try:
            actual = sha256_digest(path)
        except OSError as err:
            return f"{name} is unreadable ({os_error_text(err)})"
        if actual != digest:
            return f"{name} does not match its checksum"
    return None


def params_files(manifest: dict[str, Any]) -> Callable[[str], bool]:
    """Selects a checkpoint's metadata and its `params` arrays (skips other arrays)."""
    arrays = {name.rsplit("/", 1)[0] for name in manifest["files"] if name.endswith("/.zarray")}

    def wanted(name: str) -> bool:
        folder = name.rsplit("/", 1)[0]
        while folder and folder not in arrays:
            folder = folder.rsplit("/", 1)[0] if "/" in folder else ""
        return not folder or folder.split("/", 1)[-1].startswith("params.")

    return wanted


def set_aside(run_dir: Path, steps: Sequence[int]) -> list[Path]:
    """Moves damaged checkpoints out of `checkpoints/` into `damaged-checkpoints/` (kept
    for inspection; the run saves those steps again); returns where they went."""
    moved = []
    for step in steps:
        target = Path(run_dir) / DAMAGED_DIR / f"{step}-{time.strftime('%Y%m%d-%H%M%S')}"
        target.parent.mkdir(exist_ok=True)
        shutil.move(str(step_dir(run_dir, step)), str(target))
        moved.append(target)
    return moved




def damaged_steps(run_dir: Path, params_only: bool = False) -> dict[int, str]:
    """The run's damaged checkpoints, with why (`verify`; with `params_only`, of the
    files that loading the network needs)."""
    out = {}
    for step in checkpoint_steps(run_dir):
        manifest = read_manifest(step_dir(run_dir, step))
        only = params_files(manifest) if params_only and manifest else None
        why = verify(run_dir, step, manifest, only)
        if why is not None:
            out[step] = why
    return out


def metadata_tree(meta: Any) -> Any:
    """The nested dict of array metadata in what orbax's `metadata()` returns (its form
    differs by version: the tree itself, one under `.tree`, or `.item_metadata[.tree]`)."""
    for name in ("item_metadata", "tree"):
        inner = getattr(meta, name, None)
        if inner is not None:
            meta = inner
    return meta
