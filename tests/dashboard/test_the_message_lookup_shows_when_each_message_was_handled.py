"""The message lookup (its JSON twin and its page) says when each group handled each
message and in how many attempts, so the order a key went in after a replay shows: a
poison message of ``order-100`` is dead-lettered and holds its key (its later messages
parked), the handler is fixed and the dead letter replayed in place; then the dead letter
reads "handled on replay" at the consumer's report, its parked messages "handled after its
key's release" by the release (not at the park's commit, which moved past them first),
another key's message "committed at" the commit event that moved past it, and the
attempts count the dead letter's two runs and its replay. Then, with hand-timed events:
the commit event taken is the one whose range moved past the message, and a discarded
dead letter reads as discarded, not at its dead letter's commit."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from lockstep.dashboard.monitor import handled
from lockstep.dashboard.web.store.models import Event
from lockstep.dashboard.web.store.queries import to_ms
from lockstep.workers import create_topic
from lockstep.workers import events as ev
from lockstep.workers.config import AfterDlq, Ordering
from lockstep.workers.dead_letters import ReplayOutcome, replay
from lockstep.workers.refs import QueueRef
from tests.dashboard.helpers import produce
from tests.dashboard.scenarios import FailOn, consuming, ingest_all, ingest_until, write_event
from tests.support import probe_until

pytestmark = [pytest.mark.django_db, pytest.mark.on_cluster]

KEY = "order-100"


def _lookup(client: Client, query: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/messages?{query}")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _states(found: dict[str, Any], group: str) -> dict[int, dict[str, Any]]:
    """offset -> the group's state of it."""
    return {
        m["offset"]: next(s for s in m["states"] if s["group"] == group) for m in found["messages"]
    }


def _stored_ms(type_: str, group: str) -> list[int]:
    return [
        to_ms(ts)
        for ts in Event.objects.filter(type=type_, group=group)
        .order_by("ts", "id")
        .values_list("ts", flat=True)
    ]


def _first_commit_past(group: str, offset: int) -> int:
    rows = Event.objects.filter(type=ev.OFFSET_COMMITTED, group=group).order_by("ts", "id")
    return next(to_ms(e.ts) for e in rows if e.details["offset"] > offset)


def test_it_tells_when_and_in_how_many_attempts_each_message_was_handled_after_a_replay(
    client: Client, viewer: User, redis_client: redis.Redis, redis_url: str
) -> None:
    create_topic(redis_client, "orders", 1)
    client.force_login(viewer)
    sent = produce(redis_url, "orders", [KEY, "order-7", KEY, KEY])
    poison, other, *parked = (s.offset for s in sent)
    holder = FailOn(KEY)

    with (
        consuming(
            redis_url,
            "orders",
            "holder",
            holder,
            ordering=Ordering.KEY,
            max_reconsume_times=1,
            after_dlq=AfterDlq.HOLD,
            retry_initial_ms=20,
            retry_max_ms=40,
        ),
        consuming(redis_url, "orders", "auditor", FailOn()),
    ):
        held = probe_until(
            lambda: _states(_lookup(client, f"topic=orders&key={KEY}"), "holder"),
            lambda s: (
                [s[o]["state"] for o in (poison, *parked)] == ["dead_lettered", "parked", "parked"]
            ),
        )
        holder.failing.clear()  # the handler is fixed
        replayed = replay(
            redis_client, QueueRef("orders", 0), "holder", held[poison]["dlq_id"], actor="ops"
        )
        by_key = probe_until(
            lambda: _lookup(client, f"topic=orders&key={KEY}"),
            lambda f: all(s["state"] == "handled" for s in _states(f, "holder").values()),
        )
        ingest_until(redis_client, ev.KEY_RELEASED)
        ingest_until(redis_client, ev.REPLAY_SUCCEEDED)
    ingest_all(redis_client)  # and the commits a stop flushed

    by_key = _lookup(client, f"topic=orders&key={KEY}")
    by_offset = _lookup(client, f"topic=orders&queue=0&offset={other}")
    page = client.get(f"/messages?topic=orders&key={KEY}").content.decode()

    assert replayed.outcome is ReplayOutcome.IN_PLACE
    holder_states = _states(by_key, "holder")
    (succeeded_ms,) = _stored_ms(ev.REPLAY_SUCCEEDED, "holder")
    (released_ms,) = _stored_ms(ev.KEY_RELEASED, "holder")
    assert {
        k: holder_states[poison][k] for k in ("handled_event", "handled_at_ms", "attempts")
    } == {
        "handled_event": ev.REPLAY_SUCCEEDED,
        "handled_at_ms": succeeded_ms,
        "attempts": 3,  # the first run and one retry, then the replay
    }
    for offset in parked:
        assert {
            k: holder_states[offset][k] for k in ("handled_event", "handled_at_ms", "attempts")
        } == {"handled_event": ev.KEY_RELEASED, "handled_at_ms": released_ms, "attempts": 1}
    assert succeeded_ms <= released_ms
    auditor_states = _states(by_key, "auditor")
    for offset in (poison, *parked):
        assert auditor_states[offset]["handled_event"] == ev.OFFSET_COMMITTED
        assert auditor_states[offset]["handled_at_ms"] == _first_commit_past("auditor", offset)
        assert auditor_states[offset]["attempts"] == 1
    (other_holder,) = [s for s in by_offset["messages"][0]["states"] if s["group"] == "holder"]
    assert (other_holder["handled_event"], other_holder["handled_at_ms"]) == (
        ev.OFFSET_COMMITTED,
        _first_commit_past("holder", other),
    )

    rows = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r'data-offset="(\d+)" data-key="[^"]*">(.*?)</tr>', page, re.S)
    }
    holder_said = {o: _said(rows[o], "holder") for o in (poison, *parked)}
    assert holder_said[poison].startswith("handled on replay at ")
    assert holder_said[poison].endswith(", 3 attempts")
    for offset in parked:
        assert holder_said[offset].startswith("handled after its key's release, by ")
        assert holder_said[offset].endswith(", 1 attempt")
    assert _said(rows[poison], "auditor").startswith("committed at ")
    assert "committed at</em> is the stored commit event that moved the group past" in page


def _said(row: str, group: str) -> str:
    """The words of the handled time of ``group`` in one message row, tags dropped (as
    it reads: no line break or space before the comma)."""
    cell = re.search(
        rf'data-group="{group}" data-state="handled">.*?'
        r'<span class="hint handled-at"(.*?)</span></span>',
        row,
        re.S,
    )
    assert cell is not None, row
    return re.sub(r"<[^>]+>", "", cell.group(1).split(">", 1)[1])


T0 = 1_795_257_000_000


@pytest.mark.parametrize("chunk", [1000, 2])
def test_it_takes_the_commit_event_whose_range_moved_past_each_message(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Hand-timed events, stored by the ingester; the walk read in chunks of ``chunk``."""
    monkeypatch.setattr(handled, "COMMIT_CHUNK", chunk)
    where = {"topic": "orders", "queue": 0}

    def commit(at: int, group: str, first: int, last: int) -> None:
        details = {"from_offset": first, "offset": last, "commits": 2}
        write_event(
            redis_client, ev.OFFSET_COMMITTED, T0 + at, group=group, **where, details=details
        )

    commit(1000, "mailer", 1, 3)
    commit(2000, "other", 20, 20)
    write_event(
        redis_client,
        ev.DEAD_LETTERED,
        T0 + 5500,
        group="mailer",
        key="k",
        **where,
        details={"offset": 4, "reconsume_times": 2},
    )
    commit(6000, "mailer", 5, 9)
    for at in (6100, 6200):
        write_event(
            redis_client,
            ev.CONSUME_FAILED,
            T0 + at,
            group="mailer",
            key="k",
            **where,
            details={"offsets": [9], "reconsume_times": 1},
        )
    write_event(
        redis_client,
        ev.DEAD_LETTER_DISCARDED,
        T0 + 8000,
        group="mailer",
        key="k",
        **where,
        details={"offset": 4},
    )
    commit(11_000, "mailer", 10, 12)
    ingest_all(redis_client)

    found = handled.handled_times(
        "orders",
        0,
        "k",
        [
            ("mailer", 2, T0 + 500),
            ("mailer", 3, T0 + 500),
            ("mailer", 4, T0 + 600),
            ("mailer", 9, T0 + 5000),
            ("mailer", 15, T0 + 9000),
            ("other", 5, T0 + 500),
        ],
    )

    assert {target: (h.event, h.at_ms, h.attempts) for target, h in found.items()} == {
        ("mailer", 2): (ev.OFFSET_COMMITTED, T0 + 1000, 1),
        ("mailer", 3): (ev.OFFSET_COMMITTED, T0 + 6000, 1),  # committed *to* 3: not past it
        ("mailer", 4): (ev.DEAD_LETTER_DISCARDED, T0 + 8000, 3),  # not the DL's commit
        ("mailer", 9): (ev.OFFSET_COMMITTED, T0 + 11_000, 3),
        ("mailer", 15): (None, None, 1),
        ("other", 5): (ev.OFFSET_COMMITTED, T0 + 2000, 1),
    }
