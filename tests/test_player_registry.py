"""The player registry (`azjax.run.grammar.specs`): a kind defined in one place is a player spec
everywhere (`parse_spec`, `make_player`, `play_match`), bad specs fail in one line, and
a host player's `PlayerFailed` is told with the match's game."""

from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from azjax import TrainConfig
from azjax.core.players import Player
from azjax.evaluation.baselines import random_player
from azjax.evaluation.evaluators import versus
from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import make_player, search_simulations
from azjax.go.gtp_client import GnuGoFailed
from azjax.run.grammar.specs import (
    PlayerFailed,
    PlayerKind,
    choice,
    kinds,
    parse_spec,
    players_help,
    register_player,
    unregister_player,
)


@pytest.fixture(scope="module")
def ttt():
    return envs.make("tictactoe")


def _first_legal(params, states, key):
    del params, key
    return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)


@pytest.fixture
def first_kind():
    """A test's own kind, `first[,host=true|false]`: the lowest legal move, on device or
    on the host. Its whole definition is this one `PlayerKind`."""
    kind = register_player(PlayerKind(
        "first", "first[,host=true|false]", "the lowest legal move",
        lambda spec, env, name: Player(name, _first_legal,
                                       jittable=not spec.values.get("host", False)),
        options={"host": choice("host", {"true": True, "false": False})}))
    yield kind
    unregister_player("first")


def test_a_registered_kind_is_parsed_built_and_plays_a_match(ttt, first_kind):
    spec = parse_spec("first, host=TRUE")
    assert (spec.kind, spec.arg, spec.options, spec.values) == (
        "first", None, {"host": "TRUE"}, {"host": True})
    assert "first" in kinds()
    assert "| `first[,host=true\\|false]` | the lowest legal move |" in players_help()
    for text in ("first", "first,host=true"):
        player = make_player(text, ttt)
        assert player.name == text and player.jittable == (text == "first")
        assert search_simulations(text, player) == 0
        # Lowest legal moves on both sides: the first mover takes the diagonal 2-4-6 and
        # wins every game, so A wins its first-seat half and loses the other.
        result = play_match(ttt, player, make_player("first", ttt, name="B"),
                            jax.random.key(0), num_games=4)
        np.testing.assert_array_equal(result.results, [1, 1, -1, -1])
    result = play_match(ttt, make_player("first", ttt), random_player(), jax.random.key(1),
                        num_games=6)
    assert result.num_games == 6 and set(result.results) <= {-1, 0, 1}
    with pytest.raises(ValueError, match=r"^player 'first,host=maybe': host must be true or "
                       r"false, got 'maybe'$"):
        make_player("first,host=maybe", ttt)
    with pytest.raises(ValueError, match="'first' takes no argument"):
        parse_spec("first:2")
    with pytest.raises(ValueError, match="player kind 'first' is already registered"):
        register_player(PlayerKind("first", "first", "another", first_kind.build))
    assert register_player(first_kind) is first_kind  # the same kind again: no change
    with pytest.raises(ValueError, match="a player kind's name cannot be 'a:b'"):
        register_player(PlayerKind("a:b", "a:b", "bad", first_kind.build))


def test_an_unregistered_kind_is_unknown(first_kind):
    unregister_player("first")
    with pytest.raises(ValueError, match="unknown player 'first'"):
        parse_spec("first")


class _ProgramDied(PlayerFailed):
    """A kind's own failure."""


def _failing_player(batch_index: int) -> Player:
    def policy(params, states, key):
        raise _ProgramDied("flaky", 3, "its program died", batch_index)

    return Player("flaky", policy, jittable=False)


def test_a_player_failure_names_the_game_of_the_match(ttt):
    # A is player 0 in games 1-2 of 4, so its first batch holds games 1 and 2; the
    # failure at batch index 1 is game 2.
    with pytest.raises(_ProgramDied) as failed:
        play_match(ttt, _failing_player(1), random_player(), jax.random.key(0), num_games=4)
    err = failed.value
    assert (err.player, err.move, err.game, err.batch_index) == ("flaky", 3, 2, 1)
    assert str(err) == "flaky failed in game 2 at move 3: its program died"
    assert isinstance(err, ValueError)  # the commands print it as one error line
    # GNU Go's failure is one of these, kept as GNU Go's by `in_game`
    gnugo = GnuGoFailed("gnugo:1", 5, "GNU Go died", 0).in_game(7)
    assert isinstance(gnugo, GnuGoFailed) and str(gnugo) == (
        "gnugo:1 failed in game 7 at move 5: GNU Go died")


def test_evaluations_leave_out_a_failing_opponent(ttt):
    told = []
    scores = versus(ttt, random_player(), [_failing_player(0), random_player("other")],
                    jax.random.key(0), 2, failed=lambda name, err: told.append((name, err)))
    assert list(scores) == ["vs other"]
    assert [(name, err.game) for name, err in told] == [("flaky", 2)]
    with pytest.raises(_ProgramDied):
        versus(ttt, random_player(), [_failing_player(0)], jax.random.key(0), 2)


@pytest.mark.parametrize("text, message", [
    ("minimax:3", "unknown player 'minimax:3': the kind must be one of alphabeta, "),
    ("mcts:abc", "player 'mcts:abc': the simulation count must be a number, got 'abc'"),
    ("mcts:5,c=2,c=3", "option 'c' given twice"),
    ("alphabeta:2,depth=3", "unknown option(s) ['depth']; 'alphabeta' takes ['eval']"),
    ("alphabeta:2,eval=fancy", "eval must be 'lines' or 'zero', got 'fancy'"),
    ("gnugo:1,seed=-1", "seed must be from 0 to 2147483647"),
    ("gnugo:1,timeout=0", "timeout must be a positive number"),
    ("network", "'network' needs an argument ('network:...')"),
    ("alphazero:runs/x,futile=maybe", "futile must be skip or keep, got 'maybe'"),
    ("alphago:runs/x,sims=4", "alphago needs lambda=L"),
])
def test_bad_specs_fail_in_one_line_before_anything_is_built(text, message):
    with pytest.raises(ValueError) as parsed:
        parse_spec(text)
    assert message in str(parsed.value) and "\n" not in str(parsed.value)
    with pytest.raises(ValueError) as validated:  # so a run refuses them before training
        TrainConfig().replace(eval_opponents=(text,)).check(envs.make("tictactoe"))
    assert message in str(validated.value)


def test_every_built_in_kind_is_known_to_the_grammar_in_a_fresh_process():
    """`azjax.run.grammar.specs` alone (below the layers that register most kinds) knows them all:
    importing any part of azjax imports the package, which registers them."""
    code = ("from azjax.run.grammar.specs import kinds, parse_spec\n"
            "parse_spec('gnugo:1,seed=2'); parse_spec('alphabeta:2,eval=zero')\n"
            "print(' '.join(kinds()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["alphabeta", "alphago", "alphazero", "gnugo", "mcts",
                                  "network", "random", "solver"]
