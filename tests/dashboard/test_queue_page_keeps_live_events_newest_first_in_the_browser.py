"""The queue page in a real browser against the real stack (daphne, the ingester,
headless Chromium): events pushed over the socket, up to 50 at a time and newest first,
land in the recent-events table so that it stays newest first after every push."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from playwright.sync_api import Browser, Page

from tests.dashboard.socket_helpers import write_events
from tests.dashboard.stack import ARTIFACTS, TIMEOUT_MS, Site, chromium, log_in, running_site

ROOT = "document.getElementById('queue')"
ROW_IDS = "Array.from(document.querySelectorAll('#queue-events tr.event-row'), r => r.dataset.id)"


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("site"), {"orders": 4}) as site:
        yield site


@pytest.fixture
def page(site: Site) -> Iterator[Page]:
    with chromium() as browser:
        yield from _queue_page(browser, site)


def _queue_page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, site, "/topics/orders/queues/0")
    page.wait_for_selector("#live-status[data-state=live]")
    yield page
    context.close()
    assert errors == [], "the page's script raised"


def _stream_order(stream_id: str) -> tuple[int, int]:
    ms, seq = stream_id.split("-")
    return int(ms), int(seq)


def test_it_keeps_the_events_table_newest_first_after_each_push(
    page: Page, site: Site, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    written: list[str] = []
    for batch in (20, 30):
        hints = int(page.evaluate(f"Number({ROOT}.dataset.hints || 0)"))
        written += write_events(client, "orders", 0, batch)
        page.wait_for_function(f"Number({ROOT}.dataset.hints || 0) > {hints}")
        page.wait_for_function(
            f"{ROW_IDS}.includes({written[-1]!r}) && {ROW_IDS}.includes({written[0]!r})"
        )

        shown = page.evaluate(ROW_IDS)
        assert shown == sorted(shown, key=_stream_order, reverse=True)
        assert shown[0] == written[-1]
    assert page.evaluate(f"{ROOT}.dataset.rereads || '0'") == "0", "a re-read, not the pushes"
    page.screenshot(path=str(ARTIFACTS / "queue-live-events.png"), full_page=True)
    client.close()
