"""Inspection (consumers and their heartbeats on Redis time, queue state, dead-letter counts,
held keys, the key at an offset, no live consumer after a kill) on a Redis Cluster: the
standalone tests, collected again here with this package's ``redis_url``."""

from tests.workers.test_inspect_consumers import (
    test_it_ages_a_heartbeat_on_redis_time,
    test_it_finds_each_queue_snapshot_by_queue_group_and_consumer,
    test_it_forgets_a_consumer_whose_card_expired,
    test_it_lists_the_live_members_of_one_group_only,
    test_it_reads_a_heartbeat_from_the_future_as_age_zero,
)
from tests.workers.test_inspect_dead_letter_counts import (
    test_it_counts_each_queue_and_group_asked_for_in_one_answer,
    test_it_counts_the_dead_letters_waiting_on_every_queue_of_a_group,
    test_it_reads_a_dead_letter_back_as_the_runtime_wrote_it,
    test_it_stops_counting_a_dead_letter_once_it_is_discarded,
    test_it_sums_a_groups_dead_letters_over_the_topics_of_an_overview,
)
from tests.workers.test_inspect_held_keys import (
    test_it_lists_a_held_key_with_its_dead_letter_and_how_many_messages_wait,
    test_it_lists_no_held_keys_for_a_group_that_never_held_one,
    test_it_maps_each_parked_offset_to_the_hold_of_its_key,
    test_it_reads_the_parked_messages_back_in_offset_order,
    test_it_shows_a_discarded_keys_hold_as_releasing_until_its_consumer_drains_it,
)
from tests.workers.test_inspect_key_at import (
    test_it_answers_empty_for_a_malformed_entry,
    test_it_answers_empty_for_a_trimmed_offset_rather_than_the_next_entrys_key,
    test_it_answers_empty_for_an_offset_not_produced_yet,
    test_it_reads_the_key_of_the_entry_at_the_offset,
)
from tests.workers.test_inspect_queue_state import (
    orders,
    test_it_refuses_a_queue_the_topic_does_not_have,
    test_it_says_no_live_consumer_while_the_lock_belongs_to_a_consumer_without_a_card,
    test_it_says_unknown_while_the_owners_card_does_not_show_the_queue,
    test_it_slices_a_queue_out_of_its_topics_state_as_queue_state_reads_it,
    test_it_takes_the_state_from_the_lock_owners_card,
)
from tests.workers.test_inspect_says_no_live_consumer_after_a_kill import (
    test_it_reports_no_live_consumer_once_the_owners_heartbeat_is_older_than_the_timeout,
)

__all__ = [
    "orders",
    "test_it_ages_a_heartbeat_on_redis_time",
    "test_it_answers_empty_for_a_malformed_entry",
    "test_it_answers_empty_for_a_trimmed_offset_rather_than_the_next_entrys_key",
    "test_it_answers_empty_for_an_offset_not_produced_yet",
    "test_it_counts_each_queue_and_group_asked_for_in_one_answer",
    "test_it_counts_the_dead_letters_waiting_on_every_queue_of_a_group",
    "test_it_finds_each_queue_snapshot_by_queue_group_and_consumer",
    "test_it_forgets_a_consumer_whose_card_expired",
    "test_it_lists_a_held_key_with_its_dead_letter_and_how_many_messages_wait",
    "test_it_lists_no_held_keys_for_a_group_that_never_held_one",
    "test_it_lists_the_live_members_of_one_group_only",
    "test_it_maps_each_parked_offset_to_the_hold_of_its_key",
    "test_it_reads_a_dead_letter_back_as_the_runtime_wrote_it",
    "test_it_reads_a_heartbeat_from_the_future_as_age_zero",
    "test_it_reads_the_key_of_the_entry_at_the_offset",
    "test_it_reads_the_parked_messages_back_in_offset_order",
    "test_it_refuses_a_queue_the_topic_does_not_have",
    "test_it_reports_no_live_consumer_once_the_owners_heartbeat_is_older_than_the_timeout",
    "test_it_says_no_live_consumer_while_the_lock_belongs_to_a_consumer_without_a_card",
    "test_it_says_unknown_while_the_owners_card_does_not_show_the_queue",
    "test_it_shows_a_discarded_keys_hold_as_releasing_until_its_consumer_drains_it",
    "test_it_slices_a_queue_out_of_its_topics_state_as_queue_state_reads_it",
    "test_it_stops_counting_a_dead_letter_once_it_is_discarded",
    "test_it_sums_a_groups_dead_letters_over_the_topics_of_an_overview",
    "test_it_takes_the_state_from_the_lock_owners_card",
]
