"""The tests of
``tests/dashboard/deadletters/test_action_posts_need_a_permission_and_a_csrf_token.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_action_posts_need_a_permission_and_a_csrf_token import (
    ids,
    no_rate_limit,
    pytestmark,
    test_it_answers_a_viewer_403_on_every_post_and_changes_nothing,
    test_it_answers_an_anonymous_caller_401_on_every_post,
    test_it_answers_bad_input_with_400_and_does_nothing,
    test_it_answers_unknown_groups_and_requests_404,
    test_it_refuses_a_post_without_the_csrf_token,
)

__all__ = [
    "ids",
    "no_rate_limit",
    "pytestmark",
    "test_it_answers_a_viewer_403_on_every_post_and_changes_nothing",
    "test_it_answers_an_anonymous_caller_401_on_every_post",
    "test_it_answers_bad_input_with_400_and_does_nothing",
    "test_it_answers_unknown_groups_and_requests_404",
    "test_it_refuses_a_post_without_the_csrf_token",
]
