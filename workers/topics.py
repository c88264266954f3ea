"""Topics: a name and a fixed number of queues, stored in Redis (the runtime's truth)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import redis

from lockstep.workers import keys
from lockstep.workers.connection import connect
from lockstep.workers.errors import ConfigurationError, UnknownTopicError
from lockstep.workers.redis_types import as_bytes
from lockstep.workers.scripts import script

# Names go into Redis keys and the dashboard's URLs; 128 fits the Event.topic column.
_NAME = re.compile(r"^[A-Za-z0-9_.\-%]{1,128}$")
# Each queue costs its owner a thread (every consumer, under broadcasting) and a few keys
# read on every dashboard push.
MAX_QUEUES = 1024
# A topic's state once every step of its creation is done (create_topic).
READY = b"ready"


@dataclass(frozen=True)
class Topic:
    name: str
    queues: int
    created_at_ms: int


def validate_name(name: str, what: str = "topic") -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigurationError(
            f"{what} name {name!r} is invalid: use 1-128 letters, digits, '_', '-', '.', '%'"
        )
    return name


def create_topic(redis_or_url: redis.Redis | str, name: str, queues: int) -> Topic:
    """Create a topic. ``redis_or_url`` is a client, or a Redis URL (``redis://…``,
    ``rediss://…``, ``redis+cluster://…``) for which a client is opened and closed again.
    Re-creating with the same queue count is a no-op; changing the queue count of an
    existing topic is refused (``ConfigurationError``), because it would move keys between
    queues and break their order. An unreachable Redis raises redis-py's error.

    Creation takes three steps (the topic's hash and the list of topics are in different
    cluster slots): record the queue count marked 'creating', add the name to the list,
    mark it 'ready'. A topic is usable only once ready, and calling this again after a
    failure at any step finishes the creation (docs/cluster.md)."""
    validate_name(name)
    if not 1 <= queues <= MAX_QUEUES:
        raise ConfigurationError(f"queues must be 1..{MAX_QUEUES}, got {queues}")
    if isinstance(redis_or_url, str):
        client = connect(redis_or_url)
        try:
            return _create(client, name, queues)
        finally:
            client.close()
    return _create(redis_or_url, name, queues)


def _create(client: redis.Redis, name: str, queues: int) -> Topic:
    now_ms = int(time.time() * 1000)
    stored, state = script(client, "create_topic")(
        keys=[keys.topic_meta(name)], args=[queues, now_ms]
    )
    if int(stored) != queues:
        raise ConfigurationError(
            f"topic {name!r} exists with {int(stored)} queues; refusing to change it to "
            f"{queues} (that would re-map keys to other queues and break their order)"
        )
    if as_bytes(state) != READY:
        client.sadd(keys.TOPICS, name)
        client.hset(keys.topic_meta(name), "state", READY)
    return get_topic(client, name)


def get_topic(client: redis.Redis, name: str) -> Topic:
    """The topic, once its creation has finished; ``UnknownTopicError`` before."""
    raw = client.hgetall(keys.topic_meta(name))
    if not raw or b"queues" not in raw:
        raise UnknownTopicError(
            f"topic {name!r} does not exist; create it with "
            f"`lockstep.create_topic(redis_url, {name!r}, queues)` or "
            f"`lockstep manage create_topic {name} --queues N`"
        )
    if raw.get(b"state", READY) != READY:
        raise UnknownTopicError(
            f"topic {name!r} is being created, or its creation was interrupted; finish it "
            f"with `lockstep.create_topic(redis_url, {name!r}, {int(raw[b'queues'])})`"
        )
    return Topic(name, int(raw[b"queues"]), int(raw.get(b"created_at", b"0")))


def list_topics(client: redis.Redis) -> list[Topic]:
    """Every ready topic, by name (one listed but not yet marked ready is left out)."""
    names = sorted(as_bytes(n).decode() for n in client.smembers(keys.TOPICS))
    out = []
    for name in names:
        try:
            out.append(get_topic(client, name))
        except UnknownTopicError:
            continue
    return out


def register_group(client: redis.Redis, topic: str, group: str) -> None:
    client.sadd(keys.groups_of_topic(topic), group)


def groups_of(client: redis.Redis, topic: str) -> list[str]:
    return sorted(as_bytes(g).decode() for g in client.smembers(keys.groups_of_topic(topic)))
