"""One AlphaZero training iteration as one pure function (jitted once by the caller).

iteration(train_state) -> (train_state, metrics):
  self-play S moves in B slots -> label finished games -> write replay -> (reanalyse
  stored positions) -> K gradient steps.
No host sync happens inside; metrics are device scalars reduced inside the program.

Split over N devices (`make_iteration_fn(..., devices=N)`, run under `shard_map`), each
device plays B/N of the games into its own ring of capacity/N (block d of the ring holds
the positions of block d of the games) and samples batch/N positions from it; gradients,
loss terms and metrics are averaged or summed over the devices, so the replicated
parameters stay equal. Each device samples uniformly from its own ring; the rings fill
at the same rate, so every position in the buffer has the same chance as with one ring.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.flatten_util import ravel_pytree

from azjax.core import counters
from azjax.core import replay as replay_lib
from azjax.core.device_split import per_device
from azjax.core.game_hooks import board_cells
from azjax.core.identity import Identity
from azjax.core.learner import alphazero_loss, auxiliary_losses, score_value_target
from azjax.core.networks import init_params, make_network, observation_dtype
from azjax.core.outcomes import assign_outcomes, first_finals
from azjax.core.program import ProgramConfig, auxiliary_targets
from azjax.core.reanalyse import pick_rows, refreshed
from azjax.core.search import SearchConfig, make_search_fn
from azjax.core.selfplay import (
    Games,
    cheap_search_config,
    init_games,
    katago_rows,
    make_play_fn,
)
from azjax.core.tree_reuse import empty_kept, make_reusing_search_fn
from envs import Env

DATA_AXIS = "data"
"""The mesh axis the iteration splits its games, replay ring and batch over."""


@struct.dataclass
class TrainState:
    """Everything a run carries from one iteration to the next (one pytree)."""

    params: chex.ArrayTree
    opt_state: chex.ArrayTree  # the learning rate (traced) lives in here
    search_params: SearchConfig  # the search's traced settings, as [] float32 arrays
    replay: replay_lib.ReplayState
    selfplay: Games  # [B] live self-play games
    key: chex.PRNGKey
    iteration: counters.Count  # iterations done
    games: counters.Count  # self-play games finished
    positions: counters.Count  # self-play positions played
    # Gating regime only (None otherwise): the network self-play uses, and its iteration.
    best_params: chex.ArrayTree | None = None
    best_iteration: counters.Count | None = None


def init_train_state(env: Env, config: ProgramConfig, key: chex.PRNGKey) -> TrainState:
    """A fresh run: random network, empty replay, new games.

    Built by one jitted program (run op by op, each of its hundreds of small ops would
    be compiled on its own, a large share of a short run's start), compiled once per env
    object and compiled settings: the traced ones (learning rate, search constants) are
    its arguments, so the runs of a group or a sweep, which differ only in those and
    their seeds, share it.

    Args:
      env: the game.
      config: the program, checked against `env` by the caller (`ProgramConfig.check`;
        a training run's preflight checks it once, `azjax.driver.preflight`).
      key: PRNG key (consumed).

    Returns:
      The `TrainState` of iteration 0.
    """
    return _fresh_state_program(env, config)(key, config.search, config.learner)


_FRESH_PROGRAMS: dict[tuple[Identity, str], Callable] = {}


def _fresh_state_program(env: Env, config: ProgramConfig) -> Callable:
    static = dataclasses.replace(config, search=jax.tree.map(lambda _: None, config.search),
                                 learner=jax.tree.map(lambda _: None, config.learner))
    key = (Identity(env), repr(static))
    program = _FRESH_PROGRAMS.get(key)
    if program is None:
        if len(_FRESH_PROGRAMS) >= 8:  # the oldest goes: a process rarely holds more
            _FRESH_PROGRAMS.pop(next(iter(_FRESH_PROGRAMS)))

        def fresh(run_key, search, learner):
            settings = dataclasses.replace(config, search=search, learner=learner)
            return _fresh_state(env, settings, run_key)

        program = _FRESH_PROGRAMS[key] = jax.jit(fresh)
    return program


def _fresh_state(env: Env, config: ProgramConfig, key: chex.PRNGKey) -> TrainState:
    init_key, games_key, run_key = jax.random.split(key, 3)
    params = init_params(env, config.network, init_key)
    games = init_games(env, games_key, config.selfplay)
    selfplay = config.selfplay
    return TrainState(
        params=params,
        opt_state=config.learner.optimizer().init(params),
        search_params=config.search.as_arrays(),
        replay=replay_lib.init(
            config.replay_capacity, env.observation_shape, env.num_actions,
            observation_dtype(env),
            ownership_cells=board_cells(env) if config.network.ownership_head else 0,
            score=config.keeps_score,
            full_search=selfplay.full_search_prob < 1.0 and not selfplay.katago_cheap_moves,
            has_final=config.selfplay.resigns and bool(
                config.network.ownership_head or config.keeps_score),
            state=(jax.tree.map(lambda x: x[0], games.state)
                   if config.reanalyse_positions else None),
        ),
        selfplay=games,
        key=run_key,
        iteration=counters.zero(),
        games=counters.zero(),
        positions=counters.zero(),
        best_params=jax.tree.map(jnp.copy, params) if config.regime == "gating" else None,
        best_iteration=counters.zero() if config.regime == "gating" else None,
    )


def device_key(key: chex.PRNGKey, devices: int) -> chex.PRNGKey:
    """This device's own key from a key every device holds.

    Each device's games and samples must differ from the others', so the key is folded
    with the device's index along `DATA_AXIS` (call it under `shard_map`).

    Args:
      key: a PRNG key replicated on every device.
      devices: the number of devices; with one, `key` itself.

    Returns:
      A PRNG key.
    """
    return jax.random.fold_in(key, jax.lax.axis_index(DATA_AXIS)) if devices > 1 else key


def make_iteration_fn(env: Env, config: ProgramConfig, devices: int = 1) -> Callable:
    """One training iteration (self-play, replay, gradient steps) as one pure function.

    Args:
      env: the game.
      config: the program, checked against `env` by the caller (`ProgramConfig.check`;
        a training run's preflight checks it once, `azjax.driver.preflight`).
      devices: with more than one, the function is one device's part of the iteration,
        to run under `shard_map` over `DATA_AXIS`: its state holds that device's share of
        the games and the replay ring, and the gradients are averaged by one all-reduce.

    Returns:
      `iteration(train_state) -> (train_state, metrics)`: metrics are () device scalars
      by name (self-play outcome shares, game lengths, replay fill and, with gradient
      steps, the loss terms averaged over the iteration's steps).
    """
    positions_per_iteration = config.positions_per_iteration
    config = per_device(config, devices)
    split = devices > 1

    def total(x):
        return jax.lax.psum(x, DATA_AXIS) if split else x

    def mean(tree):
        if not split:
            return tree
        flat, unflatten = ravel_pytree(tree)  # one all-reduce, not one per leaf
        return unflatten(jax.lax.pmean(flat, DATA_AXIS))

    net = make_network(env, config.network)
    # Self-play only runs the network forward: with 'auto' convolutions, XLA's on a CPU,
    # whose forward pass is the faster there (docs/results.md#where-an-iterations-time-goes).
    search_net = make_network(env, config.network, gradients=False)
    empty_trees = None
    if config.search.reuse_tree:
        search_fn = make_reusing_search_fn(env, search_net.apply, config.search)
        empty_trees = functools.partial(empty_kept, env, search_net.apply, config.search)
    else:
        search_fn = make_search_fn(env, search_net.apply, config.search)
    cheap_fn = None
    if config.selfplay.full_search_prob < 1.0:
        cheap_fn = make_search_fn(env, search_net.apply,
                                  cheap_search_config(config.search, config.selfplay))
    finals = auxiliary_targets(env, config)
    reanalyses = config.reanalyse_positions > 0
    play = make_play_fn(env, search_fn, config.search, config.selfplay, cheap_fn, finals,
                        empty_trees, record_states=reanalyses)
    if reanalyses:  # a plain search: a reusing one searches from kept trees
        reanalyse_fn = (make_search_fn(env, search_net.apply, config.search)
                        if config.search.reuse_tree else search_fn)
    cells = board_cells(env)
    optimizer = config.learner.optimizer()
    symmetries = env.symmetries
    sample_symmetries = symmetries if config.augment == "sample" else None
    copies = symmetries.size if config.augment == "write" else 1
    mix = config.value_target_mix
    score_mix = config.learner.score_value_mix
    weight_decay = config.learner.weight_decay

    def loss_fn(params, batch: replay_lib.Positions):
        logits, value, heads = net.apply(params, batch.observation, aux=True)
        target = (1.0 - mix) * batch.z + mix * batch.search_value
        if score_mix > 0:
            target = score_value_target(target, batch.score, batch.player, batch.has_final,
                                        score_mix, config.learner.score_value_scale)
        weights = batch.has_z.astype(jnp.float32)
        policy_weights = None
        if batch.full_search is not None:
            policy_weights = weights * batch.full_search.astype(jnp.float32)
        info = alphazero_loss(
            logits, value, batch.policy, target, params, weight_decay,
            weights=weights, policy_weights=policy_weights,
        )
        aux_weights = weights  # resigned games have no auxiliary targets
        if batch.has_final is not None:
            aux_weights = weights * batch.has_final.astype(jnp.float32)
        aux = auxiliary_losses(heads, batch.ownership, batch.score, batch.player,
                               aux_weights, cells)
        total = info.total
        if "ownership" in aux:
            total = total + config.learner.ownership_weight * aux["ownership"]
        if "score" in aux:
            total = total + config.learner.score_weight * aux["score"]
        info = info.replace(total=total, ownership_loss=aux.get("ownership"),
                            score_loss=aux.get("score"))
        return total, info

    def grad_step(carry, key, replay, learns):
        params, opt_state = carry
        batch = replay_lib.sample(replay, device_key(key, devices), config.learner.batch_size,
                                  sample_symmetries)
        grads, info = mean(jax.grad(loss_fn, has_aux=True)(params, batch))
        updates, new_opt_state = optimizer.update(grads, opt_state, params)
        stepped = (optax.apply_updates(params, updates), new_opt_state)
        if config.learn_after == 0:
            return stepped, info
        return jax.tree.map(lambda new, old: jnp.where(learns, new, old), stepped,
                            carry), info

    def iteration(state: TrainState):
        # (Threefry keys split prefix-stably: reanalysis leaves the first three alone.)
        keys = jax.random.split(state.key, 4 if reanalyses else 3)
        play_key, train_key, next_key = keys[:3]
        actor = state.best_params if config.regime == "gating" else state.params
        games, trajectory = play(actor, state.search_params, device_key(play_key, devices),
                                 state.selfplay)
        discount = config.search.discount
        positions, first_end, first_outcome, first_length = assign_outcomes(trajectory,
                                                                            discount)
        replay = replay_lib.resolve(state.replay, first_end, first_outcome, first_length,
                                    discount, first_finals(trajectory))
        if config.selfplay.katago_cheap_moves:
            positions = katago_rows(positions, config.selfplay)
        if config.augment == "write":
            positions = replay_lib.augment_all(positions, symmetries)
        replay = replay_lib.add(replay, positions)
        if reanalyses:
            pick_key, search_key = jax.random.split(device_key(keys[3], devices))
            rows = pick_rows(replay, pick_key, config.reanalyse_positions)
            replay = refreshed(replay, rows, reanalyse_fn, state.params,
                               state.search_params, search_key)

        # Positions, not replay entries: 'write' augmentation stores each one `copies` times.
        sampleable = total(replay_lib.num_sampleable(replay)) // copies
        learns = sampleable >= config.learn_after
        (params, opt_state), infos = jax.lax.scan(
            lambda carry, key: grad_step(carry, key, replay, learns),
            (state.params, state.opt_state),
            jax.random.split(train_key, config.gradient_steps),
        )

        ended = trajectory.ended
        num_ended = total(jnp.sum(ended))
        per_game = jnp.maximum(num_ended, 1)
        outcome = trajectory.outcome
        metrics = {
            "games_finished": num_ended,
            "mean_game_length": total(jnp.sum(jnp.where(ended, trajectory.game_length, 0)))
            / per_game,
            "first_player_win": total(jnp.sum(ended & (outcome > 0))) / per_game,
            "draw": total(jnp.sum(ended & (outcome == 0))) / per_game,
            "second_player_win": total(jnp.sum(ended & (outcome < 0))) / per_game,
            "search_value": mean(jnp.mean(trajectory.positions.search_value)),
            "replay_sampleable": sampleable,
        }
        if config.selfplay.resigns:  # false-resignation rate: false_resign / resign_checked
            metrics.update(
                resigned=total(jnp.sum(ended & trajectory.resigned)) / per_game,
                resign_checked=total(jnp.sum(trajectory.resign_checked)),
                false_resign=total(jnp.sum(trajectory.false_resign)),
            )
        if config.search.reuse_tree:
            metrics["reused_visits"] = mean(jnp.mean(trajectory.reused))
        if config.selfplay.restarts:  # each finished game's slot begins another
            metrics["restarted"] = total(jnp.sum(trajectory.restarted)) / per_game
        if config.gradient_steps > 0:
            metrics.update(
                loss=jnp.mean(infos.total),
                value_loss=jnp.mean(infos.value_loss),
                policy_loss=jnp.mean(infos.policy_loss),
                policy_entropy=jnp.mean(infos.policy_entropy),
            )
            for name in ("ownership_loss", "score_loss"):
                if getattr(infos, name) is not None:
                    metrics[name] = jnp.mean(getattr(infos, name))
        new_state = state.replace(
            params=params,
            opt_state=opt_state,
            replay=replay,
            selfplay=games,
            key=next_key,
            iteration=counters.add(state.iteration, 1),
            games=counters.add(state.games, num_ended),
            positions=counters.add(state.positions, positions_per_iteration),
        )
        return new_state, metrics

    return iteration
