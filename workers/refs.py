"""One value type names a queue everywhere (as Kafka clients' ``TopicPartition`` does).

Functions that address one queue take ``(ref, group, ...)`` in that order: a ``QueueRef``
first, then the consumer group where a group is meant, then the rest. Where the pair is
one value (a key of what is counted per group and queue: lag, lock grants, alerts), it is
a ``GroupQueue``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class QueueRef:
    """Queue ``queue`` (0-based) of topic ``topic``."""

    topic: str
    queue: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.queue}"


@dataclass(frozen=True, slots=True, order=True)
class GroupQueue:
    """Queue ``ref`` as consumer group ``group`` consumes it: what a group's committed
    offset, lock, lag and alerts belong to."""

    ref: QueueRef
    group: str

    @property
    def topic(self) -> str:
        return self.ref.topic

    @property
    def queue(self) -> int:
        return self.ref.queue

    def __str__(self) -> str:
        return f"{self.ref.topic}/{self.group} queue {self.ref.queue}"
