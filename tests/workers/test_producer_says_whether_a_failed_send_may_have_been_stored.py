"""A send that fails on the network says whether the message may have been stored: True
when the command may have reached Redis (the reply was lost), False only when nothing
reached it. A retry with the same idempotency key then stores the message at most once.

A TCP proxy on 127.0.0.1 sits between the producer and the suite's redis-server, so the
test can lose a reply after Redis ran the command: the one failure a client cannot see
through."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import suppress
from typing import cast
from urllib.parse import urlparse

import pytest
import redis

from lockstep.workers import Producer, create_topic, keys
from lockstep.workers.errors import SendError
from lockstep.workers.hashing import queue_for_key
from lockstep.workers.refs import QueueRef
from tests.support import refused_port

TOPIC = "payments"


class ReplyDroppingProxy:
    """Forwards every connection to Redis. Once ``drop_next_reply_to`` is armed with a
    command name, the first request naming it is forwarded and the client's connection is
    closed instead of relaying its reply (Redis ran the command; the client never knows)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.armed: bytes | None = None
        self.dropped = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def drop_next_reply_to(self, command: bytes) -> None:
        self.armed = command

    def close(self) -> None:
        """Stop listening and cut every connection (as a Redis that went away)."""
        for s in [self.listener, *self._sockets]:
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self._sockets += [client, server]
            reply_dropped = threading.Event()
            threading.Thread(
                target=self._requests, args=(client, server, reply_dropped), daemon=True
            ).start()
            threading.Thread(
                target=self._replies, args=(server, client, reply_dropped), daemon=True
            ).start()

    def _requests(
        self, client: socket.socket, server: socket.socket, drop: threading.Event
    ) -> None:
        while data := _recv(client):
            if self.armed is not None and self.armed in data.upper():
                self.armed = None
                drop.set()  # before forwarding: the reply cannot overtake the flag
            server.sendall(data)

    def _replies(self, server: socket.socket, client: socket.socket, drop: threading.Event) -> None:
        while data := _recv(server):
            if drop.is_set():
                with suppress(OSError):
                    client.shutdown(socket.SHUT_RDWR)
                client.close()
                self.dropped.set()
                return
            client.sendall(data)


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


@pytest.fixture
def proxy(redis_url: str) -> Iterator[ReplyDroppingProxy]:
    parsed = urlparse(redis_url)
    p = ReplyDroppingProxy((parsed.hostname or "127.0.0.1", int(parsed.port or 6379)))
    yield p
    p.close()


def _copies(client: redis.Redis, key: str, body: bytes) -> list[int]:
    """Offsets of the stream entries of ``key``'s queue that hold ``body``."""
    stream = keys.stream(QueueRef(TOPIC, queue_for_key(key, 4)))
    found = cast(list[tuple[bytes, dict[bytes, bytes]]], client.xrange(stream))
    return [int(entry_id.split(b"-")[0]) for entry_id, fields in found if fields[b"b"] == body]


def test_it_says_maybe_stored_when_the_reply_is_lost_and_a_retry_with_the_key_stores_once(
    redis_client: redis.Redis, proxy: ReplyDroppingProxy
) -> None:
    create_topic(redis_client, TOPIC, 4)
    producer = Producer(proxy.url)
    try:
        producer.send(TOPIC, "card-7", b"warm-up")  # connected, script loaded, topic known
        proxy.drop_next_reply_to(b"EVALSHA")
        with pytest.raises(SendError) as failed:
            producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")
        stored_before_retry = _copies(redis_client, "card-7", b"charge 12.00")
        retried = producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")
    finally:
        producer.close()

    assert proxy.dropped.is_set()
    assert failed.value.maybe_stored is True
    assert "may have been stored" in str(failed.value)
    assert stored_before_retry == [1]  # stored once: redis-py did not re-run the script
    assert (retried.offset, retried.duplicate) == (1, True)
    assert _copies(redis_client, "card-7", b"charge 12.00") == [1]


def test_it_says_not_stored_when_nothing_listens_on_the_port(redis_client: redis.Redis) -> None:
    with refused_port() as port:
        producer = Producer(f"redis://127.0.0.1:{port}/0")
        try:
            with pytest.raises(SendError) as failed:
                producer.send(TOPIC, "card-7", b"charge 12.00")
        finally:
            producer.close()

    assert failed.value.maybe_stored is False
    assert "was not stored; sending it again is safe" in str(failed.value)


def test_it_says_not_stored_when_redis_went_away_before_the_send(
    redis_client: redis.Redis, proxy: ReplyDroppingProxy
) -> None:
    create_topic(redis_client, TOPIC, 4)
    producer = Producer(proxy.url)
    try:
        producer.send(TOPIC, "card-7", b"warm-up")  # the topic is known: the next send
        proxy.close()  # goes straight to the produce script, on a connection now dead
        with pytest.raises(SendError) as failed:
            producer.send(TOPIC, "card-7", b"charge 12.00", idempotency_key="charge-1")
    finally:
        producer.close()

    assert failed.value.maybe_stored is False
    assert _copies(redis_client, "card-7", b"charge 12.00") == []
    record = keys.idempotency(QueueRef(TOPIC, queue_for_key("card-7", 4)), "charge-1")
    assert redis_client.exists(record) == 0
