"""WebSocket routes (see ``dashboard.monitor.consumers`` for what each socket sends)."""

from django.urls import path

from lockstep.dashboard.monitor.consumers import EventsConsumer, OverviewConsumer, QueueConsumer

OVERVIEW_SOCKET_PATH = "/ws/overview/"
QUEUE_SOCKET_PATH = "/ws/queues/{topic}/{queue}/"  # str.format with the topic and queue
EVENTS_SOCKET_PATH = "/ws/events/"

websocket_urlpatterns = [
    path(OVERVIEW_SOCKET_PATH.lstrip("/"), OverviewConsumer.as_asgi()),
    path("ws/queues/<str:topic>/<int:queue>/", QueueConsumer.as_asgi()),
    path(EVENTS_SOCKET_PATH.lstrip("/"), EventsConsumer.as_asgi()),
]
