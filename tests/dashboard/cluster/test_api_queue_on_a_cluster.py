"""The tests of
``tests/dashboard/test_api_queue.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.test_api_queue import (
    pytestmark,
    test_it_answers_an_anonymous_visitor_with_401_json,
    test_it_answers_unknown_queues_and_bad_parameters_in_json,
    test_it_charts_lag_samples_and_commits,
    test_it_draws_lock_ownership_per_consumer_and_the_rebalances,
    test_it_shows_the_message_being_retried_with_its_error,
)

__all__ = [
    "pytestmark",
    "test_it_answers_an_anonymous_visitor_with_401_json",
    "test_it_answers_unknown_queues_and_bad_parameters_in_json",
    "test_it_charts_lag_samples_and_commits",
    "test_it_draws_lock_ownership_per_consumer_and_the_rebalances",
    "test_it_shows_the_message_being_retried_with_its_error",
]
