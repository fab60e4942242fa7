"""Baseline players (`azjax/players.py`), rollout MCTS (`azjax/rollout_mcts.py`), random
playouts (`azjax/rollouts.py`), the AlphaGo leaf mix (`SearchConfig.rollout_lambda`) and
player specs (`azjax/player_specs.py`)."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import binomial
import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest
from ttt_reference import legal_moves, play, to_move, winner
from ttt_reference import random_play_odds as absolute_random_play_odds

import envs
from azjax import TrainConfig
from azjax.core.iteration import init_train_state
from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig, make_network
from azjax.core.players import Player, network_player
from azjax.core.rollouts import random_playout, uniform_legal_actions
from azjax.core.search import SearchConfig, make_search_fn, masked_logits, mixed_value
from azjax.core.selfplay import SelfPlayConfig
from azjax.evaluation.baselines import random_player, rollout_mcts_player, solver_player
from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import game_of, make_player
from azjax.evaluation.rollout_mcts import (
    UCTConfig,
    make_uct_search,
    uct_action_selection,
    uct_actions,
)
from azjax.run.directory.run_dir import RunDir
from azjax.run.grammar.specs import parse_spec
from envs import coin_split
from envs import tictactoe_minimax as ttt_solver
from envs.connect_four import state_from_moves
from envs.tictactoe import states_from_boards

# --------------------------------------------------------------------------------------
# Plain-Python references (independent of envs/ and azjax/).
# --------------------------------------------------------------------------------------

legal = legal_moves


def random_play_odds(b):
    """(P win, P draw, P loss) for the player to move in live board b when both sides play
    uniformly random legal moves to the end."""
    x_wins, draw, o_wins = absolute_random_play_odds(b)
    return (x_wins, draw, o_wins) if to_move(b) == 0 else (o_wins, draw, x_wins)


def immediate_wins(b):
    return [m for m in legal(b) if winner(play(b, m)) is not None]


def opponent_threats(b):
    """Empty cells where the player not to move would complete a line."""
    other = 1 - to_move(b)
    return [m for m in legal(b) if winner(b[:m] + (other,) + b[m + 1:]) == other]


@functools.lru_cache(maxsize=None)
def coin_split_random_expectation(piles):
    """Expected result of uniformly random play (over legal split actions, i.e. distinct
    (pile size, smaller part) pairs) for the player to move; piles a sorted tuple."""
    moves = [(s, a) for s in sorted(set(piles)) for a in range(1, (s - 1) // 2 + 1)]
    if not moves:
        return -1.0  # the player to move has no move and loses
    total = 0.0
    for s, a in moves:
        child = list(piles)
        child.remove(s)
        total -= coin_split_random_expectation(tuple(sorted(child + [a, s - a])))
    return total / len(moves)


def grundy(n):
    """Grundy numbers of single piles 0..n (mex over splits into two unequal piles)."""
    g = [0] * (n + 1)
    for s in range(n + 1):
        options = {g[a] ^ g[s - a] for a in range(1, s) if a != s - a}
        g[s] = min(set(range(len(options) + 1)) - options)
    return g


def stack(states):
    return jax.tree.map(lambda *x: jnp.stack(x), *states)


def boards_to_states(boards):
    return states_from_boards(np.array(boards))


@pytest.fixture(scope="module")
def ttt():
    return envs.make("tictactoe")


@pytest.fixture(scope="module")
def c4():
    return envs.make("connect_four")


@pytest.fixture(scope="module")
def live_boards():
    sol = ttt_solver.solution()
    return [tuple(int(v) for v in sol.boards[i]) for i in sol.live]


# --------------------------------------------------------------------------------------
# Rollout MCTS
# --------------------------------------------------------------------------------------


@functools.cache
def _jitted_step(env):
    """`env.step` compiled once for all the positions it is called on."""
    return jax.jit(env.step)


def _connect_four_reference(env, state):
    """Moves that win at once, and moves after which the opponent cannot win at once,
    found by stepping the env (no search)."""
    step = _jitted_step(env)
    mover = int(state.current_player)
    wins, safe = [], []
    for a in np.flatnonzero(np.asarray(state.legal_action_mask)):
        child = step(state, jnp.int32(a))
        if float(child.rewards[mover]) == 1.0:
            wins.append(int(a))
            continue
        replies = [step(child, jnp.int32(r)) for r in np.flatnonzero(child.legal_action_mask)]
        if all(float(r.rewards[1 - mover]) < 1.0 for r in replies):
            safe.append(int(a))
    return wins, safe


def test_rollout_mcts_wins_and_blocks_in_connect_four(c4):
    # 121314: X has three in column 1 and O three on the bottom row (threat in column 5):
    #         X must win in column 1 rather than block.  112233: X wins on the bottom row.
    # 12131:  O must block column 1.  17273: O must block the bottom row at column 4.
    win_moves = ["121314", "112233"]
    block_moves = ["12131", "17273"]
    states = [state_from_moves(m) for m in win_moves + block_moves]
    expected = []
    for moves, state in zip(win_moves + block_moves, states):
        wins, safe = _connect_four_reference(c4, state)
        if moves in win_moves:
            assert len(wins) == 1, moves
            expected.append(wins)
        else:
            assert not wins and len(safe) == 1, moves
            expected.append(safe)
    assert expected == [[0], [3], [0], [3]]
    # (a 2-ply block needs more simulations than a win in one: 400 for all). Each of the
    # 8 copies of the 4 positions is an independent trial: offline (other keys) 0 misses
    # in 2,048 trials of each position, so the miss rate is below 0.0022 (one-sided 99%)
    # and more than the misses allowed occur with chance < 1e-3. The last position, with
    # column 1 full, checks that a full column is never visited.
    copies = 8
    states = stack([state_from_moves(m) for m in win_moves + block_moves] * copies
                   + [state_from_moves("1111114")])
    search = jax.jit(make_uct_search(c4, UCTConfig(num_simulations=400)))
    visits = np.asarray(search(jax.random.key(0), states).summary().visit_counts)
    missed = int((visits[:-1].argmax(-1) != [0, 3, 0, 3] * copies).sum())
    allowed = binomial.max_failures(4 * copies, binomial.upper_bound(0, 2048))
    assert allowed == 2
    assert missed <= allowed
    assert visits[-1, 0] == 0 and np.all(visits[-1, 1:] >= 1)
    np.testing.assert_array_equal(visits.sum(-1), [400.0] * (4 * copies + 1))


# Slow: two hundred-simulation rollout searches of some 300 positions each.
@pytest.mark.slow
def test_rollout_mcts_keeps_the_win_and_blocks_in_tictactoe(ttt, live_boards):
    # Every 8th live position with an immediate win: the move played must keep the win
    # (an immediate win, or a fork that wins as surely, per the exact solver).
    win_boards = [b for b in live_boards if immediate_wins(b)][::8]
    assert len(win_boards) > 250
    # Hand-picked positions where the opponent threatens one cell and the mover, with no
    # immediate win and not lost, must block it.
    block_boards = [
        (0, 0, -1, -1, 1, -1, -1, -1, -1),  # O to move blocks at 2
        (0, -1, -1, 0, 1, -1, -1, -1, -1),  # O blocks at 6
        (0, 1, 0, -1, 0, -1, 1, -1, -1),  # O blocks at 8
        (1, -1, -1, 1, 0, -1, -1, -1, 0),  # X blocks at 6
    ]
    block_answers = [2, 6, 8, 6]
    for b, answer in zip(block_boards, block_answers):
        assert not immediate_wins(b) and ttt_solver.value(b) >= 0
        assert opponent_threats(b) == [answer]
    # Each (position, key) is an independent trial. Offline (other keys): 0 misses in
    # 18,880 win trials (64 keys) and 0 in 8,192 trials of each block position, so the
    # miss rates are below 2.5e-4 and 5.7e-4 (one-sided 99%); more misses than allowed
    # occur with chance < 5e-4 for each kind, < 1e-3 for the test.
    act = jax.jit(uct_actions(ttt, UCTConfig(num_simulations=200)))
    states = boards_to_states(win_boards + block_boards)
    missed_wins = missed_blocks = 0
    for seed in range(2):
        actions = np.asarray(act(states, jax.random.key(seed))).tolist()
        missed_wins += sum(a not in ttt_solver.optimal_moves(b)
                           for b, a in zip(win_boards, actions))
        missed_blocks += sum(a != b for a, b in zip(actions[len(win_boards):], block_answers))
    alpha = binomial.FALSE_FAILURE / 2
    allowed_wins = binomial.max_failures(2 * len(win_boards), binomial.upper_bound(0, 18880), alpha)
    allowed_blocks = binomial.max_failures(2 * len(block_boards), binomial.upper_bound(0, 8192),
                                           alpha)
    assert (allowed_wins, allowed_blocks) == (2, 1)
    assert missed_wins <= allowed_wins and missed_blocks <= allowed_blocks


def test_uct_visits_every_legal_root_move_once(ttt):
    """Tic-tac-toe boards with 5 empty cells: 5 simulations visit each legal move once
    (unvisited legal moves first) and no occupied cell."""
    boards = [(0, 1, 0, -1, -1, 1, -1, -1, -1), (-1, -1, 0, -1, 1, -1, 0, 1, -1),
              (-1, -1, -1, -1, 0, 1, 0, -1, 1)]
    legal_mask = np.array([[v == -1 for v in b] for b in boards])
    tree = jax.jit(make_uct_search(ttt, UCTConfig(num_simulations=5)))(
        jax.random.key(0), boards_to_states(boards))
    np.testing.assert_array_equal(tree.summary().visit_counts, legal_mask.astype(np.float32))


class Embedding(NamedTuple):
    legal_action_mask: jax.Array


def _hand_tree(visits, qvalues, legal_mask, node_visits):
    """An unbatched one-node mctx tree with these root statistics."""
    visits = jnp.asarray([visits], jnp.int32)
    num_actions = visits.shape[-1]
    zeros = jnp.zeros((1, num_actions), jnp.float32)
    return mctx.Tree(
        node_visits=jnp.asarray([node_visits], jnp.int32),
        raw_values=jnp.zeros(1),
        node_values=jnp.zeros(1),
        parents=jnp.full(1, -1, jnp.int32),
        action_from_parent=jnp.full(1, -1, jnp.int32),
        children_index=jnp.full((1, num_actions), -1, jnp.int32),
        children_prior_logits=zeros,
        children_visits=visits,
        # qvalue = reward + discount * value: put the whole value in the reward
        children_rewards=jnp.asarray([qvalues], jnp.float32),
        children_discounts=zeros,
        children_values=zeros,
        embeddings=Embedding(jnp.asarray([legal_mask])),
        root_invalid_actions=jnp.asarray(~np.asarray(legal_mask)),
        extra_data=None,
    )


def _ucb1(visits, qvalues, legal_mask, node_visits, c):
    """Plain-Python UCB1 choice (None where several unvisited legal moves tie)."""
    unvisited = [a for a in range(len(visits)) if legal_mask[a] and visits[a] == 0]
    if unvisited:
        return unvisited[0] if len(unvisited) == 1 else None
    scores = {a: (qvalues[a] + 1) / 2 + c * math.sqrt(math.log(max(node_visits, 1)) / visits[a])
              for a in range(len(visits)) if legal_mask[a]}
    return max(scores, key=scores.get)


def test_uct_action_selection_matches_ucb1():
    select = jax.jit(lambda key, tree, c: uct_action_selection(key, tree, 0, 0, exploration=c))
    cases = [
        # all visited: UCB1 decides
        ([3, 5, 2, 10], [0.2, 0.5, -0.4, 0.6], [True] * 4, 21, math.sqrt(2)),
        ([3, 5, 2, 10], [0.2, 0.5, -0.4, 0.6], [True] * 4, 21, 0.0),
        ([3, 5, 2, 10], [0.2, 0.5, -0.4, 0.6], [True] * 4, 21, 5.0),
        ([30, 1, 4, 8], [0.9, -0.9, 0.0, 0.3], [True] * 4, 44, 1.0),
        # the best UCB1 score is illegal: never chosen
        ([1, 5, 2, 10], [1.0, 0.5, -0.4, 0.6], [False, True, True, True], 19, 1.0),
        # one unvisited legal move goes first; the unvisited illegal one is ignored
        ([0, 5, 2, 0], [0.0, 0.9, 0.9, 0.0], [False, True, True, True], 8, 1.0),
    ]
    for visits, q, mask, n, c in cases:
        expected = _ucb1(visits, q, mask, n, c)
        for seed in range(3):
            got = int(select(jax.random.key(seed), _hand_tree(visits, q, mask, n), c))
            assert got == expected, (visits, q, mask, c)

    # a finished game (no legal move): the least visited child
    tree = _hand_tree([4, 2, 7], [0.0, 0.0, 0.0], [False] * 3, 14)
    assert int(select(jax.random.key(0), tree, 1.0)) == 1


def test_uct_breaks_ties_between_unvisited_moves_at_random(ttt):
    """UCB1 tries the unvisited moves first, in random order (the 'random tie-break' of
    `uct_action_selection`)."""
    select = jax.jit(lambda key, tree: uct_action_selection(key, tree, 0, 0, exploration=1.0))
    tree = _hand_tree([0, 4, 0, 0, 3], [0.0, 1.0, 0.0, 0.0, 1.0],
                      [True, True, False, True, True], 8)
    chosen = {int(select(jax.random.key(s), tree)) for s in range(40)}
    assert chosen == {0, 3}


def test_rollout_mcts_with_few_simulations_can_play_any_move(ttt):
    """With fewer simulations than legal moves, the unvisited moves tried are a random
    subset, so any first move of tic-tac-toe can be played: 3 simulations from 200 empty
    boards play each of the 9 cells sometimes."""
    states = boards_to_states([(-1,) * 9] * 200)
    actions = np.asarray(jax.jit(rollout_mcts_player(ttt, 3).act)(states, jax.random.key(0)))
    assert set(actions.tolist()) == set(range(9))


def test_uct_config_validation(ttt):
    with pytest.raises(ValueError, match="num_simulations"):
        make_uct_search(ttt, UCTConfig(num_simulations=0))
    with pytest.raises(ValueError, match="exploration"):
        rollout_mcts_player(ttt, 10, exploration=-1.0)


# Slow: 100 games of 200-simulation rollout search, a statistical bound.
@pytest.mark.slow
def test_rollout_mcts_strength_on_tictactoe(ttt):
    mcts = rollout_mcts_player(ttt, 200)
    assert mcts.name == "mcts:200" and mcts.jittable
    against_random = play_match(ttt, mcts, random_player(), jax.random.key(0), 100)
    # 100 independent games, half from each seat. Offline (other keys, 1,000 games per
    # seat): 20 losses and 107 games not won in 2,000 (as X: 1 and 19; as O: 19 and 88),
    # rates below 0.017 and 0.067 (one-sided 99%). Each count exceeds its bound with
    # chance < 5e-4, the test fails falsely with chance < 1e-3.
    alpha = binomial.FALSE_FAILURE / 2
    allowed_losses = binomial.max_failures(100, binomial.upper_bound(20, 2000), alpha)
    allowed_not_won = binomial.max_failures(100, binomial.upper_bound(107, 2000), alpha)
    assert (allowed_losses, allowed_not_won) == (7, 16)
    assert against_random.losses <= allowed_losses
    assert against_random.wins >= 100 - allowed_not_won


# --------------------------------------------------------------------------------------
# Random playouts
# --------------------------------------------------------------------------------------


def test_uniform_legal_actions(ttt):
    board = (0, -1, 1, -1, -1, 0, 1, -1, 0)  # legal: 1, 3, 4, 7
    n = 8000
    states = boards_to_states([board] * n + [(0, 0, 0, 1, 1, -1, -1, -1, -1)])  # last: X won
    actions = np.asarray(jax.jit(uniform_legal_actions)(states, jax.random.key(0)))
    assert actions[-1] == 0
    counts = np.bincount(actions[:n], minlength=9)
    assert set(np.flatnonzero(counts)) == {1, 3, 4, 7}
    # each legal move 1/4 of the time, within 5 standard deviations
    assert np.all(np.abs(counts[[1, 3, 4, 7]] / n - 0.25) < 5 * math.sqrt(0.25 * 0.75 / n))


def test_random_playout_matches_exact_random_play_in_tictactoe(ttt):
    boards = [
        (-1,) * 9,
        (0, -1, -1, -1, 1, -1, -1, -1, -1),
        (0, 1, -1, -1, 0, -1, -1, -1, 1),
        (0, 1, 0, -1, -1, -1, -1, -1, -1),  # O to move
        (0, 0, -1, -1, 1, -1, -1, -1, -1),  # O to move, X threatens 2
    ]
    # finished games are worth 0 (the reward was paid by the move that ended them)
    finished = [(0, 0, 0, 1, 1, -1, -1, -1, -1),  # X won, O to move
                (0, 1, 0, 0, 1, 1, 1, 0, 0)]  # full board, draw
    n = 5000
    states = boards_to_states([b for b in boards for _ in range(n)] + finished)
    assert np.all(np.asarray(states.terminated[-2:]))
    out = np.asarray(jax.jit(random_playout, static_argnums=0)(ttt, states, jax.random.key(0)))
    np.testing.assert_array_equal(out[-2:], [0.0, 0.0])
    results = out[:-2].reshape(len(boards), n)
    assert set(np.unique(results)) <= {-1.0, 0.0, 1.0}
    for b, row in zip(boards, results):
        win, draw, loss = random_play_odds(b)
        expectation, decisive = win - loss, win + loss
        sigma = math.sqrt((decisive - expectation**2) / n)
        assert abs(row.mean() - expectation) < 5 * sigma + 1e-9, b
        assert abs((row == 0).mean() - draw) < 5 * math.sqrt(draw * (1 - draw) / n) + 1e-9, b
    win, draw, loss = random_play_odds((-1,) * 9)
    assert 0.58 < win < 0.59 and 0.12 < draw < 0.13  # the known first-player odds

    # the ply cap: after one ply only the immediate wins have paid (2 of 3 moves win)
    capped = (0, 1, 0, 1, 0, 1, -1, -1, -1)  # X to move: 6 and 8 win, 7 does not
    assert sorted(immediate_wins(capped)) == [6, 8] and legal(capped) == [6, 7, 8]
    one_ply = np.asarray(jax.jit(random_playout, static_argnums=(0, 3))(
        ttt, boards_to_states([capped] * n), jax.random.key(2), 1))
    assert set(np.unique(one_ply)) == {0.0, 1.0}
    assert abs(one_ply.mean() - 2 / 3) < 5 * math.sqrt(2 / 9 / n)


def test_random_playout_matches_exact_random_play_in_coin_split():
    env = envs.make("coin_split", coins=10)
    positions = coin_split.all_positions(10)
    picks = [0] + list(range(3, len(positions.counts), 7))
    n = 3000
    counts = np.repeat(positions.counts[picks], n, axis=0)
    states = jax.jit(jax.vmap(env.state_from_counts))(jnp.asarray(counts))
    results = np.asarray(jax.jit(random_playout, static_argnums=0)(
        env, states, jax.random.key(0))).reshape(len(picks), n)
    assert set(np.unique(results)) <= {-1.0, 1.0, 0.0}
    for i, row in zip(picks, results):
        piles = tuple(sorted(p for p, c in enumerate(positions.counts[i]) for _ in range(c)))
        if positions.terminal[i]:
            assert np.all(row == 0.0)
            continue
        expectation = coin_split_random_expectation(piles)
        sigma = math.sqrt(max(1 - expectation**2, 1e-12) / n)
        assert abs(row.mean() - expectation) < 5 * sigma + 1e-9, piles


# --------------------------------------------------------------------------------------
# The AlphaGo leaf mix
# --------------------------------------------------------------------------------------

WEIGHTS = jax.random.normal(jax.random.key(42), (27, 9))
SEARCH = SearchConfig(policy="gumbel", num_simulations=24, max_num_considered_actions=9)
# Playouts compiled in; the traced rollout_lambda sets the mix.
MIXED = dataclasses.replace(SEARCH, rollout_lambda=0.5)
SEARCH_BOARDS = [(-1,) * 9, (0, -1, -1, -1, 1, -1, -1, -1, -1),
                 (0, 1, -1, -1, 0, -1, -1, -1, 1), (0, 1, 0, -1, -1, -1, -1, -1, -1)]


def stub_apply(params, obs):
    """A fixed 'network' with params (weights, value): logits a linear map of the
    observation, and the same (garbage) value everywhere."""
    weights, value = params
    logits = obs.reshape(obs.shape[0], -1).astype(jnp.float32) @ weights
    return logits, jnp.broadcast_to(value, (obs.shape[0],)).astype(jnp.float32)


def reference_search(env, apply_fn, config, params, key, states):
    """Plain AlphaZero (Gumbel) search on mctx, written independently of azjax.core.search
    (`key` as it is: one with playouts compiled in splits off the root's first, see
    `playout_search_key`)."""

    def recurrent_fn(params, rng_key, action, state):
        mover = state.current_player
        nxt = jax.vmap(env.step)(state, action)
        logits, value = apply_fn(params, nxt.observation)
        reward = nxt.rewards[jnp.arange(action.shape[0]), mover]
        return mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(nxt.terminated, 0.0, -1.0),
            prior_logits=masked_logits(logits, nxt.legal_action_mask),
            value=jnp.where(nxt.terminated, 0.0, value),
        ), nxt

    logits, value = apply_fn(params, states.observation)
    root = mctx.RootFnOutput(prior_logits=masked_logits(logits, states.legal_action_mask),
                             value=value, embedding=states)
    return mctx.gumbel_muzero_policy(
        params, key, root, recurrent_fn, num_simulations=config.num_simulations,
        invalid_actions=~states.legal_action_mask,
        max_num_considered_actions=config.max_num_considered_actions,
        gumbel_scale=config.gumbel_scale)


def playout_search_key(key):
    """The key a search with playouts compiled in gives mctx (it splits off the root's)."""
    return jax.random.split(key)[1]


@pytest.fixture(scope="module")
def plain_search(ttt):
    """`reference_search` of SEARCH with the stub network, compiled once for the tests."""
    return jax.jit(functools.partial(reference_search, ttt, stub_apply, SEARCH))


@pytest.fixture(scope="module")
def search_states():
    return boards_to_states([b for b in SEARCH_BOARDS for _ in range(8)])


@pytest.fixture(scope="module")
def mixed_search(ttt):
    """`search(value, rollout_lambda, key, states)` with the stub network, one compile."""
    search = jax.jit(make_search_fn(ttt, stub_apply, MIXED))

    def run(value, rollout_lambda, key, states):
        settings = MIXED.as_arrays().replace(rollout_lambda=jnp.float32(rollout_lambda))
        return search((WEIGHTS, jnp.float32(value)), settings, key, states)

    return run


def test_rollout_lambda_zero_is_the_plain_search(search_states, mixed_search, plain_search):
    key = jax.random.key(7)
    mixed = mixed_search(0.3, 0.0, key, search_states)
    plain = plain_search((WEIGHTS, jnp.float32(0.3)), playout_search_key(key), search_states)
    np.testing.assert_array_equal(mixed.search_tree.summary().visit_counts,
                                  plain.search_tree.summary().visit_counts)
    np.testing.assert_array_equal(mixed.action, plain.action)
    np.testing.assert_allclose(mixed.search_tree.node_values, plain.search_tree.node_values,
                               atol=1e-6)


def test_search_without_rollout_lambda_is_exactly_alphazero(ttt, search_states, plain_search):
    # rollout_lambda = 0 in the config: no playouts compiled, and the key is not split.
    key = jax.random.key(11)
    params = (WEIGHTS, jnp.float32(0.3))
    ours = jax.jit(make_search_fn(ttt, stub_apply, SEARCH))(params, SEARCH.as_arrays(), key,
                                                            search_states)
    plain = plain_search(params, key, search_states)
    np.testing.assert_array_equal(ours.search_tree.summary().visit_counts,
                                  plain.search_tree.summary().visit_counts)
    np.testing.assert_array_equal(ours.action, plain.action)


def test_rollout_lambda_mixes_playouts_into_root_and_leaf_values(ttt, search_states,
                                                                  mixed_search):
    garbage = 0.7
    key = jax.random.key(3)
    root_key = jax.random.split(key)[0]
    z_root = np.asarray(random_playout(ttt, search_states, root_key))
    assert len(set(z_root.tolist())) >= 2
    for lam in (0.0, 0.25, 1.0):
        tree = mixed_search(garbage, lam, key, search_states).search_tree
        raw = np.asarray(tree.raw_values)
        # the root: (1 - lambda) * network value + lambda * the playout with the root key
        np.testing.assert_allclose(raw[:, 0], (1 - lam) * garbage + lam * z_root, atol=1e-6)
        # every expanded live leaf: (1 - lambda) * value + lambda * z, z in {-1, 0, 1};
        # a finished leaf is worth 0
        expanded = np.asarray(tree.node_visits) > 0
        expanded[:, 0] = False
        live = ~np.asarray(tree.embeddings.terminated)
        values = raw[expanded & live]
        assert values.size > 100
        np.testing.assert_array_equal(raw[expanded & ~live], 0.0)
        if lam == 0.0:
            np.testing.assert_allclose(values, garbage, atol=1e-6)
            continue
        z = (values - (1 - lam) * garbage) / lam
        np.testing.assert_allclose(z, np.rint(z), atol=1e-5)
        assert set(np.rint(z).tolist()) == {-1.0, 0.0, 1.0}


def test_rollout_lambda_one_ignores_the_value_head(search_states, mixed_search):
    """With lambda = 1 the root value (and the whole search) comes from the rollouts
    alone: two value heads of opposite garbage give the same search; lambda = 0 does not."""
    key = jax.random.key(5)
    low, high = (mixed_search(v, 1.0, key, search_states) for v in (-0.9, 0.9))
    np.testing.assert_array_equal(low.search_tree.node_values, high.search_tree.node_values)
    np.testing.assert_array_equal(low.action, high.action)
    low, high = (mixed_search(v, 0.0, key, search_states) for v in (-0.9, 0.9))
    assert not np.allclose(low.search_tree.summary().value, high.search_tree.summary().value)
    # lambda = 0.5 lies in between: the root's raw value halfway to the rollout
    half = mixed_search(0.9, 0.5, key, search_states).search_tree.raw_values[:, 0]
    one = mixed_search(0.9, 1.0, key, search_states).search_tree.raw_values[:, 0]
    np.testing.assert_allclose(half, 0.5 * 0.9 + 0.5 * np.asarray(one), atol=1e-6)


def test_mixed_value_and_validation(ttt, search_states):
    value = jnp.linspace(-0.9, 0.9, search_states.current_player.shape[0])
    key = jax.random.key(9)
    z = np.asarray(random_playout(ttt, search_states, key))
    mix = jax.jit(mixed_value, static_argnums=0)
    for lam in (0.0, 0.4, 1.0):
        got = mix(ttt, value, search_states, jnp.float32(lam), key)
        np.testing.assert_allclose(got, (1 - lam) * np.asarray(value) + lam * z, atol=1e-6)
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match="rollout_lambda must be in"):
            SearchConfig(rollout_lambda=bad).validate()
        with pytest.raises(ValueError, match="rollout_lambda"):
            make_search_fn(ttt, stub_apply, SearchConfig(rollout_lambda=bad))
    SearchConfig(rollout_lambda=1.0).validate()
    SearchConfig(rollout_lambda=0.0).validate()


# --------------------------------------------------------------------------------------
# Solver, network and search players
# --------------------------------------------------------------------------------------


def test_tictactoe_solver_plays_only_optimal_moves(ttt, live_boards):
    player = solver_player(ttt)
    assert player.name == "solver" and player.jittable
    act = jax.jit(player.act)
    states = boards_to_states(live_boards)
    optimal = np.zeros((len(live_boards), 9), bool)
    for i, b in enumerate(live_boards):
        optimal[i, ttt_solver.optimal_moves(b)] = True
    seen = np.zeros_like(optimal)
    for seed in range(4):
        actions = np.asarray(act(states, jax.random.key(seed)))
        assert np.all(optimal[np.arange(len(live_boards)), actions])
        seen[np.arange(len(live_boards)), actions] = True
    # the choice among optimal moves is random: the empty board (all 9 moves draw)
    first = np.asarray(act(boards_to_states([(-1,) * 9] * 200), jax.random.key(11)))
    assert set(first.tolist()) == set(range(9))
    assert seen.sum() > len(live_boards)


def test_coin_split_solver_moves_to_grundy_zero(ttt):
    coins = 14
    env = envs.make("coin_split", coins=coins)
    positions = coin_split.all_positions(coins)
    live = ~positions.terminal
    states = jax.jit(jax.vmap(env.state_from_counts))(jnp.asarray(positions.counts[live]))
    act = jax.jit(solver_player(env).act)
    step = jax.jit(jax.vmap(env.step))
    g = grundy(coins)

    def nim(counts):
        out = 0
        for size, c in enumerate(counts):
            if c % 2:
                out ^= g[size]
        return out

    before = [nim(c) for c in positions.counts[live]]
    assert sum(v != 0 for v in before) > 20 and sum(v == 0 for v in before) > 5
    for seed in range(2):
        after = step(states, act(states, jax.random.key(seed)))
        counts = np.asarray(after.counts)
        # a legal move everywhere (an illegal one would forfeit), one more pile
        assert np.all(counts.sum(-1) == positions.counts[live].sum(-1) + 1)
        for b, c in zip(before, counts):
            if b != 0:
                assert nim(c) == 0
    with pytest.raises(ValueError, match="no exact solver for 'connect_four'"):
        solver_player(envs.make("connect_four"))


def test_network_player_is_the_masked_argmax_or_a_masked_sample(ttt, live_boards):
    rng = np.random.default_rng(0)
    boards = live_boards[::37]
    logits = jnp.asarray(rng.normal(size=(len(boards), 9)), jnp.float32)

    def apply_fn(params, obs):
        return params, jnp.zeros(obs.shape[0])

    states = boards_to_states(boards)
    greedy = network_player(apply_fn, logits, name="net")
    assert greedy.name == "net" and greedy.jittable
    actions = np.asarray(jax.jit(greedy.act)(states, jax.random.key(0)))
    for b, row, a in zip(boards, np.asarray(logits), actions):
        moves = legal(b)
        assert a == max(moves, key=lambda m: row[m])

    # sampling: only legal moves, with the softmax over the legal ones
    board = (0, -1, 1, -1, -1, 0, 1, -1, 0)
    n = 8000
    row = np.array([5.0, 0.0, 5.0, 1.0, -1.0, 5.0, 5.0, 0.5, 5.0], np.float32)
    sampler = network_player(apply_fn, jnp.asarray(np.tile(row, (n, 1))), greedy=False)
    actions = np.asarray(jax.jit(sampler.act)(boards_to_states([board] * n), jax.random.key(1)))
    moves = legal(board)
    expected = np.exp(row[moves]) / np.exp(row[moves]).sum()
    freq = np.bincount(actions, minlength=9) / n
    assert freq[[m for m in range(9) if m not in moves]].sum() == 0
    np.testing.assert_allclose(freq[moves], expected, atol=5 * math.sqrt(0.25 / n))


# --------------------------------------------------------------------------------------
# Player specs
# --------------------------------------------------------------------------------------

TINY = TrainConfig().replace(
    game="tictactoe",
    network=NetworkConfig(channels=8, policy_filters=2),
    search=SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=9),
    selfplay=SelfPlayConfig(num_games=8, steps_per_iteration=9),
    learner=LearnerConfig(batch_size=16),
    replay_capacity=256,
    gradient_steps=1,
    iterations=1,
    eval_every=0,
    eval_search_every=0,
    checkpoint_every=1,
    stop_when_perfect=False,
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny tic-tac-toe run directory written with the trainer's own writers (config
    and orbax checkpoints; training itself is covered by test_training.py): step 1 holds
    one random network, step 2 another. Returns (path, {step: params})."""
    path = tmp_path_factory.mktemp("players") / "run"
    env = TINY.make_env()
    path.mkdir()
    run = RunDir(path)
    run.save_config(TINY)
    run.checkpoints.open_for_saving()
    params = {}
    for step in (1, 2):
        state = init_train_state(env, TINY.program, jax.random.key(step))
        run.checkpoints.save(step, state, TINY, records=[])
        params[step] = state.params
    run.checkpoints.close()
    return path, params


def test_parse_spec():
    spec = parse_spec(" mcts:50, c=2 ")
    assert (spec.kind, spec.arg, spec.options, spec.text) == ("mcts", "50", {"c": "2"},
                                                              "mcts:50, c=2")
    spec = parse_spec("alphago:runs/x,lambda=0.5,sims=8")
    assert (spec.kind, spec.arg, spec.options) == ("alphago", "runs/x",
                                                   {"lambda": "0.5", "sims": "8"})
    assert parse_spec("random").arg is None


@pytest.mark.parametrize("text, message", [
    ("minimax:3", (r"unknown player 'minimax:3': the kind must be one of alphabeta, "
                   r"alphago, alphazero, gnugo, mcts, network, random, solver$")),
    ("random:3", r"'random' takes no argument"),
    ("mcts", r"'mcts' needs an argument \('mcts:...'\)"),
    ("network", r"'network' needs an argument"),
    ("alphabeta:", r"'alphabeta' needs an argument"),
    ("mcts:50,c", r"expected key=value after the comma, got 'c'"),
    ("mcts:50,=3", r"expected key=value"),
])
def test_parse_spec_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_spec(text)


@pytest.mark.parametrize("text, message", [
    ("mcts:many", r"the simulation count must be a number, got 'many'"),
    ("mcts:50,c=high", r"c must be a number, got 'high'"),
    ("mcts:50,sims=3", r"unknown option\(s\) \['sims'\]; 'mcts' takes \['c'\]"),
    ("random,seed=1", r"unknown option\(s\) \['seed'\]; 'random' takes none"),
    ("solver,depth=2", r"unknown option\(s\) \['depth'\]"),
    ("alphabeta:x", r"the depth must be a number, got 'x'"),
    ("alphabeta:3,eval=fancy", r"eval must be 'lines' or 'zero'"),
    ("mcts:0", r"num_simulations must be >= 1"),
])
def test_make_player_errors(ttt, text, message):
    with pytest.raises(ValueError, match=message):
        make_player(text, ttt)


def test_make_player_baselines(ttt, monkeypatch):
    import azjax.evaluation.baselines

    assert make_player("mcts:50", ttt).name == "mcts:50"
    assert make_player("mcts:50", ttt, name="uct").name == "uct"
    assert make_player("random", ttt).name == "random"
    solver = make_player("solver", ttt)
    assert solver.name == "solver" and solver.jittable
    alphabeta = make_player("alphabeta:3,eval=zero", ttt)
    assert alphabeta.name == "alphabeta:3,eval=zero" and not alphabeta.jittable
    with pytest.raises(ValueError, match="no exact solver"):
        make_player("solver", envs.make("connect_four"))
    assert game_of(["random", "mcts:5"]) is None

    # the simulation count and c reach the rollout MCTS (c defaults to sqrt(2)), and the
    # player it builds is the one returned
    calls, built = [], []
    original = azjax.evaluation.baselines.rollout_mcts_player

    def spy(*args):
        calls.append(args)
        built.append(original(*args))
        return built[-1]

    monkeypatch.setattr(azjax.evaluation.baselines, "rollout_mcts_player", spy)
    tuned, default = make_player("mcts:20,c=0.5", ttt), make_player("mcts:7", ttt, name="m")
    assert calls == [(ttt, 20, 0.5, "mcts:20,c=0.5"), (ttt, 7, math.sqrt(2), "m")]
    assert tuned is built[0] and default is built[1]
    assert (tuned.name, default.name) == ("mcts:20,c=0.5", "m") and tuned.jittable


def test_run_dir_specs(ttt, run, search_configs):
    run_dir, params = run
    assert game_of(["random", f"network:{run_dir}"]).name == "tictactoe"
    states = boards_to_states(SEARCH_BOARDS)
    key = jax.random.key(0)
    legal_mask = np.asarray(states.legal_action_mask)

    # network:DIR is the greedy policy head of the newest checkpoint, step=S of step S
    apply = jax.jit(make_network(ttt, TINY.program.network).apply)  # one program for both
    greedy = {}
    for step in (1, 2):
        logits = np.asarray(apply(params[step], states.observation)[0])
        greedy[step] = np.argmax(np.where(legal_mask, logits, -np.inf), axis=-1)
    assert not np.array_equal(greedy[1], greedy[2])
    for text, step in ((f"network:{run_dir}", 2), (f"network:{run_dir},step=1", 1)):
        player = make_player(text, ttt)
        assert player.name == text and player.jittable
        np.testing.assert_array_equal(player.act(states, key), greedy[step])

    # greedy=false samples from the policy head: legal moves, not always the argmax
    sampler = jax.jit(make_player(f"network:{run_dir},greedy=false", ttt).act)
    sampled = np.stack([np.asarray(sampler(states, k)) for k in jax.random.split(key, 40)])
    assert np.all(np.take_along_axis(legal_mask, sampled.T, axis=1))
    assert np.any(sampled != greedy[2][None])
    with pytest.raises(ValueError, match="greedy must be true or false, got 'maybe'"):
        make_player(f"network:{run_dir},greedy=maybe", ttt)

    configs = search_configs
    alphazero = make_player(f"alphazero:{run_dir},sims=3,policy=puct", ttt, name="az")
    alphago = make_player(f"alphago:{run_dir},lambda=0.5,sims=5", ttt)
    assert alphazero.name == "az" and alphago.name == f"alphago:{run_dir},lambda=0.5,sims=5"
    assert alphazero.jittable and alphago.jittable
    search = TINY.program.search
    assert configs == [dataclasses.replace(search, policy="puct", num_simulations=3),
                       dataclasses.replace(search, num_simulations=5, rollout_lambda=0.5)]
    actions = np.asarray(jax.jit(alphago.act)(states, key))
    assert np.all(legal_mask[np.arange(len(SEARCH_BOARDS)), actions])

    with pytest.raises(ValueError, match="trained on 'tictactoe', not on 'connect_four'"):
        make_player(f"network:{run_dir}", envs.make("connect_four"))
    with pytest.raises(ValueError, match="alphago needs lambda=L"):
        make_player(f"alphago:{run_dir}", ttt)
    with pytest.raises(ValueError, match=r"rollout_lambda must be in \[0, 1\], got 2.0"):
        make_player(f"alphago:{run_dir},lambda=2", ttt)
    with pytest.raises(ValueError, match="lambda must be a number, got 'half'"):
        make_player(f"alphago:{run_dir},lambda=half", ttt)
    with pytest.raises(ValueError, match="sims must be a number, got 'lots'"):
        make_player(f"alphazero:{run_dir},sims=lots", ttt)
    with pytest.raises(ValueError, match="search.policy must be one of"):
        make_player(f"alphazero:{run_dir},policy=greedy", ttt)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['sims'\]"):
        make_player(f"network:{run_dir},sims=3", ttt)
    with pytest.raises(ValueError, match="step must be a number"):
        make_player(f"network:{run_dir},step=last", ttt)
    with pytest.raises(ValueError, match=r"no checkpoint at step 9.*steps there: \[1, 2\]"):
        make_player(f"network:{run_dir},step=9", ttt)
    with pytest.raises(ValueError, match="does not exist"):
        make_player(f"network:{run_dir / 'missing'}", ttt)
    with pytest.raises(ValueError, match="does not exist"):
        game_of([f"alphazero:{run_dir / 'missing'}"])


def test_player_is_a_frozen_record():
    player = Player("p", lambda params, states, key: states.current_player)
    assert player.jittable
    with pytest.raises(dataclasses.FrozenInstanceError):
        player.name = "q"
