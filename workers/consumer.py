"""A consumer process's runtime: one ``SubscriptionRunner`` per subscription, one shared
Redis connection pool and one event log."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterable

import redis

from lockstep.workers import events as ev
from lockstep.workers import keys
from lockstep.workers.broker import Broker
from lockstep.workers.cards import ConsumerCard, SubscriptionCard
from lockstep.workers.config import Limits, Model, Ordering, Subscription, Timings
from lockstep.workers.connection import (
    MAX_CONNECTIONS,
    cluster_of,
    execute_per_node,
    has_sharded_pubsub,
)
from lockstep.workers.errors import LockstepError
from lockstep.workers.events import EventLog, default_consumer_id
from lockstep.workers.handler_log import HandlerLog
from lockstep.workers.handlers import import_handler
from lockstep.workers.lanes import LanePool
from lockstep.workers.message import Handler
from lockstep.workers.ordering import WorkerEnv
from lockstep.workers.ordering.cluster_pool import ClusterQueuePool
from lockstep.workers.ordering.commits import Commits
from lockstep.workers.ordering.runner import QueueThreads, Runner
from lockstep.workers.ordering.scheduler import QueuePool
from lockstep.workers.outage import REDIS_DOWN, redis_outage, runtime_client, wait_for_redis
from lockstep.workers.rebalance import SubscriptionRunner

log = logging.getLogger(__name__)


class Consumer:
    """Start with ``start()``, stop with ``stop()``. A subscription whose handler does not
    import, or whose topic does not exist, is reported (log + ``handler_error`` event) and
    skipped; the others run. ``handlers`` maps dotted paths to callables to use instead of
    importing them; a subscription may also hand its callable in directly. A handler's
    failures are logged on the logger ``lockstep``, rate-limited (workers/handler_log.py)."""

    def __init__(
        self,
        redis_url: str,
        subscriptions: Iterable[Subscription],
        *,
        timings: Timings | None = None,
        limits: Limits | None = None,
        consumer_id: str | None = None,
        events_enabled: bool = True,
        handlers: dict[str, Handler] | None = None,
    ) -> None:
        self.timings = (timings or Timings.from_env()).validate()
        limits = limits or Limits.from_env()
        self.consumer_id = consumer_id or default_consumer_id()
        self.redis_url = redis_url
        self.client = runtime_client(
            redis_url, connections=limits.redis_connections, consumer_id=self.consumer_id
        )
        # A cluster of Redis 6's blocking reads, apart from the bounded shared client.
        self._read_client: redis.Redis | None = None
        self.broker = Broker(self.client)
        self.events = EventLog(
            self.client,
            enabled=events_enabled,
            flush_interval=self.timings.event_flush_interval_s,
            maxlen=limits.events_maxlen,
            commit_event_interval=self.timings.commit_event_interval_s,
        )
        self.subscriptions = list(subscriptions)
        self._handlers = handlers or {}
        self.handler_log = HandlerLog(self.timings.handler_log_interval_s)
        self.runners: list[SubscriptionRunner] = []
        self.errors: list[str] = []
        self.started_at_ms = int(time.time() * 1000)
        self._stopping = threading.Event()
        # Held while the subscriptions start, so a stop never races a start-up that was
        # waiting for Redis.
        self._start_lock = threading.Lock()
        self._waiter: threading.Thread | None = None
        self._info_thread = threading.Thread(
            target=self._info_loop, name="lockstep-info", daemon=True
        )

    def start(self) -> None:
        """Start consuming; returns at once. When Redis cannot be reached yet, a thread
        waits for it (one log line per back-off step) and starts the subscriptions when it
        answers; ``stop()`` ends the wait."""
        self.events.start()
        try:
            self.client.ping()
        except REDIS_DOWN:
            self._waiter = threading.Thread(
                target=self._start_when_reachable, name="lockstep-start", daemon=True
            )
            self._waiter.start()
            return
        self._start_subscriptions()

    def _start_when_reachable(self) -> None:
        if wait_for_redis(self.client, self._stopping, f"consumer {self.consumer_id}"):
            log.warning("lockstep: consumer %s reached Redis; starting", self.consumer_id)
            self._start_subscriptions()

    def _start_subscriptions(self) -> None:
        with self._start_lock:
            if self._stopping.is_set():
                return
            for sub in self.subscriptions:
                try:
                    runner = SubscriptionRunner(self._env(sub))
                    runner.start()
                except LockstepError as exc:
                    self._report(sub, str(exc))
                    continue
                self.runners.append(runner)
            self._publish_info_quietly()
            self._info_thread.start()
            info = dict(self._info())
            self.events.emit(ev.CONSUMER_STARTED, consumer=self.consumer_id, details=info)

    def stop(self, timeout: float | None = None) -> None:
        """Graceful stop, bounded by ``timeout`` (default ``LOCKSTEP_SHUTDOWN_TIMEOUT``)
        also while Redis is down: no queue takes a new message; each finishes the one in
        progress, writes its offsets and is unlocked; then the consumer leaves its groups
        (so the others rebalance at once) and removes its card. Never raises because Redis
        cannot be reached: what could not be written is redelivered to the next owner."""
        limit = self.timings.shutdown_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + limit
        self._stopping.set()
        with self._start_lock:
            runners = list(self.runners)
        for runner in runners:
            runner.stop(max(0.1, deadline - time.monotonic()))
        self.events.emit(ev.CONSUMER_STOPPED, consumer=self.consumer_id)
        self.events.stop()
        try:
            card, cid = keys.consumer_info(self.consumer_id), self.consumer_id
            execute_per_node(
                self.client,
                [
                    (card, lambda to: to.delete(card)),
                    (keys.CONSUMERS, lambda to: to.srem(keys.CONSUMERS, cid)),
                ],
            )
        except REDIS_DOWN as exc:
            redis_outage.failed(exc, f"consumer {self.consumer_id} stopping")
        self.client.close()
        if self._read_client is not None:
            self._read_client.close()

    def _info_loop(self) -> None:
        while not self._stopping.wait(self.timings.heartbeat_interval_s):
            self._publish_info_quietly()

    def _publish_info_quietly(self) -> None:
        started = time.monotonic()
        try:
            self._publish_info()
        except REDIS_DOWN as exc:
            redis_outage.failed(exc, f"consumer {self.consumer_id}")
        except redis.RedisError as exc:
            log.warning("lockstep: cannot publish consumer info (%s); retrying", exc)
        else:
            redis_outage.ok(started)

    def _handler(self, sub: Subscription) -> Handler:
        if isinstance(sub.handler, str) and sub.handler in self._handlers:
            return self._handlers[sub.handler]
        return import_handler(sub.handler)

    def _env(self, sub: Subscription) -> WorkerEnv:
        handler = self._handler(sub)
        offset_group = sub.group
        if sub.model is Model.BROADCASTING:
            name = sub.consumer_name or socket.gethostname()
            offset_group = f"{sub.group}%bc%{name}"
        key = sub.ordering is Ordering.KEY
        lanes = LanePool(sub.lanes) if key else None
        return WorkerEnv(
            sub,
            self.broker,
            self.events,
            self.timings,
            self.consumer_id,
            handler,
            offset_group,
            lanes,
            self.handler_log,
            self._runner(sub),
            self._commits(sub),
        )

    def _commits(self, sub: Subscription) -> Commits | None:
        """Who writes the queues' periodic commits, every queue's in one round trip:
        key ordering's every ``flush_interval_ms``, queue ordering's every
        ``commit_interval_ms`` (none with 0: each batch commits itself)."""
        if sub.ordering is Ordering.KEY:
            interval_s = sub.flush_interval_ms / 1000.0
        elif sub.commit_interval_ms > 0:
            interval_s = sub.commit_interval_ms / 1000.0
        else:
            return None
        return Commits(self.broker, interval_s, f"{sub.group}-{sub.topic}"[:40])

    def _runner(self, sub: Subscription) -> Runner | None:
        """A bounded pool for the subscription's queues: on a standalone Redis it reads
        every waiting queue in one ``XREAD``, on a cluster (no ``XREAD`` across slots) it
        is woken by sharded pub/sub; a cluster of Redis 6 (no sharded pub/sub) runs a
        thread per queue (docs/reading.md)."""
        threads = Limits.from_env().queue_threads
        name = f"{sub.group}-{sub.topic}"[:40]
        if cluster_of(self.client) is None:
            return QueuePool(self.client, threads, name)
        if has_sharded_pubsub(self.client):
            return ClusterQueuePool(self.client, threads, name)
        # A thread per queue, each blocking in a read that holds a connection: on a
        # client of their own (connections named ``<consumer id>/reads``), whose pools
        # are not bounded, so the reads never make renewals and commits wait.
        if self._read_client is None:
            self._read_client = runtime_client(
                self.redis_url,
                connections=MAX_CONNECTIONS,
                consumer_id=f"{self.consumer_id}/reads",
            )
        return QueueThreads(self._read_client, self.timings.poll_block_s)

    def _report(self, sub: Subscription, error: str) -> None:
        log.error("lockstep: subscription %s/%s not started: %s", sub.group, sub.topic, error)
        self.errors.append(error)
        self.events.emit(
            ev.HANDLER_ERROR,
            topic=sub.topic,
            group=sub.group,
            consumer=self.consumer_id,
            details={"error": error, "handler": sub.handler_name},
        )

    def _info(self) -> ConsumerCard:
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at_ms": self.started_at_ms,
            "heartbeat_at_ms": int(time.time() * 1000),
            "subscriptions": [self._subscription_card(r) for r in self.runners],
        }

    @staticmethod
    def _subscription_card(runner: SubscriptionRunner) -> SubscriptionCard:
        sub = runner.env.sub
        return {
            "topic": sub.topic,
            "group": sub.group,
            "handler": sub.handler_name,
            "model": str(sub.model),
            "ordering": str(sub.ordering),
            "lanes": sub.lanes if runner.env.lanes is not None else 0,
            "assigned": runner.assigned,
            "queues": {str(q): w.snapshot() for q, w in list(runner.workers.items())},
        }

    def _publish_info(self) -> None:
        """This consumer's card (host, pid, assignment) for the dashboard; it expires when
        the process stops refreshing it."""
        info = self._info()
        # The card outlives a missed refresh but disappears soon after its process dies.
        ttl = max(5, int(self.timings.heartbeat_timeout_s * 2))
        card, cid, text = keys.consumer_info(self.consumer_id), self.consumer_id, json.dumps(info)
        execute_per_node(
            self.client,
            [
                (card, lambda to: to.set(card, text, ex=ttl)),
                (keys.CONSUMERS, lambda to: to.sadd(keys.CONSUMERS, cid)),
            ],
        )
