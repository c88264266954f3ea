"""Reading the fleet state (docs/fleet-state.md) for the pages: a summary per topic and
group, the worst queues, and tables of (topic, group, queue) rows paged, sorted and
filtered in the database. What a read costs follows what it returns (at most
``MAX_PER_PAGE`` rows, ``WORST`` queues, ``SUMMARY_GROUPS`` groups), never the size of
the fleet.

``ensure_fresh`` is the one place a page may read the whole fleet from Redis: only when
no fleet writer (the ingester) is live, so that a deployment without one still shows the
truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

import redis
from django import forms
from django.core.paginator import Paginator
from django.db.models import F, Q, QuerySet, Sum
from redis.exceptions import LockError

from lockstep.dashboard.web.store.fleet import STAMP, WRITER_KEY, FleetWriter
from lockstep.dashboard.web.store.models import FleetStamp, GroupStatus, QueueStatus, TopicStatus
from lockstep.dashboard.web.views import BadParameters

# A table page shows at most this many rows: a page's cost and its live messages stay
# bounded whatever the fleet's size.
MAX_PER_PAGE = 100
DEFAULT_PER_PAGE = 50
# The overview's "worst queues": stuck first, then the highest time lag.
WORST = 10
# Groups the summary lists (worst first); the rest are counted, and their tables a filter
# away.
SUMMARY_GROUPS = 50
# While a page sweeps for a missing writer, others wait this long for it, then read
# what is there.
SWEEP_LEASE_S = 30
SWEEP_WAIT_S = 10
SWEEP_LEASE = "lockstep-web:fleet-sweep"

# Sort keys: the columns each orders by (then by topic, group, queue). "queue" names all
# three, so that its ``desc`` reverses the table.
SORTS: dict[str, tuple[str, ...]] = {
    "queue": ("topic", "group", "queue"),
    "lag": ("lag",),
    "time_lag": ("time_lag_s",),
    "state": ("severity", "state"),
    "owner": ("owner",),
}
TIEBREAK = ("topic", "group", "queue")
# The state filter: every state a queue can be in (``workers.inspect.GroupState``), and
# two of the dashboard's own: ``stuck`` (docs/stuck.md) and ``attention`` (stuck, or
# unowned, blocked, held keys, dead letters: what an operator should look at).
STATES = (
    "stuck",
    "attention",
    "consuming",
    "idle",
    "suspended",
    "blocked",
    "paused",
    "lock_expired",
    "starting",
    "stopped",
    "unowned",
    "no_live_consumer",
    "unknown",
)


class TableForm(forms.Form):
    """A table's query parameters, all optional; each error names its field."""

    topic = forms.CharField(required=False, max_length=128)
    group = forms.CharField(required=False, max_length=128)
    state = forms.ChoiceField(required=False, choices=[("", "")] + [(s, s) for s in STATES])
    owner = forms.CharField(required=False, max_length=200)
    sort = forms.ChoiceField(required=False, choices=[(s, s) for s in SORTS])
    order = forms.ChoiceField(required=False, choices=[("asc", "asc"), ("desc", "desc")])
    page = forms.IntegerField(required=False, min_value=1, max_value=10**9)
    per_page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PER_PAGE)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("topic", "group", "owner"):
            if "\x00" in (data.get(name) or ""):
                self.add_error(name, "must not contain NUL characters")
        return data


@dataclass(frozen=True)
class TableView:
    """One table's filters, sort and page, as the URL gives them."""

    topic: str = ""
    group: str = ""
    state: str = ""
    owner: str = ""
    sort: str = "queue"
    order: str = "asc"
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE

    # Filters a page's path fixes (a group page's topic and group): left out of its links.
    fixed: tuple[str, ...] = ()

    def params(self, **changes: Any) -> dict[str, str]:
        """The non-default parameters of this view with ``changes``, but the ``fixed``
        ones: what a link that keeps the view carries."""
        view = replace(self, **changes)
        base = asdict(TableView())
        skip = {"fixed", *self.fixed}
        return {k: str(v) for k, v in asdict(view).items() if k not in skip and v != base[k]}

    def query(self, **changes: Any) -> str:
        """``params`` as a query string with its ``?`` (just ``?`` when all are
        defaults)."""
        params = self.params(**changes)
        return "?" + urlencode(params) if params else "?"


def table_view(params: Mapping[str, str], **fixed: str) -> TableView:
    """The view the query ``params`` ask for, with ``fixed`` filters (a group page's
    topic and group) over them. ``BadParameters`` names every bad field."""
    form = TableForm({k: params.get(k, "") for k in TableForm.base_fields})
    if not form.is_valid():
        raise BadParameters({name: [str(e) for e in errs] for name, errs in form.errors.items()})
    data = {k: v for k, v in form.cleaned_data.items() if v not in ("", None)}
    return TableView(**{**data, **fixed}, fixed=tuple(fixed))


def table_links(view: TableView, table: dict[str, Any]) -> dict[str, Any]:
    """Query strings that keep the view: each column's sort (the same column again flips
    the order), the pages around this one."""
    sorts = {}
    for name in SORTS:
        flip = "desc" if view.sort == name and view.order == "asc" else "asc"
        order = flip if view.sort == name else ("asc" if name in ("queue", "owner") else "desc")
        sorts[name] = view.query(sort=name, order=order, page=1)
    number, pages = table["page"], table["pages"]
    return {
        "sort": sorts,
        "first": view.query(page=1) if number > 1 else None,
        "previous": view.query(page=number - 1) if number > 1 else None,
        "next": view.query(page=number + 1) if number < pages else None,
        "last": view.query(page=pages) if number < pages else None,
        "clear": "?" if view.params() else None,
    }


# ---- reads -----------------------------------------------------------------------------


def rows_of(view: TableView) -> QuerySet[QueueStatus]:
    """The rows ``view`` filters to, in its order."""
    rows = QueueStatus.objects.all()
    if view.topic:
        rows = rows.filter(topic=view.topic)
    if view.group:
        rows = rows.filter(group=view.group)
    if view.owner:
        rows = rows.filter(owner=view.owner)
    if view.state == "stuck":
        rows = rows.exclude(stuck="")
    elif view.state == "attention":
        rows = rows.filter(severity__gt=0)
    elif view.state:
        rows = rows.filter(state=view.state)
    columns = [F(c).desc() if view.order == "desc" else F(c).asc() for c in SORTS[view.sort]]
    return rows.order_by(*columns, *TIEBREAK)


def table(view: TableView) -> dict[str, Any]:
    """One page of ``view``'s rows: ``{"rows", "page", "pages", "per_page", "total",
    "sort", "order", "filters"}``. A page past the end is the last page."""
    paginator = Paginator(rows_of(view), view.per_page)
    page = paginator.get_page(view.page)
    now_ms = stamp()["refreshed_ms"]
    return {
        "rows": [row_dict(r, now_ms) for r in page.object_list],
        "page": page.number,
        "pages": paginator.num_pages,
        "per_page": view.per_page,
        "total": paginator.count,
        "sort": view.sort,
        "order": view.order,
        "filters": {
            "topic": view.topic,
            "group": view.group,
            "state": view.state,
            "owner": view.owner,
        },
    }


def worst(limit: int = WORST, **filters: str) -> list[dict[str, Any]]:
    """The queues that need a look, worst first: stuck ones (longest stuck first), then
    the rest by time lag, then by lag; a queue that is neither stuck nor behind is left
    out."""
    rows = QueueStatus.objects.filter(**filters).filter(
        ~Q(stuck="") | Q(time_lag_s__gt=0) | Q(lag__gt=0)
    )
    ordered = rows.order_by(
        F("stuck_since_ms").asc(nulls_last=True), "-time_lag_s", "-lag", *TIEBREAK
    )
    now_ms = stamp()["refreshed_ms"]
    return [row_dict(r, now_ms) for r in ordered[:limit]]


def summary(limit: int = SUMMARY_GROUPS) -> dict[str, Any]:
    """Per topic (queues, groups, rate in) and per group (its ``GroupStatus``, the
    ``limit`` worst groups: most stuck, then the highest time lag), with the fleet's
    totals and ``group_count``."""
    groups = GroupStatus.objects.order_by("-stuck", "-max_time_lag_s", "topic", "group")
    totals = GroupStatus.objects.aggregate(
        queues=Sum("queues"),
        lag=Sum("lag"),
        parked=Sum("parked"),
        stuck=Sum("stuck"),
        held_keys=Sum("held_keys"),
        blocked_keys=Sum("blocked_keys"),
        dead_letters=Sum("dead_letters"),
    )
    return {
        "topics": [
            {
                "name": t.name,
                "queue_count": t.queue_count,
                "groups": t.groups,
                "in_per_s": t.in_per_s,
            }
            for t in TopicStatus.objects.order_by("name")
        ],
        "groups": [group_dict(g) for g in groups[:limit]],
        "group_count": GroupStatus.objects.count(),
        "totals": {name: int(value or 0) for name, value in totals.items()},
    }


def group_summary(topic: str, group: str) -> dict[str, Any] | None:
    found = GroupStatus.objects.filter(topic=topic, group=group).first()
    return group_dict(found) if found else None


def stamp() -> dict[str, int]:
    """When the state was last written (``refreshed_ms``) and last read whole
    (``swept_ms``), Redis time; 0 before the first."""
    found = FleetStamp.objects.filter(name=STAMP).first()
    return {
        "refreshed_ms": found.refreshed_ms if found else 0,
        "swept_ms": found.swept_ms if found else 0,
    }


def row_dict(row: QueueStatus, now_ms: int) -> dict[str, Any]:
    """A row as the JSON views show it, lock times relative to ``now_ms`` (the state's
    ``refreshed_ms``); ``owner`` null without a live lock."""
    granted, expires = row.lock_granted_at_ms, row.lock_expires_at_ms
    return {
        "topic": row.topic,
        "group": row.group,
        "queue": row.queue,
        "max_offset": row.max_offset,
        "committed_offset": row.committed_offset,
        "lag": row.lag,
        "parked": row.parked,
        "held_keys": row.held_keys,
        "time_lag_s": row.time_lag_s,
        "owner": row.owner or None,
        "owner_live": row.owner_live,
        "token": row.token,
        "lock_granted_at_ms": granted,
        "lock_age_ms": max(0, now_ms - granted) if granted else None,
        "lock_expires_in_ms": max(0, expires - now_ms) if expires is not None else None,
        "completed_above": row.completed_above,
        "in_flight": row.in_flight,
        "state": row.state,
        "retries": row.retries,
        "last_error": row.last_error,
        "blocked_count": row.blocked_count,
        "dead_letters": row.dead_letters,
        "stuck": row.stuck or None,
        "stuck_since_ms": row.stuck_since_ms,
        "stuck_why": "; ".join(str(a.get("why", "")) for a in row.stuck_entries),
        "severity": row.severity,
    }


def group_dict(g: GroupStatus) -> dict[str, Any]:
    return {
        "topic": g.topic,
        "group": g.group,
        "queues": g.queues,
        "owned": g.owned,
        "owners": g.owners,
        "lag": g.lag,
        "parked": g.parked,
        "max_time_lag_s": g.max_time_lag_s,
        "out_per_s": g.out_per_s,
        "retries_per_min": g.retries_per_min,
        "stuck": g.stuck,
        "held_keys": g.held_keys,
        "blocked_keys": g.blocked_keys,
        "dead_letters": g.dead_letters,
    }


# ---- freshness -------------------------------------------------------------------------


def writer_live(client: redis.Redis) -> bool:
    return bool(client.exists(WRITER_KEY))


def ensure_fresh(client: redis.Redis) -> None:
    """Without a live writer, sweep the fleet now (one page at a time; the others wait
    for it, then read what it wrote). With one, do nothing: its state is current."""
    if writer_live(client):
        return
    lease = client.lock(SWEEP_LEASE, timeout=SWEEP_LEASE_S, blocking_timeout=SWEEP_WAIT_S)
    if not lease.acquire():
        return
    try:
        FleetWriter(client, keeps_history=False).sweep(mark_live=False)
    finally:
        # It may have expired during a very slow sweep: nothing to release then.
        with suppress(LockError):
            lease.release()
