"""Every owned queue of a subscription on a bounded pool of threads, on a Redis Cluster
(docs/reading.md, "On a Redis Cluster").

``ClusterQueuePool`` steps the queue workers as ``QueuePool`` does; only the wait for data
differs, because a cluster refuses one ``XREAD`` over streams of different slots:

- A queue that waits for data is *armed*, by its node's armer thread, for all the queues
  of the node that came together (a node that does not answer holds up only its own
  queues): their streams are read first, in one pipeline of plain ``XRANGE``s, and the
  entries found are handed to the workers; those with nothing new go to one call of
  ``arm_wakeup.lua`` (it touches keys of the node's slots), which returns what came
  since or sets the queue's wake flag.
- An append to a queue whose flag is set removes the flag and publishes on the queue's
  shard channel (``SPUBLISH``, ``_produce.lua``). One listener thread per node holds the
  sharded subscriptions (``SSUBSCRIBE``) of the queues that node serves; a message has
  the queue armed again, which hands it the new entries. A queue whose data step only
  hands entries on (``inline_data_steps``: key ordering's) has that step run by the
  armer itself, as a standalone Redis's reader does.
- A queue is armed only once its subscription is confirmed: an append between the arm and
  the subscription would wake nobody. Until then it waits ``UNSUBSCRIBED_WAIT_S`` and
  reads again.
- An armed wait lasts ``REARM_S`` at most: a wake-up lost all the same (a flag lost in a
  failover, a message lost while a listener reconnected) costs that much delay, never a
  message. A listener that loses its connection or a channel (its slot moved) wakes the
  queues it served: they read, wait again, and subscribe where their slot is now.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from typing import Any

import redis
from redis.exceptions import NoScriptError, RedisClusterException

from lockstep.workers import keys
from lockstep.workers.connection import cluster_of, own_connection, refresh_layout
from lockstep.workers.ordering.runner import HAND_COUNT, Wait, after_offset
from lockstep.workers.ordering.scheduler import WAITING, QueuePool, QueueTask
from lockstep.workers.redis_types import Entry, as_bytes, entries, script_entries
from lockstep.workers.scripts import run_batch, script

log = logging.getLogger(__name__)

# The longest an armed queue waits before it reads again (module docstring). Each idle
# queue costs two commands per period (its read and its arm).
REARM_S = 30.0
# How long the wake flag lives: longer than an armed wait, so a waiting queue's flag is
# there; short enough that a consumer gone away leaves none behind for long.
FLAG_TTL_MS = int(2 * REARM_S * 1000)
# A queue whose subscription is not confirmed yet reads again this often.
UNSUBSCRIBED_WAIT_S = 0.2
# A listener applies new subscriptions at least this often (it waits for messages in
# between): the delay of a queue's first wait, not of its wake-ups.
LISTEN_POLL_S = 0.05
# An armer gathers the arms that come within this long into one call per node.
ARM_LINGER_S = 0.002
# After a listener failed (its node unreachable), a new one for that node waits this long.
RELISTEN_DELAY_S = 0.5


class _Listener(threading.Thread):
    """One node's sharded subscriptions, on a connection of their own; it applies the
    subscriptions the pool asks for and tells the pool what arrives."""

    def __init__(self, pool: ClusterQueuePool, node: str, client: redis.Redis) -> None:
        super().__init__(name=f"lockstep-{pool.name}-listen-{node}", daemon=True)
        self.pool = pool
        self.node = node
        # The subscriptions hold their connection for as long as the listener runs.
        self._client = own_connection(client)
        self._pubsub = self._client.pubsub()
        self._requests: deque[tuple[bool, str]] = deque()  # (subscribe?, channel)
        self._connected = False

    def request(self, subscribe: bool, channel: str) -> None:
        self._requests.append((subscribe, channel))

    def run(self) -> None:
        failure: BaseException | None = None
        try:
            while not self.pool.ending():
                self.pool.unstall()
                self._apply_requests()
                message = self._pubsub.get_message(timeout=LISTEN_POLL_S)
                if message is not None:
                    self._handle(message)
        except Exception as exc:  # a connection, the cluster's layout: the queues read again
            failure = exc
        finally:
            with contextlib.suppress(Exception):
                self._pubsub.close()
            with contextlib.suppress(Exception):
                self._client.close()
            self.pool.listener_gone(self, failure)

    def _apply_requests(self) -> None:
        while self._requests:
            subscribe, channel = self._requests.popleft()
            if subscribe:
                self._pubsub.ssubscribe(channel)
            else:
                self._pubsub.sunsubscribe(channel)
            if not self._connected and self._pubsub.connection is not None:
                self._connected = True
                # redis-py reconnects and subscribes again by itself; what was published
                # meanwhile is lost, so the queues read again (module docstring).
                self._pubsub.connection.register_connect_callback(self._reconnected)

    def _reconnected(self, _connection: Any) -> None:
        self.pool.channels_lost(self, None)

    def _handle(self, message: dict[str, Any]) -> None:
        kind = as_bytes(message["type"]).decode()
        channel = as_bytes(message["channel"]).decode()
        if kind == "smessage":
            self.pool.woken(self, channel)
        elif kind == "ssubscribe":
            self.pool.confirmed(self, channel)
        elif kind == "sunsubscribe":
            # Asked for (the queue went), or the server's: the channel's slot moved.
            self.pool.channels_lost(self, [channel])


class _Armer(threading.Thread):
    """Arms one node's waiting queues, in one script call for all that came together."""

    def __init__(self, pool: ClusterQueuePool, node: str, client: redis.Redis) -> None:
        super().__init__(name=f"lockstep-{pool.name}-arm-{node}", daemon=True)
        self.pool = pool
        self.node = node
        self.client = client  # the node's own (``connection.node_client``)
        self.pending: set[str] = set()  # streams (under the pool's lock)
        self.wanted = threading.Event()
        self.retired = False  # its node's listener failed: a new pair serves the node

    def run(self) -> None:
        while not self.pool.ending() and not self.retired:
            if not self.wanted.wait(LISTEN_POLL_S * 10):
                continue
            time.sleep(self.pool.linger_s(ARM_LINGER_S))
            self.wanted.clear()
            arms = self.pool.take_arms(self)
            if arms:
                self.pool.arm(self, arms)


class _Node:
    def __init__(self, listener: _Listener, armer: _Armer) -> None:
        self.listener = listener
        self.armer = armer


class ClusterQueuePool(QueuePool):
    """``QueuePool`` for a Redis Cluster: waits for data end by sharded pub/sub (module
    docstring). Per node it adds a listener and an armer thread."""

    def __init__(self, client: redis.Redis, threads: int, name: str) -> None:
        super().__init__(client, threads, name)
        cluster = cluster_of(client)
        assert cluster is not None, "ClusterQueuePool serves a Redis Cluster"
        self._cluster = cluster
        self._arm = script(client, "arm_wakeup")
        self._nodes: dict[str, _Node] = {}
        # Channel -> (the listener it was asked of, confirmed).
        self._channels: dict[str, tuple[_Listener, bool]] = {}
        # Stream -> the offset its last arm was for (its entries go to waiters of it) and
        # when: a queue that waits again for that offset within REARM_S is armed still.
        self._armed_from: dict[str, tuple[int, float]] = {}
        self._failed_at: dict[str, float] = {}  # node -> when its last listener failed
        # A queue's wake flag, which is also its shard channel (``keys.wake``), and back;
        # and how many tasks read each stream (a queue handed over within this process
        # has two while its previous worker steps out).
        self._channel_of: dict[str, str] = {}  # stream -> channel
        self._stream_of: dict[str, str] = {}  # channel -> stream
        self._readers_of: dict[str, int] = {}  # stream -> tasks

    # -- QueuePool's hooks (under the pool's lock) ---------------------------------------
    def _start_reader(self) -> None:
        """No reader: the nodes' listeners and armers, started as queues wait."""

    def _task_started(self, task: QueueTask) -> None:
        channel = keys.wake(task.worker.ref)
        self._channel_of[task.stream] = channel
        self._stream_of[channel] = task.stream
        self._readers_of[task.stream] = self._readers_of.get(task.stream, 0) + 1

    def _park(self, task: QueueTask, wait: Wait) -> int:
        if wait.data_from is None:
            return super()._park(task, wait)
        channel = self._channel_of[task.stream]
        known = self._channels.get(channel)
        confirmed = known is not None and known[1]
        armed_for = self._armed_for(task.stream, wait.data_from) if confirmed else 0.0
        cap = (armed_for or REARM_S) if confirmed else UNSUBSCRIBED_WAIT_S
        seconds = cap if wait.seconds is None else min(wait.seconds, cap)
        super()._park(task, Wait(seconds, wait.data_from))
        if task.state == WAITING:
            if known is None:
                self._subscribe(channel)
            elif confirmed and not armed_for:
                self._want_arm(known[0].node, task.stream)
        return 0

    def _armed_for(self, stream: str, data_from: int) -> float:
        """How much longer ``stream`` stays armed for ``data_from`` (0: it is not): a
        queue woken by something else (a poke, a timer of its own) waits on its arm."""
        armed = self._armed_from.get(stream)
        if armed is None or armed[0] != data_from:
            return 0.0
        return max(0.0, REARM_S - (time.monotonic() - armed[1]))

    def _task_done(self, task: QueueTask) -> None:
        readers = self._readers_of.pop(task.stream, 1) - 1
        if readers:
            self._readers_of[task.stream] = readers
            return
        channel = self._channel_of.pop(task.stream)
        del self._stream_of[channel]
        known = self._channels.pop(channel, None)
        self._armed_from.pop(task.stream, None)
        if known is not None:
            known[0].request(False, channel)

    # -- subscriptions (under the pool's lock) --------------------------------------------
    def _subscribe(self, channel: str) -> None:
        try:
            node = self._cluster.get_node_from_key(channel)
        except (redis.RedisError, RedisClusterException):
            node = None
        if node is None:
            return  # no node serves the slot now: the queue reads again soon
        entry = self._nodes.get(node.name)
        if entry is None:
            if time.monotonic() - self._failed_at.get(node.name, 0.0) < RELISTEN_DELAY_S:
                return
            client = self._cluster.get_redis_connection(node)
            entry = _Node(_Listener(self, node.name, client), _Armer(self, node.name, client))
            self._nodes[node.name] = entry
            entry.listener.start()
            entry.armer.start()
        self._channels[channel] = (entry.listener, False)
        entry.listener.request(True, channel)

    def _want_arm(self, node: str, stream: str) -> bool:
        """Ask ``node``'s armer to arm ``stream``; False when no armer serves the node."""
        entry = self._nodes.get(node)
        if entry is None:
            return False
        entry.armer.pending.add(stream)
        if not entry.armer.wanted.is_set():
            # Set until the armer clears it, before it takes what is pending (under the
            # lock held here): one set per round, not one per queue.
            entry.armer.wanted.set()
        return True

    def _waiters(self, stream: str) -> list[QueueTask]:
        return list(self._waiting_data.get(stream, ()))

    # -- from the listeners ----------------------------------------------------------------
    def woken(self, listener: _Listener, channel: str) -> None:
        """An append published on ``channel``: its queue is armed again, and the arm
        returns the new entries, in one call per node for the queues woken together
        (``arm``): they go to the waiters as a read of theirs would, and a data step that
        only hands them on (``inline_data_steps``) is run by the armer itself. A waiter
        woken without entries would not read (it read to the stream's end): it would
        wait again, and be armed then, a step later. Where no armer serves the node any
        more, the waiters are woken and read."""
        with self._cond:
            stream = self._stream_of.get(channel)
            if stream is None:
                return  # its queue went
            self._armed_from.pop(stream, None)
            waiters = self._waiters(stream)
            if waiters and self._want_arm(listener.node, stream):
                return
            for task in waiters:
                self._wake(task, task.generation, data=True)

    def confirmed(self, listener: _Listener, channel: str) -> None:
        with self._cond:
            known = self._channels.get(channel)
            if known is None or known[0] is not listener:
                return
            self._channels[channel] = (listener, True)
            stream = self._stream_of[channel]
            if self._waiters(stream):
                self._want_arm(listener.node, stream)

    def channels_lost(self, listener: _Listener, channels: list[str] | None) -> None:
        """``listener`` no longer holds ``channels`` (``None``: any of its channels):
        their queues read, and subscribe again when they next wait."""
        with self._cond:
            lost = [
                channel
                for channel, (owner, _) in self._channels.items()
                if owner is listener and (channels is None or channel in channels)
            ]
            for channel in lost:
                del self._channels[channel]
                stream = self._stream_of[channel]
                self._armed_from.pop(stream, None)
                for task in self._waiters(stream):
                    self._wake(task, task.generation)

    def listener_gone(self, listener: _Listener, failure: BaseException | None) -> None:
        if failure is not None:
            log.info("lockstep: wake-ups from node %s interrupted: %s", listener.node, failure)
            refresh_layout(self._cluster)
        with self._cond:
            entry = self._nodes.get(listener.node)
            if entry is not None and entry.listener is listener:
                del self._nodes[listener.node]
                if failure is not None:
                    self._failed_at[listener.node] = time.monotonic()
                entry.armer.retired = True
                entry.armer.wanted.set()
        self.channels_lost(listener, None)

    # -- arming (the armers' threads) ----------------------------------------------------
    def take_arms(self, armer: _Armer) -> dict[str, tuple[int, str]]:
        """Stream -> the offset to arm it for (the lowest its waiters wait for) and its
        wake flag."""
        with self._cond:
            pending, armer.pending = armer.pending, set()
            arms: dict[str, tuple[int, str]] = {}
            for stream in pending:
                waiters = self._waiters(stream)
                if waiters:
                    lowest = min(task.data_from or 0 for task in waiters)
                    arms[stream] = (lowest, self._channel_of[stream])
                    self._armed_from[stream] = (lowest, time.monotonic())
            return arms

    def arm(self, armer: _Armer, arms: dict[str, tuple[int, str]]) -> None:
        """Hand ``arms`` (``take_arms``) what came after their offsets, on ``armer``'s
        node: every stream is read first (``_read_each``), and only those with nothing
        new are armed (``arm_wakeup.lua``), which returns what came since or sets their
        flags."""
        found = self._read_each(armer, arms)
        to_arm = {stream: arms[stream] for stream, got in found.items() if got is None}
        if to_arm:
            replies = self._arm_together(armer, to_arm)
            if replies is None:
                replies = self._arm_each(to_arm)
            # Decoded before the pool's lock is taken: the stepping threads wait on it.
            for stream, reply in zip(to_arm, replies, strict=True):
                found[stream] = reply if isinstance(reply, Exception) else script_entries(reply)
        inline: list[QueueTask] = []
        with self._cond:
            for stream, got in found.items():
                self._armed(stream, arms[stream][0], got or [], inline)
        self._step_inline(inline)

    def _read_each(
        self, armer: _Armer, arms: dict[str, tuple[int, str]]
    ) -> dict[str, list[Entry] | Exception | None]:
        """Each stream of ``arms`` read after its offset, in one pipeline of plain
        ``XRANGE``s on the armer's node: its entries; None where there were none or the
        node refused the read (a slot moved: its arm follows it); the node's connection
        error for every stream. Why read before arming: a script's ``XRANGE`` costs the
        node several times the command's own (its entries converted to Lua and back),
        and under load most waiting queues have entries already (docs/reading.md, "On a
        Redis Cluster")."""
        pipe = armer.client.pipeline(transaction=False)
        for stream, (offset, _) in arms.items():
            pipe.xrange(stream, min=f"({after_offset(offset)}", max="+", count=HAND_COUNT)
        try:
            replies = pipe.execute(raise_on_error=False)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            return dict.fromkeys(arms, exc)
        except redis.RedisError:
            return dict.fromkeys(arms)  # armed, which meets the node's refusal its own way
        return {
            stream: None if isinstance(reply, Exception) else (entries(reply) or None)
            for stream, reply in zip(arms, replies, strict=True)
        }

    def _arm_together(self, armer: _Armer, arms: dict[str, tuple[int, str]]) -> list[Any] | None:
        """Every queue of ``arms`` in one call of ``arm_wakeup.lua`` on the armer's node;
        per queue its reply, or the node's connection error. None when the node refused
        the call (a slot moved, a script error): ``_arm_each``."""
        args: list[Any] = [HAND_COUNT, FLAG_TTL_MS]
        for stream, (offset, flag) in arms.items():
            args += _arm_args(stream, offset, flag)
        try:
            reply = armer.client.evalsha(self._arm.sha, 0, *args)
        except NoScriptError:
            armer.client.script_load(self._arm.script)
            return None  # armed one by one this time
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            return [exc] * len(arms)
        except redis.RedisError:
            return None
        return list(reply)

    def _arm_each(self, arms: dict[str, tuple[int, str]]) -> list[Any]:
        """Each queue of ``arms`` in a call of its own, which declares its keys: the
        cluster client sends it where its slot is."""
        calls = [
            ([stream, flag], [HAND_COUNT, FLAG_TTL_MS, *_arm_args(stream, offset, flag)])
            for stream, (offset, flag) in arms.items()
        ]
        try:
            return [reply[0] for reply in run_batch(self.client, self._arm, calls)]
        except (redis.RedisError, RedisClusterException) as exc:
            return [exc] * len(arms)

    def _armed(
        self, stream: str, data_from: int, reply: list[Entry] | Exception, inline: list[QueueTask]
    ) -> None:
        """Apply one arm's ``reply``, decoded (under the lock): entries go to the waiters of
        ``data_from`` (``_hand``: a data step that only hands them on is added to
        ``inline``, for the armer to step once it let go of the lock)."""
        armed = self._armed_from.get(stream)
        if armed is None or armed[0] != data_from:
            return  # woken since, and waiting again (armed again) or not at all
        if isinstance(reply, Exception):
            # Each waiter reads, meets the failure and handles it.
            self._armed_from.pop(stream, None)
            for task in self._waiters(stream):
                self._wake(task, task.generation)
        elif reply:
            self._armed_from.pop(stream, None)
            for task in self._waiters(stream):
                if task.data_from == data_from:
                    self._hand(task, list(reply), inline)


def _arm_args(stream: str, offset: int, flag: str) -> tuple[str, str, str]:
    """One queue's arguments of ``arm_wakeup.lua``: its stream, its flag, the ID to read
    after."""
    return stream, flag, after_offset(offset)
