"""The tests of
``tests/dashboard/deadletters/test_action_cancel_and_status.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_action_cancel_and_status import (
    no_rate_limit,
    pytestmark,
    synced,
    test_it_answers_a_cancel_of_a_finished_request_with_its_final_state,
    test_it_cancels_a_request_that_has_not_run_and_leaves_every_record_dead,
    test_it_lists_the_audit_log_newest_first_with_filters,
)

__all__ = [
    "no_rate_limit",
    "pytestmark",
    "synced",
    "test_it_answers_a_cancel_of_a_finished_request_with_its_final_state",
    "test_it_cancels_a_request_that_has_not_run_and_leaves_every_record_dead",
    "test_it_lists_the_audit_log_newest_first_with_filters",
]
