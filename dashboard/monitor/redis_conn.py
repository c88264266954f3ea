"""The dashboard's Redis client, built from settings at call time (tests swap the URL)."""

import redis
from django.conf import settings

_clients: dict[str, redis.Redis] = {}


def get_redis() -> redis.Redis:
    url = settings.REDIS_URL
    client = _clients.get(url)
    if client is None:
        client = redis.Redis.from_url(url, socket_timeout=10)
        _clients[url] = client
    return client
