"""How the random games of `envs.check_env` choose their moves.

Every game looks one ply ahead at some of its legal moves (`envs.conformance.games`)
and keeps the one its policy (`POLICIES`) prefers, at random among equals:

* "uniform" prefers none: uniformly random legal moves (a quarter of the games);
* "ending": a move that ends the game;
* "material": the move that changes the material most (the sums of the observation's
  planes, sorted, so that the same material seen from the other side is no change);
* "lasting": a move that does not end the game;
* "hunting": one side takes material and keeps the game going (of the moves that do
  not end it, the one that changes the material most), the other keeps it going and
  gives up as little as it can (which side hunts alternates from game to game);
* "novelty": the move whose result is least like what the batch has seen so far: the
  piece counts (non-zero cells per plane, sorted) and the gaps between them (how
  one-sided the material is).

Hunting and novelty games never end a game the common way while they have another move,
and end it at once a rare way (a kind of ending, `envs.conformance.endings.ENDINGS`,
that the batch has looked at far less often than the most common one); they look at
`WIDE` legal moves, the others at a few. So a side wiped out on a board where uniform
play always ends first some other way is reached, for a reference to check. The
policies know nothing of the game but `step` and the observation.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.conformance.endings import ENDINGS, ending_kind, planes

POLICIES = ("uniform", "ending", "material", "lasting", "hunting", "novelty")
"""The policies of the random games, in the order `policies_of` deals them out."""
RARE = 16
"""A kind of ending is rare while the batch has looked at this many times fewer moves that
end a game that way than moves that end it the most looked-at way."""
WIDE = 32
"""How many legal moves a hunting or novelty game looks at, one ply ahead (the others
look at `envs.conformance.games.CANDIDATES`): a capture is seldom among a few."""
_WIDE_POLICIES = (POLICIES.index("hunting"), POLICIES.index("novelty"))


def policies_of(num_games: int) -> np.ndarray:
    """The policy (an index into `POLICIES`) of each of `num_games` games: the first
    quarter (rounded up, game 0 among them) uniform, then the biased ones in turn.

    Args:
      num_games: n, the number of games.

    Returns:
      (n,) int32.
    """
    uniform = -(-num_games // 4)
    biased = 1 + np.arange(num_games - uniform) % (len(POLICIES) - 1)
    return np.concatenate([np.zeros(uniform, np.int32), biased.astype(np.int32)])


def material(observation: jax.Array) -> jax.Array:
    """The sum of each of an observation's C planes, 0 for a uniform plane (a side-to-move
    plane), sorted: the same material seen from either side is the same.

    Args:
      observation: [B, ..., C].

    Returns:
      float32 [B, C].
    """
    x, uniform = planes(observation)
    return jnp.sort(jnp.where(uniform, 0.0, jnp.sum(x, axis=1)), axis=-1)


def features(observation: jax.Array) -> jax.Array:
    """What novelty games count: the non-zero cells of each plane (0 for a uniform
    plane), sorted, and the gaps between neighbours in that order.

    Args:
      observation: [B, ..., C].

    Returns:
      int32 [B, 2C - 1], each in [0, cells].
    """
    x, uniform = planes(observation)
    counts = jnp.sort(jnp.where(uniform, 0, jnp.sum(x != 0, axis=1, dtype=jnp.int32)), axis=-1)
    return jnp.concatenate([counts, jnp.diff(counts, axis=-1)], axis=-1)


class Plan(NamedTuple):
    """Which moves each game looks at, fixed when the program is built (numpy).

    Every game looks at k moves evenly spread among its legal moves; a `wide` game at K,
    a multiple of k, evenly spread, of which every (K / k)-th are its k. The moves are
    stepped laid out flat: k for every game (game i's at i * k ...), then the other
    K - k of each wide game.
    """

    policy: np.ndarray  # int32 [n]: each game's index in POLICIES
    wide: np.ndarray  # int32 [h]: the games that look at K moves
    layout: np.ndarray  # int32 [n, K]: the flat index of each game's j-th move
    valid: np.ndarray  # bool [n, K]: whether game i looks at a j-th move
    game_of: np.ndarray  # int32 [n * k + h * (K - k)]: the game of each flat move
    extra: np.ndarray  # int32 [K - k]: which of a wide game's K moves are not its k


def plan(policy: np.ndarray, k: int, num_actions: int) -> Plan:
    """The `Plan` of games that look at `k` moves each, hunting and novelty games at K:
    `WIDE` or fewer (at most `num_actions`), a multiple of k (none where that is k).

    Args:
      policy: int32 [n], each game's index in `POLICIES` (`policies_of`).
      k: the moves every game looks at.
      num_actions: the game's number of actions.

    Returns:
      The `Plan`.
    """
    num_games = len(policy)
    size = min(WIDE, num_actions) // k * k
    wide = np.flatnonzero(np.isin(policy, _WIDE_POLICIES) & (size > k)).astype(np.int32)
    size = size if len(wide) else k
    own = np.arange(num_games * k).reshape(num_games, k)
    extra = np.flatnonzero(np.arange(size) % (size // k))
    layout = np.zeros((num_games, size), np.int32)
    valid = np.zeros(layout.shape, bool)
    layout[:, :k], valid[:, :k] = own, True
    layout[wide, ::size // k] = own[wide]
    layout[wide[:, None], extra] = num_games * k + np.arange(len(wide) * len(extra)).reshape(
        len(wide), len(extra))
    valid[wide] = True
    game_of = np.concatenate([np.repeat(np.arange(num_games), k), np.repeat(wide, len(extra))])
    return Plan(policy, wide, layout, valid, game_of.astype(np.int32), extra.astype(np.int32))


class Seen(NamedTuple):
    """What the batch has seen so far (carried through the scan), float32 counts."""

    looked: jax.Array  # [1 + len(ENDINGS)]: moves looked at, by the kind of ending they make
    features: jax.Array  # [2C - 1, cells + 1]: states played, by each feature's value


def nothing_seen(observation_shape: tuple[int, ...]) -> Seen:
    """The `Seen` of a batch that has played nothing.

    Args:
      observation_shape: the game's observation shape (..., C).

    Returns:
      All-zero counts.
    """
    cells, c = math.prod(observation_shape[:-1]), observation_shape[-1]
    return Seen(jnp.zeros(1 + len(ENDINGS)), jnp.zeros((2 * c - 1, cells + 1)))


def _histogram(values: jax.Array, weights: jax.Array, size: int) -> jax.Array:
    """float32 [size]: the weighted count of each value in [0, size) of `values`, over
    all of its axes (`weights` of the same shape)."""
    onehot = values[..., None] == jnp.arange(size)
    return jnp.sum(jnp.where(onehot, weights[..., None], 0.0).reshape(-1, size), axis=0)


def judge(p: Plan, seen: Seen, state: Any, holding: jax.Array,
          looked: Any) -> tuple[jax.Array, jax.Array, Seen]:
    """Scores the moves each game looks at by its policy (a game keeps a best one).

    Args:
      p: the `Plan`.
      seen: what the batch has seen before this ply.
      state: the batch of n states before the move.
      holding: bool [n, C], the planes that held pieces at the start.
      looked: the m states after the moves looked at, laid out flat as `p` says.

    Returns:
      (float32 [n, K] the scores, -inf where a game looks at no such move; int32 [m] the
      kind of ending each flat move makes (`ending_kind`); `seen` with this ply's moves
      looked at).
    """
    game = jnp.asarray(p.game_of)
    mover = state.current_player[game]
    reward = jnp.where(mover == 0, looked.rewards[:, 0], looked.rewards[:, 1])
    kind_flat = ending_kind(looked.observation, looked.terminated, reward, holding[game])
    change_flat = jnp.abs(material(looked.observation)
                          - material(state.observation)[game]).sum(axis=-1)
    layout, valid = jnp.asarray(p.layout), jnp.asarray(p.valid)
    kind, change = kind_flat[layout], change_flat[layout]
    ended = kind > 0
    live = ~state.terminated
    present = set(p.policy.tolist())
    if present & set(_WIDE_POLICIES):
        seen = seen._replace(looked=seen.looked + _histogram(kind, valid & live[:, None],
                                                             seen.looked.shape[0]))
    # Above any move that goes on if rare, below every one if common.
    rare_or_not = jnp.where((seen.looked * RARE <= jnp.max(seen.looked[1:]))[kind], 1.0, -1.0)

    def hunting():
        most = jnp.max(jnp.where(valid, change, 0.0), axis=1, keepdims=True)
        hunter = state.current_player == jnp.arange(live.shape[0]) % 2
        gain = jnp.where(hunter[:, None], change, most - change) / (1.0 + most)
        return jnp.where(ended, 1.5 + 1.5 * rare_or_not, 1.0 + gain)

    def novelty():
        feats = features(looked.observation)[layout]
        size = feats.shape[-1]
        rarity = jnp.sum(1.0 / jnp.sqrt(1.0 + seen.features[jnp.arange(size), feats]), axis=-1)
        return jnp.where(ended, (size + 1) * rare_or_not, rarity)

    prefer = {"ending": lambda: ended.astype(jnp.float32), "material": lambda: change,
              "lasting": lambda: (~ended).astype(jnp.float32), "hunting": hunting,
              "novelty": novelty}
    policy = jnp.asarray(p.policy)[:, None]
    score = jnp.zeros(kind.shape, jnp.float32)
    for i in sorted(present - {0}):  # only the policies some game plays are compiled
        score = jnp.where(policy == i, prefer[POLICIES[i]](), score)
    return jnp.where(valid, score, -jnp.inf), kind_flat, seen


def played(p: Plan, seen: Seen, live: jax.Array, observation: jax.Array) -> Seen:
    """`seen` with the states the live games played this ply (where novelty games count
    them).

    Args:
      p: the `Plan`.
      seen: what the batch has seen.
      live: bool [n], the games that moved.
      observation: [n, ..., C], the observations after their moves.

    Returns:
      The updated `Seen`.
    """
    if POLICIES.index("novelty") not in p.policy:
        return seen
    feats = features(observation).T  # [2C - 1, n]
    w = jnp.broadcast_to(live.astype(jnp.float32), feats.shape)
    return seen._replace(features=seen.features + jax.vmap(_histogram, in_axes=(0, 0, None))(
        feats, w, seen.features.shape[1]))
