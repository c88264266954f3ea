"""The Django admin shows dead letters, their actions and the audit log read-only: what
happened is changed only by the action service, and the audit log never."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from lockstep.dashboard.deadletters.models import ActionRequest, AuditEntry, DeadLetter


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "request_id", "group", "count")
    list_filter = ("action",)
    search_fields = ("actor", "request_id", "group")


@admin.register(DeadLetter)
class DeadLetterAdmin(ReadOnlyAdmin):
    list_display = ("id", "group", "topic", "queue", "offset", "key", "status", "dead_at")
    list_filter = ("status",)
    search_fields = ("key", "dlq_id")
    exclude = ("body",)  # may be megabytes; the dead-letter page shows it properly


@admin.register(ActionRequest)
class ActionRequestAdmin(ReadOnlyAdmin):
    list_display = ("request_id", "action", "actor", "group", "state", "total", "done")
    list_filter = ("action", "state")
