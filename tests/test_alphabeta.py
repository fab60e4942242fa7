"""Alpha-beta baseline: equal to plain minimax, exact on tic-tac-toe, tactically sound on
Connect Four, and the k-in-a-row heuristic against a plain-Python window count."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from random_play import play_random_games, take

import envs
from azjax.evaluation.alphabeta import (
    WIN_DECAY,
    alphabeta,
    alphabeta_player,
    default_eval,
    line_count_eval,
    minimax,
    zero_eval,
)
from envs import tictactoe_minimax as solver
from envs.connect_four import boards_from_moves, state_from_moves
from envs.lines import EVAL_LIMIT, LINE_SCALE
from envs.tictactoe import state_from_board, states_from_boards


def random_positions(env, count, min_ply, max_ply, seed):
    """`count` live host states reached by uniform random play, each from its own game."""
    states, _ = play_random_games(env, count * 4, 0, max_ply, seed, noise=0.0)
    rng = np.random.default_rng(seed)
    positions = []
    for game in range(count * 4):
        ply = int(rng.integers(min_ply, max_ply + 1))
        state = take(states, ply, game)
        if not state.terminated:
            positions.append(state)
        if len(positions) == count:
            return positions
    raise AssertionError("not enough live random positions")


def board_of(state) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(state.board))


# --------------------------------------------------------------------------------------
# An independent oracle: plain-Python negamax on its own board
# --------------------------------------------------------------------------------------


class Board:
    """A k-in-a-row board of its own (no JAX, no env): `cells[r][c]` is 0 empty, 1 the
    stones of the player to move at the root, 2 the other's; with `gravity` an action
    is a column and the stone drops to the lowest empty row (the highest index, as in
    Connect Four), else an action is `row * width + col`. k or more in a row win."""

    def __init__(self, observation, k, gravity):
        obs = np.asarray(observation)
        self.height, self.width = obs.shape[:2]
        self.k, self.gravity = k, gravity
        self.cells = [[1 if obs[r, c, 0] else 2 if obs[r, c, 1] else 0
                       for c in range(self.width)] for r in range(self.height)]

    def moves(self):
        if self.gravity:
            return [c for c in range(self.width) if self.cells[0][c] == 0]
        return [r * self.width + c for r in range(self.height) for c in range(self.width)
                if self.cells[r][c] == 0]

    def place(self, action, stone):
        """Puts the stone; returns its cell."""
        if self.gravity:
            r = max(r for r in range(self.height) if self.cells[r][action] == 0)
            c = action
        else:
            r, c = divmod(action, self.width)
        self.cells[r][c] = stone
        return r, c

    def wins(self, r, c):
        stone = self.cells[r][c]
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                y, x = r + sign * dr, c + sign * dc
                while 0 <= y < self.height and 0 <= x < self.width and self.cells[y][x] == stone:
                    run, y, x = run + 1, y + sign * dr, x + sign * dc
            if run >= self.k:
                return True
        return False

    def window_eval(self, stone):
        """The line-count heuristic for the player of `stone`: +4**(n-k+1) for each
        window of k cells holding n of its stones and none of the other's, minus the
        same for the other player, squashed to EVAL_LIMIT * tanh(score / LINE_SCALE)."""
        score = 0.0
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            for r in range(self.height):
                for c in range(self.width):
                    ends = (r + (self.k - 1) * dr, c + (self.k - 1) * dc)
                    if not (0 <= ends[0] < self.height and 0 <= ends[1] < self.width):
                        continue
                    window = [self.cells[r + i * dr][c + i * dc] for i in range(self.k)]
                    own = sum(v == stone for v in window)
                    other = sum(v == 3 - stone for v in window)
                    if own and not other:
                        score += 4.0 ** (own - self.k + 1)
                    elif other and not own:
                        score -= 4.0 ** (other - self.k + 1)
        return EVAL_LIMIT * float(np.tanh(score / LINE_SCALE))


def oracle_values(board, depth, heuristic):
    """Each root move's negamax value for the player to move (stone 1), by the module's
    stated conventions only: a game won p plies below the root is worth 1 - WIN_DECAY * p
    to the winner, a full board 0, and a live position at the depth limit
    `heuristic(board, stone to move)` to its mover. No pruning, no move ordering."""

    def negamax(stone, depth, ply):
        best = -np.inf
        for action in board.moves():
            value = child_value(action, stone, depth, ply)
            best = max(best, value)
        return best

    def child_value(action, stone, depth, ply):
        r, c = board.place(action, stone)
        if board.wins(r, c):
            value = 1.0 - WIN_DECAY * (ply + 1)
        elif not board.moves():
            value = 0.0
        elif depth == 1:
            value = -heuristic(board, 3 - stone)
        else:
            value = -negamax(3 - stone, depth - 1, ply + 1)
        board.cells[r][c] = 0
        return value

    return {action: child_value(action, 1, depth, 0) for action in board.moves()}


def no_heuristic(board, stone):
    return 0.0


def line_heuristic(board, stone):
    return board.window_eval(stone)


def assert_matches_oracle(env, positions, depth, eval_fn, heuristic, k, gravity=False):
    """alphabeta (first best and all best) and the module's minimax against the oracle:
    the same value (to float32 rounding of the heuristic), every exactly tied best move
    and none worse than 1e-5 below the best; alpha-beta never searches more nodes than
    minimax, and strictly fewer in total."""
    mm_nodes = ab_nodes = 0
    for state in positions:
        board = Board(state.observation, k, gravity)
        values = oracle_values(board, depth, heuristic)
        best = max(values.values())
        tied = {a for a, v in values.items() if v >= best - 1e-9}
        near = {a for a, v in values.items() if v > best - 1e-5}
        reference = minimax(env, state, depth, eval_fn)
        every = alphabeta(env, state, depth, eval_fn, all_best=True)
        first = alphabeta(env, state, depth, eval_fn)
        for result in (reference, every, first):
            assert result.value == pytest.approx(best, abs=1e-5), (board.cells, values)
        for result in (reference, every):
            assert tied <= set(result.best_actions) <= near, (board.cells, values)
        assert len(first.best_actions) == 1 and first.best_actions[0] in near
        assert first.nodes <= every.nodes <= reference.nodes
        mm_nodes += reference.nodes
        ab_nodes += first.nodes
    assert ab_nodes < mm_nodes


@pytest.mark.parametrize(("depth", "min_ply"), [(3, 0), (9, 3)])
def test_alphabeta_matches_the_oracle_tictactoe(depth, min_ply):
    env = envs.make("tictactoe")
    positions = random_positions(env, 16, min_ply, 7, seed=depth)
    assert_matches_oracle(env, positions, depth, zero_eval, no_heuristic, k=3)


def test_alphabeta_matches_the_oracle_connect_four_line_heuristic():
    env = envs.make("connect_four")
    positions = random_positions(env, 16, 0, 24, seed=7)
    assert_matches_oracle(env, positions, 3, line_count_eval(env), line_heuristic, k=4,
                          gravity=True)


def test_alphabeta_matches_the_oracle_gomoku_line_heuristic():
    env = envs.make("gomoku", size=6, k=4)
    positions = random_positions(env, 4, 2, 14, seed=3)
    assert_matches_oracle(env, positions, 2, line_count_eval(env), line_heuristic, k=4)


def test_the_oracle_on_hand_made_boards():
    """The oracle itself, on positions whose values are plain: a win in one, a forced
    loss, and the heuristic's sign."""
    board = np.zeros((3, 3, 3), bool)  # X to move: X on 0, 1; O on 3, 4
    board[0, 0, 0] = board[0, 1, 0] = board[1, 0, 1] = board[1, 1, 1] = True
    values = oracle_values(Board(board, 3, False), 9, no_heuristic)
    assert values[2] == pytest.approx(1 - WIN_DECAY) and max(values.values()) == values[2]
    assert values[8] == pytest.approx(-(1 - 2 * WIN_DECAY))  # O completes 3-4-5 next
    c4 = Board(np.asarray(state_from_moves("15253").observation), 4, True)
    assert c4.window_eval(1) < 0 < c4.window_eval(2)  # O to move; X holds three open


def test_minimax_leaf_values_follow_the_conventions():
    # X to move wins at once with cell 2; the value decays by one ply.
    env = envs.make("tictactoe")
    state = state_from_board(np.array([0, 0, -1, 1, 1, -1, -1, -1, -1]))
    result = minimax(env, state, 1)
    assert result.value == pytest.approx(1.0 - WIN_DECAY)
    assert result.best_actions == (2,)
    assert result.nodes == 1 + 5


# --------------------------------------------------------------------------------------
# Full-depth tic-tac-toe against the exact solver
# --------------------------------------------------------------------------------------


def test_full_depth_tictactoe_matches_solver():
    env = envs.make("tictactoe")
    solution = solver.solution()
    rng = np.random.default_rng(0)
    rows = rng.choice(solution.live, 24, replace=False)
    boards = solution.boards[rows]
    states = states_from_boards(boards)
    player = alphabeta_player(env, depth=9)
    moves = player.act(states, jax.random.key(0))
    for i, row in enumerate(rows):
        board = tuple(int(v) for v in boards[i])
        truth = solver.value(board)
        result = alphabeta(env, take(jax.device_get(states), i), 9, all_best=True)
        assert np.sign(result.value) == truth
        # Wins and losses score 1 - WIN_DECAY * plies: at most 9 plies away.
        assert truth == 0 or abs(result.value) >= 1 - 9 * WIN_DECAY
        optimal = set(solver.optimal_moves(board))
        assert set(result.best_actions) <= optimal
        if truth == 0:
            assert set(result.best_actions) == optimal  # every drawing move scores 0
        move = int(moves[i])
        assert -solver.value(solver.play(board, move)) == truth, (board, move)
        assert solution.optimal[row, move]


# --------------------------------------------------------------------------------------
# Connect Four tactics and the player interface
# --------------------------------------------------------------------------------------


def player_moves(player, states, seeds=range(4)):
    return {int(player.act(states, jax.random.key(s))[0]) for s in seeds}


def test_player_wins_in_one_connect_four():
    env = envs.make("connect_four")
    states = boards_from_moves(["112233"])  # X: columns 1-3 on the bottom row, to move
    assert player_moves(alphabeta_player(env, 2), states) == {3}


def test_player_blocks_a_win_in_one_connect_four():
    env = envs.make("connect_four")
    states = boards_from_moves(["15253"])  # O to move; X threatens column 4
    assert player_moves(alphabeta_player(env, 2), states) == {3}
    assert player_moves(alphabeta_player(env, 2, eval_fn=zero_eval), states) == {3}


def test_player_prefers_the_immediate_win_over_a_slower_one():
    env = envs.make("connect_four")
    # X (to move) holds columns 2-4 of the bottom row: columns 1 and 5 win now; any other
    # move leaves two threats of which O can block only one, a win two plies later.
    moves = "273746"
    result = alphabeta(env, state_from_moves(moves), 3, all_best=True)
    assert result.best_actions == (0, 4)
    assert result.value == pytest.approx(1.0 - WIN_DECAY)
    slower = alphabeta(env, state_from_moves(moves + "7"), 2)  # O to move after column 7
    assert slower.value == pytest.approx(-(1.0 - 2 * WIN_DECAY))
    player = alphabeta_player(env, 3)
    assert player_moves(player, boards_from_moves([moves]), range(8)) <= {0, 4}


def test_player_breaks_ties_at_random_and_skips_finished_games():
    env = envs.make("connect_four")
    player = alphabeta_player(env, 2)
    assert player.name == "alphabeta:2" and not player.jittable
    start = env.init(jax.random.key(0))
    ties = set(alphabeta(env, start, 2, default_eval(env), all_best=True).best_actions)
    assert len(ties) > 1
    states = boards_from_moves(["", "1212121"])  # the second game is over (X's column)
    chosen = set()
    for seed in range(12):
        actions = np.asarray(player.act(states, jax.random.key(seed)))
        assert actions.shape == (2,) and actions.dtype == np.int32
        assert actions[1] == 0
        chosen.add(int(actions[0]))
    assert chosen <= ties and len(chosen) > 1


def test_bad_depth_raises():
    env = envs.make("tictactoe")
    state = env.init(jax.random.key(0))
    for depth in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="depth"):
            alphabeta_player(env, depth)
        with pytest.raises(ValueError, match="depth"):
            alphabeta(env, state, depth)
        with pytest.raises(ValueError, match="depth"):
            minimax(env, state, depth)


def test_finished_game_cannot_be_searched():
    env = envs.make("connect_four")
    with pytest.raises(ValueError, match="finished"):
        alphabeta(env, state_from_moves("1212121"), 2)


# --------------------------------------------------------------------------------------
# The line-count heuristic
# --------------------------------------------------------------------------------------


def reference_line_eval(observation, k):
    """Plain-Python window count: +4**(n-k+1) per window of n own stones only, minus the
    same for the opponent's, squashed like the module does."""
    own, opp = observation[..., 0], observation[..., 1]
    height, width = own.shape
    score = 0.0
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        for r in range(height):
            for c in range(width):
                cells = [(r + i * dr, c + i * dc) for i in range(k)]
                if not all(0 <= y < height and 0 <= x < width for y, x in cells):
                    continue
                n_own = sum(bool(own[y, x]) for y, x in cells)
                n_opp = sum(bool(opp[y, x]) for y, x in cells)
                if n_own and not n_opp:
                    score += 4.0 ** (n_own - k + 1)
                elif n_opp and not n_own:
                    score -= 4.0 ** (n_opp - k + 1)
    return EVAL_LIMIT * np.tanh(score / LINE_SCALE)


@pytest.mark.parametrize(
    ("name", "kwargs", "k"),
    [("connect_four", {}, 4), ("gomoku", {"size": 7, "k": 4}, 4), ("tictactoe", {}, 3)],
)
def test_line_count_eval_matches_reference(name, kwargs, k):
    env = envs.make(name, **kwargs)
    evaluate = jax.jit(jax.vmap(line_count_eval(env)))
    for state in random_positions(env, 6, 1, min(env.num_actions - 1, 20), seed=11):
        obs = np.asarray(state.observation)
        value = float(evaluate(obs[None])[0])
        assert value == pytest.approx(reference_line_eval(obs, k), abs=1e-5)
        assert -0.5 < value < 0.5


def test_line_count_eval_signs():
    env = envs.make("connect_four")
    evaluate = jax.jit(line_count_eval(env))  # one program for every board below
    assert float(evaluate(env.init(jax.random.key(0)).observation)) == 0.0
    # X in column 1, O in column 7: a mirror image with the colours swapped.
    assert float(evaluate(state_from_moves("17").observation)) == 0.0
    # O to move while X holds three open discs on the bottom row: bad for the mover.
    obs = np.asarray(state_from_moves("15253").observation)
    swapped = obs[..., [1, 0, 2]]
    assert float(evaluate(obs)) < 0.0
    assert float(evaluate(swapped)) == pytest.approx(-float(evaluate(obs)))
    # Three own discs in an open row beat two.
    two, three = np.zeros((2, 6, 7, 3), bool)
    two[5, 2:4, 0] = True
    three[5, 2:5, 0] = True
    assert float(evaluate(three)) > float(evaluate(two)) > 0.0
    # A board full of the mover's stones saturates just inside the bound.
    full = np.zeros((6, 7, 3), bool)
    full[..., 0] = True
    assert 0.45 < float(evaluate(full)) < 0.5
    assert -0.5 < float(evaluate(full[..., [1, 0, 2]])) < -0.45


def test_eval_choices_and_unsupported_game():
    c4, ttt = envs.make("connect_four"), envs.make("tictactoe")
    assert default_eval(c4) is line_count_eval(c4)
    assert default_eval(ttt) is zero_eval
    assert float(zero_eval(c4.init(jax.random.key(0)).observation)) == 0.0
    with pytest.raises(ValueError, match="line-count heuristic"):
        line_count_eval(envs.make("coin_split"))
