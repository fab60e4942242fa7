"""The game of Go as a pure JAX state machine (Tromp-Taylor area scoring, positional superko).

Board `size` x `size` (2..19, default 9); player 0 is Black and moves first. Actions:
`row * size + col` places a stone, `size * size` is pass (num_actions = size*size+1). Row 0
is the top line, printed as line `size`; columns are lettered A B C D E F G H J ... (no I),
so on 9x9 action 0 is "A9" and action 72 is "A1" (see `parse_move`, `format_move`).

Rules: stones of the opponent left without liberties are captured (any number of groups at
once); suicide is illegal. The `ko` option picks the repetition rule:

* `ko="positional"` (the default), **positional superko**: a stone move may not recreate
  any whole-board position (after its captures) that the game has had before: the empty
  initial board, and every board after every earlier ply, whoever was to move then. Passes
  create no new position and are never forbidden. Positions are compared by 64-bit
  Zobrist-style hashes (two additive uint32 words, kept in `hashes`; 55 of the bits are
  random), so two different boards hash alike with probability 2**-55.
* `ko="simple"`: only recapturing a single stone just captured by a single stone is
  illegal; longer cycles (triple ko, send two return one) can repeat until the move cap.

In both modes the simple-ko point is kept in `ko` (cleared by any other move or a pass);
superko forbids that point too. Pass is always legal. The game ends after two consecutive
passes or at `max_moves` plies (default `2 * size * size`), and is scored by Tromp-Taylor
area: a point counts for a colour if it holds that colour's stone, or is empty and reaches
only that colour's stones through empty points. Black wins (+1, -1) if black - white - komi
> 0, White wins if < 0, and an exact tie (integer komi) is a draw (0, 0).

Observation [size, size, 2T+1] bool (AlphaGo Zero), from the mover's point of view, T =
`history`: planes 0..T-1 are the mover's stones at t, t-1, ..., t-T+1; planes T..2T-1 the
opponent's stones at the same times; the last plane is all True when the mover is Black.
Boards before the start of the game are empty.

Symmetries: the hashes of past boards cannot be rotated, so a state carries `frame`, the
symmetry that maps the board of the game as played to the state's board, and always hashes
boards as they were played (the Zobrist key of a point is looked up through the frame's
cell permutation). `transform_state` composes `frame` with the symmetry and leaves
`hashes` alone, so a transformed state forbids exactly the transformed moves.

The board's constants, notation, neighbours, area count and state size are in
`envs.go_board` (its public names are importable from here), the hashes in `envs.go_superko`,
the picture in `envs.go_picture`.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env
from envs.go_board import (
    BLACK,
    COLUMNS,
    EMPTY,
    KO_RULES,
    MAX_SIZE,
    NO_POINT,
    WHITE,
    any_neighbour,
    check_state_fits,
    format_move,
    hash_rows,
    neighbour_table,
    own_true_eyes,
    parse_move,
    shifted,
    tromp_taylor_area,
    tromp_taylor_owner,
)
from envs.go_picture import go_picture
from envs.go_superko import frame_tables, repeated_positions, stone_keys, zobrist_keys
from envs.limits import INT32_MAX, check_option
from envs.state import State
from envs.symmetries import Symmetries, dihedral_symmetries

__all__ = ["BLACK", "COLUMNS", "EMPTY", "KO_RULES", "MAX_SIZE", "NO_POINT", "WHITE", "Go",
           "GoState", "format_move", "parse_move"]


@struct.dataclass
class GoState(State):
    """Go state (fields beyond `envs.state.State`).

    Attributes:
      board: int8 [N*N] -1 empty, 0 black, 1 white.
      history: int8 [T, N*N] boards at t, t-1, ..., t-T+1 (history[0] == board).
      chain: int16 [N*N] for a stone, the id of its chain (the cell of one of the chain's
        stones: the stone whose move last formed the chain); -1 on empty points.
      ko: int32 [] the point the mover may not play because of simple ko, or -1 (kept
        under both `ko` rules; positional superko forbids it as well).
      passes: int32 [] consecutive passes just played.
      frame: int32 [] the symmetry g such that this board is the board of the game as
        played transformed by g (`transform_state`); 0 for a state reached by play alone.
      hashes: uint32 [max_moves + 1, 2] with `ko="positional"`: hashes[i] is the hash
        (two uint32 words) of the board, as played (frame 0), after ply i, so rows
        0..step_count are the positions of the game (a pass repeats its row); later rows
        are zero, the hash of the empty board (row 0), which no move recreates. With
        `ko="simple"`: uint32 [1, 2] zeros, unused.
    """

    board: chex.Array = None
    history: chex.Array = None
    chain: chex.Array = None
    ko: chex.Array = None
    passes: chex.Array = None
    frame: chex.Array = None
    hashes: chex.Array = None


class Go(Env):
    """Go on a `size` x `size` board (see the module docstring for the rules and encodings).

    Args:
      size: board side, 2..19.
      komi: points added to White's score.
      history: T, the number of past boards per player in the observation.
      max_moves: plies after which the game ends and is scored (default 2 * size * size).
      ko: "positional" (default): positional superko, a stone move may not recreate any
        earlier board of the game; "simple": simple ko only (see the module docstring).
        Superko keeps max_moves + 1 position hashes (8 bytes each) in every state.
    """

    name = "go"
    player_marks = ("X", "O")
    move_notation = "a point like D4 (column letter, I skipped, row number from the bottom) or pass"

    def __init__(self, size: int = 9, komi: float = 7.5, history: int = 8,
                 max_moves: int | None = None, ko: str = "positional"):
        self.size = check_option("Go size", size, int, 2, MAX_SIZE)
        self.komi = check_option("Go komi", komi, float)
        self.history = check_option("Go history", history, int, 1)
        self.max_moves = check_option(
            "Go max_moves", 2 * self.size**2 if max_moves is None else max_moves, int, 1, INT32_MAX)
        if not isinstance(ko, str) or ko not in KO_RULES:
            raise ValueError(f"Go ko must be one of {', '.join(map(repr, KO_RULES))} "
                             f"(positional superko or simple ko), got {ko!r}")
        self.ko = ko
        check_state_fits(self.size, self.history, self.max_moves, ko)
        self.max_plies = self.max_moves
        self.num_actions = self.size * self.size + 1
        self.observation_shape = (self.size, self.size, 2 * self.history + 1)
        self._nbr = neighbour_table(self.size)
        self._symmetries = dihedral_symmetries(self.size, self.size, extra_actions=1)
        self._keys = zobrist_keys(self.size)
        self._cell_perm = np.asarray(self._symmetries.cell_perm)
        self._frame_keys, self._compose = frame_tables(self._cell_perm, self._keys)

    # ---------------------------------------------------------------------------------
    # Rules
    # ---------------------------------------------------------------------------------

    def _observation(self, history: chex.Array, player: chex.Array) -> chex.Array:
        n, t = self.size, self.history
        own = history == player.astype(jnp.int8)
        opp = history == (1 - player).astype(jnp.int8)
        colour = jnp.broadcast_to(player == BLACK, (1, n * n))
        planes = jnp.concatenate([own, opp, colour], axis=0)
        return planes.T.reshape(n, n, 2 * t + 1)

    def _legal_mask(
        self,
        board: chex.Array,
        chain: chex.Array,
        ko: chex.Array,
        player: chex.Array,
        superko: tuple[chex.Array, ...] | None = None,
    ) -> chex.Array:
        """Legal points (without pass) of `player` on a position where every chain has a
        liberty: an empty point with an empty neighbour, a neighbouring own chain with two or
        more liberties, or a neighbouring opponent chain with exactly one (a capture); not
        the simple-ko point.

        With `superko` = (keys [2, N*N, 2] of the state's frame, key [N*N, 2] of each
        point's stone (0 if empty), hash [2] of the board, hashes [R, 2] of the game's
        positions, cell permutation [N*N] of the frame), also not a point whose move makes
        a board the game has had: its hash is the board's, plus the new stone's key, minus
        the keys of the stones it captures."""
        n = self.size
        nn = n * n
        grid = board.reshape(n, n)
        empty = grid == EMPTY
        idx = jnp.arange(nn, dtype=jnp.int16).reshape(n, n)
        # Per stone: smallest and largest adjacent empty point; per chain: over its stones.
        lib_lo = jnp.full((n, n), nn, jnp.int16)
        lib_hi = jnp.full((n, n), -1, jnp.int16)
        for e, i in zip(shifted(empty, False), shifted(idx, 0)):
            lib_lo = jnp.where(e, jnp.minimum(lib_lo, i), lib_lo)
            lib_hi = jnp.where(e, jnp.maximum(lib_hi, i), lib_hi)
        seg = jnp.where(chain >= 0, chain, nn).astype(jnp.int32)
        chain_lo = jnp.full(nn + 1, nn, jnp.int16).at[seg].min(lib_lo.reshape(nn))[seg]
        chain_hi = jnp.full(nn + 1, -1, jnp.int16).at[seg].max(lib_hi.reshape(nn))[seg]
        own = board == player.astype(jnp.int8)
        opp = board == (1 - player).astype(jnp.int8)
        # A neighbour that makes the point legal: own chain keeping a liberty, or a capture.
        support = (own & (chain_lo < chain_hi)) | (opp & (chain_lo == chain_hi))
        ok = any_neighbour(empty) | any_neighbour(support.reshape(n, n))
        legal = empty & ok
        legal = legal.reshape(nn) & (jnp.arange(nn) != ko)
        if superko is None:
            return legal
        keys, stone_key, position, hashes, perm = superko
        atari = (opp & (chain_lo == chain_hi)).reshape(n, n)
        captures = empty.reshape(nn) & any_neighbour(atari).reshape(nn)
        repeats = repeated_positions(
            legal, captures, jnp.where(atari.reshape(nn), chain_lo, nn), keys[player],
            jnp.asarray(self._keys)[player], stone_key, position, hashes, perm)
        return legal & ~repeats

    def area_scores(self, state: GoState) -> chex.Array:
        """float32 [2] Tromp-Taylor area of (Black, White) on the state's board, komi
        not included.

        Args:
          state: an unbatched `GoState` (jit/vmap-able).

        Returns:
          (2,) float32.
        """
        return tromp_taylor_area(state.board, self.size, jnp.bool_(True))

    def _make_state(self, board: chex.Array, history: chex.Array, chain: chex.Array,
                    ko: chex.Array, passes: chex.Array, player: chex.Array,
                    step_count: chex.Array, frame: chex.Array, hashes: chex.Array,
                    superko: tuple[chex.Array, ...] | None) -> GoState:
        terminated = (passes >= 2) | (step_count >= self.max_moves)
        scores = tromp_taylor_area(board, self.size, terminated)
        margin = scores[0] - scores[1] - self.komi
        black_result = jnp.sign(margin).astype(jnp.float32)
        rewards = jnp.where(
            terminated, jnp.stack([black_result, -black_result]), jnp.zeros(2, jnp.float32)
        )
        legal = jnp.concatenate(
            [self._legal_mask(board, chain, ko, player, superko), jnp.ones(1, jnp.bool_)]
        )
        return GoState(
            current_player=player,
            observation=self._observation(history, player),
            legal_action_mask=legal & ~terminated,
            rewards=rewards,
            terminated=terminated,
            step_count=step_count,
            board=board,
            history=history,
            chain=chain,
            ko=ko,
            passes=passes,
            frame=frame,
            hashes=hashes,
        )

    def _init(self, key: chex.PRNGKey) -> GoState:
        del key
        nn = self.size * self.size
        history = jnp.full((self.history, nn), EMPTY, jnp.int8)
        player = jnp.int32(BLACK)
        return GoState(
            current_player=player,
            observation=self._observation(history, player),
            legal_action_mask=jnp.ones(nn + 1, jnp.bool_),  # every point has an empty neighbour
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            step_count=jnp.int32(0),
            board=history[0],
            history=history,
            chain=jnp.full(nn, -1, jnp.int16),
            ko=jnp.int32(NO_POINT),
            passes=jnp.int32(0),
            frame=jnp.int32(0),
            # The empty board's hash is 0: row 0 is the initial position under superko.
            hashes=jnp.zeros((hash_rows(self.max_moves, self.ko), 2), jnp.uint32),
        )

    def _step(self, state: GoState, action: chex.Array) -> GoState:
        nn = self.size * self.size
        mover = state.current_player
        me = mover.astype(jnp.int8)
        is_pass = action == nn
        point = jnp.minimum(action, nn - 1)
        placed = jnp.arange(nn) == action  # all False for a pass

        nbr = jnp.asarray(self._nbr)[point]
        board_ext = jnp.concatenate([state.board, jnp.full(1, 2, jnp.int8)])
        chain_ext = jnp.concatenate([state.chain, jnp.full(1, -1, jnp.int16)])
        nbr_colour = board_ext[nbr]
        nbr_chain = chain_ext[nbr]
        no_id = jnp.int16(-2)
        own_ids = jnp.where((nbr_colour == me) & ~is_pass, nbr_chain, no_id)
        opp_ids = jnp.where((nbr_colour == 1 - me) & ~is_pass, nbr_chain, no_id)

        board = jnp.where(placed, me, state.board)
        merged = jnp.any(state.chain[:, None] == own_ids[None, :], axis=1) | placed
        chain = jnp.where(merged, point.astype(jnp.int16), state.chain)

        # Opponent chains next to the stone with no empty point next to any of their stones.
        n = self.size
        touches_empty = any_neighbour((board == EMPTY).reshape(n, n)).reshape(nn)
        member = state.chain[:, None] == opp_ids[None, :]  # [N*N, 4]
        alive = jnp.any(member & touches_empty[:, None], axis=0)
        captured = jnp.any(member & ~alive[None, :], axis=1)
        board = jnp.where(captured, jnp.int8(EMPTY), board)
        chain = jnp.where(captured, jnp.int16(-1), chain)

        # Simple ko: a lone stone that captured one stone and has that point as its only liberty.
        lone = ~jnp.any(nbr_colour == me)
        board_ext = jnp.concatenate([board, jnp.full(1, 2, jnp.int8)])
        liberties = jnp.sum(board_ext[nbr] == EMPTY)
        is_ko = ~is_pass & lone & (jnp.sum(captured) == 1) & (liberties == 1)
        ko = jnp.where(is_ko, jnp.argmax(captured), NO_POINT).astype(jnp.int32)

        history = jnp.concatenate([board[None], state.history[:-1]], axis=0)
        passes = jnp.where(is_pass, state.passes + 1, 0).astype(jnp.int32)
        step_count = state.step_count + 1
        hashes, superko = state.hashes, None
        if self.ko == "positional":
            # Row step_count: this board, hashed as played (a pass repeats the last row).
            keys = jnp.asarray(self._frame_keys)[state.frame]
            stone_key = stone_keys(board, keys)
            position = jnp.sum(stone_key, axis=0, dtype=jnp.uint32)
            row = jnp.arange(hashes.shape[0])[:, None] == step_count
            hashes = jnp.where(row, position[None, :], hashes)
            perm = jnp.asarray(self._cell_perm)[state.frame]
            superko = (keys, stone_key, position, hashes, perm)
        return self._make_state(
            board=board,
            history=history,
            chain=chain,
            ko=ko,
            passes=passes,
            player=1 - mover,
            step_count=step_count,
            frame=state.frame,
            hashes=hashes,
            superko=superko,
        )

    # ---------------------------------------------------------------------------------
    # Symmetries and display
    # ---------------------------------------------------------------------------------

    @property
    def symmetries(self) -> Symmetries:
        """The 8 rotations and reflections of the board; pass is a fixed point."""
        return self._symmetries

    def transform_state(self, state: GoState, g: chex.Array) -> GoState:
        """Applies symmetry `g` to the board, its history, chains, ko point, observation and
        legal moves, and composes it into `frame` (the position hashes stay as played).

        Args:
          state: an unbatched `GoState`.
          g: () int32, the symmetry, in [0, 8).

        Returns:
          The transformed `GoState`.
        """
        sym = self._symmetries
        nn = self.size * self.size
        perm = sym.cell_perm[g]
        where_to = sym.inverse_action_perm[g, :nn]  # where each cell goes

        def move_point(p):
            return jnp.where(p >= 0, where_to[jnp.maximum(p, 0)], p).astype(p.dtype)

        return state.replace(
            board=state.board[perm],
            history=state.history[:, perm],
            chain=move_point(state.chain[perm]),
            ko=move_point(state.ko),
            frame=jnp.asarray(self._compose)[state.frame, g],
            observation=sym.observation(state.observation, g),
            legal_action_mask=sym.policy(state.legal_action_mask, g),
        )

    def parse_move(self, text: str) -> int:
        """A human move like "D4" or "pass" as an action (ValueError on bad input).

        Args:
          text: what the human or GTP typed.

        Returns:
          The action id, in [0, N * N] (N * N: pass).
        """
        return parse_move(text, self.size)

    def format_move(self, action: int) -> str:
        """An action as "D4" or "pass".

        Args:
          action: the action id, in [0, N * N].

        Returns:
          The move, e.g. "D4", or "pass".
        """
        return format_move(action, self.size)

    def render(self, state: GoState) -> str:
        """The board as text: X for Black, O for White, `.` empty, lettered columns and
        numbered rows around it, and whose move it is (or "game over").

        Args:
          state: an unbatched `GoState`.

        Returns:
          N + 3 lines of text.
        """
        n = self.size
        board = np.asarray(jax.device_get(state.board)).reshape(n, n)
        marks = {EMPTY: ".", BLACK: "X", WHITE: "O"}
        letters = "   " + " ".join(COLUMNS[:n])
        rows = [letters]
        for r in range(n):
            cells = " ".join(marks[int(v)] for v in board[r])
            rows.append(f"{n - r:>2} {cells} {n - r}")
        rows.append(letters)
        who = "Black (X)" if int(state.current_player) == BLACK else "White (O)"
        rows.append("game over" if bool(state.terminated) else f"{who} to move")
        return "\n".join(rows)

    def picture(self, state: GoState, last_move: int | None = None):
        """The board with its star points, and a pass button (`envs.go_picture`).

        Args:
          state: an unbatched `GoState`.
          last_move: the action id to mark (N * N: pass), or None.

        Returns:
          The `envs.picture.Picture`.
        """
        return go_picture(self, state, last_move)

    def score_margin(self):
        """Black's area minus White's, komi included.

        Returns:
          `margin(state) -> () float32` for an unbatched finished `GoState`.
        """
        return lambda state: self.area_scores(state) @ jnp.array([1.0, -1.0]) - self.komi

    def ownership(self):
        """Each point's Tromp-Taylor owner: +1 Black, -1 White, 0 neither.

        Returns:
          `owner(state) -> (N * N,) int8` for an unbatched finished `GoState`.
        """
        return lambda state: tromp_taylor_owner(state.board, self.size, jnp.bool_(True))

    def futile_moves(self):
        """Filling one of the mover's own true eyes (`envs.go_board.own_true_eyes`).

        Returns:
          `futile(state) -> (N * N + 1,) bool` for an unbatched live `GoState`; pass is
          never futile.
        """
        return lambda state: jnp.append(
            own_true_eyes(state.board, self.size, state.current_player), False)

    def result_text(self, state: GoState) -> str:
        """The area count of the final position.

        Args:
          state: an unbatched finished `GoState`.

        Returns:
          The line.
        """
        black, white = np.asarray(self.area_scores(state)).tolist()
        return f"Area: Black {black:g}, White {white:g} + komi {self.komi:g}"
