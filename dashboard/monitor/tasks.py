"""Scheduled work (Celery beat): lag sampling into the event log, and retention.

``sample_lag`` is skipped while Redis is unreachable (it returns ``SKIPPED``): that tick's
samples are missing, the next tick samples again."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from dashboard.monitor import retention
from dashboard.monitor.redis_conn import get_redis, skipped_during_redis_outage
from workers import events as ev
from workers.config import Limits
from workers.inspect import overview


@shared_task
@skipped_during_redis_outage
def sample_lag() -> int:
    """Append one ``lag_sampled`` event per (topic, queue, group): the history the queue
    charts and the nightly analytics read."""
    client = get_redis()
    snapshot = overview(client)
    samples = [
        ev.Event(
            ev.LAG_SAMPLED,
            snapshot["generated_at_ms"],
            topic["name"],
            g["group"],
            q["queue"],
            details={
                "max_offset": q["max_offset"],
                "committed_offset": g["committed_offset"],
                "lag": g["lag"],
                "time_lag_s": g["time_lag_s"],
                "owner": g["owner"] or "",
            },
        )
        for topic in snapshot["topics"]
        for q in topic["queues"]
        for g in q["groups"]
    ]
    return ev.append(client, samples, Limits.from_env().events_maxlen)


@shared_task
def prune_events() -> int:
    """Hourly (beat): every kind of time-series row past its retention is deleted
    (``dashboard.monitor.retention``: events, samples, analytics runs, resolved alerts).
    Returns the rows deleted over all kinds."""
    return sum(retention.prune_all(timezone.now()).values())
