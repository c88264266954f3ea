"""The tests of
``tests/dashboard/test_api_consumers.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_api_consumers import (
    pytestmark,
    test_it_answers_an_anonymous_visitor_with_401_json,
    test_it_lists_each_instance_with_its_assigned_queues,
    test_it_lists_no_consumer_once_they_stopped,
)

__all__ = [
    "pytestmark",
    "test_it_answers_an_anonymous_visitor_with_401_json",
    "test_it_lists_each_instance_with_its_assigned_queues",
    "test_it_lists_no_consumer_once_they_stopped",
]
