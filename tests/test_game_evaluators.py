"""Evaluators: against exact ground truth (`azjax.evaluation.evaluators.PositionEvaluator`: Connect
Four solver positions, coin-split Grundy values, tic-tac-toe) and against random play for
games without one (`RandomOpponentEvaluator`: Gomoku, Go, pgx games)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from azjax.core.players import network_player, search_player
from azjax.core.search import SearchConfig
from azjax.evaluation.baselines import random_player
from azjax.evaluation.evaluators import PositionEvaluator, RandomOpponentEvaluator, make_evaluator
from azjax.evaluation.match import play_match
from envs import connect_four as c4_eval
from envs.connect_four import boards_from_moves

SEARCH = SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=4)


def packed(obs, xp=jnp):
    """Boolean observations [N, ...] as their cells' bits packed into uint32 words [N, W]
    (`xp`: jax.numpy, or numpy on the host): an exact key (equal words, equal
    observations), 32 times shorter to compare."""
    bits = obs.reshape(obs.shape[0], -1).astype(xp.uint32)
    bits = xp.pad(bits, ((0, 0), (0, -bits.shape[1] % 32)))
    words = bits.reshape(bits.shape[0], -1, 32) << xp.arange(32, dtype=xp.uint32)
    return words.sum(axis=-1, dtype=xp.uint32)


def lookup_apply(params, obs):
    """A fake `apply_fn` whose params (known words, logits table, value table) are rows
    of answers for known positions: it recognises a position by its observation (the
    first known one equal to it; row 0 for an unknown one)."""
    known, logits_table, value_table = params
    match = jnp.all(packed(obs)[:, None] == known[None], axis=-1)
    row = jnp.argmax(match, axis=1)
    return logits_table[row], value_table[row]


def lookup_network(known_obs, logits_table, value_table):
    """`lookup_apply`'s params for these known observations and their answers."""
    assert known_obs.dtype == bool
    return (packed(np.asarray(known_obs), np), np.asarray(logits_table, np.float32),
            np.asarray(value_table, np.float32))


# One policy (and value) for every table, so that their programs compile once per shape.
LOOKUP_PLAYER = network_player(lookup_apply, name="lookup")


def lookup_player(known_obs, logits_table, value_table):
    """The greedy network player of `lookup_network`'s answers."""
    return LOOKUP_PLAYER.with_params(lookup_network(known_obs, logits_table, value_table))


# ---------------------------------------------------------------------------------- C4


def test_connect_four_data_loads_with_consistent_answers():
    moves = c4_eval.load_move_set()
    values = c4_eval.load_value_set()
    assert len(moves.moves) == 1000 and moves.optimal.shape == (1000, 7)
    assert len(values.moves) == 6000
    rows = [json.loads(line) for line in (c4_eval.DATA_DIR / "dev_set.jsonl").open()]
    for row, best in zip(rows, moves.optimal):
        scores = row["scores"]
        top = max(s for s in scores if s is not None)
        assert [c for c in range(7) if scores[c] == top] == list(np.flatnonzero(best))


def test_immediate_wins_match_the_solver_scores():
    """A move that wins at once scores 22 - (the mover's stones after it), per the data's README."""
    env = envs.make("connect_four")
    rows = [json.loads(line) for line in (c4_eval.DATA_DIR / "dev_set.jsonl").open()]
    states = boards_from_moves([r["moves"] for r in rows])
    wins = c4_eval.immediate_wins(env, states)
    expected = np.array(
        [[s == 22 - (len(r["moves"]) // 2 + 1) for s in r["scores"]] for r in rows]
    )
    np.testing.assert_array_equal(wins, expected)
    assert wins.any(axis=1).mean() > 0.2  # the data's README: many easy positions


@pytest.fixture(scope="module")
def c4_evaluator_parts():
    """The game, its solved positions and their states, and its evaluator (whose ground
    truth, loaded at the first evaluation, then serves every test)."""
    env = envs.make("connect_four")
    moves = c4_eval.load_move_set()
    states = boards_from_moves(moves.moves)
    return env, moves, states, make_evaluator(env)


def test_connect_four_oracle_scores_full_marks_and_anti_oracle_none(c4_evaluator_parts):
    _, moves, states, evaluator = c4_evaluator_parts
    obs = np.asarray(states.observation)
    legal = np.asarray(states.legal_action_mask)
    oracle_logits = np.where(moves.optimal, 1.0, 0.0)
    anti_logits = np.where(legal & ~moves.optimal, 1.0, 0.0)
    ones = np.ones(len(obs), np.float32)

    assert isinstance(evaluator, PositionEvaluator) and not evaluator.can_be_perfect
    metrics = evaluator.network_metrics(lookup_player(obs, oracle_logits, ones))
    assert metrics["net_move_accuracy"] == 1.0 and metrics["net_move_accuracy_hard"] == 1.0
    # An always-positive value is right exactly on the positions the side to move wins.
    values = c4_eval.load_value_set().score
    assert metrics["net_value_accuracy"] == pytest.approx(np.mean(values[values != 0] > 0))

    assert metrics["perfect"] == 0.0  # a sample of positions cannot say "perfect"
    hard = evaluator.truth.subsets["hard"]
    assert 0.3 < hard.mean() < 0.6  # about half the positions are non-trivial
    anti = lookup_player(obs, anti_logits, ones)
    assert evaluator.network_metrics(anti)["net_move_accuracy_hard"] == 0.0


def test_connect_four_result_shares_tell_a_slower_win_from_a_blunder(c4_evaluator_parts):
    """A network that keeps every result but never takes the best score where it could
    keep the result another way: all results kept, yet optimal only where no other move
    keeps the result. One that changes the result wherever it can keeps none of the
    positions where a move changes it. Expected shares from the data's raw scores."""
    _, moves, states, evaluator = c4_evaluator_parts
    rows = [json.loads(line) for line in (c4_eval.DATA_DIR / "dev_set.jsonl").open()]
    sign = [np.sign(r["value"]) for r in rows]
    keeps = np.array([[s is not None and np.sign(s) == v for s in r["scores"]]
                      for r, v in zip(rows, sign)])
    changes = np.array([[s is not None and np.sign(s) != v for s in r["scores"]]
                        for r, v in zip(rows, sign)])
    obs = np.asarray(states.observation)
    ones = np.ones(len(obs), np.float32)
    slower = keeps & ~moves.optimal
    slow_logits = np.where(slower, 2.0, np.where(keeps, 1.0, 0.0))
    metrics = evaluator.network_metrics(lookup_player(obs, slow_logits, ones))
    assert metrics["net_result_kept"] == 1.0 and metrics["net_result_kept_hard"] == 1.0
    assert metrics["net_move_accuracy"] == pytest.approx(np.mean(~slower.any(axis=1)))
    assert 0.3 < metrics["net_move_accuracy"] < 0.7  # half the positions have a slower win

    blunder_logits = np.where(changes, 2.0, np.where(keeps, 1.0, 0.0))
    metrics = evaluator.network_metrics(
        lookup_player(obs, blunder_logits, ones))
    assert metrics["net_result_kept_hard"] == 0.0
    assert metrics["net_result_kept"] == pytest.approx(np.mean(~changes.any(axis=1)))


# ----------------------------------------------------------------------------- coin split


@pytest.mark.parametrize("coins", [7, 12])
def test_coin_split_oracle_is_perfect_and_a_loser_is_not(coins):
    env = envs.make("coin_split", coins=coins)
    evaluator = make_evaluator(env)
    assert evaluator.can_be_perfect
    truth = evaluator.truth
    solved = envs.coin_split.all_positions(coins)
    wins = solved.wins[~solved.terminal]
    np.testing.assert_array_equal(truth.counted, wins)  # the share is over winning positions
    obs = np.asarray(truth.states.observation)
    legal = np.asarray(truth.states.legal_action_mask)
    winning = truth.right_moves
    value = np.where(wins, 1.0, -1.0)

    oracle = lookup_network(obs, winning * 1.0, value)
    metrics = evaluator.network_metrics(LOOKUP_PLAYER.with_params(oracle))
    assert metrics == {"net_winning_move_share": 1.0, "net_value_accuracy": 1.0, "perfect": 1.0}
    # The search (4 simulations) starting from a perfect prior and value keeps the win.
    searching = search_player(env, lookup_apply, oracle, SEARCH)
    assert evaluator.search_metrics(searching, jax.random.key(0))[
        "search_winning_move_share"] == 1.0

    blunder = np.where(legal & ~winning, 1.0, 0.0)
    loser = lookup_player(obs, blunder, -value)
    metrics = evaluator.network_metrics(loser)
    # The blunderer only keeps a win where every legal move wins (e.g. a lone pile of 3).
    forced = ~np.any(legal & ~winning, axis=1)
    assert metrics["net_winning_move_share"] == pytest.approx(forced[wins].mean())
    assert metrics["net_value_accuracy"] == 0.0
    assert metrics["perfect"] == 0.0


# ------------------------------------------------------------------------------ tic-tac-toe


def test_tictactoe_oracle_is_perfect_and_one_wrong_move_is_not():
    env = envs.make("tictactoe")
    evaluator = make_evaluator(env)
    assert evaluator.can_be_perfect
    truth = evaluator.truth
    obs = np.asarray(truth.states.observation)
    optimal = truth.right_moves
    assert optimal.shape == (4520, 9) and truth.counted.all()
    zeros = np.zeros(len(obs), np.float32)

    oracle = lookup_player(obs, optimal * 1.0, zeros)
    metrics = evaluator.network_metrics(oracle)
    assert metrics == {"net_optimal_share": 1.0, "net_unbeatable_first": 1.0,
                       "net_unbeatable_second": 1.0, "net_unbeatable": 1.0, "perfect": 1.0}

    # One blunder in a position the first player reaches: O answers a corner with an
    # edge, a known loss; the table is no longer optimal everywhere, nor perfect.
    legal = np.asarray(truth.states.legal_action_mask)
    board = np.asarray(truth.states.board)
    corner_then_o = np.flatnonzero((board == -1).sum(1) == 8)
    blunders = [i for i in corner_then_o if board[i, 0] == 0 and not optimal[i, 1] and legal[i, 1]]
    assert blunders, "X in a corner, O to move: the adjacent edge loses"
    wrong = optimal * 1.0
    wrong[blunders[0]] = np.eye(9)[1]
    metrics = evaluator.network_metrics(lookup_player(obs, wrong, zeros))
    assert metrics["net_optimal_share"] == pytest.approx(1 - 1 / 4520)
    assert metrics["net_unbeatable_first"] == 1.0 and metrics["net_unbeatable_second"] == 0.0
    assert metrics["perfect"] == 0.0


# ------------------------------------------------------- games without ground truth


def table_network(params, obs):
    """A fake `apply_fn` whose logits are `params` [A] in every position."""
    return jnp.broadcast_to(params, (obs.shape[0], params.shape[0])), jnp.zeros(obs.shape[0])


# One sampling policy for every table, so that each game compiles one match.
TABLE_PLAYER = network_player(table_network, greedy=False, name="table")
TABLES = {
    "random": lambda a: jnp.zeros(a),  # uniform over the legal moves
    "first": lambda a: -30.0 * jnp.arange(a),  # the lowest legal action
    "pass": lambda a: 30.0 * (jnp.arange(a) == a - 1),  # Go's pass
}
NO_GROUND_TRUTH = {
    "gomoku": ("gomoku", {"size": 5, "k": 4}),
    "go": ("go", {"size": 5}),
    "pgx_connect_four": ("pgx:connect_four", {}),
}


@pytest.fixture(scope="module", params=list(NO_GROUND_TRUTH))
def no_truth(request):
    game, options = NO_GROUND_TRUTH[request.param]
    env = envs.make(game, **options)
    return request.param, env, make_evaluator(env)


def table_player(env, table):
    return TABLE_PLAYER.with_params(TABLES[table](env.num_actions))


def test_games_without_ground_truth_score_the_network_against_random_play(no_truth):
    _, env, evaluator = no_truth
    assert isinstance(evaluator, RandomOpponentEvaluator) and not evaluator.can_be_perfect
    assert evaluator.summary_metrics == ("net_vs_random", "search_vs_random")
    player = table_player(env, "first")
    metrics = evaluator.network_metrics(player)
    assert set(metrics) == {"net_vs_random", "perfect"} and metrics["perfect"] == 0.0
    # The score of 128 games against uniform random play, the same opponent every time.
    match = play_match(env, player, random_player(), jax.random.key(0), 128)
    assert metrics["net_vs_random"] == match.score
    assert evaluator.network_metrics(player) == metrics


# (strong, its floor, weak, its ceiling): Gomoku's lowest legal cell fills the top row
# toward a line (scores 84% or more against random play), Connect Four's stacks the first
# column (78% or more), and a Go player that always passes scores 4% or less; measured
# over 2,560 games each, rounded 2 standard errors towards 50%. Random play scores 50%.
STRONG_WEAK = {"gomoku": ("first", 0.75, "random", 0.59),
               "go": ("random", 0.41, "pass", 0.13),
               "pgx_connect_four": ("first", 0.69, "random", 0.59)}


def test_a_strong_player_scores_clearly_better_than_a_weak_one(no_truth):
    """Scores over 4 x 128 games (4 keys). Hoeffding, 512 games: each bound is missed
    with probability <= exp(-2 * 512 * 0.09**2) < 2.5e-4 (random play's two-sided), so
    the test fails falsely with probability < 7.5e-4."""
    name, env, evaluator = no_truth

    def score(table):
        player = table_player(env, table)
        return np.mean([evaluator.network_metrics(player, jax.random.key(k))["net_vs_random"]
                        for k in range(1, 5)])

    strong, floor, weak, ceiling = STRONG_WEAK[name]
    scores = {table: score(table) for table in {strong, weak, "random"}}
    assert abs(scores["random"] - 0.5) < 0.09  # the same player on both sides
    assert scores[strong] > floor >= ceiling > scores[weak]


def test_search_metrics_score_network_and_search_against_random_play():
    env = envs.make("gomoku", size=5, k=4)
    evaluator = make_evaluator(env)
    player = search_player(env, table_network, TABLES["first"](env.num_actions), SEARCH)
    metrics = evaluator.search_metrics(player, jax.random.key(3))
    assert set(metrics) == {"search_vs_random"}
    match = play_match(env, player, random_player(), jax.random.key(3), 32)
    assert metrics["search_vs_random"] == match.score
