from django.urls import path

from lockstep.dashboard.monitor import views
from lockstep.dashboard.web import time_zone

# A group is named by whoever subscribes (no rule forbids "/": "billing/eu" is fine), so
# group paths use the ``path`` converter; ``str`` stops at "/" and would 404 those groups.
urlpatterns = [
    path("", views.overview_page, name="overview"),
    path("topics/<str:topic>/groups/<path:group>", views.group_page, name="group"),
    path("topics/<str:topic>/queues/<str:queue>", views.queue_page, name="queue"),
    path("consumers", views.consumers_page, name="consumers"),
    path("events", views.events_page, name="events"),
    path("messages", views.messages_page, name="messages"),
    path("settings/time-zone", time_zone.set_time_zone, name="time-zone"),
    path("api/v1/overview", views.overview_api, name="api-overview"),
    path("api/v1/topics/<str:topic>/groups/<path:group>", views.group_api, name="api-group"),
    path("api/v1/topics/<str:topic>/queues/<str:queue>", views.queue_api, name="api-queue"),
    path("api/v1/consumers", views.consumers_api, name="api-consumers"),
    path("api/v1/events", views.events_api, name="api-events"),
    path("api/v1/messages", views.messages_api, name="api-messages"),
]
