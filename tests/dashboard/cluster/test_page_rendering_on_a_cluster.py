"""The tests of
``tests/dashboard/test_page_rendering.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_page_rendering import (
    pytestmark,
    test_it_keeps_the_overview_shape_and_adds_stats,
    test_it_renders_the_group_page_with_each_queue,
    test_it_renders_the_queue_page_with_chart_data_timeline_and_retries,
)

__all__ = [
    "pytestmark",
    "test_it_keeps_the_overview_shape_and_adds_stats",
    "test_it_renders_the_group_page_with_each_queue",
    "test_it_renders_the_queue_page_with_chart_data_timeline_and_retries",
]
