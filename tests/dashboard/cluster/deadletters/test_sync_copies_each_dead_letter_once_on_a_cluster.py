"""The tests of
``tests/dashboard/deadletters/test_sync_copies_each_dead_letter_once.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_sync_copies_each_dead_letter_once import (
    pytestmark,
    test_it_copies_only_what_arrived_after_its_cursor,
    test_it_keeps_every_field_the_runtime_wrote,
    test_it_runs_as_a_beat_task_every_few_seconds,
    test_it_stops_at_its_limit_and_says_there_is_more,
    test_it_stores_each_dead_letter_once_however_often_it_runs,
    test_it_syncs_only_the_group_it_is_asked_for,
)

__all__ = [
    "pytestmark",
    "test_it_copies_only_what_arrived_after_its_cursor",
    "test_it_keeps_every_field_the_runtime_wrote",
    "test_it_runs_as_a_beat_task_every_few_seconds",
    "test_it_stops_at_its_limit_and_says_there_is_more",
    "test_it_stores_each_dead_letter_once_however_often_it_runs",
    "test_it_syncs_only_the_group_it_is_asked_for",
]
