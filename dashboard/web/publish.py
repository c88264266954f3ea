"""Sending to the live sockets' channel groups: every publisher's one way out.

Pushes are hints (channel-layer messages are at-most-once): a publisher never fails, or
stops what it is doing, because one could not be sent. An unreachable Redis is told once
per outage (``redis_conn``), any other error with its traceback.

One sequence scheme for every socket (docs/events.md §5): each
push carries ``seq``, the next number of its group's counter in Redis, shared by every
process that publishes to the group (the ingester, a Celery task, a web request), so a
push lost on the way, whoever sent it, is a gap its receivers see and answer by
re-reading the JSON view. A snapshot sent on connect is seq 0 (``push_socket``). A
publisher that has just started passes ``fresh``: it cannot know what its predecessor
held but never pushed, so each group skips a number and its receivers re-read.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from lockstep.dashboard.web import redis_conn
from lockstep.workers.outage import REDIS_DOWN

log = logging.getLogger(__name__)

Message = dict[str, Any]

SEQ_KEY_PREFIX = "lockstep-web:seq:"
# A group's counter outlives any page open on it; one idle for a day starts over (its
# receivers, if any, see a gap and re-read).
SEQ_TTL_S = 86_400

# Channel-layer group names: ASCII letters, digits, '-', '_', '.', shorter than 100.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def group_part(name: str, limit: int = 60) -> str:
    """``name`` as part of a channel group's name: as is when it is a valid one of at
    most ``limit`` characters; otherwise cut down to safe characters and suffixed with a
    digest of the real name, so two names never share a group."""
    safe = _UNSAFE.sub("_", name)
    if safe == name and len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return f"{safe[:limit]}_h{digest}"


def publish(messages: Sequence[tuple[str, Message]], what: str, *, fresh: bool = False) -> int:
    """Number each ``(group, message)`` (its ``seq``, module docstring; ``fresh``: a
    publisher's first push) and send them in order; at the first that fails the rest are
    skipped (they would fail the same way; the next push tries again). Returns how many
    were sent; ``what`` names the pushes in the log. Never raises."""
    layer = get_channel_layer()
    if layer is None or not messages:
        return 0
    started = time.monotonic()
    try:
        numbered = _numbered(messages, fresh)
    except REDIS_DOWN as exc:
        redis_conn.redis_outage.failed(exc, what)
        return 0
    except Exception:  # a bug, an odd reply: skip this push, the publisher goes on
        log.warning("%s skipped: numbering failed", what, exc_info=True)
        return 0
    redis_conn.redis_outage.ok(started)
    return int(async_to_sync(_send_all)(layer, numbered, what))


def _numbered(messages: Sequence[tuple[str, Message]], fresh: bool) -> list[tuple[str, Message]]:
    """``messages`` with their ``seq``: one round trip that advances each group's counter
    by its messages (by one more when ``fresh``)."""
    counts: dict[str, int] = {}
    for group, _ in messages:
        counts[group] = counts.get(group, 0) + 1
    pipe = redis_conn.get_redis().pipeline(transaction=False)
    for group, count in counts.items():
        pipe.incrby(SEQ_KEY_PREFIX + group, count + int(fresh))
        pipe.expire(SEQ_KEY_PREFIX + group, SEQ_TTL_S)
    replies = pipe.execute()
    next_seq = {
        group: int(last) - count + 1
        for (group, count), last in zip(counts.items(), replies[::2], strict=True)
    }
    numbered: list[tuple[str, Message]] = []
    for group, message in messages:
        numbered.append((group, {**message, "seq": next_seq[group]}))
        next_seq[group] += 1
    return numbered


async def _send_all(layer: Any, messages: Sequence[tuple[str, Message]], what: str) -> int:
    started = time.monotonic()
    sent = 0
    for group, message in messages:
        try:
            await layer.group_send(group, message)
        except REDIS_DOWN as exc:
            redis_conn.channel_layer_outage().failed(exc, what)
            break
        except Exception:  # a full channel, a bug: skip it, the publisher goes on
            log.warning("channel layer failed; %s to %s skipped", what, group, exc_info=True)
            break
        sent += 1
    if sent:
        redis_conn.channel_layer_outage().ok(started)
    return sent
