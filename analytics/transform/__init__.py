"""Transforms: pure DataFrame → DataFrame functions over one day of the data set
(docs/analytics.md §3-4). Nothing here collects; ``analytics.load`` does.

Results are not sorted (a sort is a Spark job of its own, and every result is small):
``ORDER`` gives each result's order, applied by ``analytics.load.rows`` after collecting.

Inputs are the frames of ``analytics.extract`` (the columns of ``analytics.layout`` plus
``date`` and ``hour``); tests may build them by hand with the same schemas.
"""

from lockstep.analytics.transform.churn import queue_events, rebalances
from lockstep.analytics.transform.day import group_day, queue_day
from lockstep.analytics.transform.lag import (
    consumed_per_hour,
    hourly_group,
    hourly_queue,
    produced_per_hour,
    with_seconds_above,
)
from lockstep.analytics.transform.retries import ORDER as HOTSPOT_ORDER
from lockstep.analytics.transform.retries import retry_hotspots
from lockstep.analytics.transform.skew import key_skew
from lockstep.analytics.transform.stuck import stuck_episodes

# Result -> its order: column names, a leading "-" for descending.
ORDER: dict[str, tuple[str, ...]] = {
    "hourly_queue": ("topic", "group", "queue", "hour"),
    "hourly_group": ("topic", "group", "hour"),
    "queue_day": ("topic", "group", "queue"),
    "group_day": ("topic", "group"),
    "stuck_episodes": ("-duration_s", "topic", "group", "queue", "start_ms"),
    "retry_hotspots": HOTSPOT_ORDER,
    "key_skew": ("topic", "queue"),
    "produced_per_hour": ("topic", "queue", "hour"),
}

__all__ = [
    "ORDER",
    "consumed_per_hour",
    "group_day",
    "hourly_group",
    "hourly_queue",
    "key_skew",
    "produced_per_hour",
    "queue_day",
    "queue_events",
    "rebalances",
    "retry_hotspots",
    "stuck_episodes",
    "with_seconds_above",
]
