"""`envs.make("pgx:<id>")`: games through the wrapper equal the same games through raw pgx."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

import envs
from envs.pgx_adapter import PgxEnv, make_pgx

# (pgx id, games, plies): enough plies that most games end and some steps come after it.
GAMES = [("tic_tac_toe", 512, 12), ("connect_four", 128, 44), ("othello", 64, 70)]


def play(env, num_games, num_plies, seed):
    """Random legal games through the wrapper (any in-range action once a game is over),
    and the same action sequences replayed through raw pgx; one jit each."""

    def ours(key):
        def ply(state, key):
            k_legal, k_any = jax.random.split(key)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            legal = jax.random.categorical(k_legal, logits).astype(jnp.int32)
            anything = jax.random.randint(k_any, (), 0, env.num_actions)
            action = jnp.where(state.terminated, anything, legal)
            return env.step(state, action), (state, action)

        k_init, k_plies = jax.random.split(key)
        final, (states, actions) = jax.lax.scan(
            ply, env.init(k_init), jax.random.split(k_plies, num_plies)
        )
        return _append(states, final), actions

    def raw(key, actions):
        k_init, _ = jax.random.split(key)

        def ply(state, action):
            return env.pgx_env.step(state, action), state

        final, states = jax.lax.scan(ply, env.pgx_env.init(k_init), actions)
        return _append(states, final)

    keys = jax.random.split(jax.random.key(seed), num_games)
    states, actions = jax.jit(jax.vmap(ours))(keys)
    raw_states = jax.jit(jax.vmap(raw))(keys, actions)
    return jax.device_get((states, actions, raw_states))


def _append(states, final):
    return jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), states, final)


@pytest.fixture(scope="module", params=GAMES, ids=lambda g: g[0])
def games(request):
    env_id, num_games, num_plies = request.param
    env = envs.make(f"pgx:{env_id}")
    return (env, *play(env, num_games, num_plies, seed=len(env_id)))


def test_wrapper_equals_raw_pgx(games):
    _, states, actions, raw = games
    over = raw.terminated | raw.truncated
    np.testing.assert_array_equal(states.terminated, over)
    np.testing.assert_array_equal(states.current_player, raw.current_player)
    np.testing.assert_array_equal(states.step_count, raw._step_count)
    np.testing.assert_array_equal(states.rewards, raw.rewards)
    np.testing.assert_array_equal(
        states.legal_action_mask, raw.legal_action_mask & ~over[..., None]
    )
    np.testing.assert_array_equal(
        states.observation, raw.observation.reshape(states.observation.shape)
    )
    # The wrapped pgx state follows raw pgx, except that after the end our step leaves it
    # untouched while pgx zeroes its rewards.
    ours = jax.tree_util.tree_leaves_with_path(states.pgx_state)
    theirs = dict(jax.tree_util.tree_leaves_with_path(raw))
    for path, leaf in ours:
        want = theirs[path]
        if jax.tree_util.keystr(path) == ".rewards":
            live = ~np.concatenate([np.zeros_like(over[:, :1]), over[:, :-1]], axis=1)
            leaf, want = leaf[live], want[live]
        np.testing.assert_array_equal(leaf, want, err_msg=jax.tree_util.keystr(path))
    # Non-vacuous: most games ended, with wins for both players, and some steps came after
    # the end; both players moved first in some games (pgx draws the first mover).
    ended = over[:, -1]
    assert ended.mean() > 0.5
    final_rewards = states.rewards[over & ~np.roll(over, 1, axis=1)].reshape(-1, 2)
    assert (final_rewards[:, 0] == 1).any() and (final_rewards[:, 1] == 1).any()
    assert (over[:, :-1] & over[:, 1:]).any()
    assert len(set(states.current_player[:, 0].tolist())) == 2
    # Our rules: zero rewards except on the final step, no legal move once over.
    just_ended = over & ~np.concatenate([np.zeros_like(over[:, :1]), over[:, :-1]], axis=1)
    assert np.all(states.rewards[~just_ended] == 0)
    assert not states.legal_action_mask[over].any()
    assert actions.dtype == np.int32


def test_dtypes_and_shapes(games):
    env, states, _, _ = games
    n, t = states.terminated.shape
    assert states.observation.shape == (n, t, *env.observation_shape)
    assert states.observation.dtype == np.bool_ == env.observation_dtype
    assert states.legal_action_mask.shape == (n, t, env.num_actions)
    assert states.current_player.dtype == np.int32 and states.step_count.dtype == np.int32
    assert states.rewards.dtype == np.float32 and states.rewards.shape == (n, t, 2)
    assert isinstance(env.pgx_env, pgx.Env) and env.name == f"pgx:{env.pgx_env.id}"
    assert env.num_actions == env.pgx_env.num_actions
    assert env.observation_shape == env.pgx_env.observation_shape
    assert env.num_players == 2


def test_identity_symmetry(games):
    env, states, _, _ = games
    sym = env.symmetries
    h, w, _ = env.observation_shape
    assert sym.size == 1
    np.testing.assert_array_equal(sym.cell_perm, np.arange(h * w)[None])
    np.testing.assert_array_equal(sym.action_perm, np.arange(env.num_actions)[None])
    one = jax.tree.map(lambda x: x[0, 3], states)
    assert env.transform_state(one, 0) is one
    np.testing.assert_array_equal(sym.observation(one.observation, 0), one.observation)


def test_jit_vmap_step_and_illegal_action():
    env = envs.make("pgx:tic_tac_toe")
    step = jax.jit(jax.vmap(env.step))
    states = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), 4))
    states = step(states, jnp.array([4, 4, 0, 8], jnp.int32))
    assert states.step_count.tolist() == [1] * 4 and not states.terminated.any()
    mover = np.asarray(states.current_player)
    # An occupied cell, an out-of-range action, a negative one, and a legal move.
    after = jax.device_get(step(states, jnp.array([4, 9, -1, 4], jnp.int32)))
    assert after.terminated.tolist() == [True, True, True, False]
    for i in range(3):
        want = np.zeros(2, np.float32)
        want[mover[i]], want[1 - mover[i]] = -1.0, 1.0
        np.testing.assert_array_equal(after.rewards[i], want)
        assert not after.legal_action_mask[i].any()
    assert after.step_count.tolist() == [1, 1, 1, 2]


def test_render_tic_tac_toe():
    env = envs.make("pgx:tic_tac_toe")
    state = env.init(jax.random.key(1))
    for action in (4, 0):
        state = env.step(state, action)
    text = env.render(state)
    assert (
        text.splitlines()[0]
        == f"pgx:tic_tac_toe: player {int(state.current_player)} to move, ply 2"
    )
    # The player to move owns the centre (plane 0), the opponent the corner (plane 1);
    # the default render marks player 0's pieces X and player 1's O.
    mover, other = "XO" if int(state.current_player) == 0 else "OX"
    assert text.splitlines()[1:4] == [f"{other} . .", f". {mover} .", ". . ."]
    for action in (1, 3, 7):
        state = env.step(state, action)
    assert bool(state.terminated) and "game over after 5 plies" in env.render(state)


def test_errors(monkeypatch):
    with pytest.raises(ValueError) as err:
        envs.make("pgx:unknown")
    assert "tic_tac_toe" in str(err.value) and "othello" in str(err.value)
    for env_id, words in (
        ("backgammon", "chance"),
        ("2048", "players"),
        ("minatar-breakout", "players"),
        ("sparrow_mahjong", "players"),
    ):
        with pytest.raises(ValueError, match=words):
            envs.make(f"pgx:{env_id}")
    with pytest.raises(ValueError, match="no options"):
        envs.make("pgx:tic_tac_toe", size=4)
    assert isinstance(make_pgx("connect_four"), PgxEnv)
    monkeypatch.setitem(sys.modules, "pgx", None)
    with pytest.raises(ValueError, match="pip install pgx"):
        envs.make("pgx:othello")
