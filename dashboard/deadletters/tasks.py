"""Scheduled work (Celery beat): copying the runtime's dead letters into the database."""

from __future__ import annotations

from celery import shared_task

from dashboard.deadletters.sync import sync_dead_letters as sync
from dashboard.monitor.redis_conn import get_redis


@shared_task
def sync_dead_letters() -> int:
    """One bounded sync (``sync.py``); a backlog is caught up over the next ticks.
    Returns how many dead letters were copied."""
    return sync(get_redis()).copied
