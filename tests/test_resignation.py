"""Resignation in self-play (`SelfPlayConfig.resign_threshold`, `resign_playout_prob`) by
its behaviour: training's jitted self-play (`make_play_fn`) on tic-tac-toe with a stand-in
search whose root value is a chosen function of the position, every game checked
against a plain-Python walk through the trajectory; and one training iteration on 5x5 Go
in which every game is resigned, whose auxiliary losses must then be zero.

The stand-in search's move is the highest empty cell (random plies aside), its policy
(a+1)^2 on the legal cells, as in tests/test_exploration.py. Each test plays from a fixed
seed: what it counts of its games (that some games resign at a given ply, that some
resignations would have been false) is a deterministic fact of that seed, checked so that
the plain-Python walk is known to have met it; the share of no-resign games alone is a
statistical criterion, with its false-failure rate.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from binomial import FALSE_FAILURE, interval

import envs
from azjax.core import replay as replay_lib
from azjax.core.iteration import init_train_state, make_iteration_fn
from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig
from azjax.core.outcomes import assign_outcomes, first_finals
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import (
    SelfPlayConfig,
    false_resignation_rate,
    init_games,
    make_play_fn,
)

WEIGHTS = np.arange(1, 10, dtype=np.float32) ** 2
SEARCH = SearchConfig(policy="gumbel")


def stand_in_search(value_fn):
    """A search whose policy is WEIGHTS on the legal cells, whose move is its argmax and
    whose root value (the mover's view) is `value_fn(states)` [B]."""

    def search(params, search, key, states):
        del params, search, key
        w = jnp.where(states.legal_action_mask, jnp.asarray(WEIGHTS), 0.0)
        pi = w / w.sum(-1, keepdims=True)
        value = value_fn(states).astype(jnp.float32)
        tree = SimpleNamespace(summary=lambda: SimpleNamespace(value=value))
        return SimpleNamespace(action_weights=pi, action=jnp.argmax(pi, -1), search_tree=tree)

    return search


def player_one_loses_heart(states):
    """-0.9 for player 1's moves, 0.2 for player 0's."""
    return jnp.where(states.current_player == 1, -0.9, 0.2)


def self_play(config: SelfPlayConfig, value_fn, seed: int, finals=None, windows: int = 1):
    """`windows` calls of the jitted self-play from fresh games: (the first games [B],
    the trajectories [windows][S, B]), on the host."""
    env = envs.make("tictactoe")
    play = jax.jit(make_play_fn(env, stand_in_search(value_fn), SEARCH, config,
                                finals=finals))
    games = jax.jit(lambda key: init_games(env, key, config))(jax.random.key(seed))
    first, trajectories = jax.device_get(games), []
    for key in jax.random.split(jax.random.key(seed + 1), windows):
        games, trajectory = play(None, SEARCH.as_arrays(), key, games)
        trajectories.append(jax.device_get(trajectory))
    return first, trajectories


def plies(trajectory):
    """Stones on the board of each recorded position [S, B]: the ply."""
    obs = trajectory.positions.observation
    return (obs[..., 0] | obs[..., 1]).sum((-1, -2))


def config_of(**changes) -> SelfPlayConfig:
    settings = dict(num_games=512, steps_per_iteration=8, temperature_moves=2,
                    random_move_prob=0.5, resign_threshold=-0.8, resign_playout_prob=0.0)
    settings.update(changes)
    return SelfPlayConfig(**settings)


def test_resigning_games_end_at_the_resigners_first_eligible_move():
    """Player 1's value is always below the threshold: each game ends at player 1's
    first move past the random opening and the sampled plies (ply max(L, 2) or later, L
    the game's opening plies; unless the game ended before), as a win for player 0, its
    length the plies played; the slot then starts a new game, and every position of the
    game gets z from that win."""
    config = config_of(random_opening_moves=4)
    first, (trajectory,) = self_play(config, player_one_loses_heart, seed=0)
    ply, player = plies(trajectory), trajectory.positions.player
    ended, resigned = trajectory.ended, trajectory.resigned
    steps, games = ended.shape
    positions, *_ = jax.jit(assign_outcomes)(trajectory)
    z = positions.z.reshape(steps, games)
    has_z = positions.has_z.reshape(steps, games)
    # with a discount the resignation is the game's last ply: the resigning position's
    # z is the undiscounted loss, its opponent's before it the win times d, and so on
    halved = jax.jit(functools.partial(assign_outcomes, discount=0.5))(trajectory)[0]
    halved = halved.z.reshape(steps, games)
    ends_by_resigning = 0
    for b in range(games):
        in_first_game = True
        for t in range(steps):
            eligible = player[t, b] == 1 and ply[t, b] >= max(first.opening_length[b], 2)
            if in_first_game:  # its opening length is known: resigned exactly when due
                assert resigned[t, b] == eligible, (b, t)
            if resigned[t, b]:  # any game: player 1 resigned at its move, lost
                ends_by_resigning += 1
                assert player[t, b] == 1 and ply[t, b] >= 3 and ended[t, b]
                assert trajectory.outcome[t, b] == 1.0
                assert trajectory.game_length[t, b] == ply[t, b]
            elif ended[t, b]:
                assert trajectory.game_length[t, b] == ply[t, b] + 1
            if ended[t, b]:
                in_first_game = False
                if t + 1 < steps:
                    assert ply[t + 1, b] == 0  # a new game
        for t in range(steps):  # positions of resigned games: z from player 0's win
            later = [u for u in range(t, steps) if ended[u, b]]
            assert has_z[t, b] == bool(later)
            if later and resigned[later[0], b]:
                assert z[t, b] == (1.0 if player[t, b] == 0 else -1.0)
                to_go = ply[later[0], b] - ply[t, b]
                assert halved[t, b] == z[t, b] * 0.5 ** to_go, (b, t, halved[t, b])
    assert ends_by_resigning > games  # first games and many second ones
    assert (first.opening_length == 4).any()  # some first games resigned only at ply 5
    assert ((ply == 5) & resigned).any()
    assert not trajectory.resign_checked.any() and not trajectory.false_resign.any()


def rival_holds_the_centre(states):
    """-0.9 when the mover's opponent holds the centre, else 0."""
    return jnp.where(states.board[:, 4] == 1 - states.current_player, -0.9, 0.0)


def test_no_resign_games_play_on_and_count_false_resignations():
    """With resign_playout_prob 1 no game resigns and the games are those of self-play
    without resignation (same keys); each game's end counts whether a player would have
    resigned (the first whose value fell below the threshold past its opening plies)
    and whether that player did not lose, as a plain-Python recount finds."""
    config = config_of(steps_per_iteration=20, temperature_moves=1, random_move_prob=0.6,
                       resign_threshold=-0.5, resign_playout_prob=1.0)
    _, (trajectory,) = self_play(config, rival_holds_the_centre, seed=3)
    off = config_of(steps_per_iteration=20, temperature_moves=1, random_move_prob=0.6,
                    resign_threshold=-1.0)
    _, (plain,) = self_play(off, rival_holds_the_centre, seed=3)
    assert plain.resigned is None and plain.positions.has_final is None
    for name in ("positions", "ended", "outcome", "game_length"):
        jax.tree.map(np.testing.assert_array_equal, getattr(trajectory, name),
                     getattr(plain, name))
    assert not trajectory.resigned.any()

    ply, player = plies(trajectory), trajectory.positions.player
    rival_centre = trajectory.positions.observation[:, :, 1, 1, 1]  # channel 1: rival
    steps, games = ply.shape
    checked = np.zeros((steps, games), bool)
    false = np.zeros((steps, games), bool)
    for b in range(games):
        resigner = None
        for t in range(steps):
            if resigner is None and ply[t, b] >= 1 and rival_centre[t, b]:
                resigner = int(player[t, b])
            if trajectory.ended[t, b]:
                checked[t, b] = resigner is not None
                result = trajectory.outcome[t, b] * (1 if resigner == 0 else -1)
                false[t, b] = resigner is not None and result >= 0
                resigner = None
    np.testing.assert_array_equal(trajectory.resign_checked, checked)
    np.testing.assert_array_equal(trajectory.false_resign, false)
    assert 0 < false.sum() < checked.sum() < trajectory.ended.sum()


def test_the_share_of_no_resign_games_is_resign_playout_prob():
    """Player 1 would resign at ply 3 of every game: the first two games of each slot
    (both reach ply 3 within 13 moves) resign there unless drawn as no-resign games, the
    first at `init_games`, the second at the slot's restart."""
    prob, games = 0.3, 3000
    config = config_of(num_games=games, steps_per_iteration=13, resign_playout_prob=prob)
    first, (trajectory,) = self_play(config, player_one_loses_heart, seed=5)
    ply, ended = plies(trajectory), trajectory.ended
    no_resign = []
    for b in range(games):
        game_ply3 = [t for t in range(13) if ply[t, b] == 3]
        first_game_end = int(np.argmax(ended[:, b]))
        assert ended[first_game_end, b]
        t1, t2 = game_ply3[0], [t for t in game_ply3 if t > first_game_end][0]
        assert trajectory.resigned[t1, b] == (not first.no_resign[b])
        no_resign += [not trajectory.resigned[t1, b], not trajectory.resigned[t2, b]]
    # 2 * games independent draws of B(1, prob): the count of no-resign games is
    # B(6000, 0.3); two-sided bounds at FALSE_FAILURE: false-failure rate < 1e-3.
    low, high = interval(len(no_resign), prob, FALSE_FAILURE)
    assert low <= sum(no_resign) <= high, (sum(no_resign), low, high)


def test_a_threshold_never_reached_or_off_leaves_self_play_as_it_was():
    """Threshold -1 adds no fields and plays what self-play without the settings plays;
    a threshold the value never falls below plays the same games too (random openings,
    random moves and sampled plies drawn from the same keys)."""
    base = dict(num_games=256, steps_per_iteration=12, temperature_moves=3,
                random_opening_moves=2, random_move_prob=0.2)
    _, (plain,) = self_play(SelfPlayConfig(**base), player_one_loses_heart, seed=7)
    first, (off,) = self_play(SelfPlayConfig(**base, resign_playout_prob=0.5),
                              player_one_loses_heart, seed=7)
    assert first.no_resign is None and off.resigned is None
    jax.tree.map(np.testing.assert_array_equal, off, plain)
    _, (never,) = self_play(SelfPlayConfig(**base, resign_threshold=-0.95),
                            player_one_loses_heart, seed=7)
    assert not never.resigned.any() and not never.resign_checked.any()
    for name in ("positions", "ended", "outcome", "game_length"):
        jax.tree.map(np.testing.assert_array_equal, getattr(never, name),
                     getattr(plain, name))


def test_resigned_games_get_no_auxiliary_targets_in_the_ring():
    """With auxiliary targets (here the final reward as 'score'), positions of resigned
    games are labelled `has_final` False, those of games played to the end True with the
    final target, also for positions written in an earlier window (`replay.resolve`)."""
    config = config_of(num_games=256, steps_per_iteration=5, resign_playout_prob=0.5)
    finals = {"score": lambda state: state.rewards[0]}
    _, trajectories = self_play(config, player_one_loses_heart, seed=11, finals=finals,
                                windows=3)
    steps, games = trajectories[0].ended.shape
    ring = replay_lib.init(3 * steps * games, (3, 3, 3), 9, score=True, has_final=True)

    @jax.jit
    def write(ring, trajectory):
        """A window into the ring, as training writes it."""
        positions, first_end, first_outcome, first_length = assign_outcomes(trajectory)
        ring = replay_lib.resolve(ring, first_end, first_outcome, first_length,
                                  slot_final=first_finals(trajectory))
        return replay_lib.add(ring, positions)

    for trajectory in trajectories:
        ring = write(ring, trajectory)
    data = jax.device_get(ring.data)
    ended = np.concatenate([t.ended for t in trajectories])
    resigned = np.concatenate([t.resigned for t in trajectories])
    outcome = np.concatenate([t.outcome for t in trajectories])
    has_final = np.zeros_like(ended)
    has_z = np.zeros_like(ended)
    score = np.zeros(ended.shape, np.float32)
    for b in range(games):
        for t in range(len(ended)):
            later = [u for u in range(t, len(ended)) if ended[u, b]]
            if later:
                has_z[t, b], has_final[t, b] = True, not resigned[later[0], b]
                score[t, b] = outcome[later[0], b] if has_final[t, b] else 0.0
    np.testing.assert_array_equal(data.has_z, has_z.reshape(-1))
    np.testing.assert_array_equal(data.has_final, has_final.reshape(-1))
    final = has_final.reshape(-1)
    np.testing.assert_array_equal(data.score[final], score.reshape(-1)[final])
    assert 0 < final.sum() < has_z.sum()


def test_training_on_resigned_games_has_zero_auxiliary_losses():
    """Threshold 1 and no sampled plies: every game is resigned at ply 0 by player 0, so
    every labelled position lacks auxiliary targets: the ownership and score losses are
    exactly 0 while the value loss is not; the metrics count every game as resigned."""
    program = ProgramConfig(
        game="go", game_options={"size": 5, "komi": 0.5, "history": 2},
        network=NetworkConfig(channels=8, num_blocks=0, ownership_head=True,
                              score_head=True),
        search=SearchConfig(policy="gumbel", num_simulations=2,
                            max_num_considered_actions=2),
        selfplay=SelfPlayConfig(num_games=16, steps_per_iteration=4, temperature_moves=0,
                                resign_threshold=1.0, resign_playout_prob=0.0),
        learner=LearnerConfig(batch_size=16), replay_capacity=16 * 4, gradient_steps=1)
    env = program.make_env()
    state = init_train_state(env, program, jax.random.key(0))
    state, metrics = jax.device_get(jax.jit(make_iteration_fn(env, program))(state))
    data = state.replay.data
    assert data.has_z.all() and not data.has_final.any() and (data.z == -1).all()
    assert metrics["games_finished"] == 16 * 4 and metrics["resigned"] == 1.0
    assert metrics["mean_game_length"] == 0.0
    assert metrics["resign_checked"] == 0 and metrics["false_resign"] == 0
    assert metrics["ownership_loss"] == 0.0 and metrics["score_loss"] == 0.0
    assert metrics["value_loss"] > 0.0


def test_false_resignation_rate_pools_metrics_records():
    records = [{"iteration": 1}, {"resign_checked": 4.0, "false_resign": 1.0},
               {"resign_checked": 6.0, "false_resign": 0.0}, {"resigned": 0.5}]
    assert false_resignation_rate(records) == (0.1, 10)
    rate, checked = false_resignation_rate([{"iteration": 1}])
    assert math.isnan(rate) and checked == 0


@pytest.mark.parametrize("changes, message", [
    ({"resign_threshold": -1.5}, "selfplay.resign_threshold must be in [-1, 1]"),
    ({"resign_threshold": 1.5}, "selfplay.resign_threshold must be in [-1, 1]"),
    ({"resign_playout_prob": 1.1}, "selfplay.resign_playout_prob must be in [0, 1]"),
])
def test_resignation_settings_are_checked(changes, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        SelfPlayConfig(**changes).validate()
