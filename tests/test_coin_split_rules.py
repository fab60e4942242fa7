"""Grundy's coin-splitting game (`envs.coin_split`) against independent plain-Python code:
a move-by-move reference, a brute-force minimax and a brute-force Grundy (mex) solver.

The protocol every game keeps (types, rewards only at the end, frozen finished games,
forfeits, symmetries commuting with step...) is checked by `envs.check_env` in
tests/test_check_env.py."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.coin_split import (
    CoinSplit,
    action_name,
    action_to_split,
    all_positions,
    grundy_values,
    parse_move,
    split_to_action,
)

# --------------------------------------------------------------------------------------
# Plain-Python reference (independent of envs/).
# --------------------------------------------------------------------------------------


def ref_actions(max_coins):
    """The documented encoding: splits (s, a), 1 <= a < s - a, in order of (s, a)."""
    return [(s, a) for s in range(3, max_coins + 1) for a in range(1, s) if a < s - a]


def ref_children(piles):
    """Positions after one move; piles are sorted tuples (largest first)."""
    out = set()
    for i, s in enumerate(piles):
        for a in range(1, s):
            if a < s - a:
                rest = piles[:i] + piles[i + 1 :]
                out.add(tuple(sorted(rest + (a, s - a), reverse=True)))
    return out


def ref_split(piles, s, a):
    rest = list(piles)
    rest.remove(s)
    return tuple(sorted(rest + [a, s - a], reverse=True))


@functools.cache
def minimax_wins(piles):
    """True if the player to move wins (no move: loses)."""
    return any(not minimax_wins(c) for c in ref_children(piles))


@functools.cache
def brute_grundy(piles):
    """Grundy number of a whole multiset by the mex definition (no XOR rule used)."""
    options = {brute_grundy(c) for c in ref_children(piles)}
    g = 0
    while g in options:
        g += 1
    return g


def reachable(coins):
    seen, todo = {(coins,)}, [(coins,)]
    while todo:
        for c in ref_children(todo.pop()):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


class RefGame:
    """One game with the framework's rules for illegal actions and steps after the end."""

    def __init__(self, coins, max_coins):
        self.max_coins = max_coins
        self.actions = ref_actions(max_coins)
        self.piles = (coins,)
        self.player = 0
        self.step_count = 0
        self.rewards = [0.0, 0.0]
        self.terminated = False

    def legal_mask(self):
        if self.terminated:
            return [False] * len(self.actions)
        return [s in self.piles for s, _ in self.actions]

    def step(self, action):
        if self.terminated:
            self.rewards = [0.0, 0.0]
            return
        mover = self.player
        self.rewards = [0.0, 0.0]
        if not (0 <= action < len(self.actions)) or not self.legal_mask()[action]:
            self.terminated = True
            self.rewards[mover], self.rewards[1 - mover] = -1.0, 1.0
            return
        self.piles = ref_split(self.piles, *self.actions[action])
        self.step_count += 1
        self.player = 1 - mover
        if not any(p >= 3 for p in self.piles):
            self.terminated = True
            self.rewards[mover], self.rewards[1 - mover] = 1.0, -1.0

    def snapshot(self):
        m = self.max_coins
        cap = min(m // 3, 8)
        counts = np.zeros(m + 1, np.int8)
        for p in self.piles:
            counts[p] += 1
        obs = np.zeros((1, m, cap + 2), bool)
        for size in range(1, m + 1):
            n = int(counts[size])
            for k in range(cap):
                obs[0, size - 1, k] = n > k
            obs[0, size - 1, cap] = n % 2 == 1
            obs[0, size - 1, cap + 1] = self.player == 0
        return {
            "counts": counts,
            "current_player": np.int32(self.player),
            "observation": obs,
            "legal_action_mask": np.array(self.legal_mask(), bool),
            "rewards": np.array(self.rewards, np.float32),
            "terminated": np.bool_(self.terminated),
            "step_count": np.int32(self.step_count),
        }


FIELDS = (
    "counts",
    "current_player",
    "observation",
    "legal_action_mask",
    "rewards",
    "terminated",
    "step_count",
)

# --------------------------------------------------------------------------------------
# Random games through the JAX env (one jit per configuration: vmap over games, scan
# over plies), replayed in the reference.
# --------------------------------------------------------------------------------------

# (coins, max_coins, games)
CONFIGS = [(3, 3, 512), (7, 7, 2048), (7, 12, 512), (12, 12, 1024), (30, 30, 512), (64, 64, 64)]


def play_random_games(env, num_games, num_plies, seed):
    """Half the games play uniformly random legal moves; the other half sometimes play an
    arbitrary (often illegal or out-of-range) action. Every game continues past its end."""

    def one_game(key, noisy):
        def ply(state, key):
            k_legal, k_any, k_noise = jax.random.split(key, 3)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            legal = jax.random.categorical(k_legal, logits).astype(jnp.int32)
            anything = jax.random.randint(k_any, (), -2, env.num_actions + 2)
            use_any = ~jnp.any(state.legal_action_mask) | (
                noisy & (jax.random.uniform(k_noise) < 0.1)
            )
            action = jnp.where(use_any, anything, legal)
            return env.step(state, action), (state, action)

        k_init, k_plies = jax.random.split(key)
        final, (states, actions) = jax.lax.scan(
            ply, env.init(k_init), jax.random.split(k_plies, num_plies)
        )
        states = jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), states, final)
        return states, actions

    keys = jax.random.split(jax.random.key(seed), num_games)
    noisy = jnp.arange(num_games) >= num_games // 2
    return jax.device_get(jax.jit(jax.vmap(one_game))(keys, noisy))


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"coins{c[0]}-max{c[1]}")
def random_play(request):
    coins, max_coins, num_games = request.param
    env = envs.make("coin_split", coins=coins, max_coins=max_coins)
    states, actions = play_random_games(env, num_games, coins + 2, seed=coins * 100 + max_coins)
    return env, states, actions


def test_random_games_match_reference(random_play):
    env, states, actions = random_play
    num_games, num_plies = actions.shape
    refs = []
    for i in range(num_games):
        game = RefGame(env.coins, env.max_coins)
        snaps = [game.snapshot()]
        for t in range(num_plies):
            game.step(int(actions[i, t]))
            snaps.append(game.snapshot())
        refs.append(snaps)
    for field in FIELDS:
        want = np.array([[s[field] for s in snaps] for snaps in refs])
        got = np.asarray(getattr(states, field))
        assert got.dtype == want.dtype, (field, got.dtype, want.dtype)
        if not np.array_equal(got, want):
            diff = np.any((got != want).reshape(num_games, num_plies + 1, -1), axis=2)
            game, ply = np.argwhere(diff)[0]
            raise AssertionError(
                f"{field} differs, game {game} ply {ply} (actions "
                f"{actions[game, :ply].tolist()}): got {got[game, ply].tolist()} "
                f"want {want[game, ply].tolist()}"
            )
    # Non-vacuous: every game ended, both players won some, some noisy games forfeited.
    final = states.terminated[:, -1]
    assert final.all()
    ended_at = np.argmax(states.terminated, axis=1)
    last = states.rewards[np.arange(num_games), ended_at]
    if env.coins > 3:
        assert (last[:, 0] == 1).any() and (last[:, 1] == 1).any()
    forfeits = states.counts[np.arange(num_games), ended_at][:, 3:].any(axis=1)
    assert forfeits[num_games // 2 :].sum() > 0.04 * (num_games // 2)
    assert not forfeits[: num_games // 2].any()


# --------------------------------------------------------------------------------------
# Game theory: Grundy numbers, the XOR rule, all_positions.
# --------------------------------------------------------------------------------------

OEIS_A002188 = [0, 0, 0, 1, 0, 2, 1, 0, 2, 1, 0, 2, 1, 3, 2, 1, 3, 2, 4, 3, 0]


def test_grundy_values_known_start():
    assert grundy_values(20) == OEIS_A002188
    assert grundy_values(2) == [0, 0, 0]
    # The OEIS start agrees with the mex definition applied to whole multisets.
    assert [brute_grundy((n,)) if n else 0 for n in range(21)] == OEIS_A002188


def test_grundy_values_match_brute_force_further():
    g = grundy_values(26)
    assert len(g) == 27
    assert [brute_grundy((n,)) for n in range(1, 27)] == g[1:]


@pytest.mark.parametrize("coins", range(3, 19))
def test_xor_rule_equals_minimax_on_every_reachable_position(coins):
    g = grundy_values(coins)
    for piles in reachable(coins):
        nim = functools.reduce(lambda x, p: x ^ g[p], piles, 0)
        assert (nim != 0) == minimax_wins(piles), piles
        assert nim == brute_grundy(piles), piles


@pytest.mark.parametrize(
    "coins,max_coins", [(3, 3), (4, 6), (7, 7), (9, 9), (10, 13), (13, 13), (15, 15), (16, 20)]
)
def test_all_positions_matches_brute_force(coins, max_coins):
    pos = all_positions(coins, max_coins)
    actions = ref_actions(max_coins)
    num = len(pos.counts)
    assert pos.counts.shape == (num, max_coins + 1) and pos.counts.dtype == np.int8
    assert pos.winning_actions.shape == (num, len(actions))
    piles_of = [
        tuple(size for size in range(max_coins, 0, -1) for _ in range(row[size]))
        for row in pos.counts
    ]
    assert len(set(piles_of)) == num
    assert set(piles_of) == reachable(coins)
    for i, piles in enumerate(piles_of):
        assert pos.current_player[i] == (len(piles) - 1) % 2
        assert pos.terminal[i] == (not ref_children(piles))
        assert pos.wins[i] == minimax_wins(piles)
        want = [s in piles and not minimax_wins(ref_split(piles, s, a)) for s, a in actions]
        assert pos.winning_actions[i].tolist() == want, piles
        assert pos.wins[i] == any(want)
    assert pos.wins.any() and (~pos.wins).any()


def test_state_from_counts_on_all_positions():
    coins, max_coins = 14, 16
    env = CoinSplit(coins, max_coins)
    pos = all_positions(coins, max_coins)
    got = jax.device_get(jax.jit(jax.vmap(env.state_from_counts))(pos.counts))
    np.testing.assert_array_equal(got.current_player, pos.current_player)
    np.testing.assert_array_equal(got.terminated, pos.terminal)
    # Winning actions are legal; live positions have a legal move.
    assert not (pos.winning_actions & ~got.legal_action_mask).any()
    np.testing.assert_array_equal(got.legal_action_mask.any(axis=1), ~pos.terminal)
    for i in range(0, len(pos.counts), 7):
        piles = tuple(s for s in range(max_coins, 0, -1) for _ in range(pos.counts[i, s]))
        game = RefGame(coins, max_coins)
        game.piles, game.player, game.step_count = piles, (len(piles) - 1) % 2, len(piles) - 1
        game.terminated = not ref_children(piles)
        if game.terminated:
            game.rewards = [-1.0, 1.0] if game.player == 0 else [1.0, -1.0]
        want = game.snapshot()
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(got, field)[i], want[field], err_msg=field)


def test_all_positions_start_and_errors():
    pos = all_positions(7)
    assert pos.counts[0].tolist() == [0] * 7 + [1]
    assert not pos.wins[0]  # g(7) == 0: the first player loses from 7 coins
    assert all_positions(8).wins[0]
    with pytest.raises(ValueError):
        all_positions(2)
    with pytest.raises(ValueError):
        all_positions(9, 8)


# --------------------------------------------------------------------------------------
# Encoding, parser, constructor, symmetries, render.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_coins", [3, 4, 7, 12, 33, 64])
def test_action_encoding(max_coins):
    env = CoinSplit(3, max_coins)
    actions = ref_actions(max_coins)
    assert env.num_actions == len(actions)
    assert env.num_actions == sum((s - 1) // 2 for s in range(3, max_coins + 1))
    for action, (s, a) in enumerate(actions):
        assert action_to_split(action) == (s, a) == env.action_to_split(action)
        assert split_to_action(s, a) == action == split_to_action(s, s - a)
        assert env.split_to_action(s, a) == action
        assert action_name(action) == f"{s}={a}+{s - a}"
        assert parse_move(action_name(action)) == action
    with pytest.raises(ValueError):
        env.action_to_split(env.num_actions)
    with pytest.raises(ValueError):
        env.split_to_action(max_coins + 1, 1)


def test_encoding_errors():
    for bad in ((4, 2), (6, 3), (5, 0), (5, 5), (2, 1), (65, 1)):
        with pytest.raises(ValueError):
            split_to_action(*bad)
    for bad in (-1, 1000):
        with pytest.raises(ValueError):
            action_to_split(bad)


def test_parse_move():
    a = split_to_action(7, 3)
    for text in ("7=3+4", " 7 = 4 + 3 ", "7 3", "7 4", "7,3", "7:4", "3+4", "7->3"):
        assert parse_move(text) == a, text
    env = CoinSplit(7)
    assert env.parse_move("5=2+3") == split_to_action(5, 2)
    for text in (
        "",
        "7",
        "seven",
        "7=3+3",
        "6=3+3",
        "7 0",
        "7 7",
        "7=1+2+4",
        "3 1 2",
        "4=2+2",
        "-7 3",
        "7.5 3",
    ):
        with pytest.raises(ValueError):
            parse_move(text)
    with pytest.raises(ValueError):
        env.parse_move("8=3+5")  # larger than max_coins


def test_constructor_errors():
    for kwargs in (
        {"coins": 2},
        {"coins": 0},
        {"coins": 9, "max_coins": 8},
        {"coins": 7, "max_coins": 65},
        {"coins": 70},
    ):
        with pytest.raises(ValueError):
            envs.make("coin_split", **kwargs)
    with pytest.raises(ValueError):
        envs.make("coin_split", piles=3)
    env = envs.make("coin_split", coins=5, max_coins=9)
    assert isinstance(env, CoinSplit)
    assert env.observation_shape == (1, 9, 3 + 2) and env.num_actions == 16
    assert CoinSplit().coins == 7 and CoinSplit().max_coins == 7
    assert CoinSplit(64).observation_shape == (1, 64, 8 + 2)
    assert env.symmetries.size == 1  # an impartial game of piles: no symmetries
    assert env.max_plies == 5 - 1  # every split adds a pile


def test_render():
    env = CoinSplit(7, 9)
    counts = np.zeros(10, np.int8)
    counts[[4, 2, 1]] = 1
    state = env.state_from_counts(counts)
    assert env.render(state) == "piles: 4 2 1  (player 0 to move)"
    state = env.init(jax.random.key(0))
    assert env.render(state) == "piles: 7  (player 0 to move)"
    state = env.step(state, env.parse_move("7=3+4"))
    assert env.render(state) == "piles: 4 3  (player 1 to move)"
    for move in ("4=1+3", "3=1+2", "3=1+2"):
        state = env.step(state, env.parse_move(move))
    text = env.render(state)
    assert text.startswith("piles: 2 2 1 1 1  (player 0 to move")
    assert "game over" in text and bool(state.terminated)
    np.testing.assert_array_equal(np.asarray(state.rewards), [-1.0, 1.0])
