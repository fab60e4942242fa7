"""A ratings league: a round robin over a run's checkpoints and baseline players, rated by Elo.

    python -m azjax.league --run-dir runs/tictactoe --baselines random,mcts:100 --games 40

Every pair of players plays `games_per_pair` games in the arena (seats swapped for half of
them, paired random openings); the results are fitted to Bradley-Terry Elo ratings anchored
at one player (`random` at 0 by default). The run directory receives `league.csv`,
`league.md`, `league.json` and `league.png` (Elo against training wall time). For Go,
`--sgf DIR` also saves every game as DIR/<a>-vs-<b>/game-0001.sgf, ... (`azjax.go.sgf`).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import chex
import jax
import numpy as np

from azjax.core.memory import check_match_fits
from azjax.core.players import Player
from azjax.evaluation.match import MatchResult, play_match
from azjax.evaluation.player_specs import make_player, search_simulations
from azjax.evaluation.ratings import Ratings, fit_elo
from azjax.go import sgf
from azjax.run.agents.agent import Agent
from azjax.run.config import check_seed
from azjax.run.directory.layout import LEAGUE_FILES, RunDirError
from azjax.run.directory.run_dir import RunDir
from azjax.run.files import check_output_path, write_atomic
from azjax.run.grammar.specs import split_specs
from azjax.run.process.progress import Progress as ProgressLine
from envs import Env

FILES = LEAGUE_FILES  # a run's league goes into its run directory: the names are its layout's
CSV_COLUMNS = ("name", "kind", "iteration", "wall_time_s", "games", "elo", "elo_low",
               "elo_high", "stderr", "games_played")
PLAYER_KINDS = ("alphazero", "network")
DEFAULT_OPENING_PLIES = 2

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Entrant:
    """A league player: `kind` is 'checkpoint' (with its training iteration, self-play games
    and wall time in seconds from metrics.jsonl, None where unknown) or 'baseline'."""

    name: str
    kind: str
    iteration: int | None = None
    games: int | None = None
    wall_time_s: float | None = None


@dataclasses.dataclass(frozen=True)
class League:
    """The entrants, every pair's `MatchResult` and the fitted ratings (same order)."""

    game: str
    entrants: list[Entrant]
    matches: list[MatchResult]
    ratings: Ratings

    @property
    def names(self) -> list[str]:
        """The entrants' names, in order."""
        return [e.name for e in self.entrants]

    def score_matrix(self) -> np.ndarray:
        """[P, P] score share of row player against column player (NaN where none played)."""
        index = {name: p for p, name in enumerate(self.names)}
        points = np.zeros((len(index), len(index)))
        games = np.zeros_like(points)
        for m in self.matches:
            i, j = index[m.name_a], index[m.name_b]
            points[i, j] += m.points
            points[j, i] += m.num_games - m.points
            games[i, j] += m.num_games
            games[j, i] += m.num_games
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(games > 0, points / games, np.nan)

    def rows(self) -> list[dict]:
        """One dict per entrant with the `CSV_COLUMNS` (None for unknown values)."""
        ratings = self.ratings.as_dict()
        return [
            {"name": e.name, "kind": e.kind, "iteration": e.iteration,
             "wall_time_s": e.wall_time_s, "games": e.games,
             "elo": ratings[e.name]["elo"], "elo_low": ratings[e.name]["low"],
             "elo_high": ratings[e.name]["high"], "stderr": ratings[e.name]["stderr"],
             "games_played": ratings[e.name]["games"]}
            for e in self.entrants
        ]

    def markdown(self) -> str:
        """The ratings table and the pairwise score matrix (rows and columns by Elo)."""
        order = self.ratings.order()
        names = [self.names[p] for p in order]
        scores = self.score_matrix()
        lines = [f"# League ({self.game})", "", self.ratings.table(), "",
                 "Score of the row player against the column player:", "",
                 "| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for p in order:
            cells = ["-" if np.isnan(scores[p, q]) else f"{100 * scores[p, q]:.0f}%"
                     for q in order]
            lines.append(f"| {self.names[p]} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict:
        """Game, entrants, ratings (`Ratings.as_dict`) and every pair (`MatchResult.as_dict`)."""
        return {"game": self.game,
                "anchor": self.names[self.ratings.anchor],
                "prior_games": self.ratings.prior_games,
                "players": [dataclasses.asdict(e) for e in self.entrants],
                "ratings": self.ratings.as_dict(),
                "matches": [m.as_dict() for m in self.matches]}

    def write(self, out_dir: str | Path) -> list[Path]:
        """Writes league.csv, league.md, league.json and league.png into `out_dir`, each
        whole or not at all (`azjax.run.files.write_atomic`)."""
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = [out_dir / f for f in FILES]
        write_atomic(paths[0], csv_text(self.rows()))
        write_atomic(paths[1], self.markdown())
        write_atomic(paths[2], json.dumps(self.as_dict(), indent=2) + "\n")
        write_atomic(paths[3], plot_league(self))
        return paths


def check_outputs(out_dir: str | Path) -> list[Path]:
    """The league files' paths in `out_dir`, checked to be writable (ValueError
    otherwise): called before any game is played, so that no table is lost."""
    return [check_output_path(Path(out_dir) / name, "league output") for name in FILES]


def csv_text(rows: Sequence[dict]) -> str:
    """`rows` as CSV with the `CSV_COLUMNS` header (None as an empty cell)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row[k] is None else row[k] for k in CSV_COLUMNS})
    return text.getvalue()


def write_csv(rows: Sequence[dict], path: Path) -> None:
    """`rows` as CSV with the `CSV_COLUMNS` header, written atomically to `path`."""
    write_atomic(path, csv_text(rows))


def plot_league(league: League, path: Path | None = None) -> bytes:
    """Checkpoint Elo with 95% error bars against training wall time (minutes); baselines
    as labelled horizontal dashed lines. Returns the PNG (also written to `path` if
    given)."""
    # Imported here, not with the module: `import azjax` stays free of matplotlib.
    import matplotlib
    from matplotlib.figure import Figure

    bounds = league.ratings.interval(0.95)
    elo = league.ratings.elo
    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    points = [(e.wall_time_s / 60.0, p) for p, e in enumerate(league.entrants)
              if e.kind == "checkpoint" and e.wall_time_s is not None]
    if points:
        x = np.array([t for t, _ in points])
        idx = [p for _, p in points]
        err = np.abs(bounds[idx] - elo[idx, None]).T
        ax.errorbar(x, elo[idx], yerr=err, fmt="o-", capsize=3, color="tab:blue",
                    label="checkpoints")
    colors = itertools.cycle(matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][1:])
    for p, e in enumerate(league.entrants):
        if e.kind == "baseline":
            color = next(colors)
            ax.axhline(elo[p], linestyle="--", color=color, alpha=0.8)
            ax.annotate(f"{e.name} ({elo[p]:.0f})", xy=(0.01, elo[p]),
                        xycoords=("axes fraction", "data"), xytext=(0, 3),
                        textcoords="offset points", fontsize=8, color=color)
    ax.set_xlabel("training wall time (minutes)")
    ax.set_ylabel(f"Elo ({league.names[league.ratings.anchor]} = "
                  f"{elo[league.ratings.anchor]:.0f})")
    ax.set_title(f"League ratings, {league.game} (95% intervals)")
    ax.grid(alpha=0.3)
    if points:
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=90)
    if path is not None:
        write_atomic(path, png.getvalue())
    return png.getvalue()


def pair_dirs(names: Sequence[str]) -> list[str]:
    """The SGF folder of every pair of `names` in `itertools.combinations` order:
    `<a>-vs-<b>` with file-safe names (`azjax.go.sgf.safe_name`), numbered `-2`, `-3`, ...
    where two pairs would get the same folder."""
    dirs, seen = [], set()
    for a, b in itertools.combinations(names, 2):
        base = f"{sgf.safe_name(a)}-vs-{sgf.safe_name(b)}"
        name, k = base, 1
        while name.lower() in seen:  # also apart on case-insensitive file systems
            k += 1
            name = f"{base}-{k}"
        seen.add(name.lower())
        dirs.append(name)
    return dirs


def round_robin(env: Env, players: Sequence[Player], key: chex.PRNGKey, games_per_pair: int,
                opening_plies: int = 0, progress: Progress | None = None,
                sgf_dir: str | Path | None = None) -> list[MatchResult]:
    """Every unordered pair of `players` plays `games_per_pair` games (`play_match`,
    one fresh subkey per pair); returns the results in `itertools.combinations` order.
    With `sgf_dir` (Go only), each pair's games are recorded and written as soon as the
    pair has played, into `sgf_dir/<pair_dirs>/game-0001.sgf`, ... (the results are the
    same)."""
    names = [p.name for p in players]
    if len(set(names)) != len(names):
        raise ValueError(f"player names must be unique, got {names}")
    if len(players) < 2:
        raise ValueError(f"a round robin needs at least 2 players, got {len(players)}")
    if games_per_pair < 1:
        raise ValueError(f"games_per_pair must be >= 1, got {games_per_pair}")
    if sgf_dir is not None:
        sgf.check_go(env, "sgf_dir")
    pairs = list(itertools.combinations(players, 2))
    folders = pair_dirs(names)
    keys = jax.random.split(key, len(pairs))
    results = []
    status = ProgressLine(len(pairs), "pairs", "league", write=progress)
    date = datetime.date.today().isoformat()
    for k, ((a, b), pair_key) in enumerate(zip(pairs, keys), start=1):
        result = play_match(env, a, b, pair_key, games_per_pair, opening_plies,
                            record=sgf_dir is not None)
        if sgf_dir is not None:
            sgf.write_match_sgfs(env, result, Path(sgf_dir) / folders[k - 1], date=date,
                                 event="league")
            # written: keep the league small
            result = dataclasses.replace(result, moves=None, final_states=None)
        results.append(result)
        status.update(k, f"{a.name} vs {b.name}: {result.wins} W / {result.draws} D / "
                         f"{result.losses} L, score {100 * result.score:.0f}%")
    return results


def fit_league(names: Sequence[str], matches: Sequence[MatchResult], anchor: str) -> Ratings:
    """Elo ratings of `names` from `matches` (score = wins + draws / 2), `anchor` at 0."""
    names = list(names)
    if anchor not in names:
        raise ValueError(f"the anchor {anchor!r} is not among the players {names}")
    index = {name: p for p, name in enumerate(names)}
    rows = []
    for m in matches:
        for name in (m.name_a, m.name_b):
            if name not in index:
                raise ValueError(f"match player {name!r} is not among the players {names}")
        rows.append((index[m.name_a], index[m.name_b], m.points, m.num_games))
    return fit_elo(names, rows, anchor=anchor)


def league_steps(run_dir: RunDir, steps: Sequence[int] | None = None) -> list[int]:
    """The run's intact checkpoint steps (all, or `steps` after checking that each
    exists and is intact)."""
    run_dir.load_config()  # RunDirError for a missing directory or a non-run
    if not run_dir.checkpoints.folder.is_dir():
        raise RunDirError(f"{str(run_dir)!r} holds no checkpoint yet")
    damaged = run_dir.checkpoints.damaged(params_only=True)
    available = sorted(s for s in run_dir.checkpoints.steps() if s not in damaged)
    if not available:
        raise RunDirError(f"{str(run_dir)!r} holds no intact checkpoint"
                          if damaged else f"{str(run_dir)!r} holds no checkpoint yet")
    if steps is None:
        return available
    broken = [f"{s} ({damaged[s]})" for s in steps if s in damaged]
    if broken:
        raise RunDirError(f"damaged checkpoint(s) in {str(run_dir)!r}: "
                          f"{'; '.join(broken)}; intact steps: {available}")
    missing = [s for s in steps if s not in available]
    if missing:
        raise RunDirError(
            f"no checkpoint at step(s) {missing} in {str(run_dir)!r}; available steps: {available}"
        )
    return sorted({int(s) for s in steps})


def checkpoint_player(run_dir: RunDir, step: int, kind: str = "alphazero",
                      simulations: int | None = None) -> Player:
    """The checkpoint at `step` as a player named `it{step}` (search budget overridden by
    `simulations` when given)."""
    agent = Agent.load(run_dir, step=step)
    if simulations is not None:
        agent = agent.with_search(num_simulations=simulations)
    return agent.player(kind, f"it{step}")


def _checkpoint_entrant(step: int, metrics: Sequence[dict]) -> Entrant:
    record = next((r for r in metrics if r.get("iteration") == step), {})
    games, wall = record.get("games"), record.get("wall_time")
    return Entrant(f"it{step}", "checkpoint", step, None if games is None else int(games),
                   None if wall is None else float(wall))


def _check_options(kind: str, simulations: int | None, games_per_pair: int,
                   opening_plies: int) -> None:
    if kind not in PLAYER_KINDS:
        raise ValueError(f"kind must be one of {PLAYER_KINDS}, got {kind!r}")
    if simulations is not None and kind != "alphazero":
        raise ValueError("simulations applies only to kind 'alphazero' (the network alone "
                         "does no search)")
    if simulations is not None and simulations < 1:
        raise ValueError(f"simulations must be >= 1, got {simulations}")
    if games_per_pair < 1:
        raise ValueError(f"games_per_pair must be >= 1, got {games_per_pair}")
    if opening_plies < 0:
        raise ValueError(f"opening_plies must be >= 0, got {opening_plies}")


def run_league(run_dir: RunDir, baselines: Sequence[str] = ("random",),
               steps: Sequence[int] | None = None, games_per_pair: int = 40,
               simulations: int | None = None, kind: str = "alphazero",
               opening_plies: int = DEFAULT_OPENING_PLIES, anchor: str = "random",
               seed: int = 0, progress: Progress | None = print,
               show: Callable[[League], None] | None = None,
               sgf_dir: str | Path | None = None) -> League:
    """Round robin of a run's checkpoints (players `it{step}`) and `baselines` (player
    specs), Elo anchored at `anchor` = 0; `show(league)` is called (if given) before the
    league files are written into `run_dir`, so a failure to write loses nothing shown.
    With `sgf_dir` (Go only), every game is also saved as SGF under
    `sgf_dir/<a>-vs-<b>/` (see `round_robin`), each pair's as soon as it has played.

    Everything is checked before the first game: RunDirError for a missing run, a run
    without checkpoints or an unknown step; ValueError for bad options, a bad baseline
    spec, an anchor that is not a player, league files or an `sgf_dir` that cannot be
    written (or `sgf_dir` for a game other than Go), or pairs that would not fit in
    memory.
    """
    _check_options(kind, simulations, games_per_pair, opening_plies)
    check_seed(seed, "seed")
    if isinstance(baselines, str):
        baselines = split_specs(baselines)
    baselines = [spec.strip() for spec in baselines]
    env = run_dir.load_config().make_env()
    if sgf_dir is not None:
        sgf_dir = sgf.check_sgf_dir(env, sgf_dir)
    steps = league_steps(run_dir, steps)
    metrics = run_dir.metrics.read()
    entrants = [_checkpoint_entrant(s, metrics) for s in steps]
    entrants += [Entrant(spec, "baseline") for spec in baselines]
    names = [e.name for e in entrants]
    if len(set(names)) != len(names):
        raise ValueError(f"player names must be unique, got {names}")
    if anchor not in names:
        raise ValueError(f"the anchor {anchor!r} is not among the players {names}; "
                         "add it to the baselines or pick another anchor")
    check_outputs(run_dir)
    players = [make_player(spec, env, spec) for spec in baselines]  # bad specs fail before loading
    players = [checkpoint_player(run_dir, s, kind, simulations) for s in steps] + players
    searches = [(p.name, search_simulations(spec, p))
                for spec, p in zip([None] * len(steps) + baselines, players)]
    check_match_fits(env, games_per_pair, sorted(searches, key=lambda s: -s[1])[:2])  # any pair
    say = progress or (lambda _: None)
    say(f"league of {len(players)} players on {env.name}: {', '.join(names)}; "
        f"{games_per_pair} games per pair")
    matches = round_robin(env, players, jax.random.key(seed), games_per_pair, opening_plies,
                          progress, sgf_dir)
    league = League(env.name, entrants, matches, fit_league(names, matches, anchor))
    if show is not None:
        show(league)
    league.write(run_dir)
    return league
