"""The dashboard's Celery application, laid out as Celery's "First steps with Django"
guide does.

Beat runs the dashboard's scheduled tasks (lag samples, dead-letter sync, retention, the
nightly analytics); the web side queues replays and analytics runs. All of them go to the
queue ``LOCKSTEP_CELERY_QUEUE`` (``lockstep``), the only one this app's worker consumes, so
a foreign worker on the same broker never receives them. The worker also embeds ordered
consumers through the ``LockstepConsumers`` bootstep, configured from the Django settings
(``LOCKSTEP_SUBSCRIPTIONS``: none unless set, or the demo's with ``LOCKSTEP_DEMO=true``;
``REDIS_URL``). Start them with ``lockstep worker`` and ``lockstep beat`` (or
``celery -A lockstep.dashboard.celery worker|beat``); docs/dashboard-service.md.
"""

import os
import warnings
from typing import Any

from celery import Celery, signals
from celery.exceptions import SecurityWarning

import lockstep.celery
from lockstep.workers.config import Subscription

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lockstep.dashboard.settings")

# The start of the warning a Celery worker gives when it runs as root (celery/platforms.py).
ROOT_WARNING = "You're running the worker with superuser privileges"


def _subscriptions() -> list[Subscription]:
    from django.conf import settings

    return list(settings.LOCKSTEP_SUBSCRIPTIONS)


def _redis_url() -> str:
    from django.conf import settings

    return str(settings.REDIS_URL)


app = Celery("lockstep")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The same public call an adopter's own app makes (docs/api.md), with lazy settings.
lockstep.celery.install(app, subscriptions=_subscriptions, redis_url=_redis_url)
app.autodiscover_tasks(
    ["lockstep.dashboard.monitor", "lockstep.dashboard.reports", "lockstep.dashboard.deadletters"]
)


@signals.celeryd_init.connect
def _quiet_the_demos_root_warning(**_: Any) -> None:
    """The demo (``LOCKSTEP_DEMO``) runs as whoever starts it, root in most containers, and
    its workers' logs then opened with Celery's warning about root: nothing to act on in
    a demo. Celery sends ``celeryd_init`` just before it checks. Outside the demo the
    warning stays: a dashboard deployed as root should hear it (deploy/ runs as a user)."""
    from django.conf import settings

    if getattr(settings, "LOCKSTEP_DEMO", False):  # another project's settings lack it
        warnings.filterwarnings("ignore", ROOT_WARNING, SecurityWarning)
