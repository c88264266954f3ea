"""One value type names a queue everywhere (as Kafka clients' ``TopicPartition`` does).

Functions that address one queue take ``(ref, group, ...)`` in that order: a ``QueueRef``
first, then the consumer group where a group is meant, then the rest.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueueRef:
    """Queue ``queue`` (0-based) of topic ``topic``."""

    topic: str
    queue: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.queue}"
