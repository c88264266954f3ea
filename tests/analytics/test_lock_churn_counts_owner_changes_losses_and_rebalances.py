from __future__ import annotations

from pyspark.sql import SparkSession

from lockstep.analytics import load, transform
from tests.analytics.builders import at, day_data, event


def test_it_counts_lock_events_per_queue_and_rebalances_per_group(spark: SparkSession):
    events = [
        event("lock_acquired", at(0, 1), queue=0),
        event("lock_acquired", at(0, 2), queue=0),
        event("lock_lost", at(0, 3), queue=0),
        event("lock_renew_failed", at(0, 4), queue=0),
        event("fencing_rejected", at(0, 5), queue=0),
        event("lock_margin_overrun", at(0, 6), queue=1),
        event("malformed_entry", at(0, 7), queue=1),
        event("dead_lettered", at(0, 8), queue=1, offset=3),
        event("consume_failed", at(0, 9), queue=1, n=2, offset=3),
        event("rebalance", at(0, 10), queue=None),
        event("rebalance", at(0, 11), queue=None),
        event("rebalance", at(0, 12), queue=None, group="billing"),
    ]
    data = day_data(spark, events=events)
    per_queue = {r["queue"]: r for r in load.rows(transform.queue_events(data.events))}
    assert {k: per_queue[0][k] for k in ("owner_changes", "lock_losses", "fencing_rejections")} == {
        "owner_changes": 2,
        "lock_losses": 2,
        "fencing_rejections": 1,
    }
    assert (per_queue[1]["margin_overruns"], per_queue[1]["dead_letters"]) == (1, 2)
    assert per_queue[1]["retries"] == 2
    per_group = {r["group"]: r["rebalances"] for r in load.rows(transform.rebalances(data.events))}
    assert per_group == {"mailer": 2, "billing": 1}
