"""Finding dead-letter records: the list's filters, its sort and its cursor.

Pages are keyset-paginated on (``dead_at``, ``id``) — never OFFSET — so page 2,000 costs
what page 1 does, and records synced while someone pages neither repeat nor shift what
follows. A cursor is opaque to callers: the sort it was made for, then the last row's
``dead_at`` (epoch microseconds) and ``id``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.db.models import Q, QuerySet
from django.utils import timezone

from lockstep.dashboard.deadletters.models import DeadLetter, Status
from lockstep.dashboard.web.views import BadParameter, int_param, text_param

T = TypeVar("T")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)  # integer steps: floats would round cursors
MILLISECOND = timedelta(milliseconds=1)
SORTS = ("-dead_at", "dead_at")  # newest first (the default), oldest first
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
# What the list shows; bodies (up to LOCKSTEP_MAX_BODY_BYTES each), headers and attempts
# are read only for one record or the export.
LIST_FIELDS = (
    "id",
    "dlq_id",
    "topic",
    "group",
    "queue",
    "offset",
    "key",
    "status",
    "error",
    "reconsume_times",
    "produced_at",
    "dead_at",
    "body_size",
    "ordering",
    "after_dlq",
    "replay_of",
)


class InvalidFilters(BadParameter):
    """Filters that cannot be used: ``errors`` maps each such field to its message (the
    exception's text joins them, as the JSON API answers)."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = errors


@dataclass(frozen=True)
class Filters:
    """The list's filters; empty fields filter nothing. ``error`` matches a part of the
    error text (case-insensitive), the others exactly; ``since`` / ``until`` bound the
    dead-letter time (inclusive)."""

    topic: str = ""
    queue: int | None = None
    key: str = ""
    error: str = ""
    statuses: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> Filters:
        """From query parameters; ``InvalidFilters`` naming every field that cannot be
        used (each with its own message), so a form can show them all at once."""
        errors: dict[str, str] = {}

        def field(name: str, parse: Callable[[str | None], T], empty: T) -> T:
            try:
                return parse(params.get(name))
            except BadParameter as exc:
                errors[name] = str(exc)
                return empty

        since = field("since", lambda v: time_param(v, "since"), None)
        until = field("until", lambda v: time_param(v, "until"), None)
        if since and until and since > until:
            errors["until"] = "since must not be after until"
        filters = cls(
            topic=field("topic", lambda v: text_param(v, "topic", max_length=128), ""),
            queue=field("queue", lambda v: int_param(v, "queue", maximum=1023), None),
            key=field("key", lambda v: text_param(v, "key", max_length=1024), ""),
            error=field("error", lambda v: text_param(v, "error", max_length=256), ""),
            statuses=field("status", status_param, ()),
            since=since,
            until=until,
        )
        if errors:
            raise InvalidFilters(errors)
        return filters

    def apply(self, records: QuerySet[DeadLetter]) -> QuerySet[DeadLetter]:
        if self.topic:
            records = records.filter(topic=self.topic)
        if self.queue is not None:
            records = records.filter(queue=self.queue)
        if self.key:
            records = records.filter(key=self.key)
        if self.error:
            records = records.filter(error__icontains=self.error)
        if self.statuses:
            records = records.filter(status__in=self.statuses)
        if self.since:
            records = records.filter(dead_at__gte=self.since)
        if self.until:
            records = records.filter(dead_at__lte=self.until)
        return records

    def as_dict(self) -> dict[str, Any]:
        """As the response's ``filters`` (times in epoch ms, statuses comma-joined)."""
        data = asdict(self)
        data["status"] = ",".join(data.pop("statuses"))
        for name in ("since", "until"):
            data[f"{name}_ms"] = to_ms(data.pop(name)) if getattr(self, name) else None
        return data


def time_param(value: str | None, name: str) -> datetime | None:
    """Epoch milliseconds, or an ISO 8601 date or time (``YYYY-MM-DD HH:MM`` as the form
    asks): in the viewer's zone (the request's active one) unless it says otherwise."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        if text.lstrip("-").isdigit():
            return datetime.fromtimestamp(int(text) / 1000.0, tz=UTC)
        parsed = datetime.fromisoformat(text)
        return (parsed if parsed.tzinfo else timezone.make_aware(parsed)).astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        raise BadParameter(
            f"{name} must be epoch milliseconds or an ISO 8601 time, got {text[:64]!r}"
        ) from None


def status_param(value: str | None) -> tuple[str, ...]:
    """One status or several, comma-separated."""
    names = tuple(s.strip() for s in (value or "").split(",") if s.strip())
    unknown = [s for s in names if s not in Status.values]
    if unknown:
        raise BadParameter(
            f"unknown status {unknown[0][:40]!r} (one of: {', '.join(Status.values)})"
        )
    return names


def sort_param(value: str | None) -> str:
    sort = (value or "").strip() or SORTS[0]
    if sort not in SORTS:
        raise BadParameter(f"sort must be one of {', '.join(SORTS)}, got {sort[:40]!r}")
    return sort


def limit_param(value: str | None) -> int:
    limit = int_param(value, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
    return limit or DEFAULT_LIMIT


def to_ms(moment: datetime) -> int:
    return (moment - EPOCH) // MILLISECOND


# ---- cursor ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    sort: str
    dead_at_us: int  # epoch microseconds
    id: int

    def encode(self) -> str:
        raw = f"{self.sort}|{self.dead_at_us}|{self.id}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, sort: str) -> Cursor:
        """``BadParameter`` for a cursor this list did not make, or made for another
        sort."""
        bad = BadParameter("cursor is not one this list gave; ask again without it")
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            made_for, dead_at_us, pk = raw.split("|")
            cursor = cls(made_for, int(dead_at_us), int(pk))
            cursor.dead_at  # noqa: B018 (a time out of range is refused here)
        except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError):
            raise bad from None
        if cursor.sort not in SORTS:
            raise bad
        if cursor.sort != sort:
            raise BadParameter(f"cursor was made for sort {cursor.sort}, not {sort}")
        return cursor

    @classmethod
    def after(cls, record: DeadLetter, sort: str) -> Cursor:
        return cls(sort, (record.dead_at - EPOCH) // MICROSECOND, record.pk)

    @property
    def dead_at(self) -> datetime:
        return EPOCH + self.dead_at_us * MICROSECOND


def cursor_param(value: str | None, sort: str) -> Cursor | None:
    text = (value or "").strip()
    if not text:
        return None
    if len(text) > 200:
        raise BadParameter("cursor is not one this list gave; ask again without it")
    return Cursor.decode(text, sort)


# ---- pages -----------------------------------------------------------------------------


def in_order(records: QuerySet[DeadLetter], sort: str, cursor: Cursor | None) -> QuerySet:
    """``records`` in ``sort`` order, starting after ``cursor``."""
    if cursor is not None:
        at = cursor.dead_at
        if sort == "-dead_at":
            records = records.filter(Q(dead_at__lt=at) | Q(dead_at=at, id__lt=cursor.id))
        else:
            records = records.filter(Q(dead_at__gt=at) | Q(dead_at=at, id__gt=cursor.id))
    order = ("-dead_at", "-id") if sort == "-dead_at" else ("dead_at", "id")
    return records.order_by(*order)


@dataclass(frozen=True)
class Page:
    records: list[DeadLetter]
    next_cursor: str | None


def page(group: str, filters: Filters, sort: str, cursor: Cursor | None, limit: int) -> Page:
    """One page of the group's records matching ``filters``; ``next_cursor`` is ``None``
    on the last page."""
    records = filters.apply(DeadLetter.objects.filter(group=group)).only(*LIST_FIELDS)
    rows = list(in_order(records, sort, cursor)[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, Cursor.after(rows[-1], sort).encode() if more else None)


def count_waiting(group: str, filters: Filters) -> int:
    """Records matching ``filters`` except the status filter that still wait for an
    operator (status ``dead``)."""
    records = replace(filters, statuses=()).apply(DeadLetter.objects.filter(group=group))
    return records.filter(status=Status.DEAD).count()


def each_record(
    group: str, filters: Filters, sort: str, cursor: Cursor | None, batch: int = 500
) -> Iterator[list[DeadLetter]]:
    """Every matching record, whole (bodies included), in pages of ``batch``."""
    while True:
        records = filters.apply(DeadLetter.objects.filter(group=group))
        rows = list(in_order(records, sort, cursor)[:batch])
        if not rows:
            return
        yield rows
        if len(rows) < batch:
            return
        cursor = Cursor.after(rows[-1], sort)
