"""A Redis that speaks only TLS (Debian's redis-server, --tls-port) works through a
``rediss://`` REDIS_URL naming the CA file (``?ssl_ca_certs=``), password included:
producer, ordered consumer, the dashboard's client and the Channels layer. Without the CA
the server's self-signed certificate is refused, and plain redis:// gets no answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.support import redis_server
from tests.workers.url_roundtrip import GROUP, channel_layer_round_trip, consume_through

PASSWORD = "tls-Redis-pass-9"


@pytest.fixture(scope="module")
def tls_url() -> Iterator[str]:
    """``rediss://:PASSWORD@127.0.0.1:port/0?ssl_ca_certs=/tmp/.../ca.pem``."""
    with redis_server(password=PASSWORD, tls=True) as url:
        yield url


def test_it_refuses_the_certificate_without_the_ca(tls_url: str) -> None:
    with pytest.raises(redis.ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        redis.Redis.from_url(tls_url.split("?")[0]).ping()


def test_it_gets_no_answer_over_plain_tcp(tls_url: str) -> None:
    plain = tls_url.split("?")[0].replace("rediss://", "redis://")
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(plain, socket_timeout=2).ping()


def test_it_consumes_and_reads_lag_over_tls(tls_url: str, settings: Any) -> None:
    redis.Redis.from_url(tls_url).flushall()
    lag = consume_through(tls_url, settings)
    assert lag == {f"0/{GROUP}": 0, f"1/{GROUP}": 0}


def test_it_carries_channel_layer_messages_over_tls(tls_url: str) -> None:
    assert channel_layer_round_trip(tls_url) == {"type": "overview.changed", "seq": 1}
