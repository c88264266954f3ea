"""Synchronous, ordered sending: a key always goes to the same queue, offsets are dense."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

from workers import keys
from workers.config import Limits
from workers.errors import InvalidMessageError
from workers.hashing import queue_for_key
from workers.refs import QueueRef
from workers.scripts import script
from workers.topics import get_topic


@dataclass(frozen=True)
class SendResult:
    queue: int
    offset: int
    produced_at_ms: int = 0


class Producer:
    """``send`` returns only after Redis stored the message, so a caller that sends a key's
    messages one after another gets them in that order. There is no fail-over to another
    queue: an ordered send that fails raises."""

    def __init__(self, redis_url: str, *, limits: Limits | None = None) -> None:
        self._client = redis.Redis.from_url(redis_url)
        self._limits = limits or Limits.from_env()
        self._produce = script(self._client, "produce")
        self._queue_counts: dict[str, int] = {}

    def send(
        self, topic: str, key: str, body: bytes, headers: dict[str, Any] | None = None
    ) -> SendResult:
        self._check(key, body, headers)
        queue = queue_for_key(key, self._queue_count(topic))
        header_json = json.dumps(headers or {}, separators=(",", ":"), default=str)
        offset, produced_ms = self._produce(
            keys=[keys.stream(QueueRef(topic, queue)), keys.sequence(QueueRef(topic, queue))],
            args=[key, body, header_json, self._limits.stream_maxlen],
        )
        return SendResult(queue, int(offset), int(produced_ms))

    def close(self) -> None:
        self._client.close()

    def _queue_count(self, topic: str) -> int:
        count = self._queue_counts.get(topic)
        if count is None:
            count = get_topic(self._client, topic).queues
            self._queue_counts[topic] = count
        return count

    def _check(self, key: str, body: bytes, headers: dict[str, Any] | None) -> None:
        if not isinstance(key, str) or not key:
            raise InvalidMessageError(f"key must be a non-empty string, got {key!r}")
        if not isinstance(body, bytes | bytearray | memoryview):
            raise InvalidMessageError(
                f"body must be bytes, got {type(body).__name__}; encode it first "
                "(e.g. json.dumps(obj).encode())"
            )
        size = memoryview(body).nbytes  # bytes, not items, for wide memoryviews
        if size > self._limits.max_body_bytes:
            raise InvalidMessageError(
                f"body is {size} bytes, over the limit of {self._limits.max_body_bytes} "
                "(LOCKSTEP_MAX_BODY_BYTES)"
            )
        if headers is not None and not isinstance(headers, dict):
            raise InvalidMessageError("headers must be a dict or None")
