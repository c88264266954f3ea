"""The tests of
``tests/dashboard/test_group_page_counts_held_keys_as_stuck.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_group_page_counts_held_keys_as_stuck import (
    pytestmark,
    test_it_counts_a_held_key_as_stuck_on_the_overview_and_the_group_page_alike,
)

__all__ = [
    "pytestmark",
    "test_it_counts_a_held_key_as_stuck_on_the_overview_and_the_group_page_alike",
]
