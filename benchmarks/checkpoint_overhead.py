"""What checked checkpoints cost: save and restore of a recipe's whole training state,
orbax alone against azjax's checked checkpoint (orbax, then the metrics copy and the
manifest of SHA-256 checksums; on restore, the checksums verified first), in one run.

    python benchmarks/checkpoint_overhead.py [--recipes tictactoe connect_four] [--repeats 5]

Prints, per recipe, the checkpoint's size and the median seconds of each, and the ratio
checked / orbax alone. `--quick`: the tic-tac-toe recipe shrunk (`benchmarks/_quick.py`),
once, in seconds (to check the script end to end; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import _quick
import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from azjax.core.iteration import init_train_state
from azjax.run.directory.checkpoint import Checkpoints
from azjax.run.recipes import recipe


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _incompressible(state):
    """The state with random numbers in every array (as in a run's full replay ring;
    a fresh state's zeros would compress to nothing)."""
    rng = np.random.default_rng(0)

    def fill(x):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) or x.dtype == bool:
            return x
        return jnp.asarray(rng.integers(0, 100, x.shape).astype(x.dtype))

    return jax.tree.map(fill, state)


def measure(name: str, repeats: int, quick: bool = False) -> dict[str, float]:
    """Median seconds of orbax-only and checked save and restore for recipe `name`
    (shrunk to `_quick`'s sizes when `quick`)."""
    config = recipe(name, "cpu")
    if quick:
        config = _quick.shrink(config)
    env = config.make_env()
    state = _incompressible(init_train_state(env, config.program, jax.random.key(0)))
    jax.block_until_ready(state)
    records = [{"iteration": i, "loss": 1.0 / i} for i in range(1, 201)]
    root = Path(tempfile.mkdtemp(prefix="azjax-ckpt-bench-"))
    try:
        plain = ocp.CheckpointManager(
            root / "plain", options=ocp.CheckpointManagerOptions(
                create=True, enable_async_checkpointing=False, max_to_keep=repeats + 1),
            item_handlers=ocp.StandardCheckpointHandler(use_ocdbt=False))
        checked = Checkpoints(root / "checked")
        checked.open_for_saving(max_to_keep=repeats + 1)

        def save_plain(i):
            plain.save(i + 1, args=ocp.args.StandardSave(state))
            plain.wait_until_finished()

        def save_checked(i):
            checked.save(i + 1, state, config, records)

        out = {"save_orbax": _median_seconds(save_plain, repeats),
               "save_checked": _median_seconds(save_checked, repeats)}
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)

        def restore_plain(i):
            jax.block_until_ready(plain.restore(i + 1, args=ocp.args.StandardRestore(abstract)))

        def restore_checked(i):
            jax.block_until_ready(checked.restore(state, step=i + 1))

        out["restore_orbax"] = _median_seconds(restore_plain, repeats)
        out["restore_checked"] = _median_seconds(restore_checked, repeats)
        saved = checked.step_dir(1)
        out["megabytes"] = sum(p.stat().st_size for p in saved.rglob("*") if p.is_file()) / 1e6
        plain.close()
        checked.close()
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="+", default=["tictactoe", "connect_four"])
    parser.add_argument("--repeats", type=int, default=5)
    args = _quick.parse(parser, recipes=["tictactoe"], repeats=1)
    print(f"{'recipe':<14} {'MB':>7} {'save orbax':>11} {'checked':>9} {'ratio':>6} "
          f"{'restore orbax':>14} {'checked':>9} {'ratio':>6}")
    for name in args.recipes:
        m = measure(name, args.repeats, args.quick)
        print(f"{name:<14} {m['megabytes']:>7.1f} {m['save_orbax']:>10.3f}s "
              f"{m['save_checked']:>8.3f}s {m['save_checked'] / m['save_orbax']:>6.2f} "
              f"{m['restore_orbax']:>13.3f}s {m['restore_checked']:>8.3f}s "
              f"{m['restore_checked'] / m['restore_orbax']:>6.2f}")


if __name__ == "__main__":
    main()
