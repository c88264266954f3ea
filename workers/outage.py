"""Redis outages as one process sees them: told once when they start, once when they end.

Every loop of the runtime (rebalance, queue workers, lanes, the event log, the consumer
card) touches Redis. While Redis is unreachable each of them fails every poll; logging
each failure would bury the one fact an operator needs ("Redis is down since 12:03, and
back at 12:05") under hundreds of tracebacks, and reporting it as a handler error would
blame code that did nothing wrong. So a connection failure is reported here:
``redis_outage.failed(exc, where)`` logs one warning for the whole outage (the first
failure) and ``redis_outage.ok(started)`` logs one when a call begun since succeeds.
What each loop does meanwhile is its own business (retry, or restart from the state
stored in Redis); see docs/semantics.md, "Redis outages".
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ClusterDownError, MasterDownError, ReadOnlyError
from redis.retry import Retry

from lockstep.workers.config import Limits
from lockstep.workers.connection import connect

log = logging.getLogger("lockstep.workers.outage")

# The errors that mean "Redis cannot be reached or cannot write right now", as opposed to
# a bug (a wrong command, a script error), which still deserves its traceback.
REDIS_DOWN: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    ReadOnlyError,
    ClusterDownError,
    MasterDownError,
)

# A failure this soon after the outage was declared over is a call that started before
# Redis came back (a thread blocked on a dead socket): it does not open a new outage.
RECOVERY_GRACE_S = 1.0

# Waiting for Redis at start-up: the first retry after half a second, doubling up to 10 s
# (a Redis that restarts takes about a second; one that is down for long is not hammered).
START_BACKOFF_S = (0.5, 10.0)

# Longer than any blocking read of the runtime (poll_block_s) and any script, so a paused
# or black-holed Redis counts as an outage instead of hanging a thread forever.
SOCKET_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 5.0


class Outage:
    """Thread-safe: many loops report into one instance. ``failed`` returns True for the
    failure that opened the outage (the one that was logged)."""

    def __init__(self, logger: logging.Logger = log) -> None:
        self._log = logger
        self._lock = threading.Lock()
        self._since: float | None = None
        self._recovered_at = float("-inf")
        self._where = ""

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, exc: BaseException, where: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._since is not None or now - self._recovered_at < RECOVERY_GRACE_S:
                return False
            self._since, self._where = now, where
        self._log.warning(
            "lockstep: Redis is unreachable (%s, seen by %s); waiting for it to come back",
            describe(exc),
            where,
        )
        return True

    def ok(self, started: float) -> None:
        """A call succeeded: the outage, if one is open, is over. ``started``: when that
        call began (``time.monotonic()``). A call that began before the outage opened was
        answered before Redis went, its reply handled after another thread's failure (a
        shutdown closes the connections one by one): it ends nothing."""
        if self._since is None:  # the common case costs no lock
            return
        now = time.monotonic()
        with self._lock:
            if self._since is None or started < self._since:
                return
            lasted, self._since, self._recovered_at = now - self._since, None, now
        self._log.warning("lockstep: Redis is reachable again after %.1f s", lasted)


# One per process: "one warning when an outage starts and one when it ends, per process".
redis_outage = Outage()


def describe(exc: BaseException) -> str:
    """The error in one line, without a traceback."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def connection_name(consumer_id: str) -> str:
    """The name of a consumer's Redis connections: ``lockstep:`` and its id, with what
    ``CLIENT SETNAME`` refuses (spaces, newlines, anything outside printable ASCII) as
    ``_``."""
    return "lockstep:" + re.sub(r"[^!-~]", "_", consumer_id)


def runtime_client(
    url: str, *, connections: int | None = None, consumer_id: str | None = None
) -> redis.Redis:
    """The runtime's Redis client. One immediate retry of a failed command reconnects a
    pooled connection that a Redis restart left dead; more retries (redis-py's default
    retries ten times with back-off) would only stretch an outage into every call and
    could run a non-idempotent script twice after a lost reply. Its threads share
    ``LOCKSTEP_REDIS_CONNECTIONS`` connections to a standalone Redis, or to each node of
    a Redis Cluster (the cluster client, ``workers.connection``), waited for when all are
    in use (docs/reading.md). No thread holds one while it waits for another: nothing
    blocks in a read on them, and a pipeline spanning nodes goes node by node
    (``connection.execute_per_node``), never through the cluster client's pipeline.

    ``connections``: that count instead of ``LOCKSTEP_REDIS_CONNECTIONS``. ``consumer_id``:
    every connection is named after it (``CLIENT SETNAME``, ``connection_name``), so
    ``CLIENT LIST`` shows which consumer holds what."""
    options: dict[str, Any] = {
        "connection_pool_class": redis.BlockingConnectionPool,
        "max_connections": connections or Limits.from_env().redis_connections,
        "timeout": None,
    }
    if consumer_id is not None:
        options["client_name"] = connection_name(consumer_id)
    return connect(
        url,
        health_check_interval=30,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
        **options,
    )


def wait_for_redis(
    client: redis.Redis,
    stop: threading.Event,
    where: str,
    logger: logging.Logger = log,
) -> bool:
    """Block until ``client`` answers a PING (True) or ``stop`` is set (False), logging one
    line per back-off step while Redis cannot be reached."""
    delay, cap = START_BACKOFF_S
    while not stop.is_set():
        try:
            client.ping()
            return True
        except REDIS_DOWN as exc:
            logger.warning(
                "lockstep: %s waits for Redis (%s); next try in %.1f s", where, describe(exc), delay
            )
        if stop.wait(delay):
            break
        delay = min(delay * 2, cap)
    return False
