"""The arena: N batched games between two players, with confidence intervals.

    python -m azjax.arena alphazero:runs/connect_four mcts:1000 --games 100
    python -m azjax.arena random solver --game tictactoe --games 1000 --openings 2

Seats are swapped for half the games, and the two halves play the same openings
(`--openings K` random plies first, so deterministic players do not replay one game).
`evaluate` is also `azjax.evaluate`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable

import chex
import jax
import numpy as np

from azjax import match
from azjax.players import Player
from azjax.progress import Progress
from azjax.ratings import normal_quantile, score_to_elo
from envs import Env


def wilson_interval(score: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a share `score` observed over `n` games."""
    if n <= 0:
        return 0.0, 1.0
    z = normal_quantile(level)
    denom = 1.0 + z * z / n
    centre = (score + z * z / (2 * n)) / denom
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """The games of A against B: `results` [N] for A (+1/0/-1), `a_seat` [N] A's player id."""

    name_a: str
    name_b: str
    results: np.ndarray
    a_seat: np.ndarray

    @property
    def num_games(self) -> int:
        return len(self.results)

    @property
    def wins(self) -> int:
        return int((self.results > 0).sum())

    @property
    def draws(self) -> int:
        return int((self.results == 0).sum())

    @property
    def losses(self) -> int:
        return int((self.results < 0).sum())

    @property
    def score(self) -> float:
        """A's score share: (wins + draws / 2) / games."""
        return (self.wins + 0.5 * self.draws) / max(self.num_games, 1)

    def score_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Wilson interval of the score share (draws as half a point)."""
        return wilson_interval(self.score, self.num_games, level)

    @property
    def elo_diff(self) -> float:
        """Elo difference A - B implied by the score (clipped at +-800)."""
        return score_to_elo(self.score)

    def seat(self, player_id: int) -> "MatchResult":
        """The games where A was player `player_id` (0 moves first in every game here)."""
        keep = self.a_seat == player_id
        return dataclasses.replace(self, results=self.results[keep], a_seat=self.a_seat[keep])

    def as_dict(self) -> dict:
        low, high = self.score_interval()
        out = {"a": self.name_a, "b": self.name_b, "games": self.num_games, "wins": self.wins,
               "draws": self.draws, "losses": self.losses, "score": self.score,
               "score_low": low, "score_high": high, "elo_diff": self.elo_diff}
        for seat in (0, 1):
            part = self.seat(seat)
            out[f"as_player{seat}"] = {"games": part.num_games, "wins": part.wins,
                                       "draws": part.draws, "losses": part.losses,
                                       "score": part.score}
        return out

    def summary(self) -> str:
        """A few lines: W/D/L, score with its 95% interval, Elo difference, per seat."""
        low, high = self.score_interval()
        lines = [
            f"{self.name_a} vs {self.name_b}: {self.num_games} games",
            f"  {self.name_a}: {self.wins} wins, {self.draws} draws, {self.losses} losses; "
            f"score {100 * self.score:.1f}% (95% CI {100 * low:.1f}-{100 * high:.1f}%), "
            f"Elo difference {self.elo_diff + 0.0:+.0f}",
        ]
        for seat, label in ((0, "as player 0 (moves first)"), (1, "as player 1")):
            part = self.seat(seat)
            if part.num_games:
                lines.append(f"  {label}: {part.wins} W / {part.draws} D / {part.losses} L, "
                             f"score {100 * part.score:.1f}%")
        return "\n".join(lines)


def evaluate(env: Env, player_a: Player, player_b: Player, key: chex.PRNGKey,
             num_games: int = 100, opening_plies: int = 0, max_plies: int = 10_000,
             progress: Callable[[int], None] | None = None) -> MatchResult:
    """Plays `num_games` games of A against B, seats swapped for half of them.

    Both players jittable: one compiled on-device match. Otherwise a host loop over
    plies (the host player sees only the games where it is to move), which reports
    `progress(finished_games)` after every ply.
    """
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    if opening_plies < 0:
        raise ValueError(f"opening_plies must be >= 0, got {opening_plies}")
    if player_a.jittable and player_b.jittable:
        play = jax.jit(
            lambda key: match.play_match(env, player_a.act, player_b.act, key, num_games,
                                         max_plies, opening_plies)
        )
        results = np.asarray(jax.device_get(play(key)))
    else:
        acts = [jax.jit(p.act) if p.jittable else p.act for p in (player_a, player_b)]
        results = match.play_match_host(
            env, *acts, key, num_games, max_plies, opening_plies,
            traced=(player_a.jittable, player_b.jittable), progress=progress,
        )
    return MatchResult(player_a.name, player_b.name, np.rint(results).astype(np.int8),
                       np.asarray(match.seats(num_games)))


def main(argv: list[str] | None = None) -> int:
    """`python -m azjax.arena A B [--game G] [--games N] [--openings K] [--seed S]`."""
    from azjax import player_specs

    parser = argparse.ArgumentParser(
        prog="python -m azjax.arena",
        description="Play two players against each other and report W/D/L with a 95% CI.",
        epilog=player_specs.__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("player_a", help="player spec, e.g. alphazero:runs/tictactoe")
    parser.add_argument("player_b", help="player spec, e.g. mcts:1000")
    parser.add_argument("--game", help="game name (default: the game of a run named by A or B)")
    parser.add_argument("--game-option", action="append", default=[], metavar="KEY=VALUE",
                        help="game option, e.g. size=9 (repeatable)")
    parser.add_argument("--games", type=int, default=100, help="games to play (default 100)")
    parser.add_argument("--openings", type=int, default=0, metavar="K",
                        help="random plies before the players take over (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    args = parser.parse_args(argv)
    try:
        env = _arena_env(args, player_specs)
        player_a = player_specs.make_player(args.player_a, env)
        player_b = player_specs.make_player(args.player_b, env)
        start = time.perf_counter()
        if player_a.jittable and player_b.jittable and args.games >= 1:
            print(f"playing {args.games} games as one compiled match...", file=sys.stderr,
                  flush=True)
        status = Progress(args.games, "games", "arena", every=5.0,
                          write=lambda line: print(line, file=sys.stderr, flush=True))
        result = evaluate(env, player_a, player_b, jax.random.key(args.seed), args.games,
                          args.openings, progress=status.update)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{env.name}: {result.summary()}")
    print(f"  ({time.perf_counter() - start:.1f}s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"game": env.name, **result.as_dict()}, f, indent=2)
    return 0


def _arena_env(args, player_specs) -> Env:
    import envs

    options = {}
    for item in args.game_option:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--game-option expects KEY=VALUE, got {item!r}")
        options[key] = float(value) if "." in value else int(value)
    if args.game:
        return envs.make(args.game, **options)
    env = player_specs.game_of([args.player_a, args.player_b])
    if env is None:
        raise ValueError("neither player names a run directory; say which game with --game")
    return env


if __name__ == "__main__":
    sys.exit(main())
