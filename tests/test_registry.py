"""Which game a name means: registered names, import paths, entry points, and errors."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap

import pytest

import envs
from envs import registry
from envs.tictactoe import TicTacToe


class SmallTicTacToe(TicTacToe):
    """A subclass that takes an option, to see options reach the constructor."""

    def __init__(self, label: str = "plain"):
        self.label = label


def not_a_game():
    return 42


@pytest.fixture
def clean_registry():
    saved = dict(registry._registered)
    yield
    registry._registered.clear()
    registry._registered.update(saved)


def test_register_then_make_builds_with_options(clean_registry):
    envs.register("ttt_variant", SmallTicTacToe)
    env = envs.make("ttt_variant", label="x")
    assert isinstance(env, SmallTicTacToe) and env.label == "x"
    assert "ttt_variant" in envs.registered_games()
    assert envs.spec_of(env) == ("ttt_variant", {"label": "x"})


def test_registering_again_replaces_but_a_shipped_name_needs_overwrite(clean_registry):
    envs.register("ttt_variant", SmallTicTacToe)
    envs.register("ttt_variant", lambda: SmallTicTacToe("second"))
    assert envs.make("ttt_variant").label == "second"
    with pytest.raises(ValueError, match="shipped game"):
        envs.register("tictactoe", SmallTicTacToe)
    envs.register("tictactoe", SmallTicTacToe, overwrite=True)
    assert isinstance(envs.make("tictactoe"), SmallTicTacToe)


@pytest.mark.parametrize("name, factory, message", [
    ("", SmallTicTacToe, "non-empty"),
    (" padded ", SmallTicTacToe, "non-empty"),
    ("a:b", SmallTicTacToe, "cannot hold ':'"),
    ("fine", 3, "must be callable"),
])
def test_register_refuses_bad_names_and_factories(clean_registry, name, factory, message):
    with pytest.raises(ValueError, match=message):
        envs.register(name, factory)
    assert name not in envs.registered_games()


def test_import_path_names_a_class_or_factory_in_any_module():
    env = envs.make("test_registry:SmallTicTacToe", label="y")
    assert type(env).__name__ == "SmallTicTacToe" and env.label == "y"
    assert envs.spec_of(env) == ("test_registry:SmallTicTacToe", {"label": "y"})


def test_import_path_finds_a_module_in_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "my_own_game.py").write_text(textwrap.dedent("""
        from envs.tictactoe import TicTacToe

        class Mine(TicTacToe):
            name = "mine"

        def build(**options):
            return Mine()
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert envs.make("my_own_game:Mine").name == "mine"
    assert envs.make("my_own_game:build").name == "mine"
    sys.modules.pop("my_own_game", None)


@pytest.mark.parametrize("game, message", [
    ("no_such_game", "unknown game 'no_such_game'; known games: coin_split"),
    ("no_such_module_xyz:Game", "cannot import 'no_such_module_xyz'"),
    ("envs.tictactoe:NoSuchClass", "has no attribute 'NoSuchClass'"),
    (":Game", "expected an import path"),
    ("__main__:NoSuchGame", "defined in the script or notebook that trained it"),
    ("envs.tictactoe:", "expected an import path"),
    ("envs.tictactoe:EMPTY", "not an Env class or factory"),
    ("envs.tictactoe:state_from_board", "bad options|not an envs.Env"),
    ("test_registry:not_a_game", "built int, not an envs.Env"),
])
def test_bad_game_names_get_a_clear_error(game, message):
    with pytest.raises(ValueError, match=message):
        envs.make(game)


def test_bad_options_name_the_game():
    with pytest.raises(ValueError, match="bad options for game 'tictactoe'"):
        envs.make("tictactoe", size=4)
    with pytest.raises(ValueError, match="bad options for game 'envs.gomoku:Gomoku'"):
        envs.make("envs.gomoku:Gomoku", colour="red")


def test_a_game_an_installed_package_declares_is_found_by_its_entry_point(monkeypatch):
    point = importlib.metadata.EntryPoint(
        name="plugged_ttt", value="test_registry:SmallTicTacToe", group=registry.ENTRY_POINT_GROUP)

    def entry_points(group):
        return [point] if group == registry.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert "plugged_ttt" in envs.registered_games()
    assert envs.make("plugged_ttt", label="z").label == "z"


def test_spec_of_an_env_built_directly_is_its_class_path():
    assert envs.spec_of(SmallTicTacToe()) == ("test_registry:SmallTicTacToe", {})
    rebuilt = envs.make(*envs.spec_of(TicTacToe())[:1])
    assert type(rebuilt) is TicTacToe


class Sized(TicTacToe):
    def __init__(self, size: int = 3, *extra, **options):
        self.size, self.options = size, options


def test_spec_of_records_the_constructor_arguments_by_name():
    assert envs.spec_of(Sized(5)) == ("test_registry:Sized", {"size": 5})
    assert envs.spec_of(Sized(size=4, colour="red")) == (
        "test_registry:Sized", {"size": 4, "colour": "red"})
    with pytest.raises(ValueError, match="positional options"):
        envs.spec_of(Sized(5, 6))
    with pytest.raises(ValueError, match="cannot record"):
        envs.spec_of(Sized(size=[1, 2]))
