"""Rules over one queue of one group: ``queue_stuck`` (the one definition of a stuck
queue, docs/stuck.md), and the alerts that may fire sooner than it and never say
"stuck": ``queue_unowned``, ``message_blocked`` and ``key_held``."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from django.template.defaultfilters import pluralize

from lockstep.dashboard.alerts.rules.base import (
    CRITICAL,
    WARNING,
    Finding,
    Param,
    ParamsFor,
    Resolution,
    Rule,
)
from lockstep.dashboard.alerts.text import duration, queue_subject, shorten, subject
from lockstep.dashboard.web.store.models import Event
from lockstep.workers import events as ev
from lockstep.workers.refs import GroupQueue, QueueRef

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.live import LiveState
    from lockstep.dashboard.alerts.models import Alert
    from lockstep.workers.inspect import BlockedKey, GroupState

UNOWNED_STATES = ("unowned", "no_live_consumer")


class QueueStuck(Rule):
    """A queue that is stuck (docs/stuck.md): exactly the queues of the overview's Stuck
    list (``LiveState.stuck``, ``web.store.stuck``), one alert per (topic, group, queue)
    whatever its reasons, since the oldest of them. The threshold is the definition's T
    (``LOCKSTEP_STUCK_AFTER_SECONDS``): no per-rule parameter may make the alert say
    "stuck" where the pages do not."""

    name = "queue_stuck"
    description = (
        "A queue has had work waiting and no progress for LOCKSTEP_STUCK_AFTER_SECONDS "
        "(no live consumer, unowned, no progress, a blocked or a held key)."
    )

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        entries: dict[GroupQueue, list[dict[str, Any]]] = defaultdict(list)
        for e in live.stuck:
            entries[GroupQueue(QueueRef(e["topic"], int(e["queue"])), e["group"])].append(e)
        states = dict(live.queue_groups())
        out = []
        for at, found in sorted(entries.items()):
            if params_for(self.name, at.topic, at.group) is None or at not in states:
                continue
            out.append(_stuck_finding(self.name, at, states[at], found, live.now_ms))
        return out


def _stuck_finding(
    rule: str, at: GroupQueue, g: GroupState, entries: list[dict[str, Any]], now_ms: int
) -> Finding:
    """One alert for a stuck queue: its oldest entry leads (``entries`` are oldest first)."""
    first = entries[0]
    waited_s = (now_ms - int(first["since_ms"])) / 1000
    reasons = sorted({e["reason"] for e in entries})
    error = g["last_error"]
    return Finding(
        rule=rule,
        severity=CRITICAL,
        topic=at.topic,
        group=at.group,
        queue=at.queue,
        offset=g["committed_offset"],
        since_ms=int(first["since_ms"]),
        summary=f"{queue_subject(at)} is stuck ({', '.join(r.replace('_', ' ') for r in reasons)}) "
        f"for {duration(waited_s)}: {first['why']}"
        + (f"; last error: {shorten(error)}" if error and "error" not in first else ""),
        details={
            "reason": first["reason"],
            "reasons": reasons,
            "lag": g["lag"],
            "time_lag_s": g["time_lag_s"],
            "committed_offset": g["committed_offset"],
            "owner": g["owner"],
            "state": g["state"],
            "retries": g["retries"],
            "last_error": shorten(error, 500),
            "for_s": round(waited_s, 1),
            **_held(entries),
        },
    )


def _held(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The held keys a ``held_key`` entry names (``keys``, at most 5), how many there
    are (``held_keys``) and the messages parked behind those keys (``parked``), for the
    inhibition by ``key_held`` alerts (``inhibit``) and so that a change of what the
    entry says rewrites the alert at once; {} when the queue has no such entry."""
    for e in entries:
        if e["reason"] == "held_key":
            return {
                "keys": list(e.get("keys") or [e["key"]]),
                "held_keys": e.get("held_keys", 1),
                "parked": e.get("parked", 0),
            }
    return {}


class QueueUnowned(Rule):
    """Backlog and no live lock holder (nobody holds the lock, or its holder stopped
    heartbeating) for ``after_s``."""

    name = "queue_unowned"
    description = "A queue with a backlog has had no live consumer holding it."
    params = (
        Param("after_s", "Without a live owner for (s)", "LOCKSTEP_ALERT_UNOWNED_AFTER_SECONDS"),
    )

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        out = []
        for at, g in live.queue_groups():
            p = params_for(self.name, at.topic, at.group)
            if p is None or g["lag"] <= 0 or g["state"] not in UNOWNED_STATES:
                continue
            owner = g["owner"]

            def seed(owner: str | None = owner) -> int | None:
                return live.heartbeat_of(owner)

            since = live.tracker.since(f"{self.name}|{at}", True, live.now_ms, seed)
            waited_s = (live.now_ms - since) / 1000
            if waited_s < p["after_s"]:
                continue
            why = (
                f"its lock still names {owner}, which is no longer live"
                if g["state"] == "no_live_consumer"
                else "no consumer holds its lock"
            )
            out.append(
                Finding(
                    rule=self.name,
                    severity=CRITICAL,
                    topic=at.topic,
                    group=at.group,
                    queue=at.queue,
                    offset=g["committed_offset"],
                    since_ms=since,
                    summary=f"{queue_subject(at)} has no live consumer for {duration(waited_s)}: "
                    f"{why}; {g['lag']} messages wait",
                    details={
                        "lag": g["lag"],
                        "time_lag_s": g["time_lag_s"],
                        "state": g["state"],
                        "owner": owner,
                        "for_s": round(waited_s, 1),
                    },
                )
            )
        return out


class MessageBlocked(Rule):
    """A message retried at least ``retries`` times and still not done: under key
    ordering per blocked key (the messages of that key wait), under queue ordering the
    queue's head (the whole queue waits)."""

    name = "message_blocked"
    description = "A message has been retried many times and blocks what follows it."
    params = (Param("retries", "Retries", "LOCKSTEP_ALERT_BLOCKED_RETRIES", 1.0, integer=True),)

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        out: list[Finding] = []
        for at, g in live.queue_groups():
            p = params_for(self.name, at.topic, at.group)
            if p is None or g["state"] in UNOWNED_STATES:
                continue
            if "blocked_keys" in g:
                out += self._keys(live, at, g.get("blocked_keys", []), p["retries"])
            elif g["retries"] >= p["retries"] and g["lag"] > 0:
                out.append(self._queue(live, at, g))
        return out

    def _keys(
        self, live: LiveState, at: GroupQueue, blocked: list[BlockedKey], limit: float
    ) -> list[Finding]:
        out = []
        for b in blocked:
            if b["retries"] < limit:
                continue
            since = int(b.get("since_ms") or live.now_ms)
            out.append(
                Finding(
                    rule=self.name,
                    severity=CRITICAL,
                    topic=at.topic,
                    group=at.group,
                    queue=at.queue,
                    key=b["key"],
                    offset=b["offset"],
                    since_ms=since,
                    summary=f"{queue_subject(at)}: key {b['key']} is blocked at offset "
                    f"{b['offset']} after {b['retries']} retries; {b['waiting']} messages "
                    f"of the key wait behind it. Last error: {shorten(b['error']) or '(none)'}",
                    details={
                        "ordering": "key",
                        "retries": b["retries"],
                        "waiting": b["waiting"],
                        "error": shorten(b["error"], 500),
                    },
                )
            )
        return out

    def _queue(self, live: LiveState, at: GroupQueue, g: GroupState) -> Finding:
        offset = int(g.get("head_offset", g["committed_offset"]))
        since = live.tracker.since(f"{self.name}|{at}", offset, live.now_ms)
        waiting = max(0, g["lag"] - 1)
        return Finding(
            rule=self.name,
            severity=CRITICAL,
            topic=at.topic,
            group=at.group,
            queue=at.queue,
            offset=offset,
            since_ms=since,
            summary=f"{queue_subject(at)}: the message at offset {offset} has been retried "
            f"{g['retries']} times; the queue waits behind it ({waiting} messages). "
            f"Last error: {shorten(g['last_error']) or '(none)'}",
            details={
                "ordering": "queue",
                "retries": g["retries"],
                "waiting": waiting,
                "error": shorten(g["last_error"], 500),
            },
        )


class KeyHeld(Rule):
    """Under ``after_dlq = hold``: a key parked behind its dead letter for ``after_s``
    (its later messages wait until the dead letter is replayed or discarded)."""

    name = "key_held"
    description = "A key is held behind its dead letter; its later messages are parked."
    params = (Param("after_s", "Held for (s)", "LOCKSTEP_ALERT_HELD_AFTER_SECONDS"),)

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        out = []
        groups = {(t["name"], g) for t in live.topics for g in t["groups"]}
        held_somewhere = {
            (at.topic, at.group) for at, g in live.queue_groups() if g["parked_keys"] > 0
        }
        for topic, group in sorted(groups & held_somewhere):
            p = params_for(self.name, topic, group)
            if p is None:
                continue
            for h in live.held(topic, group):
                since = int(h["since_ms"] or live.now_ms)
                waited_s = (live.now_ms - since) / 1000
                if waited_s < p["after_s"]:
                    continue
                where = subject(topic, group, h["queue"])
                out.append(
                    Finding(
                        rule=self.name,
                        severity=WARNING,
                        topic=topic,
                        group=group,
                        queue=h["queue"],
                        key=h["key"],
                        offset=h["offset"],
                        since_ms=since,
                        summary=f"{where}: key {h['key']} is held behind its dead "
                        f"letter (offset {h['offset']}) for {duration(waited_s)}; "
                        f"{h['messages']} message{pluralize(h['messages'])} parked. Replay or "
                        "discard the dead letter to release it.",
                        details={
                            "parked": h["messages"],
                            "dlq_id": h["dlq_id"],
                            "hold_state": h["state"],
                        },
                    )
                )
        return out

    def resolution(self, alert: Alert, live: LiveState) -> Resolution:
        """The key's state now: still listed but releasing, or released, and how (the
        stored replay or discard of its dead letter, when the ingester has it)."""
        for h in live.held(alert.topic, alert.group):
            if h["key"] == alert.key and h["queue"] == alert.queue:
                return Resolution(f"the key is {h['state']}", {"hold_state": h["state"]})
        how = _release(alert)
        return Resolution(
            "the key is released" + (f": its dead letter was {how}" if how else ""),
            {"hold_state": "released"},
        )


def _release(alert: Alert) -> str:
    """``replayed by alice`` / ``discarded by bob``: the newest replay or discard of the
    alert's dead letter; "" when none is stored."""
    dlq_id = alert.details.get("dlq_id") if isinstance(alert.details, dict) else None
    if not dlq_id:
        return ""
    event = (
        Event.objects.filter(
            type__in=(ev.DEAD_LETTER_REPLAYED, ev.DEAD_LETTER_DISCARDED),
            topic=alert.topic,
            group=alert.group,
            details__dlq_id=dlq_id,
        )
        .order_by("-ts", "-id")
        .first()
    )
    if event is None:
        return ""
    verb = "replayed" if event.type == ev.DEAD_LETTER_REPLAYED else "discarded"
    actor = event.details.get("actor") if isinstance(event.details, dict) else None
    return verb + (f" by {actor}" if actor else "")
