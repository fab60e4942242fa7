"""Replay sampling split over two host devices, as the training iteration does it: run
as a script (`python tests/two_devices.py N`), prints JSON counts for tests/test_devices.py.

A ring of 16 entries is split 8 + 8 over the devices; entries 1, 3, 4, 6 of each half
are sampleable (a known outcome), the others not. Each of N rounds, each device samples
2 positions from its own half with its own key (`azjax.core.iteration.device_key`), as the learner
does.
"""

from __future__ import annotations

import json
import sys

import jax

jax.config.update("jax_num_cpu_devices", 2)

import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from azjax.core import replay as replay_lib
from azjax.core.iteration import DATA_AXIS, device_key
from azjax.run.process.devices import data_mesh

SAMPLEABLE = [1, 3, 4, 6, 9, 11, 12, 14]


def main(rounds: int) -> dict:
    ring = replay_lib.init(16, (1,), 2)
    data = ring.data.replace(
        has_z=jnp.zeros(16, bool).at[jnp.array(SAMPLEABLE)].set(True),
        player=jnp.arange(16, dtype=jnp.int32),  # each entry names its global index
    )
    ring = ring.replace(data=data)
    mesh = data_mesh(2)
    specs = ring.replace(data=jax.tree.map(lambda _: P(DATA_AXIS), data), insert_index=P(),
                         size=P())

    def draw(ring, key):
        keys = jax.random.split(key, rounds)
        picks = jax.vmap(lambda k: replay_lib.sample(ring, device_key(k, 2), 2).player)(keys)
        return picks.T  # [2, rounds]: one row per sample slot of this device

    sample = jax.jit(jax.shard_map(draw, mesh=mesh, in_specs=(specs, P()),
                                   out_specs=P(DATA_AXIS), check_vma=False))
    picks = jax.device_get(sample(ring, jax.random.key(0)))  # [4, rounds]
    first, second = picks[:2], picks[2:]  # device 0's samples, device 1's
    counts = [int((picks == i).sum()) for i in range(16)]
    return {
        "counts": counts,
        "first_device": sorted({int(i) for i in first.ravel()}),
        "second_device": sorted({int(i) for i in second.ravel()}),
        "same_local_index": int((first % 8 == second % 8).sum()),
        "draws": int(picks.size),
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
