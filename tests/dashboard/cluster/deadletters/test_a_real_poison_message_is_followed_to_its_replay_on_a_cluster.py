"""The tests of
``tests/dashboard/deadletters/test_a_real_poison_message_is_followed_to_its_replay.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_a_real_poison_message_is_followed_to_its_replay import (
    pytestmark,
    test_it_follows_a_poison_message_from_dead_letter_to_successful_replay,
)

__all__ = [
    "pytestmark",
    "test_it_follows_a_poison_message_from_dead_letter_to_successful_replay",
]
