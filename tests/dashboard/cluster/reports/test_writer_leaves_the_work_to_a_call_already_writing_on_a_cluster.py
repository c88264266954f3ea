"""The tests of
``tests/dashboard/reports/test_writer_leaves_the_work_to_a_call_already_writing.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.reports.test_writer_leaves_the_work_to_a_call_already_writing import (
    analytics_uri,
    pytestmark,
    test_it_writes_nothing_while_another_call_holds_the_lock,
)

__all__ = [
    "analytics_uri",
    "pytestmark",
    "test_it_writes_nothing_while_another_call_holds_the_lock",
]
