"""Redis key names. Every per-queue key carries the hash tag ``{topic:queue}`` so that in
Redis Cluster all state of one queue (stream, offsets, locks, dead letters) lives in one
slot and the Lua scripts touching it stay single-slot."""

PREFIX = "ls"
EVENTS = f"{PREFIX}:events"
TOPICS = f"{PREFIX}:topics"
CONSUMERS = f"{PREFIX}:consumers"


def topic_meta(topic: str) -> str:
    return f"{PREFIX}:topic:{topic}"


def _queue_tag(topic: str, queue: int) -> str:
    return f"{PREFIX}:{{{topic}:{queue}}}"


def stream(topic: str, queue: int) -> str:
    return f"{_queue_tag(topic, queue)}:log"


def sequence(topic: str, queue: int) -> str:
    return f"{_queue_tag(topic, queue)}:seq"


def lock(topic: str, queue: int, group: str) -> str:
    return f"{_queue_tag(topic, queue)}:lock:{group}"


def offset(topic: str, queue: int, group: str) -> str:
    return f"{_queue_tag(topic, queue)}:offset:{group}"


def dead_letters(topic: str, queue: int, group: str) -> str:
    return f"{_queue_tag(topic, queue)}:dlq:{group}"


def parked_keys(topic: str, queue: int, group: str) -> str:
    """Hash: held key -> JSON state (held/releasing, dlq_id, offset)."""
    return f"{_queue_tag(topic, queue)}:parked:{group}"


def parked_messages(topic: str, queue: int, group: str, key: str) -> str:
    """Sorted set of one held key's parked messages, score = offset."""
    return f"{_queue_tag(topic, queue)}:parked:{group}:{key}"


def registry(group: str, topic: str) -> str:
    return f"{PREFIX}:registry:{group}:{topic}"


def consumer_info(consumer_id: str) -> str:
    return f"{PREFIX}:consumer:{consumer_id}"


def groups_of_topic(topic: str) -> str:
    """Set of groups that ever subscribed to the topic (for the dashboard)."""
    return f"{PREFIX}:groups:{topic}"
