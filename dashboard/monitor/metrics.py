"""``GET /metrics``: Prometheus text exposition format, version 0.0.4.

No login: scrapers do not carry sessions, and this is the convention for ``/metrics``;
it exposes topic, group and queue names and numbers, nothing from message bodies. Put it
behind the reverse proxy's access rules if those names are sensitive.

Cheap by construction: the gauges come from ``workers.inspect.overview`` (a few
pipelined Redis round trips) and the consumer cards, the counters from the small
``EventCounter`` table (one query). Counters are bumped by the ingester in the same
transaction as the events they count, and event retention never lowers them, so they are
monotonic as Prometheus requires (they restart from 0 only with a new database).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import redis
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.monitor.models import EventCounter
from dashboard.monitor.redis_conn import get_redis
from workers.inspect import LiveConsumer, Overview, consumers, overview

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[tuple[str, str], ...]

# (metric, help, field of a group's state in the overview); all labelled topic/group/queue.
GROUP_GAUGES = (
    (
        "lockstep_queue_lag_messages",
        "Messages behind: max offset - committed - completed above it + parked.",
        "lag",
    ),
    (
        "lockstep_queue_lag_seconds",
        "Seconds since the oldest unconsumed (or parked) message was produced; 0 when caught up.",
        "time_lag_s",
    ),
    (
        "lockstep_queue_committed_offset",
        "Committed offset (low-water mark): every offset below it is done.",
        "committed_offset",
    ),
    (
        "lockstep_queue_parked_messages",
        "Messages parked behind held keys (after_dlq=hold).",
        "parked",
    ),
    ("lockstep_queue_lock_token", "Fencing token of the queue's latest lock grant.", "token"),
)
# (counter name in EventCounter, metric, help).
COUNTERS = (
    (
        "consume_retries",
        "lockstep_consume_retries_total",
        "Messages put back for another attempt (consume_failed events, one per message).",
    ),
    (
        "dead_letters",
        "lockstep_dead_letters_total",
        "Messages moved to the dead letters (dead_lettered and malformed_entry events).",
    ),
    (
        "lock_owner_changes",
        "lockstep_lock_owner_changes_total",
        "Queue lock grants (lock_acquired events).",
    ),
    (
        "fencing_rejections",
        "lockstep_fencing_rejections_total",
        "Commits or dead-letter moves refused for a stale fencing token.",
    ),
    (
        "events_lost",
        "lockstep_events_lost_total",
        "Runtime events trimmed from the event stream before the ingester stored them.",
    ),
    (
        "event_stream_gaps",
        "lockstep_event_stream_gaps_total",
        "Times the ingester found the event stream trimmed past its cursor.",
    ),
)

# The ingester's own counters: one series each, without labels.
UNLABELLED_COUNTERS = ("events_lost", "event_stream_gaps")


@dataclass
class Family:
    name: str
    type: str
    help: str
    samples: list[tuple[Labels, float | int]] = field(default_factory=list)

    def add(self, value: float | int, **labels: Any) -> None:
        self.samples.append((tuple((k, str(v)) for k, v in labels.items()), value))

    def render(self) -> Iterable[str]:
        yield f"# HELP {self.name} {escape_help(self.help)}"
        yield f"# TYPE {self.name} {self.type}"
        for labels, value in self.samples:
            yield f"{self.name}{format_labels(labels)} {format_value(value)}"


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in labels) + "}"


def format_value(value: float | int) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def queue_families(snapshot: Overview) -> list[Family]:
    gauges = [Family(name, "gauge", text) for name, text, _ in GROUP_GAUGES]
    owned = Family(
        "lockstep_queue_owned",
        "gauge",
        "1 while a consumer holds a live lock on the queue for the group, else 0.",
    )
    max_offset = Family(
        "lockstep_queue_max_offset",
        "gauge",
        "Next offset to be produced in the queue (a property of the queue, "
        "so labelled topic and queue only).",
    )
    for topic in snapshot["topics"]:
        for q in topic["queues"]:
            max_offset.add(q["max_offset"], topic=topic["name"], queue=q["queue"])
            for g in q["groups"]:
                labels = {"topic": topic["name"], "group": g["group"], "queue": q["queue"]}
                fields: Mapping[str, Any] = g
                for family, (_, _, name) in zip(gauges, GROUP_GAUGES, strict=True):
                    family.add(fields[name], **labels)
                owned.add(1 if g["owner"] else 0, **labels)
    return [*gauges, owned, max_offset]


def consumer_family(snapshot: Overview, cards: list[LiveConsumer]) -> Family:
    live: Counter[tuple[str, str]] = Counter()
    for card in cards:
        for sub in card["subscriptions"]:
            live[(sub["topic"], sub["group"])] += 1
    for topic in snapshot["topics"]:  # known groups with nobody consuming: 0, not absent
        for group in topic["groups"]:
            live.setdefault((topic["name"], group), 0)
    family = Family(
        "lockstep_consumers", "gauge", "Live consumer processes subscribed, per topic and group."
    )
    for (topic_name, group), count in sorted(live.items()):
        family.add(count, topic=topic_name, group=group)
    return family


def counter_families() -> list[Family]:
    series: dict[str, list[EventCounter]] = defaultdict(list)
    for row in EventCounter.objects.order_by("name", "topic", "group", "queue"):
        series[row.name].append(row)
    families = []
    for name, metric, text in COUNTERS:
        family = Family(metric, "counter", text)
        if name in UNLABELLED_COUNTERS and not series.get(name):
            family.add(0)  # a series from the start, so increase() sees the first loss
        for row in series.get(name, []):
            if not (row.topic or row.group) and row.queue < 0:
                family.add(row.value)
            else:
                family.add(
                    row.value,
                    topic=row.topic,
                    group=row.group,
                    queue="" if row.queue < 0 else row.queue,
                )
        families.append(family)
    return families


def render_metrics(client: redis.Redis) -> str:
    snapshot = overview(client)
    families = [
        *queue_families(snapshot),
        consumer_family(snapshot, consumers(client)),
        *counter_families(),
    ]
    return "\n".join(line for f in families for line in f.render()) + "\n"


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(render_metrics(get_redis()), content_type=CONTENT_TYPE)
