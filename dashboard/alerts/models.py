"""Alerts and what surrounds them (docs/alerts.md).

- ``Alert``: one per rule and subject while it is not resolved (a partial unique index
  on ``fingerprint`` says so to the database); resolved ones are the history.
- ``AlertEvent``: an alert's timeline (opened, notified, acknowledged, snoozed, woke,
  resolved, silenced), append-only.
- ``Channel``: where notifications go (email, webhook, apprise); ``from_env`` rows mirror
  ``LOCKSTEP_ALERT_WEBHOOKS`` and are not edited in the UI.
- ``Delivery``: one notification to one channel, with its attempts; failed ones stay
  visible on the alert. A notification tells a group of alerts (``alerts``, all of one
  rule, topic and group), led by ``alert``; a test tells none.
- ``NotificationGroup``: when the alerts of one (rule, topic, group) may be told next
  (group wait, group interval: docs/alerts-delivery.md, "Grouping").
- ``Silence``: mutes delivery for a topic, group and/or rule for a time window.
- ``RuleSetting``: a rule's thresholds (and on/off) for a topic and/or group, over the
  defaults from the settings.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone

from lockstep.dashboard.alerts.text import subject

OPEN, ACKNOWLEDGED, RESOLVED = "open", "acknowledged", "resolved"
STATES = (OPEN, ACKNOWLEDGED, RESOLVED)
WARNING, CRITICAL = "warning", "critical"


class Alert(models.Model):
    rule = models.CharField(max_length=32, db_index=True)
    # rule|topic|group|queue|key|consumer: the subject, unique among unresolved alerts.
    fingerprint = models.CharField(max_length=512)
    severity = models.CharField(
        max_length=16, choices=[(WARNING, WARNING), (CRITICAL, CRITICAL)], default=WARNING
    )
    state = models.CharField(max_length=16, choices=[(s, s) for s in STATES], default=OPEN)
    topic = models.CharField(max_length=255, blank=True, default="")
    group = models.CharField(max_length=255, blank=True, default="")
    queue = models.IntegerField(null=True, blank=True)
    key = models.CharField(max_length=512, blank=True, default="")
    consumer = models.CharField(max_length=255, blank=True, default="")
    offset = models.BigIntegerField(null=True, blank=True)
    summary = models.TextField()
    details = models.JSONField(default=dict, blank=True)
    # When the condition began (by the rule's reading of the live state), when the alert
    # was raised (the condition had held for the rule's threshold), last seen firing.
    since = models.DateTimeField()
    opened_at = models.DateTimeField(default=timezone.now, db_index=True)
    last_seen_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.CharField(max_length=150, blank=True, default="")
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    ack_note = models.TextField(blank=True, default="")
    snoozed_until = models.DateTimeField(null=True, blank=True)
    last_notified_at = models.DateTimeField(null=True, blank=True)
    notifications = models.PositiveIntegerField(default=0)
    # Resolved while channels had been told of it: its resolution waits for its group's
    # next notification (``grouping.flush``), then this is cleared.
    resolution_pending = models.BooleanField(default=False, db_index=True)

    class Meta:
        ordering = ("-opened_at", "-id")
        constraints = (
            models.UniqueConstraint(
                fields=("fingerprint",),
                condition=~Q(state=RESOLVED),
                name="alerts_one_unresolved_per_subject",
            ),
        )
        indexes = (models.Index(fields=("state", "rule"), name="alerts_state_rule"),)
        permissions = (("acknowledge_alert", "Can acknowledge and snooze alerts"),)

    def __str__(self) -> str:
        return f"#{self.pk} {self.rule} {self.state}: {self.summary[:80]}"

    @property
    def duration_s(self) -> float:
        """Seconds from opening to resolution (or to now while unresolved)."""
        end = self.resolved_at or timezone.now()
        return max(0.0, (end - self.opened_at).total_seconds())

    @property
    def group_key(self) -> tuple[str, str, str]:
        """What notifications group by: (rule, topic, group)."""
        return (self.rule, self.topic, self.group)

    @property
    def subject_text(self) -> str:
        """``orders / billing / queue 5 / key order-100``: the subject as every page and
        notification writes it ("" for none)."""
        return subject(self.topic, self.group, self.queue, self.key, self.consumer)

    def subject(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "group": self.group,
            "queue": self.queue,
            "key": self.key,
            "consumer": self.consumer,
            "offset": self.offset,
        }


class AlertEvent(models.Model):
    OPENED, NOTIFIED, ACKNOWLEDGED, SNOOZED, WOKE, UNACKNOWLEDGED = (
        "opened",
        "notified",
        "acknowledged",
        "snoozed",
        "woke",
        "unacknowledged",
    )
    RESOLVED, SILENCED, UPDATED = "resolved", "silenced", "updated"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="timeline")
    at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=32)
    actor = models.CharField(max_length=150, blank=True, default="")
    note = models.TextField(blank=True, default="")
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ("at", "id")

    def __str__(self) -> str:
        return f"{self.kind} at {self.at:%Y-%m-%d %H:%M:%S}"


class Channel(models.Model):
    """A notification channel. ``kind`` names a class in ``dashboard.alerts.channels``;
    ``target`` is what that class sends to (email addresses separated by commas, a
    webhook URL, apprise URLs separated by spaces or commas)."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=32)
    target = models.TextField()
    secret = models.CharField(max_length=255, blank=True, default="")
    format = models.CharField(max_length=32, blank=True, default="")
    enabled = models.BooleanField(default=True)
    send_resolved = models.BooleanField(default=True)
    # Only alerts of this topic / group (blank: all).
    topic = models.CharField(max_length=255, blank=True, default="")
    group = models.CharField(max_length=255, blank=True, default="")
    from_env = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    def wants(self, alert: Alert) -> bool:
        return (not self.topic or self.topic == alert.topic) and (
            not self.group or self.group == alert.group
        )


class Delivery(models.Model):
    PENDING, SENT, FAILED = "pending", "sent", "failed"
    # What is told: an alert opened, its re-notification, its resolution, a test.
    OPENED, RENOTIFY, RESOLVED, TEST = "opened", "renotify", "resolved", "test"

    # The alert the notification leads with (the first of ``alerts``); None for a test.
    alert = models.ForeignKey(
        Alert, on_delete=models.CASCADE, null=True, blank=True, related_name="deliveries"
    )
    # Every alert the notification tells of (firing and resolved), lead included.
    alerts = models.ManyToManyField(Alert, blank=True, related_name="group_deliveries")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=16)
    status = models.CharField(max_length=16, default=PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now, db_index=True)
    last_error = models.TextField(blank=True, default="")
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("created_at", "id")

    def __str__(self) -> str:
        return f"{self.event} to channel {self.channel_id}: {self.status}"


class NotificationGroup(models.Model):
    """The notification timer of one (rule, topic, group), Alertmanager's aggregation
    group. Made when the group first has something to tell, with ``flush_at`` a group
    wait ahead; each notification moves ``flush_at`` a group interval ahead of it. It is
    deleted once the group has nothing left to tell (every alert resolved, resolutions
    told), so the next storm waits the group wait again. ``flushed_at``: the last time
    the group was due and had something to tell (told, or held back by a silence)."""

    rule = models.CharField(max_length=32)
    topic = models.CharField(max_length=255, blank=True, default="")
    group = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    flush_at = models.DateTimeField()
    flushed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("rule", "topic", "group")
        constraints = (
            models.UniqueConstraint(
                fields=("rule", "topic", "group"), name="alerts_one_notification_group"
            ),
        )

    def __str__(self) -> str:
        return f"{self.rule} for {self.topic}/{self.group}: next at {self.flush_at:%H:%M:%S}"


class Silence(models.Model):
    """Mutes notifications of alerts matching every non-blank field, from ``starts_at``
    until ``ends_at``. Matching alerts still open and show on the pages."""

    topic = models.CharField(max_length=255, blank=True, default="")
    group = models.CharField(max_length=255, blank=True, default="")
    rule = models.CharField(max_length=32, blank=True, default="")
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField()
    reason = models.TextField(blank=True, default="")
    created_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-ends_at", "-id")
        permissions = (("manage_silence", "Can create and end silences"),)

    def __str__(self) -> str:
        what = ", ".join(
            f"{n}={v}"
            for n, v in (("topic", self.topic), ("group", self.group), ("rule", self.rule))
            if v
        )
        return f"silence {what or 'everything'} until {self.ends_at:%Y-%m-%d %H:%M} UTC"

    def matches(self, alert: Alert) -> bool:
        return (
            (not self.topic or self.topic == alert.topic)
            and (not self.group or self.group == alert.group)
            and (not self.rule or self.rule == alert.rule)
        )

    def active_at(self, now: Any) -> bool:
        return bool(self.starts_at <= now < self.ends_at)


class RuleSetting(models.Model):
    """Overrides of one rule's parameters for a topic and/or group (blank: any). The most
    specific row wins (topic and group, then group, then topic, then neither); parameters
    it does not name come from the next one, then from the settings."""

    rule = models.CharField(max_length=32)
    topic = models.CharField(max_length=255, blank=True, default="")
    group = models.CharField(max_length=255, blank=True, default="")
    enabled = models.BooleanField(default=True)
    params = models.JSONField(default=dict, blank=True)
    updated_by = models.CharField(max_length=150, blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("rule", "topic", "group")
        constraints = (
            models.UniqueConstraint(fields=("rule", "topic", "group"), name="alerts_one_setting"),
        )

    def __str__(self) -> str:
        return f"{self.rule} for {self.topic or '*'}/{self.group or '*'}"
