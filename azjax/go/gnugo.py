"""GNU Go as a player (`gnugo:LEVEL`): a host player for `envs.go.Go` games.

    player = gnugo_player(env, level=1)          # or make_player("gnugo:1", env)
    result = play_match(env, player, random_player(), key, num_games=8)
    player.stats                                 # {"moves": ..., "replaced": ..., ...}

Each move sets the game's position up afresh in a GNU Go process (GTP, pipelined in one
write): `clear_board`, `komi`, the stones of the previous board `history[1]` placed one
by one (placing a legal position's stones never captures), then the opponent's last move
(the stone it placed, or a pass), `set_random_seed` (GNU Go's random numbers would
otherwise run on from the process's last move) and `genmove`. So GNU Go sees the real
position and its simple-ko situation, and the move does not depend on what the process
played before: with the same seed in every process, a match gives the same moves and
results whichever process plays which game. When the previous board is not known
(`Go(history=1)`, the first move, a board that does not follow from it by one move) the
current board is set up directly, without the ko information. Setting a board up costs
little next to GNU Go's own move, so games in parallel processes are bound by `genmove`.

GNU Go runs with `--chinese-rules --capture-all-dead` (area scoring; it removes the dead
stones before it passes, so the env's Tromp-Taylor count of the final board is right)
and `--never-resign` (the env has no resignation: GNU Go plays on). A move GNU Go gives
that our rules forbid (a positional-superko repetition, or a simple-ko recapture it could
not know about) is taken back and replaced by GNU Go's best legal move
(`restricted_genmove` over the env's legal points, pass if it finds none); the player's
`stats` count such replacements, resignations (played as a pass; none with
`--never-resign`), direct setups and engine restarts.

Processes: a pool per (GNU Go executable, level, seed, board size, timeout), shared by
every player with those settings, started lazily (at most `processes`, by default one per
CPU core, and at most one per game to move), driven from one thread each over a slice of
the batch, restarted when one has died, and closed at interpreter exit. Each runs in a
session of its own: a terminal's Ctrl-C reaches only azjax, whose stop at it (a
KeyboardInterrupt) ends each thread after the move it plays; a move cut short marks its
process for a restart, and a start cut short kills its process (it would not see the
Ctrl-C).

GNU Go is found by `azjax.go.gtp_client.find_gnugo` (`$AZJAX_GNUGO`, else PATH, then
/usr/games) when the player is made: a missing GNU Go raises `GnuGoMissing` (a
FileNotFoundError, so the command lines print it as one `error:` line) saying how to
install it. A GNU Go that fails a move (it exits or is killed, answers `? ...` or what is
not a GTP reply, stays silent for `timeout` seconds) is killed and the move asked again
of a new process, with a `notice:` line on stderr; if that one fails too, or GNU Go
answers a move that is not on the board or not legal even among the legal points it was
given, the player raises `GnuGoFailed` (a ValueError: one `error:` line naming the
player, the game and move, and what GNU Go did).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import sys
import threading
from collections.abc import Sequence

import jax
import numpy as np

from azjax.core.players import Player
from azjax.go.gtp_client import (
    GNUGO_LEVELS,
    EngineDied,
    GnuGoFailed,
    GtpError,
    GtpProcess,
    find_gnugo,
    gnugo_command,
)
from envs import Env
from envs.go import Go
from envs.go_board import format_move

COLOURS = ("black", "white")
EMPTY = -1
STAT_KEYS = ("moves", "replaced", "resignations", "direct_setups", "restarts")
"""`GnuGoPlayer.stats`: moves asked for; moves our rules forbid, replaced by the best
legal one; resignations (played as a pass); positions after the first move set up without
the previous board (no ko information); engine processes restarted after one died."""


@dataclasses.dataclass(frozen=True)
class GnuGoPlayer(Player):
    """A `Player` with GNU Go's counters (`STAT_KEYS`), shared by its `with_params`
    copies."""

    stats: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)


def _neighbours(size: int) -> list[list[int]]:
    out = []
    for point in range(size * size):
        row, col = divmod(point, size)
        out.append([r * size + c for r, c in ((row - 1, col), (row + 1, col), (row, col - 1),
                                              (row, col + 1)) if 0 <= r < size and 0 <= c < size])
    return out


def _replay(board: np.ndarray, point: int, colour: int, neighbours: list[list[int]]
            ) -> np.ndarray:
    """`board` after `colour` plays at `point`: opponent chains left without a liberty
    next to the stone are captured (no legality check)."""
    board = board.copy()
    board[point] = colour
    for start in neighbours[point]:
        if board[start] != 1 - colour:
            continue
        chain, todo, free = {start}, [start], False
        while todo and not free:
            for q in neighbours[todo.pop()]:
                if board[q] == EMPTY:
                    free = True
                    break
                if board[q] == 1 - colour and q not in chain:
                    chain.add(q)
                    todo.append(q)
        if not free:
            board[list(chain)] = EMPTY
    return board


def setup_commands(size: int, komi: float, board: np.ndarray, previous: np.ndarray | None,
                   mover: int) -> tuple[list[str], bool]:
    """The GTP commands that set up a position where `mover` is to play on `board`
    (int8 [N*N]), reached from `previous` (the board before the opponent's last move, or
    None) by that move; and whether the previous board and last move could be used (if
    `board` does not follow from `previous` by one opponent move or a pass, the board is
    set up directly, without the ko information).

    Args:
      size: the board's side N.
      komi: the game's komi.
      board: (N * N,) int8: -1 empty, 0 black, 1 white.
      previous: (N * N,) int8, the board before the opponent's last move, or None.
      mover: the player to move, 0 (Black) or 1 (White).

    Returns:
      `(commands, with_last)`: the GTP command lines, and whether they replay the last
      move from `previous`.
    """
    opponent = 1 - mover
    last = None
    if previous is not None:
        if np.array_equal(previous, board):
            last = "pass"
        else:
            new = np.flatnonzero((board == opponent) & (previous == EMPTY))
            if len(new) == 1 and np.array_equal(
                    _replay(previous, int(new[0]), opponent, _neighbours(size)), board):
                last = format_move(new[0], size)
    base = board if last is None else previous
    commands = ["clear_board", f"komi {float(komi):g}"]
    for colour in (0, 1):
        commands += [f"play {COLOURS[colour]} {format_move(p, size)}"
                     for p in np.flatnonzero(base == colour)]
    if last is not None:
        commands.append(f"play {COLOURS[opponent]} {last}")
    return commands, last is not None


# ---------------------------------------------------------------------------------------
# The process pools
# ---------------------------------------------------------------------------------------

_POOLS: dict[tuple, list[GtpProcess | None]] = {}
_POOLS_LOCK = threading.Lock()
_SLOT_LOCKS: dict[tuple, threading.Lock] = {}
"""One lock per (pool, slot): a process plays one position at a time even when two
players with the same settings are called from two threads."""


def _slot_lock(key: tuple, slot: int) -> threading.Lock:
    with _POOLS_LOCK:
        return _SLOT_LOCKS.setdefault((key, slot), threading.Lock())


def _start(command: Sequence[str], size: int, timeout: float, pool: list,
           slot: int) -> GtpProcess:
    """A new GNU Go process, set to the board size and put in `pool[slot]`."""
    engine = GtpProcess(command, timeout, name="GNU Go")
    try:
        engine.send(f"boardsize {size}")
        with _POOLS_LOCK:
            pool[slot] = engine
    except BaseException:  # Ctrl-C too: GNU Go's own session never gets it
        engine.broken = True  # killed, not asked to quit
        engine.close()
        raise
    return engine


def _engine(key: tuple, slot: int, command: Sequence[str], size: int, timeout: float,
            restart: bool = False) -> tuple[GtpProcess, bool]:
    """The pool's process in `slot`, started if absent and restarted if it has died or
    failed (or `restart`); and whether it was restarted. A process is in its slot from
    its first answer until it is closed, so that `close_all` finds it should anything
    (Ctrl-C) cut this short; the slot is empty in between."""
    with _POOLS_LOCK:
        pool = _POOLS.setdefault(key, [])
        pool.extend([None] * (slot + 1 - len(pool)))
        engine = pool[slot]
    restarted = engine is not None and (restart or engine.broken or not engine.alive)
    if engine is not None and not restarted:
        return engine, False
    if engine is not None:
        engine.broken = engine.broken or restart
        engine.close()
        with _POOLS_LOCK:
            pool[slot] = None
    return _start(command, size, timeout, pool, slot), restarted


def close_all() -> None:
    """Closes every GNU Go process (at interpreter exit; later use starts new ones)."""
    with _POOLS_LOCK:
        engines = [e for pool in _POOLS.values() for e in pool if e is not None]
        _POOLS.clear()
    for engine in engines:
        engine.close()


atexit.register(close_all)


# ---------------------------------------------------------------------------------------
# The player
# ---------------------------------------------------------------------------------------

def _check_env(env: Env) -> None:
    if not isinstance(env, Go):
        raise ValueError(  # noqa: TRY004 - a user's choice of game, told in one line
            f"GNU Go plays only Go (the game 'go'), not {env.name!r}")


def gnugo_player(env: Env, level: int, seed: int = 0, name: str | None = None,
                 processes: int | None = None, timeout: float = 120.0) -> GnuGoPlayer:
    """GNU Go at `level` (0 weakest and fastest .. 10, GNU Go's default) as a host player
    for `env`, an `envs.go.Go` game (see the module docstring).

    Args:
      env: the Go game (its size and komi are GNU Go's).
      level: GNU Go's `--level`, an integer from 0 to 10.
      seed: GNU Go's random seed, set again before every move (GNU Go is then
        deterministic: the same position gets the same move in any process).
      name: the player's name (default `gnugo:LEVEL`).
      processes: at most this many GNU Go processes play a batch at once (default: the
        number of CPU cores).
      timeout: seconds to wait for one GNU Go reply before it counts as failed.

    Returns:
      The `GnuGoPlayer`, a host player (not jittable): its policy takes a batch of
      `GoState`s, fields with a leading (B,) axis, and returns (B,) int32 actions (pass
      for finished games).

    Raises:
      ValueError: for another game, a bad level, seed, process count or timeout.
      GnuGoMissing: when GNU Go is not installed.
      GnuGoFailed: (from its moves) when GNU Go fails a move twice or answers one that
        is not on the board or not legal.
    """
    _check_env(env)
    low, high = GNUGO_LEVELS
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or not (
            low <= level <= high):
        raise ValueError(f"GNU Go's level must be an integer from {low} to {high}, got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not (
            0 <= seed < 2**31):
        raise ValueError(f"GNU Go's seed must be an integer from 0 to {2**31 - 1}, got {seed!r}")
    if processes is not None and (isinstance(processes, bool) or not isinstance(
            processes, (int, np.integer)) or processes < 1):
        raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
    if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
        raise ValueError(f"GNU Go's timeout must be a positive number of seconds, got "
                         f"{timeout!r}")
    level, seed = int(level), int(seed)
    name = name or f"gnugo:{level}"
    executable = find_gnugo()
    command = gnugo_command(level, seed, executable) + ["--never-resign"]
    size, komi = env.size, env.komi
    nn = size * size
    key = (executable, level, seed, size, float(timeout))
    most = processes or os.cpu_count() or 1
    stats = dict.fromkeys(STAT_KEYS, 0)
    stats_lock = threading.Lock()

    def count(stat: str, n: int = 1) -> None:
        with stats_lock:
            stats[stat] += n

    gnugo = f"GNU Go ({executable!r})"

    def failed(state: dict, why: str) -> GnuGoFailed:
        return GnuGoFailed(name, state["step"] + 1, why, state["index"])

    def failure(err: EngineDied | GtpError) -> str:  # EngineDied's text names GNU Go
        return f"{gnugo} refused {err}" if isinstance(err, GtpError) else str(err)

    def parse(state: dict, command: str, reply: str) -> int:
        try:
            return env.parse_move(reply)
        except ValueError:
            raise failed(state, f"{gnugo} answered {command!r} with {reply!r}, not a move "
                         f"on the {size}x{size} board") from None

    def move(engine: GtpProcess, state: dict) -> int:
        colour = COLOURS[state["mover"]]
        commands, with_last = setup_commands(size, komi, state["board"], state["previous"],
                                             state["mover"])
        reseed = f"set_random_seed {seed}"  # else the RNG runs on from the last move
        genmove = f"genmove {colour}"
        reply = engine.send_all(commands + [reseed, genmove])[-1].strip()
        if not with_last and state["step"] > 0:
            count("direct_setups")
        legal = state["legal"]
        if reply.lower() == "resign":
            count("resignations")
            return nn
        action = parse(state, genmove, reply)
        if legal[action]:
            return action
        count("replaced")
        engine.send_all(["undo", reseed])
        allowed = [format_move(p, size) for p in np.flatnonzero(legal[:nn])]
        restricted = f"restricted_genmove {colour}"
        again = engine.send(f"{restricted} {' '.join(allowed)}").strip() if allowed \
            else "PASS"
        if again.lower() in ("pass", "resign"):
            return nn
        replaced = parse(state, restricted, again)
        if not legal[replaced]:
            raise failed(state, f"{gnugo} answered {genmove!r} with {reply!r} and "
                         f"{restricted!r} with {again!r}: both illegal here")
        return replaced

    def work(slot: int, positions: list[dict], actions: np.ndarray,
             cancel: threading.Event | None = None) -> None:
        with _slot_lock(key, slot):
            engine = None
            for state in positions:
                if cancel is not None and cancel.is_set():
                    return
                for retry in (False, True):  # a failed move is asked again of a new process
                    try:
                        if engine is None or retry:
                            engine, restarted = _engine(key, slot, command, size, timeout,
                                                        restart=retry)
                            count("restarts", int(restarted))
                        actions[state["index"]] = move(engine, state)
                        break
                    except KeyboardInterrupt:  # a stop cut the move short: replies unread
                        if engine is not None:
                            engine.broken = True
                        raise
                    except (EngineDied, GtpError) as err:
                        if retry:
                            raise failed(state, f"{failure(err)} (a new process, after the "
                                         "first failed too)") from None
                        print(f"notice: {name} at move {state['step'] + 1}: {failure(err)}; "
                              "asking a new GNU Go process", file=sys.stderr, flush=True)

    def policy(params, states, rng) -> np.ndarray:
        del params, rng  # GNU Go plays deterministically with its seed
        states = jax.device_get(states)
        board = np.asarray(states.board)
        history = np.asarray(states.history)
        mover = np.asarray(states.current_player)
        step = np.asarray(states.step_count)
        legal = np.asarray(states.legal_action_mask)
        actions = np.full(len(board), nn, np.int32)  # finished games: pass (ignored)
        live = np.flatnonzero(~np.asarray(states.terminated))
        if not len(live):
            return actions
        count("moves", len(live))
        positions = [{"index": int(i), "board": board[i], "mover": int(mover[i]),
                      "legal": legal[i], "step": int(step[i]),
                      "previous": history[i, 1] if history.shape[1] > 1 and step[i] > 0
                      else None} for i in live]
        slices = [[positions[i] for i in part] for part in
                  np.array_split(np.arange(len(positions)), min(most, len(positions)))]
        if len(slices) == 1:
            work(0, slices[0], actions)
            return actions
        errors: list[BaseException] = []
        cancel = threading.Event()

        def run(slot: int) -> None:
            try:
                work(slot, slices[slot], actions, cancel)
            except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
                errors.append(err)

        threads = [threading.Thread(target=run, args=(slot,), daemon=True)
                   for slot in range(len(slices))]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        except KeyboardInterrupt:  # a stop (Ctrl-C): each thread ends after its move
            cancel.set()
            for thread in threads:
                if thread.ident is not None:
                    thread.join()
            raise
        if errors:
            raise errors[0]
        return actions

    return GnuGoPlayer(name, policy, jittable=False, stats=stats)
