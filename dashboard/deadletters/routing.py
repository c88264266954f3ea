"""WebSocket routes of the dead letters (see ``dashboard.deadletters.consumers``)."""

from django.urls import path, re_path

from lockstep.dashboard.deadletters.consumers import RequestProgressConsumer
from lockstep.dashboard.web.push_socket import NotFoundConsumer

REQUEST_SOCKET_PATH = "/ws/dead-letters/requests/{request_id}/"  # str.format

websocket_urlpatterns = [
    path("ws/dead-letters/requests/<str:request_id>/", RequestProgressConsumer.as_asgi()),
    re_path(r"^ws/dead-letters/", NotFoundConsumer.as_asgi()),
]
