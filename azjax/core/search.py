"""mctx search over any env with a policy-value network.

The env itself is the model (`azjax.core.search_model`): `make_recurrent_fn` steps the
real game and evaluates the new positions with the network, masking illegal actions at
every node.

AlphaGo-style leaf evaluation: with `rollout_lambda > 0` a leaf's value is
`(1 - lambda) * network value + lambda * z`, z the result of one uniformly random
playout from the leaf, as AlphaGo mixed its value network with fast rollouts
(lambda = 0 is AlphaZero, lambda = 1 leaves the network only the prior). Whether the
compiled search has playouts at all is decided by the config it is built from (0: none,
and the search is exactly the AlphaZero one); the mix itself is a traced value, so one
compiled search can sweep it.

`SearchConfig` is a checked pytree (`azjax.core.fields.checked`): its traced settings are
its leaves, so the compiled search takes them as arguments, and the rest is static.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, Literal

import chex
import jax
import jax.numpy as jnp
import mctx

from azjax.core.fields import (
    bounded,
    checked,
    is_traced,
    parse_setting,
    setting_types,
    traced,
)
from azjax.core.game_hooks import ApplyFn, legal_moves, score_utility, without_futile
from azjax.core.search_model import (  # noqa: F401 - LeafFn is re-exported
    LeafFn,
    make_recurrent_fn,
    masked_logits,
    mixed_value,
    symmetric_apply,
)
from envs import Env, State

POLICIES = ("puct", "gumbel")
POLICY_SETTINGS: dict[str, tuple[str, ...]] = {
    "puct": ("c_puct", "pb_c_base", "dirichlet_alpha", "dirichlet_fraction"),
    "gumbel": ("gumbel_scale", "gumbel_value_scale", "max_num_considered_actions"),
}
"""The `SearchConfig` settings that only one policy's search reads (`make_search_fn`
passes them to its mctx policy alone); the other policy's search never reads them.
Any other setting is the same to both policies."""
NOISE_SETTINGS = ("dirichlet_alpha", "dirichlet_fraction", "gumbel_scale")
"""The settings of the root noise, which only self-play's search reads: every other
search of a run (its evaluation, its gating arena, its games against baselines) is a
greedy player, searching with the noise off (`deterministic`)."""


def policies_reading(name: str) -> tuple[str, ...]:
    """The search policies whose search reads the setting `name`.

    Args:
      name: a `SearchConfig` field ('c_puct', 'num_simulations', ...).

    Returns:
      The one policy of `POLICY_SETTINGS` that lists `name`, else every policy
      (`POLICIES`).
    """
    own = tuple(policy for policy, names in POLICY_SETTINGS.items() if name in names)
    return own or POLICIES


@checked("search.", pytree=True)
class SearchConfig:
    """Settings of the search. The traced ones reach the compiled search as arrays;
    `policy`, `num_simulations`, `max_num_considered_actions`, `gumbel_value_scale` and
    `discount` are compiled in."""

    policy: Literal["puct", "gumbel"] = "gumbel"
    """'puct' (mctx.muzero_policy, Dirichlet noise at the root) or 'gumbel'."""
    num_simulations: int = bounded(32, low=1)
    """Simulations per move."""
    play_simulations: int = bounded(0, low=0)
    """Simulations per move of the trained agent when it plays (`play_search`: the
    arena, GTP, `play`, the league; not self-play, nor training's evaluations): 0 =
    `num_simulations`. Self-play searches little to play many games; a finished agent
    can afford more. Compiled in."""
    play_policy: Literal["", "puct", "gumbel"] = ""
    """The trained agent's search policy when it plays (`play_search`): '' = `policy`."""
    c_puct: float = traced(1.25, above=0)
    """PUCT exploration constant (mctx pb_c_init)."""
    pb_c_base: float = traced(19652.0, above=0)
    """PUCT base constant (mctx pb_c_base)."""
    dirichlet_alpha: float = traced(0.3, above=0)
    """Dirichlet concentration of the root noise (PUCT)."""
    dirichlet_fraction: float = traced(0.25, low=0, high=1)
    """Share of Dirichlet noise in the root prior (PUCT)."""
    gumbel_scale: float = traced(1.0, low=0)
    """Scale of the Gumbel noise (Gumbel); 0 makes the search deterministic."""
    gumbel_value_scale: float = bounded(0.1, above=0)
    """Gumbel's c_scale: how much the completed Q-values weigh against the prior logits
    in its choice and its improved policy, sigma(q) = (50 + max visits) * scale * q with q
    rescaled to [0, 1] (mctx's default 0.1; larger trusts the search's values more).
    Compiled in, as `discount`: a traced one would change the layout of saved runs."""
    max_num_considered_actions: int = bounded(16, low=1)
    """Actions sampled at the root by Gumbel sequential halving."""
    rollout_lambda: float = traced(0.0, compiled_as=lambda value: value > 0, low=0, high=1)
    """AlphaGo leaf mix: value = (1 - lambda) * network + lambda * random-playout result
    (0 compiles no playouts)."""
    discount: float = bounded(1.0, above=0, high=1)
    """Per-ply discount: a result k plies ahead is worth discount^k, in the search's
    backups and in the value targets, so that of two wins the faster one (of two losses
    the slower one) is worth more. 1 is AlphaZero's undiscounted result."""
    average_symmetries: bool = False
    """Evaluate every position (root and leaves) as the mean of the network over the
    game's symmetries (`symmetric_apply`): a less noisy value and prior for G times the
    network's cost. Compiled in."""
    score_utility: float = bounded(0.0, low=0)
    """KataGo's score utility: the search values a position at the network's value plus
    this weight times tanh(margin / `score_utility_scale`), the margin from the mover's
    view (the score head's prediction; the game's own count where it ended), so a decided
    game is still played for points. 0: off. Needs a game with `Env.score_margin` and
    `network.score_head`; the search's values (and value targets mixed from them) carry
    it too. Compiled in."""
    score_utility_scale: float = bounded(20.0, above=0)
    """Points of margin at which the score utility reaches tanh(1) of its weight."""
    skip_futile: bool = False
    """Leave the game's futile moves (`Env.futile_moves`: Go's filling of the mover's own
    true eyes) out of the search, at its root and every node. Compiled in."""
    play_skip_futile: bool = False
    """`skip_futile` for the trained agent when it plays (`play_search`) only."""
    reuse_tree: bool = False
    """Keep the searched subtree between moves (`azjax.core.tree_reuse`): each search
    starts from the subtree under the position it searches and adds its own
    `num_simulations`. Self-play's search, and any player built from this config; off
    until measured (docs/tree_reuse.md). Compiled in."""
    play_reuse_tree: bool = False
    """`reuse_tree` for the trained agent when it plays (`play_search`): the arena, GTP,
    `play`, `serve`, the league."""
    reuse_root_visits: bool = False
    """PUCT with `reuse_tree`: the root keeps its inherited visits (in its visit target,
    its choice and its exploration term, as Leela Zero does) instead of starting afresh
    over its kept children. Gumbel's root always starts afresh. Compiled in."""
    reuse_capacity: int = bounded(2, low=2)
    """With `reuse_tree`: a kept tree holds `reuse_capacity` x `num_simulations` + 1
    nodes, so a search keeps up to (`reuse_capacity` - 1) x `num_simulations` + 1 of
    them. Compiled in."""

    def _check(self) -> None:
        """The rules that join settings (each field's own bounds are on the field)."""
        if self.score_utility > 0 and self.average_symmetries:
            raise ValueError("search.score_utility does not combine with "
                             "search.average_symmetries (set one of them off)")

    def reads(self, name: str) -> bool:
        """Whether this config's search reads the setting `name` (`POLICY_SETTINGS`:
        under 'gumbel' the PUCT and Dirichlet settings are never read, under 'puct' the
        Gumbel ones)."""
        return self.policy in policies_reading(name)

    @property
    def tree_nodes(self) -> int:
        """Nodes of one search's tree: `num_simulations` + 1, or with `reuse_tree` the
        kept tree's `reuse_capacity` x `num_simulations` + 1."""
        factor = self.reuse_capacity if self.reuse_tree else 1
        return factor * self.num_simulations + 1

    def as_arrays(self) -> "SearchConfig":
        """The same settings with the traced ones as float32 arrays (what a `TrainState`
        carries and a compiled search receives)."""
        return jax.tree.map(jnp.float32, self)


def play_search(config: SearchConfig) -> SearchConfig:
    """The search a trained agent plays with: `config` with `play_simulations`,
    `play_policy` and `play_skip_futile` in place of its own settings where they are set,
    and `play_reuse_tree` in place of `reuse_tree`."""
    changes = {"skip_futile": True} if config.play_skip_futile else {}
    changes["reuse_tree"] = config.play_reuse_tree
    if config.play_simulations > 0:
        changes["num_simulations"] = config.play_simulations
    if config.play_policy:
        changes["policy"] = config.play_policy
    return dataclasses.replace(config, **changes)


def search_changes(pairs: Sequence[str]) -> dict[str, Any]:
    """Search settings written `NAME=VALUE` ('gumbel_value_scale=1',
    'average_symmetries=true'; NAME with or without 'search.', '-' or '_'), parsed by
    their type into `SearchConfig` field changes; ValueError with one line naming the
    bad pair, name, value or range."""
    kinds = setting_types(SearchConfig)
    changes: dict[str, Any] = {}
    for pair in pairs:
        name, equals, text = str(pair).partition("=")
        field = name.strip().replace("-", "_").removeprefix("search.")
        if not equals or field not in kinds:
            raise ValueError(f"expected NAME=VALUE with NAME a search setting "
                             f"({', '.join(kinds)}), got {pair!r}")
        changes[field] = parse_setting(f"search.{field}", kinds[field], text)
    SearchConfig(**changes)  # checks the values, alone and together
    return changes


def changed(search: SearchConfig, changes: dict[str, Any]) -> SearchConfig:
    """`search` (plain or `as_arrays`) with `changes` applied; a traced setting of an
    array config stays a float32 array, so the result can be bound to a player."""
    traced_names = {f.name for f in dataclasses.fields(SearchConfig) if is_traced(f)}
    values = {name: jnp.float32(value)
              if name in traced_names and isinstance(getattr(search, name), jax.Array)
              else value for name, value in changes.items()}
    return dataclasses.replace(search, **values)


def deterministic(search: SearchConfig) -> SearchConfig:
    """`search` with the root noise switched off (Dirichlet and Gumbel); traceable."""
    return search.replace(dirichlet_fraction=jnp.zeros_like(search.dirichlet_fraction),
                          gumbel_scale=jnp.zeros_like(search.gumbel_scale))


def make_search_fn(env: Env, apply_fn: ApplyFn, config: SearchConfig):
    """The compiled-in search of `config` over `env`'s games.

    With `config.average_symmetries` the network is `symmetric_apply(env, apply_fn)`;
    with PUCT the root prior gets Dirichlet noise (`dirichlet_fraction=0` switches it
    off).

    Args:
      env: the game.
      apply_fn: `apply_fn(params, obs (B, *observation_shape)) -> (logits (B, A),
        value (B,))`, the network.
      config: the search's settings; the untraced ones (policy, simulations, ...) are
        compiled in.

    Returns:
      `search(params, search, key, states) -> mctx.PolicyOutput`, where `search` is a
      `SearchConfig` agreeing with `config` on the compiled-in settings (its traced ones
      may be () float32 arrays, `SearchConfig.as_arrays`), `key` is consumed and `states`
      is a batch (B,) of live states. The output's `action` is (B,) int32 and its
      `action_weights` (B, A) float32. `loop_fn` and `max_depth` go to mctx's search
      (`azjax.core.tree_reuse` runs the simulations on a kept tree through them).
    """
    rollouts = config.rollout_lambda > 0
    if config.average_symmetries:
        apply_fn = symmetric_apply(env, apply_fn)
    end_utility = None
    if config.score_utility > 0:
        apply_fn, end_utility = score_utility(env, apply_fn, config.score_utility,
                                              config.score_utility_scale)
    playable = without_futile(env) if config.skip_futile else legal_moves

    def network_leaf(params, key, states: State):
        params, search = params
        logits, value = apply_fn(params, states.observation)
        if rollouts:
            value = mixed_value(env, value, states, search.rollout_lambda, key)
        return logits, value

    recurrent_fn = make_recurrent_fn(env, network_leaf, config.discount, end_utility,
                                     playable)

    def search_fn(params, search: SearchConfig, key: chex.PRNGKey, states: State,
                  loop_fn=jax.lax.fori_loop, max_depth: int | None = None):
        chex.assert_rank(states.legal_action_mask, 2)
        logits, value = apply_fn(params, states.observation)
        if rollouts:
            root_key, key = jax.random.split(key)
            value = mixed_value(env, value, states, search.rollout_lambda, root_key)
        legal = playable(states)
        root = mctx.RootFnOutput(
            prior_logits=masked_logits(logits, legal), value=value, embedding=states
        )
        if config.policy == "puct":
            return mctx.muzero_policy(
                (params, search),
                key,
                root,
                recurrent_fn,
                num_simulations=config.num_simulations,
                invalid_actions=~legal,
                dirichlet_fraction=search.dirichlet_fraction,
                dirichlet_alpha=search.dirichlet_alpha,
                pb_c_init=search.c_puct,
                pb_c_base=search.pb_c_base,
                loop_fn=loop_fn,
                max_depth=max_depth,
            )
        return mctx.gumbel_muzero_policy(
            (params, search),
            key,
            root,
            recurrent_fn,
            num_simulations=config.num_simulations,
            invalid_actions=~legal,
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=search.gumbel_scale,
            qtransform=functools.partial(mctx.qtransform_completed_by_mix_value,
                                         value_scale=config.gumbel_value_scale),
            loop_fn=loop_fn,
            max_depth=max_depth,
        )

    return search_fn


def root_value(output: mctx.PolicyOutput) -> chex.Array:
    """The search's value of each root.

    Args:
      output: the search's output for B roots.

    Returns:
      (B,) float32, from the mover's point of view.
    """
    return output.search_tree.summary().value


def visit_counts(output: mctx.PolicyOutput) -> chex.Array:
    """The visit count of each root move.

    Args:
      output: the search's output for B roots.

    Returns:
      (B, A) int32.
    """
    return output.search_tree.summary().visit_counts


def root_q(output: mctx.PolicyOutput) -> chex.Array:
    """The search's value of each root move.

    Args:
      output: the search's output for B roots.

    Returns:
      (B, A) float32, from the mover's point of view; 0 where a move was not visited.
    """
    summary = output.search_tree.summary()
    return jnp.where(summary.visit_counts > 0, summary.qvalues, 0.0)


def most_visited(key: chex.PRNGKey, visits: chex.Array, prior_logits: chex.Array,
                 q: chex.Array) -> chex.Array:
    """The most visited move; among equally visited moves the one of highest prior, then
    of highest Q, then one drawn uniformly at random.

    The lowest index must not win a tie: with few simulations many roots are tied (two
    simulations often visit two moves once each), and a fixed side would bias play.

    Args:
      key: consumed by the last tie-break.
      visits: (..., A) visit counts.
      prior_logits: (..., A) the prior's logits (illegal moves very low).
      q: (..., A) each move's value from the mover's point of view.

    Returns:
      (...) int32 actions.
    """
    chex.assert_equal_shape([visits, prior_logits, q])
    tied = jnp.ones(visits.shape, jnp.bool_)
    for rank in (visits, prior_logits, q):  # each narrows what the one before left tied
        best = jnp.max(jnp.where(tied, rank, -jnp.inf), axis=-1, keepdims=True)
        tied = tied & (rank == best)
    return jax.random.categorical(key, jnp.where(tied, 0.0, -jnp.inf)).astype(jnp.int32)


def principal_variation(output: mctx.PolicyOutput, first: chex.Array, length: int,
                        key: chex.PRNGKey) -> chex.Array:
    """The search's expected line of play: `first`, then the most visited child of each
    node (ties broken as `most_visited` does).

    Args:
      output: the search's output for B roots.
      first: (B,) int32: the first move of each line (e.g. the move played).
      length: how many plies the line holds.
      key: consumed by the tie-breaks.

    Returns:
      (B, length) int32 actions; -1 past the end of what the search explored.
    """

    def line(tree, first, key):
        def follow(node, step):
            ply, ply_key = step
            here = jnp.maximum(node, 0)
            visits = tree.children_visits[here]
            best = most_visited(ply_key, visits, tree.children_prior_logits[here],
                                tree.qvalues(here))
            move = jnp.where(ply == 0, first, best).astype(jnp.int32)
            explored = (node >= 0) & (visits[move] > 0)
            return (jnp.where(explored, tree.children_index[here, move], -1),
                    jnp.where(explored, move, -1))

        steps = (jnp.arange(length), jax.random.split(key, length))
        _, moves = jax.lax.scan(follow, jnp.int32(mctx.Tree.ROOT_INDEX), steps)
        return moves

    return jax.vmap(line)(output.search_tree, first, jax.random.split(key, first.shape[0]))


def greedy_action(config: SearchConfig, output: mctx.PolicyOutput,
                  key: chex.PRNGKey) -> chex.Array:
    """The search's deterministic choice: the most visited move (PUCT; ties broken by
    prior, then Q, then at random: `most_visited`) or the Gumbel winner.

    With `gumbel_scale=0` the Gumbel winner is deterministic too.

    Args:
      config: the search's settings (its `policy` decides which choice).
      output: the search's output for B roots.
      key: consumed by PUCT's last tie-break (Gumbel does not use it).

    Returns:
      (B,) int32 actions.
    """
    if config.policy == "puct":
        tree = output.search_tree
        summary = tree.summary()
        return most_visited(key, summary.visit_counts,
                            tree.children_prior_logits[:, tree.ROOT_INDEX], summary.qvalues)
    del key
    return output.action.astype(jnp.int32)
