"""One runner per action request at a time: a lease in Redis.

Two runners on one request (a Celery task delivered twice, a CLI re-run while the first
still runs) would interleave their replays and break a key's order, so a runner first
takes the request's lease (``SET NX PX``), renews it before every message, and stops
when a renewal fails. A runner that died leaves a lease that expires after ``ttl_ms``;
the next runner then goes on with the items still pending.
"""

from __future__ import annotations

import contextlib
import secrets
from functools import cache
from pathlib import Path

import redis

KEY_PREFIX = "lockstep-web:action-lease:"
# Long enough for one paced step (renewals happen before every message), short enough
# that a request whose runner died can be resumed within a minute.
DEFAULT_TTL_MS = 30_000


@cache
def _source() -> str:
    return (Path(__file__).parent / "lua" / "action_lease.lua").read_text()


class Lease:
    """A lease held on one request; ``renew`` and ``release`` only act while still held."""

    def __init__(self, client: redis.Redis, key: str, token: str, ttl_ms: int) -> None:
        self._client = client
        self._key = key
        self._token = token
        self._ttl_ms = ttl_ms

    @classmethod
    def take(
        cls,
        client: redis.Redis,
        request_id: str,
        ttl_ms: int = DEFAULT_TTL_MS,
        prefix: str = KEY_PREFIX,
    ) -> Lease | None:
        """The lease, or ``None`` when another holds it. ``prefix``: another kind of
        lease than an action request's (the alert evaluator's)."""
        token = secrets.token_hex(16)
        if not client.set(prefix + request_id, token, nx=True, px=ttl_ms):
            return None
        return cls(client, prefix + request_id, token, ttl_ms)

    def renew(self) -> bool:
        """Extend the lease by its time to live; False when it was lost (expired)."""
        return self._call(self._ttl_ms)

    def release(self) -> None:
        """Give the lease back. Nothing happens when it was lost already, nor when Redis
        cannot be reached: the lease then expires by itself."""
        with contextlib.suppress(redis.RedisError):
            self._call(0)

    def _call(self, ttl_ms: int) -> bool:
        script = self._client.register_script(_source())
        return bool(script(keys=[self._key], args=[self._token, ttl_ms]))
