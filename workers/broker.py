"""The broker side on Redis: queue locks, fenced offsets, dead letters, the registry and
reads from the queue streams. Every state change that must be atomic is a Lua script."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

import redis

from lockstep.workers import keys
from lockstep.workers.coalesce import CoalescedScript, NodeCoalescedScript
from lockstep.workers.connection import cluster_of
from lockstep.workers.message import FailedAttempt, Message
from lockstep.workers.redis_types import as_bytes, entries
from lockstep.workers.refs import QueueRef
from lockstep.workers.scripts import run_batch, script

# Queues locked or renewed per script call on a standalone Redis: a call over this many
# keys runs in about a millisecond, so it never holds Redis up for long.
LOCK_KEYS_PER_CALL = 256

if TYPE_CHECKING:  # only named in annotations: the broker stays below the settings
    from lockstep.workers.config import Subscription


class CommitOutcome(IntEnum):
    OK = 1
    FENCED = 0
    EXPIRED = -1


@dataclass(frozen=True)
class Grant:
    ref: QueueRef
    token: int  # 0: refused, or not answered (``error``)
    new: bool  # a new grant (new token) rather than a renewal
    # On a cluster, the failure of the node serving the queue: neither granted nor
    # refused (``Broker.lock_batch``).
    error: Exception | None = None


@dataclass(frozen=True)
class CommitResult:
    outcome: CommitOutcome
    current_token: int
    dlq_id: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome is CommitOutcome.OK


@dataclass(frozen=True)
class Commit:
    """One queue's commit for ``Broker.commit_all`` (the arguments of ``Broker.commit``)."""

    ref: QueueRef
    group: str
    owner: str
    token: int
    offset: int
    completed: str = ""


@dataclass(frozen=True)
class StoredOffset:
    committed: int
    completed: str
    token: int
    updated_at_ms: int


class Broker:
    """The runtime's writes to (and hot-path reads from) the Redis layout of
    docs/redis-layout.md. Methods that address one queue take ``(ref, group, ...)``."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._lock = script(client, "lock")
        self._unlock = script(client, "unlock")
        # Commits meet from many queues' threads; sent together (per node on a cluster).
        commit = script(client, "commit")
        self._commit_script = commit  # for ``commit_all``'s batches
        self._commit: CoalescedScript | NodeCoalescedScript = (
            CoalescedScript(client, commit)
            if cluster_of(client) is None
            else NodeCoalescedScript(client, commit)
        )
        self._dead_letter = script(client, "dead_letter")
        self._heartbeat = script(client, "heartbeat")
        # Registry key -> (digest, members) of the last full membership read.
        self._memberships: dict[str, tuple[str, list[str]]] = {}
        self._park = script(client, "park")
        self._unpark = script(client, "unpark")

    # -- locks -------------------------------------------------------------------------
    def lock_batch(
        self,
        refs: Sequence[QueueRef],
        group: str,
        owner: str,
        ttl_s: float,
        *,
        renew_only: bool = False,
        node_wait_s: float | None = None,
    ) -> list[Grant]:
        """Lock or renew several queues in one round trip (RocketMQ's ``lockBatchMQ``).
        On a standalone Redis one script call takes up to ``LOCK_KEYS_PER_CALL`` queues
        (one ``TIME`` for all, two commands per renewal: an idle consumer's renewals cost
        Redis little, docs/reading.md); on a cluster one call per queue keeps every call
        within one slot, in one pipeline per node (``workers.scripts.run_batch``).
        ``renew_only`` refuses (token 0) any queue ``owner`` does not hold live right now,
        instead of granting it afresh. On a cluster, with ``node_wait_s``, the nodes are
        asked at once, and a node that cannot be reached or does not answer within that
        time fails only the queues it serves: their grants carry its ``error``. When no
        queue was answered, that error is raised, as on a standalone Redis."""
        if not refs:
            return []
        ttl_ms = max(1, int(ttl_s * 1000))
        mode = "1" if renew_only else "0"
        per_call = 1 if cluster_of(self.client) is not None else LOCK_KEYS_PER_CALL
        chunks = [refs[i : i + per_call] for i in range(0, len(refs), per_call)]
        calls = [
            ([keys.lock(ref, group) for ref in chunk], [owner, ttl_ms, mode]) for chunk in chunks
        ]
        replies = run_batch(self.client, self._lock, calls, node_wait_s=node_wait_s)
        failed = [r for r in replies if isinstance(r, Exception)]
        if failed and len(failed) == len(replies):
            raise failed[0]
        grants: list[Grant] = []
        for chunk, reply in zip(chunks, replies, strict=True):
            if isinstance(reply, Exception):
                grants += [Grant(ref, 0, False, reply) for ref in chunk]
                continue
            pairs = _pairs(reply)
            grants += [
                Grant(ref, int(token), bool(int(granted)))
                for ref, (token, granted) in zip(chunk, pairs, strict=True)
            ]
        return grants

    def unlock(self, ref: QueueRef, group: str, owner: str, token: int) -> bool:
        return bool(self._unlock(keys=[keys.lock(ref, group)], args=[owner, token]))

    # -- offsets -----------------------------------------------------------------------
    def read_offset(self, ref: QueueRef, group: str) -> StoredOffset:
        raw = self.client.hgetall(keys.offset(ref, group))
        return StoredOffset(
            committed=int(raw.get(b"committed", b"0")),
            completed=as_bytes(raw.get(b"completed", b"")).decode(),
            token=int(raw.get(b"token", b"0") or 0),
            updated_at_ms=int(raw.get(b"updated_at", b"0") or 0),
        )

    def commit(
        self,
        ref: QueueRef,
        group: str,
        owner: str,
        token: int,
        offset: int,
        completed: str = "",
    ) -> CommitResult:
        reply = self._commit(
            keys=[keys.lock(ref, group), keys.offset(ref, group)],
            args=[owner, token, offset, completed],
        )
        return CommitResult(CommitOutcome(int(reply[0])), int(reply[1]))

    def commit_all(
        self, commits: Sequence[Commit], *, node_wait_s: float | None = None
    ) -> list[CommitResult | Exception]:
        """Several queues' fenced commits in one round trip (``scripts.run_batch``: one
        pipeline per node on a cluster, the nodes at once with ``node_wait_s``, so a node
        that fails or is late fails only its own queues' commits, as their errors). Each
        is its own script run with its own result."""
        calls = [
            (
                [keys.lock(c.ref, c.group), keys.offset(c.ref, c.group)],
                [c.owner, c.token, c.offset, c.completed],
            )
            for c in commits
        ]
        replies = run_batch(self.client, self._commit_script, calls, node_wait_s=node_wait_s)
        return [
            r if isinstance(r, Exception) else CommitResult(CommitOutcome(int(r[0])), int(r[1]))
            for r in replies
        ]

    def commit_unfenced(self, ref: QueueRef, offset_group: str, offset: int) -> None:
        """Broadcasting model: no locks; the offset belongs to one consumer alone."""
        self.client.hset(
            keys.offset(ref, offset_group),
            mapping={"committed": offset, "completed": "", "token": 0},
        )

    def dead_letter(
        self,
        ref: QueueRef,
        group: str,
        owner: str,
        token: int | None,
        commit_offset: int,
        entry: dict[str, Any],
        offset_group: str | None = None,
        *,
        completed: str = "",
        park_key: str = "",
    ) -> CommitResult:
        """Move one message to the group's dead-letter stream and commit ``commit_offset``
        (with ``completed`` above it) in the same atomic step; with ``park_key`` the key is
        held in the same step. ``token=None`` is the unfenced broadcasting case, whose
        offsets are kept under ``offset_group``."""
        flat: list[Any] = []
        for k, v in entry.items():
            flat.extend([k, v])
        reply = self._dead_letter(
            keys=[
                keys.lock(ref, group),
                keys.offset(ref, offset_group or group),
                keys.dead_letters(ref, group),
                keys.parked_keys(ref, group),
            ],
            args=[
                owner,
                "" if token is None else token,
                commit_offset,
                completed,
                park_key,
                *flat,
            ],
        )
        dlq_id = reply[2].decode() if len(reply) > 2 else ""
        return CommitResult(CommitOutcome(int(reply[0])), int(reply[1]), dlq_id)

    # -- parking (key ordering, after_dlq = hold) --------------------------------------
    def park(
        self,
        ref: QueueRef,
        group: str,
        owner: str,
        token: int,
        key: str,
        members: Sequence[tuple[int, str]],
        commit_offset: int,
        completed: str,
    ) -> CommitResult:
        args: list[Any] = [owner, token, commit_offset, completed]
        for offset, member in members:
            args.extend([offset, member])
        reply = self._park(
            keys=[
                keys.lock(ref, group),
                keys.offset(ref, group),
                keys.parked_messages(ref, group, key),
            ],
            args=args,
        )
        return CommitResult(CommitOutcome(int(reply[0])), int(reply[1]))

    def unpark(
        self,
        ref: QueueRef,
        group: str,
        owner: str,
        token: int,
        key: str,
        member: str,
    ) -> tuple[CommitOutcome, bool]:
        """Remove one drained parked message; returns (outcome, key freed)."""
        reply = self._unpark(
            keys=[
                keys.lock(ref, group),
                keys.parked_keys(ref, group),
                keys.parked_messages(ref, group, key),
            ],
            args=[owner, token, key, member],
        )
        outcome = CommitOutcome(int(reply[0]))
        return outcome, outcome is CommitOutcome.OK and bool(int(reply[2]))

    def parked_keys(self, ref: QueueRef, group: str) -> dict[str, dict[str, Any]]:
        raw = self.client.hgetall(keys.parked_keys(ref, group))
        return {as_bytes(k).decode(): json.loads(v) for k, v in raw.items()}

    def parked_messages(self, ref: QueueRef, group: str, key: str) -> list[str]:
        raw = self.client.zrange(keys.parked_messages(ref, group, key), 0, -1)
        return [as_bytes(m).decode() for m in raw]

    # -- registry ----------------------------------------------------------------------
    def heartbeat(self, topic: str, group: str, member: str, timeout_s: float) -> list[str]:
        """Beat for ``member`` ('' only to read) and return the group's live members,
        sorted. Redis sends the list only when it changed since this broker last read it
        (``heartbeat.lua``: otherwise only its digest), so a quiet poll's reply does not
        grow with the group."""
        registry = keys.registry(topic, group)
        digest, members = self._memberships.get(registry, ("", []))
        reply = self._heartbeat(keys=[registry], args=[member, int(timeout_s * 1000), digest])
        now_digest = as_bytes(reply[1]).decode()
        if now_digest != digest or len(reply) > 2:
            members = [as_bytes(m).decode() for m in reply[2:]]
            self._memberships[registry] = (now_digest, members)
        return list(members)

    def leave(self, topic: str, group: str, member: str) -> None:
        self.client.zrem(keys.registry(topic, group), member)

    # -- streams -----------------------------------------------------------------------
    def read_from(
        self, ref: QueueRef, offset: int, count: int
    ) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Entries with offset >= ``offset``, oldest first; never blocks (a queue waiting
        for entries is woken by its runner: ``ordering.runner``)."""
        stream = keys.stream(ref)
        return entries(self.client.xrange(stream, min=f"{offset}-0", max="+", count=count))

    def max_offset(self, ref: QueueRef) -> int:
        """The next offset to be produced (RocketMQ's maxOffset): lag = this - committed."""
        raw = self.client.get(keys.sequence(ref))
        return int(raw) if raw else 0


def _pairs(reply: Any) -> list[tuple[Any, Any]]:
    """``lock.lua``'s flat reply as (token, granted) pairs."""
    return list(zip(reply[::2], reply[1::2], strict=True))


def dead_letter_entry(
    message: Message,
    sub: Subscription,
    error: str,
    attempts: Sequence[FailedAttempt] = (),
) -> dict[str, Any]:
    """The fields of a message's dead letter (docs/redis-layout.md): the message, why it
    failed and how the subscription consumes (which decides how a replay keeps order)."""
    return {
        "topic": message.topic,
        "queue": message.queue,
        "offset": message.offset,
        "key": message.key,
        "body": message.body,
        "headers": _json(message.headers),
        "produced_at_ms": int(message.produced_at * 1000),
        "reconsume_times": message.reconsume_times,
        "group": sub.group,
        "error": error[:4000],  # the cause in one line; tracebacks are in ``attempts``
        "ordering": str(sub.ordering),
        "after_dlq": str(sub.after_dlq),
        "attempts": _json(list(attempts)),
    }


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)
