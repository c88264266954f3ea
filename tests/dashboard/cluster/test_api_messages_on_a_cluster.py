"""The tests of
``tests/dashboard/test_api_messages.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_api_messages import (
    pytestmark,
    test_it_answers_an_anonymous_visitor_with_401_json,
    test_it_answers_bad_or_unknown_lookups_in_json,
    test_it_renders_the_lookup_form_and_results,
    test_it_shows_dead_lettered_and_parked_messages_per_group,
    test_it_tells_handled_retrying_and_pending_apart,
)

__all__ = [
    "pytestmark",
    "test_it_answers_an_anonymous_visitor_with_401_json",
    "test_it_answers_bad_or_unknown_lookups_in_json",
    "test_it_renders_the_lookup_form_and_results",
    "test_it_shows_dead_lettered_and_parked_messages_per_group",
    "test_it_tells_handled_retrying_and_pending_apart",
]
