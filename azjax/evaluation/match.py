"""Matches: N batched games between two players, and their one scorer, `MatchResult`.

`play_match` is the only way azjax plays one player against another: the arena, the
training-time evaluations (against random play and chosen baselines), gating, the league
and the baseline table all call it. Player A takes player 0 in the first `num_games // 2`
games and player 1 in the others. Games `i` and `i + ceil(num_games / 2)` are a pair: the
same initial state and the same `opening_plies` uniformly random opening moves, with the
seats swapped (with an odd count, one game has no partner), so deterministic players do
not replay one game and neither side gets the better openings.

Two jittable players play the whole match as one compiled `lax.while_loop` over plies,
compiled once per pair of policies and reused for any parameters; with a host player
(alpha-beta, GNU Go) a host loop drives the games ply by ply and the host player sees only
the games where it is to move (a `PlayerFailed` from it, such as GNU Go's `GnuGoFailed`,
gets the game's number).

`play_match(..., record=True)` also returns the moves of every game (`MatchResult.moves`,
the random opening plies included) and the final states, for game records such as Go's
SGF files (`azjax.go.sgf`); the results are the same with or without it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np

from azjax.core.identity import cache_by_identity
from azjax.core.players import Memory, Player, Policy, compiled
from azjax.core.selfplay import tree_select
from azjax.evaluation.ratings import score_to_elo
from azjax.evaluation.stats import wilson_interval
from azjax.run.grammar.specs import PlayerFailed
from envs import Env, State

MAX_PLIES = 10_000


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """The games of A against B.

    Attributes:
      name_a, name_b: the players' names.
      results: int8 [N] A's result per game: +1 win, 0 draw (or unfinished), -1 loss.
      a_seat: int [N] A's player id per game (0 moves first).
      moves: int32 [N, plies] or None: with `play_match(..., record=True)`, the actions
        played in each game from its initial state, the `opening_plies` random ones
        first; -1 once the game has ended (an illegal move, which forfeits the game, is
        kept as played). `plies` is the number of plies the match ran.
      opening_plies: the random opening plies at the start of every game.
      final_states: with `record`, the games' final states [N] (a pytree of NumPy
        arrays; a game stopped by the match's ply cap is still live), else None.
      margins: float [N] or None: with `record`, in a game decided by points
        (`Env.score_margin`, e.g. Go's area with komi), A's points minus B's in each game
        (a game stopped by the match's ply cap is counted as its board stands).
    """

    name_a: str
    name_b: str
    results: np.ndarray
    a_seat: np.ndarray
    moves: np.ndarray | None = None
    opening_plies: int = 0
    final_states: State | None = None
    margins: np.ndarray | None = None

    @classmethod
    def from_results(cls, results, name_a: str = "A", name_b: str = "B") -> "MatchResult":
        """A result from A's per-game results [N], seats as `play_match` assigns them."""
        results = np.rint(np.asarray(jax.device_get(results))).astype(np.int8)
        return cls(name_a, name_b, results, seats(len(results)))

    @property
    def num_games(self) -> int:
        """N, the games played."""
        return len(self.results)

    @property
    def wins(self) -> int:
        """Games A won."""
        return int((self.results > 0).sum())

    @property
    def draws(self) -> int:
        """Games drawn (or unfinished)."""
        return int((self.results == 0).sum())

    @property
    def losses(self) -> int:
        """Games A lost."""
        return int((self.results < 0).sum())

    @property
    def points(self) -> float:
        """A's points: wins + draws / 2."""
        return self.wins + 0.5 * self.draws

    @property
    def score(self) -> float:
        """A's score share: points / games."""
        return self.points / max(self.num_games, 1)

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
        moves, final, margins = (None if x is None else jax.tree.map(lambda y: y[keep], x)
                                 for x in (self.moves, self.final_states, self.margins))
        return dataclasses.replace(self, results=self.results[keep], a_seat=self.a_seat[keep],
                                   moves=moves, final_states=final, margins=margins)

    @property
    def mean_margin(self) -> float | None:
        """A's mean points margin (None without `margins`)."""
        empty = self.margins is None or not len(self.margins)
        return None if empty else float(np.mean(self.margins))

    def as_dict(self) -> dict:
        """Counts, score with its 95% interval, Elo difference, the mean points margin
        (where the match has margins), and the split by seat."""
        low, high = self.score_interval()
        out = {"a": self.name_a, "b": self.name_b, "games": self.num_games, "wins": self.wins,
               "draws": self.draws, "losses": self.losses, "score": self.score,
               "score_low": low, "score_high": high, "elo_diff": self.elo_diff}
        if self.margins is not None:
            out["margin"] = self.mean_margin
        for seat in (0, 1):
            part = self.seat(seat)
            out[f"as_player{seat}"] = {"games": part.num_games, "wins": part.wins,
                                       "draws": part.draws, "losses": part.losses,
                                       "score": part.score}
            if part.margins is not None:
                out[f"as_player{seat}"]["margin"] = part.mean_margin
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
                margin = ("" if part.mean_margin is None
                          else f", mean margin {part.mean_margin:+.1f} points")
                lines.append(f"  {label}: {part.wins} W / {part.draws} D / {part.losses} L, "
                             f"score {100 * part.score:.1f}%{margin}")
        if self.mean_margin is not None:
            lines.insert(2, f"  mean margin of {self.name_a}: {self.mean_margin:+.1f} points")
        return "\n".join(lines)


def seats(num_games: int) -> np.ndarray:
    """Player id of A in each game [num_games]: 0 in the first half, 1 in the rest."""
    return np.where(np.arange(num_games) < num_games // 2, 0, 1).astype(np.int32)


def opening_states(env: Env, key: chex.PRNGKey, num_games: int, opening_plies: int = 0,
                   record: bool = False) -> tuple[State, chex.Array] | tuple[
                       State, chex.Array, chex.Array]:
    """Start states [num_games] after `opening_plies` uniformly random moves, and the
    rewards [num_games, 2] paid during the opening (non-zero only if it ended a game);
    with `record`, also the opening's actions int32 [num_games, opening_plies] (-1 once
    a game has ended). The states and rewards do not depend on `record`.

    Game i plays the same opening as game `i % ceil(num_games / 2)`, so the two halves
    (which swap seats) see the same openings. Traceable; the key is consumed.
    """
    chex.assert_scalar_positive(num_games)
    distinct = num_games - num_games // 2
    pair = jnp.arange(num_games) % distinct
    init_key, move_key = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(init_key, distinct)[pair])

    def one_ply(carry, ply_key):
        states, rewards = carry
        noise = jax.random.uniform(ply_key, (distinct, env.num_actions))[pair]
        actions = jnp.argmax(jnp.where(states.legal_action_mask, noise, -1.0), axis=-1)
        actions = actions.astype(jnp.int32)
        played = jnp.where(states.terminated, -1, actions)
        states = jax.vmap(env.step)(states, actions)
        return (states, rewards + states.rewards), played

    rewards = jnp.zeros((num_games, 2), jnp.float32)
    moves = jnp.zeros((num_games, 0), jnp.int32)
    if opening_plies > 0:
        keys = jax.random.split(move_key, opening_plies)
        (states, rewards), played = jax.lax.scan(one_ply, (states, rewards), keys)
        moves = played.T
    return (states, rewards, moves) if record else (states, rewards)


def _for_a(rewards: chex.Array, a_seat: chex.Array) -> chex.Array:
    return jnp.take_along_axis(rewards, a_seat[:, None], axis=1)[:, 0]


def record_plies(env: Env, max_plies: int) -> int:
    """The plies after the opening that a recorded compiled match keeps per game: the
    match's `max_plies`, or the game's own `env.max_plies` if that is smaller (no game
    lasts longer; `play_match` refuses to record a game that does)."""
    return max_plies if env.max_plies is None else max(1, min(max_plies, int(env.max_plies)))


RECORD_BYTES_LIMIT = 2**30


def _check_record_buffer(env: Env, num_games: int, opening_plies: int, max_plies: int
                         ) -> None:
    """ValueError when the moves of a recorded compiled match would take more than
    `RECORD_BYTES_LIMIT` (a game without `max_plies` and a huge `max_plies` argument)."""
    size = 4 * num_games * (opening_plies + record_plies(env, max_plies))
    if size > RECORD_BYTES_LIMIT:
        raise ValueError(
            f"recording {num_games:,} games of up to {record_plies(env, max_plies):,} plies "
            f"would take {size / 2**30:.1f} GiB; pass a smaller max_plies")


def _first_memory(policy: Policy | Memory, params, states: State):
    """A player's memory before the games' first moves (() for a player without one)."""
    return policy.init(params, states) if isinstance(policy, Memory) else ()


def _moves(policy: Policy | Memory, params, states: State, key: chex.PRNGKey, memory,
           turn: chex.Array):
    """A player's actions [B] and its memory, changed only in the games where it moved
    (`turn` [B]): each game keeps what the player's own last move there left."""
    if not isinstance(policy, Memory):
        return policy(params, states, key), memory
    actions, changed = policy.policy(params, states, key, memory)
    return actions, tree_select(turn, changed, memory)


def _device_results(env: Env, policy_a: Policy | Memory, policy_b: Policy | Memory,
                    num_games: int, opening_plies: int, max_plies: int, record: bool,
                    params_a, params_b, key: chex.PRNGKey):
    """A's results [num_games] of a match played in one `lax.while_loop` (traceable).
    A player given as its `Memory` carries it from move to move.

    With `record`: (results, moves int32 [num_games, opening_plies + B], plies, final
    states), B = `record_plies(env, max_plies)`; the moves of plies past B (a game longer
    than its env's `max_plies`) are dropped, which `plies` > B tells."""
    open_key, key = jax.random.split(key)
    opening = opening_states(env, open_key, num_games, opening_plies, record)
    states, opening_rewards = opening[:2]
    a_seat = jnp.asarray(seats(num_games))
    buffer = record_plies(env, max_plies) if record else 0

    def live(carry):
        states, _, _, ply, _, _ = carry
        return jnp.any(~states.terminated) & (ply < max_plies)

    def one_ply(carry):
        states, result, key, ply, moves, memories = carry
        key, key_a, key_b = jax.random.split(key, 3)
        turn_a = states.current_player == a_seat
        action_a, memory_a = _moves(policy_a, params_a, states, key_a, memories[0], turn_a)
        action_b, memory_b = _moves(policy_b, params_b, states, key_b, memories[1], ~turn_a)
        actions = jnp.where(turn_a, action_a, action_b)
        if record:
            played = jnp.where(states.terminated, -1, actions).astype(jnp.int32)
            moves = moves.at[ply].set(played, mode="drop")
        states = jax.vmap(env.step)(states, actions)
        return (states, result + _for_a(states.rewards, a_seat), key, ply + 1, moves,
                (memory_a, memory_b))

    moves = jnp.full((buffer, num_games), -1, jnp.int32)
    memories = (_first_memory(policy_a, params_a, states),
                _first_memory(policy_b, params_b, states))
    carry = (states, _for_a(opening_rewards, a_seat), key, jnp.int32(0), moves, memories)
    states, result, _, plies, moves, _ = jax.lax.while_loop(live, one_ply, carry)
    if not record:
        return result
    return result, jnp.concatenate([opening[2], moves.T], axis=1), plies, states


@cache_by_identity(maxsize=64)
def _compiled_match(env: Env, policy_a: Policy, policy_b: Policy, num_games: int,
                    opening_plies: int, max_plies: int, record: bool = False):
    return jax.jit(functools.partial(_device_results, env, policy_a, policy_b, num_games,
                                     opening_plies, max_plies, record))


@cache_by_identity(maxsize=16)
def _compiled_rules(env: Env):
    # The game is bound, not a static argument: jit would hash it.
    return (jax.jit(functools.partial(opening_states, env), static_argnums=(1, 2, 3)),
            jax.jit(jax.vmap(env.step)))


def _host_memory(player: Player, states: State):
    """A jittable player's memory before a host-driven match's first move (None without)."""
    if not (player.jittable and player.memory is not None):
        return None
    return compiled(player.memory.init)(player.params, states)


def _host_results(env: Env, players: tuple[Player, Player], key: chex.PRNGKey,
                  num_games: int, opening_plies: int, max_plies: int,
                  progress: Callable[[int], None] | None, record: bool = False):
    """A's results [num_games], one host step per ply. A jittable player is called
    compiled on the whole batch (fixed shapes), a host player only on the sub-batch of
    live games where it is to move; `progress(finished_games)` after every ply. With
    `record`: (results, moves int32 [num_games, opening_plies + plies played], final
    states)."""
    openings, step = _compiled_rules(env)
    open_key, key = jax.random.split(key)
    # The opening's moves come with it either way (one compilation for both).
    opening = openings(open_key, num_games, opening_plies, True)
    states, opening_rewards = opening[:2]
    a_seat = seats(num_games)
    result = np.asarray(_for_a(opening_rewards, jnp.asarray(a_seat)))
    moves = [np.asarray(opening[2])] if record else []
    memories = [_host_memory(player, states) for player in players]
    for _ in range(max_plies):
        terminated = np.asarray(states.terminated)
        if terminated.all():
            break
        mover = np.asarray(states.current_player)
        actions = np.zeros(num_games, np.int32)
        for seat, (seat_is_a, player) in enumerate(((True, players[0]), (False, players[1]))):
            turn = ~terminated & ((mover == a_seat) == seat_is_a)
            if not turn.any():
                continue
            key, policy_key = jax.random.split(key)
            if player.jittable and player.memory is not None:
                chosen, changed = compiled(player.memory.policy)(player.params, states,
                                                                 policy_key, memories[seat])
                memories[seat] = compiled(tree_select)(jnp.asarray(turn), changed,
                                                       memories[seat])
                actions[turn] = np.asarray(chosen)[turn]
            elif player.jittable:
                chosen = compiled(player.policy)(player.params, states, policy_key)
                actions[turn] = np.asarray(chosen)[turn]
            else:
                index = np.flatnonzero(turn)
                sub = jax.tree.map(lambda x: np.asarray(x)[index], states)
                try:
                    actions[index] = np.asarray(player.act(sub, policy_key))
                except PlayerFailed as err:  # say which game of the match
                    raise err.in_game(int(index[err.batch_index]) + 1) from None
        if record:
            moves.append(np.where(terminated, -1, actions).astype(np.int32)[:, None])
        states = step(states, jnp.asarray(actions))
        result = result + np.asarray(_for_a(states.rewards, jnp.asarray(a_seat)))
        if progress is not None:
            progress(int(np.asarray(states.terminated).sum()))
    if record:
        return result, np.concatenate(moves, axis=1), jax.device_get(states)
    return result


def _mover(player: Player) -> Policy | Memory:
    """What a compiled match calls to move a player: its memory where it has one."""
    return player.memory or player.policy


def play_match(env: Env, player_a: Player, player_b: Player, key: chex.PRNGKey,
               num_games: int = 100, opening_plies: int = 0, max_plies: int = MAX_PLIES,
               progress: Callable[[int], None] | None = None,
               record: bool = False) -> MatchResult:
    """Plays `num_games` games of A against B, seats swapped for half of them.

    Args:
      env: the game.
      player_a: the first player (`azjax.core.players.Player`).
      player_b: the second player.
      key: consumed.
      num_games: N >= 1.
      opening_plies: uniformly random plies before the players take over (paired across
        seats).
      max_plies: a game still running after this many plies counts as a draw.
      progress: `progress(finished_games)` after every ply of a host-driven match.
      record: also return every game's moves and final state (`MatchResult.moves`,
        `MatchResult.final_states`) and, in a game decided by points, A's margins
        (`MatchResult.margins`); the results are the same either way. A compiled
        match keeps at most `record_plies(env, max_plies)` plies after the opening per
        game (the game's `max_plies` when it states one).

    Returns:
      A `MatchResult` with A's result in each game (and its moves, with `record`).

    Raises:
      ValueError: for a bad count, or (with `record`) a game that outlasted its env's
        `max_plies` in a compiled match, so that its moves could not all be kept.
      PlayerFailed: (`azjax.run.grammar.specs`) from a host player that could not give a move,
        naming the match's game.
    """
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    if opening_plies < 0:
        raise ValueError(f"opening_plies must be >= 0, got {opening_plies}")
    moves = None
    if player_a.jittable and player_b.jittable:
        if record:
            _check_record_buffer(env, num_games, opening_plies, max_plies)
            play = _compiled_match(env, _mover(player_a), _mover(player_b), num_games,
                                   opening_plies, max_plies, True)
            results, moves, plies, final = play(player_a.params, player_b.params, key)
            plies = int(plies)
            if plies > record_plies(env, max_plies):
                raise ValueError(
                    f"cannot record the match: a game of {env.name} lasted more than "
                    f"{record_plies(env, max_plies)} plies after the opening, its max_plies")
            moves = np.asarray(moves)[:, :opening_plies + plies]
            final = jax.device_get(final)
        else:
            play = _compiled_match(env, _mover(player_a), _mover(player_b), num_games,
                                   opening_plies, max_plies)
            results = play(player_a.params, player_b.params, key)
    else:
        results = _host_results(env, (player_a, player_b), key, num_games, opening_plies,
                                max_plies, progress, record)
        if record:
            results, moves, final = results
    result = MatchResult.from_results(results, player_a.name, player_b.name)
    if record:
        margins = None
        if env.score_margin() is not None:
            margin0 = np.asarray(_compiled_margin(env)(final), np.float64)
            margins = np.where(result.a_seat == 0, margin0, -margin0)
        result = dataclasses.replace(result, moves=np.asarray(moves, np.int32),
                                     opening_plies=opening_plies, final_states=final,
                                     margins=margins)
    return result


@cache_by_identity(maxsize=16)
def _compiled_margin(env: Env):
    return jax.jit(jax.vmap(env.score_margin()))
