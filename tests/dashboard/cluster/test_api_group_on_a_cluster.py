"""The tests of
``tests/dashboard/test_api_group.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_api_group import (
    pytestmark,
    test_it_answers_404_json_for_an_unknown_topic_or_group,
    test_it_answers_an_anonymous_visitor_with_401_json,
    test_it_lists_blocked_keys_and_lanes_under_key_ordering,
    test_it_lists_parked_keys_held_after_a_dead_letter,
    test_it_shows_each_queue_held_by_the_consumer_with_its_offsets,
)

__all__ = [
    "pytestmark",
    "test_it_answers_404_json_for_an_unknown_topic_or_group",
    "test_it_answers_an_anonymous_visitor_with_401_json",
    "test_it_lists_blocked_keys_and_lanes_under_key_ordering",
    "test_it_lists_parked_keys_held_after_a_dead_letter",
    "test_it_shows_each_queue_held_by_the_consumer_with_its_offsets",
]
