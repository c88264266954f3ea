"""Redis key names. Every per-queue key carries the hash tag ``{topic:queue}`` so that in
Redis Cluster all state of one queue (stream, offsets, locks, dead letters) lives in one
slot and the Lua scripts touching it stay single-slot. The layout is described in
docs/redis-layout.md."""

from lockstep.workers.refs import QueueRef

PREFIX = "ls"
# The event log: ``EVENTS`` with one shard (LOCKSTEP_EVENT_SHARDS=1, the default and the
# layout before sharding), ``event_shard(i)`` with more; EVENT_STREAMS is the set of every
# shard stream a writer ever wrote to (workers/events.py, docs/redis-layout.md).
EVENTS = f"{PREFIX}:events"
EVENT_STREAMS = f"{PREFIX}:events:streams"
TOPICS = f"{PREFIX}:topics"
CONSUMERS = f"{PREFIX}:consumers"


def event_shard(index: int) -> str:
    """Stream of event shard ``index``; the hash tag ``{s<index>}`` puts each shard in its
    own slot, so in Redis Cluster the shards spread over the nodes."""
    return f"{PREFIX}:events:{{s{index}}}"


def topic_meta(topic: str) -> str:
    return f"{PREFIX}:topic:{topic}"


def _queue_tag(ref: QueueRef) -> str:
    return f"{PREFIX}:{{{ref.topic}:{ref.queue}}}"


def stream(ref: QueueRef) -> str:
    """Stream of the queue's messages; entry ID ``<offset>-1``."""
    return f"{_queue_tag(ref)}:log"


def sequence(ref: QueueRef) -> str:
    """Counter: the next offset to be produced (the queue's max offset)."""
    return f"{_queue_tag(ref)}:seq"


def wake(ref: QueueRef) -> str:
    """String, expires: set while a consumer waits for the queue's next entry on a Redis
    Cluster (arm_wakeup.lua); an append removes it and publishes on the shard channel of
    the same name (docs/reading.md, "On a Redis Cluster")."""
    return f"{_queue_tag(ref)}:wake"


def produce_keys(ref: QueueRef) -> list[str]:
    """The keys the produce script takes first: stream, sequence, wake flag."""
    return [stream(ref), sequence(ref), wake(ref)]


def idempotency(ref: QueueRef, idempotency_key: str) -> str:
    """String, expires: ``<offset>:<produced_at_ms>`` of the send that first used the
    caller's idempotency key; a repeated send with that key stores nothing."""
    return f"{_queue_tag(ref)}:idem:{idempotency_key}"


def lock(ref: QueueRef, group: str) -> str:
    """Hash: owner, token, expires_at, granted_at of the group's lock on the queue."""
    return f"{_queue_tag(ref)}:lock:{group}"


def offset(ref: QueueRef, group: str) -> str:
    """Hash: committed, completed, token, updated_at of the group on the queue."""
    return f"{_queue_tag(ref)}:offset:{group}"


def dead_letters(ref: QueueRef, group: str) -> str:
    """Stream of the group's dead letters from the queue."""
    return f"{_queue_tag(ref)}:dlq:{group}"


def parked_keys(ref: QueueRef, group: str) -> str:
    """Hash: held key -> JSON state (held/releasing, dlq_id, offset)."""
    return f"{_queue_tag(ref)}:parked:{group}"


def parked_messages(ref: QueueRef, group: str, key: str) -> str:
    """Sorted set of one held key's parked messages, score = offset."""
    return f"{_queue_tag(ref)}:parked:{group}:{key}"


def registry(topic: str, group: str) -> str:
    """Sorted set: live members of the group on the topic, score = last heartbeat (ms)."""
    return f"{PREFIX}:registry:{group}:{topic}"


def consumer_info(consumer_id: str) -> str:
    return f"{PREFIX}:consumer:{consumer_id}"


def groups_of_topic(topic: str) -> str:
    """Set of groups that ever subscribed to the topic (for the dashboard)."""
    return f"{PREFIX}:groups:{topic}"
