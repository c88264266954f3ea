"""WebSocket routes of the alerts (see ``dashboard.alerts.consumers``)."""

from django.urls import path

from lockstep.dashboard.alerts.consumers import AlertsConsumer

ALERTS_SOCKET_PATH = "/ws/alerts/"

websocket_urlpatterns = [
    path(ALERTS_SOCKET_PATH.lstrip("/"), AlertsConsumer.as_asgi()),
]
