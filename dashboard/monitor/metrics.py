"""``GET /metrics``: the Prometheus text exposition format, rendered by ``prometheus_client``.

No login (scrapers do not carry sessions) but a bearer token: with
``LOCKSTEP_METRICS_TOKEN`` set, only ``Authorization: Bearer <token>`` is answered (401
otherwise, compared in constant time); with ``LOCKSTEP_ENV=production`` and no token the
answer is 403 saying to set one, so a production deployment never publishes its topic,
group and queue names by accident. In development without a token it is open, as before.

Each scrape reads the fleet state (``web.store.fleet_read``: the rows the ingester keeps
current, or a sweep of Redis first when no ingester is live), the consumers' cards and
the ``EventCounter`` table: a few queries, no read of every queue from Redis. A
``LockstepCollector`` turns that reading into metric families in a private
``CollectorRegistry`` (never the process-wide default one, so nothing else leaks in and
nothing outlives the request), after which come the
families other apps register with ``web.metrics`` (the unresolved alerts). With Redis
unreachable the answer is a 503 with one line of text, so Prometheus records ``up == 0``
instead of a half-empty page.

Counters are bumped by the ingester in the same transaction as the events they count,
and event retention never lowers them, so they are monotonic as Prometheus requires
(they restart from 0 only with a new database). The metrics and the alerting rules
built on them are described in ``deploy/prometheus/README.md``.
"""

from __future__ import annotations

import hmac
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lockstep.dashboard.web.metrics import feature_collectors
from lockstep.dashboard.web.redis_conn import get_redis
from lockstep.dashboard.web.store import fleet_read
from lockstep.dashboard.web.store.models import (
    EventCounter,
    GroupStatus,
    QueueStatus,
    TopicStatus,
)
from lockstep.workers import keys
from lockstep.workers.inspect import LiveConsumer, registered_consumers
from lockstep.workers.inspect.consumers import heartbeat_timeout
from lockstep.workers.refs import QueueRef

log = logging.getLogger(__name__)

QUEUE_LABELS = ("topic", "group", "queue")

# (metric, help, field of a group's state); all labelled topic/group/queue.
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
    (
        "lockstep_queue_held_keys",
        "Keys held behind their dead letter (after_dlq=hold); their later messages are parked.",
        "held_keys",
    ),
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


@dataclass(frozen=True)
class Reading:
    """Everything one scrape shows, read once: the fleet state's rows (``QueueStatus``,
    one per (topic, group, queue); ``stuck`` is docs/stuck.md's one definition), the max
    offset of every queue, the known (topic, group) pairs, the registered consumer cards
    (live or silent: ``heartbeat_age_s`` above ``heartbeat_timeout_s``) and the
    counters."""

    rows: list[QueueStatus]
    max_offsets: dict[QueueRef, int]
    groups: list[tuple[str, str]]
    consumers: list[LiveConsumer]
    heartbeat_timeout_s: float
    counters: list[EventCounter]


def read_state(client: redis.Redis) -> Reading:
    """The read behind one scrape: the fleet state (``web.store.fleet_read``; swept
    first when no ingester keeps it), the consumers' cards and the counters. Raises
    ``redis.RedisError`` when Redis fails."""
    fleet_read.ensure_fresh(client)
    rows = list(QueueStatus.objects.order_by("topic", "group", "queue"))
    max_offsets = {QueueRef(r.topic, r.queue): r.max_offset for r in rows}
    groupless = list(TopicStatus.objects.filter(groups=0).order_by("name"))
    if groupless:
        max_offsets |= _max_offsets(client, groupless)
    return Reading(
        rows=rows,
        max_offsets=dict(sorted(max_offsets.items())),
        groups=list(GroupStatus.objects.order_by("topic", "group").values_list("topic", "group")),
        consumers=registered_consumers(client),
        heartbeat_timeout_s=heartbeat_timeout(),
        counters=list(EventCounter.objects.order_by("name", "topic", "group", "queue")),
    )


def _max_offsets(client: redis.Redis, topics: list[TopicStatus]) -> dict[QueueRef, int]:
    """The max offsets of topics no group reads (the fleet state has no row of them)."""
    refs = [QueueRef(t.name, q) for t in topics for q in range(t.queue_count)]
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.get(keys.sequence(ref))
    return {ref: int(v or 0) for ref, v in zip(refs, pipe.execute(), strict=True)}


class LockstepCollector(Collector):
    """The metric families of one ``Reading``."""

    def __init__(self, reading: Reading) -> None:
        self.reading = reading

    def collect(self) -> Iterator[Metric]:
        yield from queue_families(self.reading)
        yield from consumer_families(self.reading)
        yield from counter_families(self.reading.counters)


def _gauge(name: str, text: str, labels: Iterable[str] = QUEUE_LABELS) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, text, labels=list(labels))


def queue_families(reading: Reading) -> list[Metric]:
    gauges = [_gauge(name, text) for name, text, _ in GROUP_GAUGES]
    owned = _gauge(
        "lockstep_queue_owned",
        "1 while a consumer holds a live lock on the queue for the group, else 0.",
    )
    stuck = _gauge(
        "lockstep_queue_stuck",
        "1 while the queue is stuck for the group (docs/stuck.md: work waiting and no "
        "progress for LOCKSTEP_STUCK_AFTER_SECONDS, any reason), else 0.",
    )
    blocked = _gauge(
        "lockstep_queue_blocked_keys",
        "Keys blocked by a failing message, as the lock owner reports (key ordering; "
        "0 under queue ordering or without a live owner).",
    )
    dead = _gauge(
        "lockstep_dead_letters_waiting",
        "Dead letters waiting in the group's dead-letter stream of the queue "
        "(not yet replayed or discarded).",
    )
    max_offset = _gauge(
        "lockstep_queue_max_offset",
        "Next offset to be produced in the queue (a property of the queue, "
        "so labelled topic and queue only).",
        labels=("topic", "queue"),
    )
    for ref, value in reading.max_offsets.items():
        max_offset.add_metric([ref.topic, str(ref.queue)], value)
    for row in reading.rows:
        labels = [row.topic, row.group, str(row.queue)]
        for family, (_, _, name) in zip(gauges, GROUP_GAUGES, strict=True):
            family.add_metric(labels, getattr(row, name))
        owned.add_metric(labels, 1 if row.owner else 0)
        stuck.add_metric(labels, 1 if row.stuck else 0)
        blocked.add_metric(labels, row.blocked_count)
        dead.add_metric(labels, row.dead_letters)
    return [*gauges, owned, stuck, blocked, dead, max_offset]


def consumer_families(reading: Reading) -> list[Metric]:
    live: Counter[tuple[str, str]] = Counter()
    silent: Counter[tuple[str, str]] = Counter()
    for card in reading.consumers:
        tally = live if card["heartbeat_age_s"] <= reading.heartbeat_timeout_s else silent
        for where in {(sub["topic"], sub["group"]) for sub in card["subscriptions"]}:
            tally[where] += 1
    known = set(reading.groups)
    families: list[Metric] = []
    for name, text, tally in (
        (
            "lockstep_consumers",
            "Live consumer processes subscribed, per topic and group.",
            live,
        ),
        (
            "lockstep_consumers_silent",
            "Consumer processes subscribed whose heartbeat is older than the heartbeat "
            "timeout (killed, frozen or cut off) while their card has not expired.",
            silent,
        ),
    ):
        family = _gauge(name, text, labels=("topic", "group"))
        # Known groups with nobody (live or silent): 0, not absent.
        for topic, group in sorted(known | set(tally)):
            family.add_metric([topic, group], tally.get((topic, group), 0))
        families.append(family)
    return families


def counter_families(rows: Iterable[EventCounter]) -> list[Metric]:
    series: dict[str, list[EventCounter]] = defaultdict(list)
    for row in rows:
        series[row.name].append(row)
    families: list[Metric] = []
    for name, metric, text in COUNTERS:
        # Samples added one by one: the unlabelled counters have no labels, the others
        # (topic, group, queue), and a family's label names are fixed per sample only.
        family = CounterMetricFamily(metric, text)
        if name in UNLABELLED_COUNTERS and not series.get(name):
            family.add_sample(metric, {}, 0)  # a series from the start: increase() sees it
        for row in series.get(name, []):
            if not (row.topic or row.group) and row.queue < 0:
                family.add_sample(metric, {}, row.value)
            else:
                queue = "" if row.queue < 0 else str(row.queue)
                labels = {"topic": row.topic, "group": row.group, "queue": queue}
                family.add_sample(metric, labels, row.value)
        families.append(family)
    return families


def render_metrics(client: redis.Redis) -> bytes:
    """The exposition of one live read. Raises ``redis.RedisError`` when Redis fails."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LockstepCollector(read_state(client)))
    for collector in feature_collectors():
        registry.register(collector)
    return generate_latest(registry)


def refuse_scrape(request: HttpRequest) -> HttpResponse | None:
    """The answer to a scrape without the right token, or None when it may proceed."""
    token: str = settings.LOCKSTEP_METRICS_TOKEN
    if not token:
        if settings.PRODUCTION:
            return _text(
                "/metrics is disabled: set LOCKSTEP_METRICS_TOKEN and scrape with "
                "Authorization: Bearer <token>\n",
                403,
            )
        return None
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # Constant time: the answer's timing must not tell how much of a guess was right.
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return None
    response = _text("a valid bearer token is required\n", 401)
    response["WWW-Authenticate"] = 'Bearer realm="lockstep-metrics"'
    return response


def _text(body: str, status: int) -> HttpResponse:
    return HttpResponse(body, status=status, content_type="text/plain; charset=utf-8")


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    refused = refuse_scrape(request)
    if refused is not None:
        return refused
    try:
        body = render_metrics(get_redis())
    except redis.RedisError as exc:
        log.warning("/metrics: Redis unreachable: %s", exc)
        return _text("Redis unreachable: no metrics\n", 503)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
