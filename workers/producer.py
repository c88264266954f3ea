"""Synchronous, ordered sending: a key always goes to the same queue, offsets are dense.

The promise (docs/api.md §3): ``send`` returns the offset Redis stored the
message at, or raises. ``InvalidMessageError`` and ``UnknownTopicError`` mean nothing was
sent; ``SendError.maybe_stored`` says whether a failed send may have been stored. A send
again with the same idempotency key stores the message at most once.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection
from redis.exceptions import AskError, ClusterDownError, ReadOnlyError, TryAgainError
from redis.retry import Retry

from lockstep.workers import keys
from lockstep.workers.config import Limits, SendOptions
from lockstep.workers.connection import (
    cluster_of,
    connect,
    execute_on_node,
    is_cluster,
    node_client,
    refresh_layout,
)
from lockstep.workers.errors import ConfigurationError, InvalidMessageError, SendError
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.message import IDEMPOTENCY_KEY_HEADER
from lockstep.workers.outage import REDIS_DOWN
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import script
from lockstep.workers.topics import get_topic, validate_name

# A failover (a replica promoted after the cluster's node timeout) takes a few seconds.
CLUSTER_SEND_RETRY_S = 10.0
RETRY_FIRST_DELAY_S = 0.05
RETRY_MAX_DELAY_S = 1.0


@dataclass(frozen=True)
class SendResult:
    queue: int
    offset: int
    produced_at_ms: int = 0
    # True: an earlier send with the same idempotency key stored the message; this one
    # stored nothing and reports that send's offset and time.
    duplicate: bool = False


@dataclass(frozen=True)
class _Checked:
    """A message as it goes to Redis, after every check passed."""

    key: str
    body: bytes
    header_json: str
    idempotency_key: str  # "" when none


class _NotConnected(redis.ConnectionError):
    """No connected connection could be had: nothing of the command was written."""


class _Unavailable(SendError):
    """The server could not take the send right now (no connection, a cluster between
    masters, a slot moving): worth another try within ``SendOptions.retry_s``."""


class _SendPool(redis.ConnectionPool):
    """A pool that tells a failure to connect apart from a failure after it: the pool
    connects (and checks the connection) before a command is written, so a send that
    fails here cannot have reached Redis."""

    def get_connection(self, *args: Any, **options: Any) -> Connection:
        try:
            return super().get_connection(*args, **options)
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            raise _NotConnected(str(exc)) from exc


class Producer:
    """``send`` returns only after Redis stored the message, so a caller that sends a key's
    messages one after another gets them in that order. There is no fail-over to another
    queue: an ordered send that fails raises. Thread-safe (a pool of connections)."""

    def __init__(
        self,
        redis_url: str,
        *,
        limits: Limits | None = None,
        options: SendOptions | None = None,
    ) -> None:
        # No automatic retries: redis-py would re-run the produce script after a lost
        # reply and store the message twice. The caller retries, with an idempotency key.
        no_retry = Retry(NoBackoff(), 0)
        self._cluster = is_cluster(redis_url)
        self._client = connect(redis_url, connection_pool_class=_SendPool, retry=no_retry)
        self._limits = limits or Limits.from_env()
        self._options = options or SendOptions.from_env()
        default_retry = CLUSTER_SEND_RETRY_S if self._cluster else 0.0
        self._retry_s = default_retry if self._options.retry_s is None else self._options.retry_s
        self._produce = script(self._client, "produce")
        self._queue_counts: dict[str, int] = {}

    def send(
        self,
        topic: str,
        key: str,
        body: bytes,
        headers: dict[str, Any] | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> SendResult:
        """Store one message at the end of its key's queue and return where.

        ``idempotency_key`` (or the header ``lockstep-idempotency-key``) makes a retry
        safe: for ``LOCKSTEP_IDEMPOTENCY_TTL_SECONDS`` after the first send with it, a send
        of the same key and idempotency key stores nothing and returns the first send's
        offset with ``duplicate=True``. Raises ``InvalidMessageError`` (nothing sent),
        ``UnknownTopicError``, or ``SendError`` with ``maybe_stored``."""
        checked = self._check(topic, key, body, headers, idempotency_key)
        return self._store(topic, checked)

    def close(self) -> None:
        self._client.close()

    def _queue_count(self, topic: str) -> int:
        count = self._queue_counts.get(topic)
        if count is None:
            try:
                count = get_topic(self._client, topic).queues
            except REDIS_DOWN as exc:  # a read: nothing of the message was sent
                raise _Unavailable(f"could not read topic {topic!r} ({exc})", False) from exc
            except redis.RedisError as exc:
                raise SendError(f"could not read topic {topic!r} ({exc})", False) from exc
            self._queue_counts[topic] = count
        return count

    def _store(self, topic: str, checked: _Checked) -> SendResult:
        """One send, tried again while the server is unavailable, for up to
        ``retry_s``: what was certainly not stored, or anything with an idempotency key
        (its retry stores at most once)."""
        deadline = time.monotonic() + self._retry_s
        delay = RETRY_FIRST_DELAY_S
        while True:
            try:
                ref = QueueRef(topic, queue_for_key(checked.key, self._queue_count(topic)))
                return self._store_once(ref, checked)
            except SendError as exc:
                retry = isinstance(exc, _Unavailable) and (
                    not exc.maybe_stored or bool(checked.idempotency_key)
                )
                if not retry or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_DELAY_S)

    def _store_once(self, ref: QueueRef, checked: _Checked) -> SendResult:
        redis_keys = keys.produce_keys(ref)
        args: list[Any] = [checked.key, checked.body, checked.header_json]
        args.append(self._limits.stream_maxlen)
        if checked.idempotency_key:
            redis_keys.append(keys.idempotency(ref, checked.idempotency_key))
            args.append(self._limits.idempotency_ttl_s * 1000)
        try:
            if self._options.wait_replicas:
                reply = self._produce_and_wait(redis_keys, args)
            else:
                reply = self._produce(keys=redis_keys, args=args)
        except _NotConnected as exc:
            raise _Unavailable(f"could not connect to Redis ({exc})", False) from exc
        except (ClusterDownError, TryAgainError, AskError) as exc:
            # Refused before the script ran: no master serves the slot right now.
            raise _Unavailable(f"Redis Cluster cannot take it now ({exc})", False) from exc
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            # The script may have run and only its reply been lost.
            reason = f"the connection to Redis failed during the send ({exc})"
            raise _Unavailable(reason, True) from exc
        except ReadOnlyError as exc:  # a master turned replica during a failover
            raise _Unavailable(f"Redis refused the message ({exc})", False) from exc
        except redis.ResponseError as exc:
            # Refused before the script ran (OOM, ...) or failed before its append, which
            # gives the offset back: nothing stored.
            raise SendError(f"Redis refused the message ({exc})", False) from exc
        except redis.RedisError as exc:
            raise SendError(f"the send failed ({exc})", True) from exc
        offset, produced_ms, duplicate = reply
        return SendResult(ref.queue, int(offset), int(produced_ms), bool(duplicate))

    def _produce_and_wait(self, redis_keys: list[str], args: list[Any]) -> Any:
        """The produce script and WAIT on one connection of the node serving the queue
        (WAIT counts the replicas that have this connection's writes), in one round trip.
        Raises ``SendError`` (maybe stored) when fewer replicas acknowledged in time."""
        pipe = node_client(self._client, redis_keys[0]).pipeline(transaction=False)
        self._produce(keys=redis_keys, args=args, client=pipe)
        pipe.execute_command("WAIT", self._options.wait_replicas, self._options.wait_timeout_ms)
        produced, acked = execute_on_node(self._client, pipe)
        cluster = cluster_of(self._client)
        if isinstance(produced, AskError) and cluster is not None:
            refresh_layout(cluster)  # the slot moved (a failover): ask the cluster again
        if isinstance(produced, Exception):
            raise produced
        if isinstance(acked, Exception) or int(acked) < self._options.wait_replicas:
            got = "an error" if isinstance(acked, Exception) else f"{int(acked)}"
            raise SendError(
                f"stored at offset {int(produced[0])} of its queue, but {got} of "
                f"{self._options.wait_replicas} replicas acknowledged it within "
                f"{self._options.wait_timeout_ms} ms (LOCKSTEP_SEND_WAIT_REPLICAS): it is "
                "lost if the master fails before replicating it; a send again with the "
                "same idempotency key stores it at most once",
                True,
            )
        return produced

    # -- checks: everything refused here is refused before anything is sent ----------------
    def _check(
        self,
        topic: str,
        key: str,
        body: bytes,
        headers: dict[str, Any] | None,
        idempotency_key: str | None,
    ) -> _Checked:
        _check_topic(topic)
        self._check_key(key)
        data = self._check_body(body)
        if headers is not None and not isinstance(headers, dict):
            raise InvalidMessageError("headers must be a dict or None")
        merged = _with_idempotency_key(headers or {}, idempotency_key)
        idem = merged.get(IDEMPOTENCY_KEY_HEADER)
        if idem is not None:
            self._check_text(idem, f"header {IDEMPOTENCY_KEY_HEADER!r}")
        return _Checked(key, data, self._header_json(merged), idem or "")

    def _check_key(self, key: str) -> None:
        if not isinstance(key, str) or not key:
            raise InvalidMessageError(f"key must be a non-empty string, got {key!r}")
        self._check_text(key, "key")

    def _check_text(self, value: object, what: str) -> None:
        """A non-empty string that is valid Unicode and at most LOCKSTEP_MAX_KEY_BYTES."""
        if not isinstance(value, str) or not value:
            raise InvalidMessageError(f"{what} must be a non-empty string, got {value!r}")
        size = len(_utf8(value, what))
        if size > self._limits.max_key_bytes:
            raise InvalidMessageError(
                f"{what} is {size} bytes in UTF-8, over the limit of "
                f"{self._limits.max_key_bytes} (LOCKSTEP_MAX_KEY_BYTES)"
            )

    def _check_body(self, body: bytes) -> bytes:
        if not isinstance(body, bytes | bytearray | memoryview):
            raise InvalidMessageError(
                f"body must be bytes, got {type(body).__name__}; encode it first "
                "(e.g. json.dumps(obj).encode())"
            )
        data = bytes(body)  # redis-py takes bytes; a bytearray would fail inside it
        if len(data) > self._limits.max_body_bytes:
            raise InvalidMessageError(
                f"body is {len(data)} bytes, over the limit of {self._limits.max_body_bytes} "
                "(LOCKSTEP_MAX_BODY_BYTES)"
            )
        return data

    def _header_json(self, headers: dict[str, Any]) -> str:
        bad_names = [name for name in headers if not isinstance(name, str)]
        if bad_names:
            raise InvalidMessageError(f"header names must be strings, got {bad_names[0]!r}")
        try:
            # Values JSON cannot hold are sent as their str(): headers are metadata.
            text = json.dumps(headers, separators=(",", ":"), default=str, ensure_ascii=False)
        except (ValueError, RecursionError) as exc:
            raise InvalidMessageError(f"headers cannot be written as JSON: {exc}") from None
        size = len(_utf8(text, "headers"))
        if size > self._limits.max_body_bytes:
            raise InvalidMessageError(
                f"headers are {size} bytes as JSON, over the limit of "
                f"{self._limits.max_body_bytes} (LOCKSTEP_MAX_BODY_BYTES)"
            )
        return text


def _check_topic(topic: str) -> None:
    try:
        validate_name(topic)
    except ConfigurationError as exc:  # no topic can have such a name
        raise InvalidMessageError(str(exc)) from None


def _utf8(text: str, what: str) -> bytes:
    """``text`` as stored; a lone surrogate (e.g. from ``os.fsdecode``) has no UTF-8 form."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidMessageError(
            f"{what} is not valid Unicode text: {exc.reason} at index {exc.start}"
        ) from None


def _with_idempotency_key(headers: dict[str, Any], idempotency_key: str | None) -> dict[str, Any]:
    """The headers with the idempotency key in them; the argument and a header of that
    name must agree."""
    if idempotency_key is None:
        return headers
    present = headers.get(IDEMPOTENCY_KEY_HEADER)
    if present is not None and present != idempotency_key:
        raise InvalidMessageError(
            f"idempotency_key {idempotency_key!r} differs from the header "
            f"{IDEMPOTENCY_KEY_HEADER!r} ({present!r}); give one of them"
        )
    return {**headers, IDEMPOTENCY_KEY_HEADER: idempotency_key}
