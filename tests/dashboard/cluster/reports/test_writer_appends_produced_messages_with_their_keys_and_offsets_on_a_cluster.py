"""The tests of
``tests/dashboard/reports/test_writer_appends_produced_messages_with_their_keys_and_offsets.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.reports import (
    test_writer_appends_produced_messages_with_their_keys_and_offsets as source,
)

analytics_uri = source.analytics_uri
producer = source.producer
pytestmark = source.pytestmark
test_it_moves_past_entries_not_written_by_lockstep = (
    source.test_it_moves_past_entries_not_written_by_lockstep
)
test_it_writes_one_row_per_message_of_every_queue_of_every_topic = (
    source.test_it_writes_one_row_per_message_of_every_queue_of_every_topic
)

__all__ = [
    "analytics_uri",
    "producer",
    "pytestmark",
    "test_it_moves_past_entries_not_written_by_lockstep",
    "test_it_writes_one_row_per_message_of_every_queue_of_every_topic",
]
