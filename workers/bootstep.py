"""Celery bootstep that runs Lockstep's ordered consumers inside a worker.

It starts in the worker's main process after the pool (so pool children never inherit
the consumer threads) and stops before the worker exits, so each queue finishes its
message in progress, commits, and is unlocked. Subscriptions come from the Django setting
``LOCKSTEP_SUBSCRIPTIONS`` when Django is configured, else from the environment variable
of the same name (JSON). An empty list runs none.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import bootsteps

from workers.config import Subscription, redis_url, subscriptions_from_json
from workers.consumer import Consumer

log = logging.getLogger(__name__)


def configured_subscriptions() -> list[Subscription]:
    try:
        from django.conf import settings

        subs = getattr(settings, "LOCKSTEP_SUBSCRIPTIONS", None)
        if subs is not None:
            return list(subs)
    except ImportError:
        pass
    return subscriptions_from_json(os.environ.get("LOCKSTEP_SUBSCRIPTIONS", "[]"))


class LockstepConsumers(bootsteps.StartStopStep):
    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.consumer: Consumer | None = None

    def start(self, parent: Any) -> None:
        subs = configured_subscriptions()
        if not subs:
            log.info("lockstep: no subscriptions configured")
            return
        self.consumer = Consumer(redis_url(), subs)
        self.consumer.start()
        log.info(
            "lockstep: consumer %s started %d subscription(s)",
            self.consumer.consumer_id,
            len(self.consumer.runners),
        )

    def stop(self, parent: Any) -> None:
        if self.consumer is not None:
            self.consumer.stop()
            log.info("lockstep: consumer %s stopped", self.consumer.consumer_id)
            self.consumer = None

    def shutdown(self, parent: Any) -> None:
        self.stop(parent)
