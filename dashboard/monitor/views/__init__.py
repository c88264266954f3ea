"""Pages and their JSON twins, one module per page. Pages are server-rendered; one small
script per page (``dashboard/static/monitor/``) keeps each live."""

from lockstep.dashboard.monitor.views.consumers import consumers_api, consumers_page
from lockstep.dashboard.monitor.views.events import events_api, events_page
from lockstep.dashboard.monitor.views.group import group_api, group_page
from lockstep.dashboard.monitor.views.messages import messages_api, messages_page
from lockstep.dashboard.monitor.views.overview import overview_api, overview_page
from lockstep.dashboard.monitor.views.queue import queue_api, queue_page

__all__ = [
    "consumers_api",
    "consumers_page",
    "events_api",
    "events_page",
    "group_api",
    "group_page",
    "messages_api",
    "messages_page",
    "overview_api",
    "overview_page",
    "queue_api",
    "queue_page",
]
