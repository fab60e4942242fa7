"""The random games of `envs.check_env`: one jitted `lax.scan` over plies plays a batch of
games and flags, at every ply, the steps that break a rule; the host then finds the
shortest game that shows each failure (`envs.conformance.verdicts`).

Every game looks one ply ahead, at `CANDIDATES` legal moves evenly spaced among its
legal moves from a random offset (every one, some twice, where there are no more), and
keeps the one its policy prefers, at random among equals (`envs.conformance.policies`:
uniformly random moves in a quarter of the games; in the others a preference for moves
that end the game, change the material, keep the game going, take material and keep
the game going, or reach what the batch has seen least). The scan records the kind of
ending each game reached (`envs.conformance.endings.ENDINGS`).

At every ply one `vmap(env.step)` call steps three groups of states together:

* every game with each of its candidates (once the game is over, each is a random
  action that was legal just before the end);
* every game again with a bad action (an illegal one, -1 or num_actions on a live state;
  -1, num_actions or any action on a finished one), whose result is thrown away;
* a few live states of the batch transformed by every symmetry, with their first
  candidate mapped, to compare with the transformed result of that candidate.

The scan runs `max_plies + 1` plies, so every game is stepped at least once after its end.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.conformance.endings import holders
from envs.conformance.policies import POLICIES, judge, nothing_seen, plan, played, policies_of
from envs.conformance.static import init_keys, leaf_names, uniforms
from envs.core import Env

__all__ = ["CANDIDATES", "POLICIES", "Games", "play_games", "policies_of"]

SYMMETRY_SAMPLES = 256
"""About how many live states (each with every symmetry) the symmetry check compares."""
CANDIDATES = 8
"""How many legal moves a game looks at, one ply ahead, before each move."""
_HASH_SEED = 20240521
_MIX = (np.uint32(0x7FEB352D), np.uint32(0x846CA68B))


class Games(NamedTuple):
    """What the scan recorded, on the host: arrays [T, n] per ply and game (T = plies)
    unless noted."""

    env: Env
    seed: int
    num_games: int
    max_plies: int
    names: list[str]  # the state's leaf names
    rec: dict[str, np.ndarray]
    first_state: list[np.ndarray]  # the initial state of game 0 (host leaves)
    trace: list[np.ndarray]  # game 0 after every ply (host leaves, [T, ...])
    samples_per_ply: int
    num_symmetries: int
    policies: np.ndarray  # [n] the index in POLICIES of each game's policy


def _pick(u: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random True index of each row of `mask` [B, K], from uniforms `u` [B] in
    [0, 1) (0 in a row without one). Precomputed uniforms keep the PRNG, slow to compile,
    out of the scan body."""
    counts = jnp.sum(mask, axis=-1, dtype=jnp.int32)
    target = jnp.minimum(jnp.floor(u * counts).astype(jnp.int32), counts - 1)
    return _nth(mask, target)


def _nth(mask: jax.Array, target: jax.Array) -> jax.Array:
    """The index of the (target + 1)-th True entry of each row of `mask` [B, A], for
    targets [B, ...] (0 where there is none)."""
    rank = jnp.cumsum(mask, axis=-1, dtype=jnp.int32)
    rank = rank.reshape(rank.shape[:1] + (1,) * (target.ndim - 1) + rank.shape[1:])
    return jnp.argmax(rank > target[..., None], axis=-1).astype(jnp.int32)


def _spread(u: jax.Array, mask: jax.Array, k: int) -> jax.Array:
    """k legal moves of each row of `mask` [B, A], evenly spaced among its True entries
    from a random offset `u` [B]: all of them, some repeated, where there are at most k."""
    counts = jnp.sum(mask, axis=-1, dtype=jnp.int32)[:, None]
    spots = (jnp.arange(k, dtype=jnp.float32)[None, :] + u[:, None]) / k
    return _nth(mask, jnp.minimum(jnp.floor(spots * counts).astype(jnp.int32), counts - 1))


def _plain(x: jax.Array) -> jax.Array:
    return jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x


def _mismatch(a: Any, b: Any) -> jax.Array:
    """bool [B, L]: per batch element, which of the L leaves differ (NaN equals NaN)."""
    flags = []
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = _plain(x), _plain(y)
        same = x == y
        if jnp.issubdtype(x.dtype, jnp.inexact):
            same = same | (jnp.isnan(x) & jnp.isnan(y))
        flags.append(~same.reshape(same.shape[0], -1).all(axis=1))
    return jnp.stack(flags, axis=1)


def _words(x: jax.Array) -> jax.Array:
    """[B, ...] of any dtype -> uint32 [B, D] with the same information."""
    x = _plain(x).reshape(x.shape[0], -1)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.uint32)
    return x.astype(jnp.int32).astype(jnp.uint32)


def _hasher(size: int, salt: int) -> Callable[[jax.Array], jax.Array]:
    """A 64-bit hash (two uint32 [B, 2]) of arrays [B, ...] with `size` elements each."""
    rng = np.random.default_rng(_HASH_SEED + salt)
    weights = (rng.integers(0, 2**32, (2, size), dtype=np.uint64) | 1).astype(np.uint32)

    def hash_(x):
        u = _words(x)
        u = (u ^ (u >> 16)) * _MIX[0]
        u = (u ^ (u >> 15)) * _MIX[1]
        u = u ^ (u >> 16)
        return jnp.stack([jnp.sum(u * w, axis=1, dtype=jnp.uint32) for w in weights], axis=1)

    return hash_


def _hash_rest(state: Any) -> jax.Array:
    """uint32 [B, 2]: a hash of every leaf of a batch of states but the observation."""
    words = jnp.concatenate([_words(x) for x in jax.tree.leaves(state.replace(observation=None))],
                            axis=1)
    return _hasher(words.shape[1], 2)(words)


def _program(env: Env, num_games: int, plies: int, samples: int, masks: bool = False):
    """The jitted function (init keys [n], uniforms [plies, 6n + samples]) -> (record,
    first state, trace); with `masks`, the record holds every legal mask too."""
    n, num_actions = num_games, env.num_actions
    k = min(CANDIDATES, num_actions)
    looks = plan(policies_of(n), k, num_actions)
    wide = jnp.asarray(looks.wide)
    sym = env.symmetries
    size = sym.size
    step = jax.vmap(env.step)
    transform = jax.vmap(env.transform_state)
    hash_obs = _hasher(math.prod(env.observation_shape), 0)
    hash_mask = _hasher(num_actions, 1)
    margin = env.score_margin()
    owner = env.ownership()
    futile = env.futile_moves()

    def take(tree, idx):
        return jax.tree.map(lambda x: x[idx], tree)

    def concat(*trees):
        return jax.tree.map(lambda *xs: jnp.concatenate(xs), *trees)

    def body(carry, u):
        state, last_mask, seen, holding = carry
        u_spread, u_tie, u_after, u_illegal, u_kind, u_any = u[:6 * n].reshape(6, n)
        live = ~state.terminated
        mask = state.legal_action_mask
        mover = state.current_player
        # Each game's candidates: k legal moves (every one where there are no more); once
        # the game is over, k times a random action that was legal just before the end.
        after_end = _pick(u_after, last_mask)[:, None]
        cand = jnp.where(live[:, None], _spread(u_spread, mask, k), after_end)
        moves = cand.reshape(-1)
        if len(looks.wide):  # a few games look at K, every (K / k)-th of them their k
            many = looks.layout.shape[1]
            spread = jnp.where(live[wide, None], _spread(u_spread[wide], mask[wide], many),
                               after_end[wide])
            cand = cand.at[wide].set(spread[:, ::many // k])
            moves = jnp.concatenate([cand.reshape(-1), spread[:, looks.extra].reshape(-1)])
        m = moves.shape[0]
        # The bad action each game is also stepped with.
        kind_bad = jnp.floor(u_kind * 4).astype(jnp.int32)
        has_illegal = jnp.any(~mask, axis=1)
        bad_live = jnp.where((kind_bad < 2) & has_illegal, _pick(u_illegal, ~mask),
                             jnp.where(kind_bad == 3, num_actions, -1))
        anything = jnp.minimum(jnp.floor(u_any * num_actions).astype(jnp.int32), num_actions - 1)
        bad_done = jnp.where(kind_bad == 0, -1, jnp.where(kind_bad == 1, num_actions, anything))
        bad = jnp.where(live, bad_live, bad_done).astype(jnp.int32)
        # Live states to check the symmetries on: `samples` games, each under every g, with
        # their first candidate.
        idx = _pick(u[6 * n:], jnp.broadcast_to(live, (samples, n)))
        rep = jnp.repeat(idx, size)
        g = jnp.tile(jnp.arange(size, dtype=jnp.int32), samples)
        sym_in = transform(take(state, rep), g)
        sym_move = jax.vmap(sym.action)(cand[rep, 0], g)
        out = step(concat(take(state, jnp.asarray(looks.game_of)), state, sym_in),
                   jnp.concatenate([moves, bad, sym_move.astype(jnp.int32)]))
        out_l, bad_out, lhs = (take(out, part) for part in (
            slice(0, m), slice(m, m + n), slice(m + n, None)))
        out_c = take(out_l, slice(0, n * k))
        # Each game keeps the move its policy prefers, ties broken at random: a uniform
        # game prefers none, and so plays a uniformly random legal move (the candidates
        # are evenly spaced from a random offset).
        score, kinds, seen = judge(looks, seen, state, holding, out_l)
        best = _pick(u_tie, score == jnp.max(score, axis=1, keepdims=True))
        chosen = jnp.asarray(looks.layout)[jnp.arange(n), best]
        nxt = take(out_l, chosen)
        move = moves[chosen]
        end_kind = jnp.where(live, kinds[chosen], 0)
        seen = played(looks, seen, live, nxt.observation)
        rhs = transform(take(out_l, rep * k), g)
        # Expected results of the bad actions and of steps after the end.
        frozen = state.replace(rewards=jnp.zeros_like(state.rewards))
        forfeit = jnp.where(jnp.arange(2) == mover[:, None], -1.0, 1.0).astype(state.rewards.dtype)
        forfeited = state.replace(terminated=jnp.ones_like(state.terminated), rewards=forfeit,
                                  legal_action_mask=jnp.zeros_like(mask))
        expected_bad = jax.tree.map(
            lambda a, b: jnp.where(live.reshape((n,) + (1,) * (a.ndim - 1)), a, b),
            forfeited, frozen)
        # One comparison of all three pairs (fewer operations to compile).
        diff = _mismatch(concat(nxt, bad_out, lhs), concat(frozen, expected_bad, rhs))
        moved_obs = jax.vmap(sym.observation)(take(state, rep).observation, g)
        moved_mask = jax.vmap(sym.policy)(mask[rep], g)
        done = state.terminated[:, None]
        r = nxt.rewards
        ended = live & nxt.terminated
        record = {
            "live": live,
            "player": mover,
            "move": move,
            "bad": bad,
            "legal_count": jnp.sum(mask, axis=1, dtype=jnp.int32),
            "rewards": r,
            "ended": ended,
            "player_bad": (mover != 0) & (mover != 1),
            "move_bad": (live & ~jnp.any(mask, axis=1)) | (state.terminated & jnp.any(mask, axis=1)),
            "step_count": state.step_count,
            "step_count_after": nxt.step_count,
            "count_bad": live & (nxt.step_count != state.step_count + 1),
            "reward_mid": live & ~nxt.terminated & jnp.any(r != 0, axis=1),
            "reward_values": ended & ~jnp.all((r == -1) | (r == 0) | (r == 1), axis=1),
            "reward_sum": ended & (r[:, 0] != -r[:, 1]),
            "frozen_move": done & diff[:n],
            "frozen_bad": done & diff[n:2 * n],
            "illegal": ~done & diff[n:2 * n],
            "obs_kept": live & ~_mismatch(nxt.observation, state.observation)[:, 0],
            "end_kind": end_kind,
            "mover_reward": jnp.take_along_axis(r, jnp.clip(mover, 0, 1)[:, None], axis=1)[:, 0],
            "obs_hash": hash_obs(state.observation),
            "mask_hash": hash_mask(mask),
            "rest_hash": _hash_rest(state),
            "sample": idx.astype(jnp.int32),
            "sample_first": cand[idx, 0],
            "sample_live": jnp.broadcast_to(jnp.any(live), (samples,)),
            "sample_move": sym_move.reshape(samples, size),
            "transform_obs": _mismatch(sym_in.observation, moved_obs)[:, 0].reshape(samples, size),
            "transform_mask": _mismatch(sym_in.legal_action_mask, moved_mask)[:, 0].reshape(
                samples, size),
            "commute": diff[2 * n:].reshape(samples, size, -1),
        }
        if futile is not None:
            flags = jax.vmap(futile)(state)
            typed = flags.dtype == jnp.bool_ and flags.shape == mask.shape
            record["futile_type"] = jnp.bool_(typed)
            if typed:
                record["futile_all"] = live & ~jnp.any(mask & ~flags, axis=1)
                # A flagged move that alone wins at once, where the game saw every move.
                r_c = out_c.rewards.reshape(n, k, 2)
                wins = out_c.terminated.reshape(n, k) & (
                    jnp.where(mover[:, None] == 0, r_c[..., 0], r_c[..., 1]) > 0)
                flagged = jnp.take_along_axis(flags, cand, axis=1)
                record["futile_win"] = (live & (jnp.sum(mask, axis=1) <= k)
                                        & jnp.any(wins & flagged, axis=1)
                                        & ~jnp.any(wins & ~flagged, axis=1))
                record["futile_win_move"] = cand[jnp.arange(n), jnp.argmax(wins & flagged, axis=1)]
            else:
                record["futile_all"] = jnp.zeros_like(live)
        if masks:
            record["mask"] = mask
        trace = jax.tree.map(lambda x: _plain(x[0]), nxt)
        new_last = jnp.where(live[:, None], mask, last_mask)
        return (nxt, new_last, seen, holding), (record, trace)

    @jax.jit
    def play(keys, random):
        state = jax.vmap(env.init)(keys)
        start = (state, state.legal_action_mask, nothing_seen(env.observation_shape),
                 holders(state.observation))
        (final, *_), (record, trace) = jax.lax.scan(body, start, random)
        record["init_rewards"] = jnp.any(state.rewards != 0, axis=1)
        if margin is not None:  # of the final states (a finished game is frozen)
            record["margin"] = jax.vmap(margin)(final).astype(jnp.float32)
        if owner is not None:
            record["ownership"] = jax.vmap(owner)(final)
        return record, jax.tree.map(lambda x: _plain(x[0]), state), trace

    return play


def play_games(env: Env, num_games: int, seed: int, max_plies: int,
               masks: bool = False) -> Games:
    """Plays `num_games` random games of `max_plies + 1` plies in one jitted scan (with
    `masks`, recording every legal mask, `rec["mask"]` [T, n, num_actions]).

    Args:
      env: the game.
      num_games: n, the number of games.
      seed: the seed of their initial keys and random moves.
      max_plies: the ply limit checked; the scan runs one ply more.
      masks: whether to record every legal mask too.

    Returns:
      The `Games`, on the host: `rec` arrays of shape (T, n, ...), T = max_plies + 1.
    """
    plies = max_plies + 1
    samples = max(1, min(num_games, -(-SYMMETRY_SAMPLES // plies)))
    keys = init_keys(seed, num_games)
    random = uniforms(seed, (plies, 6 * num_games + samples))
    play = _program(env, num_games, plies, samples, masks)
    record, first, trace = jax.device_get(play(keys, random))
    names = leaf_names(jax.eval_shape(env.init, keys[0]))
    return Games(env, seed, num_games, max_plies, names,
                 {k: np.asarray(v) for k, v in record.items()},
                 [np.asarray(x) for x in jax.tree.leaves(first)],
                 [np.asarray(x) for x in jax.tree.leaves(trace)], samples, env.symmetries.size,
                 policies_of(num_games))
