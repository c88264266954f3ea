"""Rules over one queue of one group: ``queue_stuck``, ``queue_unowned``,
``message_blocked`` and ``key_held``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.dashboard.alerts.rules.base import CRITICAL, WARNING, Finding, Param, ParamsFor, Rule
from lockstep.dashboard.alerts.text import duration, shorten

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.live import LiveState, QueueAt
    from lockstep.workers.inspect import BlockedKey, GroupState

UNOWNED_STATES = ("unowned", "no_live_consumer")


def _where(at: QueueAt) -> str:
    return f"{at[0]}/{at[1]} queue {at[2]}"


class QueueStuck(Rule):
    """Backlog, a live owner, and no commit progress (neither the committed offset nor,
    under key ordering, the offsets completed above it moved) for ``after_s``."""

    name = "queue_stuck"
    description = "A queue with a backlog and a live owner has made no commit progress."
    params = (Param("after_s", "No progress for (s)", "LOCKSTEP_STUCK_AFTER_SECONDS", 1.0),)

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        out = []
        for at, g in live.queue_groups():
            p = params_for(self.name, at[0], at[1])
            if p is None or g["lag"] <= 0 or g["state"] in UNOWNED_STATES:
                continue
            progress = (g["committed_offset"], g["completed_above"])

            def seed(at: QueueAt = at, committed: int = g["committed_offset"]) -> int | None:
                return live.not_moving_since(at, committed)

            since = live.tracker.since(
                f"{self.name}|{at}",
                progress,
                live.now_ms,
                seed if g["completed_above"] == 0 else None,
            )
            waited_s = (live.now_ms - since) / 1000
            if waited_s < p["after_s"]:
                continue
            error = g["last_error"]
            out.append(
                Finding(
                    rule=self.name,
                    severity=CRITICAL,
                    topic=at[0],
                    group=at[1],
                    queue=at[2],
                    offset=g["committed_offset"],
                    since_ms=since,
                    summary=f"{_where(at)} is stuck: {g['lag']} messages behind, committed "
                    f"offset {g['committed_offset']} has not moved for {duration(waited_s)} "
                    f"(owner {g['owner']}, {g['state']})"
                    + (f"; last error: {shorten(error)}" if error else ""),
                    details={
                        "lag": g["lag"],
                        "time_lag_s": g["time_lag_s"],
                        "committed_offset": g["committed_offset"],
                        "owner": g["owner"],
                        "state": g["state"],
                        "retries": g["retries"],
                        "last_error": shorten(error, 500),
                        "for_s": round(waited_s, 1),
                    },
                )
            )
        return out


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
            p = params_for(self.name, at[0], at[1])
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
                    topic=at[0],
                    group=at[1],
                    queue=at[2],
                    offset=g["committed_offset"],
                    since_ms=since,
                    summary=f"{_where(at)} has no live consumer for {duration(waited_s)}: "
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
            p = params_for(self.name, at[0], at[1])
            if p is None or g["state"] in UNOWNED_STATES:
                continue
            if "blocked_keys" in g:
                out += self._keys(live, at, g.get("blocked_keys", []), p["retries"])
            elif g["retries"] >= p["retries"] and g["lag"] > 0:
                out.append(self._queue(live, at, g))
        return out

    def _keys(
        self, live: LiveState, at: QueueAt, blocked: list[BlockedKey], limit: float
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
                    topic=at[0],
                    group=at[1],
                    queue=at[2],
                    key=b["key"],
                    offset=b["offset"],
                    since_ms=since,
                    summary=f"{_where(at)}: key {b['key']!r} is blocked at offset "
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

    def _queue(self, live: LiveState, at: QueueAt, g: GroupState) -> Finding:
        offset = int(g.get("head_offset", g["committed_offset"]))
        since = live.tracker.since(f"{self.name}|{at}", offset, live.now_ms)
        waiting = max(0, g["lag"] - 1)
        return Finding(
            rule=self.name,
            severity=CRITICAL,
            topic=at[0],
            group=at[1],
            queue=at[2],
            offset=offset,
            since_ms=since,
            summary=f"{_where(at)}: the message at offset {offset} has been retried "
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
        held_somewhere = {(at[0], at[1]) for at, g in live.queue_groups() if g["parked_keys"] > 0}
        for topic, group in sorted(groups & held_somewhere):
            p = params_for(self.name, topic, group)
            if p is None:
                continue
            for h in live.held(topic, group):
                since = int(h["since_ms"] or live.now_ms)
                waited_s = (live.now_ms - since) / 1000
                if waited_s < p["after_s"]:
                    continue
                at = (topic, group, h["queue"])
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
                        summary=f"{_where(at)}: key {h['key']!r} is held behind its dead "
                        f"letter (offset {h['offset']}) for {duration(waited_s)}; "
                        f"{h['messages']} messages parked. Replay or discard the dead letter "
                        "to release it.",
                        details={
                            "parked": h["messages"],
                            "dlq_id": h["dlq_id"],
                            "hold_state": h["state"],
                        },
                    )
                )
        return out
