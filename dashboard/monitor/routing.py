from django.urls import path

from dashboard.monitor.consumers import OverviewConsumer

websocket_urlpatterns = [
    path("ws/overview/", OverviewConsumer.as_asgi()),
]
