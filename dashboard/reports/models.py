"""Results of the nightly analytics job: one ``AnalyticsRun`` per attempt, with its
per-queue ``LagSummary`` rows and the ``StuckInterval`` stretches it found."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class AnalyticsRunQuerySet(models.QuerySet["AnalyticsRun"]):
    def latest_attempt(self) -> AnalyticsRun | None:
        return self.order_by("-started_at", "-id").first()

    def latest_report(self) -> AnalyticsRun | None:
        """The latest run that produced a report (found events, or found none)."""
        done = [AnalyticsRun.Status.OK, AnalyticsRun.Status.EMPTY]
        return self.filter(status__in=done).order_by("-started_at", "-id").first()


class AnalyticsRun(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", "running"
        OK = "ok", "ok"
        EMPTY = "empty", "no events"
        FAILED = "failed", "failed"

    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    spark_master = models.CharField(max_length=200)
    export_path = models.CharField(max_length=500, blank=True, default="")
    events_exported = models.PositiveIntegerField(default=0)
    events_malformed = models.PositiveIntegerField(default=0)
    malformed_examples = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")

    objects = AnalyticsRunQuerySet.as_manager()

    class Meta:
        ordering = ("-started_at", "-id")

    def __str__(self) -> str:
        return f"analytics run {self.pk} ({self.status})"

    def finish(self, status: str, error: str = "") -> None:
        self.status = status
        self.error = error
        self.finished_at = timezone.now()
        self.save()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.pk,
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "window_start": self.window_start.isoformat(),
            "window_end": self.window_end.isoformat(),
            "spark_master": self.spark_master,
            "events_exported": self.events_exported,
            "events_malformed": self.events_malformed,
            "malformed_examples": self.malformed_examples,
            "error": self.error,
        }


class LagSummary(models.Model):
    """One (topic, group, queue) of one run; see ``analytics.transform.lag_summary``.
    The lag figures are null when the run saw no lag sample of the queue."""

    run = models.ForeignKey(AnalyticsRun, on_delete=models.CASCADE, related_name="lag_summaries")
    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    queue = models.IntegerField()
    samples = models.PositiveIntegerField(default=0)
    avg_lag = models.FloatField(null=True, blank=True)
    max_lag = models.BigIntegerField(null=True, blank=True)
    p95_lag = models.BigIntegerField(null=True, blank=True)
    max_time_lag_s = models.FloatField(null=True, blank=True)
    last_committed_offset = models.BigIntegerField(null=True, blank=True)
    commits = models.BigIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    dead_letters = models.PositiveIntegerField(default=0)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()

    class Meta:
        ordering = ("topic", "group", "queue")
        constraints = (
            models.UniqueConstraint(
                fields=["run", "topic", "group", "queue"], name="reports_lagsummary_one_per_queue"
            ),
        )
        verbose_name_plural = "lag summaries"

    def __str__(self) -> str:
        return f"{self.topic}/{self.group}/{self.queue} (run {self.run_id})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "group": self.group,
            "queue": self.queue,
            "samples": self.samples,
            "avg_lag": self.avg_lag,
            "max_lag": self.max_lag,
            "p95_lag": self.p95_lag,
            "max_time_lag_s": self.max_time_lag_s,
            "last_committed_offset": self.last_committed_offset,
            "commits": self.commits,
            "retries": self.retries,
            "dead_letters": self.dead_letters,
            "window_start": self.window_start.isoformat(),
            "window_end": self.window_end.isoformat(),
        }


class StuckInterval(models.Model):
    """A stretch where a queue was behind and its committed offset did not move; see
    ``analytics.transform.stuck_intervals``."""

    run = models.ForeignKey(AnalyticsRun, on_delete=models.CASCADE, related_name="stuck_intervals")
    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=128)
    queue = models.IntegerField()
    committed_offset = models.BigIntegerField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField()
    duration_s = models.FloatField()
    samples = models.PositiveIntegerField()
    max_lag = models.BigIntegerField()
    ongoing = models.BooleanField(default=False)

    class Meta:
        ordering = ("topic", "group", "queue", "started_at")

    def __str__(self) -> str:
        return f"{self.topic}/{self.group}/{self.queue} stuck at {self.committed_offset}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "group": self.group,
            "queue": self.queue,
            "committed_offset": self.committed_offset,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat(),
            "duration_s": self.duration_s,
            "samples": self.samples,
            "max_lag": self.max_lag,
            "ongoing": self.ongoing,
        }
