"""The Celery application, laid out as Celery's "First steps with Django" guide does.

Its worker embeds Lockstep's ordered consumers through the ``LockstepConsumers`` bootstep,
configured from the Django settings (``LOCKSTEP_SUBSCRIPTIONS``, ``REDIS_URL``); beat runs
the dashboard's scheduled tasks. Start it with ``celery -A dashboard.celery worker``.
"""

import os

from celery import Celery

from lockstep.workers.bootstep import configured_step
from lockstep.workers.config import Subscription

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lockstep.dashboard.settings")


def _subscriptions() -> list[Subscription]:
    from django.conf import settings

    return list(settings.LOCKSTEP_SUBSCRIPTIONS)


def _redis_url() -> str:
    from django.conf import settings

    return str(settings.REDIS_URL)


app = Celery("lockstep")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.steps["worker"].add(configured_step(_subscriptions, _redis_url))
app.autodiscover_tasks(
    ["lockstep.dashboard.monitor", "lockstep.dashboard.reports", "lockstep.dashboard.deadletters"]
)
