"""The tests of
``tests/dashboard/alerts/test_a_killed_consumer_raises_consumer_lost_and_queue_unowned.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.alerts.test_a_killed_consumer_raises_consumer_lost_and_queue_unowned import (
    consumer,
    pytestmark,
    test_it_raises_consumer_lost_and_queue_unowned,
)

__all__ = [
    "consumer",
    "pytestmark",
    "test_it_raises_consumer_lost_and_queue_unowned",
]
