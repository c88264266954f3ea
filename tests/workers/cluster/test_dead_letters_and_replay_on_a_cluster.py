"""Dead-lettering and replay (republished after the queue, in place under ``after_dlq =
hold``, in bulk in each key's order) on a Redis Cluster: the standalone tests, collected
again here with this package's ``redis_url``. A dead letter, its queue's stream, offset
and parked keys share the queue's hash tag; the event log and the list of topics are in
other slots."""

from tests.workers.test_bulk_replay_keeps_each_keys_order import (
    test_it_replays_each_keys_dead_letters_in_their_original_order,
    test_it_stops_at_a_cancel_and_leaves_the_rest_dead,
)
from tests.workers.test_key_hold_replay_runs_first import (
    test_it_holds_the_key_again_when_a_replayed_dead_letter_fails_again,
    test_it_runs_a_replayed_dead_letter_first_and_then_the_parked_messages_in_order,
)
from tests.workers.test_poison_messages import (
    test_it_dead_letters_a_poison_message_after_exactly_max_reconsume_retries,
)
from tests.workers.test_replay_goes_in_place_only_for_the_dead_letter_holding_its_key import (
    test_it_replays_the_holding_dead_letter_in_place_and_republishes_an_older_one,
)
from tests.workers.test_replay_republishes_after_the_queue import (
    test_it_republishes_a_replayed_dead_letter_with_headers_that_link_it,
)

__all__ = [
    "test_it_dead_letters_a_poison_message_after_exactly_max_reconsume_retries",
    "test_it_holds_the_key_again_when_a_replayed_dead_letter_fails_again",
    "test_it_replays_each_keys_dead_letters_in_their_original_order",
    "test_it_replays_the_holding_dead_letter_in_place_and_republishes_an_older_one",
    "test_it_republishes_a_replayed_dead_letter_with_headers_that_link_it",
    "test_it_runs_a_replayed_dead_letter_first_and_then_the_parked_messages_in_order",
    "test_it_stops_at_a_cancel_and_leaves_the_rest_dead",
]
