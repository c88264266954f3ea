"""The tests of
``tests/dashboard/deadletters/test_sync_follows_replays_and_runtime_reports.py``,
collected again with Lockstep's data on a Redis Cluster (``tests/dashboard/cluster``)."""

from tests.dashboard.deadletters.test_sync_follows_replays_and_runtime_reports import (
    pytestmark,
    test_it_follows_a_replay_to_its_success_from_the_runtime_events,
    test_it_ignores_a_replay_of_a_dead_letter_it_never_saw,
    test_it_marks_a_dead_letter_dead_again_when_its_replay_is_dead_lettered,
    test_it_marks_dead_again_even_when_both_arrive_in_one_read,
    test_it_matches_reports_to_the_dead_letter_of_their_own_queue,
    test_it_never_moves_a_record_backwards_or_twice,
    test_it_records_a_discard_with_its_reason,
)

__all__ = [
    "pytestmark",
    "test_it_follows_a_replay_to_its_success_from_the_runtime_events",
    "test_it_ignores_a_replay_of_a_dead_letter_it_never_saw",
    "test_it_marks_a_dead_letter_dead_again_when_its_replay_is_dead_lettered",
    "test_it_marks_dead_again_even_when_both_arrive_in_one_read",
    "test_it_matches_reports_to_the_dead_letter_of_their_own_queue",
    "test_it_never_moves_a_record_backwards_or_twice",
    "test_it_records_a_discard_with_its_reason",
]
