"""The tests of
``tests/dashboard/reports/test_writer_writes_nothing_new_on_a_second_call.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.reports.test_writer_writes_nothing_new_on_a_second_call import (
    analytics_uri,
    producer,
    pytestmark,
    test_it_writes_nothing_when_nothing_arrived_and_only_the_news_later,
)

__all__ = [
    "analytics_uri",
    "producer",
    "pytestmark",
    "test_it_writes_nothing_when_nothing_arrived_and_only_the_news_later",
]
