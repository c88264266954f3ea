"""The tests of
``tests/dashboard/alerts/test_a_poison_message_under_queue_ordering_raises_queue_stuck.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.alerts.test_a_poison_message_under_queue_ordering_raises_queue_stuck import (
    pytestmark,
    test_it_raises_queue_stuck_and_resolves_after_the_fix,
)

__all__ = [
    "pytestmark",
    "test_it_raises_queue_stuck_and_resolves_after_the_fix",
]
