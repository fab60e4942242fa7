"""The devices a run trains on: host devices on a CPU, jax.distributed, the data mesh.

A run's self-play games, replay ring and learner batch are split over a one-axis mesh
(`DATA_AXIS`) of N devices; parameters and optimizer state are replicated. On a CPU,
JAX sees one device unless asked for more before it starts: `arrange(...)` does that
(one host device per core by default) and, for several processes, starts
`jax.distributed` with CPU collectives (gloo), so that every path runs on a laptop.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

from azjax.core.device_split import cannot_split, misfits
from azjax.core.iteration import DATA_AXIS
from azjax.run.process import peers


def cpu_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def arrange(devices: int = 0, coordinator_address: str | None = None,
            num_processes: int = 1, process_id: int = 0,
            heartbeat_timeout: float = peers.HEARTBEAT_TIMEOUT_S) -> None:
    """Sets up JAX's devices before its backend starts (ValueError after that, or for
    bad values): on a CPU, `devices // num_processes` host devices in this process (0:
    one per core); with `num_processes` > 1, joins the run's other processes through
    `jax.distributed` at `coordinator_address` (HOST:PORT) as process `process_id`, and
    watches them (`azjax.run.process.peers`): a process lost for `heartbeat_timeout` seconds
    ends this one in one line (0: no watch; JAX's coordination service then aborts
    after its own 100 s, with its stack trace). With `devices` 0 a count set in the
    environment (`JAX_NUM_CPU_DEVICES`) wins over one per core."""
    for name, value, low in (("devices", devices, 0), ("num_processes", num_processes, 1),
                             ("process_id", process_id, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"--{name.replace('_', '-')} must be an integer >= {low}, "
                             f"got {value!r}")
    if num_processes > 1:
        if not coordinator_address or ":" not in coordinator_address:
            raise ValueError("several processes need --coordinator-address HOST:PORT "
                             f"(got {coordinator_address!r})")
        if process_id >= num_processes:
            raise ValueError(f"--process-id must be below --num-processes ({num_processes}), "
                             f"got {process_id}")
        if devices % num_processes:
            raise ValueError(f"--devices {devices} cannot be split evenly over "
                             f"{num_processes} processes")
    elif coordinator_address:
        raise ValueError("--coordinator-address needs --num-processes of 2 or more")
    if isinstance(heartbeat_timeout, bool) or not isinstance(heartbeat_timeout, (int, float)) \
            or not 0 <= heartbeat_timeout < 1e6:
        raise ValueError("--heartbeat-timeout must be a number of seconds >= 0 (0: no watch "
                         f"on the other processes), got {heartbeat_timeout!r}")
    local = (devices // num_processes if devices
             else int(os.environ.get("JAX_NUM_CPU_DEVICES") or cpu_cores()))
    try:
        jax.config.update("jax_num_cpu_devices", local)
    except RuntimeError:  # JAX has started: too late to arrange anything
        if devices or num_processes > 1:
            raise ValueError("JAX has already started its devices; arrange them first "
                             "(call azjax.run.process.devices.arrange before anything runs "
                             "on JAX)") from None
        return
    if num_processes > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        # SIGTERM stays Python's: the driver stops at it with a checkpoint, agreed by
        # every process (`agreed_max`), instead of JAX's notifier swallowing it.
        jax.config.update("jax_enable_preemption_service", False)
        peers.initialize(coordinator_address, num_processes, process_id, heartbeat_timeout)


def is_primary() -> bool:
    """Whether this process writes the run directory (process 0)."""
    return jax.process_index() == 0


def device_count(requested: int, program: Any, warm_ups: Sequence[Any] = (),
                 available: int | None = None) -> tuple[int, str | None]:
    """The number of devices to train `program` (and its warm-up's) on, and a notice.

    Args:
      requested: a number of devices (`--devices`), or 0 for every device there is,
        fewer if a program does not split over all (the largest count every program
        splits over, said in the notice).
      program: the run's program (`ProgramConfig`).
      warm_ups: the programs of the run's warm-ups (`RunConfig.warm_up`), trained first
        on the same devices.
      available: the devices there are (default: `jax.device_count()`).

    Returns:
      The count and a notice (or None).

    Raises:
      ValueError: one line naming the devices and the nearest valid values, when
        `requested` devices are not there or a program does not split over them.
    """
    available = jax.device_count() if available is None else available
    if requested > available:
        raise ValueError(f"--devices {requested}: only {available} device"
                         f"{'s' if available > 1 else ''} here"
                         + ("" if jax.default_backend() != "cpu" else
                            " (a CPU is split into host devices before JAX starts: "
                            "azjax.run.process.devices.arrange, which the scripts call)"))

    def wrong(count: int) -> list[str]:
        found = misfits(program, count)
        for warm_up in warm_ups:
            found += [f"its warm-up's {phrase}" for phrase in misfits(warm_up, count)]
        return found

    count = requested or available
    if requested or jax.process_count() > 1:
        found = wrong(count)
        if found:
            raise ValueError(cannot_split(count, found))
        return count, None
    while wrong(count):
        count -= 1
    if count == available:
        return count, None
    return count, (f"training on {count} of the {available} devices: "
                   + "; ".join(wrong(available)))


def data_mesh(count: int) -> Mesh:
    """A one-axis mesh of the first `count` devices (every process's devices, in order)."""
    if jax.process_count() > 1 and count != jax.device_count():
        raise ValueError(f"a run of several processes trains on all {jax.device_count()} "
                         f"of their devices, not {count}")
    return Mesh(np.array(jax.devices()[:count]), (DATA_AXIS,))


def agree(value: Any) -> Any:
    """Process 0's `value` in every process (host decisions such as a time limit must be
    the same in all of them); `value` itself in a run of one process."""
    if jax.process_count() == 1:
        return value
    return multihost_utils.broadcast_one_to_all(np.asarray(value)).item()


def agreed_max(value: int) -> int:
    """The largest of every process's `value` (each process calls it at the same point):
    a stop one process decided, made the decision of all."""
    if jax.process_count() == 1:
        return int(value)
    return int(multihost_utils.process_allgather(np.asarray(value, np.int64)).max())


TEXT_BYTES = 1024


def first_text(text: str) -> str:
    """The first non-empty `text` of the processes in order ("" when every one's is
    empty), followed by the process that said it, the same in every process; `text`
    itself in one process."""
    if jax.process_count() == 1:
        return text
    data = np.zeros(TEXT_BYTES, np.uint8)
    raw = text.encode()[:TEXT_BYTES]
    data[:len(raw)] = np.frombuffer(raw, np.uint8)
    for process, row in enumerate(multihost_utils.process_allgather(data)):
        said = bytes(row).rstrip(b"\0").decode(errors="replace")
        if said:
            return f"{said} (process {process})"
    return ""


def spans_processes(tree: Any) -> bool:
    """Whether some array of `tree` lies partly on another process's devices."""
    return any(isinstance(x, jax.Array) and not x.is_fully_addressable
               for x in jax.tree.leaves(tree))


def barrier(name: str) -> None:
    """Waits until every process of the run gets here (nothing with one process)."""
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)


def local(tree: Any) -> Any:
    """A replicated pytree's copy on this process's first device (for host-side work
    such as evaluation, which each process does on its own)."""
    def one(x):
        if isinstance(x, jax.Array) and len(x.sharding.device_set) > 1:
            return x.addressable_data(0)
        return x
    return jax.tree.map(one, tree)


def peak_device_bytes() -> int | None:
    """The most memory any of this process's devices has held (`peak_bytes_in_use` of
    an accelerator's `memory_stats`); None where devices do not say (a CPU)."""
    peaks = [(device.memory_stats() or {}).get("peak_bytes_in_use")
             for device in jax.local_devices()]
    peaks = [int(p) for p in peaks if p is not None]
    return max(peaks) if peaks else None
