"""The rules `envs.check_env` checks (`RULES`, by name, with what a correct game does) and
the error it raises when a game breaks one (`EnvCheckError`, which shows the moves of the
game that breaks it)."""

from __future__ import annotations

from collections.abc import Sequence

from envs.core import Env

RULES: dict[str, str] = {
    "types": (
        "init and step return States whose fields have fixed shapes and dtypes "
        "(observation [*observation_shape] of a bool or numeric dtype, legal_action_mask "
        "bool [num_actions], rewards float32 [2], terminated bool [], current_player int32 [] "
        "holding 0 or 1, step_count int32 []), step keeps every leaf's shape and dtype, "
        "num_players == 2 and max_plies is stated"
    ),
    "notation": (
        "format_move(a) is a non-empty str and parse_move(format_move(a)) == a for every "
        "action a, and parse_move raises ValueError on text that names no move"
    ),
    "symmetries-group": (
        "env.symmetries is a group: cell_perm [G, cells], action_perm and "
        "inverse_action_perm [G, num_actions] hold permutations, entry 0 is the identity, "
        "the G (cell, action) pairs are distinct and closed under composition, each has an "
        "inverse, and inverse_action_perm inverts action_perm"
    ),
    "traceable": "init and step are pure JAX functions that trace under jax.jit and jax.vmap",
    "symmetries-transform": (
        "transform_state(s, g) keeps the state's structure and moves its observation and "
        "legal mask as symmetries.observation and symmetries.policy do"
    ),
    "deterministic": (
        "the same key gives the same game: init(key) is the same every time, and a state "
        "stepped alone (jit) equals the same state stepped in a batch (jit + vmap)"
    ),
    "live-has-move": "every live state has a legal move, and a finished one has none",
    "step-count": (
        "step_count counts the plies played: 0 at init and one more after every move (a "
        "forfeit and a step after the end leave it as it was)"
    ),
    "rewards-only-at-end": "rewards are zero at init and on every step that does not end the game",
    "rewards-values": "the rewards of the step that ends a game are -1, 0 or +1",
    "rewards-zero-sum": "the rewards of the step that ends a game are zero-sum: r[0] == -r[1]",
    "frozen": (
        "a step on a finished game, with any action, returns the state unchanged (every "
        "leaf, hidden ones too) except that the rewards become zero"
    ),
    "illegal-move": (
        "an illegal or out-of-range action on a live state ends the game: the mover gets "
        "-1 and the other player +1, the legal mask becomes all False and every other leaf "
        "(the board) is left as it was"
    ),
    "ends": "every game ends within max_plies plies",
    "symmetries-commute": (
        "every symmetry commutes with step: step(transform_state(s, g), "
        "symmetries.action(a, g)) equals transform_state(step(s, a), g) on every leaf"
    ),
    "observation": (
        "the observation follows the state: every move changes it, and two states equal in "
        "every other leaf have equal observations (the network tells positions apart by "
        "their observations alone; keep what an observation shows, a history too, in "
        "leaves of the state)"
    ),
    "perspective": (
        "rewards are indexed by player id and current_player is the player the observation "
        "speaks for: the same observation, legal mask and move give the player who moves "
        "the same reward, whichever player id moves (a game fails this if it hides from the "
        "observation something that the result of a move depends on, or rewards a fixed "
        "or the wrong player id where both ids see the same observation; an observation "
        "that shows who is to move, as a side-to-move plane does, never looks the same to "
        "both, and there 'winners' and a reference check the rewards' ids)"
    ),
    "winners": (
        "the results speak for player ids, not seats or movers: over 16 or more distinct "
        "decisive random games, some ended by each player id's move, not every one is won "
        "by the same player id; and the player who ends a game with a move does not win "
        "every such game when it is one id and lose every one when it is the other "
        "(checked over 8 or more distinct decisive games ended by each id); a game fails "
        "this if it rewards a fixed player id or puts the mover's reward at index 0"
    ),
    "score-margin": (
        "for a game with a score_margin, every finished random game's margin (player 0's "
        "points minus player 1's) has the sign of player 0's reward: positive for a win, "
        "negative for a loss, zero for a draw"
    ),
    "ownership": (
        "for a game with an ownership, every finished random game's map is int8 of one "
        "entry per cell of the observation's [H, W] (or [cells]) part, each -1, 0 or 1"
    ),
    "futile-moves": (
        "for a game with futile_moves, every live random position's flags are bool "
        "[num_actions] and leave at least one legal move unflagged, and a flagged move is "
        "never the only legal move that wins at once (checked in the positions of 8 or "
        "fewer legal moves, where a random game looks at every one, one ply ahead)"
    ),
    "picture": (
        "env.picture(state, last_move) returns an envs.picture.Picture whose svg() is "
        "well-formed XML and whose spots map int actions in [0, num_actions) to points "
        "inside the picture (0 <= x <= width, 0 <= y <= height)"
    ),
    "reference": (
        "played move by move beside `reference` (check_env(env, reference=...): an "
        "independent implementation of the same rules), every random game agrees with it "
        "at every ply: the same player to move, the same legal moves, the game ends on the "
        "same ply with the same rewards"
    ),
}
"""Each property `check_env` checks, by name, with what a correct game does, in the order
in which they are checked (but for the replay of one game alone, for "deterministic",
which comes last, and "reference", checked only when a reference is given)."""

PROPERTIES: tuple[str, ...] = tuple(RULES)
"""Every property's name; a check without a reference checks all but "reference"."""
_MAX_SHOWN_MOVES = 60


class EnvCheckError(AssertionError):
    """A game breaks the protocol (raised by `envs.check_env`).

    Attributes:
      property: the rule broken, a short name such as "rewards-zero-sum" (see `RULES`).
      message: what happened.
      actions: the action ids, from `env.init(key)`, of the shortest game found that shows
        the failure (up to and including the failing step), or None.
      moves: the same actions as `env.format_move` writes them (raw ids where it fails).
      seed, num_games, game, ply: where `check_env(env, num_games, seed)` found it: the
        game's index (its init key is `envs.check.init_keys(seed, num_games)[game]`)
        and the ply of the failing step; None when no random game was involved.
    """

    def __init__(
        self,
        property: str,
        message: str,
        actions: Sequence[int] | None = None,
        *,
        env: Env | None = None,
        seed: int | None = None,
        num_games: int | None = None,
        game: int | None = None,
        ply: int | None = None,
    ):
        self.property = property
        self.message = message
        self.actions = None if actions is None else [int(a) for a in actions]
        self.moves = None if self.actions is None else format_moves(env, self.actions)
        self.seed, self.num_games, self.game, self.ply = seed, num_games, game, ply
        super().__init__(self._text())

    def _text(self) -> str:
        lines = [f"{self.property}: {self.message}",
                 f"  a correct game: {RULES.get(self.property, '(see envs.check)')}"]
        if self.actions is not None:
            shown = self.moves
            ids = [str(a) for a in self.actions]
            if len(shown) > _MAX_SHOWN_MOVES:
                half = _MAX_SHOWN_MOVES // 2
                shown = shown[:half] + ["..."] + shown[-half:]
                ids = ids[:half] + ["..."] + ids[-half:]
            moves = " ".join(shown) if shown else "(none: the initial state)"
            lines.append(f"  moves from env.init(key): {moves}")
            if shown != ids:
                lines.append(f"  action ids: [{', '.join(ids)}]")
            if len(self.actions) > _MAX_SHOWN_MOVES:
                lines.append(f"  ({len(self.actions)} moves; all of them in err.actions)")
        if self.game is not None:
            lines.append(
                f"  found in game {self.game} at ply {self.ply} of check_env(env, num_games="
                f"{self.num_games}, seed={self.seed}); that game's init key is "
                f"envs.check.init_keys({self.seed}, {self.num_games})[{self.game}]"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._text()


def format_moves(env: Env | None, actions: Sequence[int]) -> list[str]:
    """Actions as `env.format_move` writes them, the raw id where it fails.

    Args:
      env: the game, or None (ids only).
      actions: action ids.

    Returns:
      One text per action; "#<id>" where `format_move` fails.
    """
    out = []
    for a in actions:
        try:
            text = env.format_move(int(a)) if env is not None else None
        except Exception:  # noqa: BLE001 - any failure falls back to the id
            text = None
        out.append(text if isinstance(text, str) and text.strip() else f"#{int(a)}")
    return out
