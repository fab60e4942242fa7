"""Matches (`azjax/match.py`): play_match on players of known strength, host and device
loops, paired openings, MatchResult statistics, and the arena's CLI (`azjax/commands/arena.py`)."""

from __future__ import annotations

import functools
import json
import math

import binomial
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ttt_reference import legal_moves, negamax, play, random_play_odds, to_move, winner

import azjax
import envs
from azjax.commands.arena import main
from azjax.core.players import Player, network_player
from azjax.evaluation import match
from azjax.evaluation.baselines import random_player, rollout_mcts_player, solver_player
from azjax.evaluation.match import MatchResult, play_match
from azjax.evaluation.player_specs import make_player
from azjax.evaluation.stats import wilson_interval
from envs import tictactoe_minimax as ttt_solver

# --------------------------------------------------------------------------------------
# Plain-Python tic-tac-toe reference (independent of envs/ and azjax/)
# --------------------------------------------------------------------------------------

EMPTY = (-1,) * 9
X_WINS, DRAW, O_WINS = random_play_odds(EMPTY)


@functools.cache
def perfect_win_chance(b, me):
    """P(player `me` wins from board b) when it picks uniformly among the moves that keep
    the game's value (as the solver does) and its opponent uniformly among legal moves."""
    w = winner(b)
    if w is not None:
        return float(w == me)
    moves = legal_moves(b)
    if not moves:
        return 0.0
    if to_move(b) == me:
        best = max(-negamax(play(b, m)) for m in moves)
        moves = [m for m in moves if -negamax(play(b, m)) == best]
    return sum(perfect_win_chance(play(b, m), me) for m in moves) / len(moves)


def after_random_first_move(me):
    """P(me wins) when X's first move is uniformly random, then as perfect_win_chance."""
    return sum(perfect_win_chance(play(EMPTY, m), me) for m in range(9)) / 9


def within(share, p, n, sigmas=5.0):
    return abs(share - p) <= sigmas * math.sqrt(p * (1 - p) / n) + 1e-12


@pytest.fixture(scope="module")
def ttt():
    return envs.make("tictactoe")


def first_optimal_player(name="perfect"):
    """A deterministic perfect tic-tac-toe player: the first optimal move of each board."""
    sol = ttt_solver.solution()
    table = np.zeros(3**9, np.int32)
    powers = 3 ** np.arange(9)
    for i in sol.live:
        code = int(((sol.boards[i].astype(np.int64) + 1) * powers).sum())
        table[code] = ttt_solver.optimal_moves(tuple(int(v) for v in sol.boards[i]))[0]
    table, powers = jnp.asarray(table), jnp.asarray(powers)

    def policy(params, states, key):
        del params, key
        return table[(states.board.astype(jnp.int32) + 1) @ powers]

    return Player(name, policy)


def stub_network_player():
    """A deterministic 'network': greedy over a fixed linear map of the observation."""
    weights = jax.random.normal(jax.random.key(3), (27, 9))

    def apply_fn(params, obs):
        return obs.reshape(obs.shape[0], -1).astype(jnp.float32) @ params, None

    return network_player(apply_fn, weights, name="stub")


def forfeiting_player():
    """Plays an out-of-range move, which forfeits the game whenever it is asked to move."""
    return Player("forfeit",
                  lambda params, states, key: jnp.full(states.terminated.shape, -1, jnp.int32))


# --------------------------------------------------------------------------------------
# play_match on players of known strength
# --------------------------------------------------------------------------------------


def test_random_against_random_is_even_and_favours_the_first_mover(ttt):
    assert 0.58 < X_WINS < 0.59 and 0.12 < DRAW < 0.13  # the known random-play odds
    n = 2000
    result = play_match(ttt, random_player("a"), random_player("b"), jax.random.key(0), n)
    assert (result.name_a, result.name_b, result.num_games) == ("a", "b", n)
    assert result.wins + result.draws + result.losses == n
    assert abs(result.score - 0.5) < 0.05
    first, second = result.seat(0), result.seat(1)
    assert first.num_games == second.num_games == n // 2
    assert within(first.wins / first.num_games, X_WINS, n // 2)
    assert within(first.losses / first.num_games, O_WINS, n // 2)
    assert within(second.wins / second.num_games, O_WINS, n // 2)
    assert within(result.draws / n, DRAW, n)
    assert first.score > 0.6 > 0.4 > second.score


def test_solver_never_loses_and_draws_itself(ttt):
    """The solver never loses; against random play it wins as often as the exact chances
    of the reference say. Each seat's games are independent trials, so its win count is
    binomial: the four counts below each fall short with chance < 2.5e-4, two draw counts
    are wrong with chance (2/3)^100 or (1/3)^100 (a pair's 2-ply opening is decided with
    chance 2/3): the test fails falsely with chance < 1e-3."""
    alpha = binomial.FALSE_FAILURE / 4
    solver = solver_player(ttt)
    against_random = play_match(ttt, solver, random_player(), jax.random.key(1), 400)
    for seat in (0, 1):
        part = against_random.seat(seat)
        assert part.losses == 0
        assert part.wins >= binomial.min_successes(
            part.num_games, perfect_win_chance(EMPTY, seat), alpha)
    # random first move (the opening), then the solver as O when random holds seat 0,
    # as X when it holds seat 1
    as_b = play_match(ttt, random_player(), solver, jax.random.key(2), 200, opening_plies=1)
    assert as_b.wins == 0
    for seat, solver_seat in ((0, 1), (1, 0)):
        part = as_b.seat(seat)
        assert part.losses >= binomial.min_successes(
            part.num_games, after_random_first_move(solver_seat), alpha)
    other = solver_player(ttt, name="solver2")
    itself = play_match(ttt, solver, other, jax.random.key(3), 200)
    assert itself.draws == 200 and itself.name_b == "solver2"
    # After two random plies a position can be decided; perfect play then gets its value
    # whoever holds the seat, so the two games of each pair have opposite results.
    opened = play_match(ttt, solver, other, jax.random.key(3), 200, opening_plies=2)
    np.testing.assert_array_equal(opened.results[:100], -opened.results[100:])
    assert 0 < opened.draws < 200


def test_perfect_win_chance_reference():
    """The chances used above (X wins 96.8% of its games, O 77.7%): a random first move is
    one of the solver's own (every first move draws), a fork wins, a drawn end draws."""
    assert after_random_first_move(0) == pytest.approx(perfect_win_chance(EMPTY, 0))
    assert after_random_first_move(1) == pytest.approx(perfect_win_chance(EMPTY, 1))
    assert 0 < perfect_win_chance(EMPTY, 1) < perfect_win_chance(EMPTY, 0) < 1
    # O to move; X threatens 2, 7 and 8 at once and wins whatever O does
    fork = (0, 0, -1, 1, 0, -1, 1, -1, -1)
    assert negamax(fork) == -1 and perfect_win_chance(fork, 0) == 1.0
    # two cells left and no line open to either side: a draw whatever is played
    drawn = (0, 1, 0, 0, 1, -1, 1, 0, -1)
    assert negamax(drawn) == 0 and perfect_win_chance(drawn, 1) == 0.0


# Slow: 40 games of 400-simulation rollout search, a statistical bound.
@pytest.mark.slow
def test_rollout_mcts_cannot_beat_the_solver(ttt):
    """The solver never loses, so rollout MCTS never wins; with 400 simulations it holds
    the draw as X and mostly as O. The 20 games of each seat are independent. Offline
    (other keys): as X 0 losses in 1,500 games, as O 312 in 1,500, rates below 0.0031
    and 0.234 (one-sided 99%); each seat loses more than allowed with chance < 5e-4."""
    result = play_match(ttt, rollout_mcts_player(ttt, 400), solver_player(ttt), jax.random.key(1),
                      40)
    assert result.wins == 0
    alpha = binomial.FALSE_FAILURE / 2
    allowed = [binomial.max_failures(20, binomial.upper_bound(losses, 1500), alpha)
               for losses in (0, 312)]
    assert allowed == [2, 11]
    assert result.seat(0).losses <= allowed[0] and result.seat(1).losses <= allowed[1]


def test_play_match_is_azjax_play_match_and_checks_its_arguments(ttt):
    assert azjax.play_match is play_match
    with pytest.raises(ValueError, match="num_games must be >= 1, got 0"):
        play_match(ttt, random_player(), random_player(), jax.random.key(0), 0)
    with pytest.raises(ValueError, match="opening_plies must be >= 0, got -1"):
        play_match(ttt, random_player(), random_player(), jax.random.key(0), 4, opening_plies=-1)


# --------------------------------------------------------------------------------------
# Host and device loops
# --------------------------------------------------------------------------------------


def _host(player):
    return Player(player.name, player.policy, player.params, jittable=False)


def test_host_and_device_loops_agree_on_deterministic_players(ttt):
    perfect, stub = first_optimal_player(), stub_network_player()
    key, n = jax.random.key(4), 40
    # one random ply first: every position is still a draw, so the perfect player
    # never loses, and the games differ
    device = play_match(ttt, perfect, stub, key, n, opening_plies=1)
    assert device.losses == 0
    assert set(device.results.tolist()) == {0, 1}
    for a, b in ((perfect, _host(stub)), (_host(perfect), stub), (_host(perfect), _host(stub))):
        host = play_match(ttt, a, b, key, n, opening_plies=1)
        np.testing.assert_array_equal(host.results, device.results)
        np.testing.assert_array_equal(host.a_seat, device.a_seat)
    # The host loop with both players compiled (what a host player's opponent gets).
    traced = match._host_results(ttt, (perfect, stub), key, n, 1, match.MAX_PLIES, None)
    np.testing.assert_array_equal(traced, device.results)


def test_alphabeta_on_the_host_loop_never_loses_to_random(ttt):
    alphabeta = make_player("alphabeta:9", ttt)
    assert not alphabeta.jittable
    result = play_match(ttt, alphabeta, random_player(), jax.random.key(5), 16, opening_plies=1)
    assert result.losses == 0
    assert result.seat(0).num_games == result.seat(1).num_games == 8
    # Searching to the end, alphabeta keeps a drawn game drawn with a uniform choice of
    # the drawing moves and wins a won one, as the solver does: it wins as often. Each
    # seat's 8 games are independent; each count falls short with chance < 5e-4.
    for seat in (0, 1):
        assert result.seat(seat).wins >= binomial.min_successes(
            8, after_random_first_move(seat), binomial.FALSE_FAILURE / 2)


def test_forfeits_and_games_decided_in_the_opening(ttt):
    # A player asked to move with an illegal action loses every game, from either seat.
    lost = play_match(ttt, forfeiting_player(), random_player(), jax.random.key(6), 20)
    assert lost.losses == 20
    # Nine random opening plies finish every tic-tac-toe game: nobody is asked to move,
    # so the forfeiting player loses nothing and the results are those of random play,
    # with the seats of each pair swapped.
    n = 2000
    decided = play_match(ttt, forfeiting_player(), random_player(), jax.random.key(7), n,
                       opening_plies=9)
    np.testing.assert_array_equal(decided.results[: n // 2], -decided.results[n // 2:])
    first = decided.seat(0)
    assert within(first.wins / first.num_games, X_WINS, n // 2)
    assert within(first.draws / first.num_games, DRAW, n // 2)


def test_games_unfinished_at_the_ply_cap_are_draws(ttt):
    # No tic-tac-toe game ends before its fifth ply.
    for a, b in ((random_player(), random_player()), (random_player(), _host(random_player()))):
        capped = play_match(ttt, a, b, jax.random.key(11), 20, max_plies=4)
        assert capped.draws == 20
    # The cap counts the plies after the opening: two random opening plies and three
    # more reach the fifth ply of the game, which decides some games.
    opened = play_match(ttt, random_player(), random_player(), jax.random.key(12), 200,
                      max_plies=3, opening_plies=2)
    assert 0 < opened.draws < 200


# --------------------------------------------------------------------------------------
# Paired openings
# --------------------------------------------------------------------------------------


# `match.opening_states` compiled (once per count and plies): eagerly, each of its
# operations would compile on its own.
openings = jax.jit(match.opening_states, static_argnums=(0, 2, 3))


def test_paired_openings_share_states_and_swap_seats(ttt):
    n, plies = 40, 3
    states, rewards = openings(ttt, jax.random.key(8), n, plies)
    half = n // 2
    for leaf in jax.tree.leaves(states):
        np.testing.assert_array_equal(np.asarray(leaf)[:half], np.asarray(leaf)[half:])
    boards = np.asarray(states.board)
    assert np.all((boards != -1).sum(-1) == plies)  # three stones on every board
    assert np.all(np.asarray(states.current_player) == 1)
    np.testing.assert_array_equal(rewards, 0.0)  # no game ends in three plies
    assert len({tuple(b) for b in boards[:half]}) >= half - 3  # the pairs differ
    np.testing.assert_array_equal(match.seats(n), [0] * half + [1] * half)

    # With no opening plies every game starts from the initial state.
    states, _ = openings(ttt, jax.random.key(8), 6, 0)
    np.testing.assert_array_equal(states.board, -1)

    # Odd counts: game i plays the opening of game i % ceil(n / 2), seats swapped in pairs.
    n = 7
    states, _ = openings(ttt, jax.random.key(9), n, 2)
    boards = [tuple(b) for b in np.asarray(states.board)]
    seats = np.asarray(match.seats(n)).tolist()
    assert seats == [0, 0, 0, 1, 1, 1, 1]
    for i in range(n):
        assert boards[i] == boards[i % 4]
    for i in range(3):
        assert seats[i] != seats[i + 4]


def test_opening_rewards_are_those_of_the_opening_board(ttt):
    n = 64
    states, rewards = openings(ttt, jax.random.key(10), n, 7)
    for board, reward in zip(np.asarray(states.board), np.asarray(rewards)):
        w = winner(tuple(int(v) for v in board))
        expected = [0.0, 0.0] if w is None else [1.0, -1.0] if w == 0 else [-1.0, 1.0]
        np.testing.assert_array_equal(reward, expected)
    assert np.any(rewards != 0)


# --------------------------------------------------------------------------------------
# MatchResult and the Wilson interval
# --------------------------------------------------------------------------------------


def test_wilson_interval_known_values():
    np.testing.assert_allclose(wilson_interval(0.9, 10), (0.5958, 0.9821), atol=1e-4)
    np.testing.assert_allclose(wilson_interval(0.0, 10), (0.0, 0.2775), atol=1e-4)
    np.testing.assert_allclose(wilson_interval(0.5, 100), (0.4038, 0.5962), atol=1e-4)
    np.testing.assert_allclose(wilson_interval(0.5, 100, level=0.99), (0.3753, 0.6247),
                               atol=1e-4)
    assert wilson_interval(1.0, 20)[1] == 1.0
    assert wilson_interval(0.3, 0) == (0.0, 1.0)


def _result(wins, draws, losses, copies=1):
    results = np.array(([1] * wins + [0] * draws + [-1] * losses) * copies, np.int8)
    seats = np.arange(len(results)) % 2
    return MatchResult("A", "B", results, seats)


def test_match_result_counts_score_and_seats():
    result = _result(5, 3, 2)
    assert (result.num_games, result.wins, result.draws, result.losses) == (10, 5, 3, 2)
    assert result.score == pytest.approx((5 + 1.5) / 10)
    # results [1 1 1 1 1 0 0 0 -1 -1] with A as player 0 in the even games
    first, second = result.seat(0), result.seat(1)
    assert (first.wins, first.draws, first.losses) == (3, 1, 1)
    assert (second.wins, second.draws, second.losses) == (2, 2, 1)
    assert first.num_games + second.num_games == 10
    assert np.all(first.a_seat == 0) and np.all(second.a_seat == 1)

    low, high = result.score_interval()
    assert low < result.score < high
    big_low, big_high = _result(5, 3, 2, copies=10).score_interval()
    assert big_low < result.score < big_high and big_high - big_low < high - low
    wide_low, wide_high = result.score_interval(0.99)
    assert wide_low < low and wide_high > high

    assert result.elo_diff == pytest.approx(400 * math.log10(0.65 / 0.35))
    assert _result(2, 3, 5).elo_diff == pytest.approx(-result.elo_diff)
    assert _result(3, 4, 3).elo_diff == pytest.approx(0.0)
    assert _result(4, 0, 0).elo_diff == 800.0

    record = result.as_dict()
    assert {k: record[k] for k in ("a", "b", "games", "wins", "draws", "losses")} == {
        "a": "A", "b": "B", "games": 10, "wins": 5, "draws": 3, "losses": 2}
    assert (record["score_low"], record["score_high"]) == (low, high)
    assert record["as_player0"] == {"games": 5, "wins": 3, "draws": 1, "losses": 1,
                                    "score": 0.7}
    assert record["as_player1"]["score"] == pytest.approx(0.6)
    json.dumps(record)  # plain types only
    summary = result.summary()
    assert "A vs B: 10 games" in summary
    assert "5 wins, 3 draws, 2 losses; score 65.0%" in summary
    assert "Elo difference +108" in summary
    assert "as player 0 (moves first): 3 W / 1 D / 1 L" in summary


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def test_cli_plays_and_writes_json(tmp_path, capsys):
    out_file = tmp_path / "result.json"
    code = main(["random", "solver", "--game", "tictactoe", "--games", "20", "--openings", "1",
                 "--seed", "3", "--json", str(out_file)])
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("tictactoe: random vs solver: 20 games")
    data = json.loads(out_file.read_text())
    assert data["game"] == "tictactoe" and (data["a"], data["b"]) == ("random", "solver")
    assert data["games"] == 20 and data["wins"] + data["draws"] + data["losses"] == 20
    assert data["wins"] == 0  # the solver never loses
    assert f"random: {data['wins']} wins, {data['draws']} draws, {data['losses']} losses" in out
    assert data["as_player0"]["games"] == data["as_player1"]["games"] == 10


def test_cli_game_options(tmp_path, capsys):
    # Five coins: the first player wins by splitting 1 + 4 (Grundy value 2), so the solver
    # wins every game it starts; with the default seven coins the first player is lost.
    out_file = tmp_path / "coins.json"
    code = main(["solver", "random", "--game", "coin_split", "--game-option", "coins=5",
                 "--games", "20", "--json", str(out_file)])
    assert code == 0
    data = json.loads(out_file.read_text())
    assert data["game"] == "coin_split" and data["draws"] == 0
    assert data["as_player0"]["wins"] == 10
    assert "coin_split: solver vs random: 20 games" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["random", "solver", "--game", "chess"], "unknown game 'chess'"),
    (["random", "bogus:3", "--game", "tictactoe"], "unknown player 'bogus:3'"),
    (["mcts", "random", "--game", "tictactoe"], "'mcts' needs an argument"),
    (["random", "solver"], "neither player names a run directory; say which game with --game"),
    (["random", "solver", "--game", "tictactoe", "--game-option", "size"],
     "--game-option expects KEY=VALUE, got 'size'"),
    (["random", "solver", "--game", "tictactoe", "--game-option", "size=4"],
     "bad options for game 'tictactoe'"),
    (["random", "solver", "--game", "coin_split", "--game-option", "coins=2"], "coins=2"),
    (["random", "solver", "--game", "coin_split", "--game-option", "coins=many"], "'many'"),
    (["random", "solver", "--game", "connect_four"], "no exact solver for 'connect_four'"),
    (["network:/nonexistent/run", "random"], "does not exist"),
    (["random", "random", "--game", "tictactoe", "--games", "0"], "num_games must be >= 1"),
])
def test_cli_errors(argv, message, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ")
    assert message in captured.err
    assert "Traceback" not in captured.err and captured.out == ""
