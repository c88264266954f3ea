"""Leases that split the event streams among several ingesters (docs/events.md §4).

Contract:

- **Members.** Each ingester has an id (``host:pid:random``) and keeps a membership in
  the sorted set ``lockstep-web:ingest:members`` (score: when it expires, Redis's clock)
  alive with a heartbeat. A membership not renewed for ``ttl_s`` is gone.
- **Who reads which stream.** The live members sorted by id and the event streams in
  their stable order (``workers.events.event_streams``) give each member every n-th
  stream: stream ``i`` goes to member ``i mod n``. Every member computes the same split
  from the same membership, and the busy shards are spread evenly (``ls:events``, idle
  once the log is sharded, is stream 0). A member that is not assigned a stream it holds
  releases it; one that is assigned a stream takes it as soon as its lease is free.
- **Leases.** A stream is read only under its lease, ``lockstep-web:ingest:lease:<stream>``
  (a string naming its holder, with an expiry of ``ttl_s``, renewed every third of it).
  An ingester that dies keeps its streams until its lease and its membership expire:
  the others then take them over within ``ttl_s`` plus one refresh, and resume from the
  cursor stored in the database. Leases split the work; they are no guard of
  correctness: a holder paused past its lease may still commit a batch, and then the
  cursor's compare-and-set in the batch's transaction (``ingest.store_batch``) refuses
  the one of the two that is late, so nothing is stored or counted twice.
- **The publisher.** One more lease, ``lockstep-web:ingest:publisher``, names the one
  ingester that pushes live updates; any member takes it when it is free.
- **Redis's clock, local deadlines.** Expiries are Redis's (``PX``); a holder trusts its
  lease until ``ttl_s`` minus a margin after it *sent* the renewal, by its own monotonic
  clock, so it stops reading before Redis can hand the stream to another.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

import redis
from redis.commands.core import Script

from lockstep.dashboard.env import env_float
from lockstep.workers.scripts import run_batch

log = logging.getLogger(__name__)

MEMBERS = "lockstep-web:ingest:members"
LEASE_PREFIX = "lockstep-web:ingest:lease:"
PUBLISHER = "lockstep-web:ingest:publisher"
# A lease is renewed every third of its life: two renewals may fail (a slow Redis, a
# long batch) before it lapses.
RENEW_FRACTION = 1 / 3
# While a stream assigned to this ingester is held by another (which releases it at its
# next refresh, or lets it expire when it died), look again this often: a new member
# gets its share within a fraction of a second instead of a third of the lease.
CLAIM_RETRY_S = 0.25
# A lease is trusted locally until this share of its life has passed since the renewal
# was sent: the rest covers the round trip and clock drift between Redis and us.
SAFE_FRACTION = 0.8

# A lease's life when LOCKSTEP_INGEST_LEASE_SECONDS is unset: a killed ingester's streams
# wait this long (plus a refresh) for another; renewals every third of it cost a round
# trip per ~1.7 s, and a batch's transaction (a fraction of a second) never outlives it.
DEFAULT_LEASE_SECONDS = 5.0
# Below this a renewal every third of the life would compete with the work itself.
MIN_LEASE_SECONDS = 0.5

_LUA_DIR = Path(__file__).resolve().parent


def lease_seconds_from_env() -> float:
    """``LOCKSTEP_INGEST_LEASE_SECONDS``: the life of an ingester's leases and membership
    (``ImproperlyConfigured`` below ``MIN_LEASE_SECONDS``)."""
    return env_float("LOCKSTEP_INGEST_LEASE_SECONDS", DEFAULT_LEASE_SECONDS, MIN_LEASE_SECONDS)


@cache
def _source(name: str) -> str:
    return (_LUA_DIR / f"{name}.lua").read_text(encoding="utf-8")


def lease_key(stream: str) -> str:
    """The lease of ``stream``. A shard's key keeps the shard's hash tag (``{s<i>}``), so on
    Redis Cluster the lease is served by the node that serves the stream."""
    return LEASE_PREFIX + stream


def new_member_id() -> str:
    """An id unique to this process and start: host and pid for the logs, then a random
    part (a pid is reused; a restarted ingester must not inherit its predecessor's leases)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def assign(streams: Sequence[str], members: Sequence[str], me: str) -> list[str]:
    """The streams ``me`` should read: stream ``i`` goes to member ``i mod n`` of the
    members sorted by id. ``me`` missing from ``members`` (its heartbeat lapsed) gets
    nothing until it is a member again."""
    ordered = sorted(members)
    if me not in ordered:
        return []
    mine = ordered.index(me)
    return [s for i, s in enumerate(streams) if i % len(ordered) == mine]


class StreamLeases:
    """One ingester's memberships and leases. Not thread-safe: the ingester's loop owns it.

    ``refresh(streams)`` is the one call that talks to Redis (a heartbeat, then one batch
    of lease scripts); ``due()`` says when it should be called again; ``holds(stream)`` and
    ``publishing()`` answer from the local deadlines alone."""

    def __init__(self, client: redis.Redis, ttl_s: float, member_id: str | None = None) -> None:
        if ttl_s <= 0:
            raise ValueError("a lease's time to live must be positive")
        self.client = client
        self.ttl_s = ttl_s
        self.me = member_id or new_member_id()
        self.members: list[str] = []
        self.assigned: list[str] = []
        self._deadlines: dict[str, float] = {}  # lease key -> trusted until (monotonic)
        self._next_refresh = 0.0
        self._lease: Script = client.register_script(_source("ingest_lease"))
        self._release: Script = client.register_script(_source("ingest_release"))
        self._heartbeat: Script = client.register_script(_source("ingest_members"))

    @property
    def ttl_ms(self) -> int:
        return max(1, round(self.ttl_s * 1000))

    def due(self) -> bool:
        return time.monotonic() >= self._next_refresh

    def holds(self, stream: str) -> bool:
        """Whether this ingester may read ``stream`` now (its lease is still trusted)."""
        return self._trusted(lease_key(stream))

    def publishing(self) -> bool:
        """Whether this ingester is the one that pushes live updates now."""
        return self._trusted(PUBLISHER)

    def held_streams(self, streams: Iterable[str]) -> list[str]:
        return [s for s in streams if self.holds(s)]

    def refresh(self, streams: Sequence[str]) -> None:
        """Heartbeat, then release the streams no longer assigned to this ingester and take
        or renew the assigned ones and the publisher's lease. Redis errors propagate (the
        ingester backs off; the leases lapse by themselves if it never comes back)."""
        sent = time.monotonic()
        self.members = [
            _text(m) for m in self._heartbeat(keys=[MEMBERS], args=[self.me, self.ttl_ms])
        ]
        self.assigned = assign(streams, self.members, self.me)
        self._release_unassigned(set(self.assigned))
        wanted = [lease_key(s) for s in self.assigned] + [PUBLISHER]
        granted = run_batch(
            self.client, self._lease, [([k], [self.me, self.ttl_ms]) for k in wanted]
        )
        trusted_until = sent + self.ttl_s * SAFE_FRACTION
        for key, ok in zip(wanted, granted, strict=True):
            if int(ok):
                self._deadlines[key] = trusted_until
            else:
                self._deadlines.pop(key, None)
        waiting = any(
            not int(ok) for key, ok in zip(wanted, granted, strict=True) if key != PUBLISHER
        )
        self._next_refresh = sent + (CLAIM_RETRY_S if waiting else self.ttl_s * RENEW_FRACTION)

    def release_all(self) -> None:
        """Leave: release every lease held and the membership, so the others take over at
        their next refresh instead of after ``ttl_s``. Best effort (a stop during a Redis
        outage leaves them to expire)."""
        held = list(self._deadlines)
        self._deadlines.clear()
        try:
            if held:
                run_batch(self.client, self._release, [([k], [self.me]) for k in held])
            self.client.zrem(MEMBERS, self.me)
        except redis.RedisError as exc:
            log.warning(
                "ingester: could not release its leases (%s); they expire by themselves", exc
            )

    def _release_unassigned(self, assigned: set[str]) -> None:
        keep = {lease_key(s) for s in assigned} | {PUBLISHER}
        extra = [k for k in self._deadlines if k not in keep]
        for key in extra:
            del self._deadlines[key]  # stop reading first, then let the next owner in
        if extra:
            run_batch(self.client, self._release, [([k], [self.me]) for k in extra])

    def _trusted(self, key: str) -> bool:
        return time.monotonic() < self._deadlines.get(key, 0.0)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
