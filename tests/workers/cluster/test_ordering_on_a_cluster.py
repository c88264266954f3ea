"""Queue and key ordering with kills, pauses and rebalances, on a Redis Cluster: the
standalone tests, collected again here with this package's ``redis_url``."""

from tests.workers.test_key_order_under_failures import (
    test_it_keeps_every_key_in_order_with_64_lanes_through_a_kill_and_a_join,
)
from tests.workers.test_order_and_loss_under_failures import (
    test_it_keeps_every_key_in_order_and_loses_nothing_through_kill_pause_and_join,
)

__all__ = [
    "test_it_keeps_every_key_in_order_and_loses_nothing_through_kill_pause_and_join",
    "test_it_keeps_every_key_in_order_with_64_lanes_through_a_kill_and_a_join",
]
