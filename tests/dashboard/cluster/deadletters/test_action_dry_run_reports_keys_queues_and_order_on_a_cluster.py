"""The tests of
``tests/dashboard/deadletters/test_action_dry_run_reports_keys_queues_and_order.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_action_dry_run_reports_keys_queues_and_order import (
    pytestmark,
    rate,
    test_it_counts_keys_and_queues_and_explains_continue,
    test_it_explains_queue_ordering_and_a_discard,
    test_it_says_a_held_key_replays_in_place_before_its_parked_messages,
)

__all__ = [
    "pytestmark",
    "rate",
    "test_it_counts_keys_and_queues_and_explains_continue",
    "test_it_explains_queue_ordering_and_a_discard",
    "test_it_says_a_held_key_replays_in_place_before_its_parked_messages",
]
