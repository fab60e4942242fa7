"""Elo ratings from match results: Bradley-Terry maximum likelihood with confidence intervals.

Model: P(i beats j) = 1 / (1 + 10**((R_j - R_i) / 400)). A draw counts as half a win for each
side, so a result row `(i, j, score_i, n)` contributes `score_i * log p_ij
+ (n - score_i) * log(1 - p_ij)` to the log-likelihood. The ratings maximise it (Newton's method
with a backtracking line search), one anchor player held fixed at `anchor_elo`; standard errors come
from the inverse observed Fisher information at the optimum.

Perfect records (someone who never dropped a point, or a group that never lost to the others) send
the plain maximum-likelihood ratings to infinity. `prior_games` regularises: that many virtual
draws are added to every pair of players who played each other. With no prior, a fit whose MLE
does not exist falls back to `FALLBACK_PRIOR_GAMES` virtual draws per pair (recorded in
`Ratings.prior_games`), so `fit_elo` always returns finite ratings.

Pure numpy (plus the stdlib normal quantile).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from azjax.evaluation.stats import normal_quantile

ELO_SCALE = 400.0
# Natural-log slope: p = sigmoid(_C * (R_i - R_j)).
_C = math.log(10.0) / ELO_SCALE
# Virtual draws per played pair used when the unregularised MLE does not exist.
FALLBACK_PRIOR_GAMES = 0.5
# Elo difference reported by `score_to_elo` for a score share of exactly 0 or 1 (and the clip).
MAX_ELO_DIFF = 800.0

_MAX_ITERS = 200
_TOL = 1e-9  # Elo: stop when the Newton step is smaller than this.


@dataclasses.dataclass(frozen=True)
class Ratings:
    """Fitted Elo ratings.

    `elo[a] == anchor_elo` and `stderr[a] == 0` for the anchor `a`; `games` counts real games
    (not virtual prior draws); `prior_games` is the number of virtual draws per played pair that
    was actually used (the fallback value when the unregularised fit diverged).
    """

    names: list[str]
    elo: np.ndarray
    stderr: np.ndarray
    games: np.ndarray
    anchor: int = 0
    prior_games: float = 0.0

    def interval(self, level: float = 0.95) -> np.ndarray:
        """[P, 2] lower/upper bounds of the two-sided normal `level` confidence intervals."""
        z = normal_quantile(level)
        return np.stack([self.elo - z * self.stderr, self.elo + z * self.stderr], axis=1)

    def order(self) -> np.ndarray:
        """Player indices sorted by Elo, best first (ties keep input order)."""
        return np.argsort(-self.elo, kind="stable")

    def table(self) -> str:
        """A markdown table sorted by Elo: rank, name, Elo, 95% CI, games."""
        bounds = self.interval(0.95)
        lines = ["| rank | name | Elo | 95% CI | games |", "|---:|---|---:|---|---:|"]
        for rank, p in enumerate(self.order(), start=1):
            low, high = bounds[p]
            ci = "anchor" if p == self.anchor else f"[{low:.0f}, {high:.0f}]"
            lines.append(
                f"| {rank} | {self.names[p]} | {self.elo[p]:.0f} | {ci} | {int(self.games[p])} |")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, dict]:
        """name -> {elo, low, high, stderr, games} (95% interval), as plain Python numbers."""
        bounds = self.interval(0.95)
        return {
            name: {
                "elo": float(self.elo[p]),
                "low": float(bounds[p, 0]),
                "high": float(bounds[p, 1]),
                "stderr": float(self.stderr[p]),
                "games": int(self.games[p]),
            }
            for p, name in enumerate(self.names)
        }


def expected_score(elo_diff: float) -> float:
    """Expected score share of a player rated `elo_diff` above the opponent."""
    return float(1.0 / (1.0 + 10.0 ** (-elo_diff / ELO_SCALE)))


def score_to_elo(score: float) -> float:
    """Elo difference implied by a score share, `-400 * log10(1/score - 1)`.

    The result is clipped to [-800, 800] (`MAX_ELO_DIFF`, a score share of about 99%); a score of
    exactly 0 or 1, whose difference is infinite, gives -800 or +800.
    """
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score share must be in [0, 1], got {score}")
    if score == 0.0:
        return -MAX_ELO_DIFF
    if score == 1.0:
        return MAX_ELO_DIFF
    diff = -ELO_SCALE * math.log10(1.0 / score - 1.0)
    return float(np.clip(diff, -MAX_ELO_DIFF, MAX_ELO_DIFF))


def fit_elo(names: Sequence[str], results: Sequence[tuple[int, int, float, int]],
            anchor: int | str = 0, anchor_elo: float = 0.0,
            prior_games: float = 0.0) -> Ratings:
    """Maximum-likelihood Elo ratings from `(i, j, score_i, n)` result rows.

    Rows for the same pair (in either order) are aggregated. The anchor (index or name) is fixed at
    `anchor_elo`. `prior_games` virtual draws are added to each pair that played; with
    `prior_games == 0` and a perfect record somewhere, `FALLBACK_PRIOR_GAMES` is used instead.
    Raises ValueError on malformed input and on players not connected to the anchor by games.
    """
    names = [str(n) for n in names]
    _check_names(names)
    a = _anchor_index(names, anchor)
    if prior_games < 0 or not math.isfinite(prior_games):
        raise ValueError(f"prior_games must be finite and >= 0, got {prior_games}")
    points, games = _aggregate(len(names), results)
    _check_connected(names, games, a)
    prior = prior_games
    if prior == 0.0 and not _mle_exists(points):
        prior = FALLBACK_PRIOR_GAMES
    try:
        elo, cov = _fit(points, games, a, prior)
    except (np.linalg.LinAlgError, FloatingPointError):
        if prior > 0.0:
            raise
        prior = FALLBACK_PRIOR_GAMES
        elo, cov = _fit(points, games, a, prior)
    stderr = np.zeros(len(names))
    free = _free(len(names), a)
    stderr[free] = np.sqrt(np.diag(cov))
    return Ratings(names=names, elo=elo + anchor_elo, stderr=stderr,
                   games=games.sum(axis=1).astype(np.int64), anchor=a, prior_games=prior)


def _check_names(names: list[str]) -> None:
    if len(names) < 2:
        raise ValueError(f"need at least 2 players, got {len(names)}")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"duplicate player names: {dupes}")


def _anchor_index(names: list[str], anchor: int | str) -> int:
    if isinstance(anchor, str):
        if anchor not in names:
            raise ValueError(f"unknown anchor player {anchor!r}; players are {names}")
        return names.index(anchor)
    if not 0 <= anchor < len(names):
        raise ValueError(f"anchor index {anchor} out of range for {len(names)} players")
    return int(anchor)


def _aggregate(num_players: int, results) -> tuple[np.ndarray, np.ndarray]:
    """[P, P] points[i, j] scored by i against j, and [P, P] symmetric game counts."""
    points = np.zeros((num_players, num_players))
    games = np.zeros((num_players, num_players))
    for row in results:
        i, j, score, n = row
        if not all(float(k).is_integer() for k in (i, j)):
            raise ValueError(f"player indices must be integers: result {row}")
        i, j = int(i), int(j)
        for k in (i, j):
            if not 0 <= k < num_players:
                raise ValueError(f"player index {k} out of range in result {row}")
        if i == j:
            raise ValueError(f"a player cannot play itself: result {row}")
        if not n > 0:
            raise ValueError(f"number of games must be > 0: result {row}")
        if not 0 <= score <= n:
            raise ValueError(f"score must be in [0, n]: result {row}")
        points[i, j] += score
        points[j, i] += n - score
        games[i, j] += n
        games[j, i] += n
    return points, games


def _reachable(adjacency: np.ndarray, start: int) -> np.ndarray:
    """Boolean mask of the nodes reachable from `start` along edges adjacency[u, v] > 0."""
    seen = np.zeros(len(adjacency), dtype=bool)
    seen[start] = True
    stack = [start]
    while stack:
        u = stack.pop()
        for v in np.flatnonzero((adjacency[u] > 0) & ~seen):
            seen[v] = True
            stack.append(v)
    return seen


def _check_connected(names: list[str], games: np.ndarray, anchor: int) -> None:
    reached = _reachable(games, anchor)
    if not reached.all():
        missing = [names[p] for p in np.flatnonzero(~reached)]
        raise ValueError(
            f"players {missing} have no chain of games to the anchor {names[anchor]!r}; "
            "their ratings are undetermined")


def _mle_exists(points: np.ndarray) -> bool:
    """Whether finite MLE ratings exist (given connected games): the graph with an edge i -> j
    whenever i took points from j must be strongly connected (Zermelo / Ford)."""
    return bool(_reachable(points, 0).all() and _reachable(points.T, 0).all())


def _free(num_players: int, anchor: int) -> np.ndarray:
    return np.array([p for p in range(num_players) if p != anchor], dtype=np.int64)


def _log_likelihood(elo: np.ndarray, points: np.ndarray) -> float:
    """sum_ij points[i, j] * log p_ij over ordered pairs (each pair's win and loss terms)."""
    x = _C * (elo[:, None] - elo[None, :])
    return float(-(points * np.logaddexp(0.0, -x)).sum())


def _grad_hess(elo: np.ndarray, points: np.ndarray, games: np.ndarray):
    """Gradient [P] and Hessian [P, P] of the log-likelihood in Elo units."""
    x = _C * (elo[:, None] - elo[None, :])
    p = 1.0 / (1.0 + np.exp(-x))
    grad = _C * (points - games * p).sum(axis=1)
    w = _C**2 * games * p * (1.0 - p)
    hess = w - np.diag(w.sum(axis=1))
    return grad, hess


def _fit(points: np.ndarray, games: np.ndarray, anchor: int, prior: float):
    """Newton's method with backtracking on the free ratings; returns (elo, covariance)."""
    played = games > 0
    points = points + 0.5 * prior * played
    games = games + prior * played
    num_players = len(games)
    free = _free(num_players, anchor)
    elo = np.zeros(num_players)
    loglik = _log_likelihood(elo, points)
    for _ in range(_MAX_ITERS):
        grad, hess = _grad_hess(elo, points, games)
        g, h = grad[free], hess[np.ix_(free, free)]
        step = np.linalg.solve(-h, g)  # ascent direction: -h is positive definite
        if not np.all(np.isfinite(step)):
            raise FloatingPointError("non-finite Newton step")
        t = 1.0
        while True:
            trial = elo.copy()
            trial[free] += t * step
            trial_ll = _log_likelihood(trial, points)
            if trial_ll >= loglik + 1e-4 * t * float(g @ step) or t < 1e-12:
                break
            t *= 0.5
        elo, loglik = trial, trial_ll
        if np.max(np.abs(t * step)) < _TOL:
            break
    else:
        raise FloatingPointError("Newton's method did not converge")
    _, hess = _grad_hess(elo, points, games)
    cov = np.linalg.inv(-hess[np.ix_(free, free)])
    if not np.all(np.isfinite(cov)) or np.any(np.diag(cov) < 0):
        raise np.linalg.LinAlgError("singular Fisher information")
    return elo, cov
