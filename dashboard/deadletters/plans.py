"""What a replay or discard would act on, and what it means for order: the dry run.

Only records in status ``dead`` are acted on (they wait in their dead-letter stream). The
rest of a selection is *skipped*, counted per status with the reason: a record that is
``dead_again`` has a new record for its new dead letter, which is the one to act on.

Whether a replay goes back in place or is re-published is the runtime's decision, made
from Redis (docs/semantics.md §6): a dead letter that holds its key right now goes back
in place, ahead of the messages parked behind it; every other one is re-published at the
end of its queue, after the messages that were handled meanwhile. The dry run reads the
held keys (``workers.inspect.held_keys``) to say which is which.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import redis
from django.conf import settings
from django.db.models import Count, QuerySet

from lockstep.dashboard.deadletters.models import ActionKind, DeadLetter, Status
from lockstep.dashboard.deadletters.queries import Filters
from lockstep.dashboard.web.views import BadParameter
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.inspect import held_keys

ACTIONABLE = Status.DEAD
# The dry run names the keys with the most messages; the total count covers them all.
TOP_KEYS = 20
# The dry run names the first dead letters it would act on (key and offset), so a dialog
# can say what it acts on, not only how many: enough for a hand-ticked selection, short
# enough to read in one glance; the count says how many more.
NAMED_TARGETS = 10
# A selection (the page's checked rows, the CLI's --ids) names at most this many records.
MAX_IDS = 10_000
FILTER_FIELDS = ("topic", "queue", "key", "error", "status", "since", "until")

SKIP_REASONS: dict[str, str] = {
    Status.REPLAY_PENDING: "a replay of it is already pending",
    Status.REPLAYED: "already replayed",
    Status.SUCCEEDED: "already replayed and handled",
    Status.DEAD_AGAIN: "its replay died again: act on its new dead letter instead",
    Status.DISCARDED: "already discarded",
}


class ActionRefused(BadParameter):
    """A request that cannot be carried out as given (the API answers 400)."""


@dataclass(frozen=True)
class Selection:
    """What an action names: record ids (``ids``), or everything matching ``filters``
    (``filter_params`` is the filter as given, kept with the request and the audit)."""

    ids: tuple[int, ...] = ()
    filters: Filters | None = None
    filter_params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_ids(cls, ids: Iterable[int]) -> Selection:
        unique = tuple(dict.fromkeys(ids))
        if not unique:
            raise ActionRefused("ids must name at least one dead letter")
        if len(unique) > MAX_IDS:
            raise ActionRefused(f"at most {MAX_IDS} ids at a time; use a filter for more")
        return cls(ids=unique)

    @classmethod
    def of_filter(cls, params: Mapping[str, str]) -> Selection:
        """The list's filter (``FILTER_FIELDS``; ``BadParameter`` for a bad value)."""
        unknown = sorted(set(params) - set(FILTER_FIELDS))
        if unknown:
            raise ActionRefused(
                f"unknown filter field {unknown[0][:40]!r} (one of: {', '.join(FILTER_FIELDS)})"
            )
        given = {k: v for k, v in params.items() if v.strip()}
        return cls(filters=Filters.from_params(given), filter_params=given)

    def records(self, group: str) -> QuerySet[DeadLetter]:
        """The group's records it names, whatever their status."""
        records = DeadLetter.objects.filter(group=group)
        if self.filters is None:
            return records.filter(pk__in=self.ids)
        return self.filters.apply(records)

    def check(self, group: str) -> None:
        """``ActionRefused`` naming the first few ids that are not records of ``group``."""
        if self.filters is not None:
            return
        found = set(self.records(group).values_list("pk", flat=True))
        unknown = [i for i in self.ids if i not in found]
        if unknown:
            shown = ", ".join(str(i) for i in unknown[:10])
            more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
            raise ActionRefused(f"no dead letter {shown}{more} in group {group!r}")


@dataclass(frozen=True)
class Skipped:
    status: str
    count: int
    reason: str


@dataclass(frozen=True)
class Plan:
    """The dry run's answer. ``count`` records would be acted on; ``skipped`` are named
    but not in status ``dead``."""

    action: str
    count: int
    skipped: tuple[Skipped, ...]
    key_count: int  # distinct keys among the ``count`` records
    keys: tuple[dict[str, Any], ...]  # the TOP_KEYS keys with most records: {"key", "count"}
    queues: tuple[dict[str, Any], ...]  # {"topic", "queue", "count"}, by topic and queue
    order_notes: tuple[str, ...]
    # The first NAMED_TARGETS records, in the order a replay takes them (by topic, queue
    # and original offset): {"id", "topic", "queue", "offset", "key"}.
    targets: tuple[dict[str, Any], ...] = ()

    @property
    def skipped_count(self) -> int:
        return sum(s.count for s in self.skipped)

    def as_dict(self) -> dict[str, Any]:
        """The API's dry-run answer (and ``dlq … --dry-run --json``)."""
        return {
            "dry_run": True,
            "action": self.action,
            "count": self.count,
            "skipped": self.skipped_count,
            "skipped_reasons": [
                {"status": s.status, "count": s.count, "reason": s.reason} for s in self.skipped
            ],
            "key_count": self.key_count,
            "keys": list(self.keys),
            "queues": list(self.queues),
            "order_notes": list(self.order_notes),
            "targets": list(self.targets),
        }

    def nothing_to_do(self) -> str:
        """Why no record would be acted on (for the refusal of a real request)."""
        if not self.skipped:
            return f"nothing to {self.action}: no dead letter matches"
        why = ", ".join(f"{s.count} {s.reason}" for s in self.skipped)
        return f"nothing to {self.action}: none of the dead letters named is waiting ({why})"


def plan(client: redis.Redis, group: str, action: str, selection: Selection) -> Plan:
    """The dry run of ``action`` on ``selection`` in ``group``: changes nothing.
    ``ActionRefused`` for unknown ids; held keys that cannot be read from Redis (it is
    down) are reported in a note instead."""
    selection.check(group)
    records = selection.records(group)
    actionable = records.filter(status=ACTIONABLE)
    return Plan(
        action=action,
        count=actionable.count(),
        skipped=_skipped(records),
        key_count=actionable.values("key").distinct().count(),
        keys=tuple(
            {"key": row["key"], "count": row["n"]}
            for row in actionable.values("key")
            .annotate(n=Count("id"))
            .order_by("-n", "key")[:TOP_KEYS]
        ),
        queues=tuple(
            {"topic": row["topic"], "queue": row["queue"], "count": row["n"]}
            for row in actionable.values("topic", "queue")
            .annotate(n=Count("id"))
            .order_by("topic", "queue")
        ),
        order_notes=tuple(order_notes(client, group, action, actionable)),
        targets=tuple(
            dict(row)
            for row in actionable.order_by("topic", "queue", "offset", "id").values(
                "id", "topic", "queue", "offset", "key"
            )[:NAMED_TARGETS]
        ),
    )


def _skipped(records: QuerySet[DeadLetter]) -> tuple[Skipped, ...]:
    rows = (
        records.exclude(status=ACTIONABLE)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by("status")
    )
    return tuple(Skipped(status, n, SKIP_REASONS.get(status, status)) for status, n in rows)


# ---- order notes -----------------------------------------------------------------------


@dataclass
class _Holders:
    """The actionable records that hold their key now, and how many messages wait."""

    pks: list[int] = field(default_factory=list)
    parked: int = 0
    unreadable: str = ""  # why the held keys could not be read ("" when they were)


def order_notes(
    client: redis.Redis, group: str, action: str, actionable: QuerySet[DeadLetter]
) -> list[str]:
    """What acting on ``actionable`` means for the order of each key's messages, one
    sentence per way the records are consumed."""
    if not actionable.exists():
        return []
    holders = _holders(client, group, actionable)
    others = actionable.exclude(pk__in=holders.pks)
    notes = [holders.unreadable] if holders.unreadable else []
    if action == ActionKind.DISCARD:
        notes += _discard_notes(holders, others.count())
    else:
        notes += _replay_notes(holders, others)
    return notes


def _holders(client: redis.Redis, group: str, actionable: QuerySet[DeadLetter]) -> _Holders:
    found = _Holders()
    held: dict[tuple[str, int, str], int] = {}  # (topic, queue, dlq_id) -> parked behind
    try:
        for topic in actionable.values_list("topic", flat=True).distinct().order_by():
            try:
                keys = held_keys(client, topic, group)
            except UnknownTopicError:
                continue
            held.update({(topic, h["queue"], h["dlq_id"] or ""): h["messages"] for h in keys})
    except redis.RedisError as exc:
        found.unreadable = (
            f"Held keys could not be read from Redis ({exc}): whether a dead letter holds "
            "its key (and goes back in place) is decided when it is replayed."
        )
        return found
    dlq_ids = {dlq_id for _, _, dlq_id in held}
    rows = actionable.filter(dlq_id__in=dlq_ids).values_list("pk", "topic", "queue", "dlq_id")
    for pk, topic, queue, dlq_id in rows:
        parked = held.get((topic, queue, dlq_id))
        if parked is not None:
            found.pks.append(pk)
            found.parked += parked
    return found


def _replay_notes(holders: _Holders, others: QuerySet[DeadLetter]) -> list[str]:
    notes = []
    if len(holders.pks) == 1:
        notes.append(
            "1 dead letter holds its key (after_dlq = hold): it is replayed in place and runs "
            f"before the key's {counted(holders.parked, 'parked message')}, which then run in "
            "their original order."
        )
    elif holders.pks:
        notes.append(
            f"{len(holders.pks)} dead letters hold their keys (after_dlq = hold): each is "
            "replayed in place and runs before its key's parked messages "
            f"({holders.parked} in all), which then run in their original order."
        )
    modes = (
        others.values_list("ordering", "after_dlq")
        .annotate(n=Count("id"), keys=Count("key", distinct=True))
        .order_by("ordering", "after_dlq")
    )
    notes += [_republish_note(ordering, after, n, keys) for ordering, after, n, keys in modes]
    notes.append(
        f"Each key's messages are replayed one at a time in their original offset order, {_pace()}."
    )
    return notes


def _republish_note(ordering: str, after_dlq: str, n: int, keys: int) -> str:
    letters = counted(n, "dead letter")
    if ordering == "queue":
        return (
            f"{letters} under queue ordering: later messages of their queues were already "
            "handled; the replay is re-published after them, at the end of the queue."
        )
    if after_dlq == "continue":
        return (
            f"{letters} of {counted(keys, 'key')} under after_dlq = continue: later messages of "
            "these keys were already handled; the replay is re-published after them, at the "
            "end of the queue."
        )
    if after_dlq == "hold":
        return (
            f"{letters} under after_dlq = hold "
            f"{_one(n, 'no longer holds its', 'no longer hold their')} key: re-published at "
            "the end of the queue; a key held by another dead letter parks them behind that "
            "hold."
        )
    return (
        f"{letters} without a recorded ordering: each is re-published at the end of its "
        "queue unless it holds its key."
    )


def _discard_notes(holders: _Holders, others: int) -> list[str]:
    notes = []
    if len(holders.pks) == 1:
        notes.append(
            "1 dead letter holds its key (after_dlq = hold): discarding it releases the key, "
            f"and the {counted(holders.parked, 'message')} parked behind it run in their original "
            "order without it."
        )
    elif holders.pks:
        notes.append(
            f"{len(holders.pks)} dead letters hold their keys (after_dlq = hold): discarding "
            f"them releases the keys, and the messages parked behind them ({holders.parked} "
            "in all) run in their original order."
        )
    if others:
        notes.append(
            f"{counted(others, 'dead letter')} "
            f"{_one(others, 'does not hold its', 'do not hold their')} "
            f"key: the messages after {_one(others, 'it', 'them')} were already handled; "
            f"discarding drops {_one(others, 'it', 'them')} for good."
        )
    return notes


def _pace() -> str:
    rate = float(settings.LOCKSTEP_REPLAY_RATE_PER_S)
    return f"at most {rate:g} a second" if rate > 0 else "without a rate limit"


def _one(count: int, singular: str, plural: str) -> str:
    return singular if count == 1 else plural


def counted(count: int, noun: str) -> str:
    """ "1 dead letter", "2 dead letters": a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
