from django.contrib import admin

from dashboard.reports.models import AnalyticsRun


@admin.register(AnalyticsRun)
class AnalyticsRunAdmin(admin.ModelAdmin):
    list_display = ("id", "day", "started_at", "status", "stage", "trigger", "spark_master")
    list_filter = ("status", "trigger")
