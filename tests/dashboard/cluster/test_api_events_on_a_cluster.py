"""The tests of
``tests/dashboard/test_api_events.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_api_events import (
    pytestmark,
    test_it_answers_an_anonymous_visitor_with_401_json,
    test_it_answers_bad_parameters_with_400_json,
    test_it_filters_by_topic_group_queue_type_and_key,
    test_it_pages_forward_after_an_event_without_skipping_any,
    test_it_pages_on_after_an_event_the_ingester_made_up,
    test_it_restarts_from_the_newest_when_the_cursor_is_not_stored,
    test_it_shows_the_runtimes_lock_events_on_the_page,
)

__all__ = [
    "pytestmark",
    "test_it_answers_an_anonymous_visitor_with_401_json",
    "test_it_answers_bad_parameters_with_400_json",
    "test_it_filters_by_topic_group_queue_type_and_key",
    "test_it_pages_forward_after_an_event_without_skipping_any",
    "test_it_pages_on_after_an_event_the_ingester_made_up",
    "test_it_restarts_from_the_newest_when_the_cursor_is_not_stored",
    "test_it_shows_the_runtimes_lock_events_on_the_page",
]
