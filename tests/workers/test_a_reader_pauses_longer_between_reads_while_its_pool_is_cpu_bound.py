"""The thread that reads for a pool's waiting queues (the reader, a cluster's armer)
pauses after a read: briefly while the process has CPU to spare, so a wake-up waits
little, and longer while the pool is CPU-bound, so that each read finds more entries per
queue (docs/reading.md, "The runners")."""

from __future__ import annotations

import redis

from lockstep.workers.ordering.scheduler import READ_LINGER_S, SATURATED_LINGER_S, QueuePool


def _pool() -> QueuePool:
    # No command is sent: redis-py connects on the first one.
    return QueuePool(redis.Redis(port=1), threads=4, name="linger")


def test_a_pool_not_measured_yet_pauses_briefly() -> None:
    assert _pool().linger_s(READ_LINGER_S) == READ_LINGER_S


def test_a_cpu_bound_pool_pauses_longer() -> None:
    pool = _pool()
    pool._cpu.saturated = True
    assert pool.linger_s(READ_LINGER_S) == SATURATED_LINGER_S
    assert SATURATED_LINGER_S > READ_LINGER_S


def test_a_pool_that_has_cpu_to_spare_again_pauses_briefly_again() -> None:
    pool = _pool()
    pool._cpu.saturated = True
    pool._cpu.saturated = False
    assert pool.linger_s(0.002) == 0.002
