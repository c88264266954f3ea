"""The tests of
``tests/dashboard/reports/test_writer_gives_each_row_once_after_a_failure_before_its_cursor_moved.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.reports import (
    test_writer_gives_each_row_once_after_a_failure_before_its_cursor_moved as source,
)

analytics_uri = source.analytics_uri
producer = source.producer
pytestmark = source.pytestmark
test_it_rewrites_a_messages_batch_exactly_as_planned = (
    source.test_it_rewrites_a_messages_batch_exactly_as_planned
)
test_it_rewrites_an_events_batch_whose_cursor_did_not_move = (
    source.test_it_rewrites_an_events_batch_whose_cursor_did_not_move
)

__all__ = [
    "analytics_uri",
    "producer",
    "pytestmark",
    "test_it_rewrites_a_messages_batch_exactly_as_planned",
    "test_it_rewrites_an_events_batch_whose_cursor_did_not_move",
]
