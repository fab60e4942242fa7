"""Self-play exploration (`SelfPlayConfig.random_opening_moves`, `random_move_prob`) by
its behaviour: the jitted self-play of training (`make_play_fn`) on tic-tac-toe with a
stand-in search whose policy is a known function of the position and whose move is that
policy's argmax. A played move other than the argmax is then a random one, and the
recorded training target can be compared with the policy the search returned.

Only the first plies of each slot's first game are played: tic-tac-toe cannot end before
its fifth ply, so the moves of plies 0..3 are all seen, with 9 - ply legal moves each.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from binomial import FALSE_FAILURE, interval

import envs
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig, init_games, make_play_fn

GAMES = 6000
PLIES = 4  # plies 0..3 of each slot's first game: none of them can end it
WEIGHTS = np.arange(1, 10, dtype=np.float32) ** 2  # the stand-in policy: cell a gets (a+1)^2


def stand_in_policy(legal):
    """The stand-in search's policy [..., 9]: WEIGHTS on the legal cells, normalised."""
    w = jnp.where(legal, jnp.asarray(WEIGHTS), 0.0)
    return w / w.sum(-1, keepdims=True)


def stand_in_search(params, search, key, states):
    """What self-play reads of a search output: the policy (`action_weights`), the move
    (`action`, the Gumbel policy's choice: here the policy's argmax, the highest empty
    cell) and the root value (`search_tree.summary().value`, here 0)."""
    del params, search, key
    pi = stand_in_policy(states.legal_action_mask)
    value = jnp.zeros(pi.shape[0], jnp.float32)
    tree = SimpleNamespace(summary=lambda: SimpleNamespace(value=value))
    return SimpleNamespace(action_weights=pi, action=jnp.argmax(pi, axis=-1), search_tree=tree)


def self_play(opening: int, random_move_prob: float, seed: int):
    """PLIES moves of GAMES fresh games: (opening lengths [B], empty cells [PLIES, B, 9],
    moves played [PLIES, B], recorded policies [PLIES, B, 9])."""
    env = envs.make("tictactoe")
    config = SelfPlayConfig(num_games=GAMES, steps_per_iteration=PLIES, temperature_moves=0,
                            random_opening_moves=opening, random_move_prob=random_move_prob)
    search_config = SearchConfig(policy="gumbel")
    play = jax.jit(make_play_fn(env, stand_in_search, search_config, config))
    games = init_games(env, jax.random.key(seed), config)
    final, trajectory = jax.device_get(
        play(None, search_config.as_arrays(), jax.random.key(seed + 1), games))
    assert not trajectory.ended.any()  # no game ended: every slot is still in its first
    obs = trajectory.positions.observation  # [PLIES, B, 3, 3, 3]
    stones = (obs[..., 0] | obs[..., 1]).reshape(PLIES, GAMES, 9)
    after = np.concatenate([stones[1:], np.asarray(final.state.board != -1)[None]])
    placed = after & ~stones
    assert (placed.sum(-1) == 1).all()  # one new stone a ply, on an empty cell
    moves = placed.argmax(-1)
    return np.asarray(games.opening_length), ~stones, moves, trajectory.positions.policy


def played(policy, moves, where):
    """The recorded policy's mass on the move played, at the plies `where` [PLIES, B]."""
    return np.take_along_axis(policy, moves[..., None], axis=-1)[..., 0][where]


def test_opening_plies_are_uniform_then_the_search_plays():
    opening = 3
    lengths, empty, moves, policy = self_play(opening, 0.0, seed=0)
    greedy = 8 - np.argmax(empty[..., ::-1], axis=-1)  # the highest empty cell
    ply = np.arange(PLIES)[:, None]
    in_opening = ply < lengths[None, :]
    # after the opening (and no random_move_prob) the search's move, every time
    np.testing.assert_array_equal(moves[~in_opening], greedy[~in_opening])
    # the training target is the search's policy at every ply, random ones included (not
    # the played move one-hot)
    np.testing.assert_allclose(policy, np.asarray(stand_in_policy(empty)), rtol=1e-6)
    random_plies = in_opening & (moves != greedy)
    assert random_plies.any() and (played(policy, moves, random_plies) < 1).all()

    # Statistical: 4 counts of opening lengths (each length U{0..3}: B(GAMES, 1/4)) and, at
    # the opening plies 0, 1, 2 (9, 8, 7 legal moves), the count of each rank of the move
    # among the empty cells: B(games still in their opening, 1 / legal moves), the ranks'
    # draws being independent of the lengths. 4 + 9 + 8 + 7 = 28 two-sided bounds at
    # FALSE_FAILURE / 28 each: family-wise false-failure rate < 1e-3 (Bonferroni).
    alpha = FALSE_FAILURE / 28
    for length in range(opening + 1):
        low, high = interval(GAMES, 1 / (opening + 1), alpha)
        assert low <= (lengths == length).sum() <= high, (length, np.bincount(lengths))
    rank = np.cumsum(empty, axis=-1)[ply, np.arange(GAMES)[None, :], moves] - 1
    for t in range(opening):
        legal = 9 - t
        n = int(in_opening[t].sum())
        counts = np.bincount(rank[t][in_opening[t]], minlength=legal)
        assert len(counts) == legal  # never a rank past the empty cells
        low, high = interval(n, 1 / legal, alpha)
        assert ((low <= counts) & (counts <= high)).all(), (t, n, counts, low, high)


def test_random_moves_come_at_random_move_prob_with_the_search_policy_recorded():
    prob = 0.3
    _, empty, moves, policy = self_play(0, prob, seed=10)
    greedy = 8 - np.argmax(empty[..., ::-1], axis=-1)
    np.testing.assert_allclose(policy, np.asarray(stand_in_policy(empty)), rtol=1e-6)
    off = moves != greedy
    assert (played(policy, moves, off) < 1).all()  # a random move, its target the search's
    # At ply t (9 - t legal moves) the move differs from the search's with probability
    # prob * (1 - 1 / (9 - t)): a fresh coin, then a uniform move that misses the argmax;
    # that chance depends on nothing played before, so each ply's count over the GAMES
    # independent slots is B(GAMES, prob * (1 - 1 / (9 - t))). Four two-sided bounds at
    # FALSE_FAILURE / 4 each: family-wise false-failure rate < 1e-3 (Bonferroni).
    for t in range(PLIES):
        legal = 9 - t
        low, high = interval(GAMES, prob * (1 - 1 / legal), FALSE_FAILURE / 4)
        assert low <= off[t].sum() <= high, (t, off[t].sum(), low, high)
