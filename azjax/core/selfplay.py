"""Batched self-play: B games at once, S moves per call, finished games restart at once.

Each move is chosen by the search. For the first `temperature_moves` plies of a game the
move is sampled from the search policy (temperature 1), afterwards it is the search's
greedy choice, as in the AlphaZero paper. With probability `random_move_prob` the move
played is instead uniformly random among the legal ones (the position is still
recorded with the search policy), which widens the set of positions seen in training.

Playout cap randomisation (KataGo, `full_search_prob` < 1): that share of the moves gets
the full search and the others a cheap one of `cheap_simulations`; only the full
searches' policies become policy targets (every position keeps its value target), so
more games are played for the same time. At every move a fresh random subset of
`full_search_prob` x B games is searched in full and the rest cheaply, each set as one
batch: every move of every game has the same chance of a full search, whoever plays it,
and each move costs exactly the expected compute, with no branch on a drawn value
(training vmaps the iteration over runs, where such a branch would run both searches).
What a cheap move is, `cheap_moves`: 'value_rows' (azjax's first form) keeps the cheap
search's root noise and the move's sampling and exploration, and records the position for
the value head; 'katago' (KataGo's paper, section 3.1) searches cheap moves without root
noise, plays their greedy move, and records no training row for them
(`katago_rows` picks the rows the iteration writes).

Search-control restarts (Go-Exploit, Trudeau and Bowling 2023; `restart_prob` > 0): an
archive of `archive_size` states seen in self-play lives with the games; each position
played joins it with probability `archive_prob`, replacing a uniformly drawn entry, and a
new game starts from a uniformly drawn archived state with probability `restart_prob`.
Such a game's opening plies, sampled plies and resignation count from its restart, and its
positions train like any other (z is the restarted game's result).

Resignation (AlphaGo Zero, `resign_threshold` > -1): a player whose root value (its own
view) falls below the threshold resigns instead of moving, once its game is past the
random opening plies and the `temperature_moves` sampled ones (and, with playout cap
randomisation, only on a full search). The resigning position is recorded, the game
ends there as a loss for the resigner and its slot restarts. A share
`resign_playout_prob` of the games (drawn when each starts) never resigns: in those,
self-play notes the first player whose value fell below the threshold and, at the end,
whether that player in fact lost. The iteration's metrics `resign_checked` (such games)
and `false_resign` (those where that player won or drew) give the false-resignation rate
(`false_resignation_rate`), which AlphaGo Zero kept below 5% by moving the threshold.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import chex
import jax
import jax.numpy as jnp
from flax import struct

from azjax.core import replay as replay_lib
from azjax.core.fields import bounded, checked
from azjax.core.search import (
    SearchConfig,
    deterministic,
    greedy_action,
    masked_logits,
    root_value,
)
from envs import Env, State


@checked("selfplay.")
class SelfPlayConfig:
    """How self-play chooses and batches moves."""

    num_games: int = bounded(256, low=1)
    """Games played at once (B); each slot restarts a new game as soon as one ends."""
    steps_per_iteration: int = bounded(9, low=1)
    """Moves played in every slot per training iteration (S)."""
    temperature_moves: int = bounded(2, low=0)
    """Plies at the start of each game sampled from the search policy; greedy after."""
    random_move_prob: float = bounded(0.0, low=0, high=1)
    """Probability of playing a uniformly random legal move instead of the search's."""
    random_opening_moves: int = bounded(0, low=0)
    """Each new game opens with U{0..N} uniformly random plies (recorded like any other)."""
    full_search_prob: float = bounded(1.0, low=0, high=1)
    """Playout cap randomisation: the share of each move's games, drawn afresh every
    move, that get the full search and become policy targets; the others get a cheap
    search of `cheap_simulations` and train the value alone. 1: every move is searched
    in full. Times `num_games` it must be a whole number of games, at least one."""
    cheap_simulations: int = bounded(8, low=1)
    """Simulations of the cheap search (with `full_search_prob` < 1)."""
    cheap_moves: Literal["value_rows", "katago"] = "value_rows"
    """With `full_search_prob` < 1, what a cheap move is: 'value_rows' keeps its root
    noise, sampling and random moves and records the position to train the value head
    alone; 'katago' (KataGo's paper, section 3.1) searches it without root noise, plays
    its greedy move and records nothing."""
    restart_prob: float = bounded(0.0, low=0, high=1)
    """Search-control restarts (Go-Exploit): the chance that a new game starts from a
    state drawn from the archive of self-play states instead of the game's start (0: off)."""
    archive_size: int = bounded(64, low=1)
    """With restarts: the states the archive holds."""
    archive_prob: float = bounded(0.02, low=0, high=1)
    """With restarts: the chance that each position played joins the archive (replacing
    a uniformly drawn entry)."""
    resign_threshold: float = bounded(-1.0, low=-1, high=1)
    """A player resigns when its root value falls below this (in [-1, 1]; -1: never).
    Set it from the measured false-resignation rate (the metrics `false_resign` /
    `resign_checked`, pooled by `false_resignation_rate`): raise it while that rate
    stays well under 5%, lower it when the rate is above."""
    resign_playout_prob: float = bounded(0.1, low=0, high=1)
    """With resignation on: the share of games (drawn as each starts) played to the end
    with no resignation, in which false resignations are counted."""

    @property
    def restarts(self) -> bool:
        """Whether search-control restarts are on (`restart_prob` > 0)."""
        return self.restart_prob > 0.0

    @property
    def katago_cheap_moves(self) -> bool:
        """Whether cheap moves are KataGo's (playout cap randomisation with
        `cheap_moves='katago'`): no noise, greedy, no training row."""
        return self.full_search_prob < 1.0 and self.cheap_moves == "katago"

    @property
    def resigns(self) -> bool:
        """Whether resignation is on (`resign_threshold` > -1)."""
        return self.resign_threshold > -1.0

    def _check(self) -> None:
        """The rules that join settings (each field's own bounds are on the field)."""
        if self.full_search_prob < 1.0:
            full = self.full_search_prob * self.num_games
            if abs(full - round(full)) > 1e-9 or round(full) < 1:
                raise ValueError(
                    f"selfplay.full_search_prob x selfplay.num_games must be a whole "
                    f"number of fully searched games per move, at least 1, got "
                    f"{self.full_search_prob:g} x {self.num_games} = {full:g}")

    @property
    def full_search_games(self) -> int:
        """Games searched in full at each move (all B without playout cap randomisation)."""
        return round(self.full_search_prob * self.num_games)


@struct.dataclass
class Games:
    """The live self-play games [B] and how many random opening plies each one gets."""

    state: State  # [B]
    opening_length: chex.Array  # [B] int32
    # Resignation only (None without): the game is played to the end, no one resigns
    no_resign: chex.Array | None = None  # [B] bool
    # and the first player whose value fell below the threshold in it (-1: none yet).
    would_resign: chex.Array | None = None  # [B] int32
    # Restarts only (None without): the ply each game started at (0, or its archived
    # state's), the archive [K] of states seen in self-play and which of its entries
    # hold one. The archive is not per game: `per_game` leaves it out.
    start_ply: chex.Array | None = None  # [B] int32
    archive: State | None = None  # [K]
    archived: chex.Array | None = None  # [K] bool

    def per_game(self) -> Games:
        """These games without the archive (every field of leading axis B)."""
        return self.replace(archive=None, archived=None)


@struct.dataclass
class Trajectory:
    """What S moves of B slots produced (leading axes [S, B])."""

    positions: replay_lib.Positions
    ended: chex.Array  # [S, B] bool: the move ended its game
    outcome: chex.Array  # [S, B] float32: the ended game's result for player 0
    game_length: chex.Array  # [S, B] int32: plies of the ended game
    # name -> [S, B, ...]: the ended game's auxiliary targets (`make_play_fn`'s finals),
    # with resignation also 'has_final' (False: it ended by resignation, no final state)
    final: dict = dataclasses.field(default_factory=dict)
    # Resignation only, [S, B] bool: the move ended its game by resignation; a no-resign
    # game ended in which some player would have resigned; and that player did not lose.
    resigned: chex.Array | None = None
    resign_checked: chex.Array | None = None
    false_resign: chex.Array | None = None
    # Tree reuse only, [S, B] float32: the share of the search's root visits that the
    # kept tree brought (inherited / (inherited + num_simulations)).
    reused: chex.Array | None = None
    # Restarts only, [S, B] bool: the game that begins after the move (its slot's next)
    # starts from an archived state.
    restarted: chex.Array | None = None


def tree_select(mask: chex.Array, on_true, on_false):
    """Per-example `where` over batched pytrees.

    Args:
      mask: (B,) bool: which examples come from `on_true`.
      on_true: a pytree of (B, ...) arrays.
      on_false: a pytree of the same structure and shapes.

    Returns:
      The pytree whose example b is `on_true`'s where `mask[b]`, else `on_false`'s.
    """

    def select(a, b):
        m = mask.reshape(mask.shape + (1,) * (a.ndim - 1))
        return jnp.where(m, a, b)

    return jax.tree.map(select, on_true, on_false)


def init_games(env: Env, key: chex.PRNGKey, config: SelfPlayConfig) -> Games:
    """`config.num_games` fresh games, each with its number of random opening plies.

    Args:
      env: the game.
      key: PRNG key (consumed).
      config: the self-play settings (B = `num_games`).

    Returns:
      `Games` of batch (B,): states from `env.init`, `opening_length` (B,) int32 drawn
      uniformly from 0..`random_opening_moves`; with resignation on, `no_resign` (B,)
      bool and `would_resign` (B,) int32 (-1); with restarts, `start_ply` (B,) int32 (0)
      and an empty archive of `archive_size` states.
    """
    games = new_games(env, key, config)
    if not config.restarts:
        return games
    size = config.archive_size
    # Placeholders until states join: every entry a copy of the first game's start.
    archive = jax.tree.map(lambda x: jnp.repeat(x[:1], size, axis=0), games.state)
    return games.replace(archive=archive, archived=jnp.zeros(size, jnp.bool_))


def new_games(env: Env, key: chex.PRNGKey, config: SelfPlayConfig) -> Games:
    """`init_games` without the archive: the per-game fields of B new games.

    Args:
      env: the game.
      key: PRNG key (consumed).
      config: the self-play settings.

    Returns:
      `Games` of batch (B,) with `archive` None (`start_ply` 0 with restarts).
    """
    # (JAX's threefry keys split prefix-stably: the first two keys are those of a split
    # in two, so resignation leaves the games' other draws as they were.)
    keys = jax.random.split(key, 3 if config.resigns else 2)
    num_games = config.num_games
    games = Games(
        state=jax.vmap(env.init)(jax.random.split(keys[0], num_games)),
        opening_length=jax.random.randint(
            keys[1], (num_games,), 0, config.random_opening_moves + 1
        ),
        start_ply=jnp.zeros(num_games, jnp.int32) if config.restarts else None,
    )
    if not config.resigns:
        return games
    return games.replace(
        no_resign=jax.random.uniform(keys[2], (num_games,)) < config.resign_playout_prob,
        would_resign=jnp.full(num_games, -1, jnp.int32),
    )


def restart_from_archive(games: Games, archive: State, archived: chex.Array,
                         key: chex.PRNGKey, config: SelfPlayConfig
                         ) -> tuple[Games, chex.Array]:
    """New games, each started from a uniformly drawn archived state with probability
    `config.restart_prob` (while the archive holds any).

    Args:
      games: B new games (`new_games`).
      archive: [K] archived states.
      archived: (K,) bool: which entries hold a state.
      key: PRNG key (consumed).
      config: the self-play settings (`restart_prob`).

    Returns:
      (games with the restarted ones' states and `start_ply` replaced, (B,) bool: which
      games restart).
    """
    chex.assert_rank(archived, 1)
    coin_key, pick_key = jax.random.split(key)
    num_games = games.opening_length.shape[0]
    restart = (jax.random.uniform(coin_key, (num_games,)) < config.restart_prob) & jnp.any(
        archived)
    logits = jnp.where(archived, 0.0, -jnp.inf)
    logits = jnp.where(jnp.any(archived), logits, 0.0)  # nothing to draw: unused anyway
    picked = jax.random.categorical(pick_key, logits, shape=(num_games,))
    drawn = jax.tree.map(lambda x: x[picked], archive)
    state = tree_select(restart, drawn, games.state)
    return games.replace(state=state, start_ply=jnp.where(
        restart, state.step_count, games.start_ply).astype(jnp.int32)), restart


def archived_after(archive: State, archived: chex.Array, states: State,
                   key: chex.PRNGKey, config: SelfPlayConfig) -> tuple[State, chex.Array]:
    """The archive after each of `states` joined it with probability `archive_prob`.

    Each joining state replaces a uniformly drawn entry (where two draw the same entry,
    one of them is kept).

    Args:
      archive: [K] archived states.
      archived: (K,) bool: which entries hold a state.
      states: [B] live states just played from.
      key: PRNG key (consumed).
      config: the self-play settings (`archive_prob`).

    Returns:
      (archive, archived) updated.
    """
    coin_key, entry_key = jax.random.split(key)
    size = archived.shape[0]
    num_games = states.step_count.shape[0]
    joins = jax.random.uniform(coin_key, (num_games,)) < config.archive_prob
    entry = jnp.where(joins, jax.random.randint(entry_key, (num_games,), 0, size), size)
    archive = jax.tree.map(lambda buf, new: buf.at[entry].set(new, mode="drop"), archive,
                           states)
    return archive, archived.at[entry].set(True, mode="drop")


def cheap_search_config(search_config: SearchConfig, config: SelfPlayConfig) -> SearchConfig:
    """The search of playout cap randomisation's cheap moves.

    Gumbel considers at most as many actions as it has simulations, so
    `max_num_considered_actions` is capped at `config.cheap_simulations`.

    Args:
      search_config: the full search's settings.
      config: the self-play settings (`cheap_simulations`).

    Returns:
      `search_config` with `config.cheap_simulations` simulations.
    """
    sims = config.cheap_simulations
    return dataclasses.replace(
        search_config, num_simulations=sims,
        max_num_considered_actions=min(search_config.max_num_considered_actions, sims))


def _split_full_and_cheap(key: chex.PRNGKey, config: SelfPlayConfig
                         ) -> tuple[chex.Array, chex.Array]:
    """A uniformly random split of the B games into those searched in full and the rest.

    Args:
      key: consumed.
      config: `num_games` (B) and `full_search_prob` (F = `full_search_games` of B).

    Returns:
      (full [F] int32, cheap [B - F] int32): disjoint game indices covering 0..B-1.
    """
    order = jax.random.permutation(key, config.num_games).astype(jnp.int32)
    return order[:config.full_search_games], order[config.full_search_games:]


def katago_rows(positions: replay_lib.Positions, config: SelfPlayConfig
                ) -> replay_lib.Positions:
    """The positions KataGo's playout cap randomisation trains on: the full searches'.

    Every move searches exactly `full_search_games` games in full, so the rows kept are
    a static number, in the order played.

    Args:
      positions: (S * B, ...) positions of one call, time-major, with `full_search`.
      config: the self-play settings (S, B and `full_search_prob`).

    Returns:
      (S * F, ...) positions, `full_search` None (every row is a policy target).
    """
    chex.assert_shape(positions.full_search,
                      (config.steps_per_iteration * config.num_games,))
    rows = config.steps_per_iteration * config.full_search_games
    (keep,) = jnp.nonzero(positions.full_search, size=rows)
    return jax.tree.map(lambda x: x[keep], positions.replace(full_search=None))


def make_play_fn(env: Env, search_fn, search_config: SearchConfig, config: SelfPlayConfig,
                 cheap_search_fn=None, finals: dict | None = None, empty_trees=None,
                 record_states: bool = False):
    """Self-play of B games at once, S moves per call, in one compiled program.

    Games that end are replaced by new ones in their slot, so every call returns live
    games and the batch never shrinks.

    Args:
      env: the game.
      search_fn: `azjax.core.search.make_search_fn(env, apply_fn, search_config)`.
      search_config: the settings `search_fn` was built with.
      config: the self-play settings (B = `num_games`, S = `steps_per_iteration`).
      cheap_search_fn: with `config.full_search_prob` < 1, the same built from
        `cheap_search_config`; positions then record `full_search`.
      finals: names of `Positions`' auxiliary fields -> functions of one state
        (`Env.ownership`, `Env.score_margin`), recorded at every game end; with
        resignation positions also get `has_final` (False for games that ended by
        resignation, whose auxiliary targets are unknown).
      empty_trees: with `search_config.reuse_tree`, `empty_trees(params, states (B,))
        -> KeptTree` (`azjax.core.tree_reuse.empty_kept`), and `search_fn` is then
        `make_reusing_search_fn`'s: each game's search starts from the subtree its last
        search kept. Trees live within one call (the parameters change between calls)
        and a game's tree is dropped when it ends.
      record_states: positions also record the state they were played from
        (`Positions.state`, for reanalysis).

    Returns:
      `play(params, search, key, games) -> (games, Trajectory)`: `search` is the
      `SearchConfig` the search is called with (traced settings as arrays), `key` is
      consumed, `games` are B live `Games`; the `Trajectory` has leading axes (S, B), e.g.
      `positions.observation` (S, B, *observation_shape) and `ended` (S, B) bool.
    """
    num_games = config.num_games
    slots = jnp.arange(num_games, dtype=jnp.int32)
    capped = config.full_search_prob < 1.0
    if capped and cheap_search_fn is None:
        raise ValueError("selfplay.full_search_prob < 1 needs the cheap search")
    reusing = search_config.reuse_tree
    if reusing and (capped or empty_trees is None):
        raise ValueError("search.reuse_tree needs empty_trees and selfplay.full_search_prob 1")
    cheap_config = cheap_search_config(search_config, config)
    katago = config.katago_cheap_moves
    finals = finals or {}
    resigns = config.resigns
    restarts = config.restarts

    final_shapes = jax.eval_shape(
        lambda key: {name: fn(env.init(key)) for name, fn in finals.items()},
        jax.random.key(0))

    def summarised(settings, output, tie_key):
        return (output.action_weights, greedy_action(settings, output, tie_key),
                root_value(output))

    def searched(fn, settings, params, search, key, states):
        search_key, tie_key = jax.random.split(key)
        return summarised(settings, fn(params, search, search_key, states), tie_key)

    def capped_search(params, search, key, states):
        split_key, full_key, cheap_key = jax.random.split(key, 3)
        full_games, cheap_games = _split_full_and_cheap(split_key, config)
        pick = lambda games: jax.tree.map(lambda x: x[games], states)
        # KataGo's cheap moves search without root noise.
        cheap_settings = deterministic(search) if katago else search
        outputs = (searched(search_fn, search_config, params, search, full_key,
                            pick(full_games)),
                   searched(cheap_search_fn, cheap_config, params, cheap_settings,
                            cheap_key, pick(cheap_games)))
        # Each game's results back in its slot.
        slot_of = jnp.argsort(jnp.concatenate([full_games, cheap_games]))
        pi, greedy, value = (jnp.concatenate(parts)[slot_of] for parts in zip(*outputs))
        return pi, greedy, value, slot_of < config.full_search_games

    def reusing_search(params, search, key, states, kept):
        search_key, tie_key = jax.random.split(key)
        found = search_fn(params, search, search_key, states, kept)
        return (*summarised(search_config, found.output, tie_key), found.kept, found.share)

    def one_move(carry, key):
        params, search, games, kept = carry
        states = games.state
        keys = jax.random.split(key, 6 if restarts else 5)
        search_key, sample_key, random_key, coin_key, reset_key = keys[:5]
        # The game's own plies: from its restart with restarts, else from its start.
        ply = states.step_count - games.start_ply if restarts else states.step_count
        if capped:
            pi, greedy, value, full = capped_search(params, search, search_key, states)
        elif reusing:
            pi, greedy, value, kept, reused = reusing_search(params, search, search_key,
                                                             states, kept)
            full = True
        else:
            pi, greedy, value = searched(search_fn, search_config, params, search,
                                         search_key, states)
            full = True
        legal = states.legal_action_mask
        sampled = jax.random.categorical(sample_key, masked_logits(jnp.log(pi), pi > 0))
        sampling = ply < config.temperature_moves
        random_move = jax.random.uniform(coin_key, (num_games,)) < config.random_move_prob
        if katago:  # a cheap move is the noiseless search's greedy one
            sampling = sampling & full
            random_move = random_move & full
        chosen = jnp.where(sampling, sampled, greedy)
        uniform = jax.random.categorical(random_key, masked_logits(jnp.zeros_like(pi), legal))
        explore = (ply < games.opening_length) | random_move
        action = jnp.where(explore, uniform, chosen).astype(jnp.int32)

        next_states = jax.vmap(env.step)(states, action)
        positions = replay_lib.Positions(
            observation=states.observation,
            policy=pi,
            player=states.current_player,
            search_value=value,
            z=states.step_count.astype(jnp.float32),  # the ply, until the game ends
            has_z=jnp.zeros(num_games, jnp.bool_),
            slot=slots,
            **{name: jnp.zeros((num_games, *x.shape), x.dtype)
               for name, x in final_shapes.items()},
            full_search=full if capped else None,
            has_final=jnp.zeros(num_games, jnp.bool_) if finals and resigns else None,
            state=states if record_states else None,
        )
        step = Trajectory(
            positions=positions,
            ended=next_states.terminated,
            outcome=next_states.rewards[:, 0],
            game_length=next_states.step_count,
            final={name: jax.vmap(fn)(next_states) for name, fn in finals.items()},
            reused=reused if reusing else None,
        )
        if resigns:
            step, games = resign_step(config, games, value, full, step, ply)
        fresh = new_games(env, reset_key, config)
        if restarts:
            restart_key, archive_key = jax.random.split(keys[5])
            fresh, restarted = restart_from_archive(fresh, games.archive, games.archived,
                                                    restart_key, config)
            step = step.replace(restarted=step.ended & restarted)
            archive, archived = archived_after(games.archive, games.archived, states,
                                               archive_key, config)
        games = tree_select(step.ended, fresh,
                            games.per_game().replace(state=next_states))
        if restarts:
            games = games.replace(archive=archive, archived=archived)
        if reusing:  # a finished game's tree is not the next game's
            kept = kept.replace(nodes=jnp.where(step.ended, 0, kept.nodes))
        return (params, search, games, kept), step

    def play(params, search: SearchConfig, key: chex.PRNGKey, games: Games):
        keys = jax.random.split(key, config.steps_per_iteration)
        kept = empty_trees(params, games.state) if reusing else None
        (_, _, games, _), trajectory = jax.lax.scan(one_move, (params, search, games, kept),
                                                    keys)
        return games, trajectory

    return play


def resign_step(config: SelfPlayConfig, games: Games, value: chex.Array,
                full: chex.Array | bool, step: Trajectory,
                ply: chex.Array | None = None) -> tuple[Trajectory, Games]:
    """Resignation in one move of `games`, decided before the move.

    The resigning games end now, lost by the mover, at the plies played; the no-resign
    games note their first would-be resigner and, as they end, whether it did not lose
    (the false-resignation check).

    Args:
      config: the self-play settings (`resign_threshold`).
      games: the B games before the move.
      value: (B,) float32: the search's root value, from the mover's point of view.
      full: (B,) bool (or a Python bool): which games the move searched in full; only
        those may resign.
      step: the move's `Trajectory` slice, leading axis (B,).
      ply: (B,) int32: the games' own plies (from their restarts); None: their states'
        `step_count`.

    Returns:
      (step with resignations ended, games with `would_resign` updated).
    """
    chex.assert_shape(value, games.opening_length.shape)
    states = games.state
    mover = states.current_player
    ply = states.step_count if ply is None else ply
    eligible = ply >= jnp.maximum(games.opening_length, config.temperature_moves)
    below = eligible & full & (value < config.resign_threshold)
    resign = below & ~games.no_resign
    first = jnp.where((games.would_resign < 0) & below, mover, games.would_resign)
    outcome = jnp.where(resign, jnp.where(mover == 0, -1.0, 1.0), step.outcome)
    ended = step.ended | resign
    checked = ended & games.no_resign & (first >= 0)
    final = dict(step.final)
    if final:
        final["has_final"] = ~resign
    step = step.replace(
        ended=ended, outcome=outcome,
        game_length=jnp.where(resign, states.step_count, step.game_length),
        final=final, resigned=resign, resign_checked=checked,
        false_resign=checked & (jnp.where(first == 0, outcome, -outcome) >= 0),
    )
    return step, games.replace(would_resign=first)


def false_resignation_rate(records) -> tuple[float, int]:
    """The false-resignation rate pooled over metrics records.

    Args:
      records: dicts such as the lines of a run's metrics.jsonl; those without
        `false_resign` and `resign_checked` are skipped.

    Returns:
      (sum of `false_resign` / sum of `resign_checked`, that sum of checked games); the
      rate is NaN with no checked game.
    """
    checked = false = 0
    for record in records:
        if "resign_checked" in record:
            checked += int(record["resign_checked"])
            false += int(record.get("false_resign", 0))
    return (false / checked if checked else float("nan")), checked
