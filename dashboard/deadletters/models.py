"""The web side's record of dead letters, their status history, operator actions and the
audit log.

Redis is the runtime's truth: a dead letter waits in its (queue, group) dead-letter stream
until it is replayed or discarded, and then it is gone from there. A ``DeadLetter`` row is
the dashboard's durable copy of one stream entry (``sync.py`` copies them) plus what
happened to it afterwards (``status``, ``StatusChange`` rows), so the story of a message
outlives its stream entry.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models, transaction
from django.utils import timezone

# The longest key stored in full; longer keys are cut (the stream entry keeps the whole).
KEY_MAX_LENGTH = 1024
GROUP_MAX_LENGTH = 200


class Status(models.TextChoices):
    DEAD = "dead", "dead"  # waiting in its dead-letter stream for an operator
    REPLAY_PENDING = "replay_pending", "replay pending"  # an action will replay it
    REPLAYED = "replayed", "replayed"  # handed back to the runtime
    SUCCEEDED = "succeeded", "succeeded"  # the replayed message was handled
    DEAD_AGAIN = "dead_again", "dead again"  # the replay failed: a new dead letter
    DISCARDED = "discarded", "discarded"
    # No longer in its dead-letter stream, but no event said why: it was replayed or
    # discarded and that event was lost (a trimmed or gapped event stream). Redis is the
    # truth that it no longer waits; a late event still moves it on to what it says.
    GONE = "gone", "gone from Redis"


# Target status -> the statuses it may be reached from. A record only moves forward
# (except a pending replay that was cancelled), so a late or repeated report (an event
# ingested twice, a runtime event after the action service already moved it) changes
# nothing.
TRANSITIONS: dict[str, frozenset[str]] = {
    Status.DEAD: frozenset({Status.REPLAY_PENDING}),
    Status.REPLAY_PENDING: frozenset({Status.DEAD}),
    Status.REPLAYED: frozenset({Status.DEAD, Status.REPLAY_PENDING, Status.GONE}),
    Status.SUCCEEDED: frozenset({Status.DEAD, Status.REPLAY_PENDING, Status.REPLAYED, Status.GONE}),
    Status.DEAD_AGAIN: frozenset(
        {Status.DEAD, Status.REPLAY_PENDING, Status.REPLAYED, Status.GONE}
    ),
    Status.DISCARDED: frozenset({Status.DEAD, Status.REPLAY_PENDING, Status.GONE}),
    Status.GONE: frozenset({Status.DEAD}),
}


class DeadLetter(models.Model):
    """One entry of a (topic, queue, group) dead-letter stream, copied once by the sync.

    ``dlq_id`` is the stream entry ID (what ``workers.dead_letters`` replays or discards);
    the row's ``id`` is the public id of the API, pages and CLI. ``replay_of`` is the
    ``dlq_id`` of the dead letter this message was a replay of ("" if none)."""

    topic = models.CharField(max_length=128)
    group = models.CharField(max_length=GROUP_MAX_LENGTH)
    queue = models.IntegerField()
    dlq_id = models.CharField(max_length=40)
    offset = models.BigIntegerField()
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DEAD)
    error = models.TextField(blank=True, default="")
    reconsume_times = models.IntegerField(default=0)
    produced_at = models.DateTimeField()
    dead_at = models.DateTimeField()
    headers = models.JSONField(default=dict, blank=True)
    body = models.BinaryField(default=b"")
    body_size = models.IntegerField(default=0)
    attempts = models.JSONField(default=list, blank=True)  # [{"at_ms", "error", "traceback"}]
    ordering = models.CharField(max_length=8, blank=True, default="")  # queue | key
    after_dlq = models.CharField(max_length=12, blank=True, default="")  # continue | hold
    replay_of = models.CharField(max_length=40, blank=True, default="")
    synced_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(
                fields=("topic", "group", "queue", "dlq_id"),
                name="deadletters_unique_stream_entry",
            ),
        )
        # The list is keyset-paginated on (dead_at, id) within one group: one index per
        # filter shape that must stay fast at 100,000 dead letters in a group (status,
        # topic and status, key, none), each ending in the sort columns.
        indexes = (
            models.Index(
                fields=("group", "topic", "status", "dead_at", "id"), name="dl_grp_topic_status"
            ),
            models.Index(fields=("group", "status", "dead_at", "id"), name="dl_grp_status"),
            models.Index(fields=("group", "key", "dead_at", "id"), name="dl_grp_key"),
            models.Index(fields=("group", "dead_at", "id"), name="dl_grp_time"),
            # Replays that died again: few rows, found from the dead letter they replayed.
            models.Index(
                fields=("group", "replay_of"), condition=~models.Q(replay_of=""), name="dl_replays"
            ),
        )
        permissions = (
            ("replay_deadletter", "Can replay dead letters"),
            ("discard_deadletter", "Can discard dead letters"),
            ("acknowledge_deadletter", "Can acknowledge dead letters"),
            ("view_body", "Can see dead letters' bodies and headers"),
        )

    def __str__(self) -> str:
        return f"{self.topic}/{self.queue}@{self.offset} {self.group} {self.dlq_id}"

    def move_to(
        self,
        status: str,
        *,
        actor: str = "",
        request_id: str = "",
        note: str = "",
        at: Any = None,
    ) -> bool:
        """Move to ``status`` if ``TRANSITIONS`` allows it from the stored status (a
        conditional update: of two callers racing, one wins) and record the change.
        Returns whether it moved."""
        now = timezone.now()
        with transaction.atomic():
            moved = DeadLetter.objects.filter(pk=self.pk, status__in=TRANSITIONS[status]).update(
                status=status, updated_at=now
            )
            if moved:
                StatusChange.objects.create(
                    record_id=self.pk,
                    status=status,
                    at=at or now,
                    actor=actor[:150],
                    request_id=request_id[:64],
                    note=note,
                )
        if moved:
            self.status = status
        return bool(moved)


class StatusChange(models.Model):
    """One status a dead letter took: the first (``dead``) when it was synced, then every
    move. Oldest first by ``at``, then ``id``."""

    record = models.ForeignKey(DeadLetter, on_delete=models.CASCADE, related_name="history")
    status = models.CharField(max_length=16, choices=Status.choices)
    at = models.DateTimeField()
    actor = models.CharField(max_length=150, blank=True, default="")  # "" = the runtime
    request_id = models.CharField(max_length=64, blank=True, default="")
    note = models.TextField(blank=True, default="")

    class Meta:
        indexes = (models.Index(fields=("record", "at", "id"), name="dl_history_record"),)

    def __str__(self) -> str:
        return f"{self.record_id} {self.status} at {self.at:%Y-%m-%d %H:%M:%S}"


class ActionKind(models.TextChoices):
    REPLAY = "replay", "replay"
    DISCARD = "discard", "discard"


class ActionState(models.TextChoices):
    PENDING = "pending", "pending"
    RUNNING = "running", "running"
    DONE = "done", "done"
    CANCELLED = "cancelled", "cancelled"


class Outcome(models.TextChoices):
    PENDING = "pending", "pending"
    IN_PLACE = "in_place", "replayed in place"
    REPUBLISHED = "republished", "re-published"
    DISCARDED = "discarded", "discarded"
    MISSING = "missing", "no longer a dead letter"
    SKIPPED = "skipped", "skipped"  # not done: cancelled, or not in a status to act on
    FAILED = "failed", "failed"


class ActionRequest(models.Model):
    """An operator's replay or discard of one message, a selection, or a filter.
    ``request_id`` is the idempotency key: the same id submitted twice is one request."""

    request_id = models.CharField(max_length=64, unique=True)
    action = models.CharField(max_length=16, choices=ActionKind.choices)
    actor = models.CharField(max_length=150)
    group = models.CharField(max_length=GROUP_MAX_LENGTH)
    filter = models.JSONField(default=dict, blank=True)  # the list filters, as given
    selection = models.JSONField(default=list, blank=True)  # record ids, when selected
    reason = models.TextField(blank=True, default="")
    state = models.CharField(
        max_length=16, choices=ActionState.choices, default=ActionState.PENDING
    )
    total = models.IntegerField(default=0)
    done = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.action} {self.request_id} by {self.actor} ({self.state})"


class ActionItem(models.Model):
    """One message of an action request, with what happened to it."""

    request = models.ForeignKey(ActionRequest, on_delete=models.CASCADE, related_name="items")
    record = models.ForeignKey(DeadLetter, on_delete=models.CASCADE, related_name="actions")
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.PENDING)
    detail = models.TextField(blank=True, default="")
    at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=("request", "record"), name="deadletters_item_once"),
        )

    def __str__(self) -> str:
        return f"{self.request_id}/{self.record_id}: {self.outcome}"


class AuditLogIsAppendOnly(Exception):
    """An attempt to change or delete an audit entry."""


class AppendOnlyQuerySet(models.QuerySet["AuditEntry"]):
    def update(self, **kwargs: Any) -> int:
        raise AuditLogIsAppendOnly("audit entries cannot be changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly("audit entries cannot be deleted")


class AuditEntry(models.Model):
    """Who did what to which dead letters, when, and how it went: written once, never
    changed or deleted (``save`` of a stored entry, ``delete``, and the queryset's
    ``update`` / ``delete`` raise ``AuditLogIsAppendOnly``; the admin shows it
    read-only)."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.CharField(max_length=150)
    action = models.CharField(max_length=40)
    request_id = models.CharField(max_length=64, blank=True, default="", db_index=True)
    group = models.CharField(max_length=GROUP_MAX_LENGTH, blank=True, default="")
    filter = models.JSONField(default=dict, blank=True)
    selection = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True, default="")
    count = models.IntegerField(default=0)
    outcomes = models.JSONField(default=dict, blank=True)  # outcome -> how many

    objects: ClassVar[models.Manager[AuditEntry]] = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ("-at", "-id")
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.request_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditLogIsAppendOnly("audit entries cannot be changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly("audit entries cannot be deleted")


class SyncCursor(models.Model):
    """How far the sync has read one source, written in the same transaction as what it
    read from there. ``name`` is ``dlq <topic> <queue> <group>`` (names contain no spaces)
    with the last stream entry ID copied, or ``events`` with the last ``Event`` id
    examined."""

    name = models.CharField(max_length=400, unique=True)
    last_id = models.CharField(max_length=40, default="0-0")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name}@{self.last_id}"
