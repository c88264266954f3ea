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
