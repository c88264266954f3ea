from django.contrib import admin

from dashboard.reports.models import AnalyticsRun, LagSummary, StuckInterval


@admin.register(AnalyticsRun)
class AnalyticsRunAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "started_at",
        "status",
        "events_exported",
        "events_malformed",
        "spark_master",
    )
    list_filter = ("status",)


@admin.register(LagSummary)
class LagSummaryAdmin(admin.ModelAdmin):
    list_display = (
        "run",
        "topic",
        "group",
        "queue",
        "samples",
        "avg_lag",
        "p95_lag",
        "max_lag",
        "retries",
        "dead_letters",
    )
    list_filter = ("topic", "group")


@admin.register(StuckInterval)
class StuckIntervalAdmin(admin.ModelAdmin):
    list_display = (
        "run",
        "topic",
        "group",
        "queue",
        "committed_offset",
        "started_at",
        "duration_s",
        "ongoing",
    )
