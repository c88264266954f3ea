"""The rebalance benchmark counts a queue as owned twice only when two consumers could
consume it at the same instant: both workers not stopped and both believing their
client-side lock valid. The workers of every process record when that was (their
``valid_segments``); the benchmark compares those intervals, so a worker whose lock went
stale (it may not invoke the handler, its writes are fenced) does not count, and workers
of different processes compare on the machine's one monotonic clock."""

from __future__ import annotations

from array import array

from bench.rebalance_sampler import LockSamples, against_locks, double_owned

EXPIRY_S = 3.0


def test_two_consumers_owning_one_queue_at_one_instant_are_double_ownership() -> None:
    segments = [(0, "a", 0.0, 3.0, None), (0, "b", 2.0, 5.0, None)]

    most, seconds = double_owned(segments)

    assert most == 1
    assert abs(seconds - 1.0) < 1e-9


def test_a_successor_starting_when_the_stale_lock_expired_is_not_double_ownership() -> None:
    # "a" was renewed at 0 and never again: it stopped believing in its lock at 3.0.
    segments = [(0, "a", 0.0, 0.0 + EXPIRY_S, None), (0, "b", 3.0, 9.0, None)]

    assert double_owned(segments) == (0, 0.0)


def test_two_workers_of_one_consumer_and_overlaps_on_different_queues() -> None:
    same_consumer = [(0, "a", 0.0, 3.0, None), (0, "a", 1.0, 4.0, None)]
    two_queues = [
        (1, "a", 0.0, 3.0, None),
        (1, "b", 1.0, 4.0, None),
        (2, "c", 2.0, 5.0, None),
        (2, "d", 2.5, 6.0, None),
    ]

    assert double_owned(same_consumer) == (0, 0.0)
    assert double_owned(two_queues)[0] == 2  # both owned twice during [2.5, 3.0)


def test_a_worker_owning_through_a_lock_read_that_names_another_owner_counts() -> None:
    locks = LockSamples()
    locks.add(1.0, 1.1, {0: "b"}, 1)
    locks.add(2.0, 2.1, {}, 1)

    assert against_locks([(0, "a", 0.0, 3.0, None)], locks) == (1, 1)
    # Dropped before the reads: it takes no new message, so it does not count.
    assert against_locks([(0, "a", 0.0, 3.0, 0.5)], locks) == (0, 0)
    # Owning over only part of a read does not count either.
    assert against_locks([(0, "a", 1.05, 3.0, None)], locks) == (0, 1)
    assert locks.owners[0] == array("i", [0])
