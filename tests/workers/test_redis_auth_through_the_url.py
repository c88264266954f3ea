"""A Redis that requires a password (requirepass) or an ACL user works through REDIS_URL
alone: producer, ordered consumer, the dashboard's client and the Channels layer; the
same server refuses a URL without the credentials."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.support import redis_server
from tests.workers.url_roundtrip import GROUP, channel_layer_round_trip, consume_through

PASSWORD = "s3cret-Redis-pass"
ACL_USER, ACL_PASSWORD = "lockstep", "acl-Pass-42"


@pytest.fixture(scope="module")
def protected_url() -> Iterator[str]:
    """``redis://:PASSWORD@host:port/0``, with an ACL user ``lockstep`` beside it."""
    acl = f"{ACL_USER} on >{ACL_PASSWORD} ~* &* +@all"
    with redis_server(password=PASSWORD, users=[acl]) as url:
        yield url


def _acl_url(protected_url: str) -> str:
    return protected_url.replace(f":{PASSWORD}@", f"{ACL_USER}:{ACL_PASSWORD}@")


def _flushed(url: str) -> str:
    redis.Redis.from_url(url).flushall()
    return url


def test_it_refuses_a_url_without_the_password(protected_url: str) -> None:
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(protected_url.replace(f":{PASSWORD}@", "")).ping()


def test_it_consumes_and_reads_lag_with_the_password_in_the_url(
    protected_url: str, settings: Any
) -> None:
    lag = consume_through(_flushed(protected_url), settings)
    assert lag == {f"0/{GROUP}": 0, f"1/{GROUP}": 0}


def test_it_consumes_and_reads_lag_as_an_acl_user(protected_url: str, settings: Any) -> None:
    assert redis.Redis.from_url(_acl_url(protected_url)).acl_whoami() == ACL_USER
    lag = consume_through(_flushed(_acl_url(protected_url)), settings)
    assert lag == {f"0/{GROUP}": 0, f"1/{GROUP}": 0}


@pytest.mark.parametrize("as_acl_user", [False, True])
def test_it_carries_channel_layer_messages(protected_url: str, as_acl_user: bool) -> None:
    url = _acl_url(protected_url) if as_acl_user else protected_url
    assert channel_layer_round_trip(url) == {"type": "overview.changed", "seq": 1}
