"""`envs.check_env`: every shipped game passes; deliberately broken games fail with the
property they break; the `python -m envs.check` command line (a real process for a game
that passes, its `main` in this process, output captured, for the others)."""

from __future__ import annotations

import subprocess
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cli_in_process import command
from flax import struct

import envs
from envs import EnvCheckError, check_env
from envs.check import PROPERTIES, RULES, CheckReport, init_keys
from envs.check import main as check_main
from envs.conformance import ONLY_A_REFERENCE
from envs.conformance.endings import ENDINGS

# Small options where they save time (the CLI test checks tictactoe as well).
SHIPPED_OPTIONS = {"go": {"size": 5}, "gomoku": {"size": 7, "k": 4}}
NUM_GAMES = 24
WITHOUT_REFERENCE = tuple(p for p in PROPERTIES if p != "reference")  # no reference given


@pytest.mark.parametrize("game", envs.registered_games())
def test_shipped_games_pass(game):
    env = envs.make(game, **SHIPPED_OPTIONS.get(game, {}))
    report = check_env(env, num_games=NUM_GAMES, seed=1)
    assert isinstance(report, CheckReport)
    assert report.properties == WITHOUT_REFERENCE and len(WITHOUT_REFERENCE) >= 17
    assert report.game == env.name and report.max_plies == env.max_plies
    assert report.games == report.finished == NUM_GAMES
    assert sum(report.wins) == NUM_GAMES
    assert NUM_GAMES <= report.plies <= NUM_GAMES * env.max_plies
    assert 0 < report.longest <= env.max_plies
    assert report.forfeits == report.plies  # every live state also met a bad action
    assert report.after_end >= 2 * NUM_GAMES  # every game was stepped after its end
    assert report.symmetries == env.symmetries.size
    assert report.symmetry_pairs >= report.symmetries * 10
    assert sum(count for _, count in report.policies) == NUM_GAMES
    # Every finished game's kind of ending is counted once, its plies within the limits.
    assert sum(games for _, games, _, _ in report.endings) == report.finished
    assert all(kind in ENDINGS and 0 < low <= high <= report.longest
               for kind, _, low, high in report.endings)
    text = str(report)
    assert f"  endings    {report.endings[0][1]} {report.endings[0][0]} (" in text
    assert env.name in text and "hold" in text and all(p in text for p in WITHOUT_REFERENCE)
    # Without a reference, the report says what only a reference would have caught.
    assert text.splitlines()[-1] == f"  unchecked  {ONLY_A_REFERENCE}"
    assert "--reference module:NAME" in text and "OpenSpiel" in text


def test_a_forced_outcome_passes():
    """Coin splitting from 4 coins has one line of play (4=1+3, 3=1+2), which player 1
    ends and wins: every game won by one id is no sign of rewards to a fixed id here."""
    report = check_env(envs.make("coin_split", coins=4), num_games=16)
    assert report.wins == (0, 16, 0) and "winners" in report.properties


# --------------------------------------------------------------------------------------
# A tiny game: players add 1 or 2 to a shared count; whoever reaches TARGET wins. The
# observation shows the count alone (not who is to move).
# --------------------------------------------------------------------------------------

TARGET = 5


@struct.dataclass
class RaceState(envs.State):
    count: chex.Array = None
    ticks: chex.Array = None  # a hidden leaf, for the broken games


class Race(envs.Env):
    name = "race"
    num_actions = 2  # action a adds a + 1
    observation_shape = (1, TARGET + 1, 1)
    max_plies = TARGET

    def _state(self, count, player, rewards, terminated, step_count, ticks):
        legal = (count + jnp.arange(1, 3) <= TARGET) & ~terminated
        return RaceState(
            current_player=player,
            observation=self.observe(count),
            legal_action_mask=legal,
            rewards=rewards,
            terminated=terminated,
            step_count=step_count,
            count=count,
            ticks=ticks,
        )

    def observe(self, count):
        return (jnp.arange(TARGET + 1) == count).reshape(self.observation_shape)

    def _init(self, key):
        del key
        zero = jnp.int32(0)
        return self._state(zero, zero, jnp.zeros(2, jnp.float32), jnp.bool_(False), zero, zero)

    def reward(self, mover, count, done):
        """Rewards of the move that made `count`: +1 to the mover on reaching TARGET."""
        return jnp.where(done, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0)

    def _step(self, state, action):
        count = state.count + action + 1
        done = count >= TARGET
        rewards = self.reward(state.current_player, count, done).astype(jnp.float32)
        return self._state(count, 1 - state.current_player, rewards, done,
                           state.step_count + 1, state.ticks)

    def format_move(self, action):
        if action not in (0, 1):
            raise ValueError(f"no action {action}")
        return f"+{int(action) + 1}"

    def parse_move(self, text):
        if text.strip() not in ("+1", "+2"):
            raise ValueError(f"expected +1 or +2, got {text!r}")
        return int(text.strip()[1]) - 1


def replay(env, actions, key=None):
    state = env.init(jax.random.key(0) if key is None else key)
    states = [state]
    for a in actions:
        state = env.step(state, a)
        states.append(state)
    return states


def assert_fails(env, prop, **kwargs):
    with pytest.raises(EnvCheckError) as info:
        check_env(env, num_games=kwargs.pop("num_games", 16), **kwargs)
    err = info.value
    assert err.property == prop, str(err)
    text = str(err)
    assert text.startswith(f"{prop}: ") and RULES[prop] in text
    return err


class WrongSign(Race):
    """Rewards player 0 whoever makes the winning move."""

    def reward(self, mover, count, done):
        return jnp.where(done, jnp.array([1.0, -1.0]), 0.0)


def test_rewards_for_the_wrong_player_break_perspective():
    err = assert_fails(WrongSign(), "perspective")
    assert "player 0" in err.message and "player 1" in err.message
    assert "do not speak for the player who moves" in err.message
    # The actions replay to a final move that rewards player 0 whoever made it.
    states = replay(WrongSign(), err.actions)
    assert bool(states[-1].terminated) and not bool(states[-2].terminated)
    assert err.moves == [f"+{a + 1}" for a in err.actions]
    assert f"game {err.game}" in str(err) and err.seed == 0 and err.num_games == 16


class NotZeroSum(Race):
    def reward(self, mover, count, done):
        return jnp.where(done & (jnp.arange(2) == mover), 1.0, 0.0)


def test_non_zero_sum_rewards():
    err = assert_fails(NotZeroSum(), "rewards-zero-sum")
    final = replay(NotZeroSum(), err.actions)[-1]
    assert bool(final.terminated) and float(final.rewards.sum()) == 1.0
    assert err.ply == len(err.actions) - 1


class EarlyRewards(Race):
    def reward(self, mover, count, done):
        early = jnp.where(jnp.arange(2) == mover, 1.0, -1.0)
        return jnp.where(done | (count == 2), early, 0.0)


def test_rewards_before_the_end():
    err = assert_fails(EarlyRewards(), "rewards-only-at-end")
    assert err.actions == [1]  # the shortest game: +2 at once
    assert "+2" in str(err) and "[1]" in str(err)


class ChangesAfterTheEnd(Race):
    """A finished game keeps counting in a hidden leaf."""

    def step(self, state, action):
        out = super().step(state, action)
        return out.replace(ticks=out.ticks + state.terminated.astype(jnp.int32))


def test_state_that_changes_after_the_end():
    err = assert_fails(ChangesAfterTheEnd(), "frozen")
    assert ".ticks" in err.message
    states = replay(ChangesAfterTheEnd(), err.actions)
    assert bool(states[-2].terminated) and int(states[-1].ticks) == 1


class PythonIf(Race):
    def _step(self, state, action):
        if state.count + action + 1 >= TARGET:  # a Python `if` on a traced value
            return super()._step(state, action)
        return super()._step(state, action)


def test_python_if_on_a_traced_value():
    err = assert_fails(PythonIf(), "traceable")
    assert "jnp.where" in err.message and "test_check_env.py" in err.message
    assert err.actions is None


class NoMoveAtThree(Race):
    def _state(self, count, *args):
        state = super()._state(count, *args)
        return state.replace(legal_action_mask=state.legal_action_mask & (count != 3))


def test_live_state_without_a_legal_move():
    err = assert_fails(NoMoveAtThree(), "live-has-move")
    assert sum(a + 1 for a in err.actions) == 3
    assert not np.asarray(replay(NoMoveAtThree(), err.actions)[-1].legal_action_mask).any()


class TooLong(Race):
    max_plies = 2


def test_game_longer_than_max_plies():
    err = assert_fails(TooLong(), "ends")
    assert "max_plies = 2" in err.message and len(err.actions) == 2
    assert not bool(replay(TooLong(), err.actions)[-1].terminated)


class BadNotation(Race):
    def parse_move(self, text):
        return 0 if text == "+2" else super().parse_move(text)


class GarbageKeyError(Race):
    def parse_move(self, text):
        return {"+1": 0, "+2": 1}[text]


def test_notation_that_does_not_round_trip():
    err = assert_fails(BadNotation(), "notation")
    assert "format_move(1)" in err.message and "'+2'" in err.message
    err = assert_fails(GarbageKeyError(), "notation")
    assert "KeyError" in err.message and "ValueError" in err.message


class WrongObservationShape(Race):
    observation_shape = (1, TARGET + 2, 1)

    def observe(self, count):
        return (jnp.arange(TARGET + 1) == count).reshape(1, TARGET + 1, 1)


class ObservationDtypeChanges(Race):
    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(observation=out.observation.astype(jnp.float32))


def test_wrong_observation_shape_and_dtype():
    err = assert_fails(WrongObservationShape(), "types")
    assert "observation" in err.message and "[1, 7, 1]" in err.message
    err = assert_fails(ObservationDtypeChanges(), "types")
    assert ".observation" in err.message and "bool" in err.message and "float32" in err.message


class NumpyRandomInit(Race):
    """Draws a hidden value from numpy instead of the key."""

    def _init(self, key):
        return super()._init(key).replace(ticks=jnp.int32(np.random.randint(1 << 30)))


def test_init_that_ignores_its_key_for_its_randomness():
    err = assert_fails(NumpyRandomInit(), "deterministic")
    assert ".ticks" in err.message


class KeyedInit(Race):
    """A game MAY use its key: here it decides who moves first."""

    def _init(self, key):
        state = super()._init(key)
        return state.replace(current_player=jax.random.bernoulli(key).astype(jnp.int32))


def test_an_init_that_uses_its_key_passes():
    """Also the control of the broken games above: the tiny game itself passes."""
    keys = init_keys(0, 16)
    firsts = {int(KeyedInit().init(k).current_player) for k in keys}
    assert firsts == {0, 1}  # both players start some games
    report = check_env(KeyedInit(), num_games=16)
    assert report.finished == 16 and report.longest <= TARGET and report.wins[2] == 0


class DrawOnIllegalMove(Race):
    """An override of step that makes an illegal move a draw instead of a loss."""

    def step(self, state, action):
        out = super().step(state, action)
        forfeit = ~state.terminated & out.terminated & (out.count == state.count)
        return out.replace(rewards=jnp.where(forfeit, 0.0, out.rewards))


def test_step_override_that_breaks_the_illegal_move_rule():
    err = assert_fails(DrawOnIllegalMove(), "illegal-move")
    assert ".rewards" in err.message
    bad = err.actions[-1]
    assert bad in (-1, 2) or not bool(
        replay(DrawOnIllegalMove(), err.actions[:-1])[-1].legal_action_mask[bad])
    assert "#" in " ".join(err.moves) or bad in (0, 1)


# --------------------------------------------------------------------------------------
# A tiny symmetric game: players claim cells of a 3x3 board until it is full; whoever
# holds more corners wins.
# --------------------------------------------------------------------------------------

CORNERS = np.array([0, 2, 6, 8])


@struct.dataclass
class CornersState(envs.State):
    board: chex.Array = None


class Corners(envs.Env):
    name = "corners"
    num_actions = 9
    observation_shape = (3, 3, 3)
    max_plies = 9
    counted = CORNERS

    def _observation(self, board, player):
        planes = jnp.stack([board == player, board == 1 - player,
                            jnp.broadcast_to(player == 0, (9,))], axis=-1)
        return planes.reshape(3, 3, 3)

    def _init(self, key):
        del key
        board = jnp.full(9, -1, jnp.int32)
        return CornersState(current_player=jnp.int32(0),
                            observation=self._observation(board, jnp.int32(0)),
                            legal_action_mask=jnp.ones(9, bool), rewards=jnp.zeros(2, jnp.float32),
                            terminated=jnp.bool_(False), step_count=jnp.int32(0), board=board)

    def _step(self, state, action):
        mover = state.current_player
        board = jnp.where(jnp.arange(9) == action, mover, state.board)
        full = jnp.all(board >= 0)
        lead = jnp.sign(jnp.sum(board[self.counted] == 0) - jnp.sum(board[self.counted] == 1))
        rewards = jnp.where(full, jnp.stack([lead, -lead]), 0).astype(jnp.float32)
        return state.replace(current_player=1 - mover,
                             observation=self._observation(board, 1 - mover),
                             legal_action_mask=(board < 0) & ~full, rewards=rewards,
                             terminated=full, step_count=state.step_count + 1, board=board)

    @property
    def symmetries(self):
        return envs.dihedral_symmetries(3, 3)

    def transform_state(self, state, g):
        sym = self.symmetries
        return state.replace(board=state.board[sym.cell_perm[g]],
                             observation=sym.observation(state.observation, g),
                             legal_action_mask=sym.policy(state.legal_action_mask, g))


class TopLeftCounts(Corners):
    """Declares the board's symmetries, but the top-left corner alone decides."""

    counted = np.array([0])


class TransformForgetsTheBoard(Corners):
    def transform_state(self, state, g):
        return super().transform_state(state, g).replace(board=state.board)


class NotAGroup(Corners):
    """The identity and a quarter turn, without the half and three-quarter turns."""

    @property
    def symmetries(self):
        grid = np.arange(9).reshape(3, 3)
        return envs.from_cell_permutations(np.stack([grid.reshape(-1),
                                                     np.rot90(grid).reshape(-1)]))


def test_symmetric_game_passes():
    report = check_env(Corners(), num_games=16)
    assert report.symmetries == 8 and report.symmetry_pairs > 100


def test_rules_that_break_a_declared_symmetry():
    err = assert_fails(TopLeftCounts(), "symmetries-commute")
    assert ".rewards" in err.message and len(err.actions) == 9  # only the last move scores


def test_transform_state_that_forgets_a_leaf():
    err = assert_fails(TransformForgetsTheBoard(), "symmetries-commute")
    assert ".board" in err.message and "symmetry g = " in err.message


def test_symmetries_that_are_not_a_group():
    err = assert_fails(NotAGroup(), "symmetries-group")
    assert "not closed" in err.message


# --------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------


def run_cli(*args, cwd=None):
    """`python -m envs.check ARGS` in a child process."""
    return subprocess.run([sys.executable, "-m", "envs.check", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300, check=False)


def cli_in_process(*args):
    """`python -m envs.check ARGS` (`sys.exit(main())`) in this process."""
    return command(check_main, list(args))


def test_cli_passes_a_shipped_game():
    # The same number of games as test_shipped_games_pass: the same programs, which the
    # subprocess may find in the session's compilation cache (tests/conftest.py).
    out = run_cli("tictactoe", "--games", str(NUM_GAMES), "--seed", "3")
    assert out.returncode == 0, out.stderr
    assert f"tictactoe: all {len(WITHOUT_REFERENCE)} properties hold" in out.stdout and "seed 3" in out.stdout
    assert "\n  endings    " in out.stdout and " won by the mover (" in out.stdout
    assert "Warning" not in out.stderr and "Traceback" not in out.stderr


def test_cli_unknown_game_and_bad_arguments():
    for args, says in ((["no_such_game"], "unknown game 'no_such_game'"),
                       (["tictactoe", "--games", "0"], "--games"),
                       (["tictactoe", "--option", "size=4"], "size")):
        out = cli_in_process(*args)
        assert out.returncode == 2, (args, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines
        assert "Traceback" not in out.stderr and out.stdout == ""


BROKEN_MODULE = """
import jax.numpy as jnp
import envs


class Broken(envs.Env):
    \"\"\"Count to 3 by ones; the player who reaches 3 gets +1 and the other 0 (not zero-sum).\"\"\"

    name = "broken"
    num_actions = 1
    observation_shape = (1, 1, 4)
    max_plies = 3

    def _make(self, count, player, rewards):
        return envs.State(current_player=player,
                          observation=(jnp.arange(4) == count).reshape(1, 1, 4),
                          legal_action_mask=jnp.full(1, count < 3), rewards=rewards,
                          terminated=count >= 3, step_count=count)

    def _init(self, key):
        return self._make(jnp.int32(0), jnp.int32(0), jnp.zeros(2, jnp.float32))

    def _step(self, state, action):
        count = state.step_count + 1
        mover = state.current_player
        rewards = jnp.where((count == 3) & (jnp.arange(2) == mover), 1.0, 0.0)
        return self._make(count, 1 - mover, rewards.astype(jnp.float32))
"""


def test_cli_import_path_to_a_broken_game(tmp_path, monkeypatch):
    (tmp_path / "my_broken_game.py").write_text(BROKEN_MODULE)
    monkeypatch.chdir(tmp_path)  # the command finds the module in the current directory
    monkeypatch.setattr(sys, "path", list(sys.path))  # which it adds to sys.path
    try:
        out = cli_in_process("my_broken_game:Broken", "--games", "8")
    finally:
        sys.modules.pop("my_broken_game", None)
    assert out.returncode == 1, out.stderr
    assert any(line.startswith("error: rewards-zero-sum: ") for line in out.stderr.splitlines())
    assert "moves from env.init(key): " in out.stderr and "Traceback" not in out.stderr
