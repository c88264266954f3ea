"""Read-only views of the runtime's state in Redis, for the dashboard and for tools.

Everything here is read in a few pipelined round trips and returned as plain dicts, so
callers can serialise it as JSON without knowing the key layout.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from workers import keys
from workers.offset_tracker import decode_ranges
from workers.redis_types import as_bytes
from workers.topics import Topic, get_topic, groups_of, list_topics


def _redis_now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def overview(client: redis.Redis) -> dict[str, Any]:
    """``{"generated_at_ms", "topics": [{"name", "queue_count", "groups", "queues":
    [{"queue", "max_offset", "groups": [{"group", "owner", "token", "lock_expires_in_ms",
    "committed_offset", "completed_above", "parked", "parked_keys", "lag",
    "time_lag_s"}]}]}]}``

    ``lag`` = max_offset - committed_offset - completed_above + parked."""
    now_ms = _redis_now_ms(client)
    return {
        "generated_at_ms": now_ms,
        "topics": [_topic(client, t, now_ms) for t in list_topics(client)],
    }


def _topic(client: redis.Redis, topic: Topic, now_ms: int) -> dict[str, Any]:
    groups = groups_of(client, topic.name)
    pipe = client.pipeline(transaction=False)
    for q in range(topic.queues):
        pipe.get(keys.sequence(topic.name, q))
        for g in groups:
            pipe.hgetall(keys.lock(topic.name, q, g))
            pipe.hgetall(keys.offset(topic.name, q, g))
    replies = iter(pipe.execute())
    queues = []
    for q in range(topic.queues):
        max_offset = int(next(replies) or 0)
        queues.append(
            {
                "queue": q,
                "max_offset": max_offset,
                "groups": [
                    _group_state(g, next(replies), next(replies), max_offset, now_ms)
                    for g in groups
                ],
            }
        )
    _add_parked(client, topic.name, queues, now_ms)
    _add_time_lag(client, topic.name, queues, now_ms)
    return {"name": topic.name, "queue_count": topic.queues, "groups": groups, "queues": queues}


def _group_state(
    group: str, lock: dict[bytes, bytes], offset: dict[bytes, bytes], max_offset: int, now_ms: int
) -> dict[str, Any]:
    owner = lock.get(b"owner", b"").decode()
    expires = int(lock.get(b"expires_at", b"0") or 0)
    live = bool(owner) and expires > now_ms
    committed = int(offset.get(b"committed", b"0") or 0)
    completed = sum(
        b - a + 1 for a, b in decode_ranges(as_bytes(offset.get(b"completed", b"")).decode())
    )
    return {
        "group": group,
        "owner": owner if live else None,
        "token": int(lock.get(b"token", b"0") or 0),
        "lock_expires_in_ms": expires - now_ms if live else None,
        "lock_granted_at_ms": int(lock.get(b"granted_at", b"0") or 0) if live else None,
        "committed_offset": committed,
        # Key ordering: offsets done above the low-water mark are not behind; parked
        # messages (held keys) are, though their offsets were committed past.
        "completed_above": completed,
        "parked": 0,
        "parked_keys": 0,
        "lag": max(0, max_offset - committed - completed),
        "time_lag_s": 0.0,
    }


def _add_parked(client: redis.Redis, topic: str, queues: list[dict[str, Any]], now_ms: int) -> None:
    """Count parked messages into lag; remember the oldest parked produce time."""
    pipe = client.pipeline(transaction=False)
    cells = [(q["queue"], g) for q in queues for g in q["groups"]]
    for queue, g in cells:
        pipe.hkeys(keys.parked_keys(topic, queue, g["group"]))
    held = [
        (cell, [as_bytes(k).decode() for k in ks])
        for cell, ks in zip(cells, pipe.execute(), strict=True)
        if ks
    ]
    if not held:
        return
    pipe = client.pipeline(transaction=False)
    for (queue, g), ks in held:
        for k in ks:
            pipe.zcard(keys.parked_messages(topic, queue, g["group"], k))
            pipe.zrange(keys.parked_messages(topic, queue, g["group"], k), 0, 0)
    replies = iter(pipe.execute())
    for (_queue, g), ks in held:
        g["parked_keys"] = len(ks)
        for _ in ks:
            count, first = int(next(replies)), next(replies)
            g["parked"] += count
            if first:
                produced = int(json.loads(first[0]).get("t", 0))
                g["oldest_parked_ms"] = min(g.get("oldest_parked_ms", produced), produced)
        g["lag"] += g["parked"]


def _add_time_lag(
    client: redis.Redis, topic: str, queues: list[dict[str, Any]], now_ms: int
) -> None:
    """Time lag = now - produce time of the oldest unconsumed message (0 when caught up)."""
    wanted = [(q["queue"], g) for q in queues for g in q["groups"] if g["lag"] > 0]
    if not wanted:
        return
    pipe = client.pipeline(transaction=False)
    for queue, g in wanted:
        pipe.xrange(keys.stream(topic, queue), min=f"{g['committed_offset']}-0", max="+", count=1)
    for (_queue, g), found in zip(wanted, pipe.execute(), strict=True):
        oldest = [int(found[0][1].get(b"t", b"0") or 0)] if found else []
        oldest += [g.pop("oldest_parked_ms")] if "oldest_parked_ms" in g else []
        produced = min((t for t in oldest if t), default=0)
        g["time_lag_s"] = round(max(0, now_ms - produced) / 1000.0, 3) if produced else 0.0


def consumers(client: redis.Redis) -> list[dict[str, Any]]:
    """Live consumer instances with host, pid, heartbeat age and assignment."""
    ids = sorted(as_bytes(m).decode() for m in client.smembers(keys.CONSUMERS))
    if not ids:
        return []
    raw = client.mget([keys.consumer_info(i) for i in ids])
    now_s = _redis_now_ms(client) / 1000.0
    out = []
    stale = []
    for cid, blob in zip(ids, raw, strict=True):
        if blob is None:
            stale.append(cid)
            continue
        info = json.loads(blob)
        info["id"] = cid
        info["heartbeat_age_s"] = round(max(0.0, now_s - float(info.get("heartbeat_at", 0))), 3)
        out.append(info)
    if stale:
        client.srem(keys.CONSUMERS, *stale)
    return out


def topic_state(client: redis.Redis, topic: str) -> dict[str, Any]:
    """One topic as in ``overview``, each (queue, group) enriched with its owner's view:
    ``state`` (consuming, idle, suspended, blocked, paused, lock_expired, unowned),
    ``retries``, ``last_error``, ``lock_age_ms`` and, under key ordering, ``low_water``,
    ``highest_completed``, ``in_flight``, ``blocked_keys`` and ``parked_keys`` (refreshed
    with the owner's card every heartbeat)."""
    now_ms = _redis_now_ms(client)
    data = _topic(client, get_topic(client, topic), now_ms)
    cards = _queue_cards(client, topic)
    for q in data["queues"]:
        for g in q["groups"]:
            _merge_card(g, cards.get((g["group"], q["queue"], g["owner"])), now_ms)
    data["generated_at_ms"] = now_ms
    return data


def queue_state(client: redis.Redis, topic: str, queue: int) -> dict[str, Any]:
    """``{"topic", "queue", "max_offset", "generated_at_ms", "groups": [...]}`` with the
    groups as in ``topic_state``. Raises ``UnknownTopicError`` / ``ValueError`` (no such
    queue)."""
    data = topic_state(client, topic)
    if not 0 <= queue < data["queue_count"]:
        raise ValueError(f"topic {topic!r} has no queue {queue} (0..{data['queue_count'] - 1})")
    q = data["queues"][queue]
    return {
        "topic": topic,
        "queue": queue,
        "max_offset": q["max_offset"],
        "generated_at_ms": data["generated_at_ms"],
        "groups": q["groups"],
    }


def _queue_cards(client: redis.Redis, topic: str) -> dict[tuple[str, int, str], dict[str, Any]]:
    cards: dict[tuple[str, int, str], dict[str, Any]] = {}
    for card in consumers(client):
        for sub in card.get("subscriptions", []):
            if sub.get("topic") != topic:
                continue
            for q, snap in (sub.get("queues") or {}).items():
                cards[(sub.get("group", ""), int(q), card["id"])] = snap
    return cards


def _merge_card(g: dict[str, Any], card: dict[str, Any] | None, now_ms: int) -> None:
    granted = g.get("lock_granted_at_ms")
    g["lock_age_ms"] = now_ms - granted if granted else None
    if g["owner"] is None:
        g.update(state="unowned", retries=0, last_error="")
        return
    card = card or {}
    g["state"] = str(card.get("state", "unknown"))
    g["retries"] = int(card.get("retries", 0) or 0)
    g["last_error"] = str(card.get("last_error", "") or "")
    for name in (
        "low_water",
        "highest_completed",
        "in_flight",
        "flow_paused",
        "blocked_keys",
        "blocked_count",
        "parked_count",
    ):
        if name in card:
            g[name] = card[name]
    if "parked_keys" in card:
        g["parked_key_states"] = card["parked_keys"]
