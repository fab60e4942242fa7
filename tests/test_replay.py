"""The on-device replay ring (`azjax/replay.py`) against a NumPy reference."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from azjax.core import replay as replay_lib

OBS_SHAPE = (3, 3, 3)
NUM_ACTIONS = 9
FIELDS = ("observation", "policy", "player", "search_value", "z", "has_z", "slot")


def random_positions(rng, n, num_slots=4):
    return dict(
        observation=rng.random((n, *OBS_SHAPE)) < 0.5,
        policy=rng.random((n, NUM_ACTIONS)).astype(np.float32),
        player=rng.integers(0, 2, n).astype(np.int32),
        search_value=rng.uniform(-1, 1, n).astype(np.float32),
        z=rng.choice(np.array([-1.0, 0.0, 1.0], np.float32), n),
        has_z=rng.random(n) < 0.3,
        slot=rng.integers(0, num_slots, n).astype(np.int32),
    )


def to_positions(d):
    return replay_lib.Positions(**{k: jnp.asarray(v) for k, v in d.items()})


class RefRing:
    """Plain NumPy FIFO ring with the same layout."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.data = dict(
            observation=np.zeros((capacity, *OBS_SHAPE), bool),
            policy=np.zeros((capacity, NUM_ACTIONS), np.float32),
            player=np.zeros(capacity, np.int32),
            search_value=np.zeros(capacity, np.float32),
            z=np.zeros(capacity, np.float32),
            has_z=np.zeros(capacity, bool),
            slot=np.full(capacity, -1, np.int32),
        )
        self.insert_index = 0
        self.size = 0

    def add(self, positions):
        n = len(positions["player"])
        for j in range(n):
            for k in FIELDS:
                self.data[k][self.insert_index] = positions[k][j]
            self.insert_index = (self.insert_index + 1) % self.capacity
        self.size = min(self.size + n, self.capacity)


def assert_ring_equal(ring, ref):
    host = jax.device_get(ring)
    for k in FIELDS:
        np.testing.assert_array_equal(getattr(host.data, k), ref.data[k], err_msg=k)
    assert int(host.insert_index) == ref.insert_index
    assert int(host.size) == ref.size


def d4_images(obs, policy):
    """The 8 (observation, policy) images of one position, by numpy rotations/flips of
    the 3x3 grid applied to both (independent of the library's permutation tables)."""
    grid_pi = policy.reshape(3, 3)
    out = []
    for k in range(4):
        for flip in (False, True):
            o = np.rot90(obs, k, axes=(0, 1))
            p = np.rot90(grid_pi, k)
            if flip:
                o, p = np.flip(o, axis=1), np.flip(p, axis=1)
            out.append((np.ascontiguousarray(o), np.ascontiguousarray(p).reshape(-1)))
    return out


@pytest.fixture(scope="module")
def jit_add():
    return jax.jit(replay_lib.add)


@pytest.fixture(scope="module")
def env():
    return envs.make("tictactoe")


CAPACITY = 37  # prime: not divisible by any write size used below
ADD_SIZES = (1, 5, 8, 16, 37)


@settings(deadline=None, max_examples=25)
@given(
    sizes=st.lists(st.sampled_from(ADD_SIZES), min_size=1, max_size=14),
    seed=st.integers(0, 2**31 - 1),
)
def test_add_matches_reference(jit_add, sizes, seed):
    rng = np.random.default_rng(seed)
    ring = replay_lib.init(CAPACITY, OBS_SHAPE, NUM_ACTIONS)
    ref = RefRing(CAPACITY)
    assert_ring_equal(ring, ref)
    for n in sizes:
        pos = random_positions(rng, n)
        ring = jit_add(ring, to_positions(pos))
        ref.add(pos)
        assert_ring_equal(ring, ref)


def test_add_wraps_around(jit_add):
    """A deterministic sequence that crosses the end of the ring several times."""
    rng = np.random.default_rng(3)
    ring = replay_lib.init(CAPACITY, OBS_SHAPE, NUM_ACTIONS)
    ref = RefRing(CAPACITY)
    # 16+16 = 32, then 8 crosses the end (32..36, 0..2), then a full write, and so on.
    for n in (16, 16, 8, 37, 5, 16, 16, 16):
        pos = random_positions(rng, n)
        ring = jit_add(ring, to_positions(pos))
        ref.add(pos)
        assert_ring_equal(ring, ref)
    # Hand check: total written 16+16+8+37+5+16+16+16 = 130, and 130 % 37 = 19.
    assert int(ring.insert_index) == 19
    assert int(ring.size) == CAPACITY


@pytest.mark.parametrize("discount", [1.0, 0.8])
def test_resolve_matches_reference(discount):
    rng = np.random.default_rng(21)
    num_slots = 6
    f = jax.jit(replay_lib.resolve, static_argnums=4)
    for trial in range(10):
        capacity = 50
        data = random_positions(rng, capacity, num_slots)
        # Some entries never written.
        never = rng.random(capacity) < 0.2
        data["slot"][never] = -1
        data["has_z"][never] = False
        # A pending position holds its ply.
        data["z"][~data["has_z"]] = rng.integers(0, 9, (~data["has_z"]).sum())
        ring = replay_lib.ReplayState(
            data=to_positions(data), insert_index=jnp.int32(0), size=jnp.int32(capacity)
        )
        slot_ended = rng.random(num_slots) < 0.5
        slot_outcome = rng.choice(np.array([-1.0, 0.0, 1.0], np.float32), num_slots)
        slot_length = rng.integers(1, 12, num_slots).astype(np.int32)
        out = jax.device_get(f(ring, jnp.asarray(slot_ended), jnp.asarray(slot_outcome),
                               jnp.asarray(slot_length), discount))

        want_z, want_has = data["z"].copy(), data["has_z"].copy()
        for i in range(capacity):
            s = data["slot"][i]
            if s >= 0 and not data["has_z"][i] and slot_ended[s]:
                sign = 1.0 if data["player"][i] == 0 else -1.0
                plies_left = max(int(slot_length[s]) - 1 - int(data["z"][i]), 0)
                want_z[i] = slot_outcome[s] * sign * discount ** plies_left
                want_has[i] = True
        np.testing.assert_allclose(out.data.z, want_z, rtol=1e-6)
        np.testing.assert_array_equal(out.data.has_z, want_has)
        for k in ("observation", "policy", "player", "search_value", "slot"):
            np.testing.assert_array_equal(getattr(out.data, k), data[k], err_msg=k)
        assert int(out.insert_index) == 0 and int(out.size) == capacity


def test_a_discount_needs_the_game_lengths():
    ring = replay_lib.init(4, OBS_SHAPE, NUM_ACTIONS)
    with pytest.raises(ValueError, match="lengths"):
        replay_lib.resolve(ring, jnp.ones(2, bool), jnp.ones(2), None, 0.9)


def test_resolve_hand_example():
    # Ring of 5: slot 0 player 0 pending, slot 0 player 1 pending, slot 1 pending,
    # slot 0 already resolved (z=0.5 must stay), never written (slot -1).
    ring = replay_lib.init(5, OBS_SHAPE, NUM_ACTIONS)
    data = ring.data.replace(
        player=jnp.array([0, 1, 0, 1, 0], jnp.int32),
        slot=jnp.array([0, 0, 1, 0, -1], jnp.int32),
        has_z=jnp.array([False, False, False, True, False]),
        z=jnp.array([0.0, 0.0, 0.0, 0.5, 0.0], jnp.float32),
    )
    ring = ring.replace(data=data)
    # Slot 0's game ended with player 0 winning (+1); slot 1 still running.
    out = replay_lib.resolve(ring, jnp.array([True, False]), jnp.array([1.0, -1.0]))
    # Player 0 gets +1, player 1 gets -1; slot 1 and the resolved/unwritten stay.
    np.testing.assert_array_equal(np.asarray(out.data.z), [1.0, -1.0, 0.0, 0.5, 0.0])
    np.testing.assert_array_equal(
        np.asarray(out.data.has_z), [True, True, False, True, False]
    )


def _identifiable_ring(capacity, resolved):
    """A ring whose entries are told apart by search_value == index."""
    rng = np.random.default_rng(8)
    data = random_positions(rng, capacity)
    data["search_value"] = np.arange(capacity, dtype=np.float32)
    data["has_z"] = resolved
    # Policies with 9 distinct values so the image of a policy identifies the symmetry.
    data["policy"] = np.stack([rng.permutation(9) for _ in range(capacity)]).astype(np.float32)
    ring = replay_lib.ReplayState(
        data=to_positions(data), insert_index=jnp.int32(0), size=jnp.int32(capacity)
    )
    return ring, data


SAMPLE_CAPACITY = 64
NUM_SAMPLES = 4096


@pytest.fixture(scope="module")
def resolved_ring():
    rng = np.random.default_rng(99)
    resolved = np.zeros(SAMPLE_CAPACITY, bool)
    resolved[rng.choice(SAMPLE_CAPACITY, 24, replace=False)] = True
    return _identifiable_ring(SAMPLE_CAPACITY, resolved)


def test_sample_only_resolved_and_uniform(resolved_ring):
    ring, data = resolved_ring
    out = jax.device_get(
        jax.jit(replay_lib.sample, static_argnums=2)(ring, jax.random.key(0), NUM_SAMPLES)
    )
    idx = out.search_value.astype(int)
    assert np.all(data["has_z"][idx])
    assert np.all(out.has_z)
    for k in FIELDS:
        np.testing.assert_array_equal(getattr(out, k), data[k][idx], err_msg=k)
    # Uniform over the 24 resolved entries: expected 4096/24 ~ 170.7 each, sd ~ 12.8.
    counts = np.bincount(idx, minlength=SAMPLE_CAPACITY)[data["has_z"]]
    assert counts.min() > 110 and counts.max() < 235, counts
    expected = NUM_SAMPLES / 24
    chi2 = np.sum((counts - expected) ** 2 / expected)
    assert chi2 < 70  # df = 23: the 99.99th percentile is about 57


def test_sample_with_symmetries(resolved_ring, env):
    ring, data = resolved_ring
    out = jax.device_get(
        jax.jit(replay_lib.sample, static_argnums=2)(
            ring, jax.random.key(1), 1024, env.symmetries
        )
    )
    idx = out.search_value.astype(int)
    assert np.all(data["has_z"][idx])
    images_used = np.zeros(8, int)
    for i in range(len(idx)):
        images = d4_images(data["observation"][idx[i]], data["policy"][idx[i]])
        # The policy has 9 distinct values, so exactly one image matches it; the
        # observation must be the image under that same symmetry.
        matches = [k for k, (_, p) in enumerate(images) if np.array_equal(p, out.policy[i])]
        assert len(matches) == 1, i
        k = matches[0]
        np.testing.assert_array_equal(out.observation[i], images[k][0])
        images_used[k] += 1
    # Non-augmented fields are copied as stored.
    for k in ("player", "z", "has_z", "slot"):
        np.testing.assert_array_equal(getattr(out, k), data[k][idx], err_msg=k)
    # Every symmetry is drawn (1024 / 8 = 128 expected each).
    assert images_used.min() > 70, images_used


def test_sample_with_nothing_resolved():
    ring, data = _identifiable_ring(16, np.zeros(16, bool))
    out = jax.device_get(
        jax.jit(replay_lib.sample, static_argnums=2)(ring, jax.random.key(2), 512)
    )
    assert not np.any(out.has_z)
    idx = out.search_value.astype(int)
    np.testing.assert_array_equal(out.policy, data["policy"][idx])
    # Drawn from the whole ring.
    assert len(np.unique(idx)) == 16
    assert int(replay_lib.num_sampleable(ring)) == 0


def test_num_sampleable(resolved_ring):
    ring, data = resolved_ring
    assert int(replay_lib.num_sampleable(ring)) == int(data["has_z"].sum()) == 24


def test_augment_all(env):
    rng = np.random.default_rng(4)
    n = 5
    data = random_positions(rng, n)
    data["policy"] = np.stack([rng.permutation(9) for _ in range(n)]).astype(np.float32)
    sym = env.symmetries
    out = jax.device_get(replay_lib.augment_all(to_positions(data), sym))
    assert out.observation.shape == (8 * n, *OBS_SHAPE)
    assert out.policy.shape == (8 * n, NUM_ACTIONS)
    for j in range(n):
        images = d4_images(data["observation"][j], data["policy"][j])
        got = [(out.observation[g * n + j], out.policy[g * n + j]) for g in range(8)]
        # Each of the 8 copies is a different image, matching obs and policy together.
        found = []
        for o, p in got:
            k = [k for k, (io, ip) in enumerate(images)
                 if np.array_equal(io, o) and np.array_equal(ip, p)]
            assert len(k) == 1
            found.append(k[0])
        assert sorted(found) == list(range(8))
        # Copy g is the library's symmetry g (index 0 is the identity).
        for g in range(8):
            np.testing.assert_array_equal(
                out.observation[g * n + j],
                np.asarray(sym.observation(jnp.asarray(data["observation"][j]), g)),
            )
        np.testing.assert_array_equal(out.observation[j], data["observation"][j])
        for k in ("player", "search_value", "z", "has_z", "slot"):
            np.testing.assert_array_equal(
                getattr(out, k)[j::n], np.repeat(data[k][j], 8), err_msg=k
            )


def test_init_rejects_zero_capacity():
    with pytest.raises(ValueError):
        replay_lib.init(0, OBS_SHAPE, NUM_ACTIONS)
    with pytest.raises(ValueError):
        replay_lib.init(-3, OBS_SHAPE, NUM_ACTIONS)


def test_init_is_empty():
    ring = replay_lib.init(7, OBS_SHAPE, NUM_ACTIONS)
    assert ring.capacity == 7
    assert int(ring.size) == 0 and int(ring.insert_index) == 0
    assert np.all(np.asarray(ring.data.slot) == -1)
    assert not np.any(np.asarray(ring.data.has_z))


def test_add_more_than_capacity_raises():
    ring = replay_lib.init(4, OBS_SHAPE, NUM_ACTIONS)
    pos = to_positions(random_positions(np.random.default_rng(0), 5))
    with pytest.raises(ValueError):
        replay_lib.add(ring, pos)
    # Exactly capacity is fine and fills the ring.
    pos4 = to_positions(random_positions(np.random.default_rng(0), 4))
    out = replay_lib.add(ring, pos4)
    assert int(out.size) == 4 and int(out.insert_index) == 0
