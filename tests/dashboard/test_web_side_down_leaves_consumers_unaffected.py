"""The web side (daphne and the ingester) stops for a while under load. The consumers do
not notice: they commit at least as fast as while it ran, with no errors; and when the web
side returns, every event they emitted meanwhile is stored, once.

The machine is shared (other tests run beside this one), so its load changes from one
second to the next, by a third and more. Rates are therefore taken in short windows, in
turns with and without the web side (each the slope of the committed offsets sampled
through the window), and each window without it is compared with the windows with it on
either side (taken under about the same load); the test asserts on the median of those
ratios, so a burst of load elsewhere spoils one ratio, not the result. Between turns the
web side's processes are paused (SIGSTOP: they do nothing, as if gone, and come back
without a start-up of many seconds); the last window is taken with them really stopped,
and they start again afterwards."""

from __future__ import annotations

import signal
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from bench.common import ConsumerProcess, committed_total, load_topic
from lockstep.workers.events import count_events
from tests.dashboard.web_processes import SLEEP_5MS, WebSide, stream_ids
from tests.support import probe_until

pytestmark = pytest.mark.slow

QUEUES = 8
BACKLOG = 40_000  # more than the consumer can finish during the test (~1,500 msg/s)
WEB_SIDE = ("ingester", "web")
# Turns with the web side and without it, each this long. Short enough that the machine's
# load is about the same in neighbouring windows; long enough that the committed offsets
# (flushed every 0.2 s) take many steps in each.
ROUNDS = 5
WINDOW_S = 1.5
SAMPLE_S = 0.05
# A process's start-up (Django and its apps) takes seconds, and more than 15 on a loaded
# machine: a wait that includes one gets this long.
STARTUP_S = 120.0


def _commit_rate(client: redis.Redis, seconds: float) -> float:
    """Messages committed per second over the next ``seconds``: the slope of the committed
    total sampled every ``SAMPLE_S`` (least squares). Each queue commits in steps (every
    0.2 s), so a difference of two samples would count one step more or less by chance."""
    times: list[float] = []
    totals: list[float] = []
    start = time.monotonic()
    while not times or times[-1] - start < seconds:
        times.append(time.monotonic())
        totals.append(committed_total(client, "orders", "mailer", QUEUES))
        time.sleep(SAMPLE_S)
    return statistics.linear_regression(times, totals).slope


def _signal_web_side(web: WebSide, sig: signal.Signals) -> None:
    for name in WEB_SIDE:
        if name in web.procs:
            web.procs[name].send_signal(sig)


@pytest.fixture
def web(redis_url: str, tmp_path: Path) -> Iterator[WebSide]:
    """The web side's processes, stopped after the test whatever happened (a start that
    failed half-way, a failure while they were paused)."""
    side = WebSide(redis_url, tmp_path)
    yield side
    _signal_web_side(side, signal.SIGCONT)
    side.stop_all()


def test_it_keeps_consumers_at_full_speed_and_stores_their_events_afterwards(
    web: WebSide, redis_url: str, redis_client: redis.Redis
) -> None:
    web.migrate()
    load_topic(redis_client, "orders", QUEUES, BACKLOG, key_count=500)
    web.start("web")
    web.start("ingester")
    # A commit event every 0.1 s per queue (not the default 5 s): the test counts the
    # events emitted while the web side is down, so they must come often.
    consumer = ConsumerProcess(
        redis_url,
        "orders",
        "mailer",
        ["--handler", SLEEP_5MS],
        env={"LOCKSTEP_COMMIT_EVENT_INTERVAL": "0.1"},
    )
    try:
        # Both sides running before anything is measured: the consumer committing, the
        # ingester storing its events (start-ups take seconds, more on a loaded machine).
        warmed_up = probe_until(
            lambda: committed_total(redis_client, "orders", "mailer", QUEUES),
            lambda n: n > 500,
            timeout=STARTUP_S,
        )
        assert warmed_up > 500, consumer.stderr()
        assert probe_until(web.stored_count, bool, timeout=STARTUP_S), web.log("ingester")
        # with, without, with, ..., with, without (stopped): each window without the web
        # side has one with it on either side, the last only the one before it.
        with_rates = [_commit_rate(redis_client, WINDOW_S)]
        without_rates = []
        for _ in range(ROUNDS - 1):
            _signal_web_side(web, signal.SIGSTOP)
            without_rates.append(_commit_rate(redis_client, WINDOW_S))
            _signal_web_side(web, signal.SIGCONT)
            with_rates.append(_commit_rate(redis_client, WINDOW_S))
        for name in WEB_SIDE:
            web.stop(name)
        stopped_at = count_events(redis_client)
        without_rates.append(_commit_rate(redis_client, WINDOW_S))
        emitted_while_down = count_events(redis_client) - stopped_at
        committed = committed_total(redis_client, "orders", "mailer", QUEUES)
        consumer.sample()  # raises if the consumer died
        assert committed < BACKLOG, "the consumer was busy all along"
        web.start("web")
        web.start("ingester")
    finally:
        errors = consumer.stderr(limit=20_000)
        consumer.stop()

    total = count_events(redis_client)
    stored = probe_until(web.stored_count, lambda n: n >= total, timeout=STARTUP_S)
    web.stop_all()

    ratios = [
        without / statistics.mean(with_rates[i : i + 2]) for i, without in enumerate(without_rates)
    ]
    print(f"commits/s with the web side {with_rates}, without {without_rates}")
    assert statistics.median(ratios) >= 0.9, (with_rates, without_rates, ratios)
    assert statistics.median(with_rates) > 300, "the consumer was really consuming"
    assert "Traceback" not in errors and "ERROR" not in errors, errors
    assert emitted_while_down > 20, "the consumer kept emitting events meanwhile"
    assert stored == total
    assert sorted(web.stored_ids()) == sorted(stream_ids(redis_client))
