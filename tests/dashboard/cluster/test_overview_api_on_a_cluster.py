"""The tests of
``tests/dashboard/test_overview_api.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_overview_api import (
    pytestmark,
    test_it_answers_an_anonymous_visitor_with_401_json,
    test_it_reports_owner_offsets_and_lag_as_the_runtime_left_them,
    test_it_sends_an_anonymous_visitor_from_the_page_to_the_login_form,
    test_it_shows_a_logged_in_user_the_page_with_the_live_script,
)

__all__ = [
    "pytestmark",
    "test_it_answers_an_anonymous_visitor_with_401_json",
    "test_it_reports_owner_offsets_and_lag_as_the_runtime_left_them",
    "test_it_sends_an_anonymous_visitor_from_the_page_to_the_login_form",
    "test_it_shows_a_logged_in_user_the_page_with_the_live_script",
]
