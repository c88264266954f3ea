"""ASGI entry point: HTTP through Django, WebSockets through Channels (authenticated)."""

import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lockstep.dashboard.settings")
# Daphne serves no files itself: the static handler serves the few CSS/JS files of the
# pages (from the app folders, no collectstatic step), in debug and production alike.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import re_path  # noqa: E402

from lockstep.dashboard.alerts.routing import websocket_urlpatterns as alert_sockets  # noqa: E402
from lockstep.dashboard.deadletters.routing import websocket_urlpatterns as dead_letter_sockets  # noqa: E402
from lockstep.dashboard.monitor.routing import websocket_urlpatterns  # noqa: E402
from lockstep.dashboard.web.push_socket import NotFoundConsumer  # noqa: E402

# Any other path: closed with 4404 (4401 when anonymous) rather than an error.
unknown = [re_path(r"", NotFoundConsumer.as_asgi())]

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(
                URLRouter(websocket_urlpatterns + dead_letter_sockets + alert_sockets + unknown)
            )
        ),
    }
)
