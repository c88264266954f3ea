"""The tests of
``tests/dashboard/test_metrics_endpoint.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_metrics_endpoint import (
    pytestmark,
    test_it_answers_without_login_in_the_text_format,
    test_it_reports_the_numbers_of_a_constructed_case,
    test_its_counters_never_go_down_when_old_events_are_pruned,
)

__all__ = [
    "pytestmark",
    "test_it_answers_without_login_in_the_text_format",
    "test_it_reports_the_numbers_of_a_constructed_case",
    "test_its_counters_never_go_down_when_old_events_are_pruned",
]
