"""Rules over consumers and locks: ``consumer_lost`` and ``lock_flapping``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.dashboard.alerts.rules.base import WARNING, Finding, Param, ParamsFor, Rule
from lockstep.dashboard.alerts.text import duration, queue_subject, subject
from lockstep.workers.refs import GroupQueue

if TYPE_CHECKING:
    from lockstep.dashboard.alerts.live import LiveState


class ConsumerLost(Rule):
    """A registered consumer whose heartbeat has been missing for ``after_s``: killed,
    frozen or cut off from Redis without leaving its group. It fires while the consumer
    still has a card (cards expire two heartbeat timeouts after the last beat) or a queue
    lock names it; a consumer that left cleanly removes its card and never fires."""

    name = "consumer_lost"
    description = "A consumer stopped heartbeating without leaving its group."
    params = (
        Param("after_s", "Heartbeat missing for (s)", "LOCKSTEP_ALERT_CONSUMER_LOST_SECONDS"),
    )

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        holding: dict[str, list[GroupQueue]] = {}
        for at, g in live.queue_groups():
            if g["owner"]:
                holding.setdefault(g["owner"], []).append(at)
        out = []
        for c in live.consumers:
            age_s = c["heartbeat_age_s"]
            for topic, group in sorted({(s["topic"], s["group"]) for s in c["subscriptions"]}):
                p = params_for(self.name, topic, group)
                threshold = p["after_s"] if p is not None else None
                if threshold is None or age_s < max(threshold, live.heartbeat_timeout_s):
                    continue
                queues = sorted(
                    at.queue
                    for at in holding.get(c["id"], [])
                    if (at.topic, at.group) == (topic, group)
                )
                out.append(
                    Finding(
                        rule=self.name,
                        severity=WARNING,
                        topic=topic,
                        group=group,
                        consumer=c["id"],
                        since_ms=c["heartbeat_at_ms"] or live.now_ms,
                        summary=f"consumer {c['id']} ({c['host']}, pid {c['pid']}) of "
                        f"{subject(topic, group)} has sent no heartbeat for {duration(age_s)}; "
                        + (
                            f"queues {', '.join(map(str, queues))} say no live consumer "
                            "until their locks expire"
                            if queues
                            else "it holds no queue lock any more"
                        ),
                        details={
                            "host": c["host"],
                            "pid": c["pid"],
                            "heartbeat_age_s": age_s,
                            "queues": queues,
                        },
                    )
                )
        return out


class LockFlapping(Rule):
    """A queue's lock granted at least ``changes`` times within ``window_s``: consumers
    keep taking it from each other (lock expiry shorter than a handler's pauses, a
    crash loop, a rebalance that does not settle)."""

    name = "lock_flapping"
    description = "A queue's lock keeps changing owner."
    params = (
        Param("changes", "Owner changes", "LOCKSTEP_ALERT_FLAPPING_CHANGES", 2.0, integer=True),
        Param("window_s", "Within (s)", "LOCKSTEP_ALERT_FLAPPING_WINDOW_SECONDS", 10.0),
    )

    def evaluate(self, live: LiveState, params_for: ParamsFor) -> list[Finding]:
        out = []
        windows = sorted(
            {
                p["window_s"]
                for t in live.topics
                for g in t["groups"]
                if (p := params_for(self.name, t["name"], g)) is not None
            }
        )
        counts = {w: live.lock_grants(w) for w in windows}
        for at, g in live.queue_groups():
            p = params_for(self.name, at.topic, at.group)
            if p is None:
                continue
            grants = counts[p["window_s"]].get(at, 0)
            if grants < p["changes"]:
                continue
            out.append(
                Finding(
                    rule=self.name,
                    severity=WARNING,
                    topic=at.topic,
                    group=at.group,
                    queue=at.queue,
                    since_ms=int(live.now_ms - p["window_s"] * 1000),
                    summary=f"{queue_subject(at)}: its lock changed owner {grants} "
                    f"times in the last {duration(p['window_s'])} (now {g['owner'] or 'nobody'})",
                    details={"grants": grants, "window_s": p["window_s"], "owner": g["owner"]},
                )
            )
        return out
