"""The nav badge and the toasts in a real browser against the real stack (daphne and
the ingester as subprocesses, the suite's Redis, headless Chromium): an alert opened
while the overview is showing raises the badge and shows a toast, without a reload.

The alert is opened and published by a ``manage.py shell`` in the site's environment
(its database file, its channel layer), as the evaluator would."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.dashboard.stack import (
    ARTIFACTS,
    TIMEOUT_MS,
    Navigations,
    Site,
    chromium,
    log_in,
    running_site,
)

SUMMARY = "billing is stuck on orders queue 1 at offset 41"
OPEN_AND_PUBLISH = f"""
from django.utils import timezone
from lockstep.dashboard.alerts import push
from lockstep.dashboard.alerts.models import Alert
alert = Alert.objects.create(
    rule="message_blocked", fingerprint="message_blocked|orders|billing|1||",
    severity="critical", topic="orders", group="billing", queue=1,
    summary={SUMMARY!r}, since=timezone.now(),
)
assert push.publish(opened=[alert])
print(alert.pk)
"""


@pytest.fixture(scope="module")
def site(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with running_site(redis_url, tmp_path_factory.mktemp("site"), {"orders": 2}) as site:
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    """The overview, logged in, with the alerts socket connected."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, site, "/")
    page.wait_for_selector("#alert-toasts[data-live='1']", state="attached")
    yield page
    context.close()
    assert errors == [], "a page script raised"


def test_it_raises_the_badge_and_shows_a_toast_without_a_reload(page: Page, site: Site) -> None:
    assert page.text_content("#alerts-badge") == "0"
    navigations = Navigations(page)

    alert_id = int(site.manage("shell", "-c", OPEN_AND_PUBLISH).split()[-1])

    page.wait_for_function("document.getElementById('alerts-badge').textContent === '1'")
    toast = page.wait_for_selector(f".alert-toast[data-alert-id='{alert_id}']")
    assert toast is not None
    assert SUMMARY in (toast.text_content() or "")
    assert toast.get_attribute("class") == "alert-toast severity-critical"
    assert page.get_attribute("#alerts-badge", "data-count") == "1"
    navigations.assert_none()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "alert-toast.png"))

    # The toast leads to the alert's page, whose badge starts at the new count.
    page.click(f".alert-toast[data-alert-id='{alert_id}'] a.summary")
    page.wait_for_url(f"{site.url}/alerts/{alert_id}")
    assert SUMMARY in (page.text_content("#alert-summary") or "")
    assert page.text_content("#alerts-badge") == "1"
