from django.urls import path

from dashboard.monitor.consumers import OverviewConsumer
from dashboard.monitor.views import OVERVIEW_SOCKET_PATH

websocket_urlpatterns = [
    path(OVERVIEW_SOCKET_PATH.lstrip("/"), OverviewConsumer.as_asgi()),
]
