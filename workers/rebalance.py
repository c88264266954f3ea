"""One subscription's control loop: heartbeats, rebalance and lock renewal
(RocketMQ's ``RebalanceService`` + ``RebalanceLockManager`` client side).

Contract:
- Rebalance runs every ``rebalance_interval_s``, when the live membership changed and then
  stayed the same for one membership poll, and every membership poll while an assigned
  queue is not yet running (so a queue released by its previous owner is picked up within
  one poll, not one interval). While the membership is still changing (a rolling start,
  many consumers stopping) nobody reshuffles: under average allocation every join or leave
  moves almost every queue, so rebalancing at each of N joins would hand most queues over
  N times (docs/rebalance.md). The periodic rebalance still runs, so a membership that
  never settles cannot starve it.
- A newly assigned queue starts only after its lock is granted; the worker then reads the
  stored offset.
- A queue no longer assigned is dropped: its worker finishes the batch in progress,
  commits, and only then unlocks; its lock is renewed until then (also while stopping).
- All held locks are renewed every ``lock_renew_interval_s``; a refused renewal stops the
  worker (lock lost), a renewal that comes back as a new grant restarts it from the store.
"""

from __future__ import annotations

import logging
import threading
import time

import redis

from lockstep.workers import events as ev
from lockstep.workers.allocation import AllocationStrategy, AverageAllocation
from lockstep.workers.config import Model
from lockstep.workers.errors import UnknownTopicError
from lockstep.workers.ordering import QueueWorker, WorkerEnv, worker_for
from lockstep.workers.outage import REDIS_DOWN, redis_outage
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import get_topic, register_group

log = logging.getLogger(__name__)

# How often changed lane occupancy is reported: live enough for the pages, few events.
LANES_REPORT_S = 1.0


class SubscriptionRunner:
    def __init__(self, env: WorkerEnv, strategy: AllocationStrategy | None = None) -> None:
        self.env = env
        self.strategy = strategy or AverageAllocation()
        self.workers: dict[int, QueueWorker] = {}
        self.retiring: dict[int, QueueWorker] = {}
        self.members: list[str] = []  # the membership of the last rebalance
        self.assigned: list[int] = []
        self._polled: list[str] = []  # the membership the previous poll read
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lockstep-rebalance-{env.sub.topic}", daemon=True
        )
        self._queue_count = 0
        self._reported_missing = False
        self._last_lanes: dict[str, object] = {}

    @property
    def sub_key(self) -> str:
        return f"{self.env.sub.group}/{self.env.sub.topic}"

    def start(self) -> None:
        """Start the control loop. An unknown topic is reported once and waited for, so
        a worker may start before the topic is created."""
        if self.env.lanes is not None:
            self.env.lanes.start()
        if self.env.commits is not None:
            self.env.commits.start()
        self._thread.start()

    def _topic_ready(self) -> bool:
        if self._queue_count:
            return True
        client = self.env.broker.client
        try:
            self._queue_count = get_topic(client, self.env.sub.topic).queues
        except UnknownTopicError as exc:
            if not self._reported_missing:
                self._reported_missing = True
                log.error("lockstep: %s; subscription %s waits for it", exc, self.sub_key)
                self.env.events.emit(
                    ev.HANDLER_ERROR,
                    topic=self.env.sub.topic,
                    group=self.env.sub.group,
                    consumer=self.env.consumer_id,
                    details={"error": str(exc)},
                )
            return False
        register_group(client, self.env.sub.topic, self.env.sub.group)
        return True

    def stop(self, timeout: float = 10.0) -> None:
        """Drop every queue (each finishes its batch, commits, unlocks), then leave. Locks
        of queues still finishing a message are renewed meanwhile, as during a rebalance,
        so a stop is never a release in the middle of a message."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._thread.join(timeout)
        for q in list(self.workers):  # a queue is never in both maps (see _rebalance)
            self.retiring[q] = self.workers.pop(q)
        for worker in self.retiring.values():
            worker.drop("shutdown")
        while True:
            alive = [w for w in self.retiring.values() if w.alive]
            remaining = deadline - time.monotonic()
            if not alive or remaining <= 0:
                break
            try:
                self._renew_retiring(time.monotonic())
            except REDIS_DOWN as exc:
                redis_outage.failed(exc, f"subscription {self.sub_key} stopping")
            except redis.RedisError:
                log.warning("cannot renew the locks of %s while stopping", self.sub_key)
            alive[0].join(min(self.env.timings.lock_renew_interval_s, remaining))
        if self.env.lanes is not None:
            self.env.lanes.stop(max(0.1, deadline - time.monotonic()))
        if self.env.commits is not None:
            self.env.commits.stop(max(0.1, deadline - time.monotonic()))
        if self.env.runner is not None:
            self.env.runner.stop()
        if self.env.sub.model is Model.CLUSTERING:
            self._leave()

    def _leave(self) -> None:
        """Leave the group so the others rebalance at their next membership poll instead
        of after the heartbeat timeout. With Redis down the membership simply expires."""
        env = self.env
        try:
            env.broker.leave(env.sub.topic, env.sub.group, env.consumer_id)
        except REDIS_DOWN as exc:
            redis_outage.failed(exc, f"subscription {self.sub_key} stopping")

    # -- loop --------------------------------------------------------------------------
    def _run(self) -> None:
        t = self.env.timings
        next_heartbeat = next_renew = next_lanes_report = 0.0
        # The first rebalance too waits for a settled membership (one unchanged poll): a
        # consumer started among many others would otherwise lock its share of a group
        # that is still growing, to hand most of it over again a poll later.
        next_rebalance = time.monotonic() + t.rebalance_interval_s
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                if not self._topic_ready():
                    pass
                elif self.env.sub.model is Model.BROADCASTING:
                    self._ensure_broadcast_workers()
                else:
                    beat = now >= next_heartbeat
                    members = self._members(heartbeat=beat)
                    if beat:
                        next_heartbeat = now + t.heartbeat_interval_s
                    if now >= next_renew:
                        self._renew_all()
                        next_renew = now + t.lock_renew_interval_s
                    self._reap()
                    if self._due(members, now >= next_rebalance):
                        self._rebalance(members)
                        next_rebalance = now + t.rebalance_interval_s
                    if self.env.lanes is not None and now >= next_lanes_report:
                        self._report_lanes()
                        next_lanes_report = now + LANES_REPORT_S
            except REDIS_DOWN as exc:
                # Keep the loop alive: locks age out on their own, and workers stop
                # invoking handlers when their lock goes stale.
                redis_outage.failed(exc, f"subscription {self.sub_key}")
            except Exception:
                log.exception("rebalance loop of %s failed; retrying", self.sub_key)
            else:
                redis_outage.ok(now)
            self._stop.wait(t.membership_poll_s)

    def _members(self, *, heartbeat: bool) -> list[str]:
        env = self.env
        return env.broker.heartbeat(
            env.sub.topic,
            env.sub.group,
            env.consumer_id if heartbeat else "",
            env.timings.heartbeat_timeout_s,
        )

    def _due(self, members: list[str], periodic: bool) -> bool:
        """Whether to rebalance at this poll: periodically, or once the membership read now
        is the one the previous poll read (settled), when it differs from the last
        rebalance's or an assigned queue is not running yet."""
        settled = members == self._polled
        self._polled = members
        if periodic:
            return True
        return settled and (members != self.members or self._pending())

    def _pending(self) -> bool:
        return any(q not in self.workers for q in self.assigned)

    def _reap(self) -> None:
        """Forget workers whose loop ended (fenced, lock lost, crashed, released)."""
        for q, w in list(self.workers.items()):
            if not w.alive:
                del self.workers[q]
        for q, w in list(self.retiring.items()):
            if not w.alive:
                del self.retiring[q]

    def _rebalance(self, members: list[str]) -> None:
        env = self.env
        queues = list(range(self._queue_count))
        new = self.strategy.allocate(queues, members, env.consumer_id)
        old = self.assigned
        self.members = members
        self.assigned = new
        for q in [q for q in self.workers if q not in new]:
            worker = self.workers.pop(q)
            worker.drop("rebalance")
            self.retiring[q] = worker
        startable = [q for q in new if q not in self.workers and q not in self.retiring]
        started_at = time.monotonic()
        grants = env.broker.lock_batch(
            self._refs(startable),
            env.sub.group,
            env.consumer_id,
            env.timings.lock_ttl_s,
            node_wait_s=env.timings.lock_renew_interval_s,
        )
        for grant in grants:
            if grant.token:
                self._start_worker(grant.ref, grant.token, started_at)
        if new != old:
            env.events.emit(
                ev.REBALANCE,
                topic=env.sub.topic,
                group=env.sub.group,
                consumer=env.consumer_id,
                details={
                    "old": old,
                    "new": new,
                    "members": members,
                    "refused": [g.ref.queue for g in grants if not g.token],
                },
            )

    def _refs(self, queues: list[int]) -> list[QueueRef]:
        return [QueueRef(self.env.sub.topic, q) for q in queues]

    def _start_worker(self, ref: QueueRef, token: int, locked_at: float) -> None:
        worker = worker_for(self.env, ref, token)
        worker.renewed(locked_at)
        self.workers[ref.queue] = worker
        self.env.events.emit(
            ev.LOCK_ACQUIRED,
            topic=ref.topic,
            group=self.env.sub.group,
            queue=ref.queue,
            token=token,
            consumer=self.env.consumer_id,
        )
        worker.start()

    def _renew_all(self) -> None:
        """RocketMQ's ``lockAll``: renew every held queue in one round trip."""
        env = self.env
        held = [q for q, w in self.workers.items() if not w.dropped]
        sent_at = time.monotonic()
        for grant in env.broker.lock_batch(
            self._refs(held),
            env.sub.group,
            env.consumer_id,
            env.timings.lock_ttl_s,
            node_wait_s=env.timings.lock_renew_interval_s,
        ):
            worker = self.workers[grant.ref.queue]
            if grant.error is not None:
                # Its node did not answer: the worker's lock ages until a renewal reaches
                # it (the worker pauses once it is stale); the other nodes' queues go on.
                continue
            if grant.token and not grant.new and grant.token == worker.token:
                worker.renewed(sent_at)
                continue
            self._lost(worker, grant.token)
        self._renew_retiring(sent_at)

    def _renew_retiring(self, sent_at: float) -> None:
        """A queue handed over by a rebalance stays locked by us until its worker finished
        the message in progress and unlocked it: left unrenewed, the lock would expire in
        the middle of a long message and the successor would consume the queue alongside
        it (RocketMQ keeps renewing a queue until its consume lock is free). Renew-only, so
        a lock the worker released meanwhile is not taken again; a refusal needs no action,
        because the worker's next commit is fenced."""
        env = self.env
        finishing = [q for q, w in self.retiring.items() if w.releasing]
        for grant in env.broker.lock_batch(
            self._refs(finishing),
            env.sub.group,
            env.consumer_id,
            env.timings.lock_ttl_s,
            renew_only=True,
            node_wait_s=env.timings.lock_renew_interval_s,
        ):
            worker = self.retiring[grant.ref.queue]
            if grant.token and grant.token == worker.token:
                worker.renewed(sent_at)

    def _lost(self, worker: QueueWorker, new_token: int) -> None:
        """The broker no longer has our grant. Stop the worker without unlocking (the lock
        is not ours, or was re-granted with a new token that we must start over with)."""
        env = self.env
        env.events.emit(
            ev.LOCK_LOST if not new_token else ev.LOCK_RENEW_FAILED,
            topic=env.sub.topic,
            group=env.sub.group,
            queue=worker.ref.queue,
            token=worker.token,
            consumer=env.consumer_id,
            details={"new_token": new_token},
        )
        worker.drop("lock lost", release_lock=False)
        # A re-grant to us carries a new token the old worker must not use: release it
        # and let the next rebalance lock afresh once the old worker has finished.
        if new_token:
            env.broker.unlock(worker.ref, env.sub.group, env.consumer_id, new_token)
        self.retiring[worker.ref.queue] = self.workers.pop(worker.ref.queue)

    def _report_lanes(self) -> None:
        """Lane occupancy, for the dashboard (key ordering only)."""
        assert self.env.lanes is not None
        stats = self.env.lanes.stats()
        summary = {
            "lanes": len(stats),
            "busy": sum(1 for s in stats if s.busy),
            "waiting": sum(s.waiting for s in stats),
            "retrying_keys": sum(s.retrying for s in stats),
            "per_lane": [[s.busy, s.waiting] for s in stats],
        }
        if summary != self._last_lanes:
            self._last_lanes = summary
            self.env.events.emit(
                ev.LANES,
                topic=self.env.sub.topic,
                group=self.env.sub.group,
                consumer=self.env.consumer_id,
                details=summary,
            )

    # -- broadcasting ------------------------------------------------------------------
    def _ensure_broadcast_workers(self) -> None:
        for q in range(self._queue_count):
            if q not in self.workers or not self.workers[q].alive:
                worker = worker_for(self.env, QueueRef(self.env.sub.topic, q), None)
                self.workers[q] = worker
                worker.start()
        self.assigned = list(range(self._queue_count))
