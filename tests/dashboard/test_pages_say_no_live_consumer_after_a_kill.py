"""The only consumer of a topic is killed with SIGKILL while its lock has long to live:
within the heartbeat timeout every page and JSON view says its queue has no live consumer
(not "consuming"), the overview lists it as stuck for that reason (the stuck threshold
T, docs/stuck.md, set here to the heartbeat timeout: counted from the last heartbeat),
and the consumers page no longer lists the dead process."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.workers import create_topic
from tests.dashboard.helpers import produce
from tests.support import probe_until
from tests.workers.harness import ConsumerProcess

pytestmark = pytest.mark.django_db

HEARTBEAT_INTERVAL_S = 0.3
HEARTBEAT_TIMEOUT_S = 2.0
# The lock outlives the heartbeat timeout many times over: what the pages show between
# the consumer's last heartbeat and its lock's expiry is what this test is about.
TIMINGS = {
    "LOCKSTEP_HEARTBEAT_INTERVAL": str(HEARTBEAT_INTERVAL_S),
    "LOCKSTEP_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT_S),
    "LOCKSTEP_LOCK_TTL": "60",
    "LOCKSTEP_CLIENT_LOCK_EXPIRY": "30",
    "LOCKSTEP_LOCK_RENEW_INTERVAL": "2",
}
QUEUE_URL = "/api/v1/topics/orders/queues/0"
GROUP_URL = "/api/v1/topics/orders/groups/mailer"


def _get(client: Client, url: str) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _queue_state(client: Client) -> str:
    (g,) = _get(client, QUEUE_URL)["groups"]
    return str(g["state"])


@pytest.fixture
def consumer(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ConsumerProcess]:
    """``c-doomed``, a ``lockstep consume`` child; the dashboard (this process) judges
    liveness with the same heartbeat timeout."""
    for name, value in TIMINGS.items():
        monkeypatch.setenv(name, value)
    proc = ConsumerProcess(redis_url, "orders", "mailer", "c-doomed", tmp_path, env=TIMINGS)
    proc.start()
    yield proc
    proc.kill()
    print(proc.output()[-4000:])


def test_it_says_no_live_consumer_everywhere_within_the_heartbeat_timeout(
    client: Client,
    viewer: User,
    redis_client: redis.Redis,
    redis_url: str,
    consumer: ConsumerProcess,
    settings: Any,
) -> None:
    settings.LOCKSTEP_STUCK_AFTER_SECONDS = HEARTBEAT_TIMEOUT_S
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    owned = probe_until(
        lambda: _get(client, QUEUE_URL)["groups"],
        lambda groups: bool(groups) and groups[0]["state"] in {"idle", "consuming"},
        timeout=30,
    )
    assert [(g["owner"], g["state"]) for g in owned] in (
        [("c-doomed", "idle")],
        [("c-doomed", "consuming")],
    ), consumer.output()[-3000:]
    listed = _get(client, "/api/v1/consumers")["consumers"]
    assert [c["id"] for c in listed] == ["c-doomed"]

    consumer.signal(signal.SIGKILL)
    killed_at = time.monotonic()
    consumer.kill()  # reaps it
    produce(redis_url, "orders", ["order-1", "order-2", "order-3"])
    state = probe_until(
        lambda: _queue_state(client),
        lambda s: s == "no_live_consumer",
        timeout=HEARTBEAT_TIMEOUT_S + 5,
        interval=0.02,
    )
    delay_s = time.monotonic() - killed_at
    print(f"kill -> queue API says no_live_consumer: {delay_s:.2f} s")

    assert state == "no_live_consumer"
    assert delay_s <= HEARTBEAT_TIMEOUT_S + 2
    queue = _get(client, QUEUE_URL)
    (g,) = queue["groups"]
    assert (g["owner"], g["lag"]) == ("c-doomed", 3), "the lock has not expired"
    overview = _get(client, "/api/v1/overview")
    (row,) = overview["table"]["rows"]
    assert {k: row[k] for k in ("topic", "group", "queue", "stuck", "owner", "lag")} == {
        "topic": "orders",
        "group": "mailer",
        "queue": 0,
        "stuck": "no_live_consumer",
        "owner": "c-doomed",
        "lag": 3,
    }
    assert (row["state"], row["owner_live"]) == ("no_live_consumer", False)
    assert (
        "the lock still names consumer c-doomed, which has sent no heartbeat for"
        in (row["stuck_why"])
    )
    assert overview["generated_at_ms"] - row["stuck_since_ms"] >= HEARTBEAT_TIMEOUT_S * 1000
    assert [(r["queue"], r["stuck"]) for r in overview["worst"]] == [(0, "no_live_consumer")]
    (summary,) = overview["summary"]["groups"]
    assert (summary["stuck"], summary["owned"], summary["owners"]) == (1, 0, 0)
    group = _get(client, GROUP_URL)
    assert [(r["queue"], r["state"]) for r in group["queues"]] == [(0, "no_live_consumer")]
    (stuck,) = group["stuck"]
    assert (stuck["queue"], stuck["reason"], stuck["owner"]) == (0, "no_live_consumer", "c-doomed")
    assert stuck["for_s"] >= HEARTBEAT_TIMEOUT_S
    assert (group["totals"]["owned"], group["totals"]["stuck"], group["consumers"]) == (0, 1, [])
    assert _get(client, "/api/v1/consumers")["consumers"] == []
    page = client.get("/topics/orders/queues/0").content.decode()
    assert "no live consumer" in page
    assert ">consuming<" not in page
    assert "no live consumer" in client.get("/topics/orders/groups/mailer").content.decode()
    assert "no live consumer" in client.get("/").content.decode()
    assert "c-doomed" not in client.get("/consumers").content.decode()
