from django.contrib import admin, messages
from django.http import HttpRequest

from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store.models import Event, Topic
from lockstep.workers.errors import LockstepError
from lockstep.workers.topics import create_topic


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("name", "queues", "created_at")

    def save_model(self, request: HttpRequest, obj: Topic, form: object, change: bool) -> None:
        try:
            create_topic(get_redis(), obj.name, obj.queues)
        except LockstepError as exc:
            messages.error(request, str(exc))
            return
        super().save_model(request, obj, form, change)


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """Read-only: events are the runtime's record (audit events among them)."""

    list_display = ("stream_id", "type", "ts", "topic", "group", "queue", "key", "token")
    list_filter = ("type", "topic", "group")
    search_fields = ("key", "stream_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False
