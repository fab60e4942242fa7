"""Reanalysis (MuZero Reanalyse, Schrittwieser et al. 2021): stored positions searched
again with the latest network, their targets refreshed.

A position's search policy and root value are its training targets; they were made by
the network of the iteration that played it, which the learner has since improved. Each
iteration, before its gradient steps, `ProgramConfig.reanalyse_positions` positions with
a known outcome are drawn uniformly from the replay (without replacement) and searched
again by self-play's search, with the iteration's parameters and without root noise (the
search is for a target, not for exploring); their policy target and search value become
the new search's, and under playout cap randomisation they become policy targets. The
outcome z stays the game's. The replay keeps each position's game state for this
(`azjax.core.replay.Positions.state`).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from azjax.core import replay as replay_lib
from azjax.core.search import deterministic, root_value


def pick_rows(replay: replay_lib.ReplayState, key: chex.PRNGKey, count: int) -> chex.Array:
    """`count` distinct ring rows drawn uniformly from those with a known outcome.

    Args:
      replay: the ring (capacity C).
      key: PRNG key (consumed).
      count: R <= C.

    Returns:
      (R,) int32 row indices; while fewer than R rows have an outcome, the rest are rows
      without one (`refreshed` leaves those as they are).
    """
    # Gumbel top-k: uniform over the known rows without replacement, then the others.
    noise = jax.random.uniform(key, (replay.capacity,))
    score = noise + replay.data.has_z.astype(jnp.float32)
    return jax.lax.top_k(score, count)[1].astype(jnp.int32)


def refreshed(replay: replay_lib.ReplayState, rows: chex.Array, search_fn, params,
              search, key: chex.PRNGKey) -> replay_lib.ReplayState:
    """The ring with `rows` searched again and their targets replaced.

    Args:
      replay: the ring, with `data.state` kept.
      rows: (R,) int32 distinct row indices.
      search_fn: self-play's search, `azjax.core.search.make_search_fn`'s.
      params: the network's parameters to search with.
      search: the search's traced settings (`SearchConfig.as_arrays`); its root noise is
        switched off.
      key: PRNG key (consumed).

    Returns:
      The ring whose rows among `rows` with a known outcome hold the new search's policy
      (`action_weights`) and root value, and `full_search` True where kept.
    """
    data = replay.data
    if data.state is None:
        raise ValueError("reanalysis needs a replay that keeps states (replay.init's state)")
    chex.assert_rank(rows, 1)
    states = jax.tree.map(lambda x: x[rows], data.state)
    output = search_fn(params, deterministic(search), key, states)
    known = data.has_z[rows]
    policy = jnp.where(known[:, None], output.action_weights, data.policy[rows])
    value = jnp.where(known, root_value(output), data.search_value[rows])
    changes = {"policy": data.policy.at[rows].set(policy),
               "search_value": data.search_value.at[rows].set(value)}
    if data.full_search is not None:
        changes["full_search"] = data.full_search.at[rows].set(data.full_search[rows] | known)
    return replay.replace(data=data.replace(**changes))
