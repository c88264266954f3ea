"""The Celery application. Its worker embeds Lockstep's ordered consumers through the
``LockstepConsumers`` bootstep; beat runs the dashboard's scheduled tasks."""

import os

from celery import Celery

from workers.bootstep import LockstepConsumers

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("lockstep")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.steps["worker"].add(LockstepConsumers)
app.autodiscover_tasks(["dashboard.monitor", "dashboard.reports"])
