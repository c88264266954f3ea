"""Handler used by the Celery worker test: records each handled message in Redis."""

from __future__ import annotations

import os
from collections.abc import Sequence

import redis

from lockstep.workers import ConsumeContext, ConsumeStatus, Message
from lockstep.workers.connection import connect

_client: redis.Redis | None = None


def record(messages: Sequence[Message], ctx: ConsumeContext) -> ConsumeStatus:
    global _client
    if _client is None:
        _client = connect(os.environ["REDIS_URL"])  # a standalone server or a cluster
    pipe = _client.pipeline(transaction=False)
    for m in messages:
        pipe.rpush(f"handled:{m.key}", int(m.body))
        pipe.hset("handled-by", f"{m.queue}", os.getpid())
    pipe.execute()
    return ConsumeStatus.SUCCESS
