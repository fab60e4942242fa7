"""Self-play throughput at the tic-tac-toe defaults: positions/s and simulations/s.

Measures (compilation excluded, `block_until_ready`, median of repeats):
  * self-play alone (search + env step + auto-reset, S moves x B games per call),
  * the whole training iteration (self-play + replay + gradient steps), alone and as the
    driver runs it (`azjax.driver.driver.group_step`: vmapped over a stack of one experiment),
and, as the in-run reference, the same self-play with pgx's tic-tac-toe as the game
(same mctx search, same network), when pgx is installed (`pip install -e ".[bench]"`).

    python benchmarks/selfplay_throughput.py [--repeats 5]

`--quick`: at `benchmarks/_quick.py`'s sizes, one timed call each, in seconds (to check
the script end to end; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _quick  # noqa: E402

import envs  # noqa: E402
from azjax.core.iteration import init_train_state, make_iteration_fn  # noqa: E402
from azjax.core.networks import make_network  # noqa: E402
from azjax.core.search import make_search_fn  # noqa: E402
from azjax.core.selfplay import init_games, make_play_fn  # noqa: E402
from azjax.driver.driver import group_step, stack  # noqa: E402
from azjax.run.recipes import recipe  # noqa: E402


def timed(fn, args, repeats):
    out = fn(*args)
    jax.block_until_ready(out)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@struct.dataclass
class PgxState(envs.State):
    """Our State fields over a pgx state (the pgx state does the work)."""

    inner: Any = None


class PgxTicTacToe(envs.Env):
    """pgx's tic-tac-toe behind our protocol (reference only; observation padded to 3 planes)."""

    name = "pgx_tictactoe"
    num_actions = 9
    observation_shape = (3, 3, 3)

    def __init__(self):
        import pgx

        self._env = pgx.make("tic_tac_toe")

    def _wrap(self, s):
        side = jnp.broadcast_to(s.current_player == 0, (3, 3, 1))
        return PgxState(
            current_player=s.current_player,
            observation=jnp.concatenate([s.observation, side], axis=-1),
            legal_action_mask=s.legal_action_mask,
            rewards=s.rewards,
            terminated=s.terminated,
            step_count=s._step_count,
            inner=s,
        )

    def init(self, key):
        return self._wrap(self._env.init(key))

    def step(self, state, action):
        return self._wrap(self._env.step(state.inner, action))

    def _init(self, key):
        raise NotImplementedError

    def _step(self, state, action):
        raise NotImplementedError

    symmetries = property(lambda self: envs.make("tictactoe").symmetries)

    def transform_state(self, state, g):
        raise NotImplementedError

    def render(self, state):
        return ""


def selfplay_rate(env, config, repeats):
    net = make_network(env, config.network)
    search_fn = make_search_fn(env, net.apply, config.search)
    play = jax.jit(make_play_fn(env, search_fn, config.search, config.selfplay))
    games = init_games(env, jax.random.key(0), config.selfplay)
    params = net.init(jax.random.key(1), games.state.observation[:1])
    seconds = timed(play, (params, config.search.as_arrays(), jax.random.key(2), games), repeats)
    positions = config.positions_per_iteration
    return positions / seconds, positions * config.search.num_simulations / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = _quick.parse(parser, repeats=1)
    config = recipe("tictactoe", "cpu")
    config = (_quick.shrink(config) if args.quick else config).program
    env = envs.make("tictactoe")
    print(f"backend {jax.default_backend()}, devices {jax.devices()}")
    print(
        f"defaults: {config.selfplay.num_games} games x {config.selfplay.steps_per_iteration} "
        f"moves, {config.search.policy} {config.search.num_simulations} simulations, "
        f"{config.gradient_steps} gradient steps of {config.learner.batch_size}"
    )
    pos, sims = selfplay_rate(env, config, args.repeats)
    print(f"self-play (azjax tictactoe):  {pos:>10,.0f} positions/s  {sims:>12,.0f} simulations/s")
    try:
        ref_pos, ref_sims = selfplay_rate(PgxTicTacToe(), config, args.repeats)
        print(
            f"self-play (pgx tic_tac_toe): {ref_pos:>10,.0f} positions/s  {ref_sims:>12,.0f} "
            f"simulations/s   ratio azjax/pgx {pos / ref_pos:.2f}"
        )
    except ImportError:
        print("pgx not installed: no reference (pip install -e '.[bench]')")

    iteration = jax.jit(make_iteration_fn(env, config))
    state = init_train_state(env, config, jax.random.key(0))
    seconds = timed(lambda s: iteration(s)[1], (state,), args.repeats)
    print(
        f"full iteration: {seconds * 1000:.0f} ms, "
        f"{config.positions_per_iteration / seconds:,.0f} positions/s "
        f"(self-play share {config.positions_per_iteration / pos / seconds:.0%})"
    )
    # The driver's step donates its state: feed each call the state the last one returned.
    step, active = group_step(env, config, 1), jnp.ones(1, bool)
    carry = [stack([init_train_state(env, config, jax.random.key(0))])]

    def driver_step():
        carry[0], metrics = step(carry[0], active)
        return metrics

    driver = timed(driver_step, (), args.repeats)
    print(f"driver step (E = 1, vmapped): {driver * 1000:.0f} ms, ratio to the plain "
          f"iteration {driver / seconds:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
