"""Redis's clock: every view is stamped with it, so ages and lags computed from it agree
with the produce and lock times the Lua scripts write (also Redis time)."""

from __future__ import annotations

import redis


def redis_now_ms(client: redis.Redis) -> int:
    """Redis ``TIME`` as epoch milliseconds (one round trip)."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000
