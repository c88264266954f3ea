"""Celery bootstep that runs Lockstep's ordered consumers inside a worker.

It starts in the worker's main process after the pool (so pool children never inherit
the consumer threads) and stops before the worker exits, so each queue finishes its
message in progress, commits, and is unlocked.

Configuration is handed in, never imported: ``LockstepConsumers`` reads the environment
(``LOCKSTEP_SUBSCRIPTIONS`` as JSON, ``REDIS_URL``, the ``LOCKSTEP_*`` timings);
``configured_step`` makes a step that asks the given callables instead;
``lockstep.celery.install`` (the public way, which ``dashboard/celery.py`` uses too) adds
one to any Celery app. An empty subscription list runs none.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from celery import bootsteps

from lockstep.workers.config import Subscription, Timings, redis_url, subscriptions_from_json
from lockstep.workers.consumer import Consumer

log = logging.getLogger(__name__)


class LockstepConsumers(bootsteps.StartStopStep):
    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.consumer: Consumer | None = None

    def subscriptions(self) -> list[Subscription]:
        """What to consume; read when the worker starts."""
        return subscriptions_from_json(os.environ.get("LOCKSTEP_SUBSCRIPTIONS", "[]"))

    def redis_url(self) -> str:
        return redis_url()

    def timings(self) -> Timings | None:
        """The consumer's timings; None reads them from the environment."""
        return None

    def start(self, parent: Any) -> None:
        subs = self.subscriptions()
        if not subs:
            log.info("lockstep: no subscriptions configured")
            return
        self.consumer = Consumer(self.redis_url(), subs, timings=self.timings())
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


def configured_step(
    subscriptions: Callable[[], Sequence[Subscription]],
    url: Callable[[], str] = redis_url,
    timings: Callable[[], Timings | None] | None = None,
) -> type[LockstepConsumers]:
    """A ``LockstepConsumers`` step that takes its subscriptions, Redis URL and timings
    (None: from the environment) from the callables, called when the worker starts (so
    settings may load lazily)."""

    class ConfiguredLockstepConsumers(LockstepConsumers):
        def subscriptions(self) -> list[Subscription]:
            return list(subscriptions())

        def redis_url(self) -> str:
            return url()

        def timings(self) -> Timings | None:
            return timings() if timings is not None else None

    return ConfiguredLockstepConsumers
