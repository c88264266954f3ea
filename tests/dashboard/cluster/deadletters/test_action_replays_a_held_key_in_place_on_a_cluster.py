"""The tests of
``tests/dashboard/deadletters/test_action_replays_a_held_key_in_place.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_action_replays_a_held_key_in_place import (
    no_rate_limit,
    pytestmark,
    test_it_releases_the_parked_messages_when_the_held_one_is_discarded,
    test_it_replays_the_held_message_in_place_before_the_parked_ones,
)

__all__ = [
    "no_rate_limit",
    "pytestmark",
    "test_it_releases_the_parked_messages_when_the_held_one_is_discarded",
    "test_it_replays_the_held_message_in_place_before_the_parked_ones",
]
