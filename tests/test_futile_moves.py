"""Futile moves (`Env.futile_moves`) and the search that leaves them out
(`search.skip_futile`, `search.play_skip_futile`): Go flags exactly the filling of the
mover's own true eyes (checked against a plain-Python definition on random games), and a
search with the setting never visits them, at its root or below it."""

from __future__ import annotations

import go_tiny
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from azjax.core.game_hooks import without_futile
from azjax.core.networks import NetworkConfig
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig, make_search_fn, play_search, visit_counts
from azjax.evaluation.player_specs import make_player
from azjax.run.agents.agent import Agent


def reference_true_eye(board: list[int], n: int, point: int, colour: int) -> bool:
    """An empty point whose neighbours on the board are all `colour`'s stones, with no
    opposing stone on a diagonal (one allowed where all four diagonals are on the board)."""
    if board[point] != -1:
        return False
    row, col = divmod(point, n)
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        r, c = row + dr, col + dc
        if 0 <= r < n and 0 <= c < n and board[r * n + c] != colour:
            return False
    diagonals = [(row + dr, col + dc) for dr in (-1, 1) for dc in (-1, 1)]
    on_board = [(r, c) for r, c in diagonals if 0 <= r < n and 0 <= c < n]
    enemies = sum(board[r * n + c] == 1 - colour for r, c in on_board)
    return enemies <= (1 if len(on_board) == 4 else 0)


def random_positions(env, num_games: int, num_plies: int, seed: int):
    """Every state of `num_games` games of uniformly random legal moves (pass rare), as one
    batch."""

    def ply(states, key):
        logits = jnp.where(states.legal_action_mask, 0.0, -1e9).at[:, -1].add(-4.0)
        actions = jax.random.categorical(key, logits)
        states = jax.vmap(env.step)(states, actions)
        return states, states

    @jax.jit
    def play(key):
        first = jax.vmap(env.init)(jax.random.split(key, num_games))
        _, later = jax.lax.scan(ply, first, jax.random.split(key, num_plies))
        return jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), later)

    return play(jax.random.key(seed))


@pytest.mark.parametrize("size,seed", [(5, 0), (7, 1), (9, 2)])
def test_go_flags_exactly_the_movers_own_true_eyes(size, seed):
    env = envs.make("go", size=size, history=1)
    states = random_positions(env, num_games=16, num_plies=3 * size * size, seed=seed)
    got = np.asarray(jax.jit(jax.vmap(env.futile_moves()))(states))
    boards, movers = np.asarray(states.board).tolist(), np.asarray(states.current_player)
    live = ~np.asarray(states.terminated)
    cells = size * size
    want = np.array([[reference_true_eye(b, size, p, int(m)) for p in range(cells)] + [False]
                     for b, m in zip(boards, movers)])
    np.testing.assert_array_equal(got[live], want[live])
    legal = np.asarray(states.legal_action_mask)
    assert not got[..., cells].any()  # pass is never futile
    # the games reach eyes in the corner, on the edge and in the middle, and empty points
    # walled by one colour that a diagonal makes false (not flagged)
    rows, cols = np.divmod(np.nonzero(want[live][:, :cells])[1], size)
    edge = (rows == 0) | (rows == size - 1) | (cols == 0) | (cols == size - 1)
    corner = ((rows == 0) | (rows == size - 1)) & ((cols == 0) | (cols == size - 1))
    assert corner.any() and (edge & ~corner).any() and (~edge).any()
    walled = np.array([[reference_true_eye([c if c != 1 - int(m) else -2 for c in b], size, p,
                                           int(m)) for p in range(cells)]
                       for b, m in zip(boards, movers)])
    assert (walled & ~want[:, :cells])[live].any()
    assert (got & legal)[live].any()  # flagged moves are legal ones: what the search skips


def eyes_only_position():
    """5x5, Black to move: Black's only legal stone moves fill its own three eyes (White's
    eyes are suicide for Black).

        . X . X .
        X X X X X
        O O O O O
        . O . O .
        O O O O O
    """
    env = envs.make("go", size=5, komi=0.5, history=1)
    black = [1, 3, 5, 6, 7, 8, 9]
    white = [10, 11, 12, 13, 14, 16, 18, 20, 21, 22, 23, 24]
    moves = []
    for i, w in enumerate(white):
        moves += [black[i] if i < len(black) else 25, w]
    # one compiled step (op by op, each of the step's operations would compile)
    step = jax.jit(env.step)
    state = jax.jit(env.init)(jax.random.PRNGKey(0))
    for move in moves:
        state = step(state, jnp.int32(move))
    assert int(state.current_player) == 0 and not bool(state.terminated)
    assert np.asarray(state.board).tolist() == [
        -1, 0, -1, 0, -1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, -1, 1, -1, 1, -1, 1, 1, 1, 1, 1]
    return env, state


def uniform_net(num_actions: int):
    def apply(params, obs):
        return jnp.zeros((obs.shape[0], num_actions)), jnp.zeros((obs.shape[0],))

    return apply


# Slow for PUCT (~11 s of compilation of its own): Gumbel keeps the check by default.
@pytest.mark.parametrize("policy", [pytest.param("puct", marks=pytest.mark.slow), "gumbel"])
def test_a_search_that_skips_futile_moves_never_visits_them(policy):
    env, state = eyes_only_position()
    states = jax.tree.map(lambda x: x[None], state)
    legal = np.asarray(states.legal_action_mask)[0]
    eyes = [0, 2, 4]
    assert legal[eyes].all() and legal.sum() == 4  # three eyes and pass
    visits = {}
    for skip in (False, True):
        config = SearchConfig(policy=policy, num_simulations=16, skip_futile=skip)
        search = jax.jit(make_search_fn(env, uniform_net(env.num_actions), config))
        output = search(None, config.as_arrays(), jax.random.key(1), states)
        visits[skip] = np.asarray(visit_counts(output))[0]
    assert visits[False][eyes].sum() > 0
    assert visits[True][eyes].sum() == 0 and visits[True][25] == 16


def test_below_the_root_futile_moves_get_no_prior():
    env = envs.make("go", size=7, history=1)
    states = random_positions(env, num_games=8, num_plies=40, seed=3)
    states = jax.tree.map(lambda a: a[-8:], states)  # the games' 40th plies
    config = SearchConfig(policy="puct", num_simulations=48, skip_futile=True,
                          dirichlet_fraction=0.0)
    search = jax.jit(make_search_fn(env, uniform_net(env.num_actions), config))
    tree = search(None, config.as_arrays(), jax.random.key(4), states).search_tree
    futile = np.asarray(jax.jit(jax.vmap(jax.vmap(env.futile_moves())))(tree.embeddings))
    legal = np.asarray(tree.embeddings.legal_action_mask)
    expanded = np.asarray(tree.node_visits) > 0
    expanded[:, 0] = False  # the root is masked by mctx's invalid_actions instead
    logits = np.asarray(tree.children_prior_logits)
    lowest = np.finfo(logits.dtype).min
    checked = expanded[..., None] & futile & legal
    assert checked.sum() > 0  # nodes below the root with legal futile moves were searched
    assert (logits[checked] == lowest).all()
    assert (logits[expanded[..., None] & legal & ~futile] > lowest).all()


def test_where_every_legal_move_is_futile_the_legal_moves_stay():
    class AllFutile(type(envs.make("tictactoe"))):
        def futile_moves(self):
            return lambda state: jnp.ones(self.num_actions, bool)

    env = AllFutile()
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 2))
    np.testing.assert_array_equal(without_futile(env)(states), states.legal_action_mask)


def test_a_game_without_futile_moves_is_refused():
    env = envs.make("tictactoe")
    with pytest.raises(ValueError, match="tictactoe has no Env.futile_moves"):
        make_search_fn(env, uniform_net(env.num_actions), SearchConfig(skip_futile=True))
    with pytest.raises(ValueError, match="search.skip_futile must be true or false"):
        SearchConfig(skip_futile="yes").validate()


def test_the_agent_skips_futile_moves_in_play_only(tmp_path, search_configs):
    env, state = eyes_only_position()
    network = NetworkConfig(channels=8, num_blocks=0)
    program = ProgramConfig(game="go", game_options={"size": 5, "komi": 0.5, "history": 1},
                            network=network, search=SearchConfig(num_simulations=8,
                                                                 play_skip_futile=True))
    assert not program.search.skip_futile and play_search(program.search).skip_futile
    agent = Agent(env, program, go_tiny.random_params(env, network))
    assert agent.search_config.skip_futile
    states = jax.tree.map(lambda x: x[None], state)
    assert int(agent.act(states, jax.random.key(1))[0]) == 25
    path = agent.export(tmp_path / "go.azjax")
    search_configs.clear()
    make_player(f"alphazero:{path}", env)
    make_player(f"alphazero:{path},futile=keep", env)
    assert [c.skip_futile for c in search_configs] == [True, False]
    with pytest.raises(ValueError, match="futile must be skip or keep, got 'maybe'"):
        make_player(f"alphazero:{path},futile=maybe", env)
