"""The tests of
``tests/dashboard/deadletters/test_action_double_submission_replays_once.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_action_double_submission_replays_once import (
    no_rate_limit,
    pytestmark,
    test_it_refuses_a_request_id_reused_for_another_action,
    test_it_replays_once_when_a_second_request_names_the_same_message,
    test_it_replays_once_when_the_same_request_is_submitted_twice,
    test_it_runs_a_queued_task_delivered_twice_only_once,
)

__all__ = [
    "no_rate_limit",
    "pytestmark",
    "test_it_refuses_a_request_id_reused_for_another_action",
    "test_it_replays_once_when_a_second_request_names_the_same_message",
    "test_it_replays_once_when_the_same_request_is_submitted_twice",
    "test_it_runs_a_queued_task_delivered_twice_only_once",
]
