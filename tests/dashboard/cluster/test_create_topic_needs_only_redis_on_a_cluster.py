"""The tests of
``tests/dashboard/test_create_topic_needs_only_redis.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_create_topic_needs_only_redis import (
    test_it_creates_the_topic_without_a_migrated_database,
)

__all__ = [
    "test_it_creates_the_topic_without_a_migrated_database",
]
