"""Consumer instances: host, pid, heartbeat age, and per subscription the queues assigned
and held."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from lockstep.dashboard.web.pages import page_view
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.views import api_view
from lockstep.workers.inspect import LiveConsumer, consumers, redis_now_ms


def build_consumers(request: HttpRequest) -> dict[str, Any]:
    """``{"generated_at_ms", "consumers": [{"id", "host", "pid", "started_at_ms",
    "heartbeat_age_s", "subscriptions": [{"topic", "group", "model", "ordering", "lanes",
    "assigned", "held": [{"queue", "state", "token", "retries", "last_error"}]}]}]}``,
    consumers sorted by id."""
    client = get_redis()
    return {
        "generated_at_ms": redis_now_ms(client),
        "consumers": [_consumer(card) for card in consumers(client)],
    }


def _consumer(card: LiveConsumer) -> dict[str, Any]:
    return {
        "id": card["id"],
        "host": card["host"],
        "pid": card["pid"],
        "started_at_ms": card["started_at_ms"],
        "heartbeat_age_s": card["heartbeat_age_s"],
        "subscriptions": [
            {
                "topic": sub["topic"],
                "group": sub["group"],
                "model": sub["model"],
                "ordering": sub["ordering"],
                "lanes": sub["lanes"],
                "assigned": sub["assigned"],
                "held": [
                    {
                        "queue": int(q),
                        "state": view.get("state", ""),
                        "token": view.get("token"),
                        "retries": view.get("retries", 0),
                        "last_error": view.get("last_error", ""),
                    }
                    for q, view in sorted(sub["queues"].items(), key=lambda item: int(item[0]))
                ],
            }
            for sub in card["subscriptions"]
        ],
    }


consumers_page = page_view("monitor/consumers.html", build_consumers)
consumers_api = api_view(build_consumers)
