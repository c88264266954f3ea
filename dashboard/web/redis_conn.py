"""The dashboard's Redis client, built from settings at call time (tests swap the URL), and
where the web side's long-running processes report a Redis outage (``workers.outage``:
one warning when it starts, one when it ends, per process)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import redis
from django.conf import settings

from lockstep.workers.connection import connect
from lockstep.workers.outage import REDIS_DOWN, Outage, redis_outage

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# What a scheduled task returns (and Celery records) when it ran during an outage.
SKIPPED = "skipped: Redis is unreachable"

_clients: dict[str, redis.Redis] = {}
_other_outages: dict[str, Outage] = {}


def get_redis() -> redis.Redis:
    url = settings.REDIS_URL
    client = _clients.get(url)
    if client is None:
        client = connect(url, socket_timeout=10)
        _clients[url] = client
    return client


def channel_layer_outage() -> Outage:
    """Where a push reports that the channel layer's Redis failed or answered: the
    process's ``redis_outage`` when the layer runs on ``REDIS_URL``'s server (the
    default), so one outage is told once; otherwise an ``Outage`` of that server's own,
    because a push that succeeds there says nothing about ``REDIS_URL`` (sharing one
    record would end and reopen the outage at every push)."""
    layers: dict[str, Any] = settings.CHANNEL_LAYERS
    hosts = layers.get("default", {}).get("CONFIG", {}).get("hosts") or [settings.REDIS_URL]
    url = _layer_address(hosts[0])
    if url == settings.REDIS_URL:
        return redis_outage
    return _other_outages.setdefault(url, Outage())


def _layer_address(host: Any) -> str:
    """A channels_redis host's server: the host itself (a URL), or its ``address`` when
    it is a dict of connection options (settings.CHANNEL_LAYERS gives timeouts that way)."""
    if isinstance(host, dict):
        host = host.get("address", host)
    return str(host)


def skipped_during_redis_outage(task: Callable[P, R]) -> Callable[P, R | str]:
    """For scheduled tasks over Redis: a run that meets an outage returns ``SKIPPED``
    (the next tick does its work) instead of failing. Celery would log every failed run
    with a traceback; the outage is told once per process by ``redis_outage`` instead,
    and a run that succeeds ends it. Other errors still fail the task."""

    @functools.wraps(task)
    def run(*args: P.args, **kwargs: P.kwargs) -> R | str:
        started = time.monotonic()
        try:
            result = task(*args, **kwargs)
        except REDIS_DOWN as exc:
            redis_outage.failed(exc, f"task {task.__name__}")
            log.info("%s skipped: Redis is unreachable", task.__name__)
            return SKIPPED
        redis_outage.ok(started)
        return result

    return run
