"""Results of the nightly analytics job (docs/analytics.md §3): one ``AnalyticsRun`` per
attempt at one UTC day, with the rows it computed. A successful run of a day replaces the
results of the day's earlier runs (the runner deletes them); a failed one leaves them."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.forms.models import model_to_dict
from django.utils import timezone


class AnalyticsRunQuerySet(models.QuerySet["AnalyticsRun"]):
    def latest_attempt(self) -> AnalyticsRun | None:
        return self.order_by("-started_at", "-id").first()

    def latest_report(self) -> AnalyticsRun | None:
        """The latest run that produced a report (found data, or found none)."""
        return self.reports().order_by("-started_at", "-id").first()

    def reports(self) -> AnalyticsRunQuerySet:
        return self.filter(status__in=[AnalyticsRun.Status.OK, AnalyticsRun.Status.EMPTY])

    def report_of(self, day: Any) -> AnalyticsRun | None:
        """The report of one UTC day: its latest successful run."""
        return self.reports().filter(day=day).order_by("-started_at", "-id").first()


class AnalyticsRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        OK = "ok", "ok"
        EMPTY = "empty", "no data"
        FAILED = "failed", "failed"

    class Trigger(models.TextChoices):
        NIGHTLY = "nightly", "nightly"
        COMMAND = "command", "command"
        PAGE = "page", "reports page"

    day = models.DateField(db_index=True)  # the UTC day analysed
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # What the run is doing now (extract, lag, stuck, …, store), and how far along (0-100).
    stage = models.CharField(max_length=32, blank=True, default="")
    progress = models.PositiveSmallIntegerField(default=0)
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.COMMAND)
    requested_by = models.CharField(max_length=150, blank=True, default="")
    spark_master = models.CharField(max_length=200)
    data_uri = models.CharField(max_length=500, blank=True, default="")
    messages_read = models.BigIntegerField(default=0)
    events_read = models.BigIntegerField(default=0)
    samples_read = models.BigIntegerField(default=0)
    duration_s = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    objects = AnalyticsRunQuerySet.as_manager()

    class Meta:
        ordering = ("-started_at", "-id")
        permissions = (("run_analytics", "Can start an analytics run"),)

    def __str__(self) -> str:
        return f"analytics run {self.pk} of {self.day} ({self.status})"

    def finish(self, status: str, error: str = "") -> None:
        self.status = status
        self.error = error
        self.finished_at = timezone.now()
        self.duration_s = (self.finished_at - self.started_at).total_seconds()
        self.save()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.pk,
            "day": self.day.isoformat(),
            "status": self.status,
            "stage": self.stage,
            "progress": self.progress,
            "trigger": self.trigger,
            "requested_by": self.requested_by,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "duration_s": self.duration_s,
            "spark_master": self.spark_master,
            "data_uri": self.data_uri,
            "messages_read": self.messages_read,
            "events_read": self.events_read,
            "samples_read": self.samples_read,
            "error": self.error,
        }


class _Row(models.Model):
    """A row of one run's results; ``as_dict`` gives its fields without ids."""

    run = models.ForeignKey(AnalyticsRun, on_delete=models.CASCADE, related_name="+")

    class Meta:
        abstract = True

    def __str__(self) -> str:
        place = "/".join(
            str(getattr(self, name)) for name in ("topic", "group", "queue") if hasattr(self, name)
        )
        return f"{type(self).__name__} {place} (run {self.run_id})"

    def as_dict(self) -> dict[str, Any]:
        data = model_to_dict(self, exclude=["id", "run"])
        return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in data.items()}


class _LagFigures(_Row):
    """Percentiles (nearest rank) of offset lag and time lag over the rows' samples; null
    without samples."""

    samples = models.PositiveIntegerField(default=0)
    lag_p50 = models.BigIntegerField(null=True)
    lag_p95 = models.BigIntegerField(null=True)
    lag_p99 = models.BigIntegerField(null=True)
    lag_max = models.BigIntegerField(null=True)
    time_lag_p50 = models.FloatField(null=True)
    time_lag_p95 = models.FloatField(null=True)
    time_lag_p99 = models.FloatField(null=True)
    time_lag_max = models.FloatField(null=True)
    seconds_above_threshold = models.FloatField(default=0.0)
    produced = models.BigIntegerField(default=0)
    consumed = models.BigIntegerField(default=0)

    class Meta:
        abstract = True


class HourlyQueue(_LagFigures):
    """One hour of one (topic, group, queue)."""

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    queue = models.IntegerField()
    hour = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ("topic", "group", "queue", "hour")
        indexes = (models.Index(fields=["run", "topic", "group", "queue"]),)


class HourlyGroup(_LagFigures):
    """One hour of one (topic, group), over all its queues' samples."""

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    hour = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ("topic", "group", "hour")


class QueueDay(_LagFigures):
    """The whole day of one (topic, group, queue): lag, throughput, retries, churn."""

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    queue = models.IntegerField()
    retries = models.BigIntegerField(default=0)
    dead_letters = models.BigIntegerField(default=0)
    dead_letter_rate = models.FloatField(null=True)  # dead letters per consumed message
    stuck_episodes = models.PositiveIntegerField(default=0)
    owner_changes = models.PositiveIntegerField(default=0)
    lock_losses = models.PositiveIntegerField(default=0)
    fencing_rejections = models.PositiveIntegerField(default=0)
    margin_overruns = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("topic", "group", "queue")


class GroupDay(_LagFigures):
    """The whole day of one (topic, group): the figures compared with earlier days."""

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    retries = models.BigIntegerField(default=0)
    dead_letters = models.BigIntegerField(default=0)
    dead_letter_rate = models.FloatField(null=True)
    stuck_episodes = models.PositiveIntegerField(default=0)
    owner_changes = models.PositiveIntegerField(default=0)
    lock_losses = models.PositiveIntegerField(default=0)
    fencing_rejections = models.PositiveIntegerField(default=0)
    margin_overruns = models.PositiveIntegerField(default=0)
    rebalances = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("topic", "group")


class StuckEpisode(_Row):
    """A queue or a key blocked longer than the stuck threshold (docs/analytics.md §4)."""

    class Level(models.TextChoices):
        QUEUE = "queue", "queue"
        KEY = "key", "key"

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    queue = models.IntegerField()
    level = models.CharField(max_length=8, choices=Level.choices)
    key = models.CharField(max_length=1024, blank=True, default="")
    offset = models.BigIntegerField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)  # null while open
    last_seen_at = models.DateTimeField()
    open = models.BooleanField(default=False)
    duration_s = models.FloatField()
    retries = models.BigIntegerField(default=0)
    max_behind = models.BigIntegerField(default=0)
    outcome = models.CharField(max_length=16)  # succeeded dead_lettered replayed discarded open
    error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ("-duration_s", "topic", "group", "queue", "started_at")


class RetryHotspot(_Row):
    """A key or an error type among a (topic, group)'s most retried of the day."""

    class Kind(models.TextChoices):
        KEY = "key", "key"
        ERROR = "error", "error type"

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    name = models.CharField(max_length=1024)
    retries = models.BigIntegerField(default=0)
    dead_letters = models.BigIntegerField(default=0)

    class Meta:
        ordering = ("topic", "group", "kind", "-retries", "name")


class KeySkew(_Row):
    """How one queue's messages of the day spread over keys, and how it compares with the
    other queues of its topic."""

    topic = models.CharField(max_length=128)
    queue = models.IntegerField()
    messages = models.BigIntegerField()
    keys = models.BigIntegerField()
    top_key = models.CharField(max_length=1024, blank=True, default="")
    top_key_share = models.FloatField()  # of the queue's messages
    top10_share = models.FloatField()
    max_over_mean = models.FloatField()  # the busiest key's messages / mean per key
    share_of_topic = models.FloatField()
    over_topic_mean = models.FloatField()  # this queue's messages / the topic's mean

    class Meta:
        ordering = ("topic", "queue")


class DataCursor(models.Model):
    """How far the analytics writer has appended one source to the data set
    (docs/analytics.md §2): ``events`` (the last ``Event`` id written),
    ``messages:<topic>:<queue>`` (the next offset to write), ``messages`` (the number of
    the next messages batch) and, while a messages batch is being written,
    ``messages-plan:<topic>:<queue>`` (the offset that batch ends at, so a retry writes
    exactly the same rows)."""

    name = models.CharField(max_length=300, unique=True)
    position = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name} at {self.position}"
