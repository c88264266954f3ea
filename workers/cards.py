"""What a consumer publishes about itself (its *card*, ``ls:consumer:<id>``, refreshed every
heartbeat) and what ``workers.inspect`` reads back: typed, with units in field names.

Times are epoch milliseconds (``_ms``) on the consumer's clock; durations carry ``_s`` or
``_ms``.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class BlockedKey(TypedDict):
    """A key whose head message is failing (key ordering): later messages of the key wait."""

    key: str
    offset: int
    retries: int
    waiting: int  # messages of the key queued behind the failing one in its lane
    error: str
    since_ms: int  # first failure of this message


class KeyState(TypedDict):
    """A queue's key-level state under key ordering."""

    low_water: int  # the committed offset: every offset below it is done
    highest_completed: int
    in_flight: int  # pulled and not yet done
    flow_paused: bool
    blocked_keys: list[BlockedKey]  # the 20 blocked longest
    blocked_count: int
    parked_keys: list[tuple[str, str]]  # (key, held|releasing), the first 50 by key
    parked_count: int


class QueueSnapshot(TypedDict):
    """One owned queue as its consumer sees it.

    ``state``: starting, consuming, idle, suspended, blocked, paused, lock_expired or
    stopped. The ``KeyState`` fields are present only under key ordering."""

    state: str
    token: int | None
    last_error: str
    retries: int  # retries of the head message (queue ordering)
    head_offset: int
    low_water: NotRequired[int]
    highest_completed: NotRequired[int]
    in_flight: NotRequired[int]
    flow_paused: NotRequired[bool]
    blocked_keys: NotRequired[list[BlockedKey]]
    blocked_count: NotRequired[int]
    parked_keys: NotRequired[list[tuple[str, str]]]
    parked_count: NotRequired[int]


class SubscriptionCard(TypedDict):
    topic: str
    group: str
    # The handler's dotted path, or a callable's module.qualname; absent on cards written
    # before it was published.
    handler: NotRequired[str]
    model: str
    ordering: str
    lanes: int
    assigned: list[int]
    queues: dict[str, QueueSnapshot]  # queue number (as a JSON key) -> snapshot


class ConsumerCard(TypedDict):
    host: str
    pid: int
    started_at_ms: int
    heartbeat_at_ms: int
    subscriptions: list[SubscriptionCard]
