"""A fixed-capacity on-device FIFO ring of self-play positions.

Positions are written as soon as they are played, before their game's outcome is known
(`has_z` False, `z` holding the position's ply); `resolve` fills in z when the game ends.
Only positions with a known z are ever sampled. Everything here is pure and runs inside
jit.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from flax import struct

from envs import State, Symmetries


@struct.dataclass
class Positions:
    """A batch of positions [N] as written to or sampled from the ring."""

    observation: chex.Array  # [N, *obs_shape] bool
    policy: chex.Array  # [N, A] float32 search policy pi
    player: chex.Array  # [N] int32 player to move
    search_value: chex.Array  # [N] float32 root value from the mover's view
    z: chex.Array  # [N] float32 outcome from the mover's view where has_z, else the ply
    has_z: chex.Array  # [N] bool outcome known
    slot: chex.Array  # [N] int32 self-play slot (game stream) that played it
    # Auxiliary targets, None unless the program trains them (known once has_z):
    ownership: chex.Array | None = None  # [N, cells] int8 final owners, player 0's view
    score: chex.Array | None = None  # [N] float32 final score margin, player 0's view
    # Playout cap randomisation only: the move had the full search (a policy target).
    full_search: chex.Array | None = None  # [N] bool
    # Auxiliary targets with resignation: the game reached its end (False: it was
    # resigned, so it has no final position and no auxiliary targets).
    has_final: chex.Array | None = None  # [N] bool
    # Reanalysis only: the game state the position was played from (a pytree of [N, ...]
    # leaves, never sampled into a batch).
    state: State | None = None


@struct.dataclass
class ReplayState:
    """The ring: `data` [capacity] plus the next write index and the fill count."""

    data: Positions
    insert_index: chex.Array  # [] int32
    size: chex.Array  # [] int32 number of written entries (<= capacity)

    @property
    def capacity(self) -> int:
        """Positions the ring holds."""
        return self.data.player.shape[0]


def init(
    capacity: int,
    observation_shape: tuple[int, ...],
    num_actions: int,
    observation_dtype=jnp.bool_,
    ownership_cells: int = 0,
    score: bool = False,
    full_search: bool = False,
    has_final: bool = False,
    state: State | None = None,
) -> ReplayState:
    """An empty ring of `capacity` positions.

    The optional fields of `Positions` are allocated only where asked for, so a program
    that does not train a target pays no memory for it.

    Args:
      capacity: positions the ring holds (N).
      observation_shape: the game's observation shape.
      num_actions: A.
      observation_dtype: the dtype observations are stored as.
      ownership_cells: > 0 for an `ownership` target of (N, cells) int8.
      score: whether to hold a `score` target (N,) float32.
      full_search: whether to hold `full_search` (N,) bool (playout cap randomisation).
      has_final: whether to hold `has_final` (N,) bool (auxiliary targets with
        resignation).
      state: with reanalysis, one (unbatched) state of the game: the ring keeps each
        position's state, every entry a copy of this one until written.

    Returns:
      A `ReplayState` with `data` of leading axis (N,) and `size` 0.
    """
    if capacity < 1:
        raise ValueError(f"replay capacity must be >= 1, got {capacity}")
    data = Positions(
        observation=jnp.zeros((capacity, *observation_shape), observation_dtype),
        policy=jnp.zeros((capacity, num_actions), jnp.float32),
        player=jnp.zeros(capacity, jnp.int32),
        search_value=jnp.zeros(capacity, jnp.float32),
        z=jnp.zeros(capacity, jnp.float32),
        has_z=jnp.zeros(capacity, jnp.bool_),
        slot=jnp.full(capacity, -1, jnp.int32),
        ownership=(jnp.zeros((capacity, ownership_cells), jnp.int8)
                   if ownership_cells else None),
        score=jnp.zeros(capacity, jnp.float32) if score else None,
        full_search=jnp.zeros(capacity, jnp.bool_) if full_search else None,
        has_final=jnp.zeros(capacity, jnp.bool_) if has_final else None,
        state=None if state is None else jax.tree.map(
            lambda x: jnp.repeat(jnp.asarray(x)[None], capacity, axis=0), state),
    )
    return ReplayState(data=data, insert_index=jnp.int32(0), size=jnp.int32(0))


def add(replay: ReplayState, positions: Positions) -> ReplayState:
    """Writes `positions` at the ring head, overwriting the oldest.

    Args:
      replay: the ring (capacity C).
      positions: (N, ...) with N <= C, of the same structure as `replay.data`.

    Returns:
      The ring with them written and its head and size moved on.
    """
    n = positions.player.shape[0]
    capacity = replay.capacity
    if n > capacity:
        raise ValueError(f"cannot write {n} positions into a ring of {capacity}")
    chex.assert_trees_all_equal_structs(replay.data, positions)
    indices = (replay.insert_index + jnp.arange(n)) % capacity
    data = jax.tree.map(lambda buf, new: buf.at[indices].set(new), replay.data, positions)
    return ReplayState(
        data=data,
        insert_index=(replay.insert_index + n) % capacity,
        size=jnp.minimum(replay.size + n, capacity),
    )


def discounted(outcome_p0: chex.Array, player: chex.Array, length: chex.Array,
               ply: chex.Array, discount: float) -> chex.Array:
    """The value target of positions, from the view of the player to move.

    Args:
      outcome_p0: (N,) float32: the game's result for player 0.
      player: (N,) int32: the player to move at each position.
      length: (N,) int32: the game's plies.
      ply: (N,) int32: the position's ply.
      discount: per-ply discount; 1 gives exactly the result.

    Returns:
      (N,) float32: the result from `player`'s view times `discount` to the power of
      the plies from the position to the game's end.
    """
    z = outcome_p0 * jnp.where(player == 0, 1.0, -1.0)
    if discount == 1.0:
        return z
    return z * jnp.power(jnp.float32(discount), jnp.maximum(length - 1 - ply, 0))


def resolve(replay: ReplayState, slot_ended: chex.Array, slot_outcome: chex.Array,
            slot_length: chex.Array | None = None, discount: float = 1.0,
            slot_final: dict[str, chex.Array] | None = None) -> ReplayState:
    """Fills in z for the pending positions of games that have just ended.

    Each slot plays one game at a time, so a slot's pending positions all belong to its
    current game: the slot alone says which game a position is from.

    Args:
      replay: the ring.
      slot_ended: (S,) bool: which slots' games ended.
      slot_outcome: (S,) float32: that game's result for player 0.
      slot_length: (S,) int32: its plies; needed only with a `discount` below 1.
      discount: per-ply discount of the outcome (`discounted`).
      slot_final: the ended games' auxiliary targets by field name ('ownership'
        (S, cells), 'score' (S,)), written to those positions too.

    Returns:
      The ring with those positions' `z` and `has_z` (and targets) set.
    """
    data = replay.data
    slot = jnp.clip(data.slot, 0, slot_ended.shape[0] - 1)
    ended = (~data.has_z) & (data.slot >= 0) & slot_ended[slot]
    length = 0 if slot_length is None else slot_length[slot]
    if discount != 1.0 and slot_length is None:
        raise ValueError("a discount below 1 needs the games' lengths")
    outcome = discounted(slot_outcome[slot], data.player, length, data.z, discount)
    finals = {}
    for name, value in (slot_final or {}).items():
        stored = getattr(data, name)
        mask = ended.reshape(ended.shape + (1,) * (stored.ndim - 1))
        finals[name] = jnp.where(mask, value[slot].astype(stored.dtype), stored)
    data = data.replace(
        z=jnp.where(ended, outcome, data.z), has_z=data.has_z | ended, **finals
    )
    return replay.replace(data=data)


def num_sampleable(replay: ReplayState) -> chex.Array:
    """How many positions have a known outcome.

    Args:
      replay: the ring.

    Returns:
      () int32.
    """
    return jnp.sum(replay.data.has_z)


def sample(
    replay: ReplayState,
    key: chex.PRNGKey,
    batch_size: int,
    symmetries: Symmetries | None = None,
) -> Positions:
    """Uniformly samples `batch_size` positions with known z (with replacement).

    If nothing is sampleable yet, entries are drawn from the whole ring and have `has_z`
    False, so that the compiled program needs no branch and callers mask them out.

    Args:
      replay: the ring.
      key: PRNG key (consumed).
      batch_size: M.
      symmetries: with them, each sample gets an independent uniformly random symmetry
        of the game (augmentation on sampling).

    Returns:
      `Positions` of leading axis (M,), e.g. `observation` (M, *observation_shape);
      `state` None.
    """
    index_key, sym_key = jax.random.split(key)
    weights = replay.data.has_z.astype(jnp.float32)
    weights = jnp.where(jnp.sum(weights) > 0, weights, jnp.ones_like(weights))
    indices = jax.random.choice(
        index_key, replay.capacity, shape=(batch_size,), p=weights / jnp.sum(weights)
    )
    batch = jax.tree.map(lambda x: x[indices], replay.data.replace(state=None))
    if symmetries is None:
        return batch
    g = jax.random.randint(sym_key, (batch_size,), 0, symmetries.size)
    return transformed(batch, symmetries, g)


def transformed(positions: Positions, symmetries: Symmetries, g: chex.Array) -> Positions:
    """`positions` under one symmetry each: observations, policies and ownership maps.

    Args:
      positions: (N, ...) positions.
      symmetries: the game's symmetry group.
      g: (N,) int32: the symmetry applied to each position.

    Returns:
      The transformed positions, same shapes.
    """
    changes = {}
    if positions.ownership is not None:
        changes["ownership"] = jax.vmap(lambda o, gi: o[symmetries.cell_perm[gi]])(
            positions.ownership, g)
    return positions.replace(
        observation=jax.vmap(symmetries.observation)(positions.observation, g),
        policy=jax.vmap(symmetries.policy)(positions.policy, g),
        **changes,
    )


def augment_all(positions: Positions, symmetries: Symmetries) -> Positions:
    """Every symmetric copy of every position (augmentation on writing).

    Args:
      positions: (N, ...) positions.
      symmetries: the game's symmetry group, of size G.

    Returns:
      (G * N, ...) positions, the copies of symmetry g at [g * N, (g + 1) * N).
    """
    g = jnp.arange(symmetries.size)

    def one(gi):
        return transformed(positions, symmetries, jnp.full(positions.player.shape[0], gi))

    copies = jax.vmap(one)(g)
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), copies)
