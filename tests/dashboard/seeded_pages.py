"""A site with something on every page, for the browser tests that visit them all: a
consumer of ``billing`` on ``orders`` whose poison key is dead-lettered and holds its
later messages (stuck, parked, a dead letter), an alert with a timeline and a delivery, a
channel, a silence, an audit entry, and yesterday's analytics report (as the reports
page's own browser test seeds it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from lockstep.workers import keys
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import groups_of
from tests.dashboard.helpers import produce
from tests.dashboard.reports.test_reports_page_in_the_browser import report_day
from tests.dashboard.scenarios import FailOn, consuming, key_on_queue
from tests.dashboard.stack import Site, running_site
from tests.support import probe_until

TOPIC, GROUP, QUEUES = "orders", "billing", 4
POISON_QUEUE = 2
LIVE_KEY = key_on_queue(1, QUEUES)
POISON_KEY = key_on_queue(POISON_QUEUE, QUEUES, prefix="poison")

SEED = """
import json
from datetime import timedelta
from django.utils import timezone
from lockstep.dashboard.alerts.models import Alert, AlertEvent, Channel, Delivery, Silence
from lockstep.dashboard.deadletters.models import AuditEntry, DeadLetter
from lockstep.dashboard.deadletters.sync import sync_all
from lockstep.dashboard.web.redis_conn import get_redis
from tests.dashboard.reports.test_reports_page_in_the_browser import seed

sync_all(get_redis())
now = timezone.now()
alert = Alert.objects.create(
    rule="message_blocked", fingerprint="message_blocked|orders|billing|2||", severity="critical",
    topic="orders", group="billing", queue=2, key="poison", offset=0,
    summary="billing is stuck on orders queue 2 behind a poison message",
    since=now - timedelta(minutes=5),
)
AlertEvent.objects.create(alert=alert, kind="opened", note="condition met")
channel = Channel.objects.create(name="ops-webhook", kind="webhook", target="http://127.0.0.1:9/hook")
Delivery.objects.create(alert=alert, channel=channel, event="opened", status="sent", attempts=1,
                        delivered_at=now)
Silence.objects.create(topic="orders", group="billing", ends_at=now + timedelta(hours=2),
                       reason="maintenance of the card processor", created_by="operator")
AuditEntry.objects.create(actor="operator", action="replay", group="billing", count=1,
                          reason="fixed the handler", outcomes={"in_place": 1})
seed()
record = DeadLetter.objects.order_by("pk").first()
print(json.dumps({"alert": alert.pk, "dead_letter": record.pk}))
"""


@dataclass(frozen=True)
class Seeded:
    site: Site
    alert_id: int
    dead_letter_id: int

    def pages(self) -> list[str]:
        """Every page of the dashboard, with data."""
        return [
            "/",
            f"/topics/{TOPIC}/groups/{GROUP}",
            f"/topics/{TOPIC}/queues/{POISON_QUEUE}",
            f"/messages?topic={TOPIC}&key={POISON_KEY}",
            "/consumers",
            "/events",
            "/dead-letters",
            f"/groups/{GROUP}/dead-letters",
            f"/groups/{GROUP}/dead-letters/{self.dead_letter_id}",
            "/audit",
            "/alerts",
            f"/alerts/{self.alert_id}",
            "/alerts/rules",
            "/alerts/silences",
            "/alerts/channels",
            f"/analytics/?day={report_day().isoformat()}",
        ]


@contextmanager
def seeded_site(redis_url: str, workdir: Path) -> Iterator[Seeded]:
    env = {"LOCKSTEP_SUBSCRIPTIONS": "[]"}
    with running_site(redis_url, workdir, {TOPIC: QUEUES}, **env) as site:
        client = redis.Redis.from_url(redis_url)
        poison = FailOn(POISON_KEY, error="card declined by the processor")
        with consuming(
            redis_url,
            TOPIC,
            GROUP,
            poison,
            ordering=Ordering.KEY,
            after_dlq=AfterDlq.HOLD,
            max_reconsume_times=1,
            suspend_ms=100,
        ):
            assert probe_until(lambda: groups_of(client, TOPIC), lambda g: g == [GROUP])
            produce(redis_url, TOPIC, [LIVE_KEY] * 3 + [POISON_KEY] * 3)
            dead = keys.dead_letters(QueueRef(TOPIC, POISON_QUEUE), GROUP)
            assert probe_until(lambda: client.xlen(dead), lambda n: n >= 1)
            ids = json.loads(site.manage("shell", "-c", SEED).strip().splitlines()[-1])
            yield Seeded(site, ids["alert"], ids["dead_letter"])
        client.close()
