"""The tests of
``tests/dashboard/test_metrics_queue_health_gauges.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_metrics_queue_health_gauges import (
    pytestmark,
    test_a_dead_letter_replayed_or_discarded_no_longer_waits,
    test_it_counts_held_keys_and_the_dead_letters_waiting,
    test_it_counts_the_blocked_keys_the_lock_owner_reports,
    test_it_marks_the_queues_with_a_long_blocked_or_a_held_key_as_stuck,
    test_it_tells_silent_consumers_from_live_ones,
)

__all__ = [
    "pytestmark",
    "test_a_dead_letter_replayed_or_discarded_no_longer_waits",
    "test_it_counts_held_keys_and_the_dead_letters_waiting",
    "test_it_counts_the_blocked_keys_the_lock_owner_reports",
    "test_it_marks_the_queues_with_a_long_blocked_or_a_held_key_as_stuck",
    "test_it_tells_silent_consumers_from_live_ones",
]
