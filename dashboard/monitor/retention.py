"""The monitor's retention (``web.retention`` prunes every app's kinds): stored events
and samples are kept for a bounded time, one setting each, so the database's size
follows the retention windows instead of growing forever.

- events (every type but the periodic samples): ``LOCKSTEP_EVENT_RETENTION_DAYS``;
- samples (``lag_sampled``, ``key_state``, ``lanes``): ``LOCKSTEP_SAMPLE_RETENTION_DAYS``.

Neither touches ``EventCounter`` or the ingest cursor: the ``/metrics`` counters never go
down, and a pruned event is never stored again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from lockstep.dashboard.monitor.queries import NOISY_TYPES
from lockstep.dashboard.web.store.models import Event

# The periodic event types: samples of a state, many per minute per queue, read only over
# recent windows (charts of at most a day, lag_trend, stuck detection, the nightly job).
SAMPLE_TYPES = NOISY_TYPES


def prune_events(now: datetime) -> int:
    cutoff = now - timedelta(days=settings.LOCKSTEP_EVENT_RETENTION_DAYS)
    deleted, _ = Event.objects.filter(ts__lt=cutoff).exclude(type__in=SAMPLE_TYPES).delete()
    return deleted


def prune_samples(now: datetime) -> int:
    cutoff = now - timedelta(days=settings.LOCKSTEP_SAMPLE_RETENTION_DAYS)
    deleted, _ = Event.objects.filter(ts__lt=cutoff, type__in=SAMPLE_TYPES).delete()
    return deleted
