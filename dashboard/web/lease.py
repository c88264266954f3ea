"""One holder at a time: a lease in Redis, on redis-py's ``Lock``.

Two runners on one dead-letter action request (a Celery task delivered twice, a CLI
re-run while the first still runs) would interleave their replays and break a key's
order; two alert evaluators would open every alert twice. So each takes a lease first,
renews it as it goes (before every message, every tick), and stops when a renewal fails.
A holder that died leaves a lease that expires after its time to live; the next one then
takes over. The lease is redis-py's ``Lock`` (``SET NX PX`` with a random token; renewal
and release compare the token in one script), not blocking: a lease held elsewhere is
an answer, not a wait.
"""

from __future__ import annotations

import contextlib

import redis
from redis.exceptions import LockNotOwnedError
from redis.lock import Lock

KEY_PREFIX = "lockstep-web:action-lease:"
# Long enough for one paced step (renewals happen before every message), short enough
# that a request whose runner died can be resumed within a minute.
DEFAULT_TTL_MS = 30_000


class Lease:
    """A lease held on one name; ``renew`` and ``release`` only act while still held."""

    def __init__(self, lock: Lock) -> None:
        self._lock = lock

    @classmethod
    def take(
        cls,
        client: redis.Redis,
        name: str,
        ttl_ms: int = DEFAULT_TTL_MS,
        prefix: str = KEY_PREFIX,
    ) -> Lease | None:
        """The lease on ``prefix + name``, or ``None`` when another holds it. ``prefix``:
        another kind of lease than an action request's (the alert evaluator's)."""
        lock = client.lock(prefix + name, timeout=ttl_ms / 1000, blocking=False, thread_local=False)
        return cls(lock) if lock.acquire() else None

    def renew(self) -> bool:
        """Extend the lease by its time to live; False when it was lost (expired, maybe
        taken by another). Raises ``redis.RedisError`` when Redis cannot be reached."""
        try:
            return self._lock.reacquire()
        except LockNotOwnedError:
            return False

    def release(self) -> None:
        """Give the lease back. Nothing happens when it was lost already, nor when Redis
        cannot be reached: the lease then expires by itself."""
        with contextlib.suppress(redis.RedisError):
            self._lock.release()
