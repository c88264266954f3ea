"""The tests of
``tests/dashboard/test_api_messages_refuses_offsets_beyond_redis_integers.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_api_messages_refuses_offsets_beyond_redis_integers import (
    pytestmark,
    test_it_refuses_numbers_beyond_redis_integers,
    test_the_largest_redis_integer_is_looked_up_and_not_found,
)

__all__ = [
    "pytestmark",
    "test_it_refuses_numbers_beyond_redis_integers",
    "test_the_largest_redis_integer_is_looked_up_and_not_found",
]
