"""Topics: a name and a fixed number of queues, stored in Redis (the runtime's truth)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import redis

from workers import keys
from workers.errors import ConfigurationError, UnknownTopicError
from workers.redis_types import as_bytes

# Names go into Redis keys and the dashboard's URLs; 128 fits the Event.topic column.
_NAME = re.compile(r"^[A-Za-z0-9_.\-%]{1,128}$")
# Each queue costs its owner a thread (every consumer, under broadcasting) and a few keys
# read on every dashboard push.
MAX_QUEUES = 1024


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


def create_topic(client: redis.Redis, name: str, queues: int) -> Topic:
    """Create a topic. Re-creating with the same queue count is a no-op; changing the queue
    count of an existing topic is refused, because it would move keys between queues and
    break their order."""
    validate_name(name)
    if not 1 <= queues <= MAX_QUEUES:
        raise ConfigurationError(f"queues must be 1..{MAX_QUEUES}, got {queues}")
    now_ms = int(time.time() * 1000)
    created = client.hsetnx(keys.topic_meta(name), "queues", queues)
    if created:
        client.hset(keys.topic_meta(name), "created_at", now_ms)
        client.sadd(keys.TOPICS, name)
        return Topic(name, queues, now_ms)
    existing = get_topic(client, name)
    if existing.queues != queues:
        raise ConfigurationError(
            f"topic {name!r} exists with {existing.queues} queues; refusing to change it to "
            f"{queues} (that would re-map keys to other queues and break their order)"
        )
    return existing


def get_topic(client: redis.Redis, name: str) -> Topic:
    raw = client.hgetall(keys.topic_meta(name))
    if not raw or b"queues" not in raw:
        raise UnknownTopicError(
            f"topic {name!r} does not exist; create it with "
            f"`python manage.py create_topic {name} --queues N`"
        )
    return Topic(name, int(raw[b"queues"]), int(raw.get(b"created_at", b"0")))


def list_topics(client: redis.Redis) -> list[Topic]:
    names = sorted(as_bytes(n).decode() for n in client.smembers(keys.TOPICS))
    return [get_topic(client, n) for n in names]


def register_group(client: redis.Redis, topic: str, group: str) -> None:
    client.sadd(keys.groups_of_topic(topic), group)


def groups_of(client: redis.Redis, topic: str) -> list[str]:
    return sorted(as_bytes(g).decode() for g in client.smembers(keys.groups_of_topic(topic)))
