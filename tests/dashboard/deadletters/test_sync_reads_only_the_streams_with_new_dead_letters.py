"""The dead-letter sync finds the streams with letters past their cursors in a pipelined
round trip per thousand (queue, group) pairs, then reads only those: at a few thousand
pairs with two new letters it reads two streams, not every pair's."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from lockstep.dashboard.deadletters.models import DeadLetter
from lockstep.dashboard.deadletters.sync import sync_dead_letters
from tests.dashboard.deadletters.helpers import add_dead_letter
from tests.dashboard.fleets import make_fleet

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]


def _count_stream_reads(monkeypatch: pytest.MonkeyPatch, client: redis.Redis) -> list[Any]:
    """The stream of every XRANGE after a cursor (exclusive start) sent outside a pipeline:
    one per stream the sync reads (its checks of waiting records read one entry by ID)."""
    reads: list[Any] = []
    original = type(client).xrange

    def counted(self: redis.Redis, *args: Any, **kwargs: Any) -> Any:
        if str(args[1]).startswith("("):
            reads.append(args[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(client), "xrange", counted)
    return reads


def test_it_reads_only_the_two_streams_with_new_letters_among_thousands(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs = make_fleet(redis_client, ["orders", "payments"], 600, ["billing", "mailer"])
    first = add_dead_letter(redis_client, queue=7, group="billing", key="k1")
    sync_dead_letters(redis_client)
    second = add_dead_letter(redis_client, queue=7, group="billing", offset=1, key="k2")
    third = add_dead_letter(redis_client, queue=500, group="mailer", key="k3")
    reads = _count_stream_reads(monkeypatch, redis_client)

    result = sync_dead_letters(redis_client)
    again = sync_dead_letters(redis_client)

    assert pairs == 2400
    assert result.copied == 2 and again.copied == 0
    assert sorted(reads) == ["ls:{orders:500}:dlq:mailer", "ls:{orders:7}:dlq:billing"]
    stored = set(DeadLetter.objects.values_list("dlq_id", flat=True))
    assert stored == {first, second, third}
