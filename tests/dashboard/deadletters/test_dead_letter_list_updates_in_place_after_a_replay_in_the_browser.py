"""In a real Chromium against the real stack: after replaying one dead letter of a group
named ``billing/eu`` from its list, the row's status, the waiting count and the selection
change in place (no navigation, no reload), the dialog's counts read in the singular, and
no request of the page answers 404 (the favicon included)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from playwright.sync_api import Browser, Page

from lockstep.workers.topics import create_topic, register_group
from tests.dashboard.deadletters.helpers import add_dead_letter
from tests.dashboard.stack import TIMEOUT_MS, Navigations, Site, chromium, log_in, running_site

TOPIC, GROUP = "orders", "billing/eu"


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    workdir = tmp_path_factory.mktemp("dead-letters-live")
    with running_site(redis_url, workdir, {}, LOCKSTEP_SUBSCRIPTIONS="[]") as site:
        yield site


@pytest.fixture
def page(site: Site) -> Iterator[Page]:
    with chromium() as browser:
        yield from _tab(browser, site)


def _tab(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    yield tab
    context.close()


def test_it_updates_the_rows_in_place_after_a_replay_without_a_reload(
    page: Page, site: Site, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    create_topic(client, TOPIC, 1)
    register_group(client, TOPIC, GROUP)
    first = add_dead_letter(client, topic=TOPIC, group=GROUP, offset=1, key="order-1")
    add_dead_letter(client, topic=TOPIC, group=GROUP, offset=2, key="order-2")
    client.close()
    listed = json.loads(site.manage("dlq", "list", "--group", GROUP, "--json"))
    (record,) = [i for i in listed["items"] if i["dlq_id"] == first]
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.on("console", lambda m: missing.append(m.text) if "404" in m.text else None)
    log_in(page, site, f"/groups/{GROUP}/dead-letters")
    row = f'tr.dead-letter-row[data-id="{record["id"]}"]'
    assert page.get_attribute(row, "data-status") == "dead"
    navigations = Navigations(page)

    page.check(f"{row} input.select-row")
    page.click("#replay-selected")
    page.wait_for_selector('#action-dialog[data-phase="ready"]')
    assert page.text_content("#action-what") == "1 selected dead letter."
    assert page.text_content("#action-status") == "Replay 1 dead letter: order-1 @ 1."
    page.click("#action-confirm")
    page.wait_for_selector('#action-dialog[data-phase="finished"]')
    page.click("#action-close")
    page.wait_for_selector(f'{row}[data-status="replayed"]')

    navigations.assert_none()
    assert page.text_content(f"{row} .badge") == "replayed"
    assert page.is_disabled(f"{row} input.select-row")
    assert page.get_attribute("#count-waiting", "data-value") == "1"
    assert page.text_content("#selected-count") == "none selected"
    assert page.request.get(f"{site.url}/favicon.ico").status == 200
    assert page.locator('link[rel="icon"]').count() == 1
    assert missing == []
