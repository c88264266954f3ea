"""The tests of
``tests/dashboard/deadletters/test_dlq_replay_and_discard_command.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_dlq_replay_and_discard_command import (
    no_rate_limit,
    pytestmark,
    test_it_discards_with_the_reason_and_the_os_user_by_default,
    test_it_prints_the_plan_for_a_dry_run_and_changes_nothing,
    test_it_refuses_an_unknown_group,
    test_it_refuses_bad_input_clearly_and_does_nothing,
    test_it_replays_every_match_in_the_command_and_prints_each_outcome,
    test_it_replays_nothing_twice_when_run_again_with_the_same_request_id,
)

__all__ = [
    "no_rate_limit",
    "pytestmark",
    "test_it_discards_with_the_reason_and_the_os_user_by_default",
    "test_it_prints_the_plan_for_a_dry_run_and_changes_nothing",
    "test_it_refuses_an_unknown_group",
    "test_it_refuses_bad_input_clearly_and_does_nothing",
    "test_it_replays_every_match_in_the_command_and_prints_each_outcome",
    "test_it_replays_nothing_twice_when_run_again_with_the_same_request_id",
]
