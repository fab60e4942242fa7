"""`envs.check_env` against broken copies of a real game: Connect Four with one bug each
(the bugs a user writing a game makes: rewards to a fixed id or by the mover, the wrong
winner, a player label that slips, a missing direction, ...). Each fails with the
property that names its bug; the bugs a protocol cannot see (a wrong rule) fail against
an independent plain-Python reference (`reference=`). The real game passes both ways.

Random Connect Four games almost never reach one position with both player ids to move,
so the older "perspective" property alone misses the reward bugs (see issue 36)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import EnvCheckError, check_env
from envs.conformance import init_keys
from envs.connect_four import ConnectFour
from envs.go import Go

ROWS, COLS = 6, 7
NUM_GAMES = 64


class ReferenceConnectFour:
    """Connect Four in plain Python with OpenSpiel's state API (`grid[r][c]`, r = 0 the
    bottom row; a win is found by walking the four line directions from the new disc)."""

    def new_initial_state(self):
        return _RefState()


class _RefState:
    def __init__(self):
        self.grid = [[None] * COLS for _ in range(ROWS)]
        self.player, self.plies, self.winner = 0, 0, None

    def current_player(self):
        return self.player

    def is_terminal(self):
        return self.winner is not None or self.plies == ROWS * COLS

    def legal_actions(self):
        return [] if self.is_terminal() else [
            c for c in range(COLS) if self.grid[ROWS - 1][c] is None]

    def returns(self):
        if self.winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self.winner == 0 else [-1.0, 1.0]

    def apply_action(self, col):
        row = next(r for r in range(ROWS) if self.grid[r][col] is None)
        self.grid[row][col] = self.player
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < ROWS and 0 <= c < COLS and self.grid[r][c] == self.player:
                    run, r, c = run + 1, r + sign * dr, c + sign * dc
            if run >= 4:
                self.winner = self.player
        self.plies += 1
        self.player = 1 - self.player


# --- the broken copies: each changes what ConnectFour._step returns ----------------------


class RewardsToPlayerZero(ConnectFour):
    """Every win is credited to player 0."""

    def _step(self, state, action):
        out = super()._step(state, action)
        won = jnp.abs(out.rewards[0])
        return out.replace(rewards=(won * jnp.array([1.0, -1.0])).astype(jnp.float32))


class RewardsByMover(ConnectFour):
    """The mover's reward is written at index 0, its opponent's at index 1."""

    def _step(self, state, action):
        out = super()._step(state, action)
        mine = jnp.where(state.current_player == 0, out.rewards[0], out.rewards[1])
        return out.replace(rewards=jnp.stack([mine, -mine]).astype(jnp.float32))


class WrongWinner(ConnectFour):
    """Four in a row loses (a sign slip): nothing but the rules can tell."""

    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(rewards=-out.rewards)


class LabelSlips(ConnectFour):
    """The player label does not change after the first ply (player 0 is named to move
    twice); labels and rewards agree from then on, so only the rules can tell."""

    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(current_player=jnp.where(out.step_count == 1, 0, out.current_player))


class NoDiagonals(ConnectFour):
    """A line direction forgotten: no diagonal wins (horizontal and vertical ones only)."""

    def _step(self, state, action):
        out = super()._step(state, action)
        own = out.discs[1]  # the mover's discs after the move
        v = own & (own >> 1)
        vertical = (v & (v >> 2)) != 0
        h = own[:-1] & own[1:]
        horizontal = (h[:-2] & h[2:]) != 0
        won = vertical.any() | horizontal.any()
        full = out.step_count == ROWS * COLS
        occupied = out.discs[0] | out.discs[1]
        return out.replace(
            rewards=jnp.where(won, out.rewards, 0.0).astype(jnp.float32),
            terminated=won | full,
            legal_action_mask=((occupied & (1 << (ROWS - 1))) == 0) & ~(won | full),
        )


class MovesAfterTheEnd(ConnectFour):
    """A finished game still offers moves."""

    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(legal_action_mask=jnp.where(out.terminated, True,
                                                        out.legal_action_mask))


class NoMoveMidGame(ConnectFour):
    """The legal mask is cleared after ply 5 of a game that goes on."""

    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(legal_action_mask=out.legal_action_mask & (out.step_count != 5))


class RewardsBeforeTheEnd(ConnectFour):
    """A reward for the centre column, given at once."""

    def _step(self, state, action):
        out = super()._step(state, action)
        bonus = jnp.where((action == 3) & ~out.terminated, 1.0, 0.0)
        sign = jnp.where(state.current_player == 0, 1.0, -1.0)
        return out.replace(rewards=out.rewards + bonus * sign * jnp.array([1.0, -1.0]))


class LoserKeepsZero(ConnectFour):
    """The loser gets 0, not -1: not zero-sum."""

    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(rewards=jnp.maximum(out.rewards, 0.0))


class MaxPliesTooShort(ConnectFour):
    """States a ply limit the game does not keep."""

    max_plies = 12


class GoScoredBackwards(Go):
    """Go whose rewards give the win to the side that the area count says lost."""

    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(rewards=-out.rewards)


# (game, the property it breaks, whether only a reference can see it)
BROKEN = [
    (RewardsToPlayerZero, "winners", False),
    (RewardsByMover, "winners", False),
    (WrongWinner, "reference", True),
    (LabelSlips, "reference", True),
    (NoDiagonals, "reference", True),
    (MovesAfterTheEnd, "live-has-move", False),
    (NoMoveMidGame, "live-has-move", False),
    (RewardsBeforeTheEnd, "rewards-only-at-end", False),
    (LoserKeepsZero, "rewards-zero-sum", False),
    (MaxPliesTooShort, "ends", False),
]


def test_the_real_game_agrees_with_its_reference():
    checked = check_env(ConnectFour(), num_games=NUM_GAMES, reference=ReferenceConnectFour())
    assert checked.properties[-1] == "reference"
    assert checked.reference_plies == checked.plies > NUM_GAMES * 7
    assert "reference  agreed on all" in str(checked)


@pytest.mark.parametrize("game, prop, needs_reference", BROKEN,
                         ids=[b[0].__name__ for b in BROKEN])
def test_each_broken_copy_fails_with_the_property_it_breaks(game, prop, needs_reference):
    """Bugs of the protocol fail without a reference; wrong rules fail against one, and
    the moves the error gives lead, in the reference, to where the two disagree."""
    reference = ReferenceConnectFour() if needs_reference else None
    with pytest.raises(EnvCheckError) as caught:
        check_env(game(), num_games=NUM_GAMES, reference=reference)
    err = caught.value
    assert err.property == prop, str(err)
    assert str(err).splitlines()[0].startswith(f"{prop}: ")
    assert err.actions is not None and err.game is not None and err.ply is not None
    if needs_reference:
        # The reported moves, replayed in the broken game and in the reference, lead to
        # positions that agree up to the reported ply, and differ where it says: at that
        # ply (its player or legal moves), or after its move (the end or the rewards).
        broken = positions_of_the_game(game(), err)
        expected = positions_of_the_reference(reference, err.actions)
        assert len(broken) == len(expected) == len(err.actions) + 1
        assert broken[:-1] == expected[:-1]
        assert broken[-1] != expected[-1]
        assert len(err.actions) - err.ply in (0, 1)


def positions_of_the_game(env, err):
    """What the reference is compared on after each of `err.actions` (0, 1, ... moves)
    in `env`, from the init key of the game the error names: whether it is over, and
    then its rewards, else the player to move and the legal moves."""
    state = env.init(init_keys(err.seed, err.num_games)[err.game])
    step = jax.jit(env.step)
    out = []
    for move in [None, *err.actions]:
        if move is not None:
            state = step(state, move)
        if bool(state.terminated):
            out.append((True, [float(r) for r in np.asarray(state.rewards)]))
        else:
            legal = np.flatnonzero(np.asarray(state.legal_action_mask)).tolist()
            out.append((False, int(state.current_player), legal))
    return out


def positions_of_the_reference(reference, actions):
    """`positions_of_the_game` in the reference, where every reported move is legal (the
    moves played before a disagreement were legal in both)."""
    state = reference.new_initial_state()
    out = []
    for move in [None, *actions]:
        if move is not None:
            assert not state.is_terminal() and move in state.legal_actions()
            state.apply_action(move)
        if state.is_terminal():
            out.append((True, [float(r) for r in state.returns()]))
        else:
            out.append((False, state.current_player(), sorted(state.legal_actions())))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("game", [b[0] for b in BROKEN if b[2]],
                         ids=[b[0].__name__ for b in BROKEN if b[2]])
def test_wrong_rules_keep_the_protocol(game):
    """What a reference is for: these copies keep every protocol property."""
    report = check_env(game(), num_games=NUM_GAMES)
    assert "reference" not in report.properties


@pytest.mark.slow  # a compile of its own; RewardsToPlayerZero fails by default at 64 games
def test_reward_bugs_of_the_issue_fail_on_a_large_board_with_many_games():
    """The issue's report: a copy rewarding player 0 passed 2,000 games. Now it cannot."""
    with pytest.raises(EnvCheckError) as caught:
        check_env(RewardsToPlayerZero(), num_games=256, seed=5)
    assert caught.value.property == "winners"
    assert "won all" in str(caught.value)


def test_a_score_margin_that_disagrees_with_the_rewards():
    go = GoScoredBackwards(size=5)
    with pytest.raises(EnvCheckError) as caught:
        check_env(go, num_games=32)
    assert caught.value.property == "score-margin", str(caught.value)


def test_a_reference_without_the_api_is_refused_in_one_line():
    with pytest.raises(ValueError, match="new_initial_state"):
        check_env(ConnectFour(), num_games=4, reference=object())


@pytest.mark.slow
def test_shipped_games_keep_the_new_properties_over_many_games():
    for name, options in (("tictactoe", {}), ("coin_split", {}), ("go", {"size": 5})):
        report = check_env(envs.make(name, **options), num_games=256, seed=3)
        assert {"winners", "score-margin"} <= set(report.properties)


class GoOwnedByColourIds(Go):
    """Ownership as the board's colour ids (0 Black, 1 White, -1 empty) cast to int8 and
    shifted: Black 1, White 2, empty 0. The right shape, the wrong values."""

    def ownership(self):
        return lambda state: (state.board + 1).astype(jnp.int8)


class GoOwnershipWithPass(Go):
    """Ownership with an entry for the pass action: one more than the board's cells."""

    def ownership(self):
        inner = super().ownership()
        return lambda state: jnp.concatenate([inner(state), jnp.zeros(1, jnp.int8)])


class GoEverythingFutile(Go):
    """Futile moves that take in every legal move, pass included."""

    def futile_moves(self):
        return lambda state: state.legal_action_mask


class GoFutileWithoutPass(Go):
    """Futile flags of the board's points only: one short of the actions."""

    def futile_moves(self):
        inner = super().futile_moves()
        return lambda state: inner(state)[:-1]


# Slow for two of the four (each compiles the checker on a Go of its own): one broken
# hook of each kind stays in the default run.
@pytest.mark.parametrize("broken, rule, says", [
    pytest.param(GoOwnedByColourIds, "ownership",
                 "ownership gave a cell the owner 2, not -1, 0 or 1", marks=pytest.mark.slow),
    (GoOwnershipWithPass, "ownership",
     "ownership returned int8[26] for a finished game, expected int8[25]"),
    pytest.param(GoEverythingFutile, "futile-moves",
                 "after 0 plies futile_moves flags every one of the 26 legal moves",
                 marks=pytest.mark.slow),
    (GoFutileWithoutPass, "futile-moves", "futile_moves does not return bool [26]"),
])
def test_a_go_hook_that_breaks_its_rule(broken, rule, says):
    """Ownership maps that are no maps of owners, and futile moves that leave no move or
    miss actions."""
    with pytest.raises(EnvCheckError) as caught:
        check_env(broken(size=5), num_games=16)
    assert caught.value.property == rule and says in str(caught.value)
