"""Batched self-play: B games at once, S moves per call, finished games restart at once.

Each move is chosen by the search. For the first `temperature_moves` plies of a game the
move is sampled from the search policy (temperature 1), afterwards it is the search's
greedy choice, as in the AlphaZero paper. With probability `random_move_prob` the move
played is instead uniformly random among the legal ones (the position is still
recorded with the search policy), which widens the set of positions seen in training.
"""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
from flax import struct

from azjax.core import replay as replay_lib
from azjax.core.fields import check_setting
from azjax.core.search import SearchConfig, greedy_action, masked_logits, root_value
from envs import Env, State


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """How self-play chooses and batches moves."""

    num_games: int = 256
    """Games played at once (B); each slot restarts a new game as soon as one ends."""
    steps_per_iteration: int = 9
    """Moves played in every slot per training iteration (S)."""
    temperature_moves: int = 2
    """Plies at the start of each game sampled from the search policy; greedy after."""
    random_move_prob: float = 0.0
    """Probability of playing a uniformly random legal move instead of the search's."""
    random_opening_moves: int = 0
    """Each new game opens with U{0..N} uniformly random plies (recorded like any other)."""

    def validate(self) -> None:
        """Raises ValueError for settings that cannot run."""
        check_setting("selfplay.num_games", self.num_games, int, 1)
        check_setting("selfplay.steps_per_iteration", self.steps_per_iteration, int, 1)
        check_setting("selfplay.temperature_moves", self.temperature_moves, int, 0)
        check_setting("selfplay.random_opening_moves", self.random_opening_moves, int, 0)
        check_setting("selfplay.random_move_prob", self.random_move_prob, float, 0, 1)


@struct.dataclass
class Games:
    """The live self-play games [B] and how many random opening plies each one gets."""

    state: State  # [B]
    opening_length: chex.Array  # [B] int32


@struct.dataclass
class Trajectory:
    """What S moves of B slots produced (leading axes [S, B])."""

    positions: replay_lib.Positions
    ended: chex.Array  # [S, B] bool: the move ended its game
    outcome: chex.Array  # [S, B] float32: the ended game's result for player 0
    game_length: chex.Array  # [S, B] int32: plies of the ended game


def tree_select(mask: chex.Array, on_true, on_false):
    """Per-example `where` over batched pytrees: mask [B] selects along axis 0."""

    def select(a, b):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(m, a, b)

    return jax.tree.map(select, on_true, on_false)


def init_games(env: Env, key: chex.PRNGKey, config: SelfPlayConfig) -> Games:
    """`config.num_games` fresh games [B]."""
    state_key, opening_key = jax.random.split(key)
    num_games = config.num_games
    return Games(
        state=jax.vmap(env.init)(jax.random.split(state_key, num_games)),
        opening_length=jax.random.randint(
            opening_key, (num_games,), 0, config.random_opening_moves + 1
        ),
    )


def make_play_fn(env: Env, search_fn, search_config: SearchConfig, config: SelfPlayConfig):
    """Returns `play(params, search, key, games) -> (games, Trajectory)`.

    `search_fn` is `azjax.core.search.make_search_fn(env, apply_fn, search_config)` and
    `search` the `SearchConfig` it is called with (traced settings as arrays). `games`
    [B] are live; the returned ones are live too (ended games were replaced by new
    ones). The key is consumed.
    """
    config.validate()
    num_games = config.num_games
    slots = jnp.arange(num_games, dtype=jnp.int32)

    def one_move(carry, key):
        params, search, games = carry
        states = games.state
        search_key, sample_key, random_key, coin_key, reset_key = jax.random.split(key, 5)
        output = search_fn(params, search, search_key, states)
        pi = output.action_weights
        legal = states.legal_action_mask
        sampled = jax.random.categorical(sample_key, masked_logits(jnp.log(pi), pi > 0))
        chosen = jnp.where(
            states.step_count < config.temperature_moves,
            sampled,
            greedy_action(search_config, output),
        )
        uniform = jax.random.categorical(random_key, masked_logits(jnp.zeros_like(pi), legal))
        explore = (states.step_count < games.opening_length) | (
            jax.random.uniform(coin_key, (num_games,)) < config.random_move_prob
        )
        action = jnp.where(explore, uniform, chosen).astype(jnp.int32)

        next_states = jax.vmap(env.step)(states, action)
        positions = replay_lib.Positions(
            observation=states.observation,
            policy=pi,
            player=states.current_player,
            search_value=root_value(output),
            z=states.step_count.astype(jnp.float32),  # the ply, until the game ends
            has_z=jnp.zeros(num_games, jnp.bool_),
            slot=slots,
        )
        ended = next_states.terminated
        step = Trajectory(
            positions=positions,
            ended=ended,
            outcome=next_states.rewards[:, 0],
            game_length=next_states.step_count,
        )
        fresh = init_games(env, reset_key, config)
        games = tree_select(ended, fresh, games.replace(state=next_states))
        return (params, search, games), step

    def play(params, search: SearchConfig, key: chex.PRNGKey, games: Games):
        keys = jax.random.split(key, config.steps_per_iteration)
        (_, _, games), trajectory = jax.lax.scan(one_move, (params, search, games), keys)
        return games, trajectory

    return play


def assign_outcomes(trajectory: Trajectory, discount: float = 1.0
                    ) -> tuple[replay_lib.Positions, chex.Array, chex.Array, chex.Array]:
    """Labels each position with its game's outcome where that game ended in the window.

    A position written while its game goes on carries its ply in `z` (`has_z` False);
    once the game has ended, z is the result from the mover's view discounted by the plies
    from the position to the end (`replay_lib.discounted`). Returns (positions flattened
    time-major to [S*B], first_end [B], first_outcome [B], first_length [B]):
    `first_end[b]` says slot b finished a game in this window; `first_outcome[b]` (for
    player 0) and `first_length[b]` (plies) are those of the first such game, which is the
    game any positions of slot b still pending from earlier windows belong to.
    """
    positions = trajectory.positions
    num_games = trajectory.ended.shape[1]

    def backward(carry, step):
        has_end, outcome, length = carry
        ended, step_outcome, step_length = step
        has_end = has_end | ended
        outcome = jnp.where(ended, step_outcome, outcome)
        length = jnp.where(ended, step_length, length)
        return (has_end, outcome, length), (has_end, outcome, length)

    init = (jnp.zeros(num_games, jnp.bool_), jnp.zeros(num_games, jnp.float32),
            jnp.zeros(num_games, jnp.int32))
    (first_end, first_outcome, first_length), (has_z, outcome_p0, length) = jax.lax.scan(
        backward, init, (trajectory.ended, trajectory.outcome, trajectory.game_length),
        reverse=True,
    )
    z = replay_lib.discounted(outcome_p0, positions.player, length, positions.z, discount)
    positions = positions.replace(z=jnp.where(has_z, z, positions.z), has_z=has_z)
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), positions)
    return flat, first_end, first_outcome, first_length
