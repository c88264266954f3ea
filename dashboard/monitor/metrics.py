"""``GET /metrics``: the Prometheus text exposition format.

No login (scrapers do not carry sessions) but a bearer token: with
``LOCKSTEP_METRICS_TOKEN`` set, only ``Authorization: Bearer <token>`` is answered (401
otherwise, compared in constant time); with ``LOCKSTEP_ENV=production`` and no token the
answer is 403 saying to set one, so a production deployment never publishes its topic,
group and queue names by accident. In development without a token it is open, as before.

Each scrape reads the fleet state (``web.store.fleet_read``: the rows the ingester keeps
current, or a sweep of Redis first when no ingester is live), the consumers' cards and
the ``EventCounter`` table: a few queries, no read of every queue from Redis.
``LOCKSTEP_METRICS_DETAIL`` says how fine: ``queue`` (the default) gives every
(topic, group, queue) its series; ``group`` gives per (topic, group) aggregates only, under
the same metric names without the ``queue`` label (amounts summed, ages and the stuck
flag their worst queue, as the fleet writer keeps them in ``GroupStatus``) plus a few
``lockstep_group_*`` series (deploy/prometheus/README.md, "Detail"). With Redis
unreachable the answer is a 503 with one line of text, so Prometheus records ``up == 0``
instead of a half-empty page.

The monitor's own families are written here, straight from the rows the database
returns; the families other apps register with ``web.metrics`` (the unresolved alerts)
follow, rendered by ``prometheus_client``. Why not all through ``prometheus_client``: at
16,384 pairs the per-queue detail is ~170,000 samples, and its ``generate_latest``
validates and escapes every label name of every sample (three per sample here), which
alone took ~3 s of a 4 s scrape; writing a family's lines from label sets rendered once
per row takes a tenth of that (docs/benchmarks.md §10).

Counters are bumped by the ingester in the same transaction as the events they count,
and event retention never lowers them, so they are monotonic as Prometheus requires
(they restart from 0 only with a new database). The metrics and the alerting rules
built on them are described in ``deploy/prometheus/README.md``.
"""

from __future__ import annotations

import hmac
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import redis
from django.conf import settings
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.utils import floatToGoString

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
from lockstep.workers.inspect import registered_consumers
from lockstep.workers.inspect.consumers import heartbeat_timeout
from lockstep.workers.refs import QueueRef

log = logging.getLogger(__name__)

QUEUE, GROUP = "queue", "group"


class Gauge(NamedTuple):
    """A per-queue gauge: its metric, help, the ``QueueStatus`` column it shows and the
    ``GroupStatus`` column that aggregates it over a group's queues, shown under group
    detail (``None``: no meaningful aggregate, not shown). ``flag``: shown as 1 where
    the column is not empty or 0, else 0."""

    metric: str
    help: str
    column: str
    group_column: str | None
    flag: bool = False


# Labelled topic, group, queue under queue detail; topic, group under group detail, where
# amounts are the group's sums and ages and the stuck flag its worst queue's, as the
# fleet writer keeps them in GroupStatus.
QUEUE_GAUGES = (
    Gauge(
        "lockstep_queue_lag_messages",
        "Messages behind: max offset - committed - completed above it + parked "
        "(group detail: summed over the group's queues).",
        "lag",
        "lag",
    ),
    Gauge(
        "lockstep_queue_lag_seconds",
        "Seconds since the oldest unconsumed (or parked) message was produced; 0 when "
        "caught up (group detail: the group's worst queue).",
        "time_lag_s",
        "max_time_lag_s",
    ),
    Gauge(
        "lockstep_queue_committed_offset",
        "Committed offset (low-water mark): every offset below it is done (queue detail "
        "only: see lockstep_group_handled_messages).",
        "committed_offset",
        None,
    ),
    Gauge(
        "lockstep_queue_parked_messages",
        "Messages parked behind held keys (after_dlq=hold; group detail: summed).",
        "parked",
        "parked",
    ),
    Gauge(
        "lockstep_queue_lock_token",
        "Fencing token of the queue's latest lock grant (queue detail only).",
        "token",
        None,
    ),
    Gauge(
        "lockstep_queue_held_keys",
        "Keys held behind their dead letter (after_dlq=hold); their later messages are "
        "parked (group detail: summed).",
        "held_keys",
        "held_keys",
    ),
    Gauge(
        "lockstep_queue_owned",
        "1 while a consumer holds a live lock on the queue for the group, else 0 "
        "(queue detail only: see lockstep_group_queues_owned).",
        "owner",
        None,
        flag=True,
    ),
    Gauge(
        "lockstep_queue_stuck",
        "1 while the queue is stuck for the group (docs/stuck.md: work waiting and no "
        "progress for LOCKSTEP_STUCK_AFTER_SECONDS, any reason), else 0 (group detail: "
        "1 while any queue of the group is).",
        "stuck",
        "stuck",
        flag=True,
    ),
    Gauge(
        "lockstep_queue_blocked_keys",
        "Keys blocked by a failing message, as the lock owner reports (key ordering; "
        "0 under queue ordering or without a live owner; group detail: summed).",
        "blocked_count",
        "blocked_keys",
    ),
    Gauge(
        "lockstep_dead_letters_waiting",
        "Dead letters waiting in the group's dead-letter stream of the queue "
        "(not yet replayed or discarded; group detail: summed).",
        "dead_letters",
        "dead_letters",
    ),
)
# Group detail only, labelled topic, group: what the per-queue gauges without a group
# aggregate told. (metric, help, GroupStatus column or one of GROUP_COUNTS.)
GROUP_GAUGES = (
    ("lockstep_group_queues", "Queues of the topic the group reads.", "queues"),
    (
        "lockstep_group_queues_owned",
        "Queues a live consumer of the group holds the lock on.",
        "owned",
    ),
    ("lockstep_group_queues_stuck", "Queues stuck for the group (docs/stuck.md).", "stuck_queues"),
    (
        "lockstep_group_unowned_lag_messages",
        "Messages behind in the group's queues whose lock nobody holds.",
        "unowned_lag",
    ),
    (
        "lockstep_group_handled_messages",
        "Messages the group has handled over all its queues (max offset - lag, summed): "
        "it grows while the group makes progress.",
        "handled",
    ),
)
# Per-group values GroupStatus does not keep, each a query of the few QueueStatus rows it
# concerns (through their index: stuck ones, unowned ones), never of every row.
GROUP_COUNTS: dict[str, tuple[Q, Any]] = {
    "stuck_queues": (Q(severity=2), Count("id")),
    "unowned_lag": (Q(owner="", lag__gt=0), Sum("lag")),
}
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

Number = int | float
# The columns of fleet state whose values are floats (the others are integers or text).
FLOAT_COLUMNS = frozenset({"time_lag_s", "max_time_lag_s"})

MAX_OFFSET = "lockstep_queue_max_offset"
MAX_OFFSET_HELP = (
    "Next offset to be produced in the queue (a property of the queue, so labelled topic "
    "and queue only; group detail: summed over the topic's queues, labelled topic, as of "
    "the fleet writer's last sweep)."
)


class Family(NamedTuple):
    """One metric family as written: its name (a counter's with ``_total``), help, type
    and samples, each a label set already rendered (``{topic="…",…}``, or "") and a
    value. ``floats``: some values are floats (written as prometheus_client writes them;
    integers are written as they are)."""

    name: str
    help: str
    type: str
    samples: Sequence[tuple[str, Number]]
    floats: bool = False


# ---- reading -----------------------------------------------------------------------------


def lockstep_families(client: redis.Redis, detail: str) -> list[Family]:
    """The monitor's families at ``detail`` (``queue`` or ``group``): the fleet state
    (swept first when no ingester keeps it), the consumers' cards and the counters.
    Raises ``redis.RedisError`` when Redis fails."""
    fleet_read.ensure_fresh(client)
    if detail == QUEUE:
        gauges, max_offsets = queue_families(client)
    else:
        gauges, max_offsets = group_families()
    return [
        *gauges,
        max_offsets,
        *consumer_families(client),
        *counter_families(per_queue=detail == QUEUE),
        detail_family(detail),
    ]


def queue_families(client: redis.Redis) -> tuple[list[Family], Family]:
    """Every ``QUEUE_GAUGES`` gauge of every (topic, group, queue) of the fleet state,
    0 included (an absent series never stands for 0), ordered by topic, group, queue;
    and the max offset of every queue. One query, of the columns shown only."""
    rows = list(
        QueueStatus.objects.order_by("topic", "group", "queue").values_list(
            "topic", "group", "queue", "max_offset", *(g.column for g in QUEUE_GAUGES)
        )
    )
    labels = _Labels()
    label_sets = [labels.pair(topic, group, queue) for topic, group, queue, *_ in rows]
    families = [
        _gauge_family(gauge, label_sets, rows, i, gauge.column)
        for i, gauge in enumerate(QUEUE_GAUGES, start=4)
    ]
    # A property of the queue, the same in each group's row.
    offsets = {(row[0], row[2]): row[3] for row in rows}
    groupless = list(TopicStatus.objects.filter(groups=0))
    if groupless:
        offsets |= _max_offsets(client, groupless)
    samples = [(labels.queue(topic, queue), v) for (topic, queue), v in sorted(offsets.items())]
    return families, Family(MAX_OFFSET, MAX_OFFSET_HELP, "gauge", samples)


def group_families() -> tuple[list[Family], Family]:
    """Per (topic, group), as the fleet writer keeps them (``GroupStatus``): the
    ``QUEUE_GAUGES`` that have a group aggregate, under their names without the queue
    label, and the ``GROUP_GAUGES``; and the max offsets of each topic's queues summed,
    as the writer's last sweep read them (``TopicStatus.produced``)."""
    rows = group_rows()
    labels = _Labels()
    label_sets = [labels.group(row["topic"], row["group"]) for row in rows]
    families = [
        _gauge_family(gauge, label_sets, rows, gauge.group_column, gauge.group_column)
        for gauge in QUEUE_GAUGES
        if gauge.group_column is not None
    ]
    families += [
        _gauge_family(Gauge(metric, text, column, column), label_sets, rows, column, column)
        for metric, text, column in GROUP_GAUGES
    ]
    produced = TopicStatus.objects.order_by("name").values_list("name", "produced")
    samples = [(labels.topic(name), value) for name, value in produced]
    return families, Family(MAX_OFFSET, MAX_OFFSET_HELP, "gauge", samples)


def group_rows() -> list[dict[str, Any]]:
    """The ``GroupStatus`` rows by topic and group, each with the ``GROUP_COUNTS`` too:
    a query of the groups and one of the queues each count concerns, never of every
    queue's row (unless every queue is unowned and behind)."""
    counts = set(GROUP_COUNTS)
    columns = {g.group_column for g in QUEUE_GAUGES} | {c for _, _, c in GROUP_GAUGES}
    kept = sorted(c for c in columns if c is not None and c not in counts)
    rows = list(GroupStatus.objects.order_by("topic", "group").values("topic", "group", *kept))
    for name, (where, aggregate) in GROUP_COUNTS.items():
        found = {
            (topic, group): value
            for topic, group, value in QueueStatus.objects.filter(where)
            .values("topic", "group")
            .annotate(value=aggregate)
            .order_by()
            .values_list("topic", "group", "value")
        }
        for row in rows:
            row[name] = found.get((row["topic"], row["group"]), 0)
    return rows


def _gauge_family(
    gauge: Gauge, label_sets: list[str], rows: Sequence[Any], key: Any, column: str
) -> Family:
    """``gauge``'s family of one sample per row (``row[key]``, as a 0/1 flag if the
    gauge is one); ``column`` names what is shown (floats: the time lags)."""
    pairs = zip(label_sets, rows, strict=True)
    if gauge.flag:
        samples: list[tuple[str, Number]] = [(s, 1 if row[key] else 0) for s, row in pairs]
    else:
        samples = [(s, row[key]) for s, row in pairs]
    floats = column in FLOAT_COLUMNS
    return Family(gauge.metric, gauge.help, "gauge", samples, floats)


def _max_offsets(client: redis.Redis, topics: list[TopicStatus]) -> dict[tuple[str, int], int]:
    """The max offsets of topics no group reads (the fleet state has no row of them),
    by (topic, queue)."""
    refs = [QueueRef(t.name, q) for t in topics for q in range(t.queue_count)]
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.get(keys.sequence(ref))
    return {
        (ref.topic, ref.queue): int(v or 0) for ref, v in zip(refs, pipe.execute(), strict=True)
    }


def consumer_families(client: redis.Redis) -> list[Family]:
    """Live and silent (heartbeat older than the heartbeat timeout, card not expired)
    consumer processes per (topic, group) they subscribe to; 0 for known groups with
    nobody."""
    timeout_s = heartbeat_timeout()
    live: Counter[tuple[str, str]] = Counter()
    silent: Counter[tuple[str, str]] = Counter()
    for card in registered_consumers(client):
        tally = live if card["heartbeat_age_s"] <= timeout_s else silent
        for where in {(sub["topic"], sub["group"]) for sub in card["subscriptions"]}:
            tally[where] += 1
    known = set(GroupStatus.objects.values_list("topic", "group"))
    labels = _Labels()
    families: list[Family] = []
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
        # Known groups with nobody (live or silent): 0, not absent.
        samples: list[tuple[str, Number]] = [
            (labels.group(topic, group), tally.get((topic, group), 0))
            for topic, group in sorted(known | set(tally))
        ]
        families.append(Family(name, text, "gauge", samples))
    return families


def counter_families(*, per_queue: bool) -> list[Family]:
    """The ``EventCounter`` rows as counters: per (topic, group, queue), or under group
    detail summed per (topic, group) in the database (a sum of counters that only grow
    only grows). Counts that name no queue have ``queue=""``; the ingester's own
    (``UNLABELLED_COUNTERS``) have no labels and a series from the start."""
    labels = _Labels()
    series: dict[str, list[tuple[str, Number]]] = defaultdict(list)
    if per_queue:
        rows = EventCounter.objects.order_by("name", "topic", "group", "queue").values_list(
            "name", "topic", "group", "queue", "value"
        )
        for name, topic, group, queue, value in rows:
            if not (topic or group) and queue < 0:
                series[name].append(("", value))
            else:
                series[name].append((labels.pair(topic, group, queue), value))
    else:
        totals = (
            EventCounter.objects.values("name", "topic", "group")
            .annotate(total=Sum("value"))
            .order_by("name", "topic", "group")
            .values_list("name", "topic", "group", "total")
        )
        for name, topic, group, value in totals:
            series[name].append((labels.group(topic, group) if topic or group else "", value))
    families = []
    for name, metric, text in COUNTERS:
        samples = series.get(name, [])
        if name in UNLABELLED_COUNTERS and not samples:
            samples = [("", 0)]  # a series from the start: increase() sees it
        families.append(Family(metric, text, "counter", samples))
    return families


def detail_family(detail: str) -> Family:
    """Which detail the scrape has, for rules and dashboards that read either."""
    return Family(
        "lockstep_metrics_detail",
        "1, labelled with the detail of these metrics (LOCKSTEP_METRICS_DETAIL): queue "
        "(per topic, group and queue) or group (per topic and group).",
        "gauge",
        [(f'{{detail="{detail}"}}', 1)],
    )


# ---- writing ----------------------------------------------------------------------------


class _Labels:
    """Label sets as the text format writes them, each label value escaped once per
    scrape however many samples carry it."""

    def __init__(self) -> None:
        self._escaped: dict[str, str] = {}
        self._pairs: dict[tuple[str, str], str] = {}

    def _esc(self, value: str) -> str:
        found = self._escaped.get(value)
        if found is None:
            found = self._escaped[value] = (
                value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
            )
        return found

    def pair(self, topic: str, group: str, queue: int) -> str:
        """``queue=""`` for a negative queue (a count that names none)."""
        prefix = self._pairs.get((topic, group))
        if prefix is None:
            prefix = self._pairs[topic, group] = self.group(topic, group)[:-1] + ',queue="'
        return f'{prefix}{queue}"}}' if queue >= 0 else f'{prefix}"}}'

    def group(self, topic: str, group: str) -> str:
        return f'{{topic="{self._esc(topic)}",group="{self._esc(group)}"}}'

    def queue(self, topic: str, queue: int) -> str:
        return f'{{topic="{self._esc(topic)}",queue="{queue}"}}'

    def topic(self, topic: str) -> str:
        return f'{{topic="{self._esc(topic)}"}}'


def exposition(families: Iterable[Family]) -> str:
    """The Prometheus text format (0.0.4) of ``families``: HELP and TYPE, then the
    samples of each family together. Integers are written as they are (the format reads
    any float), floats as prometheus_client writes them (Go's notation, +Inf, NaN)."""
    out: list[str] = []
    for family in families:
        name = family.name
        text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {name} {text}\n# TYPE {name} {family.type}\n")
        if family.floats:
            out.extend([f"{name}{labels} {floatToGoString(v)}\n" for labels, v in family.samples])
        else:
            out.extend([f"{name}{labels} {v}\n" for labels, v in family.samples])
    return "".join(out)


def render_metrics(client: redis.Redis, detail: str | None = None) -> bytes:
    """The exposition of one live read at ``detail`` (``LOCKSTEP_METRICS_DETAIL`` when
    None): the monitor's families, then those of ``web.metrics``. Raises
    ``redis.RedisError`` when Redis fails."""
    own = exposition(lockstep_families(client, detail or settings.LOCKSTEP_METRICS_DETAIL))
    registry = CollectorRegistry(auto_describe=False)
    for collector in feature_collectors():
        registry.register(collector)
    return own.encode() + generate_latest(registry)


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
