"""The Django admin shows analytics runs and their results read-only: results are written
by a run only (``runner``), and a run's history is what it did. Deleting a run (with its
rows) stays possible, as retention does."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from lockstep.dashboard.reports.models import (
    AnalyticsRun,
    DataCursor,
    GroupDay,
    HourlyGroup,
    HourlyQueue,
    KeySkew,
    QueueDay,
    RetryHotspot,
    StuckEpisode,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AnalyticsRun)
class AnalyticsRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "day", "started_at", "status", "stage", "progress", "trigger")
    list_filter = ("status", "trigger")
    date_hierarchy = "started_at"
    search_fields = ("requested_by", "error")


class ResultAdmin(ReadOnlyAdmin):
    """A result row: filtered by run (the day is the run's)."""

    list_select_related = ("run",)

    @admin.display(description="day", ordering="run__day")
    def day(self, row: Any) -> Any:
        return row.run.day


@admin.register(GroupDay)
class GroupDayAdmin(ResultAdmin):
    list_display = ("run", "day", "topic", "group", "time_lag_p99", "lag_p99", "stuck_episodes")
    list_filter = ("topic", "group")


@admin.register(QueueDay)
class QueueDayAdmin(ResultAdmin):
    list_display = ("run", "day", "topic", "group", "queue", "time_lag_p99", "retries")
    list_filter = ("topic", "group")


@admin.register(HourlyGroup)
class HourlyGroupAdmin(ResultAdmin):
    list_display = ("run", "day", "topic", "group", "hour", "lag_p99", "produced", "consumed")
    list_filter = ("topic", "group")


@admin.register(HourlyQueue)
class HourlyQueueAdmin(ResultAdmin):
    list_display = ("run", "day", "topic", "group", "queue", "hour", "lag_p99", "consumed")
    list_filter = ("topic", "group")


@admin.register(StuckEpisode)
class StuckEpisodeAdmin(ResultAdmin):
    list_display = ("run", "day", "topic", "queue", "level", "offset", "duration_s", "outcome")
    list_filter = ("level", "outcome", "open")
    search_fields = ("key", "error")


@admin.register(RetryHotspot)
class RetryHotspotAdmin(ResultAdmin):
    list_display = ("run", "day", "topic", "group", "kind", "name", "retries", "dead_letters")
    list_filter = ("kind",)
    search_fields = ("name",)


@admin.register(KeySkew)
class KeySkewAdmin(ResultAdmin):
    list_display = ("run", "day", "topic", "queue", "messages", "keys", "top_key_share")
    list_filter = ("topic",)


@admin.register(DataCursor)
class DataCursorAdmin(ReadOnlyAdmin):
    list_display = ("name", "position", "updated_at")
    search_fields = ("name",)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # deleting a cursor would write its source to the data set again
