"""The tests of
``tests/dashboard/deadletters/test_pages_show_actions_only_to_those_who_may_act.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_pages_show_actions_only_to_those_who_may_act import (
    pytestmark,
    test_it_hides_bodies_and_headers_from_a_viewer_when_configured,
    test_it_renders_every_page_for_a_viewer_with_the_navigation_marking_it,
    test_it_sends_an_anonymous_visitor_to_the_login_form,
    test_it_shows_a_viewer_the_list_and_a_dead_letter_without_action_controls,
    test_it_shows_an_operator_the_action_controls,
)

__all__ = [
    "pytestmark",
    "test_it_hides_bodies_and_headers_from_a_viewer_when_configured",
    "test_it_renders_every_page_for_a_viewer_with_the_navigation_marking_it",
    "test_it_sends_an_anonymous_visitor_to_the_login_form",
    "test_it_shows_a_viewer_the_list_and_a_dead_letter_without_action_controls",
    "test_it_shows_an_operator_the_action_controls",
]
