"""Runtime timings and subscriptions.

Defaults follow RocketMQ's orderly consumer (``RebalanceLockManager``,
``ConsumeMessageOrderlyService``, ``ProcessQueue``); each can be overridden from the
environment so tests can run with a lock expiry of a few seconds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from lockstep.workers.env import env_float, env_int
from lockstep.workers.errors import ConfigurationError
from lockstep.workers.handler_log import HANDLER_LOG_INTERVAL_S
from lockstep.workers.handlers import HandlerSpec, handler_name
from lockstep.workers.message import clamp_suspend

# RocketMQ's orderly default (Integer.MAX_VALUE): retry forever, the queue blocks meanwhile.
UNBOUNDED = -1
# RocketMQ caps consumeMessageBatchMaxSize at 32; a suspend retries the whole batch.
MAX_BATCH = 32


class Model(StrEnum):
    CLUSTERING = "clustering"
    BROADCASTING = "broadcasting"


class Ordering(StrEnum):
    QUEUE = "queue"  # one message (batch) of a queue at a time, as RocketMQ
    KEY = "key"  # lanes: only messages of the same key are ordered


class AfterDlq(StrEnum):
    CONTINUE = "continue"  # the key moves on (RocketMQ's behaviour)
    HOLD = "hold"  # the key's later messages are parked until the dead letter is handled


# The plain strings a subscription accepts for each enum field (``ordering="key"``), so a
# caller's type checker catches a typo; ``Subscription`` stores the enum member.
ModelName = Literal["clustering", "broadcasting"]
OrderingName = Literal["queue", "key"]
AfterDlqName = Literal["continue", "hold"]


@dataclass(frozen=True)
class Timings:
    """All durations in seconds."""

    # RocketMQ's broker drops a lock not renewed for 60 s (REBALANCE_LOCK_MAX_LIVE_TIME).
    lock_ttl_s: float = 60.0
    # RocketMQ renews all held locks every 20 s (REBALANCE_LOCK_INTERVAL).
    lock_renew_interval_s: float = 20.0
    # A client-side lock older than 30 s counts as expired (REBALANCE_LOCK_MAX_LIVE_TIME
    # in ProcessQueue): shorter than the broker's 60 s so a consumer stops before anyone
    # else can be granted the queue.
    client_lock_expiry_s: float = 30.0
    # RocketMQ rebalances every 20 s (rebalanceInterval).
    rebalance_interval_s: float = 20.0
    # How often membership is checked so joins and leaves trigger a rebalance at once.
    membership_poll_s: float = 1.0
    # Five beats per heartbeat timeout: one late beat never evicts a member.
    heartbeat_interval_s: float = 3.0
    # A member silent this long is considered gone (RocketMQ: 120 s channel expiry; we
    # keep it short because Redis, not a TCP channel, is the only sign of life).
    heartbeat_timeout_s: float = 15.0
    # Consuming one queue continuously this long yields briefly (MAX_TIME_CONSUME_CONTINUOUSLY).
    max_continuous_s: float = 60.0
    # RocketMQ yields 10 ms: long enough for other queues' threads to run.
    continuous_yield_s: float = 0.01
    # Blocking read timeout when a queue has nothing new: short, so a dropped queue or a
    # stop is noticed quickly; a new message wakes the read at once anyway.
    poll_block_s: float = 0.2
    # Events are buffered at most this long before they reach the event stream: one
    # pipelined write per window keeps the event log off the consume loop's cost.
    event_flush_interval_s: float = 0.1
    # A graceful stop (SIGTERM) waits this long for the messages in progress to finish and
    # their offsets to be written before the process exits. A handler still running then
    # is not cut short in Redis: its queue stays locked until the lock expires, so the
    # next owner redelivers it after that, never alongside it.
    shutdown_timeout_s: float = 10.0
    # Offset commits are recorded as at most one ``offset_committed`` event per (queue,
    # group) this often: the committed offset itself lives in Redis (pages, alerts and
    # /metrics read it live), so the event log only needs its history at chart
    # resolution. Per commit it would grow with throughput (about 2 GB a day at 50
    # messages a second); 5 s is RocketMQ's offset persist interval and half the lag
    # sample period, so a queue chart still gets two commit points per sample.
    commit_event_interval_s: float = 5.0
    # A handler's failures are logged (logger ``lockstep``) at most once per (group,
    # topic, queue) this often; why a minute: workers/handler_log.py. Set in code only
    # (``Timings(handler_log_interval_s=...)``): tests shorten it.
    handler_log_interval_s: float = HANDLER_LOG_INTERVAL_S

    @classmethod
    def from_env(cls) -> Timings:
        d = cls()
        return cls(
            lock_ttl_s=env_float("LOCKSTEP_LOCK_TTL", d.lock_ttl_s, minimum=0.5),
            lock_renew_interval_s=env_float(
                "LOCKSTEP_LOCK_RENEW_INTERVAL", d.lock_renew_interval_s, minimum=0.1
            ),
            client_lock_expiry_s=env_float(
                "LOCKSTEP_CLIENT_LOCK_EXPIRY", d.client_lock_expiry_s, minimum=0.2
            ),
            rebalance_interval_s=env_float(
                "LOCKSTEP_REBALANCE_INTERVAL", d.rebalance_interval_s, minimum=0.1
            ),
            membership_poll_s=env_float(
                "LOCKSTEP_MEMBERSHIP_POLL", d.membership_poll_s, minimum=0.05
            ),
            heartbeat_interval_s=env_float(
                "LOCKSTEP_HEARTBEAT_INTERVAL", d.heartbeat_interval_s, minimum=0.05
            ),
            heartbeat_timeout_s=env_float(
                "LOCKSTEP_HEARTBEAT_TIMEOUT", d.heartbeat_timeout_s, minimum=0.2
            ),
            max_continuous_s=env_float("LOCKSTEP_MAX_CONTINUOUS", d.max_continuous_s, minimum=0.1),
            continuous_yield_s=d.continuous_yield_s,
            poll_block_s=env_float("LOCKSTEP_POLL_BLOCK", d.poll_block_s, minimum=0.01),
            event_flush_interval_s=env_float(
                "LOCKSTEP_EVENT_FLUSH_INTERVAL", d.event_flush_interval_s, minimum=0.01
            ),
            commit_event_interval_s=commit_event_interval_from_env(),
            shutdown_timeout_s=env_float(
                "LOCKSTEP_SHUTDOWN_TIMEOUT", d.shutdown_timeout_s, minimum=0.5
            ),
        )

    def validate(self) -> Timings:
        if self.client_lock_expiry_s >= self.lock_ttl_s:
            raise ConfigurationError(
                "LOCKSTEP_CLIENT_LOCK_EXPIRY must be shorter than LOCKSTEP_LOCK_TTL, or a "
                "consumer could keep consuming after another was granted its queue"
            )
        if self.lock_renew_interval_s >= self.client_lock_expiry_s:
            raise ConfigurationError(
                "LOCKSTEP_LOCK_RENEW_INTERVAL must be shorter than LOCKSTEP_CLIENT_LOCK_EXPIRY"
            )
        return self


def commit_event_interval_from_env() -> float:
    """``LOCKSTEP_COMMIT_EVENT_INTERVAL`` in seconds (0: one event per commit)."""
    return env_float("LOCKSTEP_COMMIT_EVENT_INTERVAL", Timings.commit_event_interval_s, minimum=0.0)


@dataclass(frozen=True)
class Limits:
    # Bounds what a worker buffers (PREFETCH messages; parked copies are base64).
    max_body_bytes: int = 4 * 1024 * 1024
    # 0 = streams are not trimmed: trimming could drop messages not yet consumed.
    stream_maxlen: int = 0
    # Bounds Redis memory while the ingester is down; a longer outage is recorded as
    # events_lost by the ingester.
    events_maxlen: int = 1_000_000
    # A key is part of Redis key names (parked sets), of every dead letter and event, and
    # a lane's identity: 1 KiB holds any id or composite key while bounding all of them.
    max_key_bytes: int = 1024
    # A producer's retry comes within seconds or minutes; a day covers a retry after an
    # outage or a redeploy, and bounds the records (one small string per keyed send).
    idempotency_ttl_s: int = 86_400
    # Threads that step one subscription's queues on a standalone Redis, however many it
    # owns (docs/reading.md): under queue ordering also how many handlers run at once.
    queue_threads: int = 16
    # Connections a consumer process keeps to a standalone Redis, shared by all its
    # threads (a command holds one for a round trip; nothing blocks on them since the
    # pool's reader reads on a connection of its own): docs/reading.md.
    redis_connections: int = 6

    @classmethod
    def from_env(cls) -> Limits:
        d = cls()
        return cls(
            max_body_bytes=env_int("LOCKSTEP_MAX_BODY_BYTES", d.max_body_bytes, minimum=1),
            stream_maxlen=env_int("LOCKSTEP_STREAM_MAXLEN", d.stream_maxlen, minimum=0),
            events_maxlen=env_int("LOCKSTEP_EVENTS_MAXLEN", d.events_maxlen, minimum=1000),
            max_key_bytes=env_int("LOCKSTEP_MAX_KEY_BYTES", d.max_key_bytes, minimum=1),
            idempotency_ttl_s=env_int(
                "LOCKSTEP_IDEMPOTENCY_TTL_SECONDS", d.idempotency_ttl_s, minimum=1
            ),
            queue_threads=env_int("LOCKSTEP_QUEUE_THREADS", d.queue_threads, minimum=1),
            redis_connections=env_int("LOCKSTEP_REDIS_CONNECTIONS", d.redis_connections, minimum=2),
        )


@dataclass(frozen=True)
class SendOptions:
    """How a producer's send rides out a failover (docs/cluster.md §4, §6)."""

    # 0: a send returns once the master stored the message (replication is asynchronous,
    # so a master that dies right after may lose it). N: it returns only once N replicas
    # acknowledged it (Redis WAIT), so it survives the master's failover.
    wait_replicas: int = 0
    wait_timeout_ms: int = 1000
    # How long a send keeps trying while the server is unavailable (a failover, a
    # restart) before it raises; it retries only what was certainly not stored, or, with
    # an idempotency key, anything. None: 10 s on a cluster, 0 on a standalone server.
    retry_s: float | None = None

    @classmethod
    def from_env(cls) -> SendOptions:
        d = cls()
        raw_retry = os.environ.get("LOCKSTEP_SEND_RETRY_SECONDS", "").strip()
        return cls(
            wait_replicas=env_int("LOCKSTEP_SEND_WAIT_REPLICAS", d.wait_replicas, minimum=0),
            wait_timeout_ms=env_int("LOCKSTEP_SEND_WAIT_TIMEOUT_MS", d.wait_timeout_ms, minimum=1),
            retry_s=env_float("LOCKSTEP_SEND_RETRY_SECONDS", 0.0, minimum=0.0)
            if raw_retry
            else None,
        )


@dataclass(frozen=True)
class Subscription:
    """One (topic, group, handler) the runtime consumes.

    ``handler`` is a callable ``(messages, ctx) -> ConsumeStatus`` or the dotted path of
    one (``"pkg.mod.func"``, imported when the consumer starts); ``handler_name`` is how
    events, cards and log lines name it. ``model``, ``ordering`` and ``after_dlq`` take the
    enum member or its plain string (``ordering="key"``); after construction they always
    hold the enum member. ``max_reconsume_times`` of ``UNBOUNDED`` (-1) retries forever, as
    RocketMQ's orderly consumer does by default; a finite value dead-letters a message
    after that many retries. Every field is checked here: a bad value raises
    ``ConfigurationError`` at once, not later inside a consumer thread.
    """

    topic: str
    group: str
    handler: HandlerSpec
    batch_size: int = 1
    max_reconsume_times: int = UNBOUNDED
    suspend_ms: int = 1000
    model: Model | ModelName = Model.CLUSTERING
    consumer_name: str = ""  # stable name for broadcasting offsets; defaults to host name
    ordering: Ordering | OrderingName = Ordering.QUEUE
    # Key ordering: handler threads per subscription in one consumer process.
    lanes: int = 16
    # Key ordering: pulling a queue pauses above this many unfinished messages and
    # resumes at half (RocketMQ's pullThresholdForQueue is 1,000).
    max_in_flight: int = 1000
    after_dlq: AfterDlq | AfterDlqName = AfterDlq.CONTINUE
    # Key ordering: per-key retry back-off (initial delay, factor, cap).
    retry_initial_ms: int = 1000
    retry_factor: float = 2.0
    retry_max_ms: int = 30_000
    # Key ordering: how often the low-water mark and completed offsets are committed
    # (RocketMQ persists every 5 s; shorter means fewer redeliveries after a crash).
    flush_interval_ms: int = 500
    # Queue ordering: how often the handled position is committed (RocketMQ keeps consumed
    # offsets in memory and persists them every 5 s). A commit per batch costs a round
    # trip per message at batch size 1; a few hundred ms keeps what a crash redelivers
    # small. 0 commits after every batch. A hand-over, a stop, a suspend and a dead letter
    # commit first, under the fence.
    commit_interval_ms: int = 200
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("topic", "group"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigurationError(f"subscription {name} must be a non-empty string")
        handler = self.handler
        if not (callable(handler) or (isinstance(handler, str) and handler.strip())):
            raise ConfigurationError(
                "subscription handler must be a callable or a non-empty dotted path"
            )
        # A plain string ("key") is taken for its enum member; anything else is refused
        # here rather than failing later inside a consumer thread.
        for name, kind in (("model", Model), ("ordering", Ordering), ("after_dlq", AfterDlq)):
            try:
                object.__setattr__(self, name, kind(getattr(self, name)))
            except ValueError:
                allowed = ", ".join(m.value for m in kind)
                raise ConfigurationError(
                    f"{name} must be one of {allowed}, got {getattr(self, name)!r}"
                ) from None
        if any(c in self.topic + self.group for c in "{}: "):
            raise ConfigurationError(
                f"topic and group names may not contain braces, colons or spaces: "
                f"{self.topic!r}, {self.group!r}"
            )
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise ConfigurationError(f"batch_size must be 1..{MAX_BATCH}, got {self.batch_size}")
        if self.max_reconsume_times < UNBOUNDED:
            raise ConfigurationError("max_reconsume_times must be -1 (unbounded) or >= 0")
        if self.suspend_ms < 1:
            raise ConfigurationError("suspend_ms must be positive")
        if not 1 <= self.lanes <= 512:  # each lane is a thread in every consumer process
            raise ConfigurationError(f"lanes must be 1..512, got {self.lanes}")
        if self.max_in_flight < 2:  # pulling resumes at half: at least 1
            raise ConfigurationError("max_in_flight must be at least 2")
        if self.retry_initial_ms < 1 or self.retry_max_ms < self.retry_initial_ms:
            raise ConfigurationError("retry_initial_ms must be >= 1 and <= retry_max_ms")
        if self.retry_factor < 1.0:
            raise ConfigurationError("retry_factor must be at least 1.0")
        # Below 10 ms it is a commit per message; above a minute a crash redoes too much.
        if not 10 <= self.flush_interval_ms <= 60_000:
            raise ConfigurationError("flush_interval_ms must be 10..60000")
        if not 0 <= self.commit_interval_ms <= 60_000:
            raise ConfigurationError("commit_interval_ms must be 0..60000 (0: every batch)")
        if self.ordering is Ordering.KEY and self.model is Model.BROADCASTING:
            raise ConfigurationError("key ordering is for the clustering model only")

    @property
    def handler_name(self) -> str:
        """The handler as events, cards and log lines name it: the dotted path as given,
        or a callable's ``module.qualname``."""
        return handler_name(self.handler)

    def retry_delay(self, reconsume_times: int) -> float:
        """Seconds before a key's next attempt after its ``reconsume_times``-th failure."""
        delay = self.retry_initial_ms * self.retry_factor ** max(0, reconsume_times - 1)
        return min(delay, self.retry_max_ms) / 1000.0

    @property
    def suspend_seconds(self) -> float:
        return clamp_suspend(self.suspend_ms / 1000.0)

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> Subscription:
        """A subscription from settings (``LOCKSTEP_SUBSCRIPTIONS``): the handler is a
        dotted path there, since JSON cannot name a callable."""
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        unknown = set(data) - known
        if unknown:
            raise ConfigurationError(f"unknown subscription settings: {sorted(unknown)}")
        values = dict(data)  # the enum fields' strings are taken (and checked) by __init__
        missing = {"topic", "group", "handler"} - set(values)
        if missing:
            raise ConfigurationError(f"subscription is missing {sorted(missing)}")
        if not isinstance(values["handler"], str):
            raise ConfigurationError("a configured handler must be a dotted path string")
        return cls(**values)


def subscriptions_from_json(raw: str) -> list[Subscription]:
    """Parse ``LOCKSTEP_SUBSCRIPTIONS`` (a JSON list of objects)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"LOCKSTEP_SUBSCRIPTIONS is not valid JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ConfigurationError("LOCKSTEP_SUBSCRIPTIONS must be a JSON list of objects")
    return [Subscription.from_mapping(d) for d in data]


def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "").strip()
    if not url:
        raise ConfigurationError("REDIS_URL is not set (e.g. redis://127.0.0.1:6379/0)")
    return url
