"""The tests of
``tests/dashboard/reports/test_writer_continues_a_stream_trimmed_past_its_cursor.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.reports.test_writer_continues_a_stream_trimmed_past_its_cursor import (
    analytics_uri,
    producer,
    pytestmark,
    test_it_continues_after_the_trimmed_offsets_and_says_how_many_were_missed,
)

__all__ = [
    "analytics_uri",
    "producer",
    "pytestmark",
    "test_it_continues_after_the_trimmed_offsets_and_says_how_many_were_missed",
]
