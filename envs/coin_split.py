"""Grundy's coin-splitting game as a pure JAX state machine.

A position is a multiset of piles of coins; a move splits one pile into two non-empty
piles of different sizes; the player who cannot move loses (no draws). The game starts
with one pile of `coins`; player 0 moves first.

Actions (a fixed count for a given `max_coins`): the split of a pile of size `s` into
`(a, s - a)` with `1 <= a < s - a`, numbered in order of `(s, a)` for `s = 3..max_coins`:
action 0 = 3=1+2, 1 = 4=1+3, 2 = 5=1+4, 3 = 5=2+3, 4 = 6=1+5, ... so
`num_actions = sum_{s=3}^{max_coins} floor((s - 1) / 2)`. The numbering does not depend on
`max_coins` (a larger `max_coins` only appends actions). A split is legal iff a pile of
size `s` exists.

Observation: bool [1, max_coins, K + 2], a 1 x max_coins "board" whose cell `j` is pile
size `j + 1`. With `n` the number of piles of that size:
  planes 0..K-1  thermometer `n >= 1`, ..., `n >= K` (saturates above K),
  plane K        `n` is odd (two equal piles cancel, so the parity decides the game),
  plane K+1      all True when player 0 is to move (side to move; the game is impartial).
`K = min(max_coins // 3, 8)`: a pile of size >= 3 cannot occur more than max_coins // 3
times, so below `max_coins = 27` only the dead piles of size 1 and 2 can saturate.

The state is a function of the pile counts alone: every split adds one pile, so the ply
count is `piles - 1` and the player to move is its parity (see `state_from_counts`).
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env
from envs.ground_truth import GroundTruth, GroundTruthSource
from envs.limits import check_option
from envs.picture import HEADER_CHAR, Picture, disc, line, rect, status, text
from envs.state import State

MAX_COINS_LIMIT = 64
MAX_COUNT_PLANES = 8


def _num_actions_for(max_coins: int) -> int:
    """Number of actions for piles up to `max_coins`: sum over s of floor((s-1)/2).

    Args:
      max_coins: the largest pile, at least 2.

    Returns:
      The number of actions.
    """
    return sum((s - 1) // 2 for s in range(3, max_coins + 1))


def split_table(max_coins: int = MAX_COINS_LIMIT) -> np.ndarray:
    """int32 [num_actions, 2]: row `action` is `(s, a)`, the pile split and its smaller part.

    Args:
      max_coins: the largest pile.

    Returns:
      (num_actions, 2) int32: one row per action of a game with this `max_coins`.
    """
    rows = [(s, a) for s in range(3, max_coins + 1) for a in range(1, (s - 1) // 2 + 1)]
    return np.array(rows, dtype=np.int32).reshape(-1, 2)


_TABLE = split_table(MAX_COINS_LIMIT)
_OFFSETS = {s: _num_actions_for(s - 1) for s in range(3, MAX_COINS_LIMIT + 1)}


def action_to_split(action: int) -> tuple[int, int]:
    """`(s, a)`: action splits a pile of `s` into `a` and `s - a` (`a` the smaller).

    Args:
      action: the action id.

    Returns:
      `(s, a)`.

    Raises:
      ValueError: `action` splits no pile of at most `MAX_COINS_LIMIT` coins.
    """
    action = int(action)
    if not 0 <= action < len(_TABLE):
        raise ValueError(
            f"action {action} is not a split of a pile of at most {MAX_COINS_LIMIT} coins"
        )
    s, a = _TABLE[action]
    return int(s), int(a)


def split_to_action(s: int, a: int) -> int:
    """The action that splits a pile of `s` into `a` and `s - a` (either part may be given).

    Args:
      s: the pile's size, 3 to `MAX_COINS_LIMIT`.
      a: one part's size.

    Returns:
      The action id.

    Raises:
      ValueError: `s` is out of range, or the parts are empty or equal.
    """
    s, a = int(s), int(a)
    if not 3 <= s <= MAX_COINS_LIMIT:
        raise ValueError(f"pile size {s} must be between 3 and {MAX_COINS_LIMIT}")
    small = min(a, s - a)
    if small < 1 or 2 * small == s:
        raise ValueError(f"{s}={a}+{s - a} is not a split into two unequal non-empty piles")
    return _OFFSETS[s] + small - 1


def action_name(action: int) -> str:
    """Human form of an action, e.g. `"7=3+4"`.

    Args:
      action: the action id.

    Returns:
      The split as "s=a+b", a < b.
    """
    s, a = action_to_split(action)
    return f"{s}={a}+{s - a}"


_FULL = re.compile(r"^(\d+)\s*=\s*(\d+)\s*\+\s*(\d+)$")
_PAIR = re.compile(r"^(\d+)\s*(?:[\s,:/]|->)\s*(\d+)$")
_SUM = re.compile(r"^(\d+)\s*\+\s*(\d+)$")


def parse_move(text: str, max_coins: int = MAX_COINS_LIMIT) -> int:
    """Reads a move typed by a human: `"7=3+4"`, `"7 3"` (pile, one part) or `"3+4"`.

    Args:
      text: what the human typed.
      max_coins: the largest pile of the game.

    Returns:
      The action id.

    Raises:
      ValueError: for unreadable text or a split that is not a move of this game.
    """
    text = text.strip()
    if m := _FULL.match(text):
        s, a, b = (int(g) for g in m.groups())
        if a + b != s:
            raise ValueError(f"{text!r}: {a}+{b} is not {s}")
    elif m := _PAIR.match(text):
        s, a = (int(g) for g in m.groups())
    elif m := _SUM.match(text):
        a, b = (int(g) for g in m.groups())
        s = a + b
    else:
        raise ValueError(
            f"cannot read move {text!r}; write the pile and its split, e.g. '7=3+4' or '7 3'"
        )
    if not 0 < a < s:
        raise ValueError(f"{text!r}: a part of {a} coins does not split a pile of {s}")
    if s > max_coins:
        raise ValueError(f"{text!r}: no pile can have {s} > {max_coins} coins")
    return split_to_action(s, a)


def grundy_values(n: int) -> list[int]:
    """Grundy numbers of single piles of size 0..n (n + 1 values; OEIS A002188).

    Args:
      n: the largest pile.

    Returns:
      The n + 1 Grundy numbers, by pile size.
    """
    g = [0] * (n + 1)
    for s in range(3, n + 1):
        options = {g[a] ^ g[s - a] for a in range(1, (s - 1) // 2 + 1)}
        g[s] = next(v for v in range(len(options) + 1) if v not in options)
    return g


class Positions(NamedTuple):
    """Every position reachable from one start (see `all_positions`); P positions.

    Attributes:
      counts: int8 [P, max_coins + 1] pile counts (the `counts` field of the state).
      current_player: int32 [P] player to move.
      terminal: bool [P] the player to move has no move (and has lost).
      wins: bool [P] the player to move wins with perfect play (XOR of Grundy numbers != 0).
      winning_actions: bool [P, num_actions] moves to a position lost for the opponent.
    """

    counts: np.ndarray
    current_player: np.ndarray
    terminal: np.ndarray
    wins: np.ndarray
    winning_actions: np.ndarray


def all_positions(coins: int, max_coins: int | None = None) -> Positions:
    """All positions reachable from one pile of `coins`, solved with Grundy numbers.

    Plain Python; the number of positions grows like the partitions of `coins` (a few
    thousand at 30 coins). Ordered by ply, then by pile sizes.

    Args:
      coins: the starting pile, at least 3.
      max_coins: the game's largest pile (None: `coins`).

    Returns:
      The `Positions`: P positions and their solution.

    Raises:
      ValueError: unless 3 <= coins <= max_coins <= `MAX_COINS_LIMIT`.
    """
    coins, max_coins = _check_sizes(coins, max_coins)
    g = grundy_values(max_coins)
    table = split_table(max_coins)
    seen = {(coins,)}
    queue = deque([(coins,)])
    order = []
    while queue:
        piles = queue.popleft()
        order.append(piles)
        for s in set(piles):
            for a in range(1, (s - 1) // 2 + 1):
                child = list(piles)
                child.remove(s)
                child = tuple(sorted(child + [a, s - a], reverse=True))
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
    order.sort(key=lambda p: (len(p), p))
    n, num = len(order), len(table)
    counts = np.zeros((n, max_coins + 1), np.int8)
    wins = np.zeros(n, bool)
    winning = np.zeros((n, num), bool)
    for i, piles in enumerate(order):
        nim = 0
        for p in piles:
            counts[i, p] += 1
            nim ^= g[p]
        wins[i] = nim != 0
        legal = counts[i, table[:, 0]] > 0
        after = nim ^ np.array([g[s] ^ g[a] ^ g[s - a] for s, a in table], dtype=np.int64)
        winning[i] = legal & (after == 0)
    plies = np.array([len(p) - 1 for p in order], np.int32)
    terminal = np.array([all(p < 3 for p in piles) for piles in order], bool)
    return Positions(counts, plies % 2, terminal, wins, winning)


def _check_sizes(coins: int, max_coins: int | None) -> tuple[int, int]:
    """`(coins, max_coins)` as ints (max_coins None: coins); ValueError unless
    3 <= coins <= max_coins <= MAX_COINS_LIMIT."""
    coins = check_option("coin_split coins", coins, int)
    if coins < 3:
        raise ValueError(f"coins={coins}: a pile of fewer than 3 coins has no move")
    max_coins = coins if max_coins is None else check_option(
        "coin_split max_coins", max_coins, int)
    if coins > max_coins:
        raise ValueError(f"coins={coins} exceeds max_coins={max_coins}")
    if max_coins > MAX_COINS_LIMIT:
        raise ValueError(f"max_coins={max_coins} exceeds the limit of {MAX_COINS_LIMIT}")
    return coins, max_coins


@struct.dataclass
class CoinSplitState(State):
    """Coin-splitting state; `counts` int8 [max_coins + 1]: counts[j] piles of size j."""

    counts: chex.Array = None


class CoinSplit(Env):
    """Grundy's game from one pile of `coins`, with shapes fixed by `max_coins`."""

    name = "coin_split"
    move_notation = "a split like 7=3+4 (pile = part + part), 7 3 (pile and one part) or 3+4"

    def __init__(self, coins: int = 7, max_coins: int | None = None):
        coins, max_coins = _check_sizes(coins, max_coins)
        self.coins = coins
        self.max_coins = max_coins
        self.num_actions = _num_actions_for(max_coins)
        self.count_planes = min(max_coins // 3, MAX_COUNT_PLANES)
        self.observation_shape = (1, max_coins, self.count_planes + 2)
        self.max_plies = coins - 1  # every split adds a pile
        table = split_table(max_coins)
        self._split_size = table[:, 0]
        self._split_small = table[:, 1]

    def state_from_counts(self, counts: chex.Array) -> CoinSplitState:
        """The state with these pile counts (int [max_coins + 1]), reached by play.

        The ply count is `piles - 1` and fixes the player to move; a position with no
        move is terminal, the player to move losing (-1) and the other winning (+1).

        Args:
          counts: (max_coins + 1,) integer, `counts[j]` the number of piles of j coins.

        Returns:
          The unbatched `CoinSplitState` (jit/vmap-able).
        """
        counts = jnp.asarray(counts, dtype=jnp.int8)
        piles = jnp.sum(counts.astype(jnp.int32))
        step_count = piles - 1
        player = step_count % 2
        legal = counts[self._split_size] > 0
        terminated = ~jnp.any(legal)
        loss = jnp.where(terminated, -1.0, 0.0)
        rewards = jnp.zeros(2, jnp.float32).at[player].set(loss).at[1 - player].set(-loss)
        return CoinSplitState(
            current_player=player,
            observation=self._observation(counts, player),
            legal_action_mask=legal,
            rewards=rewards,
            terminated=terminated,
            step_count=step_count,
            counts=counts,
        )

    def _observation(self, counts: chex.Array, player: chex.Array) -> chex.Array:
        n = counts[1:].astype(jnp.int32)[:, None]
        levels = jnp.arange(1, self.count_planes + 1, dtype=jnp.int32)[None, :]
        side = jnp.broadcast_to(player == 0, n.shape)
        planes = jnp.concatenate([n >= levels, n % 2 == 1, side], axis=1)
        return planes[None]

    def _init(self, key: chex.PRNGKey) -> CoinSplitState:
        del key
        return self.state_from_counts(jnp.zeros(self.max_coins + 1, jnp.int8).at[self.coins].set(1))

    def _step(self, state: CoinSplitState, action: chex.Array) -> CoinSplitState:
        s = jnp.asarray(self._split_size)[action]
        a = jnp.asarray(self._split_small)[action]
        counts = state.counts.at[s].add(-1).at[a].add(1).at[s - a].add(1)
        return self.state_from_counts(counts)

    def action_to_split(self, action: int) -> tuple[int, int]:
        """`(s, a)` of one of this env's actions (ValueError when out of range).

        Args:
          action: the action id, in [0, num_actions).

        Returns:
          `(s, a)`: a pile of s coins split into a and s - a, a the smaller.
        """
        if not 0 <= int(action) < self.num_actions:
            raise ValueError(f"action {action} is not in 0..{self.num_actions - 1}")
        return action_to_split(action)

    def split_to_action(self, s: int, a: int) -> int:
        """The action splitting a pile of `s` into `a` and `s - a` (ValueError if none).

        Args:
          s: the pile's size, at most `max_coins`.
          a: one part's size.

        Returns:
          The action id.
        """
        if s > self.max_coins:
            raise ValueError(f"pile size {s} exceeds max_coins={self.max_coins}")
        return split_to_action(s, a)

    def parse_move(self, text: str) -> int:
        """A human move (`"7=3+4"`, `"7 3"`, `"3+4"`) as an action of this env.

        Args:
          text: what the human typed.

        Returns:
          The action id.

        Raises:
          ValueError: unreadable text or a split that is not a move of this game.
        """
        return parse_move(text, self.max_coins)

    def format_move(self, action: int) -> str:
        """An action of this env in human form, e.g. `"7=3+4"` (ValueError when out of range).

        Args:
          action: the action id, in [0, num_actions).

        Returns:
          The split as "s=a+b".
        """
        self.action_to_split(action)  # the range check of this env
        return action_name(action)

    def render(self, state: CoinSplitState) -> str:
        """The piles, largest first, and whose move it is (or that the game is over).

        Args:
          state: an unbatched `CoinSplitState`.

        Returns:
          One line of text.
        """
        counts = np.asarray(jax.device_get(state.counts))
        piles = [size for size in range(len(counts) - 1, 0, -1) for _ in range(counts[size])]
        player = int(state.current_player)
        status = f"player {player} to move"
        if bool(state.terminated):
            over = "has no move" if not counts[3:].any() else "lost"
            status = f"player {player} to move {over}: game over"
        return f"piles: {' '.join(map(str, piles))}  ({status})"

    def picture(self, state: CoinSplitState, last_move: int | None = None) -> Picture:
        """The piles as rows of coins, largest first, each with its size below; the
        last move is named in the header. The spot of the split "s=a+b" is the gap
        between coins a and a + 1 of the first pile of s coins (ticked faintly).

        Args:
          state: an unbatched `CoinSplitState`.
          last_move: the action id to name, or None.

        Returns:
          The `envs.picture.Picture`.
        """
        state = jax.device_get(state)
        counts = np.asarray(state.counts)
        piles = [size for size in range(len(counts) - 1, 0, -1) for _ in range(counts[size])]
        header = status(state, ("player 0", "player 1"))
        if last_move is not None:
            header += f", last move {action_name(last_move)}"
        slots = max(self.coins, 8)  # coins per row; piles wrap like words
        p = min(26.0, 520.0 / slots)
        place, row, col = [], 0, 0
        for size in piles:
            if col and col + size > slots:
                row, col = row + 1, 0
            place.append((row, col))
            col += size + 1
        width = max(24 + slots * p, 20 + HEADER_CHAR * len(header))
        height = 34 + (row + 1) * (p + 18) + 4
        out = Picture(width, height, spot_size=p).add(
            rect(0, 0, width, height, "#ffffff"), text(12, 21, header, 14, anchor="start"))
        spots, ticks, seen = {}, [], set()
        for size, (r, c) in zip(piles, place):
            x0, y = 12 + c * p, 34 + r * (p + 18) + p / 2
            out = out.add(*(disc(x0 + (i + 0.5) * p, y, p * 0.42, "#e8b923", "#9a7209",
                                 cls="piece coin") for i in range(size)),
                          text(x0 + size * p / 2, y + p / 2 + 13, str(size), 11, "#555"))
            if size >= 3 and size not in seen:
                seen.add(size)
                for a in range(1, (size - 1) // 2 + 1):
                    spots[split_to_action(size, a)] = (x0 + a * p, y)
                    ticks.append(line(x0 + a * p, y - p * 0.6, x0 + a * p, y + p * 0.6,
                                      "#9a9a9a", 1))
        return dataclasses.replace(out.add(*ticks), spots=spots)

    def ground_truth(self) -> GroundTruthSource:
        """Every position reachable from the start, solved by Grundy values.

        Returns:
          The `GroundTruthSource` (metric `winning_move_share`, complete, with values).
        """
        return GROUND_TRUTH

    def solver(self):
        """The winning moves of a state (every legal move where none wins).

        Returns:
          `winning(state) -> (A,) bool` for an unbatched live state (see `winning_moves`).
        """
        return winning_moves(self)


def _load_ground_truth(env: CoinSplit) -> GroundTruth:
    """Every live position with its winning moves and its winner. A right move keeps a
    win: the share is taken over the winning positions (in a lost one every move loses),
    and the value sign is checked on every live position."""
    solved = all_positions(env.coins, env.max_coins)
    live = ~solved.terminal
    states = jax.vmap(env.state_from_counts)(jnp.asarray(solved.counts[live]))
    wins = solved.wins[live]
    return GroundTruth(
        states=states,
        right_moves=solved.winning_actions[live],
        counted=wins,
        value_states=states,
        value_sign=np.where(wins, 1, -1),
    )


GROUND_TRUTH = GroundTruthSource(metric="winning_move_share", complete=True,
                                 load=_load_ground_truth, values=True)


def winning_moves(env: CoinSplit):
    """The exact solver: one state -> the moves that win (bool [A]), or every legal move
    where none does (a lost position), from the Grundy values.

    Args:
      env: the `CoinSplit` game.

    Returns:
      `winning(state) -> (A,) bool` for an unbatched `CoinSplitState` (jit/vmap-able).
    """
    grundy = jnp.asarray(grundy_values(env.max_coins), jnp.int32)
    table = split_table(env.max_coins)
    size, small = jnp.asarray(table[:, 0]), jnp.asarray(table[:, 1])

    def winning(state: CoinSplitState) -> jax.Array:
        odd = (state.counts.astype(jnp.int32) % 2) == 1
        position = jax.lax.reduce(jnp.where(odd, grundy, 0), jnp.int32(0),
                                  jax.lax.bitwise_xor, (0,))
        after = position ^ grundy[size] ^ grundy[small] ^ grundy[size - small]
        legal = state.legal_action_mask
        wins = legal & (after == 0)
        return jnp.where(jnp.any(wins), wins, legal)

    return winning
