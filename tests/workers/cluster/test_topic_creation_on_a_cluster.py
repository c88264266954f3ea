"""Topic creation, including a creation cut short between its steps, on a Redis Cluster
(the topic's hash and the list of topics are in different slots)."""

from tests.workers.test_a_topic_creation_cut_short_is_invisible_and_finished_by_a_rerun import (
    test_a_half_created_topic_is_refused_to_producers_and_finished_by_a_rerun,
    test_a_topic_stored_before_creation_had_steps_is_ready,
    test_running_the_creation_again_on_a_finished_topic_changes_nothing,
)

__all__ = [
    "test_a_half_created_topic_is_refused_to_producers_and_finished_by_a_rerun",
    "test_a_topic_stored_before_creation_had_steps_is_ready",
    "test_running_the_creation_again_on_a_finished_topic_changes_nothing",
]
