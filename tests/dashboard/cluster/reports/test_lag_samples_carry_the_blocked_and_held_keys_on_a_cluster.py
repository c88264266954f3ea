"""The tests of
``tests/dashboard/reports/test_lag_samples_carry_the_blocked_and_held_keys.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.reports.test_lag_samples_carry_the_blocked_and_held_keys import (
    analytics_uri,
    pytestmark,
    test_it_lists_a_key_blocked_behind_its_failing_message,
    test_it_lists_a_key_held_behind_its_dead_letter_with_its_parked_messages,
    test_it_names_the_retried_head_message_of_a_queue_ordered_group,
)

__all__ = [
    "analytics_uri",
    "pytestmark",
    "test_it_lists_a_key_blocked_behind_its_failing_message",
    "test_it_lists_a_key_held_behind_its_dead_letter_with_its_parked_messages",
    "test_it_names_the_retried_head_message_of_a_queue_ordered_group",
]
