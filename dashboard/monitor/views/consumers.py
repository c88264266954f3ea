"""Consumer instances: host, pid, heartbeat age, and per subscription the queues assigned
and held."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from dashboard.monitor.redis_conn import get_redis
from dashboard.monitor.views.common import api_view, page_view
from workers.inspect import consumers


def build_consumers(request: HttpRequest) -> dict[str, Any]:
    """``{"generated_at_ms", "consumers": [{"id", "host", "pid", "started_at_ms",
    "heartbeat_age_s", "subscriptions": [{"topic", "group", "model", "ordering", "lanes",
    "assigned", "held": [{"queue", "state", "token", "retries", "last_error"}]}]}]}``,
    consumers sorted by id."""
    client = get_redis()
    seconds, micros = client.time()
    return {
        "generated_at_ms": int(seconds) * 1000 + int(micros) // 1000,
        "consumers": [_consumer(card) for card in consumers(client)],
    }


def _consumer(card: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": card["id"],
        "host": card.get("host", ""),
        "pid": card.get("pid"),
        "started_at_ms": int(float(card.get("started_at", 0)) * 1000),
        "heartbeat_age_s": card["heartbeat_age_s"],
        "subscriptions": [
            {
                "topic": sub.get("topic", ""),
                "group": sub.get("group", ""),
                "model": sub.get("model", ""),
                "ordering": sub.get("ordering", ""),
                "lanes": sub.get("lanes", 0),
                "assigned": sub.get("assigned", []),
                "held": [
                    {
                        "queue": int(q),
                        "state": view.get("state", ""),
                        "token": view.get("token"),
                        "retries": view.get("retries", 0),
                        "last_error": view.get("last_error", ""),
                    }
                    for q, view in sorted(
                        (sub.get("queues") or {}).items(), key=lambda item: int(item[0])
                    )
                ],
            }
            for sub in card.get("subscriptions", [])
        ],
    }


consumers_page = page_view("monitor/consumers.html", build_consumers)
consumers_api = api_view(build_consumers)
