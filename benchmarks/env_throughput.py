"""Env throughput: steps/s of `jit(vmap(step))` with random legal moves and auto-reset.

Every game, ours and pgx's alike, runs through the same harness: a jitted `lax.scan` of T
steps of (split key, pick a uniformly random legal move per game, `vmap(env.step)`,
auto-reset finished games with `vmap(env.init)` selected per leaf with `jnp.where`); a
measurement counts batch * T steps (compilation excluded, `block_until_ready`, median of
repeats, ours and pgx alternated repeat by repeat). pgx's `truncated` counts as terminated.

Move pickers (the same one for both sides of a row, so the ratio is fair):
  * `uniform` (default): one uniform number per game, the r-th legal move via cumsum/argmax;
  * `categorical`: `jax.random.categorical` over the masked logits (costs more on big
    boards: one Gumbel draw per action).

Rows: tictactoe vs pgx tic_tac_toe, connect_four vs pgx connect_four, go 9x9 vs pgx go_9x9
(positional superko, our default, and `go9_simple`: simple ko, so the two rows' ratio is
superko's cost),
go 19x19 vs pgx go_19x19 (pgx not timed above batch 1024: too slow), and ours only for gomoku 15x15 (k=5) and coin_split (7 and 30
coins). pgx is the reference when installed (`pip install -e ".[bench]"`).

    python benchmarks/env_throughput.py [--games tictactoe,go9] [--batches 1,1024]
        [--picker uniform|categorical] [--repeats 3] [--seconds 0.75] [--json PATH]

`--quick`: the tic-tac-toe row at batch 2, one short repeat, in seconds (to check the
script end to end; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import _quick
import jax
import jax.numpy as jnp

import envs
from azjax.core.selfplay import tree_select

# ---------------------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------------------


def pick_uniform(key, mask):
    """One uniform number per game -> the r-th legal move (cumsum/argmax). mask [B, A]."""
    u = jax.random.uniform(key, mask.shape[:1])
    count = jnp.sum(mask, axis=-1, dtype=jnp.int32)
    r = jnp.minimum(jnp.floor(u * count).astype(jnp.int32), count - 1)
    cum = jnp.cumsum(mask, axis=-1, dtype=jnp.int32)
    return jnp.argmax(cum > r[:, None], axis=-1).astype(jnp.int32)


def pick_categorical(key, mask):
    """`jax.random.categorical` over masked logits (one Gumbel draw per action)."""
    logits = jnp.where(mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


PICKERS = {"uniform": pick_uniform, "categorical": pick_categorical}


def _done(state) -> jax.Array:
    done = state.terminated
    truncated = getattr(state, "truncated", None)  # pgx truncates some games (a draw)
    return done if truncated is None else done | truncated


def make_runner(env: Any, batch: int, length: int, picker: Callable):
    """A jitted `(states, key) -> (states, key)` playing `length` batched random steps."""
    init = jax.vmap(env.init)
    step = jax.vmap(env.step)

    def body(carry, _):
        states, key = carry
        key, k_act, k_init = jax.random.split(key, 3)
        actions = picker(k_act, states.legal_action_mask)
        states = step(states, actions)
        done = _done(states)
        fresh = init(jax.random.split(k_init, batch))
        states = tree_select(done, fresh, states)
        return (states, key), None

    @jax.jit
    def run(states, key):
        return jax.lax.scan(body, (states, key), None, length=length)[0]

    def start(key):
        return jax.jit(init)(jax.random.split(key, batch))

    return run, start


class Measure:
    """One env at one batch size: compiled, calibrated, then timed one repeat at a time."""

    def __init__(self, env, batch, chunk_steps, picker, seconds):
        self.batch = batch
        self.length = max(1, min(2000, chunk_steps // batch))
        self.run, start = make_runner(env, batch, self.length, picker)
        self.carry = (start(jax.random.key(0)), jax.random.key(1))
        t0 = time.perf_counter()
        self.carry = jax.block_until_ready(self.run(*self.carry))  # compile
        self.compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.carry = jax.block_until_ready(self.run(*self.carry))
        one = time.perf_counter() - t0
        self.calls = max(1, math.ceil(seconds / max(one, 1e-6)))
        self.rates: list[float] = []

    def repeat(self) -> None:
        t0 = time.perf_counter()
        carry = self.carry
        for _ in range(self.calls):
            carry = self.run(*carry)
        self.carry = jax.block_until_ready(carry)
        elapsed = time.perf_counter() - t0
        self.rates.append(self.batch * self.length * self.calls / elapsed)

    @property
    def rate(self) -> float:
        return statistics.median(self.rates)


# ---------------------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------------------


@dataclass
class Row:
    name: str  # the --games key
    game: str
    options: dict
    pgx_id: str | None
    chunk_steps: int  # steps (batch * T) per jitted call; smaller for the slow games
    pgx_max_batch: int | None = None  # above it pgx is too slow to time here (ours only)


ROWS = [
    Row("tictactoe", "tictactoe", {}, "tic_tac_toe", 1 << 16),
    Row("connect_four", "connect_four", {}, "connect_four", 1 << 16),
    Row("go9", "go", {"size": 9}, "go_9x9", 1 << 13),
    # Go's default rule is positional superko; this row times simple ko, for its cost.
    Row("go9_simple", "go", {"size": 9, "ko": "simple"}, "go_9x9", 1 << 13),
    # pgx go_19x19 does well under 1K steps/s at batch 4096 (~10 s a call): not timed there.
    Row("go19", "go", {"size": 19}, "go_19x19", 1 << 11, pgx_max_batch=1024),
    Row("gomoku", "gomoku", {"size": 15, "k": 5}, None, 1 << 14),
    Row("coin_split7", "coin_split", {"coins": 7}, None, 1 << 16),
    Row("coin_split30", "coin_split", {"coins": 30}, None, 1 << 15),
]


def label(row: Row) -> str:
    opts = ",".join(f"{k}={v}" for k, v in row.options.items())
    return f"{row.game}({opts})" if opts else row.game


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default=",".join(r.name for r in ROWS),
                        help=f"comma-separated rows out of {[r.name for r in ROWS]}")
    parser.add_argument("--batches", default="1,64,1024,4096")
    parser.add_argument("--picker", choices=sorted(PICKERS), default="uniform")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.75,
                        help="target duration of one timed repeat")
    parser.add_argument("--no-pgx", action="store_true", help="ours only")
    parser.add_argument("--json", help="write the figures to this path")
    args = _quick.parse(parser, games="tictactoe", batches="2", repeats=1, seconds=0.01)

    by_name = {r.name: r for r in ROWS}
    wanted = [g.strip() for g in args.games.split(",") if g.strip()]
    unknown = [g for g in wanted if g not in by_name]
    if unknown:
        parser.error(f"unknown games {unknown}; choose from {list(by_name)}")
    batches = [int(b) for b in args.batches.split(",")]
    picker = PICKERS[args.picker]

    pgx = None
    if not args.no_pgx:
        try:
            import pgx
        except ImportError:
            print('pgx not installed: ours only (pip install -e ".[bench]" for the reference)')
    print(f"backend {jax.default_backend()}, devices {jax.devices()}, jax {jax.__version__}"
          + (f", pgx {pgx.__version__}" if pgx else ""))
    print(f"picker: {args.picker}"
          + (" (one uniform per game -> r-th legal move; --picker categorical to switch)"
             if args.picker == "uniform" else " (jax.random.categorical over masked logits)"))
    print(f"median of {args.repeats} repeats of ~{args.seconds:g} s, ours and pgx alternated; "
          "compile excluded\n")
    header = f"{'game':<28} {'batch':>6} {'ours steps/s':>14} {'pgx steps/s':>14} {'ratio':>7}"
    print(header)
    print("-" * len(header))

    results = []
    for name in wanted:
        row = by_name[name]
        ours_env = envs.make(row.game, **row.options)
        ref_env = pgx.make(row.pgx_id) if (pgx and row.pgx_id) else None
        for batch in batches:
            ours = Measure(ours_env, batch, row.chunk_steps, picker, args.seconds)
            skip_ref = row.pgx_max_batch is not None and batch > row.pgx_max_batch
            ref = (Measure(ref_env, batch, row.chunk_steps, picker, args.seconds)
                   if ref_env is not None and not skip_ref else None)
            for _ in range(args.repeats):
                ours.repeat()
                if ref is not None:
                    ref.repeat()
            ratio = ours.rate / ref.rate if ref is not None else None
            ref_text = f"{ref.rate:>14,.0f}" if ref else f"{'-':>14}"
            if ref is None and ref_env is not None:
                ref_text = f"{'(too slow)':>14}"
            ratio_text = f"{ratio:>6.2f}x" if ratio else f"{'-':>7}"
            print(f"{label(row):<28} {batch:>6} {ours.rate:>14,.0f} {ref_text} {ratio_text}",
                  flush=True)
            results.append({
                "game": row.name,
                "env": row.game,
                "options": row.options,
                "pgx_id": row.pgx_id if ref else None,
                "batch": batch,
                "ours_steps_per_s": ours.rate,
                "pgx_steps_per_s": ref.rate if ref else None,
                "ratio": ratio,
                "ours_all": ours.rates,
                "pgx_all": ref.rates if ref else None,
                "steps_per_call": batch * ours.length,
                "compile_s": {"ours": ours.compile_s, "pgx": ref.compile_s if ref else None},
            })
    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "backend": jax.default_backend(),
                "jax": jax.__version__,
                "pgx": pgx.__version__ if pgx else None,
                "picker": args.picker,
                "repeats": args.repeats,
                "rows": results,
            }, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
