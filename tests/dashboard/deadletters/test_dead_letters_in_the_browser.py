"""Dead letters in a real browser against the real stack (daphne, the ingester, a Celery
worker for bulk requests, a Redis, in-process consumers of the recording handler,
headless Chromium), logged in as an operator (the ``operator`` role, not a superuser).

- For queue ordering, key ordering with ``after_dlq = continue`` and key ordering with
  ``hold`` (one group on three topics): a poison message (its handler raises while a flag
  is set) is dead-lettered, the handler is fixed (the flag deleted), the operator finds
  the dead letter, opens it, replays it, sees the outcome and then ``succeeded``; the
  handler's record shows the key's messages in order (hold: the replay before the parked
  messages; otherwise the replay re-published after the key's later messages, once).
- Bulk: "Replay all matching" over 240 dead letters of 24 keys shows a dry run, then a
  progress bar that advances, and a cancel midway leaves the rest dead; what was replayed
  kept each key's original order.

Screenshots land in ``test-artifacts/``: dead-letters.png, dead-letter.png,
dead-letter-succeeded.png, dead-letters-bulk-replay.png."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from lockstep.workers import Consumer, Producer, create_topic, keys
from lockstep.workers.broker import Broker, dead_letter_entry
from lockstep.workers.config import AfterDlq, Ordering, Subscription
from lockstep.workers.inspect import held_keys, list_dead_letters
from lockstep.workers.message import Message, decode_entry
from lockstep.workers.redis_types import entries
from lockstep.workers.refs import QueueRef
from lockstep.workers.topics import register_group
from tests.dashboard.stack import ARTIFACTS, TIMEOUT_MS, Site, chromium, log_in, running_site
from tests.support import wait_until
from tests.workers.handlers import fail_flag
from tests.workers.harness import FAST, RECORD_HANDLER, body, handled

GROUP = "billing"  # one group on three topics, one per ordering
OPS, OPS_PASSWORD = "ops", "ops-password-1"
CREATE_OPS = (
    "from django.contrib.auth.models import User\n"
    "from lockstep.dashboard.web.roles import OPERATOR, grant_role\n"
    f"grant_role(User.objects.create_user({OPS!r}, password={OPS_PASSWORD!r}), OPERATOR)\n"
)
# Bulk requests act on 40 dead letters a second: 240 take 6 s, long enough to watch the
# bar move and to cancel midway.
RATE_PER_S = 40
BULK_KEYS, BULK_PER_KEY, BULK_QUEUES = 24, 10, 2
CASES: dict[str, dict[str, Any]] = {
    "queue": {"ordering": Ordering.QUEUE, "after_dlq": AfterDlq.CONTINUE},
    "continue": {"ordering": Ordering.KEY, "after_dlq": AfterDlq.CONTINUE},
    "hold": {"ordering": Ordering.KEY, "after_dlq": AfterDlq.HOLD},
}


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("dead-letters")
    env = {"LOCKSTEP_REPLAY_RATE_PER_S": str(RATE_PER_S), "LOCKSTEP_SUBSCRIPTIONS": "[]"}
    with running_site(redis_url, workdir, {}, **env) as site:
        site.manage("shell", "-c", CREATE_OPS)
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    """A fresh tab, logged in as the operator; fails the test if a page's script raised."""
    context = browser.new_context(viewport={"width": 1360, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    log_in(tab, site, "/dead-letters", user=OPS, password=OPS_PASSWORD)
    yield tab
    context.close()
    assert errors == [], "a page's script raised"


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def _shot(page: Page, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=full_page)


def _sync(site: Site, group: str) -> dict[str, Any]:
    """``manage.py dlq list`` syncs Redis into the site's database first."""
    listed: dict[str, Any] = json.loads(site.manage("dlq", "list", "--group", group, "--json"))
    return listed


def _until_status(page: Page, site: Site, group: str, status: str) -> None:
    """Sync until the dead letter's page (which re-reads itself) shows ``status``."""

    def shown() -> bool:
        _sync(site, group)
        try:
            page.wait_for_selector(f'#dl-status[data-status="{status}"]', timeout=3000)
        except PlaywrightTimeout:
            return False
        return True

    wait_until(shown, 45, f"the dead letter's page to show {status}", interval=0)


# ---- one poison message, each ordering --------------------------------------------------


def _consumer(redis_url: str, topic: str, group: str, case: str) -> Consumer:
    subscription = Subscription(
        topic=topic,
        group=group,
        handler=RECORD_HANDLER,
        max_reconsume_times=1,
        suspend_ms=10,
        retry_initial_ms=20,
        retry_max_ms=50,
        flush_interval_ms=50,
        **CASES[case],
    )
    return Consumer(redis_url, [subscription], timings=FAST, consumer_id=f"browser-{case}")


def _seqs(client: redis.Redis, key: str) -> list[int]:
    return [r["s"] for r in handled(client) if r["k"] == key]


@pytest.mark.parametrize("case", list(CASES))
def test_it_replays_a_poison_message_from_the_browser_keeping_its_keys_order(
    page: Page, site: Site, client: redis.Redis, redis_url: str, case: str
) -> None:
    topic, group, key = f"orders-{case}", GROUP, f"order-{case}-7"
    create_topic(client, topic, 1)
    client.set(fail_flag(key), 1)
    producer = Producer(redis_url)
    offsets = [
        producer.send(topic, key, body(s, **({"raise_while": key} if s == 1 else {}))).offset
        for s in range(4)
    ]
    producer.send(topic, f"order-{case}-8", body(0))
    consumer = _consumer(redis_url, topic, group, case)
    consumer.start()
    try:
        (letter,) = wait_until(
            lambda: list_dead_letters(client, topic, group), 20, "the poison message's dead letter"
        )
        if case == "hold":
            wait_until(
                lambda: [h["messages"] for h in held_keys(client, topic, group)] == [2],
                20,
                "seq 2 and 3 parked behind the dead letter",
            )
        else:
            wait_until(lambda: _seqs(client, key) == [0, 2, 3], 20, "the key to move on")
        client.delete(fail_flag(key))  # the handler is fixed
        _sync(site, group)

        page.goto(f"{site.url}/groups/{group}/dead-letters")
        row = f'tr.dead-letter-row[data-key="{key}"]'
        assert page.get_attribute(row, "data-status") == "dead"
        assert page.get_attribute("#count-waiting", "data-value") == "1"  # the others: replayed
        if case == "hold":  # the last case: the list shows all three
            _shot(page, "dead-letters.png")
        with page.expect_navigation():
            page.locator(f"{row} a").first.click()  # the id, the row's first link
        assert (page.text_content("#dl-key") or "").strip() == key
        assert page.locator("#dl-attempts li.attempt").count() == 2
        if case == "hold":
            assert page.get_attribute("#dl-hold", "data-parked") == "2"
            page.click("#dl-attempts li.attempt:last-child summary")  # its traceback
            assert "card declined" in (page.text_content("#dl-attempts pre.traceback") or "")
            _shot(page, "dead-letter.png")

        page.click("#replay-one")
        page.wait_for_selector('#action-dialog[data-phase="ready"]')
        assert page.text_content("#dry-run-count") == "1"
        assert page.locator("#dry-run-notes li").count() >= 1
        page.click("#action-confirm")
        page.wait_for_selector('#action-dialog[data-phase="finished"]')
        outcome = "in_place" if case == "hold" else "republished"
        assert (
            page.get_attribute(f'#progress-outcomes li[data-outcome="{outcome}"]', "data-count")
            == "1"
        )
        page.click("#action-close")
        assert page.get_attribute("#action-outcome", "data-outcome") == outcome

        wait_until(lambda: 1 in _seqs(client, key), 20, "the replayed message to be handled")
        _until_status(page, site, group, "succeeded")
        if case == "hold":
            _shot(page, "dead-letter-succeeded.png")
        assert page.is_disabled("#replay-one")
        wait_until(lambda: len(_seqs(client, key)) == 4, 20, "every message of the key")
    finally:
        consumer.stop()
        producer.close()

    records = {r["s"]: r for r in handled(client) if r["k"] == key}
    if case == "hold":
        assert _seqs(client, key) == [0, 1, 2, 3]
        assert records[1]["o"] == offsets[1]  # in place, not re-produced
        assert records[1]["t1"] <= records[2]["t0"], "a parked message ran before the replay"
    else:
        assert _seqs(client, key) == [0, 2, 3, 1]  # handled once, re-published after
        assert records[1]["o"] > offsets[3]
        assert records[1]["h"]["lockstep-replay-of"] == letter.id
        assert records[1]["h"]["lockstep-original-offset"] == offsets[1]


# ---- bulk ------------------------------------------------------------------------------


def _dead_letters(
    client: redis.Redis,
    topic: str,
    group: str,
    keys_: int = BULK_KEYS,
    per_key: int = BULK_PER_KEY,
) -> None:
    """``keys_ * per_key`` dead letters, as a queue-ordering consumer writes them: key k on
    queue k % BULK_QUEUES, its messages interleaved with the other keys'."""
    create_topic(client, topic, BULK_QUEUES)
    register_group(client, topic, group)
    broker = Broker(client)
    subscription = Subscription(topic, group, "h.h")
    for q in range(BULK_QUEUES):
        ref = QueueRef(topic, q)
        (grant,) = broker.lock_batch([ref], group, "c1", 60.0)
        queue_keys = [k for k in range(keys_) if k % BULK_QUEUES == q]
        count = len(queue_keys) * per_key
        for offset in range(count):
            key = f"order-{queue_keys[offset % len(queue_keys)]}"
            message = Message(topic, q, offset, key, body(offset), {}, 1.0, 3)
            entry = dead_letter_entry(message, subscription, "RuntimeError: declined")
            assert broker.dead_letter(ref, group, "c1", grant.token, offset + 1, entry).ok
        client.set(keys.sequence(ref), count)


def _republished(client: redis.Redis, topic: str, request_id: str) -> list[Message]:
    out = []
    for q in range(BULK_QUEUES):
        ref = QueueRef(topic, q)
        out += [decode_entry(ref, i, f) for i, f in entries(client.xrange(keys.stream(ref)))]
    return [m for m in out if m.headers.get("lockstep-replay-id") == request_id]


def _done(page: Page) -> int:
    return int(page.get_attribute("#action-dialog", "data-done") or 0)


def test_it_replays_all_matching_with_a_live_progress_bar_and_a_cancel_leaves_the_rest(
    page: Page, site: Site, client: redis.Redis
) -> None:
    topic, group = "payments", "ledger"
    total = BULK_KEYS * BULK_PER_KEY
    _dead_letters(client, topic, group)
    assert _sync(site, group)["count_waiting"] == total
    site.start("celery")

    page.goto(f"{site.url}/groups/{group}/dead-letters")
    assert page.get_attribute("#count-waiting", "data-value") == str(total)
    page.click("#replay-matching")
    page.wait_for_selector('#action-dialog[data-phase="ready"]')
    assert page.text_content("#dry-run-count") == str(total)
    assert page.text_content("#dry-run-key-count") == str(BULK_KEYS)
    assert page.text_content("#dry-run-queue-count") == str(BULK_QUEUES)
    request_id = page.get_attribute("#action-dialog", "data-request-id") or ""
    page.click("#action-confirm")
    page.wait_for_selector('#action-dialog[data-phase="running"]')
    # The worker may still be starting: the first progress can take a while.
    page.wait_for_function(
        "() => Number(document.getElementById('action-dialog').dataset.done) >= 20",
        timeout=60_000,
    )
    first = _done(page)
    _shot(page, "dead-letters-bulk-replay.png", full_page=False)  # the modal covers the view
    # Progress comes over the request's socket (data-seq: the last message's seq).
    page.wait_for_selector('#action-dialog[data-socket="open"][data-seq]')
    page.wait_for_function(
        "(n) => Number(document.getElementById('action-dialog').dataset.done) > n", arg=first
    )
    assert int(page.get_attribute("#progress-bar", "value") or 0) > first
    page.click("#action-stop")
    page.wait_for_selector('#action-dialog[data-phase="finished"]')

    assert page.get_attribute("#action-dialog", "data-state") == "cancelled"
    assert "Cancelled after" in (page.text_content("#action-summary") or "")
    replayed = _republished(client, topic, request_id)
    assert first < len(replayed) < total
    for k in range(BULK_KEYS):
        originals = [
            int(m.headers["lockstep-original-offset"]) for m in replayed if m.key == f"order-{k}"
        ]
        assert originals == sorted(originals), f"order-{k} replayed out of order"
    waiting = sum(
        client.xlen(keys.dead_letters(QueueRef(topic, q), group)) for q in range(BULK_QUEUES)
    )
    assert waiting == total - len(replayed)
    assert _sync(site, group)["count_waiting"] == total - len(replayed)

    page.click("#action-close")  # the waiting count is re-read in place
    page.wait_for_selector(f'#count-waiting[data-value="{total - len(replayed)}"]')
    page.goto(f"{site.url}/audit?group={group}")
    assert page.locator(f'tr.audit-entry[data-request-id="{request_id}"]').count() >= 1


def test_it_discards_selected_dead_letters_with_a_reason_kept_in_the_audit_log(
    page: Page, site: Site, client: redis.Redis
) -> None:
    topic, group = "refunds", "notifier"
    _dead_letters(client, topic, group, keys_=2, per_key=2)
    _sync(site, group)

    page.goto(f"{site.url}/groups/{group}/dead-letters?queue=0")
    boxes = page.locator("input.select-row")
    assert boxes.count() == 2 and page.is_disabled("#discard-selected")
    boxes.nth(0).check()
    assert page.get_attribute("#selected-count", "data-value") == "1"
    page.click("#discard-selected")
    page.wait_for_selector('#action-dialog[data-phase="ready"]')
    assert page.text_content("#dry-run-count") == "1"
    assert page.is_disabled("#action-confirm")  # no reason yet
    page.fill("#action-reason", "duplicate <b>refund</b>")
    page.click("#action-confirm")
    page.wait_for_selector('#action-dialog[data-phase="finished"]')
    assert (
        page.get_attribute('#progress-outcomes li[data-outcome="discarded"]', "data-count") == "1"
    )
    page.click("#action-close")  # the rows are updated in place
    page.wait_for_selector('tr.dead-letter-row[data-status="discarded"]')

    statuses = page.locator("tr.dead-letter-row").evaluate_all(
        "rows => rows.map(r => r.dataset.status).sort()"
    )
    assert statuses == ["dead", "discarded"]
    waiting = sum(client.xlen(keys.dead_letters(QueueRef(topic, q), group)) for q in range(2))
    assert waiting == 3
    page.goto(f"{site.url}/audit?group={group}&action=discard")
    assert page.text_content("tr.audit-entry td.reason") == "duplicate <b>refund</b>"
