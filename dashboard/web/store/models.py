"""The dashboard's stored data, which every feature app reads: the runtime's events as
the ingester stores them (``Event``, its ``IngestCursor`` and the ``EventCounter`` behind
``/metrics``), the admin's ``Topic`` records and each viewer's ``TimeZonePreference``.

They keep the app label ``monitor`` they were created under (docs/architecture.md, "The
stored data"): their tables, migrations, admin URLs and permissions stay as they are, and
``monitor/models.py`` imports them so that Django registers them with that app.
"""

from __future__ import annotations

from typing import Any

from django.db import models

APP_LABEL = "monitor"


class Event(models.Model):
    """One runtime event, ingested from the Redis event stream. ``stream_id`` is the
    stream entry ID: unique, so ingesting the same entry twice stores it once."""

    stream_id = models.CharField(max_length=40, unique=True)
    type = models.CharField(max_length=40, db_index=True)
    ts = models.DateTimeField(db_index=True)
    topic = models.CharField(max_length=128, blank=True, default="")
    group = models.CharField(max_length=128, blank=True, default="")
    queue = models.IntegerField(null=True, blank=True)
    key = models.CharField(max_length=256, blank=True, default="")
    token = models.BigIntegerField(null=True, blank=True)
    consumer = models.CharField(max_length=200, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        app_label = APP_LABEL
        indexes = (
            models.Index(fields=["topic", "queue", "ts"]),
            models.Index(fields=["topic", "key"]),
        )
        ordering = ("-id",)

    def __str__(self) -> str:
        return f"{self.stream_id} {self.type} {self.topic}/{self.queue}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.stream_id,
            "type": self.type,
            "ts": self.ts.isoformat(),
            "topic": self.topic,
            "group": self.group,
            "queue": self.queue,
            "key": self.key,
            "token": self.token,
            "consumer": self.consumer,
            "details": self.details,
        }


class IngestCursor(models.Model):
    """The last event-stream entry stored, written in the same transaction as the events,
    so a restarted ingester resumes exactly after it.

    ``position`` counts the stream entries ever added up to ``last_id`` (read or lost),
    so that when the stream was trimmed past the cursor the ingester can say how many
    events were lost (stream ``entries-added`` minus what is left minus ``position``).
    ``None``: unknown (a cursor from before it was tracked); it is set exactly again the
    next time the ingester catches up with the stream."""

    name = models.CharField(max_length=40, unique=True)
    last_id = models.CharField(max_length=40, default="0-0")
    position = models.BigIntegerField(null=True, blank=True, default=None)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = APP_LABEL

    def __str__(self) -> str:
        return f"{self.name}@{self.last_id}"


class EventCounter(models.Model):
    """A monotonic count of stored events of one kind per (topic, group, queue), bumped by
    the ingester in the same transaction as the events it counts (so never twice), and
    never lowered by event retention: the source of the ``/metrics`` counters.
    ``queue`` is -1 for events that name no queue."""

    name = models.CharField(max_length=64)
    topic = models.CharField(max_length=128, default="")
    group = models.CharField(max_length=128, default="")
    queue = models.IntegerField(default=-1)
    value = models.BigIntegerField(default=0)

    class Meta:
        app_label = APP_LABEL
        constraints = (
            models.UniqueConstraint(
                fields=("name", "topic", "group", "queue"),
                name="monitor_eventcounter_unique_series",
            ),
        )

    def __str__(self) -> str:
        return f"{self.name}{{{self.topic}/{self.group}/{self.queue}}}={self.value}"


class Topic(models.Model):
    """Admin-side record of a topic; saving it creates the topic in Redis (the runtime's
    truth), which refuses to change the queue count of an existing topic."""

    name = models.CharField(max_length=128, unique=True)
    queues = models.PositiveIntegerField(default=8)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = APP_LABEL

    def __str__(self) -> str:
        return self.name


class TimeZonePreference(models.Model):
    """The time zone a user reads times in (an IANA name); no row means UTC. Set from the
    header's menu, applied to every page by ``time_zone.ViewerTimeZoneMiddleware``."""

    user = models.OneToOneField(
        "auth.User", on_delete=models.CASCADE, related_name="time_zone_preference"
    )
    zone = models.CharField(max_length=64, default="UTC")

    class Meta:
        app_label = APP_LABEL

    def __str__(self) -> str:
        return f"{self.user_id}: {self.zone}"


# ---- the fleet state: what the overview and group pages read (docs/fleet-state.md) -------


class QueueStatus(models.Model):
    """One (topic, group, queue) as the fleet writer last read it from Redis
    (``web.store.fleet``): its offsets, lag, owner, the owner's state, dead letters and
    whether it is stuck. Pages page, sort and filter these rows in the database, so what a
    page costs follows the rows it shows, not the size of the fleet. ``severity`` orders
    by urgency; ``stuck`` is the reason of the longest stuck of ``stuck_entries`` (as
    ``web.store.stuck.stuck_queues`` makes them), "" when none. ``severity``: 2 stuck, 1
    needs a look (unowned, no live consumer, blocked, held keys,
    suspended), 0 otherwise."""

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    queue = models.IntegerField()
    max_offset = models.BigIntegerField(default=0)
    committed_offset = models.BigIntegerField(default=0)
    lag = models.BigIntegerField(default=0)
    parked = models.BigIntegerField(default=0)
    held_keys = models.IntegerField(default=0)
    time_lag_s = models.FloatField(default=0.0)
    owner = models.CharField(max_length=200, blank=True, default="")
    owner_live = models.BooleanField(default=False)
    token = models.BigIntegerField(default=0)
    lock_granted_at_ms = models.BigIntegerField(null=True, blank=True)
    lock_expires_at_ms = models.BigIntegerField(null=True, blank=True)
    completed_above = models.BigIntegerField(default=0)
    in_flight = models.IntegerField(null=True, blank=True)
    state = models.CharField(max_length=32, default="unowned")
    retries = models.IntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True, default="")
    blocked_count = models.IntegerField(default=0)
    blocked_keys = models.JSONField(default=list, blank=True)
    dead_letters = models.BigIntegerField(default=0)
    stuck = models.CharField(max_length=32, blank=True, default="")
    stuck_since_ms = models.BigIntegerField(null=True, blank=True)
    stuck_entries = models.JSONField(default=list, blank=True)
    severity = models.SmallIntegerField(default=0)
    updated_ms = models.BigIntegerField(default=0)

    class Meta:
        app_label = APP_LABEL
        constraints = (
            models.UniqueConstraint(
                fields=("topic", "group", "queue"), name="monitor_queuestatus_unique_pair"
            ),
        )
        indexes = (
            models.Index(fields=["severity", "time_lag_s"], name="monitor_qs_worst"),
            models.Index(fields=["lag"], name="monitor_qs_lag"),
            models.Index(fields=["time_lag_s"], name="monitor_qs_time_lag"),
            models.Index(fields=["owner"], name="monitor_qs_owner"),
            models.Index(fields=["state"], name="monitor_qs_state"),
        )

    def __str__(self) -> str:
        return f"{self.topic}/{self.group}/{self.queue}"


class GroupStatus(models.Model):
    """One (topic, group)'s totals over its queues, kept by the fleet writer with the
    rows it sums (``QueueStatus``); rates over the writer's last minute of readings."""

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    queues = models.IntegerField(default=0)
    owned = models.IntegerField(default=0)
    owners = models.IntegerField(default=0)
    lag = models.BigIntegerField(default=0)
    parked = models.BigIntegerField(default=0)
    max_time_lag_s = models.FloatField(default=0.0)
    out_per_s = models.FloatField(null=True, blank=True)
    retries_per_min = models.IntegerField(default=0)
    stuck = models.IntegerField(default=0)
    held_keys = models.IntegerField(default=0)
    blocked_keys = models.IntegerField(default=0)
    dead_letters = models.BigIntegerField(default=0)
    # Messages handled over all its queues at ``updated_ms``: the next writer's rate base.
    handled = models.BigIntegerField(default=0)
    updated_ms = models.BigIntegerField(default=0)

    class Meta:
        app_label = APP_LABEL
        constraints = (
            models.UniqueConstraint(fields=("topic", "group"), name="monitor_groupstatus_unique"),
        )

    def __str__(self) -> str:
        return f"{self.topic}/{self.group}"


class TopicStatus(models.Model):
    """One topic as the fleet writer last read it: its queue count, groups and the rate
    messages are produced at (``None`` until two readings a few seconds apart)."""

    name = models.CharField(max_length=128, unique=True)
    queue_count = models.IntegerField(default=0)
    groups = models.IntegerField(default=0)
    in_per_s = models.FloatField(null=True, blank=True)
    # Messages produced over all its queues at ``updated_ms``: the next writer's rate base.
    produced = models.BigIntegerField(default=0)
    updated_ms = models.BigIntegerField(default=0)

    class Meta:
        app_label = APP_LABEL

    def __str__(self) -> str:
        return self.name


class FleetStamp(models.Model):
    """When the fleet state was last read whole (``swept_ms``, Redis time) and how long
    that took; one row (``name`` "fleet")."""

    name = models.CharField(max_length=16, unique=True)
    swept_ms = models.BigIntegerField(default=0)
    refreshed_ms = models.BigIntegerField(default=0)
    sweep_duration_ms = models.IntegerField(default=0)

    class Meta:
        app_label = APP_LABEL

    def __str__(self) -> str:
        return f"{self.name}@{self.swept_ms}"
